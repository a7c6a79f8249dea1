/* test_tune.c - the whole tuning loop on the fake GPU with the fake compiler
 * (tests/unit/fake/): statuses of planted failures, the chosen winner, budgets, the robust
 * configuration across shapes, and the ceilings kept in the cache directory. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "tune.h"

static kt_tmpl *parse(void)
{
	kt_buf diags = {0};
	kt_err err = {0};
	kt_tmpl *t = kt_tmpl_parse(KT_FAKE_DIR "/scale.cu.tmpl", NULL, &diags, &err);
	if (!t)
		fprintf(stderr, "%s\n%s\n", kt_buf_str(&diags), err.msg);
	kt_buf_free(&diags);
	return t;
}

static kt_tune_opts fake_opts(const char *workdir, const char *cache)
{
	kt_tune_opts o = {0};
	o.backend = "fake";
	o.nvcc = KT_FAKE_DIR "/fake_nvcc.py";
	o.exe = KT_EXE;
	o.timeout_s = 1.0;
	o.jobs = 2;
	o.batch = 8;
	o.seed = 7;
	o.workdir = workdir;
	o.cache_dir = cache;
	o.near_floor = -1;
	return o;
}

static const kt_eval *find(const kt_tmpl *t, const kt_tune_result *r, const char *spec)
{
	uint16_t cfg[KT_MAX_SLOTS];
	kt_err err = {0};
	if (kt_tmpl_parse_config(t, spec, cfg, &err))
		return NULL;
	for (size_t i = 0; i < r->nevals; i++)
		if (!memcmp(r->evals[i].cfg, cfg, (size_t)t->nparams * sizeof *cfg))
			return &r->evals[i];
	return NULL;
}

static int status_of(const kt_tmpl *t, const kt_tune_result *r, const char *spec)
{
	const kt_eval *e = find(t, r, spec);
	return e ? (int)e->status : -1;
}

static void test_exhaustive(const kt_tmpl *t, const char *dir)
{
	char work[512], cache[512];
	snprintf(work, sizeof work, "%s/work", dir);
	snprintf(cache, sizeof cache, "%s/cache", dir);
	kt_tune_opts o = fake_opts(work, cache);
	o.strategy = "exhaustive";
	int64_t shape[1] = {4096};
	kt_tune_result r;
	kt_err err = {0};
	int rc = kt_tune(t, shape, &o, &r, &err);
	CHECK_INT(rc, 0);
	if (rc) {
		fprintf(stderr, "kt_tune: %s\n", err.msg);
		return;
	}
	CHECK_INT(r.nevals, 21); /* every feasible configuration once */
	CHECK_INT(status_of(t, &r, "BLOCK=64,UNROLL=1,MODE=wrong"), KT_CHECK_FAILED);
	CHECK_INT(status_of(t, &r, "BLOCK=64,UNROLL=1,MODE=crash"), KT_FAULTED);
	CHECK_INT(status_of(t, &r, "BLOCK=64,UNROLL=1,MODE=stall"), KT_TIMED_OUT);
	CHECK_INT(status_of(t, &r, "BLOCK=32,UNROLL=4,MODE=good"), KT_COMPILE_FAILED);
	CHECK_INT(status_of(t, &r, "BLOCK=2048,UNROLL=1,MODE=good"), KT_OVER_LIMITS); /* threads, before compiling */
	CHECK_INT(status_of(t, &r, "BLOCK=1024,UNROLL=2,MODE=good"), KT_OVER_LIMITS); /* 128 registers x 1024 */
	const kt_eval *e = find(t, &r, "BLOCK=32,UNROLL=4,MODE=good");
	CHECK(e && e->msg && strstr(e->msg, "planted compile error"));
	e = find(t, &r, "BLOCK=1024,UNROLL=2,MODE=good");
	CHECK(e && e->msg && strstr(e->msg, "registers"));
	e = find(t, &r, "BLOCK=64,UNROLL=1,MODE=stall");
	CHECK(e && e->msg && strstr(e->msg, "no answer within"));
	e = find(t, &r, "BLOCK=128,UNROLL=2,MODE=good");
	CHECK(e && e->status == KT_OK && e->regs == 32);
	/* The fake's times: 100 us, plus 25% for each of BLOCK=256 and UNROLL=4 missing. */
	CHECK(r.best >= 0);
	if (r.best >= 0) {
		kt_buf cfg = {0};
		kt_tmpl_format_config(t, r.evals[r.best].cfg, &cfg);
		CHECK_STR(kt_buf_str(&cfg), "BLOCK=256,UNROLL=4,MODE=good");
		CHECK(r.evals[r.best].median_us > 99.9 && r.evals[r.best].median_us < 100.1);
		kt_buf_free(&cfg);
	}
	CHECK(r.default_us > 149.9 && r.default_us < 150.1);
	CHECK(r.bw_gbs > 1999 && r.bw_gbs < 2001);
	CHECK(r.floor_us > 0.016 && r.floor_us < 0.017); /* 8 * 4096 bytes at 2000 GB/s */
	CHECK_STR(r.strategy, "exhaustive");
	CHECK(r.seconds > 0);
	/* The bandwidth was kept for this GPU. */
	char path[600];
	snprintf(path, sizeof path, "%s/gpu-ceilings.json", cache);
	CHECK(access(path, R_OK) == 0);
	/* Work files stay in a given work directory. */
	snprintf(path, sizeof path, "%s/build0.ninja", work);
	CHECK(access(path, R_OK) == 0);
	kt_tune_result_free(&r);
}

