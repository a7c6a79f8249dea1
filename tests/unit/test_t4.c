/* test_t4.c - the T4 module: a tuning result and a cache record written as T4 carry the fields
 * and types the schema requires and kt's statuses mapped as documented; reading them back gives
 * the same evaluations; files laid out as Kernel Tuner and KTT's converter write them read with
 * their units; every kind of bad file is refused with a message naming the file and the entry;
 * randomly damaged files never crash the reader. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "check.h"
#include "key.h"
#include "t4.h"

static const char src[] =
	"// @kt kernel    scale\n"
	"// @kt shape     n\n"
	"// @kt type      T in float, half\n"
	"// @kt param     BLOCK in 64, 128, 256 default 128\n"
	"// @kt param     VEC in 1, 2, 4 default 2\n"
	"// @kt param     ALGO in plain, unrolled default plain\n"
	"// @kt param     FAST bool default false\n"
	"// @kt require   n % (BLOCK * VEC) == 0\n"
	"// @kt arg       out T[n] out\n"
	"// @kt arg       x   T[n] in\n"
	"// @kt arg       n   int = n\n"
	"// @kt grid      cdiv(n, BLOCK * VEC)\n"
	"// @kt block     BLOCK\n"
	"extern \"C\" __global__ void scale(T* out, const T* x, int n) { }\n";

static kt_tmpl *t;
static int64_t shape[1] = {1536};
static const kt_gpu_id gpu = {"NVIDIA H200", 9, 0, 132, 52428800, 232448};

static void add_eval(kt_tune_result *r, const uint16_t *cfg, kt_status st, double us, int regs, const char *msg)
{
	r->evals = kt_xrealloc(r->evals, (r->nevals + 1) * sizeof *r->evals);
	kt_eval *e = &r->evals[r->nevals++];
	memset(e, 0, sizeof *e);
	e->cfg = kt_xmalloc((size_t)t->nparams * sizeof *e->cfg);
	memcpy(e->cfg, cfg, (size_t)t->nparams * sizeof *e->cfg);
	e->status = st;
	e->median_us = st == KT_OK ? us : 0;
	e->spread_us = st == KT_OK ? us / 64 : 0;
	e->regs = regs;
	e->smem_static = e->local_bytes = regs >= 0 ? 0 : -1;
	e->msg = msg ? kt_xstrdup(msg) : NULL;
}

/* Every status once, the chosen one second. */
static void make_result(kt_tune_result *r)
{
	memset(r, 0, sizeof *r);
	r->nparams = t->nparams;
	add_eval(r, (uint16_t[]){1, 1, 0, 0}, KT_OK, 5.0, 32, NULL);
	add_eval(r, (uint16_t[]){1, 2, 1, 1}, KT_OK, 3.25, 40, NULL);
	add_eval(r, (uint16_t[]){0, 0, 1, 1}, KT_COMPILE_FAILED, 0, -1, "ptxas error: too many registers");
	add_eval(r, (uint16_t[]){2, 1, 0, 1}, KT_OVER_LIMITS, 0, 255, "uses 255 registers x 1024 threads");
	add_eval(r, (uint16_t[]){0, 2, 1, 0}, KT_CHECK_FAILED, 0, 32, "out[7]: 1.5 vs 1.25");
	add_eval(r, (uint16_t[]){0, 1, 0, 0}, KT_FAULTED, 0, 32, "an illegal memory access");
	add_eval(r, (uint16_t[]){0, 0, 0, 0}, KT_TIMED_OUT, 0, 32, NULL);
	add_eval(r, (uint16_t[]){2, 0, 0, 0}, KT_NOT_RUN, 0, -1, "the 2 configurations that timed out at this shape all hold A=1");
	r->best = 1;
	snprintf(r->strategy, sizeof r->strategy, "exhaustive");
	r->seed = 18446744073709551615ULL;
	r->budget = 100;
	r->seconds = 61.4;
	snprintf(r->driver, sizeof r->driver, "13.0");
	snprintf(r->runtime, sizeof r->runtime, "13.0");
}

static const char *sval(const cJSON *o, const char *name)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, name);
	return cJSON_IsString(v) ? v->valuestring : NULL;
}

static double nval(const cJSON *o, const char *name)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, name);
	return cJSON_IsNumber(v) ? v->valuedouble : NAN;
}

/* The required fields and their types, as the T4 results schema states them: results-schema.json
 * of https://github.com/odgaard/TuningSchema (branch T4), shipped by Kernel Tuner as
 * kernel_tuner/schema/T4/1.0.0/results-schema.json.  Returns the number of violations. */
