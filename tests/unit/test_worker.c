/* test_worker.c - the worker protocol against the fake GPU: a passing variant, a wrong result,
 * an output left unwritten (the poison), a fault (the worker is restarted and the setup
 * replayed), a hang (the watchdog), the interleaved re-timing, the copy bandwidth, the fma and
 * tensor-core rates, and the pieces of the GPU seam the worker relies on (kernel names, element conversions).
 *
 * Nothing here depends on how fast the machine is: a job that is to answer has a watchdog far
 * beyond any wait (a loaded machine only makes it later), the hanging job alone a short one (it
 * never answers, so any limit is reached), and the test waits for events (a reply, a child's end)
 * rather than for a while. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "compile.h"
#include "gpu.h"
#include "gpu_fake.h"
#include "proc.h"
#include "worker.h"

static char *dir; /* under TMPDIR: ctest checks that nothing is left there (tests/tmp) */

/* The watchdog of a job that answers: a backstop for a broken worker, not a measure of speed. */
#define ANSWERS_S 120.0
/* The watchdog of the job that hangs: it never answers, so whatever the load, it is reached. */
#define HANGS_S 1.0
/* How long the test waits for an orphaned worker to end before it fails (a backstop again). */
#define ORPHAN_BACKSTOP_S 120

/* Writes a fake module: a kernel `scale` that behaves as mode says, taking time_us. */
static char *module(const char *name, const char *mode, int time_us)
{
	char *path = kt_path_join(dir, name);
	kt_buf text = {0};
	kt_err err = {0};
	kt_buf_printf(&text, "// fake-mode: %s\n// fake-time-us: %d\n__global__ void scale(float *out, const float *x, int n) {}\n",
		      mode, time_us);
	if (kt_write_atomic(path, text.data, text.len, &err))
		fprintf(stderr, "%s\n", err.msg);
	kt_buf_free(&text);
	return path;
}

static char *check_module(void)
{
	char *path = kt_path_join(dir, "kt_check.cubin");
	kt_buf text = {0};
	kt_err err = {0};
	kt_check_source(&text);
	kt_write_atomic(path, text.data, text.len, &err);
	kt_buf_free(&text);
	return path;
}

static kt_job job(const char *verb, const char *cubin, const char *config)
{
	kt_job j = {0};
	kt_buf b = {0};
	kt_buf_printf(&b, "%s\tP\t%s\tscale\t%s", verb, cubin, config);
	j.cmd = kt_buf_detach(&b);
	return j;
}

/* Starts a pool on the fake GPU with the check kernels loaded and problem `id` of template tmpl
 * defined at shape. */
static kt_pool *pool_for(const char *chk, const char *id, const char *tmpl, const char *shape, kt_err *err)
{
	kt_worker_opts o = {KT_EXE, "fake", 3, ANSWERS_S, ANSWERS_S, NULL};
	int gpus[1] = {0};
	kt_pool *p = kt_pool_new(&o, gpus, 1, err);
	kt_buf cmd = {0};
	kt_buf_printf(&cmd, "check\t%s", chk);
	int rc = p ? kt_pool_setup(p, kt_buf_str(&cmd), NULL, err) : -1;
	kt_buf_reset(&cmd);
	kt_buf_printf(&cmd, "problem\t%s\t%s\t%s", id, tmpl, shape);
	if (rc == 0)
		rc = kt_pool_setup(p, kt_buf_str(&cmd), NULL, err);
	kt_buf_free(&cmd);
	if (rc && p) {
		kt_pool_free(p);
		p = NULL;
	}
	return p;
}

/* The same with the fake GPU's scale template. */
static kt_pool *pool_with(const char *chk, const char *id, const char *shape, kt_err *err)
{
	return pool_for(chk, id, KT_FAKE_DIR "/scale.cu.tmpl", shape, err);
}

static const char cfg[] = "BLOCK=128,UNROLL=1,MODE=good";

/* A gate that holds back the hanging module once one timed out, as tune.c's does (hangs.h). */
typedef struct gate_log {
	const char *hang;
	int timeouts, told[8], ntold;
} gate_log;

static int gate_hold(void *ctx, size_t i, char *why, size_t whysz)
{
	gate_log *g = ctx;
	snprintf(why, whysz, "held after %d timeout", g->timeouts);
	return g->timeouts > 0 && g->hang && (int)i % 2 == 0;
}

static void gate_done(void *ctx, size_t i, const kt_job *j)
{
	gate_log *g = ctx;
	g->timeouts += j->status == KT_TIMED_OUT;
	if (g->ntold < 8)
		g->told[g->ntold++] = (int)i;
}

/* kt_pool_run_gated: a held job is not sent (KT_NOT_RUN, the gate's words), the others run, and
 * the gate is told every outcome, held ones too, as they come (one worker: in order). */
static void test_gate(kt_pool *p, const char *good, const char *hang)
{
	kt_err err = {0};
	kt_job j[4] = {job("eval", hang, cfg), job("eval", good, cfg), job("eval", hang, cfg), job("eval", good, cfg)};
	j[0].timeout_s = j[2].timeout_s = HANGS_S;
	gate_log g = {hang, 0, {0}, 0};
	CHECK_INT(kt_pool_run_gated(p, j, 4, &(kt_pool_gate){&g, gate_hold, gate_done}, &err), 0);
	CHECK_INT(j[0].status, KT_TIMED_OUT);
	CHECK_INT(j[1].status, KT_OK);
	CHECK_INT(j[2].status, KT_NOT_RUN);
	CHECK(j[2].reply && !strcmp(j[2].reply, "held after 1 timeout"));
	CHECK_INT(j[3].status, KT_OK);
	CHECK(g.ntold == 4 && g.told[0] == 0 && g.told[1] == 1 && g.told[2] == 2 && g.told[3] == 3);
	CHECK_INT(kt_pool_restarts(p), 3); /* one more watchdog: the held one never ran */
	for (int i = 0; i < 4; i++) {
		free(j[i].cmd);
		kt_job_clear(&j[i]);
	}
}

