/* worker_time.c - the worker's timing: samples of a kernel (launches on the stream, or replays
 * of a captured graph), with the L2 cold (the rotation of argument sets and a flush before each
 * sample) or warm, and their statistics (see worker.h, and worker.c for the rest of the worker). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "proc.h"
#include "worker_int.h"

enum { GRAPH_MAX = 128 };                 /* launches per captured graph, at most */
/* A candidate's timing costs the GPU about this: its timed launches and what runs between them,
 * the L2's flush and the inout arguments' resets (the top few are re-timed at the end). */
static const double TARGET_MS = 5.0;
static const double GRAPH_SAMPLE_US = 200.0; /* a graph holds about this much work (GRAPH_MAX launches at most) */
static const double HOLD_MAX_US = 50000.0; /* the longest the stream is held for the host to queue */

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

static double percentile(const double *v, size_t n, double q)
{
	double pos = q * (double)(n - 1);
	size_t i = (size_t)pos;
	double f = pos - (double)i;
	return i + 1 < n ? v[i] * (1 - f) + v[i + 1] * f : v[n - 1];
}

void wk_stats(double *v, size_t n, double *med, double *spread)
{
	qsort(v, n, sizeof *v, cmp_double);
	*med = percentile(v, n, 0.5);
	*spread = (percentile(v, n, 0.9) - percentile(v, n, 0.1)) / 2;
}

/* The GPU's time from event a to event b, in us. */
static int between_us(wk *w, size_t a, size_t b, double *us, kt_err *err)
{
	float ms;
	if (w->ops->elapsed_ms(w->g, w->ev[a], w->ev[b], &ms, err))
		return -1;
	*us = (double)ms * 1e3;
	return 0;
}

int wk_elapsed_us(wk *w, size_t i, double *us, kt_err *err) { return between_us(w, 2 * i, 2 * i + 1, us, err); }

/* Holds the stream for about us microseconds with kt_spin, so that the timed launches the host
 * queues meanwhile run back to back: without it a kernel shorter than the host's cost of queueing
 * one (events, launch) would be timed with the gap before its launch arrived. */
int wk_hold(wk *w, double us, kt_err *err)
{
	if (!w->spin_fn || us <= 0)
		return 0;
	unsigned long long ns = (unsigned long long)((us < HOLD_MAX_US ? us : HOLD_MAX_US) * 1e3);
	int64_t one[3] = {1, 1, 1};
	void *params[] = {&ns};
	return w->ops->launch(w->g, w->spin_fn, one, one, 0, params, err);
}

/* How long to hold the stream while the host queues n timed launches, each of which cost it
 * host_us to queue: enough for all of them with a margin. */
double wk_hold_us(size_t n, double host_us)
{
	return 1.5 * (double)n * host_us + 20.0;
}

/* ---- timing ---------------------------------------------------------------------------------- */



/* Timed set number pos of the rotation: sets 1..nsets-1 in turn (set 0 when it is the only one). */
static int rotation_set(const wk_prob *p, int pos) { return p->nsets < 2 ? 0 : 1 + pos % (p->nsets - 1); }

/* The set of the next timed launch: the next of the rotation (cold L2), set 0 (warm). */
static int next_set(wk_prob *p)
{
	if (!wk_cold(p))
		return 0;
	int s = rotation_set(p, p->next);
	p->next = p->nsets < 2 ? 0 : (p->next + 1) % (p->nsets - 1);
	return s;
}

/* The L2 as back-to-back calls on data that is not in it leave it for the next one, before each
 * timed sample with a cold L2: an L2 of other lines, as many of them dirty (the oldest) as the
 * launch writes, up to the L2.  So the launch meets none of its arguments in the L2, and writes
 * back as many lines of others as it makes dirty itself.  Made by writing min(out_bytes, L2) of
 * the scratch buffer, then reading the rest of an L2 of it at normal priority (kt_l2_flush).
 *
 * Why before every sample, where the rotation of argument sets alone used to leave the L2 behind:
 * a line read at normal priority outlives any amount of evict-first traffic (ld.global.cs, an
 * evict_first policy), and evict-first lines are not given up oldest first.  On an H100, a 32 MiB
 * set read normally, then 160 MiB of other sets read evict-first, then the set again: 9.1 us
 * against 14.7 us cold; a gemm that streams its weight evict-first timed 18.0 us in the rotation
 * and 19.1 us after a flush, the same as its twin that does not stream. */
