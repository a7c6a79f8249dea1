/* test_tune.c - the whole tuning loop on the fake GPU with the fake compiler
 * (tests/unit/fake/): statuses of planted failures, the chosen winner, budgets, the robust
 * configuration across shapes, the ceilings kept in the cache directory, shapes and templates in
 * one batch, siblings and seeds, a task that gives up after failures in a row, what made others
 * hang held back, the tie rule whatever the order of evaluation, the default patience and the
 * clock of load.  The compile side of the loop: test_tune_units.c. */
#include <stdlib.h>
#include <unistd.h>

#include "hangs.h"
#include "tune_fixture.h"

static void test_exhaustive(const kt_tmpl *t, const char *dir)
{
	char work[512];
	snprintf(work, sizeof work, "%s/work", dir);
	kt_tune_opts o = fake_opts(work);
	o.strategy = "exhaustive";
	kept_ceilings = (kt_ceilings){0};
	int64_t shape[1] = {4096};
	kt_tune_result r;
	kt_err err = {0};
	int rc = tune(t, shape, &o, &r, &err);
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
	/* The bandwidth was measured and handed back, to be kept for this GPU. */
	CHECK(kept_ceilings.bw_gbs > 1999 && kept_ceilings.bw_gbs < 2001);
	CHECK_STR(r.stop, "the space is exhausted");
	/* Work files stay in a given work directory. */
	char path[600];
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
	kt_tune_opts o = fake_opts(NULL);
	o.strategy = "exhaustive";
	int64_t shape[1] = {4096};
	kt_tune_result r;
	CHECK_INT(t ? tune(t, shape, &o, &r, &err) : -1, 0);
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
	kt_tune_opts o = fake_opts(NULL);
	o.strategy = "random";
	o.budget = 6;
	int64_t shape[1] = {4096};
	kt_tune_result r;
	kt_err err = {0};
	int rc = tune(t, shape, &o, &r, &err);
	CHECK_INT(rc, 0);
	/* The search's 6, plus the default when the search did not pick it. */
	CHECK(r.nevals >= 6 && r.nevals <= 7);
	CHECK(find(t, &r, "BLOCK=128,UNROLL=1,MODE=good") != NULL);
	kt_tune_result_free(&r);
}

static void test_no_gpu(const kt_tmpl *t)
{
	kt_tune_opts o = fake_opts(NULL);
	setenv("KT_FAKE_GPUS", "0", 1);
	int64_t shape[1] = {4096};
	kt_tune_result r;
	kt_err err = {0};
	CHECK_INT(tune(t, shape, &o, &r, &err), -1);
	CHECK(strstr(err.msg, "cannot tune") != NULL);
	unsetenv("KT_FAKE_GPUS");
	kt_tune_result_free(&r);
}

