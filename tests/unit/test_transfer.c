/* test_transfer.c - warm start: seeds from the records of the same template in real cache
 * directories (closest first, chosen before runner-ups, other templates and unreadable files
 * skipped, infeasible configurations never seeded, the sources named) and the ranking and
 * interleaving of kt_transfer_pick on hand-made sources; the problem tuned from other versions of
 * the template, as a seed and as the stand-in for a shape that is not tuned. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "cache.h"
#include "check.h"
#include "space.h"
#include "transfer.h"

static const char text[] =
	"// @kt kernel    scale\n"
	"// @kt shape     rows hidden\n"
	"// @kt param     BLOCK in 32, 64, 128, 256 default 128\n"
	"// @kt param     VEC in 1, 2, 4 default 2\n"
	"// @kt require   hidden % (BLOCK * VEC) == 0\n"
	"// @kt arg       out float[rows*hidden] out\n"
	"// @kt arg       x   float[rows*hidden] in\n"
	"// @kt arg       rows   int = rows\n"
	"// @kt arg       hidden int = hidden\n"
	"// @kt grid      cdiv(rows * hidden, BLOCK * VEC)\n"
	"// @kt block     BLOCK\n"
	"extern \"C\" __global__ void scale(float* out, const float* x, int rows, int hidden) { }\n";

static const kt_gpu_id h200 = {"NVIDIA H200", 9, 0, 132, 52428800, 232448};
static const kt_gpu_id h100 = {"NVIDIA H100 80GB HBM3", 9, 0, 132, 52428800, 232448};
static const kt_toolchain tc13 = {NULL, "Cuda compilation tools, release 13.0, V13.0.88", "90", "-O3"};
static const kt_toolchain tc12 = {NULL, "Cuda compilation tools, release 12.8, V12.8.93", "90", "-O3"};

static kt_tmpl *t;

/* One evaluation of a record: its configuration ("BLOCK=128,VEC=2"), status, time and racing. */
typedef struct ev {
	const char *cfg;
	kt_status st;
	double us;
	int raced;
} ev;

/* Stores a record of template tm at rows x hidden on gpu (built with tc) in cache c: the
 * evaluations evs[0..) up to a NULL configuration, the first of them the chosen one. */
static void put(kt_cache *c, const kt_tmpl *tm, const kt_gpu_id *gpu, const kt_toolchain *tc, int64_t rows,
		int64_t hidden, const ev *evs)
{
	int64_t shape[2] = {rows, hidden};
	kt_target target;
	kt_target_from_id(gpu, &target);
	kt_problem p = {.tmpl = tm, .shape = shape, .target = &target, .tc = tc};
	kt_tune_result r = {.nparams = tm->nparams, .best = 0};
	snprintf(r.strategy, sizeof r.strategy, "bestfirst");
	kt_err err = {0};
	for (const ev *e = evs; e->cfg; e++) {
		r.evals = kt_xrealloc(r.evals, (r.nevals + 1) * sizeof *r.evals);
		kt_eval *x = &r.evals[r.nevals++];
		memset(x, 0, sizeof *x);
		x->cfg = kt_xcalloc((size_t)tm->nparams, sizeof *x->cfg);
		CHECK_INT(kt_tmpl_parse_config(tm, e->cfg, x->cfg, &err), 0);
		x->status = e->st;
		x->median_us = e->us;
		x->spread_us = e->us / 100;
		x->raced = e->raced;
		x->regs = x->smem_static = x->local_bytes = -1;
	}
	kt_key k = {0};
	CHECK_INT(kt_key_make(&p, &k, &err), 0);
	CHECK_INT(kt_cache_store(c, &k, &p, &r, NULL, &err), 0);
	kt_key_free(&k);
	kt_tune_result_free(&r);
}

static kt_cache *open_dir(const char *dir)
{
	kt_cache_opts o = {.user_dir = dir, .remote = ""};
	kt_err err = {0};
	kt_cache *c = kt_cache_open(&o, &err);
	CHECK(c != NULL);
	return c;
}