/* Every passing configuration takes the same time: the default is chosen. */
static void test_prefer_default(const char *dir)
{
	kt_buf text = {0}, diags = {0};
	kt_err err = {0};
	char path[600];
	snprintf(path, sizeof path, "%s/ties.cu.tmpl", dir);
	if (kt_read_file(KT_FAKE_DIR "/scale.cu.tmpl", &text, &err))
		return;
	char *p = strstr(text.data, "// fake-best: BLOCK=256\n// fake-best: UNROLL=4\n");
	CHECK(p != NULL);
	if (!p)
		return;
	memset(p, ' ', strlen("// fake-best: BLOCK=256\n// fake-best: UNROLL=4"));
	kt_write_atomic(path, text.data, text.len, &err);
	kt_tmpl *t = kt_tmpl_parse(path, NULL, &diags, &err);
	CHECK(t != NULL);
	kt_tune_opts o = fake_opts(NULL, NULL);
	o.strategy = "exhaustive";
	int64_t shape[1] = {4096};
	kt_tune_result r;
	CHECK_INT(t ? kt_tune(t, shape, &o, &r, &err) : -1, 0);
	if (t && r.best >= 0) {
		kt_buf cfg = {0};
		kt_tmpl_format_config(t, r.evals[r.best].cfg, &cfg);
		CHECK_STR(kt_buf_str(&cfg), "BLOCK=128,UNROLL=1,MODE=good");
		kt_buf_free(&cfg);
	}
	if (t)
		kt_tune_result_free(&r);
	kt_tmpl_free(t);
	kt_buf_free(&text);
	kt_buf_free(&diags);
}

static void test_budget(const kt_tmpl *t)
{
	kt_tune_opts o = fake_opts(NULL, NULL);
	o.strategy = "random";
	o.budget = 6;
	int64_t shape[1] = {4096};
	kt_tune_result r;
	kt_err err = {0};
	int rc = kt_tune(t, shape, &o, &r, &err);
	CHECK_INT(rc, 0);
	/* The search's 6, plus the default when the search did not pick it. */
	CHECK(r.nevals >= 6 && r.nevals <= 7);
	CHECK(find(t, &r, "BLOCK=128,UNROLL=1,MODE=good") != NULL);
	kt_tune_result_free(&r);
}

static void test_no_gpu(const kt_tmpl *t)
{
	kt_tune_opts o = fake_opts(NULL, NULL);
	setenv("KT_FAKE_GPUS", "0", 1);
	int64_t shape[1] = {4096};
	kt_tune_result r;
	kt_err err = {0};
	CHECK_INT(kt_tune(t, shape, &o, &r, &err), -1);
	CHECK(strstr(err.msg, "cannot tune") != NULL);
	unsetenv("KT_FAKE_GPUS");
	kt_tune_result_free(&r);
}

