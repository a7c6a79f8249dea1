/* test_record.c - records: a round trip keeps the configuration; every kind of bad record is
 * refused with a reason (truncated, corrupt, another format, tampered fields, another key,
 * values outside the declared space, a configuration that breaks a constraint). */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "check.h"
#include "json.h"
#include "record.h"
#include "tune.h"
#include "space.h"

static const char src[] =
	"// @kt kernel    scale\n"
	"// @kt shape     n\n"
	"// @kt param     BLOCK in 64, 128, 256 default 128\n"
	"// @kt param     VEC in 1, 2, 4 default 2\n"
	"// @kt param     ALGO in plain, unrolled default plain\n"
	"// @kt param     FAST bool default false\n"
	"// @kt require   n % (BLOCK * VEC) == 0\n"
	"// @kt arg       out float[n] out\n"
	"// @kt arg       x   float[n] in\n"
	"// @kt arg       n   int = n\n"
	"// @kt grid      cdiv(n, BLOCK * VEC)\n"
	"// @kt block     BLOCK\n"
	"// @kt bytes     8 * n\n"
	"extern \"C\" __global__ void scale(float* out, const float* x, int n) { }\n";

static kt_tmpl *t;
static int64_t shape[1] = {1536};
static const kt_gpu_id gpu = {"NVIDIA H200", 9, 0, 132, 52428800, 232448};
static kt_target target_h200 = {.id = {"NVIDIA H200", 9, 0, 132, 52428800, 232448}};
static kt_toolchain tc_none;
static kt_problem prob = {.tmpl = NULL, .shape = shape, .target = &target_h200, .tc = &tc_none}; /* tmpl set in main */

static void add_eval(kt_tune_result *r, const uint16_t *cfg, kt_status st, double us, const char *msg)
{
	r->evals = kt_xrealloc(r->evals, (r->nevals + 1) * sizeof *r->evals);
	kt_eval *e = &r->evals[r->nevals++];
	memset(e, 0, sizeof *e);
	e->cfg = kt_xmalloc((size_t)t->nparams * sizeof *e->cfg);
	memcpy(e->cfg, cfg, (size_t)t->nparams * sizeof *e->cfg);
	e->status = st;
	e->median_us = us;
	e->spread_us = us / 100;
	e->regs = st == KT_OK ? 32 : -1;
	e->smem_static = e->local_bytes = -1;
	e->msg = msg ? kt_xstrdup(msg) : NULL;
}

static void make_result(kt_tune_result *r)
{
	memset(r, 0, sizeof *r);
	r->nparams = t->nparams;
	add_eval(r, (uint16_t[]){1, 1, 0, 0}, KT_OK, 5.0, NULL);
	add_eval(r, (uint16_t[]){1, 2, 1, 1}, KT_OK, 3.25, NULL);
	add_eval(r, (uint16_t[]){0, 2, 1, 0}, KT_CHECK_FAILED, 0, "out[7]: 1.5 vs 1.25");
	add_eval(r, (uint16_t[]){0, 0, 0, 0}, KT_TIMED_OUT, 0, NULL);
	r->best = 1;
	r->floor_us = 2.5;
	r->bw_gbs = 4000;
	r->default_us = 5.0;
	r->reference_us = 12.5;
	snprintf(r->strategy, sizeof r->strategy, "exhaustive");
	r->seed = 18446744073709551615ULL;
	r->budget = 100;
	r->seconds = 1.5;
	snprintf(r->driver, sizeof r->driver, "13.0");
	snprintf(r->runtime, sizeof r->runtime, "13.0");
}

static void make_key(kt_key *k, const char *flags)
{
	kt_target target = {.id = gpu};
	kt_toolchain tc = {NULL, "Cuda compilation tools, release 13.0, V13.0.88", "90", flags};
	kt_problem p = {.tmpl = t, .shape = shape, .target = &target, .tc = &tc};
	kt_err err = {0};
	CHECK(kt_key_make(&p, k, &err) == 0);
}

/* Reads and matches text against k; returns 0 or -1 and leaves the reason in err. */
static int read_match(const char *text, const kt_key *k, uint16_t *cfg, kt_err *err)
{
	kt_record r;
	int rc = kt_record_read(text, strlen(text), &r, err);
	if (rc == 0)
		rc = kt_record_match(&r, k, t, shape, cfg, err);
	kt_record_free(&r);
	return rc;
}

