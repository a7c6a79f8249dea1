/* report_fixture.h - a directory tier of records whose evaluations are known, for the tests of
 * kt report (unit/test_report.c, and report/report_fixture.c for the browser test).
 *
 *   main     rows=4096,hidden=4096: 20 evaluations, the default first; 15 pass, 5 fail (2
 *            compile-failed, one check-failed, faulted and timed-out each).  The time is set by
 *            BLOCK (x8, x4, x2, x1 for 32..256) and nudged by the rest, so BLOCK is the parameter
 *            that matters.  Default, naive and floor times are recorded; a compile message
 *            holds markup, which the page must escape.
 *   single   rows=1,hidden=64: one evaluation (the default), no floor; timed with a warm L2
 *            and CUDA-graph replays.
 *   allfail  rows=2,hidden=64: three evaluations, every one failed (made by editing a record:
 *            kt itself never stores such a one), and no "measure", as the old worker wrote.
 *   corrupt  rows=3,hidden=64: a truncated file where a record should be.
 *
 * Everything here is static: include it in one test source. */
#ifndef KT_REPORT_FIXTURE_H
#define KT_REPORT_FIXTURE_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "cache.h"
#include "json.h"
#include "key.h"
#include "record.h"
#include "tmpl.h"

enum { FX_MAIN, FX_SINGLE, FX_ALLFAIL, FX_CORRUPT, FX_N };
enum { FX_MAIN_EVALS = 20, FX_MAIN_OK = 15, FX_ALLFAIL_EVALS = 3 };

#define FX_KERNEL "fixture_norm"
#define FX_MARKUP "ptxas error: <b>bold</b> & \"quoted\""

static const char fx_template[] =
	"// @kt kernel    fixture_norm\n"
	"// @kt shape     rows hidden\n"
	"// @kt type      T in half, float default half\n"
	"// @kt param     BLOCK in 32, 64, 128, 256 default 128\n"
	"// @kt param     VEC in 1, 2, 4 default 1\n"
	"// @kt param     ALGO in tree, atomic default tree\n"
	"// @kt param     CACHE bool default false\n"
	"// @kt require   hidden % VEC == 0\n"
	"// @kt arg       out T[rows*hidden] out\n"
	"// @kt arg       x   T[rows*hidden] in\n"
	"// @kt arg       rows int = rows\n"
	"// @kt arg       hidden int = hidden\n"
	"// @kt grid      rows\n"
	"// @kt block     BLOCK\n"
	"// @kt bytes     4 * rows * hidden\n"
	"extern \"C\" __global__ void fixture_norm(T* out, const T* x, int rows, int hidden) { }\n";

static const char *const fx_shapes[FX_N] = {"rows=4096,hidden=4096", "rows=1,hidden=64", "rows=2,hidden=64",
					    "rows=3,hidden=64"};

static void fx_add(kt_tune_result *r, const uint16_t *cfg, kt_status st, double us, const char *msg)
{
	r->evals = kt_xrealloc(r->evals, (r->nevals + 1) * sizeof *r->evals);
	kt_eval *e = &r->evals[r->nevals++];
	memset(e, 0, sizeof *e);
	e->cfg = kt_xmalloc(4 * sizeof *e->cfg);
	memcpy(e->cfg, cfg, 4 * sizeof *e->cfg);
	e->status = st;
	e->median_us = st == KT_OK ? us : 0;
	e->spread_us = st == KT_OK ? us / 50 : 0;
	e->regs = e->smem_static = e->local_bytes = -1;
	e->msg = msg ? kt_xstrdup(msg) : NULL;
}

/* The main record's evaluations: the default (BLOCK=128, the rest first), then the next
 * configurations in a fixed order, failing at the positions listed. */
static void fx_main(kt_tune_result *r)
{
	static const double block_x[] = {8, 4, 2, 1}, vec_x[] = {1, 1.05, 1.1}, algo_x[] = {1, 1.02}, cache_x[] = {1, 0.98};
	static const struct {
		int at;
		kt_status st;
		const char *msg;
	} fails[] = {{3, KT_COMPILE_FAILED, FX_MARKUP}, {7, KT_COMPILE_FAILED, "ptxas: too many registers"},
		     {11, KT_CHECK_FAILED, "out[7]: 1.5 vs 1.25"}, {14, KT_FAULTED, "an illegal memory access"},
		     {17, KT_TIMED_OUT, NULL}};
	uint16_t c[4] = {2, 0, 0, 0};
	fx_add(r, c, KT_OK, 10 * block_x[2], NULL);
	for (int j = 0, f = 0; r->nevals < FX_MAIN_EVALS; j = (j + 7) % 48) {
		c[0] = (uint16_t)(j % 4), c[1] = (uint16_t)(j / 4 % 3), c[2] = (uint16_t)(j / 12 % 2), c[3] = (uint16_t)(j / 24);
		if (!memcmp(c, (uint16_t[]){2, 0, 0, 0}, sizeof c))
			continue;
		double us = 10 * block_x[c[0]] * vec_x[c[1]] * algo_x[c[2]] * cache_x[c[3]];
		if (f < 5 && fails[f].at == (int)r->nevals) {
			fx_add(r, c, fails[f].st, 0, fails[f].msg);
			f++;
		} else {
			fx_add(r, c, KT_OK, us, NULL);
		}
	}
	r->best = 0;
	for (size_t i = 1; i < r->nevals; i++)
		if (r->evals[i].status == KT_OK && r->evals[i].median_us < r->evals[r->best].median_us)
			r->best = (long)i;
	r->floor_us = 5.0;
	r->bw_gbs = 4000;
	r->default_us = r->evals[0].median_us;
	r->reference_us = 61.5;
}