static void test_protocol(void)
{
	kt_err err = {0};
	char *chk = check_module(), *good = module("good.cubin", "ok", 40), *slow = module("slow.cubin", "ok", 80);
	char *wrong = module("wrong.cubin", "wrong", 40), *noop = module("noop.cubin", "noop", 40);
	char *crash = module("crash.cubin", "fault", 40), *hang = module("hang.cubin", "hang", 40);
	kt_pool *p = pool_with(chk, "P", "n=1000", &err);
	CHECK(p != NULL);
	if (!p) {
		fprintf(stderr, "%s\n", err.msg);
		return;
	}
	kt_buf cmd = {0};
	kt_buf_printf(&cmd, "ref\tP\t%s\tscale\t%s", good, cfg);
	const char *reply = NULL;
	CHECK_INT(kt_pool_setup(p, kt_buf_str(&cmd), &reply, &err), 0);
	CHECK(reply && fabs(atof(reply) - 40) < 1e-3);

	kt_job j[8] = {job("eval", good, cfg), job("eval", wrong, cfg), job("eval", noop, cfg), job("eval", crash, cfg),
		       job("eval", slow, cfg), job("eval", hang, cfg), job("eval", good, cfg), job("eval", "/nonexistent", cfg)};
	j[5].timeout_s = HANGS_S;
	CHECK_INT(kt_pool_run(p, j, 8, &err), 0);
	CHECK_INT(j[0].status, KT_OK);
	CHECK(j[0].reply && fabs(atof(j[0].reply) - 40) < 1e-3);
	CHECK_INT(j[1].status, KT_CHECK_FAILED);
	CHECK(j[1].reply && strstr(j[1].reply, "'out': 1 of 1000 elements differ") && strstr(j[1].reply, "[500]"));
	CHECK_INT(j[2].status, KT_CHECK_FAILED); /* the poisoned output stayed NaN */
	CHECK(j[2].reply && strstr(j[2].reply, "1000 of 1000") && strstr(j[2].reply, "nan,"));
	CHECK_INT(j[3].status, KT_FAULTED);
	CHECK(j[3].reply && strstr(j[3].reply, "ILLEGAL_ADDRESS"));
	CHECK_INT(j[4].status, KT_OK); /* on a restarted worker, the reference replayed */
	CHECK(j[4].reply && fabs(atof(j[4].reply) - 80) < 1e-3);
	CHECK_INT(j[5].status, KT_TIMED_OUT);
	CHECK(j[5].reply && strstr(j[5].reply, "no answer within 1 s"));
	CHECK_INT(j[6].status, KT_OK);
	CHECK_INT(j[7].status, KT_FAULTED); /* a module that cannot be read: an error, the worker lives on */
	CHECK(j[7].reply && strstr(j[7].reply, "error: ") && strstr(j[7].reply, "/nonexistent"));
	CHECK_INT(kt_pool_restarts(p), 2);
	for (int i = 0; i < 8; i++) {
		free(j[i].cmd);
		kt_job_clear(&j[i]);
	}
	test_gate(p, good, hang);

	/* Re-timing, interleaved: one reply with a median and a spread per candidate. */
	kt_buf_reset(&cmd);
	kt_buf_printf(&cmd, "retime\tP\t10\t%s\tscale\t%s\t%s\tscale\t%s", slow, cfg, good, cfg);
	kt_job r = {cmd.data, KT_OK, NULL, 0};
	CHECK_INT(kt_pool_run(p, &r, 1, &err), 0);
	double m1 = 0, s1 = -1, m2 = 0, s2 = -1;
	CHECK(r.reply && sscanf(r.reply, "%lf\t%lf\t%lf\t%lf", &m1, &s1, &m2, &s2) == 4);
	CHECK(fabs(m1 - 80) < 1e-3 && fabs(m2 - 40) < 1e-3 && s1 == 0 && s2 == 0);
	kt_job_clear(&r);

	kt_job bw = {"bw\t1048576", KT_OK, NULL, 0};
	CHECK_INT(kt_pool_run(p, &bw, 1, &err), 0);
	CHECK(bw.reply && fabs(atof(bw.reply) - 2000) < 1);
	kt_job_clear(&bw);
	kt_job rate = {"rate", KT_OK, NULL, 0};
	CHECK_INT(kt_pool_run(p, &rate, 1, &err), 0);
	CHECK(rate.reply && fabs(atof(rate.reply) - 50000) < 1);
	kt_job_clear(&rate);
	kt_job tensor = {"rate\ttensor", KT_OK, NULL, 0}; /* the fake's kt_mma: 400 TFLOP/s */
	CHECK_INT(kt_pool_run(p, &tensor, 1, &err), 0);
	CHECK(tensor.status == KT_OK && tensor.reply && fabs(atof(tensor.reply) - 400000) < 1);
	kt_job_clear(&tensor);
	kt_job unit = {"rate\twgmma", KT_OK, NULL, 0};
	CHECK_INT(kt_pool_run(p, &unit, 1, &err), 0);
	CHECK(unit.status != KT_OK && unit.reply && strstr(unit.reply, "fma, tensor"));
	kt_job_clear(&unit);

	/* Racing: an estimate slower than the threshold is the answer, marked; a faster one is timed in full. */
	kt_buf_reset(&cmd);
	kt_buf_printf(&cmd, "eval\tP\t%s\tscale\t%s\t50", slow, cfg);
	kt_job race = {cmd.data, KT_OK, NULL, 0};
	CHECK_INT(kt_pool_run(p, &race, 1, &err), 0);
	CHECK(race.status == KT_OK && race.reply && fabs(atof(race.reply) - 80) < 1e-3 && strstr(race.reply, "\traced"));
	kt_job_clear(&race);
	kt_buf_reset(&cmd);
	kt_buf_printf(&cmd, "eval\tP\t%s\tscale\t%s\t50", good, cfg);
	race.cmd = cmd.data;
	CHECK_INT(kt_pool_run(p, &race, 1, &err), 0);
	CHECK(race.status == KT_OK && race.reply && fabs(atof(race.reply) - 40) < 1e-3 && !strstr(race.reply, "raced"));
	kt_job_clear(&race);

	kt_buf_free(&cmd);
	kt_pool_free(p);
	char *paths[] = {chk, good, slow, wrong, noop, crash, hang};
	for (size_t i = 0; i < sizeof paths / sizeof paths[0]; i++) {
		unlink(paths[i]);
		free(paths[i]);
	}
}

