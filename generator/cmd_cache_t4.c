/* cmd_cache_t4.c - `kt cache export` and `kt cache import`: the cache's records in Kernel Tuner's
 * T4 results format, and a T4 file read as a recorded space (t4.h, recorded.h; docs/cache.md).
 */
#define _POSIX_C_SOURCE 200809L
#include <fnmatch.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cmd.h"
#include "cmd_cache.h"
#include "recorded.h"
#include "t4.h"

/* ---- export ---- */

/* parse() for a command that writes a file: -o stands for --output. */
static int parse_o(const kt_opt *opts, int argc, char **argv, const char **pos, int maxpos, int *npos,
		   const char *usage, const char *about)
{
	char **args = kt_xcalloc((size_t)argc + 1, sizeof *args);
	for (int i = 0; i < argc; i++)
		args[i] = !strcmp(argv[i], "-o") ? "--output" : argv[i];
	int rc = kt_cache_cmd_parse(opts, argc, args, pos, maxpos, npos, usage, about);
	free(args);
	return rc;
}

struct export_item {
	char key[KT_KEY_HEX];
	char *kernel, *shape, *text; /* text: the record as a T4 document */
};

/* The records chosen, each key once (from the first tier that holds it). */
struct export {
	const char *key, *kernel, *gpu;
	struct export_item *v;
	size_t n;
};

static int exported(const struct export *x, const char *key)
{
	for (size_t i = 0; i < x->n; i++)
		if (!strcmp(x->v[i].key, key))
			return 1;
	return 0;
}

static int visit_export(void *ctx, const char *path, const char *key)
{
	struct export *x = ctx;
	kt_buf text = {0};
	kt_record r = {0};
	kt_err why = {0};
	if (exported(x, key) || (x->key && strcmp(x->key, key)))
		return 0;
	if (kt_read_file(path, &text, &why) != 0 || kt_record_read(text.data, text.len, &r, &why) != 0 ||
	    strcmp(r.key, key) != 0) {
		fprintf(stderr, "kt: warning: %s: not exported: %s\n", path, why.msg[0] ? why.msg : "key mismatch");
	} else if (!(x->kernel && fnmatch(x->kernel, r.kernel, 0) != 0) && !(x->gpu && strcmp(x->gpu, r.gpu.name) != 0)) {
		x->v = kt_xrealloc(x->v, (x->n + 1) * sizeof *x->v);
		struct export_item *it = &x->v[x->n++];
		snprintf(it->key, sizeof it->key, "%s", key);
		it->kernel = kt_xstrdup(r.kernel);
		it->shape = kt_xstrdup(r.shape);
		it->text = kt_t4_from_record(&r);
	}
	kt_record_free(&r);
	kt_buf_free(&text);
	return 0;
}

/* One record to output (a file, or a directory that exists) or to stdout; several into the
 * directory output, one file each. */
static int export_write(const struct export *x, const char *output, kt_err *err)
{
	struct stat st;
	int into_dir = output && (x->n > 1 || (stat(output, &st) == 0 && S_ISDIR(st.st_mode)));
	if (!output && x->n > 1)
		return kt_fail(err, "%zu records match; choose one (KEY, --kernel, --gpu) or give --output DIR for one file each",
			       x->n);
	if (!output) {
		fputs(x->v[0].text, stdout);
		return 0;
	}
	if (into_dir && kt_mkdirs(output, err) != 0)
		return -1;
	for (size_t i = 0; i < x->n; i++) {
		kt_buf name = {0};
		kt_buf_printf(&name, "%s-%s.t4.json", x->v[i].kernel, x->v[i].key);
		char *path = into_dir ? kt_path_join(output, kt_buf_str(&name)) : kt_xstrdup(output);
		int rc = kt_write_atomic(path, x->v[i].text, strlen(x->v[i].text), err);
		if (rc == 0)
			printf("%s  %s %s -> %s\n", x->v[i].key, x->v[i].kernel, x->v[i].shape, path);
		free(path);
		kt_buf_free(&name);
		if (rc != 0)
			return -1;
	}
	return 0;
}