/* n evaluations that pass, the default first and chosen. */
static void fx_small(kt_tune_result *r, size_t n)
{
	static const uint16_t cfgs[FX_ALLFAIL_EVALS][4] = {{2, 0, 0, 0}, {1, 0, 0, 0}, {0, 0, 0, 0}};
	for (size_t i = 0; i < n && i < FX_ALLFAIL_EVALS; i++)
		fx_add(r, cfgs[i], KT_OK, 3.0 + (double)i, NULL);
	r->best = 0;
}

/* Turns every evaluation of a record text into a compile failure. */
static char *fx_all_failed(const char *text)
{
	cJSON *doc = cJSON_Parse(text), *e;
	cJSON_ArrayForEach(e, cJSON_GetObjectItem(doc, "evaluated"))
	{
		cJSON_DeleteItemFromObject(e, "time_us");
		cJSON_DeleteItemFromObject(e, "spread_us");
		cJSON_ReplaceItemInObject(e, "status", cJSON_CreateString("compile-failed"));
		cJSON_AddStringToObject(e, "msg", "nvcc: error");
	}
	cJSON_DeleteItemFromObject(doc, "measure");
	char *out = kt_json_text(doc, 1);
	cJSON_Delete(doc);
	return out;
}

static int fx_store(const char *dir, const char *key, const char *text, size_t len, kt_err *err)
{
	char *path = kt_cache_record_path(dir, key), *sub = kt_path_dir(path);
	int rc = kt_mkdirs(sub, err);
	if (rc == 0)
		rc = kt_write_atomic(path, text, len, err);
	free(path);
	free(sub);
	return rc;
}

/* One record of the fixture into dir; its key into key. */
static int fx_write_one(const kt_tmpl *t, int which, const char *dir, char *key, kt_err *err)
{
	static const kt_gpu_id gpu = {"NVIDIA H200", 9, 0, 132, 52428800, 232448};
	int64_t shape[2];
	kt_key k = {0};
	kt_tune_result r = {.nparams = 4, .strategy = "bestfirst", .seed = 1, .budget = 24, .seconds = 2.5,
			    .driver = "13.0", .runtime = "13.0"};
	int rc = kt_tmpl_parse_shape(t, fx_shapes[which], shape, err);
	kt_target target = {.id = gpu};
	kt_toolchain tc = {NULL, "Cuda compilation tools, release 13.0, V13.0.88", "90", "-O3"};
	kt_problem p = {.tmpl = t, .shape = shape, .target = &target, .tc = &tc};
	if (which == FX_SINGLE) {
		p.measure.v[KT_MEASURE_L2] = KT_L2_WARM;
		p.measure.v[KT_MEASURE_LAUNCH] = KT_LAUNCH_GRAPH;
	}
	if (rc == 0)
		rc = kt_key_make(&p, &k, err);
	if (which == FX_MAIN)
		fx_main(&r);
	else
		fx_small(&r, which == FX_SINGLE ? 1 : FX_ALLFAIL_EVALS);
	char *text = rc == 0 ? kt_record_json(&k, &p, &r, NULL, err) : NULL;
	if (text && which == FX_ALLFAIL) {
		char *edited = fx_all_failed(text);
		free(text);
		text = edited;
	}
	size_t len = text ? strlen(text) : 0;
	if (which == FX_CORRUPT)
		len /= 2;
	if (text)
		rc = fx_store(dir, k.hex, text, len, err);
	else
		rc = -1;
	snprintf(key, KT_KEY_HEX, "%s", k.hex);
	free(text);
	kt_tune_result_free(&r);
	kt_key_free(&k);
	return rc;
}

/* Writes the fixture's records into the directory tier dir; their keys into keys. */
static int fx_write(const char *dir, char keys[FX_N][KT_KEY_HEX], kt_err *err)
{
	kt_buf diags = {0};
	kt_tmpl *t = kt_tmpl_parse_text("fixture_norm.cu.tmpl", fx_template, sizeof fx_template - 1, NULL, &diags, err);
	kt_buf_free(&diags);
	int rc = t ? 0 : -1;
	for (int i = 0; i < FX_N && rc == 0; i++)
		rc = fx_write_one(t, i, dir, keys[i], err);
	kt_tmpl_free(t);
	return rc;
}

#endif