static void close_dir(kt_cache *c)
{
	kt_err err = {0};
	CHECK_INT(kt_cache_close(c, &err), 0);
}

/* The seeds as "BLOCK=128,VEC=2 BLOCK=64,VEC=1 ..." */
static void format_seeds(const uint16_t *seeds, size_t n, kt_buf *out)
{
	for (size_t i = 0; i < n; i++) {
		if (i)
			kt_buf_putc(out, ' ');
		kt_tmpl_format_config(t, seeds + i * (size_t)t->nparams, out);
	}
}

static void seeds_of(const char *const *dirs, int ndirs, int64_t rows, int64_t hidden, kt_buf *got, kt_buf *why)
{
	int64_t shape[2] = {rows, hidden};
	kt_target target;
	kt_target_from_id(&h200, &target);
	kt_problem p = {.tmpl = t, .shape = shape, .target = &target, .tc = &tc13};
	uint16_t *seeds = NULL;
	size_t n = 99;
	kt_transfer_seeds(&p, dirs, ndirs, &seeds, &n, why);
	CHECK(n <= KT_TRANSFER_SEEDS);
	for (size_t i = 0; i < n; i++) /* every seed is feasible at the problem's shape */
		CHECK(kt_space_feasible(t, shape, seeds + i * (size_t)t->nparams));
	format_seeds(seeds, n, got);
	free(seeds);
}

/* Replaces every from in b with to. */
static void replace_all(kt_buf *b, const char *from, const char *to)
{
	kt_buf out = {0};
	const char *p = kt_buf_str(b), *q;
	while ((q = strstr(p, from))) {
		kt_buf_add(&out, p, (size_t)(q - p));
		kt_buf_puts(&out, to);
		p = q + strlen(from);
	}
	kt_buf_puts(&out, p);
	kt_buf_free(b);
	*b = out;
}

/* The template text with from replaced by to, then from2 by to2 (unless NULL), parsed (the caller
 * frees it). */
static kt_tmpl *version_of(const char *from, const char *to, const char *from2, const char *to2)
{
	kt_buf src = {0}, diags = {0};
	kt_err err = {0};
	kt_buf_puts(&src, text);
	replace_all(&src, from, to);
	if (from2)
		replace_all(&src, from2, to2);
	kt_tmpl *v = kt_tmpl_parse_text("scale.cu.tmpl", src.data, src.len, NULL, &diags, &err);
	if (!v)
		fprintf(stderr, "%s%s\n", kt_buf_str(&diags), err.msg);
	CHECK(v != NULL);
	kt_buf_free(&src);
	kt_buf_free(&diags);
	return v;
}

