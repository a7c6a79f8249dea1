/* test_cache.c - the directory tiers: store and hit, copy-up, read-only, retune patterns,
 * corrupt/truncated/other-version/out-of-space records (each a counted miss with a warning,
 * repaired by the next store), statistics, the GPU identity from records, a dead remote. */
#define _XOPEN_SOURCE 700
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "cache.h"
#include "cmd_env.h"
#include "check.h"

static const char src[] =
	"// @kt kernel    scale\n"
	"// @kt shape     n\n"
	"// @kt param     BLOCK in 64, 128, 256 default 128\n"
	"// @kt param     VEC in 1, 2, 4 default 2\n"
	"// @kt require   n % (BLOCK * VEC) == 0\n"
	"// @kt arg       out float[n] out\n"
	"// @kt arg       x   float[n] in\n"
	"// @kt arg       n   int = n\n"
	"// @kt grid      cdiv(n, BLOCK * VEC)\n"
	"// @kt block     BLOCK\n"
	"extern \"C\" __global__ void scale(float* out, const float* x, int n) { }\n";

static char *tmp, user[300], project[300]; /* tmp: under TMPDIR (tests/tmp checks it) */
static kt_tmpl *t;
static int64_t shape[1] = {1536};
static const kt_gpu_id gpu = {"NVIDIA H200", 9, 0, 132, 52428800, 232448};
static kt_buf warnings;
static int nwarnings;

static void collect(void *ctx, const char *msg)
{
	(void)ctx;
	kt_buf_printf(&warnings, "%s\n", msg);
	nwarnings++;
}

static void clear_warnings(void)
{
	kt_buf_reset(&warnings);
	nwarnings = 0;
}

static kt_cache *open_cache(int read_only, const char *retune)
{
	kt_cache_opts o = {.user_dir = user, .project_dir = project, .remote = "", .read_only = read_only,
			   .retune = retune, .warn = collect};
	kt_err err = {0};
	kt_cache *c = kt_cache_open(&o, &err);
	CHECK(c != NULL);
	return c;
}

static void make_key(kt_key *k, int64_t n)
{
	static int64_t shapes[64];
	static int next;
	shapes[next] = n;
	kt_target target = {.id = gpu};
	kt_toolchain tc = {NULL, "nvcc 13.0", "90", "-O3"};
	kt_problem p = {.tmpl = t, .shape = &shapes[next], .target = &target, .tc = &tc};
	next = (next + 1) % 64;
	kt_err err = {0};
	CHECK(kt_key_make(&p, k, &err) == 0);
}

/* A result whose best configuration is BLOCK=values[b], VEC=values[v]. */
static void make_result(kt_tune_result *r, uint16_t b, uint16_t v)
{
	memset(r, 0, sizeof *r);
	r->nparams = 2;
	r->nevals = 1;
	r->evals = kt_xcalloc(1, sizeof *r->evals);
	r->evals[0].cfg = kt_xmalloc(2 * sizeof(uint16_t));
	r->evals[0].cfg[0] = b;
	r->evals[0].cfg[1] = v;
	r->evals[0].median_us = 4.0;
	r->evals[0].regs = r->evals[0].smem_static = r->evals[0].local_bytes = -1;
	snprintf(r->strategy, sizeof r->strategy, "exhaustive");
}

static void store(kt_cache *c, const kt_key *k, uint16_t b, uint16_t v)
{
	kt_tune_result r;
	make_result(&r, b, v);
	kt_err err = {0};
	kt_target target = {.id = gpu};
	kt_toolchain tc = {0};
	kt_problem p = {.tmpl = t, .shape = shape, .target = &target, .tc = &tc};
	CHECK(kt_cache_store(c, k, &p, &r, NULL, &err) == 0);
	kt_tune_result_free(&r);
}

static int lookup(kt_cache *c, const kt_key *k, uint16_t *cfg, kt_tier *tier)
{
	kt_target target = {.id = gpu};
	kt_toolchain tc = {0};
	kt_problem p = {.tmpl = t, .shape = shape, .target = &target, .tc = &tc};
	return kt_cache_lookup(c, k, &p, cfg, tier, NULL);
}

static int exists(const char *path)
{
	struct stat st;
	return stat(path, &st) == 0;
}

