/* search_curves - how fast each search strategy approaches the optimum of recorded spaces.
 *
 *   search_curves [--seeds N] [--batch N] [--jobs N] [--lag] [--share F] [--root DIR] [--check] RECORDING|DIR...
 *       For each recording (a directory stands for its *.csv files): the percent of the exhaustive
 *       optimum that each strategy has reached after a number of evaluations, median over N seeds
 *       (default 20), with a budget of F (default 0.25) of the feasible space, asked in batches
 *       of --batch (default 32) like the GPU pipeline does; with --lag each batch is told only
 *       after the next was asked, as kt tune's pipeline does.  --jobs N: the search is told that N
 *       configurations compile in the time of one (kt tune tells it its parallel compile jobs;
 *       default 1).  --check exits 1 when the default
 *       strategy's median stays below 98% (the target of issue 4).
 *
 *   search_curves --warm DIR [--seeds N] [--root DIR] [--jobs N] RECORDING|DIR...
 *       What kt generate does with a miss at the recording's shape and GPU: the default search
 *       (auto, a budget of 400) told one batch late, stopped by convergence (patience 12 to 48, and kt's default)
 *       or its budget; cold (no seeds) and warm (seeds from the same template's records in the
 *       cache directory DIR, e.g. kt's cache/, chosen by transfer.c as a miss would).  Per row the
 *       medians over N search seeds of the evaluations spent, the percent of the optimum at the
 *       end, and the evaluations to 98%, and the least percent of the optimum any seed ended at
 *       (docs/search.md, "Warm start").
 *
 *   search_curves --noise N [--root DIR] [--jobs N] RECORDING|DIR...
 *       Does the cold search choose the same way twice?  N pairs of cold configures per recording,
 *       both of a pair from one search seed, their results told with measurement noise; per
 *       patience, how many pairs chose configurations more than 2% apart (docs/search.md,
 *       "Choosing the same way twice").
 *
 *   search_curves --noise N --group [--root DIR] [--jobs N] RECORDING|DIR...
 *       The same for a project: the recordings (one template at several shapes) tuned together, as
 *       one configure tunes them, each shape then given its siblings' finds in several ways (the
 *       one kt uses is marked); per way and shape, the pairs more than 2% apart (docs/search.md,
 *       "A project replayed").
 *
 *   search_curves --synth TEMPLATE --shape SPEC [--types T=t,...] [--seed N] [--root DIR] -o OUT
 *       Writes a synthetic recording: every feasible configuration timed by a roofline-like model
 *       of a memory-bound kernel on an H200-like GPU (see docs/search.md), for CI before real
 *       recordings exist.
 *
 * Template paths in recordings are relative to --root (default: the current directory).
 */
#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "recorded.h"
#include "search.h"
#include "space.h"
#include "tmpl.h"
#include "transfer.h"
#include "tune.h"

#define TARGET 0.98
#define MAX_SEEDS 101
#define NCHECKPOINTS (sizeof checkpoints / sizeof checkpoints[0])

static const double checkpoints[] = {0.01, 0.02, 0.05, 0.10, 0.15, 0.20, 0.25};

struct opts {
	int seeds, check, lag;
	size_t batch, jobs;
	double share;
	const char *root, *synth, *shape, *types, *out;
	uint64_t seed;
	const char *warm; /* --warm DIR: the configure simulation, seeds from DIR's records */
	int noise;        /* --noise N: pairs of noisy cold configures, the stability simulation */
	int group;        /* --group: with --noise, the recordings are one template's shapes, tuned together */
};

/* ---- loading ---- */

static char *resolve(const struct opts *o, const char *path)
{
	return path[0] == '/' || !o->root || !strcmp(o->root, ".") ? kt_xstrdup(path) : kt_path_join(o->root, path);
}

/* types: "T=bfloat16,U=float" (the recording's `# types:` line), or NULL; arch: its `# arch:`
 * line (the compile target the constraints see), or NULL. */
static kt_tmpl *load_tmpl(const struct opts *o, const char *path, const char *types, const char *arch, kt_err *err)
{
	char *p = resolve(o, path), *list = kt_xstrdup(types ? types : ""), *save = NULL;
	const char *names[KT_MAX_SLOTS];
	kt_tmpl_opts topts = {.types = names, .arch = arch && arch[0] ? arch : NULL};
	for (char *tok = strtok_r(list, ",", &save); tok && topts.ntypes < KT_MAX_SLOTS; tok = strtok_r(NULL, ",", &save))
		names[topts.ntypes++] = tok;
	kt_buf diags = {0};
	kt_tmpl *t = kt_tmpl_parse(p, &topts, &diags, err);
	free(list);
	if (!t)
		fputs(kt_buf_str(&diags), stderr);
	else
		t->path = kt_arena_strdup(t->arena, path); /* as recordings name it: relative to --root */
	kt_buf_free(&diags);
	free(p);
	return t;
}

/* ---- curves ---- */

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