static void test_two_gpus(const kt_tmpl *t)
{
	kt_tune_opts o = fake_opts(NULL);
	setenv("KT_FAKE_GPUS", "2", 1);
	o.gpu = -1;
	o.strategy = "exhaustive";
	int64_t shape[1] = {4096};
	kt_tune_result r;
	kt_err err = {0};
	int rc = tune(t, shape, &o, &r, &err);
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
	kt_eval e0[3] = {{a, KT_OK, 10, 0, 0, 0, 0, NULL, 0, 0}, {b, KT_OK, 30, 0, 0, 0, 0, NULL, 0, 0}, {c, KT_OK, 12, 0, 0, 0, 0, NULL, 0, 0}};
	kt_eval e1[3] = {{a, KT_OK, 40, 0, 0, 0, 0, NULL, 0, 0}, {b, KT_OK, 10, 0, 0, 0, 0, NULL, 0, 0}, {c, KT_OK, 12, 0, 0, 0, 0, NULL, 0, 0}};
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
	size_t one[KT_NSTATUS] = {[KT_OK] = 2, [KT_COMPILE_FAILED] = 1};
	size_t two[KT_NSTATUS] = {[KT_OK] = 10, [KT_COMPILE_FAILED] = 1, [KT_CHECK_FAILED] = 1};
	kt_progress_update(&p, 3, 12, one, 2.0, 1.0, 1, 0);
	kt_progress_update(&p, 4, 12, one, 2.0, 1.0, 1, 0); /* too soon after the last: nothing */
	kt_progress_done(&p, 12, two, 1.5, 1.0, "converged: no gain");
	char text[512] = "";
	rewind(f);
	size_t n = fread(text, 1, sizeof text - 1, f);
	text[n] = 0;
	fclose(f);
	CHECK(strstr(text, "kt: tuning scale n=8: 3 evaluated (") == text);
	CHECK(strstr(text, "/s), 1 failed (1 do not compile), best 2.00 us (50% of floor), at most ") != NULL);
	CHECK(strstr(text, "4 evaluated") == NULL);
	CHECK(strstr(text, "\nkt: tuned scale n=8: 12 evaluated, 2 failed (1 do not compile, 1 wrong result), best 1.50 us "
			   "(67% of floor), ") != NULL);
	CHECK(strstr(text, "; stopped: converged: no gain\n") != NULL);
	/* nothing passed: "yet" while it is tuned, not once it is done */
	f = tmpfile();
	kt_progress_init(&p, f, "scale n=8");
	p.last -= 100;
	size_t bad[KT_NSTATUS] = {[KT_COMPILE_FAILED] = 1};
	kt_progress_update(&p, 1, 12, bad, 0, 1.0, 1, 0);
	kt_progress_done(&p, 1, bad, 0, 1.0, "gave up");
	rewind(f);
	n = fread(text, 1, sizeof text - 1, f);
	text[n] = 0;
	fclose(f);
	CHECK(strstr(text, "1 failed (1 do not compile), none passed yet, at most ") != NULL);
	CHECK(strstr(text, "\nkt: tuned scale n=8: 1 evaluated, 1 failed (1 do not compile), none passed, ") != NULL);
	char buf[128];
	size_t none[KT_NSTATUS] = {[KT_OK] = 5};
	CHECK_INT(kt_failures_format(none, buf, sizeof buf), 0);
	CHECK_STR(buf, "0 failed");
	size_t all[KT_NSTATUS] = {1, 2, 3, 4, 5, 6};
	CHECK_INT(kt_failures_format(all, buf, sizeof buf), 20);
	CHECK_STR(buf, "20 failed (2 do not compile, 3 exceed a limit, 4 wrong result, 5 launch error, 6 timeout)");
}

/* Two shapes and two templates in one batch: one pipeline whose work interleaves (the fake GPU's
 * log of launches alternates between the shapes), a variant compiled once measured at both shapes
 * of its template, and each task's own result. */
static void test_batch(const kt_tmpl *t, const char *dir)
{
	char log[600], path[600];
	snprintf(log, sizeof log, "%s/fake.log", dir);
	snprintf(path, sizeof path, "%s/scale2.cu.tmpl", dir);
	kt_buf text = {0}, diags = {0};
	kt_err err = {0};
	kt_read_file(KT_FAKE_DIR "/scale.cu.tmpl", &text, &err);
	kt_buf_puts(&text, "// another template: a copy\n");
	kt_write_atomic(path, text.data, text.len, &err);
	kt_tmpl *t2 = kt_tmpl_parse(path, NULL, &diags, &err);
	CHECK(t2 != NULL);
	if (!t2)
		return;
	setenv("KT_FAKE_LOG", log, 1);
	unlink(log);
	int64_t s1[1] = {4096}, s2[1] = {8192}, s3[1] = {1024};
	kt_tune_task tasks[3] = {{.p = {.tmpl = t, .shape = s1, .tc = &fake_tc}},
				 {.p = {.tmpl = t, .shape = s2, .tc = &fake_tc}},
				 {.p = {.tmpl = t2, .shape = s3, .tc = &fake_tc}}};
	kt_tune_opts o = fake_opts(NULL);
	o.strategy = "exhaustive";
	kt_tune_stats st = {0};
	o.stats = &st;
	CHECK_INT(kt_tune_batch(tasks, 3, &o, &err), 0);
	unsetenv("KT_FAKE_LOG");
	for (int i = 0; i < 3; i++) {
		CHECK_INT(tasks[i].rc, 0);
		CHECK_INT(tasks[i].out.nevals, 21);
		CHECK(tasks[i].out.best >= 0);
		kt_tune_result_free(&tasks[i].out);
	}
	CHECK(st.reused > 0); /* shape 8192 measured variants compiled for 4096 (or the other way) */
	CHECK(st.compiled < 3 * 21); /* each of the first template's variants compiled once */
	/* The launches of the variants (n=4096, 8192, 1024) interleave: some shape is worked on
	 * again after another shape's work began. */
	kt_buf lines = {0};
	CHECK_INT(kt_read_file(log, &lines, &err), 0);
	int switches = 0;
	char last[64] = "";
	for (const char *l = kt_buf_str(&lines); *l;) {
		const char *nl = strchr(l, '\n');
		size_t n = nl ? (size_t)(nl - l) : strlen(l);
		const char *at = strstr(l, " n=");
		if (at && at < l + n && strncmp(l, "launch kt_scale", 15) == 0) {
			char cur[64];
			snprintf(cur, sizeof cur, "%.*s", (int)strcspn(at + 1, " \n"), at + 1);
			switches += last[0] && strcmp(cur, last) != 0;
			snprintf(last, sizeof last, "%s", cur);
		}
		l += n + (nl != NULL);
	}
	CHECK(switches >= 4); /* one pass per shape would switch twice */
	kt_buf_free(&lines);
	kt_buf_free(&text);
	kt_buf_free(&diags);
	kt_tmpl_free(t2);
}

