/* cmd_cache.c - `kt cache`: look into and look after the tuning cache (see cache.h).
 *
 *   stats     lookups, hits and misses by tier, corrupt records, size
 *   ls        one line per record
 *   show      one record, which tiers hold it, and its history (stage 1, then stage 2)
 *   explain   the key fields of a template at a shape, the key, and what each tier says
 *   verify    checks every record
 *   gc        removes the oldest records of the user cache down to a size
 *   promote   copies records from the user cache into the project's cache/ to commit them
 *   export    writes records in Kernel Tuner's T4 results format (t4.h; cmd_cache_t4.c)
 *   import    reads a T4 file as a recorded space of a template at a shape (cmd_cache_t4.c)
 */
#define _POSIX_C_SOURCE 200809L
#include <dirent.h>
#include <errno.h>
#include <fnmatch.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "cache.h"
#include "cmd.h"
#include "cmd_cache.h"
#include "cmd_env.h"
#include "gpu.h"
#include "opt.h"
#include "provenance.h"
#include "remote.h"
#include "rounds.h"
#include "transfer.h"

#define STALE_TEMP_SECONDS 3600 /* a temporary file older than this belongs to a dead writer */

static void print_warning(void *ctx, const char *msg)
{
	(void)ctx;
	fprintf(stderr, "kt: warning: %s\n", msg);
}

kt_cache *kt_cache_cmd_open(const kt_cache_common *c, const char *remote, kt_err *err)
{
	/* A project cache is committed with its project: one that is not there is a mistyped path,
	 * which would else read as an empty cache.  (A user cache may not exist yet: on a fresh
	 * machine, or before its first record, it is empty.) */
	if (c->project_cache && kt_check_dir("--project-cache", c->project_cache, err))
		return NULL;
	char *dflt = c->cache_dir ? NULL : kt_env_cache_dir(err);
	if (!c->cache_dir && !dflt)
		return NULL;
	kt_cache_opts o = {.user_dir = c->cache_dir ? c->cache_dir : dflt, .project_dir = c->project_cache,
			   .remote = remote ? remote : "", .read_only = 1, .warn = print_warning};
	kt_cache *cache = kt_cache_open(&o, err);
	free(dflt);
	return cache;
}

int kt_cache_cmd_parse(const kt_opt *opts, int argc, char **argv, const char **pos, int maxpos, int *npos,
		       const char *usage, const char *about)
{
	return kt_opt_begin("cache", opts, argc, argv, pos, maxpos, npos, usage, about);
}

int kt_cache_cmd_fail(kt_err *err) { return kt_opt_fail("cache", NULL, err); }

static void human_size(double bytes, char *out, size_t n)
{
	static const char *const units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
	size_t u = 0;
	while (bytes >= 1024 && u + 1 < sizeof units / sizeof units[0]) {
		bytes /= 1024;
		u++;
	}
	snprintf(out, n, u ? "%.1f %s" : "%.0f %s", bytes, units[u]);
}

/* ---- stats ---- */

struct tally {
	long records;
	long long bytes;
};

static int visit_tally(void *ctx, const char *path, const char *key)
{
	(void)key;
	struct tally *t = ctx;
	struct stat st;
	if (stat(path, &st) == 0) {
		t->records++;
		t->bytes += st.st_size;
	}
	return 0;
}

static void print_tier_size(const char *label, const char *dir)
{
	struct tally t = {0};
	char size[32];
	kt_cache_each(dir, visit_tally, &t);
	human_size((double)t.bytes, size, sizeof size);
	printf("%-8s %s: %ld record%s, %s\n", label, dir, t.records, t.records == 1 ? "" : "s", size);
}

static int cmd_stats(int argc, char **argv)
{
	kt_cache_common c = {0};
	const kt_opt opts[] = {KT_CACHE_COMMON_OPTS(c), {0}};
	const char *pos[1];
	int npos, rc = kt_cache_cmd_parse(opts, argc, argv, pos, 0, &npos, "kt cache stats [--cache-dir DIR] [--project-cache DIR]",
			     "Prints the lookups counted in the user cache (hits and misses by tier, corrupt\n"
			     "records, stores, remote errors) and the number and size of records in each tier.");
	if (rc >= 0)
		return rc;
	kt_err err = {0};
	kt_cache *cache = kt_cache_cmd_open(&c, NULL, &err);
	if (!cache)
		return kt_cache_cmd_fail(&err);
	kt_cache_stats s;
	kt_cache_stats_load(kt_cache_dir(cache, KT_TIER_USER), &s);
	print_tier_size("user", kt_cache_dir(cache, KT_TIER_USER));
	if (kt_cache_dir(cache, KT_TIER_PROJECT))
		print_tier_size("project", kt_cache_dir(cache, KT_TIER_PROJECT));
	printf("\n%-8s %10s %10s\n", "tier", "hits", "misses");
	for (int i = 0; i < KT_NTIERS; i++)
		printf("%-8s %10ld %10ld\n", kt_tier_names[i], s.hits[i], s.misses[i]);
	printf("\ncorrupt records %ld, re-tuned %ld, stores %ld, remote errors %ld\n", s.corrupt, s.retuned, s.stores,
	       s.remote_errors);
	kt_cache_close(cache, NULL);
	return KT_EXIT_OK;
}