/* Runs one job on p; its reply's first number (or -1 when it did not pass), its reply in *reply. */
static double run_one(kt_pool *p, const char *cmd, char **reply)
{
	kt_err err = {0};
	kt_job j = {(char *)cmd, KT_OK, NULL, 0}; /* the pool's watchdog, ANSWERS_S */
	double v = kt_pool_run(p, &j, 1, &err) == 0 && j.status == KT_OK && j.reply ? atof(j.reply) : -1;
	if (reply)
		*reply = j.reply ? kt_xstrdup(j.reply) : NULL;
	kt_job_clear(&j);
	return v;
}

/* The measurement settings reach the worker on the problem line and change how it times: the
 * fake GPU's launch takes 80% of its time when its input is in the fake's L2 (warm), 90% as a
 * node of a replayed graph.  Cold (the default) rotates through argument sets that span more than
 * the L2, so every timed launch misses it. */
static void test_measure_modes(void)
{
	kt_err err = {0};
	char *chk = check_module(), *good = module("good.cubin", "ok", 40), *slow = module("slow.cubin", "ok", 80);
	kt_pool *p = pool_with(chk, "C", "n=1000", &err);
	CHECK(p != NULL);
	if (!p)
		return;
	static const struct {
		const char *id, *fields;
		double good, slow; /* us per launch */
	} modes[] = {
		{"C", "", 40, 80},
		{"W", "\tmeasure.l2=warm", 32, 64},
		{"G", "\tmeasure.launch=graph", 36, 72},
		{"WG", "\tmeasure.launch=graph\tmeasure.l2=warm", 28.8, 57.6},
	};
	kt_buf cmd = {0};
	for (size_t i = 0; i < sizeof modes / sizeof modes[0]; i++) {
		kt_buf_reset(&cmd);
		kt_buf_printf(&cmd, "problem\t%s\t%s\tn=1000%s", modes[i].id, KT_FAKE_DIR "/scale.cu.tmpl", modes[i].fields);
		CHECK_INT(kt_pool_setup(p, kt_buf_str(&cmd), NULL, &err), 0);
		kt_buf_reset(&cmd);
		kt_buf_printf(&cmd, "ref\t%s\t%s\tscale\t%s", modes[i].id, good, cfg);
		const char *reply = NULL;
		CHECK_INT(kt_pool_setup(p, kt_buf_str(&cmd), &reply, &err), 0);
		CHECK(reply && fabs(atof(reply) - modes[i].good) < 1e-3);
		for (int twice = 0; twice < 2; twice++) { /* the second eval goes on with the rotation */
			kt_buf_reset(&cmd);
			kt_buf_printf(&cmd, "eval\t%s\t%s\tscale\t%s", modes[i].id, good, cfg);
			double us = run_one(p, kt_buf_str(&cmd), NULL);
			if (fabs(us - modes[i].good) > 1e-3) {
				check_failed++;
				fprintf(stderr, "problem %s: eval took %g us, want %g\n", modes[i].id, us, modes[i].good);
			}
		}
		/* Re-timing, interleaved, in the same mode; racing compares the same measure. */
		kt_buf_reset(&cmd);
		kt_buf_printf(&cmd, "retime\t%s\t10\t%s\tscale\t%s\t%s\tscale\t%s", modes[i].id, slow, cfg, good, cfg);
		char *rt = NULL;
		double m1 = 0, s1 = -1, m2 = 0, s2 = -1;
		run_one(p, kt_buf_str(&cmd), &rt);
		CHECK(rt && sscanf(rt, "%lf\t%lf\t%lf\t%lf", &m1, &s1, &m2, &s2) == 4);
		CHECK(fabs(m1 - modes[i].slow) < 1e-3 && fabs(m2 - modes[i].good) < 1e-3 && s1 == 0 && s2 == 0);
		free(rt);
		kt_buf_reset(&cmd);
		kt_buf_printf(&cmd, "eval\t%s\t%s\tscale\t%s\t%g", modes[i].id, slow, cfg, (modes[i].good + modes[i].slow) / 2);
		char *race = NULL;
		CHECK(fabs(run_one(p, kt_buf_str(&cmd), &race) - modes[i].slow) < 1e-3);
		CHECK(race && strstr(race, "\traced"));
		free(race);
	}
	/* A setting the worker does not know is an error, not a type choice. */
	kt_buf_reset(&cmd);
	kt_buf_printf(&cmd, "problem\tX\t%s\tn=1000\tmeasure.l2=lukewarm", KT_FAKE_DIR "/scale.cu.tmpl");
	CHECK_INT(kt_pool_setup(p, kt_buf_str(&cmd), NULL, &err), -1);
	CHECK(strstr(err.msg, "unknown L2 state 'lukewarm'") != NULL);
	kt_buf_free(&cmd);
	kt_pool_free(p);
	char *paths[] = {chk, good, slow};
	for (size_t i = 0; i < 3; i++) {
		unlink(paths[i]);
		free(paths[i]);
	}
}

/* A cold timing is cold whatever the kernels before it left in the L2.  On the GPU (and the fake)
 * a buffer read at normal priority outlives any evict-first traffic, so the rotation alone does
 * not leave it behind: a rival that streams (fake-stream) would meet, on a set that a normal
 * rival used last, that rival's lines and time 80% of its cold time there.  The flush before each
 * re-timed sample and before each eval's warm-up leaves every one cold. */