/* The problem: H200 at rows=4, hidden=1536, where BLOCK=256,VEC=4 (1024) does not divide hidden. */
static void test_seeds(const char *tmp)
{
	char user[400], project[400], junk[500];
	snprintf(user, sizeof user, "%s/user", tmp);
	snprintf(project, sizeof project, "%s/project", tmp);
	const char *const dirs[3] = {user, NULL, project};

	/* Nothing known yet: no seeds, no sources. */
	kt_buf got = {0}, why = {0};
	seeds_of(dirs, 3, 4, 1536, &got, &why);
	CHECK_STR(kt_buf_str(&got), "");
	CHECK_STR(kt_buf_str(&why), "");

	/* Another kernel (its name a key field) at the very shape: it would come first if it counted. */
	kt_buf other_src = {0}, diags = {0};
	kt_err err = {0};
	kt_buf_puts(&other_src, text);
	replace_all(&other_src, "scale", "scale2");
	kt_tmpl *other = kt_tmpl_parse_text("scale2.cu.tmpl", other_src.data, other_src.len, NULL, &diags, &err);
	CHECK(other != NULL);
	kt_cache *u = open_dir(user);
	if (other)
		put(u, other, &h200, &tc13, 4, 1536, (const ev[]){{"BLOCK=32,VEC=2", KT_OK, 1.0, 0}, {NULL, 0, 0, 0}});
	kt_buf_reset(&got);
	seeds_of(dirs, 3, 4, 1536, &got, &why);
	CHECK_STR(kt_buf_str(&got), "");
	CHECK_STR(kt_buf_str(&why), "");

	/* R1: this GPU, hidden 4/3 away (distance 0.415).  Its chosen one first, though a runner-up
	 * was timed faster; a raced estimate and a failure are no runner-ups. */
	put(u, t, &h200, &tc13, 4, 2048,
	    (const ev[]){{"BLOCK=128,VEC=2", KT_OK, 4.0, 0},
			 {"BLOCK=32,VEC=1", KT_OK, 3.0, 1},
			 {"BLOCK=32,VEC=2", KT_COMPILE_FAILED, 0, 0},
			 {"BLOCK=256,VEC=1", KT_OK, 6.0, 0},
			 {"BLOCK=64,VEC=2", KT_OK, 3.5, 0},
			 {NULL, 0, 0, 0}});
	/* R2: another GPU (and another compiler) at the very shape (distance 2). */
	put(u, t, &h100, &tc12, 4, 1536,
	    (const ev[]){{"BLOCK=256,VEC=2", KT_OK, 4.0, 0},
			 {"BLOCK=128,VEC=1", KT_OK, 4.7, 0},
			 {"BLOCK=64,VEC=4", KT_OK, 4.5, 0},
			 {NULL, 0, 0, 0}});
	/* R3: this GPU at twice the rows and 8/3 the hidden (distance 1 + 1.415): its chosen one is
	 * infeasible at hidden=1536; its third is R1's chosen one again. */
	put(u, t, &h200, &tc13, 8, 4096,
	    (const ev[]){{"BLOCK=256,VEC=4", KT_OK, 2.0, 0},
			 {"BLOCK=128,VEC=4", KT_OK, 2.5, 0},
			 {"BLOCK=128,VEC=2", KT_OK, 3.0, 0},
			 {NULL, 0, 0, 0}});
	close_dir(u);
	/* R4 and R5 in the project tier: another GPU, far (distance 5.4 and 6): R5 is the fifth source. */
	kt_cache *pc = open_dir(project);
	put(pc, t, &h100, &tc13, 4, 16384,
	    (const ev[]){{"BLOCK=64,VEC=1", KT_OK, 9.0, 0},
			 {"BLOCK=64,VEC=2", KT_OK, 9.2, 0},
			 {"BLOCK=32,VEC=4", KT_OK, 9.4, 0},
			 {NULL, 0, 0, 0}});
	put(pc, t, &h100, &tc13, 64, 1536, (const ev[]){{"BLOCK=32,VEC=1", KT_OK, 1.0, 0}, {NULL, 0, 0, 0}});
	close_dir(pc);
	/* A file that looks like a record and is not one. */
	snprintf(junk, sizeof junk, "%s/v%d/00", user, KT_KEY_FORMAT);
	CHECK_INT(kt_mkdirs(junk, &err), 0);
	snprintf(junk, sizeof junk, "%s/v%d/00/%s.json", user, KT_KEY_FORMAT, "00000000000000000000000000000000");
	const char *garbage = "{\"format\": 1, \"key\": tru";
	CHECK_INT(kt_write_atomic(junk, garbage, strlen(garbage), &err), 0);

	/* By rank, closest source first: R1, R2, R3, R4 (R5 is not among the 4 closest).
	 *   rank 0: B128V2, B256V2, (B256V4 infeasible), B64V1
	 *   rank 1: B64V2,  B64V4,  B128V4, (B64V2 again)
	 *   rank 2: B256V1, B128V1 - and there are 8. */
	kt_buf_reset(&got);
	kt_buf_reset(&why);
	seeds_of(dirs, 3, 4, 1536, &got, &why);
	CHECK_STR(kt_buf_str(&got), "BLOCK=128,VEC=2 BLOCK=256,VEC=2 BLOCK=64,VEC=1 BLOCK=64,VEC=2 BLOCK=64,VEC=4 "
				    "BLOCK=128,VEC=4 BLOCK=256,VEC=1 BLOCK=128,VEC=1");
	CHECK_STR(kt_buf_str(&why), "NVIDIA H200 rows=4,hidden=2048 (distance 0.4); "
				    "NVIDIA H100 80GB HBM3 rows=4,hidden=1536 (distance 2.0); "
				    "NVIDIA H200 rows=8,hidden=4096 (distance 2.4); "
				    "NVIDIA H100 80GB HBM3 rows=4,hidden=16384 (distance 5.4)");

	/* Without the project tier (and without why): R1, R2, R3 and R4 is gone. */
	kt_buf_reset(&got);
	seeds_of(dirs, 1, 4, 1536, &got, NULL);
	CHECK_STR(kt_buf_str(&got), "BLOCK=128,VEC=2 BLOCK=256,VEC=2 BLOCK=64,VEC=2 BLOCK=64,VEC=4 BLOCK=128,VEC=4 "
				    "BLOCK=256,VEC=1 BLOCK=128,VEC=1");

	/* At hidden=4096 R3 is at distance 1 and its chosen one is feasible: it comes second. */
	kt_buf_reset(&got);
	kt_buf_reset(&why);
	seeds_of(dirs, 1, 4, 4096, &got, &why);
	CHECK(strncmp(kt_buf_str(&got), "BLOCK=128,VEC=2 BLOCK=256,VEC=4 ", 32) == 0);
	const char *closest = "NVIDIA H200 rows=4,hidden=2048 (distance 1.0); NVIDIA H200 rows=8,hidden=4096 (distance 1.0); ";
	CHECK(strncmp(kt_buf_str(&why), closest, strlen(closest)) == 0);

	/* Several problems from one pass: each gets what it gets alone. */
	int64_t shapes[3][2] = {{4, 1536}, {4, 4096}, {8, 4096}};
	kt_target target;
	kt_target_from_id(&h200, &target);
	kt_problem ps[3];
	uint16_t *all[3];
	size_t nall[3];
	kt_buf whys[3] = {{0}};
	for (int k = 0; k < 3; k++)
		ps[k] = (kt_problem){.tmpl = t, .shape = shapes[k], .target = &target, .tc = &tc13};
	kt_transfer_seeds_all(ps, 3, dirs, 3, NULL, all, nall, whys);
	for (int k = 0; k < 3; k++) {
		kt_buf one = {0}, onewhy = {0}, many = {0};
		seeds_of(dirs, 3, shapes[k][0], shapes[k][1], &one, &onewhy);
		format_seeds(all[k], nall[k], &many);
		CHECK(nall[k] > 0);
		CHECK_STR(kt_buf_str(&many), kt_buf_str(&one));
		CHECK_STR(kt_buf_str(&whys[k]), kt_buf_str(&onewhy));
		free(all[k]);
		kt_buf_free(&whys[k]);
		kt_buf_free(&one);
		kt_buf_free(&onewhy);
		kt_buf_free(&many);
	}

	kt_tmpl_free(other);
	kt_buf_free(&other_src);
	kt_buf_free(&diags);
	kt_buf_free(&got);
	kt_buf_free(&why);
}