/* Siblings: before a shape chooses, the three fastest configurations another shape of its
 * template found are evaluated there too.  Shape 4096 is seeded with the best (100 us on the fake
 * GPU) and two of 125 us and finds them at once; shape 8192's budget of four (the default and three
 * random picks) misses them, and evaluates all three after all, and chooses the best. */
static void test_siblings(const kt_tmpl *t)
{
	static const char *const top[3] = {"BLOCK=256,UNROLL=4,MODE=good", "BLOCK=256,UNROLL=2,MODE=good",
					   "BLOCK=64,UNROLL=4,MODE=good"};
	uint16_t seeds[3][3], *best = seeds[0];
	kt_err err = {0};
	for (int i = 0; i < 3; i++)
		CHECK_INT(kt_tmpl_parse_config(t, top[i], seeds[i], &err), 0);
	int64_t s1[1] = {4096}, s2[1] = {8192};
	kt_tune_task tasks[2] = {{.p = {.tmpl = t, .shape = s1, .tc = &fake_tc}, .seeds = seeds[0], .nseeds = 3},
				 {.p = {.tmpl = t, .shape = s2, .tc = &fake_tc}}};
	kt_tune_opts o = fake_opts(NULL);
	o.strategy = "random";
	o.budget = 4;
	kt_tune_stats st = {0};
	o.stats = &st;
	CHECK_INT(kt_tune_batch(tasks, 2, &o, &err), 0);
	const kt_tune_result *r = &tasks[1].out;
	CHECK_INT(tasks[1].rc, 0);
	CHECK_INT(r->nevals, 7); /* its budget, and the sibling's three fastest */
	for (size_t i = 0; i < 4 && i < r->nevals; i++) /* its own search found none of them */
		for (int j = 0; j < 3; j++)
			CHECK(memcmp(r->evals[i].cfg, seeds[j], sizeof seeds[j]) != 0);
	for (int j = 0; j < 3; j++)
		CHECK(find(t, r, top[j]) != NULL);
	CHECK(r->best >= 0 && !memcmp(r->evals[r->best].cfg, best, sizeof seeds[0]));
	CHECK_INT(st.sibling_evals, 3);
	CHECK(tasks[0].out.best >= 0 && !memcmp(tasks[0].out.evals[tasks[0].out.best].cfg, best, sizeof seeds[0]));
	for (int i = 0; i < 2; i++)
		kt_tune_result_free(&tasks[i].out);

	/* A user's configurations are compared as given: no sibling joins them. */
	kt_tune_task only[2] = {{.p = {.tmpl = t, .shape = s1, .tc = &fake_tc}, .only = best, .nonly = 1},
				{.p = {.tmpl = t, .shape = s2, .tc = &fake_tc}}};
	uint16_t def[3];
	kt_tmpl_parse_config(t, "BLOCK=128,UNROLL=1,MODE=good", def, &err);
	only[1].only = def;
	only[1].nonly = 1;
	st = (kt_tune_stats){0};
	CHECK_INT(kt_tune_batch(only, 2, &o, &err), 0);
	CHECK_INT(st.sibling_evals, 0);
	for (int i = 0; i < 2; i++)
		kt_tune_result_free(&only[i].out);
}