static int flush(wk *w, kt_err *err)
{
	size_t l2 = (size_t)w->info.id.l2_bytes, dirty = w->p->out_bytes < l2 ? w->p->out_bytes : l2;
	if (dirty && w->ops->memset8(w->g, w->scratch, (unsigned char)(++w->clock), dirty, err))
		return -1;
	if (dirty == l2)
		return 0;
	kt_dptr from = w->scratch + (w->scratch_bytes - (l2 - dirty));
	unsigned long long n = (l2 - dirty) / 16;
	int64_t grid[3] = {(int64_t)w->info.id.sms * 8, 1, 1}, block[3] = {256, 1, 1};
	void *params[] = {&from, &n, &w->res};
	return w->ops->launch(w->g, w->flush_fn, grid, block, 0, params, err);
}

/* Queues a sample of tm, between events 2ev and 2ev+1 (ev < 0: untimed, a warm-up).  On the
 * stream, a set's inout arguments are reset before its launch with a warm L2 (so that they are in
 * the L2, as the kernel that made them would leave them) and after it with a cold L2 (ready for
 * the set's next turn, which comes after the rotation has left the L2 behind).  A graph's launches
 * are not reset in between (the resets would be timed with them): its sets are reset once the
 * graph's timing is over (timer_end).  With a cold L2 every sample, timed or not, comes after a
 * flush (outside its events). */
int wk_sample(wk *w, const wk_timer *tm, long ev, kt_err *err)
{
	wk_prob *p = w->p;
	int s = tm->exec ? -1 : next_set(p);
	if ((s >= 0 && !wk_cold(p) && wk_restore(w, s, err)) || (wk_cold(p) && flush(w, err)) ||
	    (ev >= 0 && w->ops->record(w->g, w->ev[2 * ev], err)))
		return -1;
	if (tm->exec ? w->ops->graph_launch(w->g, tm->exec, err) : wk_launch(w, tm->k, s, err))
		return -1;
	if (ev >= 0 && w->ops->record(w->g, w->ev[2 * ev + 1], err))
		return -1;
	return s >= 0 && wk_cold(p) ? wk_restore(w, s, err) : 0;
}

/* Times n samples of tm back to back (the stream held while the host queues them, each of which
 * costs the host about host_guess us): each one's time per launch into t[0..n), and what queueing
 * one cost the host into *host_us (may be NULL). */
int wk_time_samples(wk *w, const wk_timer *tm, size_t n, double host_guess, double *t, double *host_us, kt_err *err)
{
	if (wk_hold(w, wk_hold_us(n, host_guess), err))
		return -1;
	double t0 = kt_now();
	for (size_t i = 0; i < n; i++)
		if (wk_sample(w, tm, (long)i, err))
			return -1;
	if (host_us)
		*host_us = (kt_now() - t0) * 1e6 / (double)n;
	if (w->ops->sync(w->g, err))
		return -1;
	for (size_t i = 0; i < n; i++) {
		if (wk_elapsed_us(w, i, &t[i], err))
			return -1;
		t[i] /= tm->per;
	}
	return 0;
}

/* The GPU's mean time between the n samples just timed (wk_time_samples): from one's end event
 * to the next one's start, the L2's flush and the inout arguments' resets. */
static int gap_us(wk *w, size_t n, double *us, kt_err *err)
{
	double sum = 0, one;
	for (size_t i = 0; i + 1 < n; i++) {
		if (between_us(w, 2 * i + 1, 2 * i + 2, &one, err))
			return -1;
		sum += one > 0 ? one : 0;
	}
	*us = n > 1 ? sum / (double)(n - 1) : 0;
	return 0;
}

/* How many launches a graph of a kernel of about est_us holds: about GRAPH_SAMPLE_US of work;
 * with a cold L2, whole turns of the rotation, so that the replays are a rotation too (where the
 * timed sets are more than GRAPH_MAX, some of them; the flush before each replay keeps it cold). */
static int graph_size(const wk_prob *p, double est_us)
{
	double want = ceil(GRAPH_SAMPLE_US / (est_us > 0.1 ? est_us : 0.1));
	int per = want > GRAPH_MAX ? GRAPH_MAX : (int)want, timed = p->nsets - 1;
	if (!wk_cold(p) || timed < 1 || timed > GRAPH_MAX)
		return per;
	return timed * ((per + timed - 1) / timed);
}