static int t4_violations(const cJSON *doc)
{
	static const char *const invalidity[] = {"timeout", "compile", "runtime", "correctness", "constraints", "correct"};
	int bad = 0;
	const cJSON *res, *m;
	const char *version = sval(doc, "schema_version");
	int a, b, c, n = 0;
	bad += !version || sscanf(version, "%d.%d.%d%n", &a, &b, &c, &n) != 3 || version[n];
	bad += !cJSON_IsArray(cJSON_GetObjectItemCaseSensitive(doc, "results"));
	cJSON_ArrayForEach(res, cJSON_GetObjectItemCaseSensitive(doc, "results"))
	{
		const char *inv = sval(res, "invalidity");
		int known = 0;
		for (size_t i = 0; inv && i < sizeof invalidity / sizeof invalidity[0]; i++)
			known |= !strcmp(inv, invalidity[i]);
		bad += !cJSON_IsObject(cJSON_GetObjectItemCaseSensitive(res, "configuration"));
		bad += !cJSON_IsObject(cJSON_GetObjectItemCaseSensitive(res, "times"));
		bad += !known;
		bad += !cJSON_IsNumber(cJSON_GetObjectItemCaseSensitive(res, "correctness"));
		bad += !cJSON_IsArray(cJSON_GetObjectItemCaseSensitive(res, "objectives"));
		cJSON_ArrayForEach(m, cJSON_GetObjectItemCaseSensitive(res, "measurements"))
		{
			const cJSON *v = cJSON_GetObjectItemCaseSensitive(m, "value");
			bad += !sval(m, "name") || !sval(m, "unit") || !(cJSON_IsNumber(v) || cJSON_IsString(v) || cJSON_IsArray(v));
		}
	}
	return bad;
}

/* The measurement named name of a result. */
static const cJSON *measurement(const cJSON *res, const char *name)
{
	const cJSON *m;
	cJSON_ArrayForEach(m, cJSON_GetObjectItemCaseSensitive(res, "measurements"))
		if (sval(m, "name") && !strcmp(sval(m, "name"), name))
			return m;
	return NULL;
}

static void check_result_doc(const char *text, const kt_tune_result *r)
{
	static const char *const invalidity[KT_NSTATUS] = {"correct", "compile", "runtime", "correctness", "runtime", "timeout", "timeout"};
	cJSON *doc = cJSON_Parse(text);
	CHECK(doc != NULL);
	CHECK_INT(t4_violations(doc), 0);
	CHECK_STR(sval(doc, "schema_version"), "1.0.0");
	const cJSON *meta = cJSON_GetObjectItemCaseSensitive(doc, "metadata");
	const cJSON *kt = cJSON_GetObjectItemCaseSensitive(meta, "kt");
	CHECK_STR(sval(meta, "device"), "NVIDIA H200");
	CHECK_STR(sval(meta, "autotuner"), "kt");
	CHECK_STR(sval(meta, "timeunit"), "milliseconds");
	CHECK_STR(sval(meta, "compute_api"), "CUDA");
	CHECK_STR(sval(kt, "kernel"), "scale");
	CHECK_STR(sval(kt, "shape"), "n=1536");
	CHECK_STR(sval(kt, "types"), "T=half");
	CHECK_STR(sval(cJSON_GetObjectItemCaseSensitive(kt, "search"), "seed"), "18446744073709551615");
	CHECK_INT(nval(cJSON_GetObjectItemCaseSensitive(kt, "config"), "VEC"), 4);
	CHECK_INT(nval(cJSON_GetObjectItemCaseSensitive(kt, "gpu"), "sms"), 132);
	const cJSON *results = cJSON_GetObjectItemCaseSensitive(doc, "results");
	CHECK_INT(cJSON_GetArraySize(results), (int)r->nevals);
	for (size_t i = 0; i < r->nevals && i < (size_t)cJSON_GetArraySize(results); i++) {
		const kt_eval *e = &r->evals[i];
		const cJSON *res = cJSON_GetArrayItem(results, (int)i), *time = measurement(res, "time");
		CHECK_STR(sval(res, "invalidity"), invalidity[e->status]);
		CHECK_INT(nval(res, "correctness"), e->status == KT_CHECK_FAILED ? 0 : 1);
		CHECK_STR(sval(cJSON_GetObjectItemCaseSensitive(res, "kt"), "status"), kt_status_names[e->status]);
		CHECK(!e->msg || !strcmp(sval(cJSON_GetObjectItemCaseSensitive(res, "kt"), "message"), e->msg));
		CHECK_STR(sval(time, "unit"), "ms");
		if (e->status == KT_OK)
			CHECK(fabs(nval(time, "value") - e->median_us / 1e3) < 1e-15);
		else
			CHECK(sval(time, "value") != NULL); /* Kernel Tuner's error value, a string */
		CHECK(e->regs < 0 || nval(measurement(res, "registers"), "value") == e->regs);
		const cJSON *objective = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(res, "objectives"), 0);
		CHECK_STR(cJSON_IsString(objective) ? objective->valuestring : NULL, "time");
	}
	cJSON_Delete(doc);
}