/* ---- ls ---- */

typedef struct ls_ctx {
	const char *tier;
	int tsv;
} ls_ctx;

static int visit_ls(void *ctx, const char *path, const char *key)
{
	const ls_ctx *l = ctx;
	const char *tier = l->tier;
	kt_buf text = {0}, conf = {0};
	kt_record r = {0};
	kt_err err = {0};
	if (kt_read_file(path, &text, &err) == 0 && kt_record_read_head(text.data, text.len, &r, &err) == 0) {
		kt_record_config_text(&r, &conf);
		const cJSON *s = cJSON_GetObjectItemCaseSensitive(r.doc, "search");
		const cJSON *ev = cJSON_GetObjectItemCaseSensitive(s, "evaluations"), *sec = cJSON_GetObjectItemCaseSensitive(s, "seconds");
		const cJSON *stop = cJSON_GetObjectItemCaseSensitive(s, "stopped");
		if (l->tsv) /* one record a line, tab-separated, for scripts */
			printf("%s\t%s\t%s\t%s\t%s\t%.4f\t%s\t%.0f\t%.3f\t%s\n", tier, key, r.kernel, r.shape, r.gpu.name,
			       r.time_us, kt_buf_str(&conf), cJSON_IsNumber(ev) ? ev->valuedouble : 0,
			       cJSON_IsNumber(sec) ? sec->valuedouble : 0, cJSON_IsString(stop) ? stop->valuestring : "");
		else
			printf("%-7s %s  %-14s %-28s %-16s %10.2f us  %s\n", tier, key, r.kernel, r.shape, r.gpu.name,
			       r.time_us, kt_buf_str(&conf));
	} else {
		printf("%-7s %s  (unreadable: %s)\n", tier, key, err.msg);
	}
	kt_record_free(&r);
	kt_buf_free(&text);
	kt_buf_free(&conf);
	return 0;
}

static int cmd_ls(int argc, char **argv)
{
	kt_cache_common c = {0};
	int tsv = 0;
	const kt_opt opts[] = {KT_CACHE_COMMON_OPTS(c),
			       {"tsv", KT_OPT_FLAG, &tsv, NULL,
				"tab-separated, with the search's evaluations, seconds and why it stopped"},
			       {0}};
	const char *pos[1];
	int npos, rc = kt_cache_cmd_parse(opts, argc, argv, pos, 0, &npos, "kt cache ls [--cache-dir DIR] [--project-cache DIR] [--tsv]",
			     "Lists the records of the user cache (and the project cache when given): tier, key,\n"
			     "kernel, shape, GPU, time and the chosen configuration.");
	if (rc >= 0)
		return rc;
	kt_err err = {0};
	kt_cache *cache = kt_cache_cmd_open(&c, NULL, &err);
	if (!cache)
		return kt_cache_cmd_fail(&err);
	for (int i = 0; i < KT_TIER_REMOTE; i++)
		if (kt_cache_dir(cache, (kt_tier)i))
			kt_cache_each(kt_cache_dir(cache, (kt_tier)i), visit_ls, &(ls_ctx){kt_tier_names[i], tsv});
	kt_cache_close(cache, NULL);
	return KT_EXIT_OK;
}

/* ---- show ---- */

/* How the record's template and configuration came to be, on stderr: stage 1 (the template's
 * kt refactor provenance and transcript), then stage 2 (the tuning rounds).  Nothing for a record
 * without them, or one that does not read. */
static void print_history(const kt_buf *text)
{
	kt_record rec;
	kt_buf h = {0};
	if (kt_record_read(text->data, text->len, &rec, NULL) == 0) {
		kt_provenance_text(cJSON_GetObjectItemCaseSensitive(rec.doc, "refactor"), &h);
		kt_rounds_text(cJSON_GetObjectItemCaseSensitive(rec.doc, "rounds"), &h);
	}
	fputs(kt_buf_str(&h), stderr);
	kt_buf_free(&h);
	kt_record_free(&rec);
}

