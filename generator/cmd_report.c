/* cmd_report.c - `kt report`: the tuning records of a cache as one self-contained HTML page
 * (report.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cache.h"
#include "cmd.h"
#include "cmd_env.h"
#include "key.h"
#include "opt.h"
#include "report.h"

static void print_warning(void *ctx, const char *msg)
{
	(void)ctx;
	fprintf(stderr, "kt: warning: %s\n", msg);
}

/* Appends the keys of FILE (one per line; blank lines and lines starting with '#' are skipped)
 * to keys, each checked; -1 with err naming the file and line. */
static int read_keys(const char *path, kt_buf *text, kt_strlist *keys, kt_err *err)
{
	kt_err e = {0};
	if (kt_read_file(path, text, &e) != 0)
		return kt_fail(err, "--keys %s", e.msg);
	int line = 0;
	for (char *s = text->data; s && *s;) {
		char *nl = strchr(s, '\n');
		if (nl)
			*nl = '\0';
		line++;
		s += strspn(s, " \t");
		size_t n = strcspn(s, " \t\r");
		s[n] = '\0';
		if (*s && *s != '#') {
			if (!kt_key_is_hex(s))
				return kt_fail(err, "--keys %s:%d: '%s' is not a key (32 lowercase hex digits)", path, line, s);
			keys->v = kt_xrealloc(keys->v, (size_t)(keys->n + 1) * sizeof *keys->v);
			keys->v[keys->n++] = s;
		}
		s = nl ? nl + 1 : NULL;
	}
	return 0;
}

static int check_keys(const kt_strlist *keys, kt_err *err)
{
	for (int i = 0; i < keys->n; i++)
		if (!kt_key_is_hex(keys->v[i]))
			return kt_fail(err, "--key '%s': not a key (32 lowercase hex digits)", keys->v[i]);
	return 0;
}

typedef struct args {
	const char *cache_dir, *project_cache, *kernel, *gpu, *keys_file, *title, *out;
	kt_strlist keys;
} args;

/* The directories to read: those given, else the user cache. */
static int dirs_of(const args *a, kt_report_dir *dirs, char **dflt, kt_err *err)
{
	int n = 0;
	if (a->cache_dir)
		dirs[n++] = (kt_report_dir){a->cache_dir, "--cache-dir"};
	if (a->project_cache)
		dirs[n++] = (kt_report_dir){a->project_cache, "--project-cache"};
	if (n == 0) {
		if (!(*dflt = kt_env_cache_dir(err)))
			return -1;
		dirs[n++] = (kt_report_dir){*dflt, "the user cache (no --cache-dir or --project-cache given)"};
	}
	return n;
}

static int run(args *a, kt_err *err)
{
	kt_report_dir dirs[2];
	char *dflt = NULL;
	kt_buf keytext = {0};
	int ndirs = -1, rc = -1;
	if (!a->out)
		kt_fail(err, "no output file given (-o FILE)");
	else if (check_keys(&a->keys, err) == 0 && (!a->keys_file || read_keys(a->keys_file, &keytext, &a->keys, err) == 0))
		ndirs = dirs_of(a, dirs, &dflt, err);
	if (ndirs > 0) {
		kt_report_opts o = {dirs, ndirs, a->kernel, a->gpu, a->keys.v, a->keys.n, a->title, a->out,
				    print_warning, NULL};
		kt_report_stats st;
		rc = kt_report_write(&o, &st, err);
		if (rc == 0)
			printf("kt report: wrote %s: %d record%s of %d kernel%s%s\n", a->out, st.records,
			       st.records == 1 ? "" : "s", st.kernels, st.kernels == 1 ? "" : "s",
			       st.skipped ? " (some records skipped, see the warnings)" : "");
	}
	free(dflt);
	kt_buf_free(&keytext);
	return rc;
}

int kt_cmd_report(int argc, char **argv)
{
	args a = {0};
	const kt_opt opts[] = {
		{"project-cache", KT_OPT_STR, &a.project_cache, "DIR", "the project's committed cache directory"},
		{"cache-dir", KT_OPT_STR, &a.cache_dir, "DIR", "a user cache (default, when neither is given: ~/.cache/kt)"},
		{"kernel", KT_OPT_STR, &a.kernel, "PATTERN", "only kernels whose name matches (fnmatch)"},
		{"gpu", KT_OPT_STR, &a.gpu, "NAME", "only records of this GPU (e.g. \"NVIDIA H200\")"},
		{"key", KT_OPT_LIST, &a.keys, "HEX", "only this record (repeatable); it must exist"},
		{"keys", KT_OPT_STR, &a.keys_file, "FILE", "only the records of these keys, one per line"},
		{"title", KT_OPT_STR, &a.title, "TEXT", "the page's title (default: kt tuning report)"},
		{"out", KT_OPT_STR, &a.out, "FILE", "the HTML page to write (required)"},
		{"o", KT_OPT_STR, &a.out, "FILE", "the same as --out"},
		{0},
	};
	const char *pos[1];
	int npos;
	kt_err err = {0};
	int rc = kt_opt_begin("report", opts, argc, argv, pos, 0, &npos,
			      "kt report [--project-cache DIR] [--cache-dir DIR] [--kernel PATTERN] [--gpu NAME]\n"
			      "                 [--key HEX]... [--keys FILE] [--title TEXT] -o FILE",
			      "Writes one self-contained HTML page (inline CSS and SVG, no scripts, nothing fetched)\n"
			      "from the cache's records: a summary table, the GPUs and toolchains, and per kernel\n"
			      "and shape the chosen configuration against the default and the naive kernel, the\n"
			      "share of the roofline floor reached, every evaluation's time by the parameter that\n"
			      "matters most, the search's best time so far, and the failures by cause\n"
			      "(docs/report.md).  Records that cannot be read are skipped with a warning.");
	if (rc < 0)
		rc = run(&a, &err) == 0 ? KT_EXIT_OK : kt_opt_fail("report", NULL, &err);
	kt_strlist_free(&a.keys);
	return rc;
}
