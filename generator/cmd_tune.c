/* cmd_tune.c - `kt tune`: the tuning loop outside CMake, with a result table per shape, the most
 * robust configuration across shapes, and optionally the whole evaluated space recorded. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cache.h"
#include "cmd.h"
#include "cmd_env.h"
#include "flags.h"
#include "gpu.h"
#include "measure.h"
#include "opt.h"
#include "proc.h"
#include "recorded.h"
#include "t4.h"
#include "trace.h"
#include "tune.h"

static const char usage[] =
	"kt tune TEMPLATE --shape SPEC [--shape SPEC]... [--strategy S] [--budget N] [--seconds S] [--seed N] [--gpu N]\n"
	"       [--l2 cold|warm] [--launch stream|graph]";
static const char about[] =
	"Compiles, checks and times configurations of TEMPLATE on this machine's GPU and prints the\n"
	"fastest correct ones per shape, against the roofline floor, the reference and the default.";

enum { TOP_SHOWN = 10 };

typedef struct tune_args {
	kt_strlist shapes, types, flags, configs;
	const char *strategy, *record, *t4, *cache_dir, *workdir, *trace, *backend, *nvcc, *flagstr;
	long long budget, seed, gpu, jobs, top, pack, batch, patience;
	const char *seconds, *timeout, *arch;
	const char *measure[KT_NMEASURE]; /* --l2, --launch */
	int quiet, list_gpus, no_race, no_nvrtc;
} tune_args;

/* --flags "a b c" and the repeated --flag values as one string, blank-separated. */
static void join_flags(const tune_args *a, kt_buf *out)
{
	if (a->flagstr)
		kt_buf_puts(out, a->flagstr);
	for (int i = 0; i < a->flags.n; i++)
		kt_buf_printf(out, "%s%s", out->len ? " " : "", a->flags.v[i]);
}

static const char *pct(double floor_us, double t_us, char *buf, size_t n)
{
	if (floor_us > 0 && t_us > 0)
		snprintf(buf, n, "%.0f%%", 100.0 * floor_us / t_us);
	else
		snprintf(buf, n, "-");
	return buf;
}

static const kt_tune_result *sort_r;
static int by_time(const void *a, const void *b)
{
	const kt_eval *x = &sort_r->evals[*(const size_t *)a], *y = &sort_r->evals[*(const size_t *)b];
	return (x->median_us > y->median_us) - (x->median_us < y->median_us);
}

/* The memory term of r's floor at the configuration cfg: bytes over the measured bandwidth; 0
 * when unknown. */
static double bytes_floor_us(const kt_tmpl *t, const int64_t *shape, const uint16_t *cfg, const kt_tune_result *r)
{
	kt_val env[KT_MAX_SLOTS];
	kt_launch l;
	kt_tmpl_env(t, shape, cfg, env);
	if (r->bw_gbs <= 0 || kt_tmpl_launch(t, env, &l, NULL) != 0)
		return 0;
	return l.bytes / (r->bw_gbs * 1e3);
}

