/* test_tune.c - the whole tuning loop on the fake GPU with the fake compiler
 * (tests/unit/fake/): statuses of planted failures, the chosen winner, budgets, the robust
 * configuration across shapes, the ceilings kept in the cache directory, variants compiled once
 * for two shapes, a task that gives up after failures in a row, the reference kernel compiled in
 * one unit only, the tie rule whatever the order of evaluation, the choice made on nvcc's variants
 * where NVRTC stood in for it, and the first batch sized by what a variant costs nvcc. */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "emit.h"
#include "hangs.h"
#include "trace.h"
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

static kt_ceilings kept_ceilings;
static const kt_toolchain fake_tc = {KT_FAKE_DIR "/fake_nvcc.py", "", "", ""};

static kt_tune_opts fake_opts(const char *workdir)
{
	kt_tune_opts o = {0};
	o.backend = "fake";
	o.exe = KT_EXE;
	o.timeout_s = 1.0;
	o.jobs = 2;
	o.batch = 8;
	o.seed = 7;
	o.workdir = workdir;
	o.ceilings = &kept_ceilings;
	o.near_floor = -1;
	return o;
}

/* Writes a template's text src[0..len) to dir/name and parses it: NULL (a failed check, the
 * diagnostics on stderr) when it does not parse. */
static kt_tmpl *write_template(const char *dir, const char *name, const char *src, size_t len)
{
	char path[600];
	snprintf(path, sizeof path, "%s/%s", dir, name);
	kt_buf diags = {0};
	kt_err err = {0};
	CHECK_INT(kt_write_atomic(path, src, len, &err), 0);
	kt_tmpl *t = kt_tmpl_parse(path, NULL, &diags, &err);
	CHECK(t != NULL);
	if (!t)
		fprintf(stderr, "%s\n%s\n", kt_buf_str(&diags), err.msg);
	kt_buf_free(&diags);
	return t;
}