/* Turns tm into a graph's timer: captures per launches of tm->k on the sets the rotation gives,
 * instantiates them and replays the graph once (untimed: it is uploaded then). */
int wk_timer_graph(wk *w, wk_timer *tm, double est_us, kt_err *err)
{
	wk_prob *p = w->p;
	void *graph = NULL;
	tm->per = graph_size(p, est_us);
	int timed = p->nsets > 1 ? p->nsets - 1 : 1;
	tm->first = p->next;
	tm->n = !wk_cold(p) ? 1 : tm->per < timed ? tm->per : timed;
	if (w->ops->capture_begin(w->g, err))
		return -1;
	int rc = 0;
	for (int j = 0; rc == 0 && j < tm->per; j++)
		rc = wk_launch(w, tm->k, next_set(p), err);
	kt_err end = {0};
	if (w->ops->capture_end(w->g, &graph, &end) && rc == 0) {
		*err = end;
		rc = -1;
	}
	if (rc == 0)
		rc = w->ops->graph_instantiate(w->g, graph, &tm->exec, err);
	if (graph)
		w->ops->graph_free(w->g, graph);
	if (rc == 0)
		rc = wk_sample(w, tm, -1, err);
	return rc;
}

/* Ends tm: its graph freed and the sets it used reset. */
int wk_timer_end(wk *w, wk_timer *tm, kt_err *err)
{
	if (!tm->exec)
		return 0;
	w->ops->graph_exec_free(w->g, tm->exec);
	tm->exec = NULL;
	int rc = 0;
	for (int j = 0; rc == 0 && j < tm->n; j++)
		rc = wk_restore(w, wk_cold(w->p) ? rotation_set(w->p, tm->first + j) : 0, err);
	return rc;
}

/* Warm-up, an estimate of ESTIMATE_REPS samples, then repetitions: median and spread per launch
 * in us.  In graph mode the estimate on the stream sizes the graph (graph_size), whose replays
 * then give the estimate and the repetitions.  Racing: when race_us > 0 and even the fastest
 * sample of the estimate is slower than race_us, the estimate's median and spread are the answer
 * (*raced = 1). */
int wk_time_kernel(wk *w, const wk_kernel *k, double race_us, double *med, double *spread, int *raced, kt_err *err)
{
	wk_timer tm = {.k = k, .per = 1};
	double est[ESTIMATE_REPS] = {0}, host_us = HOST_GUESS_US, gap = 0, *t = NULL;
	*raced = 0;
	int rc = wk_events(w, 2 * MAX_REPS, err);
	for (int i = 0; rc == 0 && i < ESTIMATE_REPS; i++) /* warm-up */
		rc = wk_sample(w, &tm, -1, err);
	/* The estimate's samples are held back like the full timing's, so that it is the same
	 * measure (a kernel shorter than a launch's host cost would else be timed with the gaps). */
	if (rc == 0)
		rc = wk_time_samples(w, &tm, ESTIMATE_REPS, HOST_GUESS_US, est, &host_us, err);
	if (rc == 0 && wk_graph_mode(w->p)) {
		wk_stats(est, ESTIMATE_REPS, med, spread);
		rc = wk_timer_graph(w, &tm, *med, err);
		if (rc == 0)
			rc = wk_time_samples(w, &tm, ESTIMATE_REPS, HOST_GUESS_US, est, &host_us, err);
	}
	double mean = (est[0] + est[1] + est[2]) / ESTIMATE_REPS;
	if (rc == 0)
		wk_stats(est, ESTIMATE_REPS, med, spread);
	if (rc == 0 && race_us > 0 && est[0] > race_us) /* est is sorted: est[0] is the fastest */
		*raced = 1;
	if (rc == 0 && !*raced)
		rc = gap_us(w, ESTIMATE_REPS, &gap, err);
	if (rc == 0 && !*raced) {
		double cost_us = mean * tm.per + gap, want = TARGET_MS * 1e3 / (cost_us > 0.5 ? cost_us : 0.5);
		size_t reps = want < MIN_REPS ? MIN_REPS : want > MAX_REPS ? MAX_REPS : (size_t)want;
		t = kt_xmalloc(reps * sizeof *t);
		rc = wk_time_samples(w, &tm, reps, host_us, t, NULL, err);
		if (rc == 0)
			wk_stats(t, reps, med, spread);
	}
	free(t);
	if (wk_timer_end(w, &tm, rc ? NULL : err))
		rc = -1;
	return rc ? WK_FAULT : WK_OK;
}