static int cmd_show(int argc, char **argv)
{
	kt_cache_common c = {0};
	const kt_opt opts[] = {KT_CACHE_COMMON_OPTS(c),
			       {"remote", KT_OPT_STR, &c.remote, "URL", "also ask this remote cache (else $KT_REMOTE_CACHE)"},
			       {0}};
	const char *pos[1];
	int npos, rc = kt_cache_cmd_parse(opts, argc, argv, pos, 1, &npos, "kt cache show KEY [--cache-dir DIR] [--project-cache DIR]",
			     "Prints the record of KEY from the first tier that holds it, and says on stderr\n"
			     "which tiers hold it and how the record came to be: stage 1, the kt refactor\n"
			     "that wrote its template (the first line, each round, the tokens), then stage 2,\n"
			     "its tuning rounds.");
	if (rc >= 0)
		return rc;
	kt_err err = {0};
	if (npos != 1 || !kt_key_is_hex(pos[0])) {
		kt_fail(&err, "expected one key (32 hex digits); see kt cache ls");
		return kt_cache_cmd_fail(&err);
	}
	kt_cache *cache = kt_cache_cmd_open(&c, kt_env_or(c.remote, "KT_REMOTE_CACHE"), &err);
	if (!cache)
		return kt_cache_cmd_fail(&err);
	kt_buf text = {0}, shown = {0};
	for (int i = 0; i < KT_TIER_REMOTE; i++) {
		if (!kt_cache_dir(cache, (kt_tier)i))
			continue;
		char *path = kt_cache_record_path(kt_cache_dir(cache, (kt_tier)i), pos[0]);
		if (kt_read_file(path, &text, NULL) == 0) {
			fprintf(stderr, "%s: %s\n", kt_tier_names[i], path);
			if (!shown.len)
				kt_buf_add(&shown, text.data, text.len);
		}
		free(path);
	}
	kt_remote *remote = kt_cache_remote(cache);
	if (remote) {
		char name[KT_KEY_HEX + 8];
		snprintf(name, sizeof name, "%s.json", pos[0]);
		char *url = kt_remote_url(remote, name);
		int got = shown.len ? kt_remote_head(remote, name, &err) : kt_remote_get(remote, name, &text, &err);
		if (got < 0)
			fprintf(stderr, "kt: warning: %s\n", err.msg);
		else if (got > 0)
			fprintf(stderr, "remote: %s\n", url);
		if (got > 0 && !shown.len)
			kt_buf_add(&shown, text.data, text.len);
		free(url);
	}
	rc = KT_EXIT_OK;
	if (shown.len) {
		print_history(&shown);
		fwrite(shown.data, 1, shown.len, stdout);
		if (shown.data[shown.len - 1] != '\n')
			putchar('\n');
	} else {
		kt_fail(&err, "no tier holds a record of key %s", pos[0]);
		rc = kt_cache_cmd_fail(&err);
	}
	kt_buf_free(&text);
	kt_buf_free(&shown);
	kt_cache_close(cache, NULL);
	return rc;
}

/* ---- explain ---- */

/* The GPU to key for: the named one's identity from the cache, else this machine's first GPU. */
static int explain_gpu(kt_cache *cache, const char *name, kt_gpu_id *out, kt_err *err)
{
	if (name) {
		if (kt_cache_find_gpu(cache, name, out))
			return 0;
		return kt_fail(err, "no record in the user or project cache (or the remote) names the GPU '%s'", name);
	}
	const kt_gpu_ops *ops = kt_gpu_cuda();
	int n = 0;
	char why[256] = "";
	kt_gpu_info info;
	if (ops->count(&n, why, sizeof why) != 0 || n == 0)
		return kt_fail(err, "no GPU here (%s): name one with --gpu NAME", why[0] ? why : "none found");
	if (ops->info(0, &info, err) != 0)
		return -1;
	*out = info.id;
	return 0;
}

struct explain {
	kt_cache_common c;
	const char *template_path, *shape, *gpu, *arch, *flags, *nvcc, *remote;
	const char *measure[KT_NMEASURE]; /* --l2, --launch */
	kt_strlist types;
};