static void expect_refused(const char *what, const char *text, const kt_key *k, const char *why)
{
	kt_err err = {0};
	uint16_t cfg[8];
	int rc = read_match(text, k, cfg, &err);
	CHECK(rc == -1);
	if (rc == 0 || !strstr(err.msg, why)) {
		check_failed++;
		fprintf(stderr, "%s: got '%s', want a reason containing '%s'\n", what, err.msg, why);
	}
}

/* The record text with doc changed by edit. */
static char *edited(const char *text, void (*edit)(cJSON *doc))
{
	cJSON *doc = cJSON_Parse(text);
	edit(doc);
	char *out = cJSON_Print(doc);
	cJSON_Delete(doc);
	return out;
}

static void set_format2(cJSON *d) { cJSON_SetNumberValue(cJSON_GetObjectItem(d, "format"), 2); }
static void set_block96(cJSON *d) { cJSON_SetNumberValue(cJSON_GetObjectItem(cJSON_GetObjectItem(d, "config"), "BLOCK"), 96); }
static void set_block256(cJSON *d) { cJSON_SetNumberValue(cJSON_GetObjectItem(cJSON_GetObjectItem(d, "config"), "BLOCK"), 256); }
static void set_algo_fancy(cJSON *d)
{
	cJSON *c = cJSON_GetObjectItem(d, "config");
	cJSON_ReplaceItemInObject(c, "ALGO", cJSON_CreateString("fancy"));
}
static void drop_vec(cJSON *d) { cJSON_DeleteItemFromObject(cJSON_GetObjectItem(d, "config"), "VEC"); }
static void add_extra(cJSON *d) { cJSON_AddNumberToObject(cJSON_GetObjectItem(d, "config"), "UNROLL", 4); }
static void fast_as_number(cJSON *d) { cJSON_ReplaceItemInObject(cJSON_GetObjectItem(d, "config"), "FAST", cJSON_CreateNumber(1)); }
static void tamper_sms(cJSON *d) { cJSON_ReplaceItemInObject(cJSON_GetObjectItem(d, "fields"), "gpu.sms", cJSON_CreateString("144")); }
static void code_in_config(cJSON *d) { cJSON_ReplaceItemInObject(cJSON_GetObjectItem(d, "config"), "ALGO", cJSON_CreateString("plain); system(\"x\"")); }