/* Warm start: the seeds are evaluated right after the default; what an earlier round measured
 * is not evaluated again; a converged search stops and says so. */
static void test_seeds_and_stop(const kt_tmpl *t)
{
	uint16_t best[3], cfg[3];
	kt_err err = {0};
	kt_tmpl_parse_config(t, "BLOCK=256,UNROLL=4,MODE=good", best, &err);
	int64_t shape[1] = {4096};
	kt_tune_task task = {.p = {.tmpl = t, .shape = shape, .tc = &fake_tc}, .seeds = best, .nseeds = 1};
	kt_tune_opts o = fake_opts(NULL);
	o.strategy = "bestfirst";
	o.budget = 21;
	o.patience = 4;
	o.batch = 2;
	o.jobs = 1;
	CHECK_INT(kt_tune_batch(&task, 1, &o, &err), 0);
	kt_tune_result *r = &task.out;
	/* The seed is asked in the start, right after the default (unit.search), and measured as soon
	 * as its unit compiled: the other slot's batches may come and go before that, their results
	 * told after the seed's. */
	CHECK(find(t, r, "BLOCK=256,UNROLL=4,MODE=good") != NULL);
	CHECK(r->nevals < 21);                                                  /* it stopped early */
	CHECK(strncmp(r->stop, "converged: no gain beyond the noise", 35) == 0);
	CHECK(r->best >= 0 && !memcmp(r->evals[r->best].cfg, best, sizeof best));
	/* Known: the seed's result told, not evaluated again. */
	kt_tmpl_parse_config(t, "BLOCK=128,UNROLL=1,MODE=good", cfg, &err);
	double known_us[2] = {100.0, 150.0};
	uint16_t known[6];
	memcpy(known, best, sizeof best);
	memcpy(known + 3, cfg, sizeof cfg);
	kt_tune_task t2 = {.p = {.tmpl = t, .shape = shape, .tc = &fake_tc}, .known = known, .known_us = known_us, .nknown = 2};
	o.patience = -1;
	o.strategy = "exhaustive";
	o.budget = 0;
	CHECK_INT(kt_tune_batch(&t2, 1, &o, &err), 0);
	CHECK(find(t, &t2.out, "BLOCK=256,UNROLL=4,MODE=good") == NULL);
	CHECK_INT(t2.out.nevals, 20); /* 21 but the known best; the default is measured as the reference */
	kt_tune_result_free(r);
	kt_tune_result_free(&t2.out);
}

/* A template whose default (the reference) builds and whose every other configuration does not:
 * like a round whose new parameter does not build at a shape. */