/* The evaluations read back equal r's (the resources are not read back: recordings keep none). */
static void check_same(const kt_t4_space *s, const kt_tune_result *r)
{
	CHECK_INT(s->result.nevals, r->nevals);
	CHECK_INT(s->result.best, r->best);
	CHECK_INT(s->skipped, 0);
	for (size_t i = 0; i < r->nevals && i < s->result.nevals; i++) {
		const kt_eval *a = &s->result.evals[i], *b = &r->evals[i];
		CHECK(!memcmp(a->cfg, b->cfg, (size_t)t->nparams * sizeof *a->cfg));
		CHECK_INT(a->status, b->status);
		CHECK(fabs(a->median_us - b->median_us) < 1e-9 && fabs(a->spread_us - b->spread_us) < 1e-9);
		CHECK((!a->msg && !b->msg) || (a->msg && b->msg && !strcmp(a->msg, b->msg)));
	}
}

static void test_result_round_trip(void)
{
	kt_tune_result r;
	kt_t4_space s;
	kt_err err = {0};
	make_result(&r);
	char *text = kt_t4_from_result(t, shape, &gpu, &r);
	check_result_doc(text, &r);
	CHECK(kt_t4_read("run.json", text, strlen(text), t, shape, &s, &err) == 0);
	CHECK_STR(err.msg, "");
	check_same(&s, &r);
	kt_buf field = {0}; /* what the template is parsed with before the results are read */
	CHECK(kt_t4_kt_field(text, strlen(text), "arch", &field) == 0);
	CHECK_STR(kt_buf_str(&field), "90");
	CHECK(kt_t4_kt_field(text, strlen(text), "types", &field) == 0);
	CHECK_STR(kt_buf_str(&field), "T=half");
	CHECK(kt_t4_kt_field(text, strlen(text), "colour", &field) == 1);
	CHECK(kt_t4_kt_field("not json", 8, "arch", &field) == 1);
	CHECK_STR(kt_buf_str(&field), "");
	kt_buf_free(&field);
	CHECK_STR(s.gpu.name, "NVIDIA H200");
	CHECK_INT(s.gpu.smem_optin, 232448);
	kt_t4_space_free(&s);
	free(text);
	kt_tune_result_free(&r);
}

static void test_record_round_trip(void)
{
	kt_tune_result r;
	kt_key k = {0};
	kt_record rec;
	kt_t4_space s;
	kt_err err = {0};
	make_result(&r);
	kt_target target = {.id = gpu};
	kt_toolchain tc = {NULL, "Cuda compilation tools, release 13.0, V13.0.88", "90", "-O3"};
	kt_problem p = {.tmpl = t, .shape = shape, .target = &target, .tc = &tc};
	CHECK(kt_key_make(&p, &k, &err) == 0);
	char *json = kt_record_json(&k, &p, &r, NULL, &err);
	CHECK(json && kt_record_read(json, strlen(json), &rec, &err) == 0);
	char *text = kt_t4_from_record(&rec);
	check_result_doc(text, &r);
	cJSON *doc = cJSON_Parse(text);
	const cJSON *meta = cJSON_GetObjectItemCaseSensitive(doc, "metadata");
	const cJSON *kt = cJSON_GetObjectItemCaseSensitive(meta, "kt");
	CHECK_STR(sval(kt, "key"), k.hex);
	CHECK_STR(sval(kt, "arch"), "90");
	CHECK_STR(sval(kt, "finished"), rec.date);
	CHECK_STR(sval(meta, "autotuner_version"), KT_VERSION);
	/* tuning began the search's seconds (61.4, to the second) before the record was stored */
	int y, mo, d, h, mi, sec;
	CHECK(sscanf(sval(meta, "timestamp"), "%d-%d-%dT%d:%d:%dZ", &y, &mo, &d, &h, &mi, &sec) == 6);
	int end_h, end_mi, end_s;
	CHECK(sscanf(rec.date + 11, "%d:%d:%d", &end_h, &end_mi, &end_s) == 3);
	CHECK_INT(((end_h * 60 + end_mi) * 60 + end_s - ((h * 60 + mi) * 60 + sec) + 86400) % 86400, 61);
	CHECK(kt_t4_read("rec.json", text, strlen(text), t, shape, &s, &err) == 0);
	check_same(&s, &r);
	kt_t4_space_free(&s);
	cJSON_Delete(doc);
	free(text);
	free(json);
	kt_record_free(&rec);
	kt_key_free(&k);
	kt_tune_result_free(&r);
}