/* Rewrites the date of the record key in cache directory dir (not a key field: it stays whole). */
static void set_date(const char *dir, const char *key, const char *date)
{
	char path[600];
	snprintf(path, sizeof path, "%s/v%d/%.2s/%s.json", dir, KT_KEY_FORMAT, key, key);
	kt_buf doc_text = {0};
	kt_err err = {0};
	CHECK_INT(kt_read_file(path, &doc_text, &err), 0);
	cJSON *doc = cJSON_Parse(kt_buf_str(&doc_text));
	CHECK(doc != NULL && cJSON_ReplaceItemInObject(doc, "date", cJSON_CreateString(date)));
	char *out = cJSON_Print(doc);
	CHECK_INT(kt_write_atomic(path, out, strlen(out), &err), 0);
	free(out);
	cJSON_Delete(doc);
	kt_buf_free(&doc_text);
}

/* The problem tuned from other versions of the template (other source bytes, the same problem):
 * its chosen configuration seeds the search at distance 0.5, read as the template reads it now;
 * and where the shape cannot be tuned, the latest such record that the template can still take
 * stands in (kt_transfer_other_version). */
static void test_other_version(const char *tmp)
{
	char dir[400];
	snprintf(dir, sizeof dir, "%s/versions", tmp);
	const char *const dirs[1] = {dir};
	/* v1: a comment more.  v2: VEC not declared yet (its record takes VEC's default, 2).  v3: a
	 * parameter this template does not declare (its record cannot stand in). */
	kt_tmpl *v1 = version_of("// @kt kernel", "// an earlier version\n// @kt kernel", NULL, NULL);
	kt_tmpl *v2 = version_of("// @kt param     VEC in 1, 2, 4 default 2\n", "", "BLOCK * VEC", "BLOCK * 2");
	kt_tmpl *v3 = version_of("// @kt param     VEC", "// @kt param     EXTRA in 0, 1 default 0\n// @kt param     VEC",
				 NULL, NULL);
	if (!v1 || !v2 || !v3)
		return;
	kt_cache *c = open_dir(dir);
	put(c, v1, &h200, &tc13, 4, 1536,
	    (const ev[]){{"BLOCK=32,VEC=2", KT_OK, 1.0, 0}, {"BLOCK=64,VEC=2", KT_OK, 1.1, 0}, {NULL, 0, 0, 0}});
	/* not the problem: another GPU */
	put(c, v1, &h100, &tc13, 4, 2048, (const ev[]){{"BLOCK=64,VEC=2", KT_OK, 1.0, 0}, {NULL, 0, 0, 0}});
	put(c, v3, &h200, &tc13, 4, 3072, (const ev[]){{"BLOCK=64,VEC=2,EXTRA=1", KT_OK, 1.0, 0}, {NULL, 0, 0, 0}});
	put(c, v2, &h200, &tc13, 4, 3072, (const ev[]){{"BLOCK=256", KT_OK, 1.0, 0}, {NULL, 0, 0, 0}});
	put(c, v3, &h200, &tc13, 4, 512, (const ev[]){{"BLOCK=128,VEC=4,EXTRA=1", KT_OK, 1.0, 0}, {NULL, 0, 0, 0}});
	close_dir(c);

	/* Seeds: v1's chosen one only (its runner-up is not taken); the H100's is another problem, and
	 * another version's at another shape seeds nothing. */
	kt_buf got = {0}, why = {0};
	seeds_of(dirs, 1, 4, 1536, &got, &why);
	CHECK_STR(kt_buf_str(&got), "BLOCK=32,VEC=2");
	CHECK_STR(kt_buf_str(&why), "NVIDIA H200 rows=4,hidden=1536 (distance 0.5, another version of the template)");
	/* At 3072 v3's record cannot be read as this template's; v2's can, with VEC's default. */
	kt_buf_reset(&got);
	kt_buf_reset(&why);
	seeds_of(dirs, 1, 4, 3072, &got, &why);
	CHECK_STR(kt_buf_str(&got), "BLOCK=256,VEC=2");

	/* Stand-ins: 1536 (v1), 3072 (v2; v3's, later or earlier, does not count), 512 (only v3's),
	 * 2048 (only the H100's). */
	int64_t shapes[4][2] = {{4, 1536}, {4, 3072}, {4, 512}, {4, 2048}};
	kt_target target;
	kt_target_from_id(&h200, &target);
	kt_problem p[4];
	uint16_t cfg[4][2] = {{0}};
	kt_other_version e[4];
	for (int i = 0; i < 4; i++) {
		p[i] = (kt_problem){.tmpl = t, .shape = shapes[i], .target = &target, .tc = &tc13};
		e[i] = (kt_other_version){.p = &p[i], .cfg = cfg[i], .found = 7};
	}
	CHECK_INT((int)kt_transfer_other_version(e, 4, dirs, 1), 2);
	CHECK(e[0].found && e[1].found && !e[2].found && !e[3].found);
	kt_buf_reset(&got);
	kt_tmpl_format_config(t, cfg[0], &got);
	kt_buf_putc(&got, ' ');
	kt_tmpl_format_config(t, cfg[1], &got);
	CHECK_STR(kt_buf_str(&got), "BLOCK=32,VEC=2 BLOCK=256,VEC=2");
	CHECK(kt_key_is_hex(e[0].key) && strlen(e[0].date) == 20);

	/* Of two versions at one problem the later stands in: by date, then by key. */
	c = open_dir(dir);
	put(c, v3, &h200, &tc13, 4, 1536, (const ev[]){{"BLOCK=128,VEC=1,EXTRA=0", KT_OK, 1.0, 0}, {NULL, 0, 0, 0}});
	put(c, v2, &h200, &tc13, 4, 1536, (const ev[]){{"BLOCK=128", KT_OK, 1.0, 0}, {NULL, 0, 0, 0}});
	close_dir(c);
	char v1key[KT_KEY_HEX], v2key[KT_KEY_HEX];
	snprintf(v1key, sizeof v1key, "%s", e[0].key);
	set_date(dir, v1key, "2026-01-01T00:00:00Z");
	CHECK_INT((int)kt_transfer_other_version(e, 1, dirs, 1), 1);
	snprintf(v2key, sizeof v2key, "%s", e[0].key);
	CHECK(strcmp(v2key, v1key) != 0);
	kt_buf_reset(&got);
	kt_tmpl_format_config(t, cfg[0], &got);
	CHECK_STR(kt_buf_str(&got), "BLOCK=128,VEC=2");
	set_date(dir, v2key, "2025-01-01T00:00:00Z");
	CHECK_INT((int)kt_transfer_other_version(e, 1, dirs, 1), 1);
	CHECK_STR(e[0].key, v1key);
	CHECK_STR(e[0].date, "2026-01-01T00:00:00Z");
	/* In one second, the larger key. */
	set_date(dir, v2key, "2026-01-01T00:00:00Z");
	CHECK_INT((int)kt_transfer_other_version(e, 1, dirs, 1), 1);
	CHECK_STR(e[0].key, strcmp(v1key, v2key) > 0 ? v1key : v2key);

	kt_tmpl_free(v1);
	kt_tmpl_free(v2);
	kt_tmpl_free(v3);
	kt_buf_free(&got);
	kt_buf_free(&why);
}