kt_tmpl *kt_cache_cmd_template(const char *path, const kt_strlist *types, const char *arch, kt_err *err)
{
	kt_buf diags = {0};
	if (arch && arch[0] && kt_arch_check(arch, err) != 0)
		return NULL;
	kt_tmpl_opts to = {.types = types->v, .ntypes = types->n, .arch = arch && arch[0] ? arch : NULL};
	kt_tmpl *t = kt_tmpl_parse(path, &to, &diags, err);
	fputs(kt_buf_str(&diags), stderr);
	kt_buf_free(&diags);
	return t;
}

static int explain_run(struct explain *x, kt_err *err)
{
	kt_buf compiler = {0};
	kt_tmpl *t = kt_cache_cmd_template(x->template_path, &x->types, x->arch, err);
	if (!t)
		return -1;
	int64_t shape[KT_MAX_SLOTS];
	kt_gpu_id gpu;
	kt_target target;
	kt_toolchain tc;
	kt_problem p = {.tmpl = t, .shape = shape, .target = &target, .tc = &tc};
	kt_key key = {0};
	int rc = -1;
	kt_measure given;
	kt_measure_unset(&given);
	for (int s = 0; s < KT_NMEASURE; s++) {
		kt_err e = {0};
		if (x->measure[s] && kt_measure_set(&given, (kt_measure_setting)s, x->measure[s], &e)) {
			kt_tmpl_free(t);
			return kt_fail(err, "--%s: %s", kt_measure_infos[s].name, e.msg);
		}
	}
	kt_measure_resolve(&given, &t->measure, &p.measure);
	kt_cache *cache = kt_cache_cmd_open(&x->c, kt_env_or(x->remote, "KT_REMOTE_CACHE"), err);
	if (cache && kt_tmpl_parse_shape(t, x->shape, shape, err) == 0 && explain_gpu(cache, x->gpu, &gpu, err) == 0 &&
	    kt_key_compiler(x->nvcc, kt_cache_dir(cache, KT_TIER_USER), 0, &compiler, err) == 0) {
		kt_target_from_id(&gpu, &target);
		tc = (kt_toolchain){x->nvcc, kt_buf_str(&compiler), x->arch, x->flags};
		rc = kt_key_make(&p, &key, err);
	}
	if (rc == 0) {
		fputs(kt_buf_str(&key.fields), stdout);
		printf("key=%s\n", key.hex);
		uint16_t cfg[KT_MAX_SLOTS];
		kt_tier tier;
		if (kt_cache_lookup(cache, &key, &p, cfg, &tier, NULL)) {
			kt_buf conf = {0};
			kt_tmpl_format_config(t, cfg, &conf);
			printf("lookup: hit in the %s cache: %s\n", kt_tier_names[tier], kt_buf_str(&conf));
			kt_buf_free(&conf);
		} else {
			printf("lookup: miss\n");
			kt_other_version o = {.p = &p, .cfg = cfg};
			size_t remote = 0;
			if (kt_transfer_other_version_in(&o, 1, cache, &remote)) {
				kt_buf conf = {0};
				kt_tmpl_format_config(t, cfg, &conf);
				printf("lookup: where the shape is not tuned, the record %s (%s%s) of another version of the "
				       "template stands in: %s\n",
				       o.key, o.date, remote ? ", from the remote" : "", kt_buf_str(&conf));
				kt_buf_free(&conf);
			}
		}
	}
	kt_key_free(&key);
	kt_buf_free(&compiler);
	kt_cache_close(cache, NULL);
	kt_tmpl_free(t);
	return rc;
}