static void print_result(const kt_tmpl *t, const char *shape, const int64_t *vals, const kt_measure *m,
			 const kt_tune_result *r, long long top)
{
	size_t counts[KT_NSTATUS] = {0}, *ok = kt_xcalloc(r->nevals + 1, sizeof *ok), nok = 0;
	char p[32];
	for (size_t i = 0; i < r->nevals; i++) {
		counts[r->evals[i].status]++;
		if (r->evals[i].status == KT_OK)
			ok[nok++] = i;
	}
	sort_r = r;
	qsort(ok, nok, sizeof *ok, by_time);
	printf("\n%s at %s: %zu evaluated in %.1f s (%.1f/s), strategy %s, seed %llu\n", t->kernel, shape, r->nevals,
	       r->seconds, r->seconds > 0 ? (double)r->nevals / r->seconds : 0.0, r->strategy, (unsigned long long)r->seed);
	char failed[160];
	kt_failures_format(counts, failed, sizeof failed);
	printf("  status:");
	for (int s = 0; s < KT_NSTATUS; s++)
		if (counts[s])
			printf(" %s %zu", kt_status_names[s], counts[s]);
	printf("; %s\n", failed);
	if (r->stop[0])
		printf("  stopped: %s\n", r->stop);
	kt_buf how = {0};
	kt_measure_describe(m, &how);
	printf("  timed: %s\n", kt_buf_str(&how));
	kt_buf_free(&how);
	if (r->floor_us > 0) {
		printf("  floor: %.2f us (copy %.0f GB/s", r->floor_us, r->bw_gbs);
		if (r->flops_rate > 0)
			printf(", %s %.0f GFLOP/s", kt_flops_units[t->flops_unit], r->flops_rate);
		printf(")\n");
	}
	printf("  %-4s %10s %8s %6s %5s  %s\n", "rank", "median_us", "spread", "floor", "regs", "configuration");
	for (size_t i = 0; i < nok && (long long)i < top; i++) {
		const kt_eval *e = &r->evals[ok[i]];
		kt_buf cfg = {0};
		kt_tmpl_format_config(t, e->cfg, &cfg);
		printf("  %-4zu %10.2f %8.2f %6s %5d  %s%s\n", i + 1, e->median_us, e->spread_us,
		       pct(r->floor_us, e->median_us, p, sizeof p), e->regs, kt_buf_str(&cfg),
		       (long)ok[i] == r->best ? "  <- chosen" : "");
		kt_buf_free(&cfg);
	}
	if (r->nretimed)
		printf("  the choice: its rivals timed again together (mean of blocks, 95%% interval; and of the difference "
		       "from the fastest, block by block); from the tie set, the one nearest the default\n");
	for (size_t i = 0; i < r->nretimed; i++) {
		const kt_retimed *c = &r->retimed[i];
		kt_buf cfg = {0};
		kt_tmpl_format_config(t, r->evals[c->eval].cfg, &cfg);
		char gap[32] = "";
		if (c->paired)
			snprintf(gap, sizeof gap, " (gap +- %.3f)", c->gap_ci_us);
		printf("  retimed %10.3f +- %7.3f%s %-3s  %s%s\n", c->us, c->ci_us, gap, c->tie ? "tie" : "", kt_buf_str(&cfg),
		       c->eval == r->best ? "  <- chosen" : "");
		kt_buf_free(&cfg);
	}
	double best = kt_result_chosen_us(r);
	if (best > 0) {
		kt_buf cfg = {0};
		kt_tmpl_format_config(t, r->evals[r->best].cfg, &cfg);
		printf("  chosen: %s, %.2f us (%s of floor)\n", kt_buf_str(&cfg), best, pct(r->floor_us, best, p, sizeof p));
		kt_buf_free(&cfg);
	}
	if (best > 0 && best < r->floor_us) {
		const double tb = bytes_floor_us(t, vals, r->evals[r->best].cfg, r);
		if (best < tb && m->v[KT_MEASURE_L2] == KT_L2_COLD) /* the worker's rotation should prevent it */
			printf("  note: under the DRAM floor with a cold L2: part of the data came from the L2, or the copy "
			       "bandwidth of the floor is low\n");
		else if (best >= tb) /* the arithmetic term binds, and the kernel outran its probe */
			printf("  note: faster than the measured %s ceiling (%.0f GFLOP/s, from kt's probe kernel): the floor's "
			       "arithmetic term is low for this kernel's instructions\n",
			       kt_flops_units[t->flops_unit], r->flops_rate);
	}
	if (r->reference_us > 0)
		printf("  reference: %.2f us (%s of floor)%s", r->reference_us, pct(r->floor_us, r->reference_us, p, sizeof p),
		       best > 0 ? "" : "\n");
	if (r->reference_us > 0 && best > 0)
		printf(", tuned is %.2fx faster\n", r->reference_us / best);
	if (r->default_us > 0)
		printf("  default: %.2f us (%s of floor)%s", r->default_us, pct(r->floor_us, r->default_us, p, sizeof p),
		       best > 0 ? "" : "\n");
	if (r->default_us > 0 && best > 0)
		printf(", tuned is %.2fx faster\n", r->default_us / best);
	if (best <= 0)
		printf("  no configuration passed\n");
	for (size_t i = 0, shown = 0; i < r->nevals && shown < 3; i++) /* a taste of why things failed */
		if (r->evals[i].status != KT_OK && r->evals[i].status != KT_OVER_LIMITS && r->evals[i].msg) {
			kt_buf cfg = {0};
			kt_tmpl_format_config(t, r->evals[i].cfg, &cfg);
			printf("  %s %s: %.200s\n", kt_status_names[r->evals[i].status], kt_buf_str(&cfg), r->evals[i].msg);
			kt_buf_free(&cfg);
			shown++;
		}
	free(ok);
}