static const char nobuild_src[] =
	"// @kt kernel    scale\n"
	"// @kt shape     n\n"
	"// @kt param     BLOCK  in 32, 64, 128, 256, 512 default 128\n"
	"// @kt param     UNROLL in 1, 2, 4, 8 default 1\n"
	"// @kt param     X      in 0, 1, 2, 3, 4, 5, 6, 7 default 0\n"
	"// @kt require   n % UNROLL == 0\n"
	"// @kt arg       out float[n] out\n"
	"// @kt arg       x   float[n] in fill uniform(-2, 2)\n"
	"// @kt arg       n   int = n\n"
	"// @kt grid      cdiv(n, BLOCK * UNROLL)\n"
	"// @kt block     BLOCK\n"
	"// @kt bytes     8 * n\n"
	"// @kt tolerance 1e-6\n"
	"//\n"
	"// fake-compile-error: BLOCK=32\n"
	"// fake-compile-error: BLOCK=64\n"
	"// fake-compile-error: BLOCK=256\n"
	"// fake-compile-error: BLOCK=512\n"
	"// fake-compile-error: UNROLL=2\n"
	"// fake-compile-error: UNROLL=4\n"
	"// fake-compile-error: UNROLL=8\n"
	"// fake-compile-error: X=1\n"
	"// fake-compile-error: X=2\n"
	"// fake-compile-error: X=3\n"
	"// fake-compile-error: X=4\n"
	"// fake-compile-error: X=5\n"
	"// fake-compile-error: X=6\n"
	"// fake-compile-error: X=7\n"
	"#ifndef BLOCK\n#define BLOCK 128\n#endif\n"
	"#ifndef UNROLL\n#define UNROLL 1\n#endif\n"
	"static __device__ const int scale_knobs[] = {UNROLL, X}; /* the fake's: each is a variant */\n"
	"__global__ void scale(float *out, const float *x, int n)\n"
	"{\n"
	"\tint i = blockIdx.x * BLOCK + threadIdx.x;\n"
	"\tif (i < n)\n"
	"\t\tout[i] = 2.0f * x[i];\n"
	"}\n";

/* A template whose STAGES=1 hangs at every BLOCK (the fake GPU's sync never returns). */
static const char stall_src[] =
	"// @kt kernel    scale\n"
	"// @kt shape     n\n"
	"// @kt param     STAGES in 1, 2, 4 default 2\n"
	"// @kt param     BLOCK  in 64, 128, 256, 512 default 128\n"
	"// @kt arg       out float[n] out\n"
	"// @kt arg       x   float[n] in fill uniform(-2, 2)\n"
	"// @kt arg       n   int = n\n"
	"// @kt grid      cdiv(n, BLOCK)\n"
	"// @kt block     BLOCK\n"
	"// @kt bytes     8 * n\n"
	"// @kt tolerance 1e-6\n"
	"//\n"
	"// fake-rule: STAGES=1 hang\n"
	"#ifndef BLOCK\n#define BLOCK 128\n#endif\n"
	"static __device__ const int scale_stages = STAGES; /* the fake's knob: each STAGES is a variant */\n"
	"__global__ void scale(float *out, const float *x, int n)\n"
	"{\n"
	"\tint i = blockIdx.x * BLOCK + threadIdx.x;\n"
	"\tif (i < n)\n"
	"\t\tout[i] = 2.0f * x[i];\n"
	"}\n";

/* After KT_HANGS_MIN timeouts that share STAGES=1, the other STAGES=1 configurations are not run
 * (hangs.h): two watchdogs, not four.  A recorded space (run_all) runs all four. */
static void test_hangs_held(const char *dir)
{
	kt_err err = {0};
	kt_tmpl *t = write_template(dir, "stall.cu.tmpl", stall_src, sizeof stall_src - 1);
	if (!t)
		return;
	int64_t shape[1] = {4096};
	for (int run_all = 0; run_all < 2; run_all++) {
		kt_tune_opts o = fake_opts(NULL);
		o.strategy = "exhaustive"; /* space order: the four STAGES=1 first */
		o.run_all = run_all;
		kt_tune_result r = {0};
		CHECK_INT(tune(t, shape, &o, &r, &err), 0);
		CHECK_INT((long)r.nevals, 12);
		size_t counts[KT_NSTATUS] = {0};
		for (size_t i = 0; i < r.nevals; i++) {
			counts[r.evals[i].status]++;
			if (r.evals[i].status == KT_NOT_RUN)
				CHECK(r.evals[i].msg && strstr(r.evals[i].msg, "all hold STAGES=1,") && !strstr(r.evals[i].msg, "BLOCK="));
			if (r.evals[i].status != KT_OK)
				CHECK_INT(r.evals[i].cfg[0], 0); /* STAGES=1 */
		}
		CHECK_INT((long)counts[KT_OK], 8);
		CHECK_INT((long)counts[KT_TIMED_OUT], run_all ? 4 : KT_HANGS_MIN);
		CHECK_INT((long)counts[KT_NOT_RUN], run_all ? 0 : 4 - KT_HANGS_MIN);
		CHECK(r.best >= 0 && r.evals[r.best].status == KT_OK);
		kt_tune_result_free(&r);
	}
	kt_tmpl_free(t);
}

