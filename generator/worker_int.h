/* worker_int.h - the worker's parts (worker.c: problems, kernels, checks and commands;
 * worker_time.c: timing): the state they share and the calls between them.  Private to kt worker. */
#ifndef KT_WORKER_INT_H
#define KT_WORKER_INT_H

#include <stddef.h>
#include <stdint.h>

#include "gpu.h"
#include "measure.h"
#include "tmpl.h"
#include "util.h"

enum { MAX_SETS = 4096, MIN_REPS = 10, MAX_REPS = 200, MAX_FIELDS = 64, CHECK_BLOCK = 256, ESTIMATE_REPS = 3 };
static const double HOST_GUESS_US = 50.0;  /* the host's cost of queueing one timed launch, before it is measured */
static const double L2_FACTOR = 2.5;      /* cold L2: between two uses of an argument set, this many L2 sizes of other data */
enum { WK_OK = 0, WK_ERROR = -1, WK_FAULT = -2 };

typedef struct wk_arg {
	const kt_arg *a;
	size_t n, bytes;          /* elements and bytes of a pointer argument */
	size_t off;               /* where it lies in each argument set */
	kt_dptr pristine;         /* inout: the filled values, for resets */
	kt_dptr ref;              /* out, inout: the reference's result */
	unsigned char scalar[8];  /* scalar arguments: the value, in its C type */
} wk_arg;

/* A problem the tuner defined: a template at a shape, timed as its measurement settings say.  Its
 * buffers exist while it is resident; the least recently used one is evicted when another would
 * not fit, and its inputs and the reference's outputs are made again when it is used next.
 *
 * The arguments come in nsets copies (argument sets), stride bytes apart in one allocation.  Set
 * 0 is the check's: its outputs are poisoned and compared with the reference.  With a cold L2 the
 * timed launches rotate through the others (see plan_sets); with a warm L2 they all use set 0. */
typedef struct wk_prob {
	char *id;
	kt_tmpl *t;
	kt_measure m;       /* from the problem line: the tuner resolved them (measure.h) */
	int64_t shape[KT_MAX_SLOTS];
	kt_val env[KT_MAX_SLOTS];
	wk_arg *args;
	kt_dptr sets;       /* nsets argument sets */
	size_t stride;      /* bytes per set */
	int nsets;
	size_t out_bytes;   /* bytes a launch writes (its out and inout arguments): what a flush leaves dirty */
	int next;           /* the timed set that the rotation uses next */
	size_t bytes;       /* device memory of its buffers */
	void **params;      /* nsets * nargs: what each launch gets */
	kt_dptr *ptrs;      /* nsets * nargs: the device pointers params point at */
	int resident, have_ref;
	char *ref[3];       /* the reference's CUBIN KERNEL CONFIG|-, to make its outputs again */
	unsigned long used; /* when it was last used (a counter) */
} wk_prob;

/* A loaded cubin, kept while in use (refs) and after, until room is needed. */
typedef struct wk_module {
	char *path;
	void *mod;
	int refs;
	unsigned long used;
} wk_module;

typedef struct wk {
	const kt_gpu_ops *ops;
	kt_gpu *g;
	kt_gpu_info info;
	wk_prob **probs;
	size_t nprobs;
	wk_prob *p;         /* the problem of the command being answered */
	unsigned long clock;
	size_t resident_bytes;
	kt_dptr scratch, res; /* the L2 flush buffer (scratch_bytes), the check's result: shared */
	size_t scratch_bytes;
	void *check_mod, *check_fn[KT_NETYPES], *fill_fn[KT_NETYPES], *rate_fn[KT_NFLOPS_UNITS];
	void *spin_fn;      /* kt_spin, or NULL: timed launches are then not held back */
	void *flush_fn;     /* kt_l2_flush: the flush's read (worker_time.c) */
	uint64_t seed;
	void **ev;
	size_t nev;
	wk_module *mods;    /* cubins loaded for kernels (not the check module) */
	size_t nmods;
} wk;

/* A loaded kernel with its launch. */
typedef struct wk_kernel {
	void *mod, *fn;
	kt_launch l;
} wk_kernel;

/* How one kernel is timed, sample by sample: a sample is one launch on the stream, or one replay
 * of a captured graph of `per` launches (measure.launch=graph); its time is per launch. */
typedef struct wk_timer {
	const wk_kernel *k;
	void *exec;   /* the instantiated graph, or NULL: launches on the stream */
	int per;      /* launches per sample */
	int first, n; /* the graph's sets: n of them from position first of the rotation (cold), or set 0 */
} wk_timer;

/* ---- worker.c, for the timing ---- */
/* Launches kernel k on argument set s. */
int wk_launch(wk *w, const wk_kernel *k, int s, kt_err *err);
/* At least n timing events exist (w->ev). */
int wk_events(wk *w, size_t n, kt_err *err);
/* Inout arguments of set s back to their inputs. */
int wk_restore(wk *w, int s, kt_err *err);
static inline int wk_cold(const wk_prob *p) { return p->m.v[KT_MEASURE_L2] == KT_L2_COLD; }
static inline int wk_graph_mode(const wk_prob *p) { return p->m.v[KT_MEASURE_LAUNCH] == KT_LAUNCH_GRAPH; }

/* ---- worker_time.c ---- */
/* The median of v[0..n) and half its 10-90% range (v is sorted in place). */
void wk_stats(double *v, size_t n, double *med, double *spread);
/* The time between timing events 2i and 2i+1, in microseconds. */
int wk_elapsed_us(wk *w, size_t i, double *us, kt_err *err);
/* Holds the stream for about us microseconds (kt_spin), so that timed launches run back to back. */
int wk_hold(wk *w, double us, kt_err *err);
/* How long to hold the stream while the host queues n timed launches of host_us each. */
double wk_hold_us(size_t n, double host_us);
/* One sample of tm, between timing events 2ev and 2ev+1 (ev < 0: untimed). */
int wk_sample(wk *w, const wk_timer *tm, long ev, kt_err *err);
/* n samples of tm back to back: each one's time per launch into t[0..n), the host's cost of
 * queueing one into *host_us (may be NULL). */
int wk_time_samples(wk *w, const wk_timer *tm, size_t n, double host_guess, double *t, double *host_us, kt_err *err);
/* Makes tm a graph's timer of launches adding up to about est_us each sample. */
int wk_timer_graph(wk *w, wk_timer *tm, double est_us, kt_err *err);
/* Ends tm: its graph freed and the sets it used reset. */
int wk_timer_end(wk *w, wk_timer *tm, kt_err *err);
/* Times kernel k as the problem's settings say: its median and spread per launch (racing when
 * race_us > 0: *raced = 1 when the estimate alone is the answer). */
int wk_time_kernel(wk *w, const wk_kernel *k, double race_us, double *med, double *spread, int *raced, kt_err *err);

#endif