static void test_round_trip(void)
{
	kt_tune_result r;
	make_result(&r);
	kt_key k = {0};
	make_key(&k, "-O3 --use_fast_math");
	kt_err err = {0};
	char *text = kt_record_json(&k, &prob, &r, NULL, &err);
	CHECK(text != NULL);
	uint16_t cfg[8] = {0};
	CHECK(read_match(text, &k, cfg, &err) == 0);
	CHECK_INT(cfg[0], 1);
	CHECK_INT(cfg[1], 2);
	CHECK_INT(cfg[2], 1);
	CHECK_INT(cfg[3], 1);

	kt_record rec;
	CHECK(kt_record_read(text, strlen(text), &rec, &err) == 0);
	CHECK_STR(rec.key, k.hex);
	CHECK_STR(rec.kernel, "scale");
	CHECK_STR(rec.shape, "n=1536");
	CHECK_STR(rec.gpu.name, "NVIDIA H200");
	CHECK_INT(rec.gpu.sms, 132);
	CHECK_INT(rec.gpu.l2_bytes, 52428800);
	CHECK_INT(rec.gpu.smem_optin, 232448);
	CHECK_INT(rec.gpu.cc_major, 9);
	CHECK(rec.time_us == 3.25);
	CHECK_STR(kt_buf_str(&rec.fields), kt_buf_str(&k.fields));
	kt_buf conf = {0};
	kt_record_config_text(&rec, &conf);
	CHECK_STR(kt_buf_str(&conf), "BLOCK=128,VEC=4,ALGO=unrolled,FAST=true");
	kt_buf_free(&conf);
	/* What the issue asks a record to hold. */
	const cJSON *d = rec.doc;
	CHECK(cJSON_GetArraySize(cJSON_GetObjectItem(d, "evaluated")) == 4);
	CHECK_STR(cJSON_GetObjectItem(cJSON_GetArrayItem(cJSON_GetObjectItem(d, "evaluated"), 2), "status")->valuestring,
		  "check-failed");
	CHECK_STR(cJSON_GetObjectItem(cJSON_GetArrayItem(cJSON_GetObjectItem(d, "evaluated"), 3), "status")->valuestring,
		  "timed-out");
	CHECK_STR(cJSON_GetObjectItem(cJSON_GetObjectItem(d, "search"), "strategy")->valuestring, "exhaustive");
	CHECK_STR(cJSON_GetObjectItem(cJSON_GetObjectItem(d, "search"), "seed")->valuestring, "18446744073709551615");
	CHECK(cJSON_GetObjectItem(cJSON_GetObjectItem(d, "roofline"), "floor_us")->valuedouble == 2.5);
	CHECK(cJSON_GetObjectItem(cJSON_GetObjectItem(d, "roofline"), "bytes")->valuedouble == 8 * 1536);
	CHECK(cJSON_GetObjectItem(d, "spread_us")->valuedouble == 0.0325);
	CHECK(cJSON_GetObjectItem(d, "default_us")->valuedouble == 5.0);
	CHECK(cJSON_GetObjectItem(d, "reference_us")->valuedouble == 12.5);
	CHECK_STR(cJSON_GetObjectItem(d, "tool")->valuestring, "kt " KT_VERSION);
	CHECK_STR(cJSON_GetObjectItem(d, "driver")->valuestring, "13.0");
	CHECK(strlen(cJSON_GetObjectItem(d, "date")->valuestring) == 20);
	/* How the times were taken: every setting, the defaults too. */
	CHECK_STR(cJSON_GetObjectItem(cJSON_GetObjectItem(d, "measure"), "l2")->valuestring, "cold");
	CHECK_STR(cJSON_GetObjectItem(cJSON_GetObjectItem(d, "measure"), "launch")->valuestring, "stream");
	kt_measure m;
	kt_record_measure(&rec, &m);
	CHECK(m.v[KT_MEASURE_L2] == KT_L2_COLD && m.v[KT_MEASURE_LAUNCH] == KT_LAUNCH_STREAM);
	kt_record_free(&rec);

	/* Every way of being wrong is refused, with a reason. */
	char *bad;
	size_t len = strlen(text);
	bad = kt_xstrdup(text);
	bad[len / 2] = '\0';
	expect_refused("truncated", bad, &k, "not valid JSON");
	free(bad);
	expect_refused("empty", "", &k, "not valid JSON");
	expect_refused("garbage", "<html>502 Bad Gateway</html>", &k, "not valid JSON");
	expect_refused("an array", "[1, 2]", &k, "not a JSON object");
	struct {
		const char *what;
		void (*edit)(cJSON *);
		const char *why;
	} cases[] = {
		{"another format", set_format2, "record format 2"},
		{"an undeclared value", set_block96, "BLOCK=96 is not a declared value"},
		{"a constraint broken at the shape", set_block256, "violates a constraint"},
		{"an undeclared choice", set_algo_fancy, "ALGO=\"fancy\" is not a declared value"},
		{"a missing parameter", drop_vec, "no value for VEC"},
		{"an extra parameter", add_extra, "sets UNROLL, which the template does not declare"},
		{"a bool as a number", fast_as_number, "FAST=1 is not a declared value"},
		{"a tampered field", tamper_sms, "hash to"},
		{"code in a value", code_in_config, "is not a declared value"},
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		bad = edited(text, cases[i].edit);
		expect_refused(cases[i].what, bad, &k, cases[i].why);
		free(bad);
	}
	/* A whole record of another key (other flags) is never a hit for this one. */
	kt_key other = {0};
	make_key(&other, "-O2");
	expect_refused("another key", text, &other, "is for key");
	kt_key_free(&other);
	free(text);

	/* Nothing passed: nothing to store. */
	r.best = -1;
	CHECK(kt_record_json(&k, &prob, &r, NULL, &err) == NULL);
	CHECK(strstr(err.msg, "nothing to store") != NULL);
	kt_key_free(&k);
	kt_tune_result_free(&r);
}

/* A record whose fields differ from the expected ones (same key text forged into another key's
 * file) names the first field that differs. */