/* A template whose configurations tie: A=1 and A=3 take 50 us at every B (the fake's 40 us, plus
 * 25% for the one fake-best line each misses), A=2 and A=4 60 us.  Of the eight ties, A=1,B=64
 * and A=3,B=64 are one step from the default; A=1 comes first in value order. */
static const char ties_src[] =
	"// @kt kernel    scale\n"
	"// @kt shape     n\n"
	"// @kt param     A in 1, 2, 3, 4 default 2\n"
	"// @kt param     B in 32, 64, 128, 256 default 64\n"
	"// @kt arg       out float[n] out\n"
	"// @kt arg       x   float[n] in fill uniform(-2, 2)\n"
	"// @kt arg       n   int = n\n"
	"// @kt grid      cdiv(n, B)\n"
	"// @kt block     B\n"
	"// @kt bytes     8 * n\n"
	"// @kt tolerance 1e-6\n"
	"//\n"
	"// fake-best: A=1\n"
	"// fake-best: A=3\n"
	"// fake-time-us: 40\n"
	"#ifndef B\n#define B 64\n#endif\n"
	"static __device__ const int scale_a = A; /* the fake's knob: each A is a variant */\n"
	"__global__ void scale(float *out, const float *x, int n)\n"
	"{\n"
	"\tint i = blockIdx.x * B + threadIdx.x;\n"
	"\tif (i < n)\n"
	"\t\tout[i] = 2.0f * x[i];\n"
	"}\n";

/* The tie rule picks the same configuration whatever the order of evaluation: the whole space
 * in space order, in two random orders and best-first; the record's tie set is the eight. */
static void test_ties(const char *dir)
{
	kt_err err = {0};
	kt_tmpl *t = write_template(dir, "ties2.cu.tmpl", ties_src, sizeof ties_src - 1);
	if (!t)
		return;
	static const struct {
		const char *strategy;
		uint64_t seed;
	} runs[] = {{"exhaustive", 1}, {"random", 2}, {"random", 3}, {"bestfirst", 4}};
	for (size_t k = 0; k < sizeof runs / sizeof runs[0]; k++) {
		kt_tune_opts o = fake_opts(NULL);
		o.strategy = runs[k].strategy;
		o.seed = runs[k].seed;
		o.patience = -1; /* every configuration, in the strategy's order */
		int64_t shape[1] = {4096};
		kt_tune_result r;
		CHECK_INT(tune(t, shape, &o, &r, &err), 0);
		CHECK_INT(r.nevals, 16);
		kt_buf cfg = {0};
		if (r.best >= 0)
			kt_tmpl_format_config(t, r.evals[r.best].cfg, &cfg);
		CHECK_STR(kt_buf_str(&cfg), "A=1,B=64");
		size_t ties = 0;
		for (size_t i = 0; i < r.nretimed; i++)
			ties += r.retimed[i].tie;
		CHECK_INT(ties, 8);
		kt_buf_free(&cfg);
		kt_tune_result_free(&r);
	}
	kt_tmpl_free(t);
}

/* give_up: a task whose configurations all fail stops asking once that many failed in a row, the
 * default (the reference, which passes) first; what was compiling then is still evaluated (the
 * pipeline drains: at most two compile batches).  Without it the task spends its budget. */