/* A hand-made source: configurations from specs (NULL-terminated), owned by the caller's free. */
static kt_seed_source source(double distance, const char *shape, const char *const *cfgs)
{
	kt_seed_source s = {.distance = distance};
	snprintf(s.gpu, sizeof s.gpu, "NVIDIA H200");
	snprintf(s.shape, sizeof s.shape, "%s", shape);
	size_t n = 0;
	while (cfgs[n])
		n++;
	s.cfgs = kt_xcalloc((n + 1) * (size_t)t->nparams, sizeof *s.cfgs);
	kt_err err = {0};
	for (s.n = 0; s.n < n; s.n++)
		CHECK_INT(kt_tmpl_parse_config(t, cfgs[s.n], s.cfgs + s.n * (size_t)t->nparams, &err), 0);
	return s;
}

static void pick(kt_seed_source *src, size_t nsrc, int64_t hidden, kt_buf *got)
{
	int64_t shape[2] = {4, hidden};
	kt_problem p = {.tmpl = t, .shape = shape, .target = NULL, .tc = NULL};
	uint16_t seeds[(KT_TRANSFER_SEEDS + 1) * 2];
	size_t n = kt_transfer_pick(&p, src, nsrc, seeds);
	CHECK(n <= KT_TRANSFER_SEEDS);
	kt_buf_reset(got);
	format_seeds(seeds, n, got);
}