static int parse_seconds(const char *s, const char *what, double *out, kt_err *err)
{
	char *end;
	if (!s)
		return 0;
	*out = strtod(s, &end);
	if (end == s || *end || !(*out > 0))
		return kt_fail(err, "%s '%s': expected a positive number of seconds", what, s);
	return 0;
}

/* --trace FILE is written after the run: its directory must take it, which is checked before. */
static int check_trace_dir(const char *path, kt_err *err)
{
	const char *slash = strrchr(path, '/');
	char *dir = kt_path_dir(path);
	struct stat sb;
	int rc = 0;
	if (!*path || (slash && !slash[1]))
		rc = kt_fail(err, "--trace '%s': not a file name", path);
	else if (stat(dir, &sb) != 0 || !S_ISDIR(sb.st_mode))
		rc = kt_fail(err, "--trace '%s': no directory %s", path, dir);
	else if (access(dir, W_OK) != 0)
		rc = kt_fail(err, "--trace '%s': the directory %s is not writable", path, dir);
	free(dir);
	return rc;
}

/* Where the batch's time went. */
static void print_stats(const kt_tune_stats *st, int n)
{
	printf("\n%s: setup %.1f s, measuring %.1f s, waiting for the compiler %.1f s, re-timing %.1f s; %d compile batches, "
	       "%d variants compiled (%d in shared units, %d by NVRTC, %d taken before their batch ended), %d evaluations "
	       "of a variant compiled for another shape (%d of another shape's fastest), %d raced, %d worker restarts\n",
	       n > 1 ? "time of the batch" : "time", st->setup_s, st->measure_s, st->compile_wait_s, st->retime_s, st->batches,
	       st->compiled, st->packed, st->by_nvrtc, st->early, st->reused, st->sibling_evals, st->raced, st->restarts);
	printf("  first measurement after %.1f s; a reference's unit took the compiler %.2f s, so the first batch of the "
	       "search held %d configurations\n",
	       st->first_measure_s, st->unit_s, st->first_batch);
	if (st->relaunched)
		printf("  %d evaluations of a variant compiled for another configuration: they differ only in "
		       "parameters that the code does not read, the launch's\n",
		       st->relaunched);
	if (st->stand_in)
		printf("  %d evaluations of variants that NVRTC compiled standing in for nvcc; %d of them, the rivals of the "
		       "choices, measured again as nvcc compiles them (%d rivals' variants compiled by nvcc while "
		       "the search went on)\n",
		       st->stand_in, st->confirmed, st->confirm_early);
	if (st->retime_more)
		printf("  %d choices re-timed with twice the blocks: the rule would have taken a tie that only the "
		       "intervals' width made one\n",
		       st->retime_more);
	if (st->ngpus > 1) {
		kt_buf gpus = {0};
		kt_tune_stats_gpus(st, &gpus);
		printf("  GPUs:%s\n", kt_buf_str(&gpus));
		kt_buf_free(&gpus);
	}
}

/* Writes shape i's recorded space (--record FILE, FILE.i with several shapes). */
static int record(const kt_tmpl *t, const tune_args *a, int i, const int64_t *shape, const kt_gpu_id *gpu,
		  const kt_tune_result *r, kt_err *err)
{
	kt_buf path = {0};
	if (a->shapes.n > 1)
		kt_buf_printf(&path, "%s.%d", a->record, i);
	else
		kt_buf_puts(&path, a->record);
	int rc = kt_recorded_write(kt_buf_str(&path), t, shape, gpu, r->evals, r->nevals, err);
	if (rc == 0)
		printf("  recorded %zu configurations in %s\n", r->nevals, kt_buf_str(&path));
	kt_buf_free(&path);
	return rc;
}