static void test_give_up(const char *dir)
{
	kt_err err = {0};
	kt_tmpl *t = write_template(dir, "nobuild.cu.tmpl", nobuild_src, sizeof nobuild_src - 1);
	if (!t)
		return;
	int64_t shape[1] = {4096};
	enum { BUDGET = 28, BATCH = 4, GIVE_UP = 8 };
	static const char *const strategies[] = {"exhaustive", "bestfirst"};
	for (int k = 0; k < 2; k++) {
		kt_tune_task task = {.p = {.tmpl = t, .shape = shape, .tc = &fake_tc}, .give_up = GIVE_UP};
		kt_tune_opts o = fake_opts(NULL);
		o.strategy = strategies[k];
		o.patience = -1;
		o.budget = BUDGET;
		o.batch = BATCH;
		o.pack = 1; /* each variant alone: no failed pack compiled again unit by unit */
		CHECK_INT(kt_tune_batch(&task, 1, &o, &err), 0);
		kt_tune_result *r = &task.out;
		CHECK_INT(task.rc, 0);
		int streak = 0;
		CHECK(sscanf(r->stop, "gave up: the last %d evaluations all failed", &streak) == 1);
		CHECK(streak >= GIVE_UP && (size_t)streak <= r->nevals - 1);
		CHECK(r->nevals >= 1 + GIVE_UP && r->nevals <= 1 + GIVE_UP + 2 * BATCH);
		CHECK(r->best >= 0 && r->best == (long)(find(t, r, "BLOCK=128,UNROLL=1,X=0") - r->evals));
		for (size_t i = 0; i < r->nevals; i++)
			CHECK(r->evals[i].status == KT_COMPILE_FAILED || (long)i == r->best);
		kt_tune_result_free(r);
	}
	kt_tune_task task = {.p = {.tmpl = t, .shape = shape, .tc = &fake_tc}};
	kt_tune_opts o = fake_opts(NULL);
	o.strategy = "exhaustive";
	o.budget = BUDGET;
	o.batch = BATCH;
	o.pack = 1;
	CHECK_INT(kt_tune_batch(&task, 1, &o, &err), 0);
	CHECK_INT(task.out.nevals, 1 + BUDGET); /* the first 28 in space order have BLOCK=32, then the default */
	CHECK_STR(task.out.stop, "the budget is spent");
	kt_tune_result_free(&task.out);
	kt_tmpl_free(t);
}

/* The default patience: 16, or 3 per parameter where that is more (softmax has nine). */
static void test_patience(const kt_tmpl *t)
{
	CHECK_INT(t->nparams, 3);
	CHECK_INT(kt_tune_patience(t), KT_TUNE_PATIENCE);
	kt_buf diags = {0};
	kt_err err = {0};
	kt_tmpl *sm = kt_tmpl_parse(KT_TEMPLATES_DIR "/softmax.cu.tmpl", NULL, &diags, &err);
	CHECK(sm != NULL);
	if (sm) {
		CHECK_INT(sm->nparams, 9);
		CHECK_INT(kt_tune_patience(sm), 27);
	}
	kt_tmpl_free(sm);
	kt_buf_free(&diags);
}

/* A long kernel bound by arithmetic (its roofline's flops term the larger) on a GPU whose clock
 * a sustained load lowers (fake-boost-us: its launches take 80% of their time until the GPU has
 * been busy 200 ms).  The sweep meets it at the boost clock; the rivals run untimed before their
 * re-timing (RETIME_WARM_FACTOR), so the choice is made, and the rivals timed, at the clock of
 * load; the choice's time (a record's) is that one.  Without that warm-up the whole re-timing
 * fits in the boost (about 80 ms of the fake clock), and the rivals' times are 800 us. */
static const char boost_src[] = "// @kt kernel    scale\n"
				"// @kt shape     n\n"
				"// @kt param     BLOCK  in 128, 256 default 128\n"
				"// @kt arg       out float[n] out\n"
				"// @kt arg       x   float[n] in fill uniform(-2, 2)\n"
				"// @kt arg       n   int = n\n"
				"// @kt grid      cdiv(n, BLOCK)\n"
				"// @kt block     BLOCK\n"
				"// @kt bytes     8 * n\n"
				"// @kt flops     1024 * n\n"
				"// @kt tolerance 1e-6\n"
				"// fake-time-us: 1000\n"
				"// fake-boost-us: 200000\n"
				"#ifndef BLOCK\n#define BLOCK 128\n#endif\n"
				"__global__ void scale(float *out, const float *x, int n)\n"
				"{\n"
				"\tint i = blockIdx.x * BLOCK + threadIdx.x;\n"
				"\tif (i < n)\n"
				"\t\tout[i] = 2.0f * x[i];\n"
				"}\n";