static void test_field_mismatch(void)
{
	kt_tune_result r;
	make_result(&r);
	kt_key a = {0}, b = {0};
	make_key(&a, "-O3");
	make_key(&b, "-O2");
	kt_err err = {0};
	char *text = kt_record_json(&a, &prob, &r, NULL, &err);
	kt_record rec;
	CHECK(kt_record_read(text, strlen(text), &rec, &err) == 0);
	/* Pretend the lookup expected b's fields under a's key. */
	snprintf(b.hex, sizeof b.hex, "%s", a.hex);
	uint16_t cfg[8];
	CHECK(kt_record_match(&rec, &b, t, shape, cfg, &err) == -1);
	CHECK(strstr(err.msg, "field flags is '-O3' in the record, '-O2' expected") != NULL);
	/* A field the record lacks (the template gained a header since). */
	kt_key c = {0};
	snprintf(c.hex, sizeof c.hex, "%s", a.hex);
	const char *after = strstr(kt_buf_str(&a.fields), "\nparam.") + 1;
	kt_buf_add(&c.fields, a.fields.data, (size_t)(after - a.fields.data));
	kt_buf_puts(&c.fields, "include.0=x.cuh xxh128:00\n");
	kt_buf_puts(&c.fields, after);
	CHECK(kt_record_match(&rec, &c, t, shape, cfg, &err) == -1);
	CHECK(strstr(err.msg, "field include.0 is missing from the record") != NULL);
	kt_key_free(&c);
	kt_record_free(&rec);
	free(text);
	kt_key_free(&a);
	kt_key_free(&b);
	kt_tune_result_free(&r);
}

static void test_gpu_doc(void)
{
	char *text = kt_record_gpu_json(&gpu);
	kt_gpu_id g;
	kt_err err = {0};
	CHECK(kt_record_gpu_read(text, strlen(text), "NVIDIA H200", &g, &err) == 0);
	CHECK(memcmp(&g, &gpu, sizeof g) == 0);
	CHECK(kt_record_gpu_read(text, strlen(text), "NVIDIA B200", &g, &err) == -1);
	CHECK(strstr(err.msg, "not the identity of GPU 'NVIDIA B200'") != NULL);
	CHECK(kt_record_gpu_read(text, strlen(text) / 2, "NVIDIA H200", &g, &err) == -1);
	CHECK(kt_record_gpu_read("{\"format\": 1}", 13, "NVIDIA H200", &g, &err) == -1);
	free(text);
}

/* Attack: thousands of damaged copies of a good record (bytes flipped, deleted, duplicated,
 * truncated).  None may crash, and whatever is accepted must be a declared, feasible
 * configuration: a damaged record is never a wrong launch. */
static void test_mutations(void)
{
	kt_tune_result r;
	make_result(&r);
	kt_key k = {0};
	make_key(&k, "-O3");
	kt_err err = {0};
	char *good = kt_record_json(&k, &prob, &r, NULL, &err);
	size_t len = strlen(good);
	static const char alphabet[] = "{}[]\":,0123456789.-eE truefalsn\\\n\x01\xff";
	unsigned seed = 12345;
	long accepted = 0;
	char *buf = kt_xmalloc(2 * len + 2);
	for (int round = 0; round < 4000; round++) {
		memcpy(buf, good, len + 1);
		size_t n = len;
		for (int edits = 1 + (int)((seed = seed * 1103515245u + 12345u) >> 16) % 4; edits > 0 && n > 0; edits--) {
			seed = seed * 1103515245u + 12345u;
			size_t at = (seed >> 8) % n;
			switch ((seed >> 4) % 4) {
			case 0: /* replace a byte */
				buf[at] = alphabet[(seed >> 12) % (sizeof alphabet - 1)];
				break;
			case 1: /* delete a byte */
				memmove(buf + at, buf + at + 1, n - at);
				n--;
				break;
			case 2: /* duplicate a run */
				if (n + 8 < 2 * len) {
					memmove(buf + at + 8, buf + at, n - at + 1);
					n += 8;
				}
				break;
			default: /* truncate */
				n = at;
				buf[n] = '\0';
			}
		}
		uint16_t cfg[8];
		kt_record rec;
		if (kt_record_read(buf, n, &rec, &err) == 0 && kt_record_match(&rec, &k, t, shape, cfg, &err) == 0) {
			accepted++;
			for (int i = 0; i < t->nparams; i++)
				CHECK(cfg[i] < t->params[i].nvals);
			CHECK(kt_space_feasible(t, shape, cfg));
		}
		kt_record_free(&rec);
	}
	/* Edits inside numbers or unchecked values keep some records acceptable; most are refused. */
	CHECK(accepted < 4000);
	free(buf);
	free(good);
	kt_key_free(&k);
	kt_tune_result_free(&r);
}