static int cmd_explain(int argc, char **argv)
{
	struct explain x = {.arch = "", .flags = "", .nvcc = "nvcc"};
	const kt_opt opts[] = {
		KT_CACHE_COMMON_OPTS(x.c),
		{"template", KT_OPT_STR, &x.template_path, "FILE", "the kernel template"},
		{"shape", KT_OPT_STR, &x.shape, "SPEC", "the shape, e.g. rows=4096,hidden=4096"},
		{"type", KT_OPT_LIST, &x.types, "T=x", "choose a type symbol or an option (repeatable), as kt generate does"},
		{"gpu", KT_OPT_STR, &x.gpu, "NAME", "the GPU (its identity from the cache); default: this machine's"},
		{"arch", KT_OPT_STR, &x.arch, "CC", "compute capability, as passed to kt generate --arch"},
		{"flags", KT_OPT_STR, &x.flags, "\"...\"", "code-generation flags, as passed to kt generate --flags"},
		{"nvcc", KT_OPT_STR, &x.nvcc, "PATH", "the CUDA compiler (default: nvcc in PATH)"},
		{"l2", KT_OPT_STR, &x.measure[KT_MEASURE_L2], "cold|warm", "the L2 state, as passed to kt generate --l2"},
		{"launch", KT_OPT_STR, &x.measure[KT_MEASURE_LAUNCH], "stream|graph", "the launch mode, as passed to kt generate --launch"},
		{"remote", KT_OPT_STR, &x.remote, "URL", "also ask this remote cache (else $KT_REMOTE_CACHE)"},
		{0},
	};
	const char *pos[1];
	int npos, rc = kt_cache_cmd_parse(opts, argc, argv, pos, 0, &npos,
			     "kt cache explain --template FILE --shape SPEC [--gpu NAME] [--arch CC] [--flags F] [--l2 S] [--launch M]\n"
			     "                 [--remote URL]",
			     "Prints the key fields of a template at a shape (name=value, one per line), the key\n"
			     "they hash to, and what a lookup finds, so that a miss can be explained by comparing\n"
			     "with the fields stored in a record (kt cache show KEY).");
	if (rc < 0) {
		kt_err err = {0};
		if (!x.template_path || !x.shape)
			rc = kt_fail(&err, "--template and --shape are required");
		else
			rc = explain_run(&x, &err);
		rc = rc == 0 ? KT_EXIT_OK : kt_cache_cmd_fail(&err);
	}
	kt_strlist_free(&x.types);
	return rc;
}

/* ---- verify ---- */

struct verify {
	const char *tier;
	long records, bad;
	int remove;
};

static int visit_verify(void *ctx, const char *path, const char *key)
{
	struct verify *v = ctx;
	kt_buf text = {0};
	kt_record r = {0};
	kt_err err = {0};
	char where[KT_KEY_HEX + 8];
	snprintf(where, sizeof where, "%.2s/%s.json", key, key);
	v->records++;
	if (kt_read_file(path, &text, &err) == 0 && kt_record_read(text.data, text.len, &r, &err) == 0 &&
	    strcmp(r.key, key) != 0)
		kt_fail(&err, "holds the record of key %s", r.key);
	else if (!err.msg[0] && strcmp(path + strlen(path) - strlen(where), where) != 0)
		kt_fail(&err, "lies outside its directory %.2s/, where no lookup finds it", key);
	if (err.msg[0]) {
		v->bad++;
		printf("bad %s %s: %s%s\n", v->tier, path, err.msg, v->remove ? " (removed)" : "");
		if (v->remove)
			unlink(path);
	}
	kt_record_free(&r);
	kt_buf_free(&text);
	return 0;
}

static int cmd_verify(int argc, char **argv)
{
	kt_cache_common c = {0};
	int remove = 0;
	const kt_opt opts[] = {KT_CACHE_COMMON_OPTS(c), {"remove", KT_OPT_FLAG, &remove, NULL, "delete the bad records of the user cache"},
			       {0}};
	const char *pos[1];
	int npos, rc = kt_cache_cmd_parse(opts, argc, argv, pos, 0, &npos, "kt cache verify [--cache-dir DIR] [--project-cache DIR] [--remove]",
			     "Reads every record of the user cache (and the project cache when given) and checks\n"
			     "that it is whole: valid JSON of this format, its key fields hash to its key, and it\n"
			     "lies under its own key.  Exits with 1 when a record is bad.");
	if (rc >= 0)
		return rc;
	kt_err err = {0};
	kt_cache *cache = kt_cache_cmd_open(&c, NULL, &err);
	if (!cache)
		return kt_cache_cmd_fail(&err);
	long records = 0, bad = 0;
	for (int i = 0; i < KT_TIER_REMOTE; i++) {
		if (!kt_cache_dir(cache, (kt_tier)i))
			continue;
		struct verify v = {kt_tier_names[i], 0, 0, remove && i == KT_TIER_USER};
		kt_cache_each(kt_cache_dir(cache, (kt_tier)i), visit_verify, &v);
		records += v.records;
		bad += v.bad;
	}
	printf("%ld record%s, %ld bad\n", records, records == 1 ? "" : "s", bad);
	kt_cache_close(cache, NULL);
	return bad ? KT_EXIT_INPUT : KT_EXIT_OK;
}

/* ---- gc ---- */

struct gc_entry {
	char *path;
	long long bytes;
	time_t mtime;
};

struct gc {
	struct gc_entry *v;
	size_t n, cap;
	long long total;
};