static void test_boost(const char *dir)
{
	char work[600];
	kt_err err = {0};
	kt_tmpl *t = write_template(dir, "boost.cu.tmpl", boost_src, sizeof boost_src - 1);
	if (!t)
		return;
	snprintf(work, sizeof work, "%s/boost-work", dir);
	kt_tune_opts o = fake_opts(work);
	o.strategy = "exhaustive";
	int64_t shape[1] = {4096};
	kt_tune_result r;
	CHECK_INT(tune(t, shape, &o, &r, &err), 0);
	CHECK_INT(r.nevals, 2);
	CHECK(r.best >= 0 && r.evals[r.best].median_us < 850); /* the sweep's time: the boost clock */
	CHECK_INT(r.nretimed, 2);
	for (size_t i = 0; i < r.nretimed; i++)
		CHECK(r.retimed[i].us > 990 && r.retimed[i].us < 1010);
	const double us = kt_result_chosen_us(&r); /* the record's time: the one under load */
	CHECK(us > 990 && us < 1010);
	kt_tune_result_free(&r);
	kt_tmpl_free(t);
}

/* The choice between BLOCK=256 and the default, 0.8% slower, on three clocks (fake-drift):
 * - steady: the intervals are nil, and BLOCK=256 is chosen outright;
 * - wandering by 3%, alike for both: each one's interval is wide, but their difference block by
 *   block is not, and BLOCK=256 is still chosen (with the intervals alone the rule had taken the
 *   default from a tie);
 * - wandering by 3%, BLOCK=256's wandering 0.8 radians ahead: the difference itself wanders, the
 *   rule takes the default from a tie on its interval alone, and the re-timing takes twice the
 *   blocks before it does.  (The fake clock is exact: the phase was chosen so that after five
 *   blocks the default, nearest, is not the fastest; 1.6-4.8 radians make it the fastest.) */
static void test_unsure_tie(const char *dir)
{
	static const char src[] = "// @kt kernel    scale\n"
				  "// @kt shape     n\n"
				  "// @kt param     BLOCK  in 128, 256 default 128\n" SCALE_ANNOTATIONS
				  "// fake-time-us: 100\n"
				  "// fake-rule-us: BLOCK=256 99.2\n"
				  "%s" SCALE_CODE;
	static const struct {
		const char *clock, *chosen;
		int more;
	} runs[] = {{"", "BLOCK=256", 0},
		    {"// fake-drift: 0.03\n", "BLOCK=256", 0},
		    {"// fake-drift: 0.03\n// fake-drift-phase: BLOCK=256 0.8\n", "BLOCK=128", 1}};
	for (size_t k = 0; k < sizeof runs / sizeof runs[0]; k++) {
		char text[sizeof src + 96], name[32];
		int len = snprintf(text, sizeof text, src, runs[k].clock);
		snprintf(name, sizeof name, "unsure%zu.cu.tmpl", k);
		kt_tmpl *t = write_template(dir, name, text, (size_t)len);
		if (!t)
			continue;
		kt_err err = {0};
		kt_tune_stats st = {0};
		kt_tune_opts o = fake_opts(NULL);
		o.strategy = "exhaustive";
		o.stats = &st;
		int64_t shape[1] = {4096};
		kt_tune_result r;
		CHECK_INT(tune(t, shape, &o, &r, &err), 0);
		CHECK_INT((int)r.nretimed, 2);
		CHECK_INT(st.retime_more, runs[k].more);
		kt_buf cfg = {0};
		if (r.best >= 0)
			kt_tmpl_format_config(t, r.evals[r.best].cfg, &cfg);
		CHECK_STR(kt_buf_str(&cfg), runs[k].chosen);
		kt_buf_free(&cfg);
		kt_tune_result_free(&r);
		kt_tmpl_free(t);
	}
}

int main(void)
{
	char *dir = kt_temp_dir(getenv("TMPDIR"), "kt-test-tune", NULL);
	if (!dir)
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
		test_batch(t, dir);
		test_seeds_and_stop(t);
		test_give_up(dir);
		test_hangs_held(dir);
		test_ties(dir);
		test_boost(dir);
		test_unsure_tie(dir);
		test_patience(t);
		test_siblings(t);
	}
	test_progress();
	kt_tmpl_free(t);
	kt_remove_tree(dir);
	free(dir);
	return check_done();
}