int kt_cache_cmd_export(int argc, char **argv)
{
	kt_cache_common c = {0};
	struct export x = {0};
	const char *format = "t4", *output = NULL;
	const kt_opt opts[] = {
		KT_CACHE_COMMON_OPTS(c),
		{"format", KT_OPT_STR, &format, "F", "the format: t4 (Kernel Tuner's T4 results; the default)"},
		{"kernel", KT_OPT_STR, &x.kernel, "PATTERN", "only kernels whose name matches (fnmatch)"},
		{"gpu", KT_OPT_STR, &x.gpu, "NAME", "only records of this GPU"},
		{"output", KT_OPT_STR, &output, "PATH", "write here (also -o): a file for one record, a directory for several"},
		{0},
	};
	const char *pos[1];
	int npos, rc = parse_o(opts, argc, argv, pos, 1, &npos,
			     "kt cache export [KEY] [--format t4] [--kernel PATTERN] [--gpu NAME] [-o PATH]",
			     "Writes the records of the user cache (and the project cache when given) in Kernel\n"
			     "Tuner's T4 results format: every evaluated configuration with its invalidity,\n"
			     "correctness and time in ms, and kt's kernel, shape, GPU and search as metadata\n"
			     "(docs/cache.md).  One record goes to stdout or to PATH; several need -o DIR and\n"
			     "become DIR/<kernel>-<key>.t4.json.");
	if (rc >= 0)
		return rc;
	kt_err err = {0};
	if (strcmp(format, "t4") != 0)
		kt_fail(&err, "--format '%s': the only format is t4", format);
	else if (npos == 1 && !kt_key_is_hex(pos[0]))
		kt_fail(&err, "'%s' is not a key (32 hex digits); see kt cache ls", pos[0]);
	x.key = npos ? pos[0] : NULL;
	kt_cache *cache = err.msg[0] ? NULL : kt_cache_cmd_open(&c, NULL, &err);
	if (!cache)
		return kt_cache_cmd_fail(&err);
	for (int i = 0; i < KT_TIER_REMOTE; i++)
		if (kt_cache_dir(cache, (kt_tier)i))
			kt_cache_each(kt_cache_dir(cache, (kt_tier)i), visit_export, &x);
	kt_cache_close(cache, NULL);
	if (x.n == 0)
		rc = kt_fail(&err, "no record matches%s%s%s%s%s; see kt cache ls", x.key ? " key " : "", x.key ? x.key : "",
			     x.kernel ? " --kernel " : "", x.kernel ? x.kernel : "", x.gpu ? " and the GPU" : "");
	else
		rc = export_write(&x, output, &err);
	for (size_t i = 0; i < x.n; i++) {
		free(x.v[i].kernel);
		free(x.v[i].shape);
		free(x.v[i].text);
	}
	free(x.v);
	return rc == 0 ? KT_EXIT_OK : kt_cache_cmd_fail(&err);
}

/* ---- import ---- */

struct import {
	const char *template_path, *shape, *arch, *output;
	kt_strlist types;
};

static void print_import(const char *file, const char *output, const kt_t4_space *s)
{
	size_t counts[KT_NSTATUS] = {0};
	for (size_t i = 0; i < s->result.nevals; i++)
		counts[s->result.evals[i].status]++;
	printf("%s: %zu configurations recorded in %s (", file, s->result.nevals, output);
	for (int i = 0, first = 1; i < KT_NSTATUS; i++)
		if (counts[i]) {
			printf("%s%zu %s", first ? "" : ", ", counts[i], kt_status_names[i]);
			first = 0;
		}
	printf(")");
	if (s->skipped)
		printf("; %zu results skipped: marked constraints and outside the template's constraints", s->skipped);
	putchar('\n');
}