static double median(double *v, int n)
{
	qsort(v, (size_t)n, sizeof *v, cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* One search to the end: frac[k] = optimum / best after checkpoint k's evaluations (0 while none
 * passed); *reach = evaluations until TARGET (budget + 1 when never). */
static void one_run(const char *strategy, const kt_tmpl *t, const kt_space *sp, const double *times, double opt,
		    long budget, uint64_t seed, size_t batch, size_t jobs, int lag, const long *at, double *frac, long *reach)
{
	kt_search *s = kt_search_new(strategy, t, sp, budget, seed, NULL);
	kt_search_set_parallel(s, jobs);
	size_t *idx = kt_xmalloc(batch * sizeof *idx), *prev = kt_xmalloc(batch * sizeof *prev), n, nprev = 0;
	long done = 0;
	size_t k = 0;
	double best = -1;
	*reach = budget + 1;
	for (;;) {
		n = kt_search_ask(s, idx, batch);
		/* --lag: the previous batch is told only now, after the next one was asked (the GPU
		 * pipeline measures one batch while the next compiles) */
		for (size_t i = 0; i < nprev; i++)
			kt_search_tell(s, prev[i], times[prev[i]]);
		if (!n && nprev) {
			nprev = 0;
			continue;
		}
		if (!n)
			break;
		for (size_t i = 0; i < n; i++) {
			double tm = times[idx[i]];
			if (tm >= 0 && (best < 0 || tm < best))
				best = tm;
			done++;
			if (best > 0 && opt / best >= TARGET && *reach > budget)
				*reach = done;
			while (k < NCHECKPOINTS && at[k] == done)
				frac[k++] = best > 0 ? opt / best : 0;
		}
		if (lag) {
			memcpy(prev, idx, n * sizeof *idx);
			nprev = n;
		} else {
			for (size_t i = 0; i < n; i++)
				kt_search_tell(s, idx[i], times[idx[i]]);
		}
	}
	while (k < NCHECKPOINTS)
		frac[k++] = best > 0 ? opt / best : 0;
	free(prev);
	free(idx);
	kt_search_free(s);
}

/* Prints the table of one recording; returns the default strategy's median at the budget. */
static double curves(const struct opts *o, const kt_tmpl *t, const kt_space *sp, const double *times, double opt)
{
	long budget = (long)ceil(o->share * (double)sp->count), at[NCHECKPOINTS];
	printf("%-12s", "evaluations");
	for (size_t k = 0; k < NCHECKPOINTS; k++) {
		at[k] = (long)ceil(checkpoints[k] * (double)sp->count);
		printf(" %7ld", at[k]);
	}
	printf("  to %.0f%%\n%-12s", 100 * TARGET, "of space");
	for (size_t k = 0; k < NCHECKPOINTS; k++)
		printf(" %6.0f%%", 100 * checkpoints[k]);
	putchar('\n');
	double result = 0;
	const char *names[] = {"random", "bestfirst", "auto"};
	for (size_t si = 0; si < sizeof names / sizeof names[0]; si++) {
		double frac[MAX_SEEDS][NCHECKPOINTS], col[MAX_SEEDS], reach[MAX_SEEDS];
		for (int seed = 0; seed < o->seeds; seed++) {
			long r;
			one_run(names[si], t, sp, times, opt, budget, (uint64_t)seed, o->batch, o->jobs, o->lag, at, frac[seed], &r);
			reach[seed] = (double)r;
		}
		printf("%-12s", names[si]);
		for (size_t k = 0; k < NCHECKPOINTS; k++) {
			for (int seed = 0; seed < o->seeds; seed++)
				col[seed] = frac[seed][k];
			double m = median(col, o->seeds);
			printf(" %6.1f%%", 100 * m);
			if (si == 2 && k == NCHECKPOINTS - 1)
				result = m;
		}
		double mr = median(reach, o->seeds);
		if (mr > (double)budget)
			printf("  >%ld\n", budget);
		else
			printf("  %.0f\n", mr);
	}
	return result;
}

/* ---- the configure simulation (--warm) ---- */

#define CONFIGURE_BUDGET 400 /* KT_GENERATE_BUDGET */

/* A standard normal draw from the state *h (splitmix64, Box-Muller). */
static double gauss(uint64_t *h)
{
	double u[2];
	for (int i = 0; i < 2; i++) {
		uint64_t z = (*h += 0x9E3779B97F4A7C15ull);
		z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
		z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
		u[i] = ((double)((z ^ (z >> 31)) >> 11) + 0.5) / 9007199254740992.0; /* (0, 1) */
	}
	return sqrt(-2 * log(u[0])) * cos(6.283185307179586 * u[1]);
}

/* One shape's search as kt generate tunes a miss: bestfirst from seeds, batches told one batch
 * late, each result told off by a normal error of half its recorded spread (the noise tune.c
 * assumes; at most 5%, and cut at 3 sigma) when noise (a seed) is not 0. */
typedef struct {
	const kt_space *sp;
	const double *times, *spreads;
	double opt;
	kt_search *s;
	double *told; /* what each configuration was told, -1: not evaluated (or failed) */
	double best, rel;
	long used, reach;
	uint64_t noise;
	size_t *idx, *prev, nprev, batch;
} sim;

static void sim_start(sim *m, const kt_tmpl *t, const kt_space *sp, const double *times, const double *spreads, double opt,
		      const size_t *seeds, size_t nseeds, uint64_t seed, uint64_t noise, size_t batch, size_t jobs)
{
	*m = (sim){.sp = sp, .times = times, .spreads = spreads, .opt = opt,
		   .s = kt_search_new(NULL, t, sp, CONFIGURE_BUDGET, seed, NULL), .best = -1, .reach = -1, .noise = noise,
		   .idx = kt_xmalloc(batch * sizeof *m->idx), .prev = kt_xmalloc(batch * sizeof *m->prev), .batch = batch,
		   .told = kt_xmalloc((sp->count + 1) * sizeof *m->told)};
	kt_search_set_parallel(m->s, jobs);
	kt_search_seed(m->s, seeds, nseeds);
	for (size_t i = 0; i < sp->count; i++)
		m->told[i] = -1;
}

/* Evaluates configuration i: its noisy time (-1: failed), also kept in m->told. */
static double sim_measure(sim *m, size_t i)
{
	double tm = m->times[i];
	if (tm >= 0 && m->noise) { /* at most 3 sigma, and sigma at most 5%: a median, not one launch */
		const double z = gauss(&m->noise), sd = fmin(m->spreads[i] / tm / 2, 0.05);
		tm *= 1 + fmax(-3, fmin(3, z)) * sd;
	}
	m->told[i] = tm;
	if (tm >= 0 && (m->best < 0 || tm < m->best)) {
		m->best = tm;
		m->rel = m->spreads[i] / m->times[i] / 2; /* as tune.c: half the launch spread */
		kt_search_set_noise(m->s, m->rel);
	}
	m->used++;
	if (m->best > 0 && m->opt / m->best >= TARGET && m->reach < 0)
		m->reach = m->used;
	return tm;
}

/* Asks and tells until the search converges (patience) or is done. */
static void sim_search(sim *m, int patience)
{
	for (;;) {
		size_t n = kt_search_converged(m->s, patience) ? 0 : kt_search_ask(m->s, m->idx, m->batch);
		for (size_t i = 0; i < m->nprev; i++)
			kt_search_tell(m->s, m->prev[i], sim_measure(m, m->prev[i]));
		if (!n && !m->nprev)
			break;
		memcpy(m->prev, m->idx, n * sizeof *m->idx);
		m->nprev = n;
	}
}

/* The recorded time of what kt's final decision would take: of the results within twice the noise
 * of the best told one, the one that is really the fastest (the rivals are timed again together,
 * precisely); -1 when none passed. */
static double sim_chosen(const sim *m)
{
	double c = -1;
	for (size_t i = 0; i < m->sp->count; i++)
		if (m->told[i] >= 0 && m->told[i] <= m->best * (1 + 2 * m->rel) && (c < 0 || m->times[i] < c))
			c = m->times[i];
	return c;
}

static void sim_free(sim *m)
{
	free(m->told);
	free(m->prev);
	free(m->idx);
	kt_search_free(m->s);
}

/* One miss to the end.  *used: evaluations; *final: the optimum over the best found; *reach:
 * evaluations to TARGET (used + 1 when never); *chosen: sim_chosen. */
static void one_miss(const kt_tmpl *t, const kt_space *sp, const double *times, const double *spreads, double opt,
		     const size_t *seeds, size_t nseeds, int patience, uint64_t seed, uint64_t noise, size_t batch,
		     size_t jobs, long *used, double *final, long *reach, double *chosen)
{
	sim m;
	sim_start(&m, t, sp, times, spreads, opt, seeds, nseeds, seed, noise, batch, jobs);
	sim_search(&m, patience);
	*used = m.used;
	*final = m.best > 0 ? opt / m.best : 0;
	*reach = m.reach < 0 ? m.used + 1 : m.reach;
	*chosen = sim_chosen(&m);
	sim_free(&m);
}

/* The table of one recording: cold and warm, at several patiences and kt's own. */
static void configure_sim(const struct opts *o, const kt_tmpl *t, kt_recorded *r, const kt_space *sp,
			  const double *times, const double *spreads, double opt, const char *arch)
{
	kt_target target;
	kt_target_from_id(kt_recorded_gpu(r), &target);
	kt_toolchain tc = {NULL, "", arch, ""};
	kt_problem p = {.tmpl = t, .shape = kt_recorded_shape(r), .target = &target, .tc = &tc};
	uint16_t *cfgs;
	size_t ncfgs, *seeds = kt_xcalloc(KT_TRANSFER_SEEDS + 1, sizeof *seeds), nseeds = 0;
	kt_buf why = {0};
	const char *dirs[1] = {o->warm};
	kt_transfer_seeds(&p, dirs, 1, &cfgs, &ncfgs, &why);
	for (size_t i = 0; i < ncfgs; i++) {
		long j = kt_space_find(sp, cfgs + i * (size_t)t->nparams);
		if (j >= 0)
			seeds[nseeds++] = (size_t)j;
	}
	printf("  seeds: %zu, from %s\n", nseeds, nseeds ? kt_buf_str(&why) : "nothing (no record of this template)");
	printf("  %-20s %9s %9s %9s %9s\n", "median of seeds", "evaluated", "% of opt", "to 98%", "worst");
	const int patience[] = {12, 16, 20, 24, 48, kt_tune_patience(t)}; /* the last: kt's default */
	size_t batch = 8; /* a miss of a batch is asked a few at a time */
	for (int warm = 0; warm < 2; warm++)
		for (size_t k = 0; k < sizeof patience / sizeof patience[0]; k++) {
			double u[MAX_SEEDS], f[MAX_SEEDS], re[MAX_SEEDS];
			for (int sd = 0; sd < o->seeds; sd++) {
				long used, reach;
				double final;
				double chosen;
				one_miss(t, sp, times, spreads, opt, seeds, warm ? nseeds : 0, patience[k], (uint64_t)sd, 0, batch,
					 o->jobs, &used, &final, &reach, &chosen);
				u[sd] = (double)used, f[sd] = final, re[sd] = (double)reach;
			}
			double mu = median(u, o->seeds), mf = median(f, o->seeds), mr = median(re, o->seeds), worst = 1;
			for (int sd = 0; sd < o->seeds; sd++)
				worst = f[sd] < worst ? f[sd] : worst;
			char label[64];
			snprintf(label, sizeof label, "%s, patience %d%s", warm ? "warm" : "cold", patience[k],
				 k == sizeof patience / sizeof patience[0] - 1 ? " (kt)" : "");
			char to[32] = "-";
			if (mr <= mu)
				snprintf(to, sizeof to, "%.0f", mr);
			printf("  %-20s %9.0f %8.1f%% %9s %8.1f%%\n", label, mu, 100 * mf, to, 100 * worst);
		}
	kt_buf_free(&why);
	free(cfgs);
	free(seeds);
}

/* Does the cold search choose the same way twice?  Pairs of noisy runs (--noise N pairs): both of
 * a pair start from the same search seed, as two configures do, and differ in their measurement
 * errors only.  Per patience: the median evaluations and percent of the optimum of what is chosen,
 * and how many pairs chose configurations more than 2% apart (issue 22's stability target). */
static void stability_sim(const struct opts *o, const kt_tmpl *t, const kt_space *sp, const double *times,
			  const double *spreads, double opt)
{
	printf("  %-20s %9s %9s %12s %9s\n", "noisy pairs", "evaluated", "% of opt", "apart > 2%", "worst");
	const int patience[] = {12, 16, 24, 48, kt_tune_patience(t)};
	for (size_t k = 0; k < sizeof patience / sizeof patience[0]; k++) {
		double *u = kt_xmalloc(2 * (size_t)o->noise * sizeof *u), *f = kt_xmalloc(2 * (size_t)o->noise * sizeof *f);
		int apart = 0;
		double worst = 1;
		for (int p = 0; p < o->noise; p++) {
			double c[2];
			for (int r = 0; r < 2; r++) {
				long used, reach;
				double final;
				one_miss(t, sp, times, spreads, opt, NULL, 0, patience[k], (uint64_t)p, 2 * (uint64_t)p + 1 + (uint64_t)r,
					 8, o->jobs, &used, &final, &reach, &c[r]);
				u[2 * p + r] = (double)used, f[2 * p + r] = c[r] > 0 ? opt / c[r] : 0;
			}
			double ratio = c[0] <= 0 || c[1] <= 0 ? 1 : c[0] > c[1] ? c[0] / c[1] : c[1] / c[0];
			apart += ratio > 1.02;
			worst = ratio > worst ? ratio : worst;
		}
		char label[64];
		snprintf(label, sizeof label, "cold, patience %d%s", patience[k], k == sizeof patience / sizeof patience[0] - 1 ? " (kt)" : "");
		printf("  %-20s %9.0f %8.1f%% %6d of %-3d %8.1f%%\n", label, median(u, 2 * o->noise), 100 * median(f, 2 * o->noise), apart,
		       o->noise, 100 * (worst - 1));
		free(u);
		free(f);
	}
}

/* A recording loaded: its template, its space, each configuration's recorded time (-1: failed or
 * not recorded) and spread, and the optimum. */
typedef struct {
	kt_buf tpath, types, arch;
	kt_tmpl *t;
	kt_recorded *r;
	kt_space sp;
	double *times, *spreads, opt;
	size_t missing, failed;
} rec;

static void rec_free(rec *x)
{
	free(x->times);
	free(x->spreads);
	kt_space_free(&x->sp);
	kt_recorded_free(x->r);
	kt_tmpl_free(x->t);
	kt_buf_free(&x->tpath);
	kt_buf_free(&x->types);
	kt_buf_free(&x->arch);
}

static int rec_load(const struct opts *o, const char *path, rec *x)
{
	kt_err err = {0};
	*x = (rec){0};
	if (kt_recorded_template_path(path, &x->tpath, &err) < 0 || kt_recorded_header(path, "types", &x->types, &err) < 0 ||
	    kt_recorded_header(path, "arch", &x->arch, &err) < 0 ||
	    !(x->t = load_tmpl(o, kt_buf_str(&x->tpath), kt_buf_str(&x->types), kt_buf_str(&x->arch), &err)) ||
	    kt_recorded_load(path, x->t, &x->r, &err) < 0 || kt_space_enum(x->t, kt_recorded_shape(x->r), &x->sp, &err) < 0) {
		fprintf(stderr, "search_curves: %s\n", err.msg);
		rec_free(x);
		return -1;
	}
	x->times = kt_xmalloc((x->sp.count + 1) * sizeof *x->times);
	x->spreads = kt_xcalloc(x->sp.count + 1, sizeof *x->spreads);
	x->opt = -1;
	for (size_t i = 0; i < x->sp.count; i++) {
		kt_eval e;
		if (kt_recorded_eval(x->r, kt_space_cfg(&x->sp, i), &e) < 0)
			x->missing++, e.status = KT_FAULTED;
		x->times[i] = e.status == KT_OK ? e.median_us : -1;
		x->spreads[i] = e.status == KT_OK ? e.spread_us : 0;
		x->failed += e.status != KT_OK;
		if (x->times[i] >= 0 && (x->opt < 0 || x->times[i] < x->opt))
			x->opt = x->times[i];
	}
	if (x->opt < 0) {
		fprintf(stderr, "search_curves: %s: no configuration passed\n", path);
		rec_free(x);
		return -1;
	}
	return 0;
}

/* Runs the curves of one recording; 1 when it misses the target, -1 on error. */
static int bench_one(const struct opts *o, const char *path)
{
	rec x;
	if (rec_load(o, path, &x) < 0)
		return -1;
	int rc = 0;
	kt_buf shape = {0};
	kt_tmpl_format_shape(x.t, kt_recorded_shape(x.r), &shape);
	printf("\n%s\n  %s at %s on %s\n  %zu feasible, %zu failed, %zu not recorded; optimum %.3f us; budget %.0f%%, "
	       "batches of %zu, %zu jobs, median of %d seeds\n",
	       path, kt_buf_str(&x.tpath), kt_buf_str(&shape), kt_recorded_gpu(x.r)->name[0] ? kt_recorded_gpu(x.r)->name : "?",
	       x.sp.count, x.failed, x.missing, x.opt, 100 * o->share, o->batch, o->jobs, o->seeds);
	kt_buf_free(&shape);
	if (o->noise) {
		stability_sim(o, x.t, &x.sp, x.times, x.spreads, x.opt);
	} else if (o->warm) {
		configure_sim(o, x.t, x.r, &x.sp, x.times, x.spreads, x.opt, kt_buf_str(&x.arch));
	} else {
		double m = curves(o, x.t, &x.sp, x.times, x.opt);
		rc = m < TARGET;
		if (rc)
			printf("  MISSED: the default strategy reaches %.1f%% < %.0f%%\n", 100 * m, 100 * TARGET);
	}
	rec_free(&x);
	return rc;
}

#define TOP 5 /* the most configurations of each sibling that a shape evaluates */

/* Does a project's cold configure choose the same way twice, with siblings?  The recordings
 * x[0..n), one template's shapes, are tuned together as one configure tunes them, in pairs of
 * noisy runs (--noise N pairs, --group): every shape's search runs to convergence, and then, as
 * tune_choose.c does, each shape evaluates the fastest configurations each of the others found
 * (its siblings), where feasible and not evaluated yet.  Per way the siblings are used, and per
 * shape: the median evaluations, the median percent of the optimum of what is chosen, and how
 * many pairs chose configurations more than 2% apart.  The ways:
 *   alone:                no siblings;
 *   bests:                each sibling's fastest evaluated, and the choice made from what was
 *                         evaluated (kt until 2026-11-29);
 *   bests, searched from: each told to the search, which goes on from them while one is a gain;
 *   top 3 (kt):           each sibling's three fastest evaluated;
 *   top 3 / 5, searched from: likewise, told to the search. */
static int group_sim(const struct opts *o, rec *x, size_t n)
{
	for (size_t k = 1; k < n; k++)
		if (strcmp(kt_buf_str(&x[k].tpath), kt_buf_str(&x[0].tpath)) || strcmp(kt_buf_str(&x[k].types), kt_buf_str(&x[0].types))) {
			fprintf(stderr, "search_curves: --group: %s and %s are recordings of different templates or types\n",
				kt_buf_str(&x[0].tpath), kt_buf_str(&x[k].tpath));
			return -1;
		}
	const kt_tmpl *t = x[0].t;
	const int patience = kt_tune_patience(t);
	static const struct {
		const char *name;
		int top, search;
	} ways[] = {{"alone", 0, 0},
		     {"bests", 1, 0},
		     {"bests, searched from", 1, 1},
		     {"top 3 (kt)", 3, 0},
		     {"top 3, searched from", 3, 1},
		     {"top 5, searched from", 5, 1}};
	const size_t nways = sizeof ways / sizeof ways[0];
	printf("\n%s (%s), %zu shapes as one configure, %d noisy pairs, patience %d\n", kt_buf_str(&x[0].tpath),
	       kt_buf_str(&x[0].types), n, o->noise, patience);
	printf("  %-22s %-22s %9s %9s %12s %8s\n", "siblings", "shape", "evaluated", "% of opt", "apart > 2%", "worst");
	sim *m = kt_xmalloc(2 * n * sizeof *m);
	double *u = kt_xmalloc(2 * n * (size_t)o->noise * sizeof *u), *f = kt_xmalloc(2 * n * (size_t)o->noise * sizeof *f);
	int *apart = kt_xmalloc(n * sizeof *apart);
	double *worst = kt_xmalloc(n * sizeof *worst);
	long *best = kt_xmalloc(n * TOP * sizeof *best);
	for (size_t w = 0; w < nways; w++) {
		int total = 0;
		double evals = 0;
		for (size_t k = 0; k < n; k++)
			apart[k] = 0, worst[k] = 1;
		for (int p = 0; p < o->noise; p++) {
			for (int r = 0; r < 2; r++) {
				sim *mr = m + (size_t)r * n;
				for (size_t k = 0; k < n; k++) {
					sim_start(&mr[k], t, &x[k].sp, x[k].times, x[k].spreads, x[k].opt, NULL, 0, (uint64_t)p * 31 + k,
						  ((uint64_t)p * 64 + k) * 2 + 1 + (uint64_t)r, 8, o->jobs);
					sim_search(&mr[k], patience);
				}
				/* each shape's fastest configurations once every search stopped */
				for (size_t k = 0; k < n; k++)
					for (int j = 0; j < TOP; j++) {
						long b = -1;
						for (size_t i = 0; i < x[k].sp.count; i++)
							if (mr[k].told[i] >= 0 && (j < 1 || mr[k].told[i] > mr[k].told[best[k * TOP + j - 1]]) &&
							    (b < 0 || mr[k].told[i] < mr[k].told[b]))
								b = (long)i;
						best[k * TOP + j] = b;
					}
				for (size_t k = 0; k < n; k++) {
					for (size_t j = 0; j < n; j++)
						for (int q = 0; q < ways[w].top && j != k; q++) {
							long b = best[j * TOP + q];
							long i = b < 0 ? -1 : kt_space_find(&x[k].sp, kt_space_cfg(&x[j].sp, (size_t)b));
							if (i < 0 || mr[k].told[i] >= 0 || kt_search_asked(mr[k].s) >= CONFIGURE_BUDGET)
								continue;
							if (ways[w].search)
								kt_search_known(mr[k].s, (size_t)i, sim_measure(&mr[k], (size_t)i));
							else
								sim_measure(&mr[k], (size_t)i);
						}
					if (ways[w].search)
						sim_search(&mr[k], patience);
				}
			}
			for (size_t k = 0; k < n; k++) {
				double c0 = sim_chosen(&m[k]), c1 = sim_chosen(&m[n + k]);
				double ratio = c0 <= 0 || c1 <= 0 ? 1 : c0 > c1 ? c0 / c1 : c1 / c0;
				apart[k] += ratio > 1.02;
				worst[k] = ratio > worst[k] ? ratio : worst[k];
				for (int r = 0; r < 2; r++) {
					u[(k * (size_t)o->noise + (size_t)p) * 2 + (size_t)r] = (double)m[(size_t)r * n + k].used;
					f[(k * (size_t)o->noise + (size_t)p) * 2 + (size_t)r] = r ? x[k].opt / c1 : x[k].opt / c0;
				}
			}
			for (size_t k = 0; k < 2 * n; k++)
				sim_free(&m[k]);
		}
		for (size_t k = 0; k < n; k++) {
			kt_buf shape = {0};
			kt_tmpl_format_shape(t, kt_recorded_shape(x[k].r), &shape);
			double mu = median(u + k * (size_t)o->noise * 2, 2 * o->noise);
			printf("  %-22s %-22s %9.0f %8.1f%% %6d of %-3d %7.1f%%\n", k ? "" : ways[w].name, kt_buf_str(&shape), mu,
			       100 * median(f + k * (size_t)o->noise * 2, 2 * o->noise), apart[k], o->noise, 100 * (worst[k] - 1));
			kt_buf_free(&shape);
			total += apart[k], evals += mu;
		}
		printf("  %-22s %-22s %9.0f %9s %6d of %-3d\n", "", "(all shapes)", evals, "", total, o->noise * (int)n);
	}
	free(best);
	free(worst);
	free(apart);
	free(f);
	free(u);
	free(m);
	return 0;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The recordings a path names, appended to (*names)[0..*n): a directory stands for its *.csv files,
 * in name order. */
static void list_paths(const char *path, char ***names, size_t *n)
{
	DIR *d = opendir(path);
	if (!d) {
		*names = kt_xrealloc(*names, (*n + 1) * sizeof **names);
		(*names)[(*n)++] = kt_xstrdup(path);
		return;
	}
	size_t first = *n;
	struct dirent *e;
	while ((e = readdir(d))) {
		size_t len = strlen(e->d_name);
		if (len > 4 && !strcmp(e->d_name + len - 4, ".csv")) {
			*names = kt_xrealloc(*names, (*n + 1) * sizeof **names);
			(*names)[(*n)++] = kt_path_join(path, e->d_name);
		}
	}
	closedir(d);
	qsort(*names + first, *n - first, sizeof **names, cmp_str);
	if (*n == first)
		fprintf(stderr, "search_curves: %s: no recordings (*.csv)\n", path);
}

/* --group: the recordings names[0..n) as one configure's shapes. */
static int bench_group(const struct opts *o, char **names, size_t n)
{
	rec *x = kt_xcalloc(n + 1, sizeof *x);
	size_t loaded = 0;
	int rc = n ? 0 : -1;
	while (loaded < n && rc == 0)
		rc = rec_load(o, names[loaded], &x[loaded]) < 0 ? -1 : (loaded++, 0);
	if (rc == 0)
		rc = group_sim(o, x, n);
	for (size_t k = 0; k < loaded; k++)
		rec_free(&x[k]);
	free(x);
	return rc;
}

/* ---- the synthetic model ---- */

/* An H200-like GPU, as far as a memory-bound kernel sees it. */
static const struct {
	double bw_bytes_per_us, latency_us, launch_us, wave_us;
	int sms, threads_per_sm, blocks_per_sm, regs_per_sm, max_regs;
	long long smem_per_sm;
} gpu = {4.0e6, 0.8, 2.5, 0.15, 132, 2048, 32, 65536, 255, 233472};

/* The largest cost of a value of a choice or boolean parameter (most cost far less). */
#define CHOICE_COST 0.6

static uint64_t mix(uint64_t h, uint64_t v)
{
	h ^= v + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2);
	h *= 0xff51afd7ed558ccdULL;
	return h ^ (h >> 33);
}

static double unit(uint64_t h) /* [0, 1) */
{
	return (double)(mix(h, 0x5bd1e995) >> 11) / 9007199254740992.0;
}

static int64_t param_value(const kt_tmpl *t, const uint16_t *cfg, const char *name, int64_t dflt)
{
	for (int p = 0; p < t->nparams; p++)
		if (!strcmp(t->params[p].name, name) && t->params[p].type == KT_PINT)
			return t->params[p].vals[cfg[p]];
	return dflt;
}

static int elem_size(const kt_tmpl *t)
{
	for (int i = 0; i < t->nargs; i++)
		if (t->args[i].role == KT_IN)
			return kt_etypes[t->args[i].type].size;
	return 4;
}

/* Time of one configuration: bytes over a bandwidth that narrow vectors, too little memory in
 * flight and a partial last wave reduce; fixed costs for the launch and each wave; a factor per
 * value of each non-numeric parameter (up to CHOICE_COST) and a small one per pair of values (the effects this model
 * does not know), and 0.5% of noise.  Fails (over-limits) where registers or shared memory run out. */
static kt_status model(const kt_tmpl *t, const int64_t *shape, const uint16_t *cfg, uint64_t seed, double *us)
{
	kt_val env[KT_MAX_SLOTS];
	kt_launch L;
	kt_tmpl_env(t, shape, cfg, env);
	if (kt_tmpl_launch(t, env, &L, NULL) < 0)
		return KT_COMPILE_FAILED;
	double vec = (double)param_value(t, cfg, "VEC", 1), items = (double)param_value(t, cfg, "ITEMS", 1);
	double threads = (double)(L.block[0] * L.block[1] * L.block[2]);
	double blocks = (double)(L.grid[0] * L.grid[1] * L.grid[2]);
	double regs = 24 + vec * items * elem_size(t) / 2.0;
	if (regs * threads > gpu.regs_per_sm || L.smem > gpu.smem_per_sm - 1024)
		return KT_OVER_LIMITS;
	double spill = regs > gpu.max_regs ? 1.0 + (regs - gpu.max_regs) / 64.0 : 1.0;
	regs = regs > gpu.max_regs ? gpu.max_regs : regs;
	double per_sm = fmin(gpu.blocks_per_sm, floor(gpu.threads_per_sm / threads));
	per_sm = fmin(per_sm, floor(gpu.regs_per_sm / (regs * threads)));
	if (L.smem > 0)
		per_sm = fmin(per_sm, floor((double)gpu.smem_per_sm / (double)(L.smem + 1024)));
	double slots = per_sm * gpu.sms, waves = blocks / slots;
	double resident = fmin(blocks, slots) / gpu.sms * threads; /* threads per SM */
	double inflight = resident * vec * items * elem_size(t);
	double needed = gpu.bw_bytes_per_us * gpu.latency_us / gpu.sms;
	double mlp = fmin(1.0, inflight / needed);
	double width = fmin(1.0, 0.55 + 0.15 * log2(vec * elem_size(t) / 2.0));
	double tail = waves < 1 ? 1.0 : 1.0 + 0.3 * (ceil(waves) / waves - 1.0);
	double bytes = L.bytes > 0 ? L.bytes : blocks * threads * vec * items * elem_size(t);
	double tm = bytes / (gpu.bw_bytes_per_us * mlp * width) * tail * spill;
	uint64_t h = mix(seed, 0);
	for (int p = 0; p < t->nparams; p++) {
		uint64_t hp = mix(mix(h, (uint64_t)p), cfg[p]);
		if (t->params[p].type != KT_PINT)
			tm *= 1.0 + CHOICE_COST * unit(hp) * unit(~hp);
		for (int q = p + 1; q < t->nparams; q++)
			tm *= 1.0 + 0.02 * (unit(mix(mix(hp, (uint64_t)q), cfg[q])) - 0.5);
	}
	tm += gpu.launch_us + gpu.wave_us * ceil(waves);
	uint64_t hc = h;
	for (int p = 0; p < t->nparams; p++)
		hc = mix(hc, cfg[p]);
	*us = tm * (1.0 + 0.005 * (unit(hc) + unit(~hc) - 1.0) * 2.0);
	return KT_OK;
}

static int synthesize(const struct opts *o)
{
	kt_err err = {0};
	kt_space sp = {0};
	int64_t shape[KT_MAX_SLOTS];
	kt_tmpl *t = load_tmpl(o, o->synth, o->types, NULL, &err);
	if (!t || kt_tmpl_parse_shape(t, o->shape ? o->shape : "", shape, &err) < 0 ||
	    kt_space_enum(t, shape, &sp, &err) < 0) {
		fprintf(stderr, "search_curves: %s\n", err.msg);
		kt_tmpl_free(t);
		return 1;
	}
	kt_eval *ev = kt_xcalloc(sp.count + 1, sizeof *ev);
	for (size_t i = 0; i < sp.count; i++) {
		ev[i].cfg = (uint16_t *)kt_space_cfg(&sp, i);
		ev[i].status = model(t, shape, ev[i].cfg, o->seed, &ev[i].median_us);
		ev[i].spread_us = ev[i].status == KT_OK ? 0.004 * ev[i].median_us : -1;
	}
	kt_gpu_id id = {"synthetic H200-like model (bench/search_curves --synth)", 9, 0, 132, 50331648, 232448};
	int rc = kt_recorded_write(o->out, t, shape, &id, ev, sp.count, &err);
	if (rc < 0)
		fprintf(stderr, "search_curves: %s\n", err.msg);
	else
		printf("%s: %zu configurations\n", o->out, sp.count);
	free(ev);
	kt_space_free(&sp);
	kt_tmpl_free(t);
	return rc < 0;
}

/* ---- main ---- */

static void usage(FILE *f)
{
	fputs("usage: search_curves [--seeds N] [--batch N] [--jobs N] [--lag] [--share F] [--root DIR] [--check] RECORDING|DIR...\n"
	      "       search_curves --warm DIR [--seeds N] [--jobs N] [--root DIR] RECORDING|DIR...\n"
	      "       search_curves --noise N [--group] [--jobs N] [--root DIR] RECORDING|DIR...\n"
	      "       search_curves --synth TEMPLATE --shape SPEC [--types T=t,...] [--seed N] [--root DIR] -o OUT\n",
	      f);
}

int main(int argc, char **argv)
{
	struct opts o = {20, 0, 0, 32, 1, 0.25, NULL, NULL, NULL, NULL, NULL, 1, NULL, 0, 0};
	int i;
	for (i = 1; i < argc && argv[i][0] == '-'; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
		int takes = 1;
		if (!strcmp(a, "--check"))
			o.check = 1, takes = 0;
		else if (!strcmp(a, "--group"))
			o.group = 1, takes = 0;
		else if (!strcmp(a, "--lag"))
			o.lag = 1, takes = 0;
		else if (!strcmp(a, "--help") || !strcmp(a, "-h"))
			return usage(stdout), 0;
		else if (!v)
			return usage(stderr), 1;
		else if (!strcmp(a, "--seeds"))
			o.seeds = atoi(v);
		else if (!strcmp(a, "--batch"))
			o.batch = (size_t)atol(v);
		else if (!strcmp(a, "--jobs"))
			o.jobs = (size_t)atol(v);
		else if (!strcmp(a, "--share"))
			o.share = atof(v);
		else if (!strcmp(a, "--root"))
			o.root = v;
		else if (!strcmp(a, "--warm"))
			o.warm = v;
		else if (!strcmp(a, "--noise"))
			o.noise = atoi(v);
		else if (!strcmp(a, "--synth"))
			o.synth = v;
		else if (!strcmp(a, "--shape"))
			o.shape = v;
		else if (!strcmp(a, "--types"))
			o.types = v;
		else if (!strcmp(a, "--seed"))
			o.seed = strtoull(v, NULL, 10);
		else if (!strcmp(a, "-o"))
			o.out = v;
		else
			return usage(stderr), 1;
		i += takes;
	}
	if (o.seeds < 1 || o.seeds > MAX_SEEDS || o.batch < 1 || o.jobs < 1 || !(o.share > 0 && o.share <= 1) || o.noise < 0 ||
	    o.noise > 10000) {
		fprintf(stderr, "search_curves: --seeds 1..%d, --batch >= 1, --jobs >= 1, --share in (0, 1], --noise 0..10000\n", MAX_SEEDS);
		return 1;
	}
	if (o.group && !o.noise) {
		fprintf(stderr, "search_curves: --group needs --noise N\n");
		return 1;
	}
	if (o.synth)
		return o.out ? synthesize(&o) : (usage(stderr), 1);
	if (i == argc)
		return usage(stderr), 1;
	char **names = NULL;
	size_t n = 0;
	for (; i < argc; i++)
		list_paths(argv[i], &names, &n);
	int worst = n ? 0 : -1;
	if (o.group)
		worst = bench_group(&o, names, n);
	for (size_t k = 0; k < n && !o.group; k++) {
		int rc = bench_one(&o, names[k]);
		worst = rc < 0 || worst < 0 ? -1 : rc > worst ? rc : worst;
	}
	for (size_t k = 0; k < n; k++)
		free(names[k]);
	free(names);
	return worst < 0 ? 2 : o.check ? worst : 0;
}