/* The stored evaluations come back as the result that was stored: statuses, times, the chosen
 * entry, the search; so the robust fallback computed from them is the same. */
static void test_result(void)
{
	kt_tune_result r, back;
	make_result(&r);
	kt_key k = {0};
	make_key(&k, "-O3");
	kt_err err = {0};
	char *text = kt_record_json(&k, &prob, &r, NULL, &err);
	kt_record rec;
	uint16_t cfg[8] = {0};
	CHECK(text && kt_record_read(text, strlen(text), &rec, &err) == 0);
	CHECK(kt_record_match(&rec, &k, t, shape, cfg, &err) == 0);
	kt_record_result(&rec, t, &back);
	CHECK_INT((long)back.nevals, (long)r.nevals);
	CHECK_INT(back.best, r.best);
	for (size_t i = 0; i < back.nevals && i < r.nevals; i++) {
		CHECK(!memcmp(back.evals[i].cfg, r.evals[i].cfg, (size_t)t->nparams * sizeof *cfg));
		CHECK_INT(back.evals[i].status, r.evals[i].status);
		CHECK(back.evals[i].median_us == r.evals[i].median_us);
		CHECK_INT(back.evals[i].regs, r.evals[i].regs);
	}
	CHECK_STR(back.evals[2].msg, "out[7]: 1.5 vs 1.25");
	CHECK_STR(back.strategy, "exhaustive");
	CHECK(back.seed == r.seed && back.budget == 100 && back.floor_us == 2.5);
	CHECK(back.default_us == 5.0 && back.reference_us == 12.5);
	uint16_t a[8] = {0}, b[8] = {0};
	double wa = 0, wb = 0;
	const kt_tune_result *ra = &r, *rb = &back;
	CHECK(kt_tune_robust(t, &ra, 1, a, &wa) == 0 && kt_tune_robust(t, &rb, 1, b, &wb) == 0);
	CHECK(!memcmp(a, b, (size_t)t->nparams * sizeof *a) && wa == wb);
	kt_record_free(&rec);
	/* An entry that the template cannot express (a round's extended value) is skipped. */
	cJSON *doc = cJSON_Parse(text);
	cJSON *e0 = cJSON_GetArrayItem(cJSON_GetObjectItem(doc, "evaluated"), 0);
	cJSON_SetNumberValue(cJSON_GetObjectItem(cJSON_GetObjectItem(e0, "config"), "BLOCK"), 4096);
	char *edit = cJSON_Print(doc);
	CHECK(kt_record_read(edit, strlen(edit), &rec, &err) == 0);
	kt_tune_result_free(&back);
	kt_record_result(&rec, t, &back);
	CHECK_INT((long)back.nevals, (long)r.nevals - 1);
	CHECK_INT(back.best, r.best - 1);
	kt_record_free(&rec);
	kt_tune_result_free(&back);
	free(edit);
	/* The history is optional: kept as JSON, stage 1 before stage 2, the record checked as ever. */
	kt_record_history h = {"{\"provenance\": \"kt: verified on X\"}", "{\"best_round\": 0, \"rounds\": []}"};
	char *with = kt_record_json(&k, &prob, &r, &h, &err);
	CHECK(with && kt_record_read(with, strlen(with), &rec, &err) == 0);
	CHECK(with && kt_record_match(&rec, &k, t, shape, cfg, &err) == 0);
	CHECK(cJSON_IsObject(cJSON_GetObjectItem(rec.doc, "rounds")));
	CHECK(cJSON_IsObject(cJSON_GetObjectItem(rec.doc, "refactor")));
	CHECK(with && strstr(with, "\"refactor\"") && strstr(with, "\"refactor\"") < strstr(with, "\"rounds\""));
	kt_record_free(&rec);
	free(with);
	h.refactor = NULL;
	with = kt_record_json(&k, &prob, &r, &h, &err);
	CHECK(with && !strstr(with, "\"refactor\"") && strstr(with, "\"rounds\""));
	free(with);
	h.rounds = "{not json";
	CHECK(kt_record_json(&k, &prob, &r, &h, &err) == NULL);
	CHECK(strstr(err.msg, "rounds history is not JSON") != NULL);
	h = (kt_record_history){"[1,", NULL};
	CHECK(kt_record_json(&k, &prob, &r, &h, &err) == NULL);
	CHECK(strstr(err.msg, "refactor history is not JSON") != NULL);
	cJSON_Delete(doc);
	free(text);
	kt_key_free(&k);
	kt_tune_result_free(&r);
}