/* --t4 FILE: the run's results at shape i in Kernel Tuner's T4 format (FILE.i with several shapes). */
static int write_t4(const kt_tmpl *t, const tune_args *a, int i, const int64_t *shape, const kt_gpu_id *gpu,
		    const kt_tune_result *r, kt_err *err)
{
	kt_buf path = {0};
	kt_buf_puts(&path, a->t4);
	if (a->shapes.n > 1)
		kt_buf_printf(&path, ".%d", i);
	int rc = kt_t4_write_result(kt_buf_str(&path), t, shape, gpu, r, err);
	if (rc == 0)
		printf("  wrote %zu results in T4 format to %s\n", r->nevals, kt_buf_str(&path));
	kt_buf_free(&path);
	return rc;
}

/* Tunes every shape of t in one batch (one pipeline), prints each one's table, and the most
 * robust configuration across them. */
static int tune_all(const kt_tmpl *t, const tune_args *a, const kt_toolchain *tc, const kt_measure *m,
		    const uint16_t *only, size_t nonly, kt_tune_opts *o, kt_err *err)
{
	int n = a->shapes.n, rc = 0;
	kt_tune_task *tasks = kt_xcalloc((size_t)n + 1, sizeof *tasks);
	const kt_tune_result **rp = kt_xcalloc((size_t)n + 1, sizeof *rp);
	int64_t(*shapes)[KT_MAX_SLOTS] = kt_xcalloc((size_t)n + 1, sizeof *shapes);
	kt_progress *pr = kt_xcalloc((size_t)n + 1, sizeof *pr);
	kt_buf *labels = kt_xcalloc((size_t)n + 1, sizeof *labels);
	for (int i = 0; i < n && rc == 0; i++) {
		kt_err e = {0};
		if (kt_tmpl_parse_shape(t, a->shapes.v[i], shapes[i], &e))
			rc = kt_fail(err, "--shape '%s': %s", a->shapes.v[i], e.msg);
	}
	for (int i = 0; i < n && rc == 0; i++) {
		kt_buf_printf(&labels[i], "%s ", t->kernel);
		kt_tmpl_format_shape(t, shapes[i], &labels[i]);
		kt_progress_init(&pr[i], a->quiet ? NULL : stderr, kt_buf_str(&labels[i]));
		tasks[i] = (kt_tune_task){.p = {.tmpl = t, .shape = shapes[i], .tc = tc, .measure = *m},
					  .label = kt_buf_str(&labels[i]), .progress = &pr[i], .only = only, .nonly = nonly};
	}
	kt_progress batch;
	kt_tune_stats st = {0};
	kt_progress_init(&batch, a->quiet ? NULL : stderr, n == 1 ? kt_buf_str(&labels[0]) : "the shapes");
	o->progress = &batch;
	o->stats = &st;
	if (rc == 0)
		rc = kt_tune_batch(tasks, (size_t)n, o, err);
	kt_gpu_info gi = {0};
	if (rc == 0)
		rc = kt_tune_gpu_info(o->backend, o->gpu >= 0 ? o->gpu : 0, &gi, err);
	for (int i = 0; i < n && rc == 0; i++) {
		kt_buf shape = {0};
		kt_tmpl_format_shape(t, shapes[i], &shape);
		if (tasks[i].rc) {
			*err = tasks[i].err;
			rc = -1;
		} else {
			print_result(t, kt_buf_str(&shape), tasks[i].p.shape, m, &tasks[i].out, a->top);
			rp[i] = &tasks[i].out;
		}
		if (rc == 0 && a->record)
			rc = record(t, a, i, shapes[i], &gi.id, &tasks[i].out, err);
		if (rc == 0 && a->t4)
			rc = write_t4(t, a, i, shapes[i], &gi.id, &tasks[i].out, err);
		kt_buf_free(&shape);
	}
	if (rc == 0)
		print_stats(&st, n);
	if (rc == 0 && n > 1) {
		uint16_t cfg[KT_MAX_SLOTS];
		double worst;
		if (kt_tune_robust(t, rp, (size_t)n, cfg, &worst) == 0) {
			kt_buf b = {0};
			kt_tmpl_format_config(t, cfg, &b);
			printf("\nmost robust across the %d shapes: %s (worst slowdown %.2fx)\n", n, kt_buf_str(&b), worst);
			kt_buf_free(&b);
		}
	}
	for (int i = 0; i < n; i++) {
		kt_tune_result_free(&tasks[i].out);
		kt_buf_free(&labels[i]);
	}
	free(tasks);
	free(rp);
	free(shapes);
	free(pr);
	free(labels);
	return rc;
}