static void test_cold_after_normal(void)
{
	kt_err err = {0};
	char *chk = check_module(), *norm = module("norm.cubin", "ok", 40), *strm[3];
	for (int i = 0; i < 3; i++) {
		char name[32], text[160];
		snprintf(name, sizeof name, "strm%d.cubin", i);
		snprintf(text, sizeof text, "// fake-stream\n// fake-time-us: %d\n__global__ void scale(float *out, const float *x, int n) {}\n", 50 + 10 * i);
		strm[i] = kt_path_join(dir, name);
		kt_write_atomic(strm[i], text, strlen(text), &err);
	}
	kt_pool *p = pool_with(chk, "N", "n=16384", &err);
	CHECK(p != NULL);
	if (!p)
		return;
	kt_buf cmd = {0};
	kt_buf_printf(&cmd, "ref\tN\t%s\tscale\t%s", norm, cfg);
	CHECK_INT(kt_pool_setup(p, kt_buf_str(&cmd), NULL, &err), 0);
	kt_buf_reset(&cmd);
	kt_buf_printf(&cmd, "retime\tN\t12\t%s\tscale\t%s", norm, cfg);
	for (int i = 0; i < 3; i++)
		kt_buf_printf(&cmd, "\t%s\tscale\t%s", strm[i], cfg);
	char *rt = NULL;
	double m[4] = {0}, sp[4] = {-1, -1, -1, -1};
	run_one(p, kt_buf_str(&cmd), &rt);
	CHECK(rt && sscanf(rt, "%lf\t%lf\t%lf\t%lf\t%lf\t%lf\t%lf\t%lf", &m[0], &sp[0], &m[1], &sp[1], &m[2], &sp[2], &m[3], &sp[3]) == 8);
	for (int i = 0; i < 4; i++)
		if (fabs(m[i] - (i ? 40 + 10 * i : 40)) > 1e-3 || sp[i] != 0) {
			check_failed++;
			fprintf(stderr, "retime: %s, want 40, 50, 60, 70 with no spread\n", rt ? rt : "no reply");
			break;
		}
	free(rt);
	for (int i = 0; i < 4; i++) { /* evals one after the other, normal then streaming */
		kt_buf_reset(&cmd);
		kt_buf_printf(&cmd, "eval\tN\t%s\tscale\t%s", i % 2 ? strm[0] : norm, cfg);
		double us = run_one(p, kt_buf_str(&cmd), NULL);
		if (fabs(us - (i % 2 ? 50 : 40)) > 1e-3) {
			check_failed++;
			fprintf(stderr, "eval %d: %g us, want %d\n", i, us, i % 2 ? 50 : 40);
		}
	}
	kt_buf_free(&cmd);
	kt_pool_free(p);
	char *paths[] = {chk, norm, strm[0], strm[1], strm[2]};
	for (size_t i = 0; i < 5; i++) {
		unlink(paths[i]);
		free(paths[i]);
	}
}

/* Re-timing meets every argument set alike: with as many rivals as the cold L2's rotation has
 * timed sets (two, at this size on the fake's 256 kB L2), each rival's timed launches still go
 * to both sets, half to each. */
static void test_retime_sets(void)
{
	kt_err err = {0};
	char log[600];
	snprintf(log, sizeof log, "%s/sets.log", dir);
	setenv("KT_FAKE_LOG", log, 1);
	char *chk = check_module(), *one = module("one.cubin", "ok", 40), *two = kt_path_join(dir, "two.cubin");
	const char *text = "// fake-time-us: 40\n__global__ void other(float *out, const float *x, int n) {}\n";
	kt_write_atomic(two, text, strlen(text), &err);
	kt_pool *p = pool_with(chk, "S", "n=65536", &err);
	unsetenv("KT_FAKE_LOG");
	CHECK(p != NULL);
	if (!p)
		return;
	unlink(log);
	kt_buf cmd = {0}, lines = {0};
	kt_buf_printf(&cmd, "retime\tS\t10\t%s\tscale\t%s\t%s\tother\t%s", one, cfg, two, cfg);
	char *rt = NULL;
	run_one(p, kt_buf_str(&cmd), &rt);
	CHECK(rt != NULL);
	free(rt);
	CHECK_INT(kt_read_file(log, &lines, &err), 0);
	/* Each rival's timed launches by the address of their input. */
	char addr[2][4][32] = {{""}};
	int count[2][4] = {{0}}, nsets[2] = {0};
	for (const char *l = kt_buf_str(&lines); *l;) {
		size_t n = strcspn(l, "\n");
		char name[64], x[32];
		if (strstr(l, " timed") && strstr(l, " timed") < l + n && sscanf(l, "launch %63s n=%*d x=%31s", name, x) == 2) {
			int r = !strcmp(name, "other"), s = 0;
			while (s < nsets[r] && strcmp(addr[r][s], x))
				s++;
			if (s == nsets[r] && s < 4)
				snprintf(addr[r][nsets[r]++], sizeof addr[r][s], "%s", x);
			if (s < 4)
				count[r][s]++;
		}
		l += n + (l[n] != 0);
	}
	for (int r = 0; r < 2; r++) {
		CHECK_INT(nsets[r], 2);
		CHECK_INT(count[r][0] + count[r][1], 10);
		CHECK_INT(count[r][0], count[r][1]);
	}
	kt_buf_free(&cmd);
	kt_buf_free(&lines);
	kt_pool_free(p);
	char *paths[] = {chk, one, two};
	for (size_t i = 0; i < 3; i++) {
		unlink(paths[i]);
		free(paths[i]);
	}
	unlink(log);
}

/* A launch geometry that names sms gets the worker's GPU's multiprocessor count: a persistent
 * grid of at most one block per multiprocessor (the fake GPU has 4). */
static void test_sms_grid(void)
{
	kt_err err = {0};
	char log[600];
	snprintf(log, sizeof log, "%s/sms.log", dir);
	char *chk = check_module(), *good = module("good.cubin", "ok", 40), *tp = kt_path_join(dir, "persistent.cu.tmpl");
	const char *text = "// @kt kernel scale\n// @kt shape n\n// @kt param BLOCK in 64, 128 default 128\n"
			   "// @kt arg out float[n] out\n// @kt arg x float[n] in\n// @kt arg n int = n\n"
			   "// @kt grid min(cdiv(n, BLOCK), sms)\n// @kt block BLOCK\n"
			   "__global__ void scale(float *out, const float *x, int n) {}\n";
	kt_write_atomic(tp, text, strlen(text), &err);
	setenv("KT_FAKE_LOG", log, 1); /* the worker's environment */
	kt_pool *p = pool_for(chk, "Q", tp, "n=1000", &err);
	kt_buf cmd = {0}, lines = {0};
	kt_buf_printf(&cmd, "ref\tQ\t%s\tscale\tBLOCK=64", good);
	int rc = p ? kt_pool_setup(p, kt_buf_str(&cmd), NULL, &err) : -1;
	CHECK_INT(rc, 0);
	unsetenv("KT_FAKE_LOG");
	unlink(log);
	int launches = 0, persistent = 0;
	for (int b = 0; rc == 0 && b < 2; b++) { /* 1000 / 64 and 1000 / 128 blocks: 4 either way */
		kt_buf_reset(&cmd);
		kt_buf_printf(&cmd, "eval\tQ\t%s\tscale\tBLOCK=%d", good, b ? 128 : 64);
		CHECK(run_one(p, kt_buf_str(&cmd), NULL) > 0);
	}
	CHECK_INT(kt_read_file(log, &lines, &err), 0);
	for (const char *l = kt_buf_str(&lines); *l;) {
		size_t n = strcspn(l, "\n");
		long long grid = 0;
		if (sscanf(l, "launch scale n=%*d x=%*s grid=%lld", &grid) == 1) {
			launches++;
			persistent += grid == 4;
		}
		l += n + (l[n] != 0);
	}
	CHECK(launches > 2);
	CHECK_INT(persistent, launches);
	kt_buf_free(&cmd);
	kt_buf_free(&lines);
	kt_pool_free(p);
	char *paths[] = {chk, good, tp};
	for (size_t i = 0; i < 3; i++) {
		unlink(paths[i]);
		free(paths[i]);
	}
	unlink(log);
}