/* A record says how its times were taken, and its key says so when that is not the default; one
 * of the old worker (no "measure") reads as measured the old way. */
static void test_measure(void)
{
	kt_tune_result r;
	make_result(&r);
	kt_problem p = prob;
	p.measure.v[KT_MEASURE_L2] = KT_L2_WARM;
	p.measure.v[KT_MEASURE_LAUNCH] = KT_LAUNCH_GRAPH;
	kt_key k = {0};
	kt_err err = {0};
	CHECK(kt_key_make(&p, &k, &err) == 0);
	CHECK(strstr(kt_buf_str(&k.fields), "\nmeasure.l2=warm\nmeasure.launch=graph\n") != NULL);
	char *text = kt_record_json(&k, &p, &r, NULL, &err);
	kt_record rec;
	CHECK(text && kt_record_read(text, strlen(text), &rec, &err) == 0);
	kt_measure m;
	kt_record_measure(&rec, &m);
	CHECK(m.v[KT_MEASURE_L2] == KT_L2_WARM && m.v[KT_MEASURE_LAUNCH] == KT_LAUNCH_GRAPH);
	CHECK_STR(kt_json_str(cJSON_GetObjectItem(rec.doc, "fields"), "measure.l2"), "warm");
	cJSON_DeleteItemFromObject(rec.doc, "measure"); /* as the old worker wrote it */
	kt_record_measure(&rec, &m);
	CHECK(m.v[KT_MEASURE_L2] == KT_MEASURE_UNSET && m.v[KT_MEASURE_LAUNCH] == KT_MEASURE_UNSET);
	kt_buf how = {0};
	kt_measure_describe(&m, &how);
	CHECK_STR(kt_buf_str(&how), "L2 as the old worker left it, stream launches");
	kt_buf_free(&how);
	kt_record_free(&rec);
	free(text);
	kt_key_free(&k);
	kt_tune_result_free(&r);
}

/* The rivals of the final choice are an optional field: written when there were several, read
 * back at their evaluations; a record without them (older ones) reads as before. */
static void test_retimed(void)
{
	kt_tune_result r, back;
	make_result(&r);
	kt_key k = {0};
	make_key(&k, "-O3");
	kt_err err = {0};
	kt_record rec;
	char *text = kt_record_json(&k, &prob, &r, NULL, &err);
	CHECK(text && !strstr(text, "\"retimed\""));
	CHECK(text && kt_record_read(text, strlen(text), &rec, &err) == 0);
	kt_record_result(&rec, t, &back);
	CHECK_INT((long)back.nretimed, 0);
	kt_record_free(&rec);
	kt_tune_result_free(&back);
	free(text);

	r.retimed = kt_xcalloc(2, sizeof *r.retimed);
	r.retimed[0] = (kt_retimed){.eval = 0, .us = 3.3, .ci_us = 0.02, .tie = 1, .paired = 1, .gap_ci_us = 0.06};
	r.retimed[1] = (kt_retimed){.eval = 1, .us = 3.25, .ci_us = 0.01, .tie = 1};
	r.nretimed = 2;
	text = kt_record_json(&k, &prob, &r, NULL, &err);
	CHECK(text && strstr(text, "\"retimed\"") && strstr(text, "\"ci_us\"") && strstr(text, "\"tie\""));
	CHECK(text && kt_record_read(text, strlen(text), &rec, &err) == 0);
	kt_record_result(&rec, t, &back);
	CHECK_INT((long)back.nretimed, 2);
	for (size_t i = 0; i < back.nretimed && i < 2; i++) {
		CHECK_INT(back.retimed[i].eval, r.retimed[i].eval);
		CHECK(back.retimed[i].us == r.retimed[i].us && back.retimed[i].ci_us == r.retimed[i].ci_us);
		CHECK_INT(back.retimed[i].tie, 1);
		/* the interval of the difference, where the blocks paired them (not for the second) */
		CHECK_INT(back.retimed[i].paired, r.retimed[i].paired);
		CHECK(back.retimed[i].gap_ci_us == r.retimed[i].gap_ci_us);
	}
	/* The choice's time is its re-timed one, 3.25 here as in the sweep: no sweep_us. */
	CHECK(rec.time_us == 3.25);
	CHECK(text && !strstr(text, "\"sweep_us\""));
	kt_record_free(&rec);
	kt_tune_result_free(&back);
	free(text);

	/* Re-timed under load at 3.5: the record's time, and the sweep's 3.25 kept beside it. */
	r.retimed[1].us = 3.5;
	text = kt_record_json(&k, &prob, &r, NULL, &err);
	CHECK(text && kt_record_read(text, strlen(text), &rec, &err) == 0);
	CHECK(rec.time_us == 3.5);
	const char *sweep = text ? strstr(text, "\"sweep_us\":") : NULL;
	CHECK(sweep && strtod(sweep + 11, NULL) == 3.25);
	kt_record_free(&rec);
	free(text);
	kt_key_free(&k);
	kt_tune_result_free(&r);
}