static int visit_gc(void *ctx, const char *path, const char *key)
{
	(void)key;
	struct gc *g = ctx;
	struct stat st;
	if (stat(path, &st) != 0)
		return 0;
	if (g->n == g->cap)
		g->v = kt_xrealloc(g->v, (g->cap = g->cap ? 2 * g->cap : 64) * sizeof *g->v);
	g->v[g->n++] = (struct gc_entry){kt_xstrdup(path), st.st_size, st.st_mtime};
	g->total += st.st_size;
	return 0;
}

static int older_first(const void *a, const void *b)
{
	const struct gc_entry *x = a, *y = b;
	if (x->mtime != y->mtime)
		return x->mtime < y->mtime ? -1 : 1;
	return strcmp(x->path, y->path);
}

/* "10M", "512K", "2G" or bytes. */
static int parse_size(const char *s, long long *out, kt_err *err)
{
	static const struct {
		char suffix;
		long long mult;
	} units[] = {{'K', 1LL << 10}, {'M', 1LL << 20}, {'G', 1LL << 30}, {'T', 1LL << 40}};
	char *end;
	errno = 0;
	double v = strtod(s, &end);
	long long mult = 1;
	for (size_t i = 0; *end && i < sizeof units / sizeof units[0]; i++)
		if ((*end & ~0x20) == units[i].suffix) {
			mult = units[i].mult;
			end++;
			if (*end == 'i' || *end == 'B')
				end += *end == 'i' ? (end[1] == 'B' ? 2 : 1) : 1;
			break;
		}
	if (errno || end == s || *end || v < 0)
		return kt_fail(err, "--max-size '%s': expected a size such as 500K, 64M or 2G", s);
	*out = (long long)(v * (double)mult);
	return 0;
}

/* Temporary files of writers that died before their rename. */
static void remove_stale_temps(const char *dir)
{
	char name[16];
	snprintf(name, sizeof name, "v%d", KT_KEY_FORMAT);
	char *vdir = kt_path_join(dir, name);
	for (int hi = 0; hi < 256; hi++) {
		char sub[3];
		snprintf(sub, sizeof sub, "%02x", hi);
		char *path = kt_path_join(vdir, sub);
		DIR *d = opendir(path);
		for (struct dirent *e; d && (e = readdir(d));) {
			if (!strstr(e->d_name, ".json.tmp."))
				continue;
			char *p = kt_path_join(path, e->d_name);
			struct stat st;
			if (stat(p, &st) == 0 && time(NULL) - st.st_mtime > STALE_TEMP_SECONDS)
				unlink(p);
			free(p);
		}
		if (d)
			closedir(d);
		free(path);
	}
	free(vdir);
}

static int cmd_gc(int argc, char **argv)
{
	kt_cache_common c = {0};
	const char *max = NULL;
	const kt_opt opts[] = {KT_CACHE_COMMON_OPTS(c), {"max-size", KT_OPT_STR, &max, "SIZE", "keep at most this much, e.g. 64M"}, {0}};
	const char *pos[1];
	int npos, rc = kt_cache_cmd_parse(opts, argc, argv, pos, 0, &npos, "kt cache gc --max-size SIZE [--cache-dir DIR]",
			     "Removes the least recently stored records of the user cache until it holds at most\n"
			     "SIZE bytes of records, and the temporary files of writers that died an hour ago or\n"
			     "more.  The project cache is never touched.");
	if (rc >= 0)
		return rc;
	kt_err err = {0};
	long long limit = 0;
	if (!max) {
		kt_fail(&err, "--max-size is required");
		return kt_cache_cmd_fail(&err);
	}
	if (parse_size(max, &limit, &err) != 0)
		return kt_cache_cmd_fail(&err);
	kt_cache *cache = kt_cache_cmd_open(&c, NULL, &err);
	if (!cache)
		return kt_cache_cmd_fail(&err);
	const char *dir = kt_cache_dir(cache, KT_TIER_USER);
	remove_stale_temps(dir);
	struct gc g = {0};
	kt_cache_each(dir, visit_gc, &g);
	if (g.n)
		qsort(g.v, g.n, sizeof *g.v, older_first);
	long removed = 0;
	long long freed = 0;
	for (size_t i = 0; i < g.n; i++) {
		if (g.total - freed > limit && unlink(g.v[i].path) == 0) {
			removed++;
			freed += g.v[i].bytes;
		}
		free(g.v[i].path);
	}
	free(g.v);
	char a[32], b[32];
	human_size((double)freed, a, sizeof a);
	human_size((double)(g.total - freed), b, sizeof b);
	printf("removed %ld record%s (%s); %ld remain (%s)\n", removed, removed == 1 ? "" : "s", a, (long)g.n - removed, b);
	kt_cache_close(cache, NULL);
	return KT_EXIT_OK;
}