static void test_two_gpus(const kt_tmpl *t)
{
	kt_tune_opts o = fake_opts(NULL, NULL);
	setenv("KT_FAKE_GPUS", "2", 1);
	o.gpu = -1;
	o.strategy = "exhaustive";
	int64_t shape[1] = {4096};
	kt_tune_result r;
	kt_err err = {0};
	int rc = kt_tune(t, shape, &o, &r, &err);
	CHECK_INT(rc, 0);
	CHECK_INT(r.nevals, 21);
	CHECK_INT(status_of(t, &r, "BLOCK=64,UNROLL=1,MODE=crash"), KT_FAULTED);
	CHECK_INT(status_of(t, &r, "BLOCK=256,UNROLL=4,MODE=good"), KT_OK);
	unsetenv("KT_FAKE_GPUS");
	kt_tune_result_free(&r);
}

/* Two synthetic shapes: A is best at shape 0, B at shape 1; C is never best but never bad. */
static void test_robust(const kt_tmpl *t)
{
	uint16_t a[3] = {0, 0, 0}, b[3] = {1, 0, 0}, c[3] = {2, 0, 0}, got[3];
	kt_eval e0[3] = {{a, KT_OK, 10, 0, 0, 0, 0, NULL}, {b, KT_OK, 30, 0, 0, 0, 0, NULL}, {c, KT_OK, 12, 0, 0, 0, 0, NULL}};
	kt_eval e1[3] = {{a, KT_OK, 40, 0, 0, 0, 0, NULL}, {b, KT_OK, 10, 0, 0, 0, 0, NULL}, {c, KT_OK, 12, 0, 0, 0, 0, NULL}};
	kt_tune_result r0 = {.nparams = 3, .nevals = 3, .evals = e0, .best = 0};
	kt_tune_result r1 = {.nparams = 3, .nevals = 3, .evals = e1, .best = 1};
	const kt_tune_result *rs[2] = {&r0, &r1};
	double worst = 0;
	CHECK_INT(kt_tune_robust(t, rs, 2, got, &worst), 0);
	CHECK(!memcmp(got, c, sizeof c));
	CHECK(worst > 1.19 && worst < 1.21);
	/* A failure where it was measured disqualifies it. */
	e1[2].status = KT_CHECK_FAILED;
	CHECK_INT(kt_tune_robust(t, rs, 2, got, &worst), 0);
	CHECK(!memcmp(got, b, sizeof b)); /* B: 3x at shape 0, A: 4x at shape 1 */
	CHECK(worst > 2.99 && worst < 3.01);
	for (int i = 0; i < 3; i++)
		e0[i].status = e1[i].status = KT_FAULTED;
	CHECK_INT(kt_tune_robust(t, rs, 2, got, &worst), -1);
}

static void test_progress(void)
{
	FILE *f = tmpfile();
	kt_progress p;
	kt_progress_init(&p, f, "scale n=8");
	CHECK_INT(p.tty, 0);
	p.last -= 100; /* a plain line is due */
	kt_progress_update(&p, 3, 12, 1, 2.0, 1.0);
	kt_progress_update(&p, 4, 12, 1, 2.0, 1.0); /* too soon after the last: nothing */
	kt_progress_done(&p, 12, 2, 1.5, 1.0);
	char text[512] = "";
	rewind(f);
	size_t n = fread(text, 1, sizeof text - 1, f);
	text[n] = 0;
	fclose(f);
	CHECK(strstr(text, "kt: tuning scale n=8: 3/12 evaluated, 1 failed, best 2.00 us (50% of floor), about ") == text);
	CHECK(strstr(text, "4/12") == NULL);
	CHECK(strstr(text, "\nkt: tuned scale n=8: 12 evaluated, 2 failed, best 1.50 us (67% of floor), ") != NULL);
}

int main(void)
{
	char dir[] = "/tmp/kt-test-tune-XXXXXX";
	if (!mkdtemp(dir))
		return 1;
	kt_tmpl *t = parse();
	CHECK(t != NULL);
	if (t) {
		test_exhaustive(t, dir);
		test_budget(t);
		test_no_gpu(t);
		test_two_gpus(t);
		test_robust(t);
		test_prefer_default(dir);
	}
	test_progress();
	kt_tmpl_free(t);
	char cmd[600];
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
	if (system(cmd))
		fprintf(stderr, "could not remove %s\n", dir);
	return check_done();
}