static int tune(const kt_tmpl *t, const int64_t *shape, const kt_tune_opts *o, kt_tune_result *r, kt_err *err)
{
	kt_problem p = {.tmpl = t, .shape = shape, .target = NULL, .tc = &fake_tc};
	return kt_tune(&p, o, r, err);
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

/* Siblings: before a shape chooses, the best that another shape of its template found is
 * evaluated there too.  Shape 4096 is seeded with the best and finds it at once; shape 8192's
 * budget of two (the default and one random pick) misses it, and chooses it after all. */
static void test_siblings(const kt_tmpl *t)
{
	uint16_t best[3];
	kt_err err = {0};
	kt_tmpl_parse_config(t, "BLOCK=256,UNROLL=4,MODE=good", best, &err);
	int64_t s1[1] = {4096}, s2[1] = {8192};
	kt_tune_task tasks[2] = {{.p = {.tmpl = t, .shape = s1, .tc = &fake_tc}, .seeds = best, .nseeds = 1},
				 {.p = {.tmpl = t, .shape = s2, .tc = &fake_tc}}};
	kt_tune_opts o = fake_opts(NULL);
	o.strategy = "random";
	o.budget = 2;
	kt_tune_stats st = {0};
	o.stats = &st;
	CHECK_INT(kt_tune_batch(tasks, 2, &o, &err), 0);
	const kt_tune_result *r = &tasks[1].out;
	CHECK_INT(tasks[1].rc, 0);
	CHECK_INT(r->nevals, 3); /* its budget, and the sibling's best */
	for (size_t i = 0; i + 1 < r->nevals; i++) /* its own search did not find it */
		CHECK(memcmp(r->evals[i].cfg, best, sizeof best) != 0);
	CHECK(r->best >= 0 && !memcmp(r->evals[r->best].cfg, best, sizeof best));
	CHECK(st.sibling_evals >= 1);
	CHECK(tasks[0].out.best >= 0 && !memcmp(tasks[0].out.evals[tasks[0].out.best].cfg, best, sizeof best));
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
	/* The measured ones in order: the default, then the seed (a random start point beyond the
	 * device's limits is recorded before anything is measured). */
	long measured[2] = {-1, -1};
	for (size_t i = 0, m = 0; i < r->nevals && m < 2; i++)
		if (r->evals[i].status == KT_OK)
			measured[m++] = (long)i;
	CHECK(measured[1] >= 0 && !memcmp(r->evals[measured[1]].cfg, best, sizeof best));
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

/* Two shapes of one template in one batch: each variant is compiled once, for whichever shape
 * asked first, and measured at both.  Of the 21 feasible configurations (the same at both
 * shapes) 18 compile (BLOCK=2048 exceeds the device before compiling); with the check kernels,
 * 19 units. */
static void test_compiled_once(const kt_tmpl *t)
{
	int64_t s1[1] = {4096}, s2[1] = {8192};
	kt_tune_task tasks[2] = {{.p = {.tmpl = t, .shape = s1, .tc = &fake_tc}},
				 {.p = {.tmpl = t, .shape = s2, .tc = &fake_tc}}};
	kt_tune_opts o = fake_opts(NULL);
	o.strategy = "exhaustive";
	kt_tune_stats st = {0};
	o.stats = &st;
	kt_err err = {0};
	CHECK_INT(kt_tune_batch(tasks, 2, &o, &err), 0);
	for (int i = 0; i < 2; i++) {
		CHECK_INT(tasks[i].rc, 0);
		CHECK_INT(tasks[i].out.nevals, 21);
		kt_tune_result_free(&tasks[i].out);
	}
	CHECK_INT(st.compiled, 18 + 1);
	CHECK_INT(st.reused, 18);
	/* Alone, one shape compiles the same units and reuses none. */
	kt_tune_stats one = {0};
	o.stats = &one;
	CHECK_INT(kt_tune_batch(tasks, 1, &o, &err), 0);
	kt_tune_result_free(&tasks[0].out);
	CHECK_INT(one.compiled, st.compiled);
	CHECK_INT(one.reused, 0);
}

/* A template whose G only sizes the grid (the kernel strides over the rest): the code never
 * names it, so its values share a variant. */
static const char grid_src[] =
	"// @kt kernel    scale\n"
	"// @kt shape     n\n"
	"// @kt param     BLOCK in 64, 128, 256 default 128\n"
	"// @kt param     G     in 1, 2, 4 default 1\n"
	"// @kt arg       out float[n] out\n"
	"// @kt arg       x   float[n] in fill uniform(-2, 2)\n"
	"// @kt arg       n   int = n\n"
	"// @kt grid      cdiv(n, BLOCK * G)\n"
	"// @kt block     BLOCK\n"
	"// @kt bytes     8 * n\n"
	"// @kt tolerance 1e-6\n"
	"#ifndef G\n#define G 1\n#endif\n"
	"__global__ void scale(float *out, const float *x, int n)\n"
	"{\n"
	"\tfor (int i = blockIdx.x * BLOCK + threadIdx.x; i < n; i += gridDim.x * BLOCK)\n"
	"\t\tout[i] = 2.0f * x[i];\n"
	"}\n";

/* Configurations that differ only in what the launch reads are compiled once and each launched
 * its own way: 9 evaluated from 3 variants (and the check kernels' unit), each G at its grid. */
static void test_launch_only(const char *dir)
{
	char log[600];
	kt_err err = {0};
	kt_tmpl *t = write_template(dir, "grid.cu.tmpl", grid_src, sizeof grid_src - 1);
	if (!t)
		return;
	snprintf(log, sizeof log, "%s/grid-launches.log", dir);
	setenv("KT_FAKE_LOG", log, 1);
	int64_t shape[1] = {4096};
	kt_tune_task task = {.p = {.tmpl = t, .shape = shape, .tc = &fake_tc}};
	kt_tune_opts o = fake_opts(NULL);
	o.strategy = "exhaustive";
	kt_tune_stats st = {0};
	o.stats = &st;
	CHECK_INT(kt_tune_batch(&task, 1, &o, &err), 0);
	unsetenv("KT_FAKE_LOG");
	CHECK_INT(task.out.nevals, 9);
	for (size_t i = 0; i < task.out.nevals; i++)
		CHECK_INT(task.out.evals[i].status, KT_OK);
	CHECK_INT(st.compiled, 3 + 1);
	CHECK_INT(st.relaunched, 6);
	/* BLOCK=64's variant (the one of G=1) ran at G = 1, 2, 4: in 64, 32 and 16 blocks. */
	kt_buf text = {0};
	CHECK_INT(kt_read_file(log, &text, &err), 0);
	char sym[150], want[200];
	kt_emit_symbol(t, t->kernel, (const uint16_t[]){0, 0}, sym, sizeof sym);
	snprintf(want, sizeof want, "launch %s_kernel ", sym);
	int grids = 0; /* bit g: a launch in 64 >> g blocks */
	for (const char *p = strstr(kt_buf_str(&text), want); p; p = strstr(p + 1, want)) {
		long long blocks = 0;
		const char *gp = strstr(p, " grid=");
		if (gp && sscanf(gp, " grid=%lld", &blocks) == 1)
			grids |= blocks == 64 ? 1 : blocks == 32 ? 2 : blocks == 16 ? 4 : 8;
	}
	CHECK_INT(grids, 7);
	kt_buf_free(&text);
	kt_tune_result_free(&task.out);
	kt_tmpl_free(t);
}

/* Eighty configurations of one variant (G only sets the grid) are ready at once: one turn of the
 * loop measures MEASURE_TURN (32) of them at most, so that the compile slots are refilled between
 * (the trace's measuring spans say how many each turn took). */
static void test_measure_turns(const char *dir)
{
	char src[2048], trace[600];
	int n = snprintf(src, sizeof src, "// @kt kernel    scale\n// @kt shape     n\n// @kt param     G in 1");
	for (int g = 2; g <= 80; g++)
		n += snprintf(src + n, sizeof src - (size_t)n, ", %d", g);
	snprintf(src + n, sizeof src - (size_t)n, "%s",
		 " default 1\n"
		 "// @kt arg       out float[n] out\n"
		 "// @kt arg       x   float[n] in fill uniform(-2, 2)\n"
		 "// @kt arg       n   int = n\n"
		 "// @kt grid      cdiv(n, 64 * G)\n"
		 "// @kt block     64\n"
		 "// @kt bytes     8 * n\n"
		 "// @kt tolerance 1e-6\n"
		 "#ifndef G\n#define G 1\n#endif\n"
		 "__global__ void scale(float *out, const float *x, int n)\n"
		 "{\n"
		 "\tfor (int i = blockIdx.x * 64 + threadIdx.x; i < n; i += gridDim.x * 64)\n"
		 "\t\tout[i] = 2.0f * x[i];\n"
		 "}\n");
	kt_err err = {0};
	kt_tmpl *t = write_template(dir, "turns.cu.tmpl", src, strlen(src));
	if (!t)
		return;
	int64_t shape[1] = {1 << 20};
	kt_tune_task task = {.p = {.tmpl = t, .shape = shape, .tc = &fake_tc}};
	kt_tune_opts o = fake_opts(NULL);
	o.strategy = "exhaustive";
	o.batch = 128; /* every configuration asked at once */
	o.trace = kt_trace_new(0);
	CHECK_INT(kt_tune_batch(&task, 1, &o, &err), 0);
	CHECK_INT(task.out.nevals, 80);
	snprintf(trace, sizeof trace, "%s/turns-trace.json", dir);
	kt_buf text = {0};
	CHECK_INT(kt_trace_write(o.trace, trace, &err), 0);
	CHECK_INT(kt_read_file(trace, &text, &err), 0);
	int turns = 0, most = 0, all = 0, k;
	for (const char *p = strstr(kt_buf_str(&text), "\"candidates\":"); p; p = strstr(p + 1, "\"candidates\":"))
		if (sscanf(p, "\"candidates\":%d", &k) == 1)
			turns++, all += k, most = k > most ? k : most;
	CHECK(turns >= 2 && most <= 32 && most > 0);
	CHECK(all >= 80);
	kt_buf_free(&text);
	kt_trace_free(o.trace);
	kt_tune_result_free(&task.out);
	kt_tmpl_free(t);
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

/* A template with a reference kernel whose default is infeasible at the shape (U=3 does not
 * divide it): the reference runs from a unit of its own, and it is the only unit that compiles
 * the reference (the others include the copy without it, kt_emit_unreferenced).  `%s` is the
 * kernel's body: one that reads U, or one that strides (U then sizes only the grid, and the
 * default's variant is compiled for BLOCK=64,U=1 and 2: the reference runs from it). */
static const char refonce_fmt[] =
	"// @kt kernel    scale\n"
	"// @kt reference scale_naive grid n block 1\n"
	"// @kt shape     n\n"
	"// @kt param     BLOCK in 32, 64, 128 default 64\n"
	"// @kt param     U     in 1, 2, 3 default 3\n"
	"// @kt require   n %% U == 0\n"
	"// @kt arg       out float[n] out\n"
	"// @kt arg       x   float[n] in fill uniform(-2, 2)\n"
	"// @kt arg       n   int = n\n"
	"// @kt grid      cdiv(n, BLOCK * U)\n"
	"// @kt block     BLOCK\n"
	"// @kt bytes     8 * n\n"
	"// @kt tolerance 1e-6\n"
	"#ifndef BLOCK\n#define BLOCK 64\n#endif\n"
	"__global__ void scale(float *out, const float *x, int n)\n"
	"{\n"
	"%s"
	"}\n"
	"extern \"C\" __global__ void scale_naive(float *out, const float *x, int n)\n"
	"{\n"
	"\tfor (int i = 0; i < n; i++)\n"
	"\t\tout[i] = 2.0f * x[i];\n"
	"}\n";

static void reference_once(const char *dir, const char *body, int own_unit)
{
	char work[600], name[64];
	kt_err err = {0};
	kt_buf src = {0};
	kt_buf_printf(&src, refonce_fmt, body);
	snprintf(name, sizeof name, "refonce%d.cu.tmpl", own_unit);
	kt_tmpl *t = write_template(dir, name, src.data, src.len);
	kt_buf_free(&src);
	snprintf(work, sizeof work, "%s/refonce%d-work", dir, own_unit);
	if (!t)
		return;
	kt_tune_opts o = fake_opts(work);
	o.strategy = "exhaustive";
	int64_t shape[1] = {4096};
	kt_tune_result r;
	CHECK_INT(tune(t, shape, &o, &r, &err), 0);
	CHECK_INT(r.nevals, 6); /* BLOCK x U=1,2 */
	CHECK(r.best >= 0 && r.reference_us > 0);
	/* The fake compiler's cubins are the compiled text: one of them defines the reference. */
	DIR *d = opendir(work);
	struct dirent *e;
	int with_ref = 0, cubins = 0, own = 0;
	while (d && (e = readdir(d)) != NULL) {
		size_t n = strlen(e->d_name);
		if (n < 6 || strcmp(e->d_name + n - 6, ".cubin"))
			continue;
		own += n > 10 && !strcmp(e->d_name + n - 10, "_ref.cubin");
		char cubin[1200];
		kt_buf text = {0};
		snprintf(cubin, sizeof cubin, "%s/%s", work, e->d_name);
		cubins++;
		if (kt_read_file(cubin, &text, &err) == 0 && strstr(kt_buf_str(&text), "_reference("))
			with_ref++;
		kt_buf_free(&text);
	}
	if (d)
		closedir(d);
	CHECK(cubins >= 2);
	CHECK_INT(with_ref, 1);
	CHECK_INT(own, own_unit);
	kt_tune_result_free(&r);
	kt_tmpl_free(t);
}

static void test_reference_once(const char *dir)
{
	static const char *const bodies[] = {
		"\tint base = (blockIdx.x * BLOCK + threadIdx.x) * U;\n"
		"\tfor (int j = 0; j < U; j++)\n"
		"\t\tif (base + j < n)\n"
		"\t\t\tout[base + j] = 2.0f * x[base + j];\n",
		"\tfor (int i = blockIdx.x * BLOCK + threadIdx.x; i < n; i += gridDim.x * BLOCK)\n"
		"\t\tout[i] = 2.0f * x[i];\n",
	};
	for (int k = 0; k < 2; k++)
		reference_once(dir, bodies[k], k == 0);
}

/* tune.c's first batch for 8 compile jobs and a batch of 128 (a quarter: 32) over a space of
 * space configurations, from the reference unit's nvcc time unit_s: what 8 jobs compile in 2 s
 * with two batches in flight, at least one variant a job. */
static int first_size_at(double unit_s, int space)
{
	double each = 2.0 / (2 * unit_s);
	int n = 8 * (each < 1 ? 1 : (int)each);
	n = n < 32 ? n : 32;
	return n < space ? n : space;
}

/* The searches' first batch follows what the template costs nvcc, measured on the reference's
 * unit: with a default that takes the fake compiler 2.5 s, a compile job gets one variant (8
 * with 8 jobs, each task asking at least 4), where a cheap template fills a quarter batch (32,
 * here the whole space of 21) when its unit takes under a third of a second.  The cheap unit's
 * time is the fake compiler's start, which a loaded machine stretches: the expected size is
 * computed from the time measured, not assumed.
 * Either way the first measurement waits for the references' units alone. */
static void test_first_batch(const char *dir)
{
	kt_buf text = {0}, diags = {0};
	kt_err err = {0};
	CHECK_INT(kt_read_file(KT_FAKE_DIR "/scale.cu.tmpl", &text, &err), 0);
	int sizes[2] = {0, 0}, light_want = 21;
	for (int heavy = 0; heavy < 2; heavy++) {
		char path[600];
		snprintf(path, sizeof path, "%s/first%d.cu.tmpl", dir, heavy);
		kt_buf src = {0};
		kt_buf_add(&src, text.data, text.len);
		if (heavy)
			kt_buf_puts(&src, "// fake-compile-ms: BLOCK=128 UNROLL=1 MODE=good 2500\n");
		CHECK_INT(kt_write_atomic(path, src.data, src.len, &err), 0);
		kt_buf_free(&src);
		kt_tmpl *t = kt_tmpl_parse(path, NULL, &diags, &err);
		CHECK(t != NULL);
		if (!t)
			continue;
		kt_tune_stats st = {0};
		kt_tune_opts o = fake_opts(NULL);
		o.strategy = "random";
		o.jobs = 8;
		o.batch = 128;
		o.stats = &st;
		int64_t shape[1] = {4096};
		kt_tune_result r;
		CHECK_INT(tune(t, shape, &o, &r, &err), 0);
		sizes[heavy] = st.first_batch;
		CHECK(heavy ? st.unit_s >= 2.5 : st.unit_s > 0);
		if (!heavy && st.unit_s > 0)
			light_want = first_size_at(st.unit_s, 21);
		CHECK(st.first_measure_s > 0 && st.first_measure_s < r.seconds + st.setup_s + 1);
		kt_tune_result_free(&r);
		kt_tmpl_free(t);
	}
	CHECK_INT(sizes[0], light_want); /* unloaded: 21, the whole space, smaller than a quarter batch */
	CHECK_INT(sizes[1], 8);
	kt_buf_free(&text);
	kt_buf_free(&diags);
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

/* NVRTC standing in for nvcc (nvrtc.h): a stand-in `kt nvrtc` whose comparison finds other code,
 * and whose variants run in half the time of nvcc's.  The search measures them, and every rival
 * of the choice is measured again from nvcc's variant, so the choice and its times are nvcc's. */
static const char standin_src[] = "// @kt kernel    scale\n"
				  "// @kt shape     n\n"
				  "// @kt param     BLOCK  in 64, 128, 256 default 128\n"
				  "// @kt param     UNROLL in 1, 2, 4 default 1\n"
				  "// @kt require   n % UNROLL == 0\n"
				  "// @kt arg       out float[n] out\n"
				  "// @kt arg       x   float[n] in fill uniform(-2, 2)\n"
				  "// @kt arg       n   int = n\n"
				  "// @kt grid      cdiv(n, BLOCK * UNROLL)\n"
				  "// @kt block     BLOCK\n"
				  "// @kt bytes     8 * n\n"
				  "// @kt tolerance 1e-6\n"
				  "// fake-best: BLOCK=256\n"
				  "// fake-best: UNROLL=4\n"
				  "// fake-time-us: 100\n"
				  "#ifndef BLOCK\n#define BLOCK 128\n#endif\n#ifndef UNROLL\n#define UNROLL 1\n#endif\n"
				  "__global__ void scale(float *out, const float *x, int n)\n"
				  "{\n"
				  "\tint base = (blockIdx.x * BLOCK + threadIdx.x) * UNROLL;\n"
				  "\tfor (int j = 0; j < UNROLL; j++)\n"
				  "\t\tif (base + j < n)\n"
				  "\t\t\tout[base + j] = 2.0f * x[base + j];\n"
				  "}\n";

/* With wait set, the fastest configuration's compile lasts until an nvcc variant of a rival
 * has compiled (fake-compile-wait): the rivals as they stand are compiled by nvcc while the
 * search goes on (slot CONFIRM), not after its last result. */
static void stand_in(const char *dir, int wait)
{
	char work[600], src[sizeof standin_src + 128];
	kt_err err = {0};
	snprintf(src, sizeof src, "%s%s", standin_src, wait ? "// fake-compile-wait: BLOCK=256 UNROLL=4 *_nv*.cubin\n" : "");
	kt_tmpl *t = write_template(dir, wait ? "standin_wait.cu.tmpl" : "standin.cu.tmpl", src, strlen(src));
	if (!t)
		return;
	snprintf(work, sizeof work, "%s/standin-work%d", dir, wait);
	setenv("FAKE_NVRTC_VERDICT", "differs", 1);
	setenv("FAKE_NVRTC_SED", "s/fake-time-us: 100/fake-time-us: 50/", 1);
	kt_tune_opts o = fake_opts(work);
	o.strategy = "exhaustive";
	o.batch = 2; /* packs of one: where NVRTC stands in (larger packs go to nvcc) */
	o.nvrtc_kt = KT_FAKE_DIR "/fake_kt_nvrtc.sh";
	o.nvrtc_lib = "libnvrtc.so";
	kt_tune_stats st = {0};
	o.stats = &st;
	o.trace = kt_trace_new(0);
	int64_t shape[1] = {4096};
	kt_tune_result r;
	CHECK_INT(tune(t, shape, &o, &r, &err), 0);
	CHECK_INT(r.nevals, 9);
	/* The timeline shows them in their slot (trace.h). */
	char trace[700];
	kt_buf text = {0};
	snprintf(trace, sizeof trace, "%s/trace.json", work);
	CHECK_INT(kt_trace_write(o.trace, trace, &err), 0);
	CHECK_INT(kt_read_file(trace, &text, &err), 0);
	CHECK(!wait || strstr(kt_buf_str(&text), "\"name\":\"rivals' nvcc variants\"") != NULL);
	kt_buf_free(&text);
	kt_trace_free(o.trace);
	/* The first batches compare NVRTC with nvcc (nvcc's variants); the later ones stand in.  The
	 * rivals are confirmed; the stand-ins that racing left behind are not. */
	CHECK(st.stand_in > 0);
	CHECK(st.confirmed > 0 && st.confirmed <= st.stand_in);
	CHECK(st.confirm_early <= st.compiled);
	if (wait) /* else the fake compile waits out its bound, and nothing was compiled early */
		CHECK(st.confirm_early > 0);
	for (size_t i = 0; i < r.nretimed; i++)
		CHECK_INT(r.evals[r.retimed[i].eval].stand_in, 0);
	kt_buf cfg = {0};
	if (r.best >= 0)
		kt_tmpl_format_config(t, r.evals[r.best].cfg, &cfg);
	CHECK_STR(kt_buf_str(&cfg), "BLOCK=256,UNROLL=4");
	CHECK(r.best >= 0 && r.evals[r.best].median_us > 95); /* nvcc's 100 us, not NVRTC's 50 */
	CHECK(r.nretimed > 1);
	for (size_t i = 0; i < r.nretimed; i++)
		CHECK(r.retimed[i].us > 95);
	kt_buf_free(&cfg);
	kt_tune_result_free(&r);
	unsetenv("FAKE_NVRTC_VERDICT");
	unsetenv("FAKE_NVRTC_SED");
	kt_tmpl_free(t);
}

static void test_stand_in(const char *dir)
{
	stand_in(dir, 0);
	stand_in(dir, 1);
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
		test_compiled_once(t);
		test_launch_only(dir);
		test_give_up(dir);
		test_hangs_held(dir);
		test_ties(dir);
		test_reference_once(dir);
		test_stand_in(dir);
		test_measure_turns(dir);
		test_boost(dir);
		test_first_batch(dir);
		test_patience(t);
		test_siblings(t);
	}
	test_progress();
	kt_tmpl_free(t);
	kt_remove_tree(dir);
	free(dir);
	return check_done();
}