/* "GPU 0: NVIDIA H200, sm_90, 132 SMs, 60 MB L2, driver 13.0", or "no GPU: <why>". */
static int list_gpus(const char *backend, kt_err *err)
{
	char why[256] = "";
	int n = kt_tune_gpus(backend, why, sizeof why);
	if (n <= 0)
		printf("no GPU: %s\n", why[0] ? why : "none found");
	for (int i = 0; i < n; i++) {
		kt_gpu_info gi;
		if (kt_tune_gpu_info(backend, i, &gi, err))
			return -1;
		printf("GPU %d: %s, sm_%d%d, %d SMs, %.0f MB L2, %lld B shared memory per block, driver %s\n", i, gi.id.name,
		       gi.id.cc_major, gi.id.cc_minor, gi.id.sms, (double)gi.id.l2_bytes / 1e6, (long long)gi.id.smem_optin,
		       gi.driver);
	}
	return 0;
}

int kt_cmd_tune(int argc, char **argv)
{
	tune_args a = {.budget = 0, .seed = 1, .gpu = 0, .top = TOP_SHOWN, .pack = KT_TUNE_PACK};
	const kt_opt opts[] = {
		{"shape", KT_OPT_LIST, &a.shapes, "SPEC", "a shape to tune, e.g. rows=4096,hidden=4096 (repeatable)"},
		{"type", KT_OPT_LIST, &a.types, "T=x", "choose a type symbol or an option, e.g. T=bfloat16 or LSE=base2 (repeatable)"},
		{"strategy", KT_OPT_STR, &a.strategy, "S", "search strategy: exhaustive, random, bestfirst, auto (default)"},
		{"budget", KT_OPT_INT, &a.budget, "N", "evaluate at most N configurations (default: all)"},
		{"seconds", KT_OPT_STR, &a.seconds, "S", "stop after about S seconds per shape"},
		{"seed", KT_OPT_INT, &a.seed, "N", "seed of the search and of the test inputs (default 1)"},
		{"gpu", KT_OPT_INT, &a.gpu, "N", "GPU ordinal; -1: every GPU of GPU 0's kind (default 0)"},
		{"arch", KT_OPT_STR, &a.arch, "CC", "compile for sm_CC, e.g. 90 or 90a (default: the GPU's)"},
		{"nvcc", KT_OPT_STR, &a.nvcc, "PATH", "the CUDA compiler (default: nvcc in PATH)"},
		{"flags", KT_OPT_STR, &a.flagstr, "\"F...\"", "code-generation flags for every variant, space-separated"},
		{"flag", KT_OPT_LIST, &a.flags, "F", "one code-generation flag, no blanks (repeatable)"},
		{"jobs", KT_OPT_INT, &a.jobs, "N", "parallel compiles (default: cores)"},
		{"pack", KT_OPT_INT, &a.pack, "N", "variants per nvcc translation unit, at most (default 16; 1: each alone)"},
		{"batch", KT_OPT_INT, &a.batch, "N", "configurations per compile batch, at most (default: from --jobs)"},
		{"timeout", KT_OPT_STR, &a.timeout, "S", "watchdog per variant in seconds (default 10)"},
		{"patience", KT_OPT_INT, &a.patience, "N", "stop a shape after N evaluations without a gain beyond the noise (default 16, or 3 per parameter; < 0: never)"},
		{"no-race", KT_OPT_FLAG, &a.no_race, NULL, "time every configuration to full precision (no racing)"},
		{"no-nvrtc", KT_OPT_FLAG, &a.no_nvrtc, NULL, "compile every variant with nvcc, never its toolkit's NVRTC (also KT_NVRTC=0)"},
		{"l2", KT_OPT_STR, &a.measure[KT_MEASURE_L2], "cold|warm",
		 "time with the inputs in DRAM (cold) or in the L2 (warm); default: the template's `@kt l2`, else cold"},
		{"launch", KT_OPT_STR, &a.measure[KT_MEASURE_LAUNCH], "stream|graph",
		 "time stream launches or CUDA-graph replays; default: the template's `@kt launch`, else stream"},
		{"config", KT_OPT_LIST, &a.configs, "P=V,...", "evaluate only this configuration, every parameter given (repeatable)"},
		{"top", KT_OPT_INT, &a.top, "N", "configurations shown per shape (default 10)"},
		{"record", KT_OPT_STR, &a.record, "FILE", "save every evaluated configuration (a recorded space)"},
		{"t4", KT_OPT_STR, &a.t4, "FILE", "save every evaluation in Kernel Tuner's T4 results format"},
		{"cache-dir", KT_OPT_STR, &a.cache_dir, "DIR", "where the GPU's measured ceilings are kept"},
		{"workdir", KT_OPT_STR, &a.workdir, "DIR", "keep the variant sources, cubins and logs here"},
		{"trace", KT_OPT_STR, &a.trace, "FILE", "write the run's timeline (compiles, measuring, waits) for Perfetto"},
		{"backend", KT_OPT_STR, &a.backend, "B", "GPU backend: cuda (the default; test builds add fake)"},
		{"quiet", KT_OPT_FLAG, &a.quiet, NULL, "no progress line"},
		{"list-gpus", KT_OPT_FLAG, &a.list_gpus, NULL, "list the GPUs that tuning would use (or why there is none) and exit"},
		{0},
	};
	const char *pos[1];
	int npos, rc;
	kt_err err = {0};
	kt_buf diags = {0};
	kt_tmpl *t = NULL;
	char *cache_dir = NULL;
	kt_buf flagstr = {0};
	kt_flags split = {0};
	uint16_t *only = NULL;
	kt_tune_opts o = {0};
	if ((rc = kt_opt_begin("tune", opts, argc, argv, pos, 1, &npos, usage, about)) >= 0)
		goto out;
	rc = 0;
	kt_err be = {0};
	if (kt_gpu_backend_check(a.backend, &be))
		rc = kt_fail(&err, "--backend %s: %s", a.backend, be.msg);
	if (rc == 0 && a.list_gpus) {
		rc = list_gpus(a.backend, &err) ? kt_opt_fail("tune", &diags, &err) : KT_EXIT_OK;
		goto out;
	}
	if (rc == 0 && npos != 1)
		rc = kt_fail(&err, "no template given (usage: %s)", usage);
	if (rc == 0 && a.shapes.n == 0)
		rc = kt_fail(&err, "--shape is required (usage: %s)", usage);
	if (rc == 0 && a.pack < 1)
		rc = kt_fail(&err, "--pack %lld: a translation unit holds at least 1 variant", a.pack);
	if (rc == 0 && (a.batch < 0 || a.batch > KT_TUNE_MAX_BATCH))
		rc = kt_fail(&err, "--batch %lld: a compile batch holds 1 to %d configurations (0: from --jobs)", a.batch,
			     KT_TUNE_MAX_BATCH);
	kt_measure given, m;
	kt_measure_unset(&given);
	for (int i = 0; rc == 0 && i < KT_NMEASURE; i++) {
		kt_err me = {0};
		if (a.measure[i] && kt_measure_set(&given, (kt_measure_setting)i, a.measure[i], &me))
			rc = kt_fail(&err, "--%s: %s", kt_measure_infos[i].name, me.msg);
	}
	if (rc == 0)
		rc = parse_seconds(a.seconds, "--seconds", &o.seconds, &err);
	if (rc == 0)
		rc = parse_seconds(a.timeout, "--timeout", &o.timeout_s, &err);
	o.run_all = a.record != NULL; /* a recorded space holds what every configuration did */
	if (rc == 0 && a.trace)
		rc = check_trace_dir(a.trace, &err);
	char devarch[8] = "";
	int devsms = 0;
	if (rc == 0)
		rc = kt_arch_check(a.arch, &err);
	if (rc == 0) { /* the constraints see the target: the GPU's, as tuning compiles for it; the grid its sms */
		kt_gpu_info gi;
		kt_err e = {0};
		if (kt_tune_gpu_info(a.backend, a.gpu < 0 ? 0 : (int)a.gpu, &gi, &e) == 0) {
			kt_gpu_arch(&gi.id, devarch, sizeof devarch);
			devsms = gi.id.sms;
		}
	}
	if (rc == 0) {
		kt_tmpl_opts to = {.types = a.types.v, .ntypes = a.types.n, .arch = a.arch ? a.arch : devarch[0] ? devarch : NULL,
				   .sms = devsms};
		t = kt_tmpl_parse(pos[0], &to, &diags, &err);
		rc = t ? 0 : -1;
	}
	if (rc == 0)
		kt_measure_resolve(&given, &t->measure, &m);
	if (rc == 0) {
		only = kt_xcalloc((size_t)a.configs.n * (size_t)t->nparams + 1, sizeof *only);
		for (int i = 0; i < a.configs.n && rc == 0; i++) {
			kt_err ce = {0};
			if (kt_tmpl_parse_config(t, a.configs.v[i], only + (size_t)i * (size_t)t->nparams, &ce))
				rc = kt_fail(&err, "--config '%s': %s", a.configs.v[i], ce.msg);
		}
	}
	if (rc == 0) {
		kt_err e = {0};
		cache_dir = a.cache_dir ? kt_xstrdup(a.cache_dir) : kt_env_cache_dir(&e);
		kt_cache_opts co = {.user_dir = cache_dir};
		kt_cache *cache = cache_dir ? kt_cache_open(&co, &e) : NULL; /* keeps the GPU's ceilings */
		kt_gpu_info gi;
		kt_ceilings ceil = {0};
		int have_gpu = kt_tune_gpu_info(a.backend, a.gpu < 0 ? 0 : (int)a.gpu, &gi, &e) == 0;
		if (cache && have_gpu)
			kt_cache_ceilings(cache, &gi.id, &ceil);
		join_flags(&a, &flagstr);
		kt_flags_split(kt_buf_str(&flagstr), &split); /* kt compiles for --arch or the GPU (flags.h) */
		if (split.dropped.len)
			fprintf(stderr, "kt tune: note: --flags: left out '%s'; kt compiles for --arch, else the GPU's own\n",
				kt_buf_str(&split.dropped));
		kt_toolchain tc = {a.nvcc, "", a.arch ? a.arch : "", kt_buf_str(&split.keyed)};
		o.strategy = a.strategy;
		o.budget = (long)a.budget;
		o.seed = (uint64_t)a.seed;
		o.gpu = (int)a.gpu;
		o.jobs = (int)a.jobs;
		o.pack = (int)a.pack;
		o.batch = (int)a.batch;
		o.workdir = a.workdir;
		o.tmpdir = kt_env_tmpdir();
		o.backend = a.backend;
		o.ceilings = &ceil;
		o.patience = a.patience == 0 ? 0 : a.patience < 0 ? -1 : (int)a.patience;
		o.race = a.no_race ? -1 : 0;
		o.no_nvrtc = a.no_nvrtc || (kt_env("KT_NVRTC") && kt_env_false_value(kt_env("KT_NVRTC")));
		o.trace = a.trace ? kt_trace_new(kt_now()) : NULL;
		rc = tune_all(t, &a, &tc, &m, only, (size_t)a.configs.n, &o, &err);
		kt_err te = {0};
		if (o.trace && kt_trace_write(o.trace, a.trace, &te) && rc == 0) /* a failed run's trace is kept too */
			rc = kt_fail(&err, "--trace '%s': %s", a.trace, te.msg);
		kt_trace_free(o.trace);
		if (rc == 0 && cache && have_gpu)
			kt_cache_ceilings_store(cache, &gi.id, &ceil);
		kt_cache_close(cache, NULL);
	}
	rc = rc == 0 ? KT_EXIT_OK : kt_opt_fail("tune", &diags, &err);
out:
	kt_tmpl_free(t);
	kt_buf_free(&diags);
	kt_strlist_free(&a.shapes);
	kt_strlist_free(&a.types);
	kt_strlist_free(&a.flags);
	kt_strlist_free(&a.configs);
	free(only);
	kt_buf_free(&flagstr);
	kt_flags_free(&split);
	free(cache_dir);
	return rc;
}