static void test_store_hit(void)
{
	kt_key k = {0};
	make_key(&k, 1536);
	kt_cache *c = open_cache(0, NULL);
	uint16_t cfg[2] = {9, 9};
	kt_tier tier = KT_NTIERS;
	CHECK_INT(lookup(c, &k, cfg, &tier), 0);
	store(c, &k, 1, 2);
	CHECK_INT(lookup(c, &k, cfg, &tier), 1);
	CHECK_INT(tier, KT_TIER_USER);
	CHECK_INT(cfg[0], 1);
	CHECK_INT(cfg[1], 2);
	char *path = kt_cache_record_path(user, k.hex);
	char want[400];
	snprintf(want, sizeof want, "%s/v1/%.2s/%s.json", user, k.hex, k.hex);
	CHECK_STR(path, want);
	CHECK(exists(path));
	const kt_cache_stats *s = kt_cache_run_stats(c);
	CHECK_INT(s->hits[KT_TIER_USER], 1);
	CHECK_INT(s->misses[KT_TIER_USER], 1);
	CHECK_INT(s->misses[KT_TIER_PROJECT], 1);
	CHECK_INT(s->stores, 1);
	kt_err err = {0};
	CHECK(kt_cache_close(c, &err) == 0);
	kt_cache_stats total;
	kt_cache_stats_load(user, &total);
	CHECK_INT(total.hits[KT_TIER_USER], 1);
	CHECK_INT(total.stores, 1);
	/* A second run adds to the totals. */
	c = open_cache(0, NULL);
	CHECK_INT(lookup(c, &k, cfg, NULL), 1);
	kt_cache_close(c, NULL);
	kt_cache_stats_load(user, &total);
	CHECK_INT(total.hits[KT_TIER_USER], 2);
	CHECK_INT(nwarnings, 0);
	free(path);
	kt_key_free(&k);
}

/* Moves the user record of k into the project tier. */
static void move_to_project(const kt_key *k)
{
	char *from = kt_cache_record_path(user, k->hex), *to = kt_cache_record_path(project, k->hex);
	char *dir = kt_path_dir(to);
	kt_mkdirs(dir, NULL);
	CHECK(rename(from, to) == 0);
	free(from);
	free(to);
	free(dir);
}

static void test_copy_up_and_read_only(void)
{
	kt_key k = {0};
	make_key(&k, 3072);
	kt_cache *c = open_cache(0, NULL);
	store(c, &k, 0, 1);
	kt_cache_close(c, NULL);
	move_to_project(&k);
	char *upath = kt_cache_record_path(user, k.hex);
	CHECK(!exists(upath));

	/* Read-only: a project hit, nothing copied, no statistics written. */
	char *stats = kt_path_join(user, "v1/stats.json");
	struct stat before, after;
	CHECK(stat(stats, &before) == 0);
	c = open_cache(1, NULL);
	uint16_t cfg[2];
	kt_tier tier;
	CHECK_INT(lookup(c, &k, cfg, &tier), 1);
	CHECK_INT(tier, KT_TIER_PROJECT);
	kt_key other = {0};
	make_key(&other, 6144);
	store(c, &other, 0, 0); /* a no-op */
	kt_cache_close(c, NULL);
	CHECK(!exists(upath));
	char *opath = kt_cache_record_path(user, other.hex);
	CHECK(!exists(opath));
	CHECK(stat(stats, &after) == 0);
	CHECK(before.st_mtim.tv_sec == after.st_mtim.tv_sec && before.st_mtim.tv_nsec == after.st_mtim.tv_nsec);

	/* Writable: the project hit is copied up, and the next lookup hits the user tier. */
	c = open_cache(0, NULL);
	CHECK_INT(lookup(c, &k, cfg, &tier), 1);
	CHECK_INT(tier, KT_TIER_PROJECT);
	CHECK(exists(upath));
	CHECK_INT(lookup(c, &k, cfg, &tier), 1);
	CHECK_INT(tier, KT_TIER_USER);
	CHECK_INT(cfg[0], 0);
	CHECK_INT(cfg[1], 1);
	kt_cache_close(c, NULL);
	CHECK_INT(nwarnings, 0);
	free(stats);
	free(upath);
	free(opath);
	kt_key_free(&k);
	kt_key_free(&other);
}

static void test_retune(void)
{
	kt_key k = {0};
	make_key(&k, 1536);
	uint16_t cfg[2];
	static const struct {
		const char *pattern;
		int hit;
	} cases[] = {{NULL, 1}, {"", 0}, {"*", 0}, {"sc*", 0}, {"scale", 0}, {"rmsnorm", 1}, {"s?ale", 0}, {"[!s]*", 1}};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		kt_cache *c = open_cache(0, cases[i].pattern);
		CHECK_INT(lookup(c, &k, cfg, NULL), cases[i].hit);
		CHECK_INT(kt_cache_run_stats(c)->retuned, !cases[i].hit);
		kt_cache_close(c, NULL);
	}
	kt_key_free(&k);
}

/* Writes text as k's user record. */
static void plant(const kt_key *k, const char *text)
{
	char *path = kt_cache_record_path(user, k->hex), *dir = kt_path_dir(path);
	kt_mkdirs(dir, NULL);
	CHECK(kt_write_atomic(path, text, strlen(text), NULL) == 0);
	free(path);
	free(dir);
}