/* Reads text; returns 0, or -1 with the message in msg. */
static int read_text(const char *text, kt_t4_space *s, kt_err *err)
{
	memset(err, 0, sizeof *err);
	return kt_t4_read("f.json", text, strlen(text), t, shape, s, err);
}

/* As Kernel Tuner's store_output_file writes one (no metadata, times in ms, its error values); a
 * second objective named by KTT's converter; runtimes only; a file unit of microseconds. */
static void test_peer_files(void)
{
	kt_t4_space s;
	kt_err err;
	const char *kernel_tuner =
		"{\"schema_version\": \"1.0.0\", \"results\": ["
		"{\"timestamp\": \"2024-05-01 12:00:00\", \"configuration\": {\"BLOCK\": 128, \"VEC\": 4, \"ALGO\": \"plain\", \"FAST\": true},"
		" \"times\": {\"compilation\": 0.4, \"runtimes\": [0.002, 0.002]}, \"invalidity\": \"correct\", \"correctness\": 1,"
		" \"measurements\": [{\"name\": \"time\", \"value\": 0.0025, \"unit\": \"ms\"}], \"objectives\": [\"time\"]},"
		"{\"configuration\": {\"BLOCK\": 64, \"VEC\": 1, \"ALGO\": \"plain\", \"FAST\": false}, \"times\": {},"
		" \"invalidity\": \"compile\", \"correctness\": 1,"
		" \"measurements\": [{\"name\": \"time\", \"value\": \"CompilationFailedConfig\", \"unit\": \"ms\"}]},"
		"{\"configuration\": {\"BLOCK\": 256, \"VEC\": 4, \"ALGO\": \"plain\", \"FAST\": false}, \"times\": {},"
		" \"invalidity\": \"constraints\", \"correctness\": 1, \"measurements\": []},"
		"{\"configuration\": {\"BLOCK\": 64, \"VEC\": 2, \"ALGO\": \"plain\", \"FAST\": false}, \"times\": {},"
		" \"invalidity\": \"constraints\", \"correctness\": 1}]}";
	CHECK(read_text(kernel_tuner, &s, &err) == 0);
	CHECK_STR(err.msg, "");
	CHECK_INT(s.result.nevals, 3);
	CHECK_INT(s.skipped, 1); /* 256 x 4 does not divide 1536: outside the constraints too */
	CHECK_INT(s.result.evals[0].status, KT_OK);
	CHECK(fabs(s.result.evals[0].median_us - 2.5) < 1e-12 && s.result.evals[0].spread_us == 0);
	CHECK_INT(s.result.evals[1].status, KT_COMPILE_FAILED);
	CHECK_INT(s.result.evals[2].status, KT_OVER_LIMITS); /* inside kt's space: the peer could not run it */
	CHECK_INT(s.result.best, 0);
	CHECK_STR(s.gpu.name, "");
	kt_t4_space_free(&s);

	const char *ktt = /* KTT's results as the methodology converts them; time unit given by the file */
		"{\"schema_version\": \"1.0.0\", \"metadata\": {\"timeunit\": \"microseconds\", \"device\": \"NVIDIA A100\"},"
		" \"results\": [{\"configuration\": {\"BLOCK\": 128, \"VEC\": 4, \"ALGO\": \"plain\", \"FAST\": true},"
		" \"times\": {\"runtimes\": [7]}, \"invalidity\": \"correct\", \"correctness\": 1, \"objectives\": [\"TotalDuration\"],"
		" \"measurements\": [{\"name\": \"TotalDuration\", \"value\": 0.006, \"unit\": \"milliseconds\"}]},"
		" {\"configuration\": {\"BLOCK\": 128, \"VEC\": 2, \"ALGO\": \"plain\", \"FAST\": true},"
		" \"times\": {\"runtimes\": [9, 4, 5, 6, 7, 8, 5, 6, 7, 100, 3]}, \"invalidity\": \"correct\", \"correctness\": 1},"
		" {\"configuration\": {\"BLOCK\": 128, \"VEC\": 1, \"ALGO\": \"plain\", \"FAST\": true},"
		" \"times\": {}, \"invalidity\": \"correct\", \"correctness\": 0,"
		" \"measurements\": [{\"name\": \"time\", \"value\": 3, \"unit\": \"\"}]}]}";
	CHECK(read_text(ktt, &s, &err) == 0);
	CHECK_STR(err.msg, "");
	CHECK_INT(s.result.nevals, 3);
	CHECK(fabs(s.result.evals[0].median_us - 6) < 1e-12);   /* the objective's measurement, in ms */
	CHECK(fabs(s.result.evals[1].median_us - 6) < 1e-12);   /* the median of the runtimes, in us */
	CHECK(fabs(s.result.evals[1].spread_us - 2.5) < 1e-12); /* (90th: 9 - 10th: 4) / 2 */
	CHECK_INT(s.result.evals[2].status, KT_CHECK_FAILED);   /* correct, but correctness 0 */
	CHECK_STR(s.gpu.name, "NVIDIA A100");
	kt_t4_space_free(&s);
}