/* ---- promote ---- */

/* A record as promote weighs it: the user cache's (to copy) or the project's (to keep or replace).
 * A record supersedes another of the same problem tuned from another version of its template
 * (kt_key_same_problem): the other can no longer be hit, as the key holds the template's source. */
typedef struct prec {
	char key[KT_KEY_HEX];
	char *path, *fields, *date, *what; /* what: "kernel shape GPU" */
	int out;                           /* a project record promote removed */
} prec;

typedef struct precs {
	prec *v;
	size_t n;
} precs;

struct promote {
	const char *to, *kernel, *gpu;
	precs user, project;
	long copied, same, skipped, replaced, older;
	kt_err err;
};

/* Adds the whole record at path to l; 0, or -1 with why when it is not whole. */
static int prec_add(precs *l, const char *path, const char *key, const char *kernel, const char *gpu, kt_err *why)
{
	kt_buf text = {0};
	kt_record r = {0};
	int rc = kt_read_file(path, &text, why) == 0 && kt_record_read(text.data, text.len, &r, why) == 0 ? 0 : -1;
	if (rc == 0 && strcmp(r.key, key) != 0)
		rc = kt_fail(why, "key mismatch");
	if (rc == 0 && !(kernel && fnmatch(kernel, r.kernel, 0) != 0) && !(gpu && strcmp(gpu, r.gpu.name) != 0)) {
		l->v = kt_xrealloc(l->v, (l->n + 1) * sizeof *l->v);
		prec *p = &l->v[l->n++];
		memset(p, 0, sizeof *p);
		snprintf(p->key, sizeof p->key, "%s", r.key);
		p->path = kt_xstrdup(path);
		p->fields = kt_xstrdup(kt_buf_str(&r.fields));
		p->date = kt_xstrdup(r.date ? r.date : "");
		kt_buf w = {0};
		kt_buf_printf(&w, "%s %s %s", r.kernel, r.shape, r.gpu.name);
		p->what = kt_buf_detach(&w);
	}
	kt_record_free(&r);
	kt_buf_free(&text);
	return rc;
}

static int visit_user(void *ctx, const char *path, const char *key)
{
	struct promote *p = ctx;
	kt_err why = {0};
	if (prec_add(&p->user, path, key, p->kernel, p->gpu, &why) != 0) {
		fprintf(stderr, "kt: warning: %s: not promoted: %s\n", path, why.msg);
		p->skipped++;
	}
	return 0;
}

static int visit_project(void *ctx, const char *path, const char *key)
{
	struct promote *p = ctx;
	kt_err why = {0};
	prec_add(&p->project, path, key, NULL, NULL, &why); /* one not whole is `kt cache verify`'s to report */
	return 0;
}

/* b supersedes a: the same problem, another key, and b is the later (kt_record_later). */
static int supersedes(const prec *b, const prec *a)
{
	return strcmp(a->key, b->key) != 0 && kt_record_later(b->date, b->key, a->date, a->key) &&
	       kt_key_same_problem(a->fields, b->fields);
}

/* Copies user record u into the project's cache/, then removes what it supersedes there; or
 * leaves it out when the user cache or the project holds a newer record of its problem. */
static int promote_one(struct promote *p, prec *u)
{
	for (size_t i = 0; i < p->user.n; i++)
		if (supersedes(&p->user.v[i], u)) {
			printf("%s  %s: not promoted: %s is a later record of it\n", u->key, u->what, p->user.v[i].key);
			p->older++;
			return 0;
		}
	for (size_t i = 0; i < p->project.n; i++)
		if (!p->project.v[i].out && supersedes(&p->project.v[i], u)) {
			printf("%s  %s: not promoted: %s holds a newer record of it (%s)\n", u->key, u->what, p->to, p->project.v[i].key);
			p->older++;
			return 0;
		}
	kt_buf text = {0}, old = {0};
	char *dst = kt_cache_record_path(p->to, u->key), *dir = kt_path_dir(dst);
	int rc = kt_read_file(u->path, &text, &p->err);
	if (rc == 0 && kt_read_file(dst, &old, NULL) == 0 && old.len == text.len && !memcmp(old.data, text.data, text.len))
		p->same++;
	else if (rc == 0 && (kt_mkdirs(dir, &p->err) != 0 || kt_write_atomic(dst, text.data, text.len, &p->err) != 0))
		rc = -1;
	else if (rc == 0) {
		printf("%s  %s\n", u->key, u->what);
		p->copied++;
	}
	for (size_t i = 0; rc == 0 && i < p->project.n; i++) {
		prec *h = &p->project.v[i];
		if (h->out || !supersedes(u, h))
			continue;
		if (unlink(h->path) != 0 && errno != ENOENT)
			rc = kt_fail(&p->err, "cannot remove %s: %s", h->path, strerror(errno));
		else {
			printf("%s  %s: replaces %s (another version of the template)\n", u->key, u->what, h->key);
			h->out = 1;
			p->replaced++;
		}
	}
	free(dir);
	free(dst);
	kt_buf_free(&text);
	kt_buf_free(&old);
	return rc;
}