static char *record_text(const kt_key *k)
{
	char *path = kt_cache_record_path(user, k->hex);
	kt_buf b = {0};
	CHECK(kt_read_file(path, &b, NULL) == 0);
	free(path);
	return kt_buf_detach(&b);
}

static char *edit_config(const char *text, const char *param, double v)
{
	cJSON *d = cJSON_Parse(text);
	cJSON_SetNumberValue(cJSON_GetObjectItem(cJSON_GetObjectItem(d, "config"), param), v);
	char *out = cJSON_Print(d);
	cJSON_Delete(d);
	return out;
}

static char *edit_format(const char *text, int format)
{
	cJSON *d = cJSON_Parse(text);
	cJSON_SetNumberValue(cJSON_GetObjectItem(d, "format"), format);
	char *out = cJSON_Print(d);
	cJSON_Delete(d);
	return out;
}

static void test_bad_records(void)
{
	kt_key k = {0};
	make_key(&k, 1536);
	char *good = record_text(&k);
	size_t len = strlen(good);
	char *truncated = kt_xstrdup(good);
	truncated[len - len / 3] = '\0';
	char *corrupt = kt_xstrdup(good);
	for (size_t i = 10; i < 30; i++)
		corrupt[i] = (char)0xff;
	char *other_version = edit_format(good, 2);
	char *undeclared = edit_config(good, "BLOCK", 96);
	char *infeasible = edit_config(good, "BLOCK", 256); /* 256 * 4 does not divide 1536 */
	static const char *const names[] = {"truncated", "corrupt", "another format", "undeclared value", "infeasible"};
	static const char *const why[] = {"not valid JSON", "not valid JSON", "record format 2", "is not a declared value",
					  "violates a constraint"};
	const char *texts[] = {truncated, corrupt, other_version, undeclared, infeasible};
	for (size_t i = 0; i < sizeof texts / sizeof texts[0]; i++) {
		plant(&k, texts[i]);
		clear_warnings();
		kt_cache *c = open_cache(0, NULL);
		uint16_t cfg[2];
		int hit = lookup(c, &k, cfg, NULL);
		CHECK_INT(hit, 0);
		CHECK_INT(nwarnings, 1);
		CHECK_INT(kt_cache_run_stats(c)->corrupt, 1);
		if (!strstr(kt_buf_str(&warnings), why[i]) || !strstr(kt_buf_str(&warnings), "treated as a miss")) {
			check_failed++;
			fprintf(stderr, "%s: warning '%s' does not say '%s'\n", names[i], kt_buf_str(&warnings), why[i]);
		}
		/* The next store repairs it. */
		store(c, &k, 1, 2);
		clear_warnings();
		CHECK_INT(lookup(c, &k, cfg, NULL), 1);
		CHECK_INT(nwarnings, 0);
		kt_cache_close(c, NULL);
	}
	kt_cache_stats total;
	kt_cache_stats_load(user, &total);
	CHECK(total.corrupt >= 5);
	free(good);
	free(truncated);
	free(corrupt);
	free(other_version);
	free(undeclared);
	free(infeasible);
	kt_key_free(&k);
}

static int count_visit(void *ctx, const char *path, const char *key)
{
	(void)path;
	int *n = ctx;
	CHECK(kt_key_is_hex(key));
	CHECK(strstr(path, "/v1/") != NULL);
	(*n)++;
	return 0;
}

/* A directory of another format version is neither read nor touched. */
static void test_other_version_dir(void)
{
	char v2[400], rec[500];
	snprintf(v2, sizeof v2, "%s/v2/ab", user);
	kt_mkdirs(v2, NULL);
	snprintf(rec, sizeof rec, "%s/abababababababababababababababab.json", v2);
	static const char text[] = "{\"format\": 2, \"something\": \"new\"}";
	CHECK(kt_write_atomic(rec, text, sizeof text - 1, NULL) == 0);
	int n = 0;
	kt_cache_each(user, count_visit, &n); /* count_visit checks that every path is under v1/ */
	kt_cache *c = open_cache(0, NULL);
	kt_key k = {0};
	make_key(&k, 1536);
	uint16_t cfg[2];
	CHECK_INT(lookup(c, &k, cfg, NULL), 1);
	store(c, &k, 1, 2);
	kt_cache_close(c, NULL);
	kt_buf b = {0};
	CHECK(kt_read_file(rec, &b, NULL) == 0);
	CHECK_STR(kt_buf_str(&b), text);
	kt_buf_free(&b);
	kt_key_free(&k);
}