static void check_error(const char *text, const char *want)
{
	kt_t4_space s;
	kt_err err;
	CHECK(read_text(text, &s, &err) == -1);
	CHECK_STR(err.msg, want);
	CHECK_INT(err.cls, KT_E_INPUT);
	CHECK(s.result.nevals == 0 && s.result.evals == NULL && s.result.best == -1);
}

#define OK_CFG "{\"BLOCK\": 128, \"VEC\": 4, \"ALGO\": \"plain\", \"FAST\": true}"
#define OK_RESULT "{\"configuration\": " OK_CFG ", \"times\": {}, \"invalidity\": \"correct\", \"correctness\": 1," \
		  " \"measurements\": [{\"name\": \"time\", \"value\": 1, \"unit\": \"ms\"}]}"

static void test_errors(void)
{
	check_error("{\"results\": [\n  {\"configuration\" }\n]}", "f.json:2:20: not JSON (a T4 file is one JSON object)");
	check_error("[]", "f.json: not a T4 results document (expected a JSON object)");
	check_error("{\"format\": 1, \"key\": \"00\"}", "f.json: not a T4 results document (no 'results' array)");
	check_error("{\"schema_version\": \"1.0\", \"results\": []}", "f.json: schema_version is not a version (major.minor.patch)");
	check_error("{\"results\": []}", "f.json: no result to import (0 in the file, 0 outside the template's constraints)");
	check_error("{\"results\": [" OK_RESULT ", {\"configuration\": {}, \"times\": {}, \"correctness\": 1}]}",
		    "f.json: results[1]: no 'invalidity' (T4 requires it)");
	check_error("{\"results\": [{\"configuration\": [], \"times\": {}, \"invalidity\": \"correct\", \"correctness\": 1}]}",
		    "f.json: results[0]: 'configuration' is not an object");
	check_error("{\"results\": [{\"configuration\": " OK_CFG ", \"times\": {\"framework\": \"slow\"},"
		    " \"invalidity\": \"correct\", \"correctness\": 1}]}",
		    "f.json: results[0]: 'times.framework' is not a number");
	check_error("{\"results\": [{\"configuration\": " OK_CFG ", \"times\": {}, \"invalidity\": \"correct\","
		    " \"correctness\": 1, \"objectives\": [1]}]}",
		    "f.json: results[0]: objectives[0] is not a string");
	check_error("{\"results\": [{\"configuration\": {\"BLOCK\": 96, \"VEC\": 4, \"ALGO\": \"plain\", \"FAST\": true},"
		    " \"times\": {}, \"invalidity\": \"compile\", \"correctness\": 1}]}",
		    "f.json: results[0]: BLOCK=96 is not a declared value of BLOCK: not in the space of scale.cu.tmpl");
	check_error("{\"results\": [{\"configuration\": {\"BLOCK\": 256, \"VEC\": 4, \"ALGO\": \"plain\", \"FAST\": true},"
		    " \"times\": {}, \"invalidity\": \"compile\", \"correctness\": 1}]}",
		    "f.json: results[0]: the configuration BLOCK=256,VEC=4,ALGO=plain,FAST=true violates "
		    "'n % (BLOCK * VEC) == 0' (scale.cu.tmpl:8) at shape n=1536: not in the template's space");
	check_error("{\"results\": [" OK_RESULT ", " OK_RESULT "]}",
		    "f.json: results[1]: the configuration BLOCK=128,VEC=4,ALGO=plain,FAST=true repeats results[0]; a recorded "
		    "space holds each once");
	check_error("{\"metadata\": {\"kt\": {\"kernel\": \"scale\", \"shape\": \"n=1536\", \"types\": \"T=float\"}},"
		    " \"results\": [" OK_RESULT "]}",
		    "f.json: its results were measured with types T=float (metadata.kt.types), not T=half");
	check_error("{\"metadata\": {\"kt\": {\"shape\": \"rows=4\"}}, \"results\": [" OK_RESULT "]}",
		    "f.json: its results were measured at shape rows=4 (metadata.kt.shape), not at n=1536");
	check_error("{\"metadata\": {\"kt\": {\"arch\": \"90a\"}}, \"results\": [" OK_RESULT "]}",
		    "f.json: its results were compiled for 90a (metadata.kt.arch), not for 90");
	check_error("{\"metadata\": [], \"results\": [" OK_RESULT "]}", "f.json: 'metadata' is not an object");
	check_error("{\"results\": [{\"configuration\": " OK_CFG ", \"times\": {}, \"invalidity\": \"correct\","
		    " \"correctness\": 1, \"measurements\": [{\"name\": \"time\", \"value\": -2, \"unit\": \"ms\"}]}]}",
		    "f.json: results[0]: the time -2000 us is not a non-negative number");
	check_error("{\"results\": [{\"configuration\": " OK_CFG ", \"times\": {}, \"invalidity\": \"runtime\","
		    " \"correctness\": 1, \"kt\": {\"status\": \"timed-out\"}}]}",
		    "f.json: results[0]: kt.status 'timed-out' does not agree with invalidity 'runtime'");
}