static void precs_free(precs *l)
{
	for (size_t i = 0; i < l->n; i++) {
		free(l->v[i].path);
		free(l->v[i].fields);
		free(l->v[i].date);
		free(l->v[i].what);
	}
	free(l->v);
}

static int cmd_promote(int argc, char **argv)
{
	kt_cache_common c = {0};
	struct promote p = {.to = NULL};
	const kt_opt opts[] = {
		{"cache-dir", KT_OPT_STR, &c.cache_dir, "DIR", "the user cache (else $KT_CACHE_DIR, ~/.cache/kt)"},
		{"to", KT_OPT_STR, &p.to, "DIR", "the project's cache directory (default: ./cache)"},
		{"kernel", KT_OPT_STR, &p.kernel, "PATTERN", "only kernels whose name matches (fnmatch)"},
		{"gpu", KT_OPT_STR, &p.gpu, "NAME", "only records of this GPU"},
		{0},
	};
	const char *pos[1];
	int npos, rc = kt_cache_cmd_parse(opts, argc, argv, pos, 0, &npos, "kt cache promote [--to DIR] [--kernel PATTERN] [--gpu NAME]",
			     "Copies the whole records of the user cache into the project's cache directory, so\n"
			     "that they can be committed and reused by machines without a GPU (CI).  A record\n"
			     "there of the same problem tuned from another version of the template, and not\n"
			     "newer, is removed: the new one replaces it.");
	if (rc >= 0)
		return rc;
	if (!p.to)
		p.to = "cache";
	kt_cache *cache = kt_cache_cmd_open(&c, NULL, &p.err);
	if (!cache)
		return kt_cache_cmd_fail(&p.err);
	rc = kt_cache_each(kt_cache_dir(cache, KT_TIER_USER), visit_user, &p);
	if (rc == 0)
		rc = kt_cache_each(p.to, visit_project, &p);
	for (size_t i = 0; rc == 0 && i < p.user.n; i++)
		rc = promote_one(&p, &p.user.v[i]);
	kt_cache_close(cache, NULL);
	precs_free(&p.user);
	precs_free(&p.project);
	if (rc != 0)
		return kt_cache_cmd_fail(&p.err);
	printf("promoted %ld record%s to %s (%ld already there, %ld replaced, %ld superseded left out, %ld unreadable skipped)\n",
	       p.copied, p.copied == 1 ? "" : "s", p.to, p.same, p.replaced, p.older, p.skipped);
	return KT_EXIT_OK;
}

/* ---- the table ---- */

/* Sorted by name (lint.tables keeps it so). */
static const kt_subcmd commands[] = {
	{"explain", cmd_explain, "print the key fields and the key of a template at a shape"},
	{"export", kt_cache_cmd_export, "write records in Kernel Tuner's T4 results format"},
	{"gc", cmd_gc, "remove the oldest records of the user cache down to a size"},
	{"import", kt_cache_cmd_import, "read a T4 results file as a recorded space (for search experiments)"},
	{"ls", cmd_ls, "list the records"},
	{"promote", cmd_promote, "copy records from the user cache into the project's cache/"},
	{"push", kt_cache_cmd_push, "upload the records of cache/ (or a user cache) to the remote cache"},
	{"show", cmd_show, "print one record"},
	{"stats", cmd_stats, "hits and misses by tier, corrupt records, size"},
	{"verify", cmd_verify, "check that every record is whole"},
};

int kt_cmd_cache(int argc, char **argv)
{
	return kt_subcmd_run("kt cache",
			     "Looks into and looks after kt's tuning cache: the user cache ($KT_CACHE_DIR, else\n"
			     "$XDG_CACHE_HOME/kt, else ~/.cache/kt), the project's cache/ and a remote HTTP cache.",
			     commands, sizeof commands / sizeof commands[0], argc, argv);
}