/* Timed launches of one eval of a 20 us kernel whose x is declared with kind ("in" or "inout"),
 * at 2M elements: an inout x is reset after each launch, 8 us of the fake's copies. */
static int timed_launches(const char *chk, const char *mod, const char *kind)
{
	kt_err err = {0};
	char log[600], name[64];
	snprintf(log, sizeof log, "%s/gap.log", dir);
	snprintf(name, sizeof name, "gap_%s.cu.tmpl", kind);
	char *tp = kt_path_join(dir, name);
	kt_buf text = {0}, cmd = {0}, lines = {0};
	kt_buf_printf(&text, "// @kt kernel scale\n// @kt shape n\n// @kt param BLOCK in 64, 128 default 128\n"
			     "// @kt arg out float[n] out\n// @kt arg x float[n] %s\n// @kt arg n int = n\n"
			     "// @kt grid cdiv(n, BLOCK)\n// @kt block BLOCK\n"
			     "__global__ void scale(float *out, const float *x, int n) {}\n",
		      kind);
	kt_write_atomic(tp, text.data, text.len, &err);
	setenv("KT_FAKE_LOG", log, 1); /* the worker's environment */
	kt_pool *p = pool_for(chk, "G", tp, "n=2097152", &err);
	kt_buf_printf(&cmd, "ref\tG\t%s\tscale\tBLOCK=128", mod);
	int rc = p ? kt_pool_setup(p, kt_buf_str(&cmd), NULL, &err) : -1;
	CHECK_INT(rc, 0);
	unsetenv("KT_FAKE_LOG");
	unlink(log);
	kt_buf_reset(&cmd);
	kt_buf_printf(&cmd, "eval\tG\t%s\tscale\tBLOCK=128", mod);
	int timed = 0;
	if (rc == 0 && run_one(p, kt_buf_str(&cmd), NULL) > 0 && kt_read_file(log, &lines, &err) == 0)
		for (const char *l = kt_buf_str(&lines); *l;) {
			size_t n = strcspn(l, "\n");
			timed += !strncmp(l, "launch scale ", 13) && strstr(l, " timed") && strstr(l, " timed") < l + n;
			l += n + (l[n] != 0);
		}
	if (p)
		kt_pool_free(p);
	kt_buf_free(&text);
	kt_buf_free(&cmd);
	kt_buf_free(&lines);
	unlink(tp);
	free(tp);
	unlink(log);
	return timed;
}

/* A candidate's timing costs the GPU about the same whatever runs between its samples: where each
 * sample is followed by the reset of an inout argument, it gets fewer timed launches. */
static void test_timing_cost(void)
{
	char *chk = check_module(), *mod = module("gap.cubin", "ok", 20);
	int in = timed_launches(chk, mod, "in"), inout = timed_launches(chk, mod, "inout");
	CHECK(in >= 10 && inout >= 10);
	CHECK(inout < in);
	CHECK(inout < 190); /* 5 ms over 20 us of kernel and 8 us of resets: about 178 */
	unlink(chk);
	unlink(mod);
	free(chk);
	free(mod);
}

/* The fake GPU's graphs: launches are captured, not run; nothing else may be called meanwhile;
 * a replay runs the nodes, each a tenth faster than from the stream. */
static void test_fake_graph(void)
{
	const kt_gpu_ops *ops = kt_gpu_fake();
	kt_err err = {0};
	kt_gpu *g = ops->open(0, &err);
	const char text[] = "// fake-time-us: 10\n__global__ void scale(float *out, const float *x, int n) {}\n";
	void *mod = NULL, *fn = NULL, *graph = NULL, *exec = NULL, *ev[2];
	float in[4] = {1, 2, 3, 4}, out[4] = {0}, ms = 0;
	kt_dptr dout = (kt_dptr)(uintptr_t)out, din = (kt_dptr)(uintptr_t)in;
	int n = 4;
	void *params[] = {&dout, &din, &n};
	int64_t one[3] = {1, 1, 1};
	CHECK_INT(ops->load(g, text, sizeof text - 1, &mod, &err), 0);
	CHECK_INT(ops->function(g, mod, "scale", &fn), 0);
	CHECK_INT(ops->event_new(g, &ev[0], &err) | ops->event_new(g, &ev[1], &err), 0);
	CHECK_INT(ops->capture_begin(g, &err), 0);
	CHECK_INT(ops->launch(g, fn, one, one, 0, params, &err), 0);
	CHECK_INT(ops->launch(g, fn, one, one, 0, params, &err), 0);
	CHECK(out[0] == 0); /* captured, not run */
	CHECK_INT(ops->memset8(g, dout, 0, sizeof out, &err), -1);
	CHECK(strstr(err.msg, "while capturing a graph") != NULL);
	CHECK_INT(ops->capture_end(g, &graph, &err), 0);
	void *none = NULL;
	CHECK_INT(ops->capture_end(g, &none, &err), -1); /* no capture to end */
	CHECK(none == NULL);
	CHECK_INT(ops->capture_begin(g, &err), 0);
	CHECK_INT(ops->capture_end(g, &exec, &err), 0);
	ops->graph_free(g, exec);
	CHECK_INT(ops->graph_instantiate(g, graph, &exec, &err), 0);
	ops->graph_free(g, graph);
	CHECK_INT(ops->record(g, ev[0], &err), 0);
	CHECK_INT(ops->graph_launch(g, exec, &err), 0);
	CHECK_INT(ops->record(g, ev[1], &err), 0);
	CHECK_INT(ops->elapsed_ms(g, ev[0], ev[1], &ms, &err), 0);
	CHECK(out[3] == 8); /* run: out = 2 * x */
	CHECK(fabs(ms * 1e3 - (10 * 0.9 + 10 * 0.9 * 0.8)) < 1e-3); /* the first node misses the fake's L2, the second hits */
	ops->graph_exec_free(g, exec);
	ops->event_free(g, ev[0]);
	ops->event_free(g, ev[1]);
	ops->unload(g, mod);
	ops->close(g);
}