static void test_pick(void)
{
	kt_buf got = {0};
	pick(NULL, 0, 1536, &got);
	CHECK_STR(kt_buf_str(&got), "");

	/* Given out of order; C and B tie (by shape: "a" before "b"); E is the fifth. */
	kt_seed_source src[5] = {
		source(3.0, "d", (const char *const[]){"BLOCK=32,VEC=1", "BLOCK=32,VEC=2", NULL}),
		source(1.0, "b", (const char *const[]){"BLOCK=64,VEC=1", "BLOCK=128,VEC=2", "BLOCK=64,VEC=2", NULL}),
		source(9.0, "e", (const char *const[]){"BLOCK=256,VEC=1", NULL}),
		source(1.0, "a", (const char *const[]){"BLOCK=128,VEC=2", "BLOCK=256,VEC=4", "BLOCK=128,VEC=1",
						      "BLOCK=32,VEC=4", NULL}),
		source(0.5, "c", (const char *const[]){"BLOCK=128,VEC=1", NULL}),
	};
	/* Ranked: c (0.5), a (1, "a"), b (1, "b"), d (3); e not used.
	 *   rank 0: B128V1, B128V2, B64V1, B32V1
	 *   rank 1: (c has none), B256V4 - infeasible at 1536, B128V2 again, B32V2
	 *   rank 2: B128V1 again, B64V2; a's fourth (B32V4) is past KT_TRANSFER_PER_RECORD. */
	pick(src, 5, 1536, &got);
	CHECK_STR(kt_buf_str(&got),
		  "BLOCK=128,VEC=1 BLOCK=128,VEC=2 BLOCK=64,VEC=1 BLOCK=32,VEC=1 BLOCK=32,VEC=2 BLOCK=64,VEC=2");
	CHECK(src[0].distance == 0.5 && !strcmp(src[1].shape, "a") && !strcmp(src[2].shape, "b") &&
	      src[4].distance == 9.0); /* sorted in place */
	/* At hidden=4096 B256V4 is feasible: it follows a's chosen one in rank 1. */
	pick(src, 5, 4096, &got);
	CHECK_STR(kt_buf_str(&got), "BLOCK=128,VEC=1 BLOCK=128,VEC=2 BLOCK=64,VEC=1 BLOCK=32,VEC=1 BLOCK=256,VEC=4 "
				    "BLOCK=32,VEC=2 BLOCK=64,VEC=2");
	for (int i = 0; i < 5; i++)
		free(src[i].cfgs);

	/* Four sources of three distinct configurations each: the first 8 in rank order. */
	kt_seed_source many[4] = {
		source(0, "p", (const char *const[]){"BLOCK=32,VEC=1", "BLOCK=32,VEC=2", "BLOCK=32,VEC=4", NULL}),
		source(1, "q", (const char *const[]){"BLOCK=64,VEC=1", "BLOCK=64,VEC=2", "BLOCK=64,VEC=4", NULL}),
		source(2, "r", (const char *const[]){"BLOCK=128,VEC=1", "BLOCK=128,VEC=2", "BLOCK=128,VEC=4", NULL}),
		source(3, "s", (const char *const[]){"BLOCK=256,VEC=1", "BLOCK=256,VEC=2", "BLOCK=32,VEC=2", NULL}),
	};
	pick(many, 4, 1536, &got);
	CHECK_STR(kt_buf_str(&got), "BLOCK=32,VEC=1 BLOCK=64,VEC=1 BLOCK=128,VEC=1 BLOCK=256,VEC=1 "
				    "BLOCK=32,VEC=2 BLOCK=64,VEC=2 BLOCK=128,VEC=2 BLOCK=256,VEC=2");
	for (int i = 0; i < 4; i++)
		free(many[i].cfgs);
	kt_buf_free(&got);
}

int main(void)
{
	char *tmp = kt_temp_dir(getenv("TMPDIR"), "kt-test-transfer", NULL);
	if (!tmp)
		return 2;
	kt_buf diags = {0};
	kt_err err = {0};
	t = kt_tmpl_parse_text("scale.cu.tmpl", text, sizeof text - 1, NULL, &diags, &err);
	if (!t) {
		fprintf(stderr, "%s%s\n", kt_buf_str(&diags), err.msg);
		return 1;
	}
	test_seeds(tmp);
	test_other_version(tmp);
	test_pick();
	kt_tmpl_free(t);
	kt_buf_free(&diags);
	if (check_failed == 0)
		kt_remove_tree(tmp);
	free(tmp);
	return check_done();
}