/* Bytes of a good file changed, dropped or repeated at random: every reading either succeeds or
 * fails with a message naming the file, and leaves nothing behind on failure (run it under
 * KT_SANITIZE to see leaks and overruns). */
static void test_mutations(void)
{
	enum { ROUNDS = 3000 };
	kt_tune_result r;
	make_result(&r);
	char *good = kt_t4_from_result(t, shape, &gpu, &r);
	size_t n = strlen(good);
	static const char bytes[] = "{}[]\",:0123456789.-eE \ntruefalsnul\\";
	unsigned long long seed = 42;
	int read = 0, refused = 0, named = 0;
	for (int round = 0; round < ROUNDS; round++) {
		char *text = kt_xmalloc(2 * n + 1);
		memcpy(text, good, n + 1);
		size_t len = n;
		for (int k = 0; k < 1 + round % 4; k++) {
			seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
			size_t at = (size_t)(seed >> 33) % len;
			int what = (int)(seed >> 20) % 3;
			if (what == 0)
				text[at] = bytes[(seed >> 40) % (sizeof bytes - 1)];
			else if (what == 1 && len > 1)
				memmove(text + at, text + at + 1, len-- - at);
			else if (len + 8 < 2 * n) {
				memmove(text + at + 8, text + at, len - at + 1);
				memcpy(text + at, text + at + 8 < text + len ? text + at + 8 : text, 8);
				len += 8;
			}
		}
		kt_t4_space s;
		kt_err err;
		if (read_text(text, &s, &err) == 0) {
			read++;
			kt_t4_space_free(&s);
		} else {
			refused++;
			named += !strncmp(err.msg, "f.json:", 7) && s.result.evals == NULL;
		}
		free(text);
	}
	CHECK_INT(read + refused, ROUNDS);
	CHECK_INT(named, refused);
	CHECK(refused > ROUNDS / 2);
	free(good);
	kt_tune_result_free(&r);
}

int main(void)
{
	kt_buf diags = {0};
	kt_err err = {0};
	const char *types[] = {"T=half"};
	kt_tmpl_opts o = {.types = types, .ntypes = 1, .arch = "90"};
	t = kt_tmpl_parse_text("scale.cu.tmpl", src, sizeof src - 1, &o, &diags, &err);
	if (!t) {
		fprintf(stderr, "%s%s\n", kt_buf_str(&diags), err.msg);
		return 1;
	}
	test_result_round_trip();
	test_record_round_trip();
	test_peer_files();
	test_errors();
	test_mutations();
	kt_tmpl_free(t);
	kt_buf_free(&diags);
	return check_done();
}