/* A reference that faults is a setup failure, not a variant's. */
static void test_bad_reference(void)
{
	kt_err err = {0};
	char *chk = check_module(), *noop = module("noop.cubin", "noop", 10);
	kt_pool *p = pool_with(chk, "P", "n=64", &err);
	CHECK(p != NULL);
	if (!p) {
		fprintf(stderr, "%s\n", err.msg);
		return;
	}
	kt_buf cmd = {0};
	kt_buf_printf(&cmd, "ref\tP\t%s\tscale\t%s", noop, cfg);
	CHECK_INT(kt_pool_setup(p, kt_buf_str(&cmd), NULL, &err), -1);
	CHECK(strstr(err.msg, "the reference left 64 of 64 elements of 'out' NaN") != NULL);
	kt_buf_free(&cmd);
	kt_pool_free(p);
	unlink(chk);
	unlink(noop);
	free(chk);
	free(noop);
}

/* One worker serves several problems: each keeps its own inputs and reference, also after it
 * was evicted to make room for the others (the fake GPU has 256 MiB; resident problems take a
 * quarter: each of these takes 48 MiB, so every switch evicts). */
static void test_problems(void)
{
	kt_err err = {0};
	char *chk = check_module(), *good = module("good.cubin", "ok", 40), *wrong = module("wrong.cubin", "wrong", 40);
	kt_pool *p = pool_with(chk, "A", "n=4194304", &err);
	CHECK(p != NULL);
	if (!p)
		return;
	kt_buf cmd = {0};
	const char *ids[] = {"A", "B", "C"}, *shapes[] = {"n=4194304", "n=4194304", "n=1000"};
	for (int i = 0; i < 3; i++) {
		kt_buf_reset(&cmd);
		kt_buf_printf(&cmd, "problem\t%s\t%s\t%s", ids[i], KT_FAKE_DIR "/scale.cu.tmpl", shapes[i]);
		CHECK_INT(kt_pool_setup(p, kt_buf_str(&cmd), NULL, &err), 0);
		kt_buf_reset(&cmd);
		kt_buf_printf(&cmd, "ref\t%s\t%s\tscale\t%s", ids[i], good, cfg);
		CHECK_INT(kt_pool_setup(p, kt_buf_str(&cmd), NULL, &err), 0);
	}
	for (int round = 0; round < 2; round++)
		for (int i = 0; i < 3; i++) {
			kt_job j[2] = {{0}, {0}};
			kt_buf a = {0}, b = {0};
			kt_buf_printf(&a, "eval\t%s\t%s\tscale\t%s", ids[i], good, cfg);
			kt_buf_printf(&b, "eval\t%s\t%s\tscale\t%s", ids[i], wrong, cfg);
			j[0].cmd = a.data;
			j[1].cmd = b.data;
			CHECK_INT(kt_pool_run(p, j, 2, &err), 0);
			CHECK_INT(j[0].status, KT_OK);
			CHECK_INT(j[1].status, KT_CHECK_FAILED);
			CHECK(j[1].reply && strstr(j[1].reply, i < 2 ? "of 4194304 elements" : "of 1000 elements"));
			kt_job_clear(&j[0]);
			kt_job_clear(&j[1]);
			kt_buf_free(&a);
			kt_buf_free(&b);
		}
	kt_job j = {"eval\tZ\tx\tscale\t-", KT_OK, NULL, 0}; /* a problem nobody defined */
	CHECK_INT(kt_pool_run(p, &j, 1, &err), 0);
	CHECK(j.status != KT_OK && j.reply && strstr(j.reply, "no problem 'Z'"));
	kt_job_clear(&j);
	kt_buf_free(&cmd);
	kt_pool_free(p);
	char *paths[] = {chk, good, wrong};
	for (size_t i = 0; i < 3; i++) {
		unlink(paths[i]);
		free(paths[i]);
	}
}

/* A worker never outlives its tuner: a process that started one is SIGKILLed, and the worker,
 * idle on its input, goes too.  This process is a subreaper meanwhile, so that the orphaned
 * worker becomes its child and its end is an event to wait for. */
static void test_orphan(void)
{
	int fds[2];
	if (prctl(PR_SET_CHILD_SUBREAPER, 1) || pipe(fds)) {
		CHECK(!"a subreaper with a pipe");
		return;
	}
	pid_t tuner = fork();
	if (tuner == 0) {
		close(fds[0]);
		kt_proc w;
		kt_err err = {0};
		char parent[32];
		snprintf(parent, sizeof parent, "%ld", (long)getpid());
		char *argv[] = {KT_EXE, "worker", "--backend", "fake", "--parent", parent, NULL};
		if (kt_proc_spawn(&w, argv, 1, NULL, &err) == 0) {
			long pid = (long)w.pid;
			if (write(fds[1], &pid, sizeof pid) != (ssize_t)sizeof pid)
				_exit(1);
		}
		close(fds[1]); /* without a worker the test reads the end of the pipe, not nothing forever */
		pause();
		_exit(0);
	}
	close(fds[1]);
	long worker = 0;
	CHECK(read(fds[0], &worker, sizeof worker) == (ssize_t)sizeof worker && worker > 0);
	close(fds[0]);
	kill(tuner, SIGKILL);
	waitpid(tuner, NULL, 0);
	if (worker > 0) {
		alarm(ORPHAN_BACKSTOP_S); /* SIGALRM ends the test if the worker lives on */
		CHECK(waitpid((pid_t)worker, NULL, 0) == (pid_t)worker);
		alarm(0);
	}
	prctl(PR_SET_CHILD_SUBREAPER, 0);
}