/* The template as the file's results were tuned: the types and arch given, else those that kt's
 * metadata in text names. */
static kt_tmpl *import_template(const struct import *x, const kt_buf *text, kt_err *err)
{
	kt_buf arch = {0}, types = {0};
	kt_strlist list = x->types;
	char *save = NULL;
	if (x->arch)
		kt_buf_puts(&arch, x->arch);
	else
		kt_t4_kt_field(text->data, text->len, "arch", &arch);
	if (!x->types.n && kt_t4_kt_field(text->data, text->len, "types", &types) == 0 && types.len)
		for (char *tok = strtok_r(types.data, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
			list.v = kt_xrealloc(list.v, (size_t)(list.n + 1) * sizeof *list.v);
			list.v[list.n++] = tok;
		}
	kt_tmpl *t = kt_cache_cmd_template(x->template_path, &list, kt_buf_str(&arch), err);
	if (list.v != x->types.v)
		kt_strlist_free(&list);
	kt_buf_free(&arch);
	kt_buf_free(&types);
	return t;
}

static int import_run(const struct import *x, const char *file, kt_err *err)
{
	int64_t shape[KT_MAX_SLOTS];
	kt_buf text = {0};
	kt_t4_space s = {0};
	kt_err e = {0};
	kt_tmpl *t = NULL;
	int rc = kt_read_file(file, &text, err);
	if (rc == 0 && !(t = import_template(x, &text, err)))
		rc = -1;
	if (rc == 0 && kt_tmpl_parse_shape(t, x->shape, shape, &e) != 0)
		rc = kt_fail(err, "--shape '%s': %s", x->shape, e.msg);
	if (rc == 0)
		rc = kt_t4_read(file, kt_buf_str(&text), text.len, t, shape, &s, err);
	if (rc == 0)
		rc = kt_recorded_write(x->output, t, shape, s.gpu.name[0] ? &s.gpu : NULL, s.result.evals, s.result.nevals, err);
	if (rc == 0)
		print_import(file, x->output, &s);
	kt_t4_space_free(&s);
	kt_buf_free(&text);
	kt_tmpl_free(t);
	return rc;
}

int kt_cache_cmd_import(int argc, char **argv)
{
	struct import x = {0};
	const kt_opt opts[] = {
		{"template", KT_OPT_STR, &x.template_path, "FILE", "the kernel template whose space the file measured"},
		{"shape", KT_OPT_STR, &x.shape, "SPEC", "the shape it was measured at, e.g. rows=4096,hidden=4096"},
		{"type", KT_OPT_LIST, &x.types, "T=x", "choose a type symbol (repeatable; default: as kt's metadata says)"},
		{"arch", KT_OPT_STR, &x.arch, "CC", "the compile target the constraints see (default: as kt's metadata says)"},
		{"output", KT_OPT_STR, &x.output, "FILE", "the recording to write (also -o)"},
		{0},
	};
	const char *pos[1];
	int npos, rc = parse_o(opts, argc, argv, pos, 1, &npos,
			     "kt cache import FILE.json --template FILE --shape SPEC [--type T=x] [--arch CC] -o OUT",
			     "Reads a T4 results file (Kernel Tuner's, or kt cache export's) as a recorded space\n"
			     "of the template at the shape (docs/search.md): every result's configuration must\n"
			     "be a declared one that satisfies the constraints, each once.  Writes OUT only when\n"
			     "the whole file is good; bench/search_curves then replays it without a GPU.");
	if (rc < 0) {
		kt_err err = {0};
		if (npos != 1)
			rc = kt_fail(&err, "expected one T4 file to import");
		else if (!x.template_path || !x.shape || !x.output)
			rc = kt_fail(&err, "--template, --shape and --output are required");
		else
			rc = import_run(&x, pos[0], &err);
		rc = rc == 0 ? KT_EXIT_OK : kt_cache_cmd_fail(&err);
	}
	kt_strlist_free(&x.types);
	return rc;
}