static void test_each(void)
{
	/* A temporary file of a dead writer and a stray file are not records. */
	kt_key k = {0};
	make_key(&k, 1536);
	char *path = kt_cache_record_path(user, k.hex);
	kt_buf tmpname = {0};
	kt_buf_printf(&tmpname, "%s.tmp.123.abcdef", path);
	CHECK(kt_write_atomic(tmpname.data, "{", 1, NULL) == 0);
	int n = 0;
	kt_cache_each(user, count_visit, &n);
	CHECK_INT(n, 2); /* the keys of shapes 1536 and 3072 */
	n = 0;
	kt_cache_each(project, count_visit, &n);
	CHECK_INT(n, 1);
	n = 0;
	kt_cache_each("/nonexistent/kt", count_visit, &n);
	CHECK_INT(n, 0);
	unlink(tmpname.data);
	kt_buf_free(&tmpname);
	free(path);
	kt_key_free(&k);
}

static void test_find_gpu(void)
{
	kt_cache *c = open_cache(1, NULL);
	kt_gpu_id g;
	CHECK_INT(kt_cache_find_gpu(c, "NVIDIA H200", &g), 1);
	CHECK_STR(g.name, "NVIDIA H200");
	CHECK_INT(g.sms, 132);
	CHECK_INT(g.cc_major, 9);
	CHECK_INT(g.l2_bytes, 52428800);
	CHECK_INT(g.smem_optin, 232448);
	CHECK_INT(kt_cache_find_gpu(c, "NVIDIA B200", &g), 0);
	kt_cache_close(c, NULL);
}

/* A remote that refuses connections: one warning, then it is switched off; lookups go on. */
static void test_dead_remote(void)
{
	kt_cache_opts o = {.user_dir = user, .remote = "http://127.0.0.1:9/kt", .warn = collect};
	kt_err err = {0};
	kt_cache *c = kt_cache_open(&o, &err);
	CHECK(c != NULL);
	clear_warnings();
	kt_key a = {0}, b = {0};
	make_key(&a, 1536);
	make_key(&b, 99999);
	uint16_t cfg[2];
	CHECK_INT(lookup(c, &a, cfg, NULL), 1); /* the user tier answers first */
	CHECK_INT(lookup(c, &b, cfg, NULL), 0);
	CHECK_INT(lookup(c, &b, cfg, NULL), 0);
	CHECK_INT(nwarnings, 1);
	CHECK(strstr(kt_buf_str(&warnings), "remote cache http://127.0.0.1:9/kt") != NULL);
	CHECK(kt_cache_remote(c) == NULL);
	CHECK_INT(kt_cache_run_stats(c)->remote_errors, 1);
	kt_cache_close(c, NULL);
	kt_key_free(&a);
	kt_key_free(&b);
	/* A URL of another scheme: a warning, and no remote. */
	clear_warnings();
	kt_cache_opts bad = {.user_dir = user, .remote = "ftp://example/kt", .warn = collect};
	c = kt_cache_open(&bad, &err);
	CHECK(c != NULL && kt_cache_remote(c) == NULL);
	CHECK_INT(nwarnings, 1);
	CHECK(strstr(kt_buf_str(&warnings), "only http") != NULL);
	kt_cache_close(c, NULL);
}

static void test_default_dir(void)
{
	kt_err err = {0};
	char *d;
	setenv("KT_CACHE_DIR", "/a/kt", 1);
	d = kt_env_cache_dir(&err);
	CHECK_STR(d, "/a/kt");
	free(d);
	unsetenv("KT_CACHE_DIR");
	setenv("XDG_CACHE_HOME", "/x", 1);
	d = kt_env_cache_dir(&err);
	CHECK_STR(d, "/x/kt");
	free(d);
	unsetenv("XDG_CACHE_HOME");
	setenv("HOME", "/home/u", 1);
	d = kt_env_cache_dir(&err);
	CHECK_STR(d, "/home/u/.cache/kt");
	free(d);
	unsetenv("HOME");
	CHECK(kt_env_cache_dir(&err) == NULL);
}

int main(void)
{
	if (!(tmp = kt_temp_dir(getenv("TMPDIR"), "kt-test-cache", NULL)))
		return 2;
	snprintf(user, sizeof user, "%s/user", tmp);
	snprintf(project, sizeof project, "%s/project", tmp);
	kt_buf diags = {0};
	kt_err err = {0};
	t = kt_tmpl_parse_text("scale.cu.tmpl", src, sizeof src - 1, NULL, &diags, &err);
	if (!t) {
		fprintf(stderr, "%s%s\n", kt_buf_str(&diags), err.msg);
		return 1;
	}
	test_store_hit();
	test_copy_up_and_read_only();
	test_retune();
	test_bad_records();
	test_other_version_dir();
	test_each();
	test_find_gpu();
	test_dead_remote();
	test_default_dir();
	kt_tmpl_free(t);
	kt_buf_free(&diags);
	kt_buf_free(&warnings);
	if (check_failed == 0) /* else kept, to look at */
		kt_remove_tree(tmp);
	free(tmp);
	return check_done();
}