static void test_worker_start_failure(void)
{
	kt_worker_opts o = {KT_EXE, "fake", 3, ANSWERS_S, ANSWERS_S, NULL};
	int gpus[1] = {5}; /* the fake has one GPU */
	kt_err err = {0};
	CHECK(kt_pool_new(&o, gpus, 1, &err) == NULL);
	CHECK(strstr(err.msg, "fake GPU 5 does not exist") != NULL);
	gpus[0] = 0;
	kt_pool *p = kt_pool_new(&o, gpus, 1, &err);
	CHECK(p != NULL);
	if (!p)
		return;
	CHECK_INT(kt_pool_setup(p, "problem\tP\t" KT_FAKE_DIR "/scale.cu.tmpl\trows=3", NULL, &err), -1);
	CHECK(strstr(err.msg, "rows") != NULL);
	kt_pool_free(p);
}

static void test_names(void)
{
	CHECK(kt_gpu_name_matches("scale", "scale"));
	CHECK(kt_gpu_name_matches("_Z5scalePfPKfi", "scale"));
	CHECK(kt_gpu_name_matches("_Z24kt_scale_0123abcd_kernelPfPKfi", "kt_scale_0123abcd_kernel"));
	CHECK(!kt_gpu_name_matches("_Z6scalerPf", "scale"));
	CHECK(!kt_gpu_name_matches("_Z5scal", "scale"));
	CHECK(!kt_gpu_name_matches("scale2", "scale"));
	/* The fallback through the module's function list. */
	const kt_gpu_ops *ops = kt_gpu_fake();
	kt_err err = {0};
	kt_gpu *g = ops->open(0, &err);
	const char text[] = "__global__ void kt_v_kernel(float *out) {}\n";
	void *mod = NULL, *fn = NULL;
	CHECK_INT(ops->load(g, text, sizeof text - 1, &mod, &err), 0);
	CHECK_INT(kt_gpu_function(g, mod, "kt_v_kernel", &fn, &err), 0);
	CHECK_INT(kt_gpu_function(g, mod, "missing", &fn, &err), -1);
	CHECK(strstr(err.msg, "no kernel 'missing'") && strstr(err.msg, "_Z11kt_v_kernel"));
	ops->unload(g, mod);
	ops->close(g);
}

static void test_elements(void)
{
	uint16_t h[4];
	kt_elem_set(KT_HALF, h, 0, 1.0);
	kt_elem_set(KT_HALF, h, 1, -2.5);
	kt_elem_set(KT_HALF, h, 2, 65504.0);
	kt_elem_set(KT_HALF, h, 3, 1e-7); /* subnormal */
	CHECK_INT(h[0], 0x3c00);
	CHECK_INT(h[1], 0xc100);
	CHECK_INT(h[2], 0x7bff);
	CHECK(fabs(kt_elem_get(KT_HALF, h, 3) - 1.1920929e-7) < 1e-9);
	kt_elem_set(KT_HALF, h, 0, -INFINITY);
	CHECK(isinf(kt_elem_get(KT_HALF, h, 0)) && kt_elem_get(KT_HALF, h, 0) < 0);
	uint16_t b[2];
	kt_elem_set(KT_BF16, b, 0, 1.0);
	kt_elem_set(KT_BF16, b, 1, 3.14159);
	CHECK_INT(b[0], 0x3f80);
	CHECK(fabs(kt_elem_get(KT_BF16, b, 1) - 3.140625) < 1e-6);
	uint16_t poison = 0xffff;
	CHECK(isnan(kt_elem_get(KT_HALF, &poison, 0)) && isnan(kt_elem_get(KT_BF16, &poison, 0)));
	CHECK(kt_elem_close(1.0, 1.0005, 1e-3, 0));
	CHECK(!kt_elem_close(1.0, 1.01, 1e-3, 0));
	CHECK(kt_elem_close(100.0, 101.0, 0, 0.01));
	CHECK(!kt_elem_close(NAN, NAN, 1, 1));
	CHECK(kt_elem_close(-INFINITY, -INFINITY, 0, 0));
	CHECK(!kt_elem_close(INFINITY, 1e30, 1e300, 0));
}

static void test_proc(void)
{
	kt_proc p;
	kt_err err = {0};
	char *argv[] = {"sh", "-c", "read x; echo \"got $x\"; read y", NULL};
	CHECK_INT(kt_proc_spawn(&p, argv, 1, NULL, &err), 0);
	CHECK_INT(kt_proc_send(&p, "hi\n", 3, &err), 0);
	kt_buf line = {0};
	CHECK_INT(kt_proc_readline(&p, &line, -1), 1);
	CHECK_STR(kt_buf_str(&line), "got hi");
	CHECK_INT(kt_proc_readline(&p, &line, 0.2), 0); /* waiting for a second line that never comes: a timeout */
	kt_proc_kill(&p);
	CHECK_INT(p.pid, 0);
	char *argv2[] = {"sh", "-c", "exit 3", NULL};
	int st = 0;
	CHECK_INT(kt_proc_spawn(&p, argv2, 0, NULL, &err), 0);
	CHECK_INT(kt_proc_wait(&p, -1, &st), 1);
	char how[64];
	kt_proc_describe(st, how, sizeof how);
	CHECK_STR(how, "exited with status 3");
	char *argv3[] = {"/nonexistent/tool", NULL};
	CHECK_INT(kt_proc_spawn(&p, argv3, 0, NULL, &err), -1);
	CHECK(strstr(err.msg, "cannot run /nonexistent/tool") != NULL);
	kt_buf_free(&line);
}

/* What a SIGKILLed tuner leaves: its kt-tune-<pid>-* work directory, which the next run sweeps,
 * while a live process's directory and other names stay. */