/* A head read: the same record but its evaluations, which are skipped unparsed; strings with
 * brackets and escaped quotes are skipped as strings; a record cut short is refused. */
static void test_head(void)
{
	kt_tune_result r, back;
	make_result(&r);
	r.retimed = kt_xcalloc(1, sizeof *r.retimed);
	r.retimed[0] = (kt_retimed){.eval = 0, .us = 3.3, .ci_us = 0.02, .tie = 1};
	r.nretimed = 1;
	kt_key k = {0};
	make_key(&k, "-O3");
	kt_err err = {0};
	char *text = kt_record_json(&k, &prob, &r, NULL, &err);
	CHECK(text && strstr(text, "\"evaluated\"") && strstr(text, "\"retimed\""));
	if (!text)
		return;
	kt_buf odd = {0};
	kt_buf_printf(&odd, "{\"note\": \"a \\\"}], {[ b\", \"dir\": \"c:\\\\\", \"n\": [1, {\"x\": \"]\"}], %s",
		      strchr(text, '{') + 1);
	kt_record full, head;
	CHECK(kt_record_read(odd.data, odd.len, &full, &err) == 0);
	CHECK(kt_record_read_head(odd.data, odd.len, &head, &err) == 0);
	CHECK_STR(head.key, full.key);
	CHECK_STR(kt_buf_str(&head.fields), kt_buf_str(&full.fields));
	CHECK_STR(head.gpu.name, "NVIDIA H200");
	CHECK_STR(head.date, full.date);
	CHECK(head.time_us == full.time_us);
	CHECK_STR(kt_json_str(head.doc, "note"), "a \"}], {[ b");
	CHECK_STR(kt_json_str(head.doc, "dir"), "c:\\"); /* an escaped backslash, then the closing quote */
	CHECK(cJSON_GetArraySize(cJSON_GetObjectItem(head.doc, "n")) == 2);
	CHECK(cJSON_GetObjectItem(head.doc, "config") && !cJSON_GetObjectItem(head.doc, "evaluated") &&
	      !cJSON_GetObjectItem(head.doc, "retimed"));
	kt_record_result(&head, t, &back);
	CHECK_INT((long)back.nevals, 0);
	kt_tune_result_free(&back);
	kt_record_free(&full);
	kt_record_free(&head);
	/* Cut inside the evaluations, or after them: not a record. */
	const char *ev = strstr(odd.data, "\"evaluated\"");
	CHECK(kt_record_read_head(odd.data, (size_t)(ev - odd.data) + 40, &head, &err) == -1);
	CHECK_STR(err.msg, "not valid JSON (truncated or corrupt)");
	kt_record_free(&head);
	CHECK(kt_record_read_head(odd.data, odd.len - 2, &head, &err) == -1);
	kt_record_free(&head);
	CHECK(kt_record_read_head("[1, 2]", 6, &head, &err) == -1);
	kt_record_free(&head);
	CHECK(kt_record_read_head("{\"a\": 1,}", 9, &head, &err) == -1);
	kt_record_free(&head);
	kt_buf_free(&odd);
	free(text);
	kt_key_free(&k);
	kt_tune_result_free(&r);
}

int main(void)
{
	kt_buf diags = {0};
	kt_err err = {0};
	t = kt_tmpl_parse_text("scale.cu.tmpl", src, sizeof src - 1, NULL, &diags, &err);
	prob.tmpl = t;
	if (!t) {
		fprintf(stderr, "%s%s\n", kt_buf_str(&diags), err.msg);
		return 1;
	}
	test_round_trip();
	test_field_mismatch();
	test_gpu_doc();
	test_mutations();
	test_result();
	test_measure();
	test_retimed();
	test_head();
	kt_tmpl_free(t);
	kt_buf_free(&diags);
	return check_done();
}