static void test_sweep(void)
{
	int fds[2];
	if (pipe(fds))
		return;
	pid_t tuner = fork();
	if (tuner == 0) {
		close(fds[0]);
		kt_err err = {0};
		char *work = kt_temp_dir(dir, "kt-tune", &err);
		char one = work != NULL;
		if (work)
			kt_write_atomic(kt_path_join(work, "unit.cu"), "x", 1, &err); /* leaked: the process dies */
		if (write(fds[1], &one, 1) != 1)
			_exit(1);
		pause();
		_exit(0);
	}
	close(fds[1]);
	char made = 0;
	CHECK(read(fds[0], &made, 1) == 1 && made);
	close(fds[0]);
	kill(tuner, SIGKILL);
	waitpid(tuner, NULL, 0);
	kt_err err = {0};
	char live[64];
	snprintf(live, sizeof live, "kt-tune-%ld-abcdef", (long)getppid()); /* a running process's */
	char *mine = kt_temp_dir(dir, "kt-tune", &err), *other = kt_path_join(dir, "kt-tune-notapid"),
	     *alive = kt_path_join(dir, live);
	CHECK(mine != NULL && mkdir(other, 0700) == 0 && mkdir(alive, 0700) == 0);
	CHECK_INT(kt_sweep_temp_dirs(dir, "kt-tune"), 1); /* the dead tuner's, with its file */
	CHECK_INT(kt_sweep_temp_dirs(dir, "kt-tune"), 0);
	CHECK(access(mine, F_OK) == 0 && access(other, F_OK) == 0 && access(alive, F_OK) == 0);
	kt_remove_tree(mine);
	rmdir(other);
	rmdir(alive);
	free(mine);
	free(other);
	free(alive);
}

/* Launches of kernel `name` in the fake GPU's log. */
static int launches(const char *log, const char *name)
{
	kt_buf lines = {0};
	kt_err err = {0};
	int n = 0;
	char want[80];
	snprintf(want, sizeof want, "launch %s ", name);
	if (kt_read_file(log, &lines, &err) == 0)
		for (const char *l = kt_buf_str(&lines); (l = strstr(l, want)); l++)
			n++;
	kt_buf_free(&lines);
	return n;
}

/* The reference is timed for the report only: fully when it is quick, by its estimate (a run,
 * three warm-ups, three samples) when it is slower than the race limit, not at all when untimed;
 * and a restarted worker replays it untimed: one launch, not the timing again. */
static void test_ref_timing(void)
{
	kt_err err = {0};
	char log[600];
	snprintf(log, sizeof log, "%s/ref.log", dir);
	unlink(log);
	setenv("KT_FAKE_LOG", log, 1); /* for the restarted worker too */
	char *chk = check_module(), *refk = kt_path_join(dir, "ref.cubin"), *crash = module("crash2.cubin", "fault", 40);
	char *good = module("good2.cubin", "ok", 40);
	const char *text = "// fake-time-us: 40\n__global__ void other(float *out, const float *x, int n) {}\n";
	kt_write_atomic(refk, text, strlen(text), &err);
	kt_pool *p = pool_with(chk, "P", "n=1000", &err);
	CHECK(p != NULL);
	if (p) {
		kt_buf cmd = {0};
		const char *reply = NULL;
		kt_buf_printf(&cmd, "ref\tP\t%s\tother\t%s", refk, cfg);
		CHECK_INT(kt_pool_setup(p, kt_buf_str(&cmd), &reply, &err), 0); /* timed in full */
		CHECK(reply && fabs(atof(reply) - 40) < 1e-3);
		const int full = launches(log, "other");
		CHECK(full >= 1 + 3 + 3 + 10);
		kt_buf_printf(&cmd, "\t10"); /* slower than 10 us: the estimate */
		CHECK_INT(kt_pool_setup(p, kt_buf_str(&cmd), &reply, &err), 0);
		CHECK(reply && fabs(atof(reply) - 40) < 1e-3);
		CHECK_INT(launches(log, "other") - full, 1 + 3 + 3);
		kt_buf_reset(&cmd);
		kt_buf_printf(&cmd, "ref\tP\t%s\tother\t%s\tuntimed", refk, cfg);
		CHECK_INT(kt_pool_setup_replay(p, kt_buf_str(&cmd), NULL, &reply, &err), 0);
		CHECK(reply && atof(reply) == 0);
		const int before = launches(log, "other");
		CHECK_INT(before - full, 1 + 3 + 3 + 1);
		/* timed now, untimed when replayed; then a fault restarts the worker, which replays the
		 * setup, each command as it was given for restarts */
		kt_buf_reset(&cmd);
		kt_buf_printf(&cmd, "ref\tP\t%s\tother\t%s", refk, cfg);
		kt_buf replay = {0};
		kt_buf_printf(&replay, "%s\tuntimed", kt_buf_str(&cmd));
		CHECK_INT(kt_pool_setup_replay(p, kt_buf_str(&cmd), kt_buf_str(&replay), &reply, &err), 0);
		CHECK(reply && fabs(atof(reply) - 40) < 1e-3);
		const int timed = launches(log, "other");
		kt_job j[2] = {job("eval", crash, cfg), job("eval", good, cfg)};
		CHECK_INT(kt_pool_run(p, j, 2, &err), 0);
		CHECK_INT(j[0].status, KT_FAULTED);
		CHECK_INT(j[1].status, KT_OK);
		CHECK_INT(kt_pool_restarts(p), 1);
		/* the replay, as each reference was set up: the first two as they were (timed in full,
		 * then by the estimate), the last two untimed */
		CHECK_INT(launches(log, "other") - timed, full + (1 + 3 + 3) + 1 + 1);
		for (int i = 0; i < 2; i++) {
			free(j[i].cmd);
			kt_job_clear(&j[i]);
		}
		kt_buf_free(&replay);
		kt_buf_free(&cmd);
		kt_pool_free(p);
	}
	unsetenv("KT_FAKE_LOG");
	free(chk);
	free(refk);
	free(crash);
	free(good);
}

int main(void)
{
	if (!(dir = kt_temp_dir(getenv("TMPDIR"), "kt-test-worker", NULL)))
		return 1;
	test_names();
	test_elements();
	test_proc();
	test_protocol();
	test_bad_reference();
	test_measure_modes();
	test_retime_sets();
	test_cold_after_normal();
	test_sms_grid();
	test_timing_cost();
	test_ref_timing();
	test_fake_graph();
	test_problems();
	test_orphan();
	test_sweep();
	test_worker_start_failure();
	kt_remove_tree(dir);
	free(dir);
	return check_done();
}
