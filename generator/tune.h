/* tune.h - the tuning loop: the fastest correct configuration of each of a batch of problems.
 *
 * kt_tune_batch tunes many problems (templates at shapes) in one pipeline: one work directory,
 * one pool of workers (one per GPU, worker.h) and one stream of compile batches.  While the
 * workers check and time the variants of some problems, ninja compiles the next variants of
 * others, so that nvcc's latency hides behind measuring and every core and the GPU stay busy.
 * A variant's code does not depend on the shape, so a configuration of a template is compiled
 * once and measured at every shape that asks for it.
 *
 * Per problem a search (search.h) proposes configurations, warm-started from seeds (what is
 * known of the same template on other GPUs or at other shapes) and steered by what an earlier
 * round measured.  A problem stops when its search is done (budget, space), its share of the
 * time is spent, its best is within a few percent of the roofline floor, or it converged: no
 * gain beyond the measured noise in the last `patience` evaluations.  Racing: a configuration
 * whose first short measurement is clearly slower than the problem's best so far is not timed
 * to full precision.  At the end its rivals (the fastest few and every one within the noise of
 * the best) are timed again together, interleaved, in blocks on one worker, each with a
 * confidence interval; from those that tie with the fastest, one rule chooses, whatever the order
 * the search evaluated them in (decide.h).
 */
#ifndef KT_TUNE_H
#define KT_TUNE_H

#include <stddef.h>
#include <stdint.h>

#include "gpu.h"
#include "problem.h"
#include "progress.h"
#include "result.h"
#include "target.h"
#include "util.h"

enum { KT_TUNE_MAX_GPUS = 16 }; /* GPUs reported in kt_tune_stats (all of them are used) */
enum { KT_TUNE_MAX_BATCH = 1024 }; /* configurations per compile batch, at most (kt_tune_opts.batch) */
enum { KT_TUNE_PACK = 16 };     /* variants per nvcc translation unit: past this, cicc and ptxas dominate */
enum { KT_TUNE_PATIENCE = 16 }; /* evaluations without a gain beyond the noise that end a search, */
enum { KT_TUNE_PATIENCE_PER_PARAM = 3 }; /* or this many per parameter where that is more */
#define KT_TUNE_RACE 0.15       /* racing: an estimate this much slower than the best is not timed further */

/* Where the time of one batch went (wall seconds). */
typedef struct kt_tune_stats {
	double setup_s;        /* GPUs, spaces, the references' compile, workers, references, ceilings */
	double measure_s;      /* workers checking and timing */
	double compile_wait_s; /* waiting for nvcc with nothing to measure */
	double retime_s;       /* the final interleaved re-timings */
	double first_measure_s; /* from the start to the first configuration's measurement */
	double unit_s;         /* nvcc's time for a reference's unit (one variant): sizes the first batch */
	int first_batch;       /* configurations the searches asked for their first compile batch */
	int batches;           /* compile batches */
	int packed;            /* variants compiled in shared translation units */
	int by_nvrtc;          /* variants compiled by NVRTC rather than nvcc */
	int stand_in;          /* evaluations of variants NVRTC compiled standing in for nvcc (nvrtc.h) */
	int confirmed;         /* the choices' rivals among them, measured again as nvcc compiles them */
	int confirm_early;     /* rivals' nvcc variants compiled while their task still searched */
	int compiled;          /* variants compiled (each once, whatever the shapes that measured it) */
	int early;             /* of those, taken while the rest of their batch still compiled */
	int reused;            /* evaluations of a variant compiled for another shape of its template */
	int relaunched;        /* evaluations of a variant compiled for another configuration of the shape
	                        * that differs only in what the launch reads (kt_tmpl_code_config) */
	int sibling_evals;     /* evaluations of another shape's fastest before a shape's choice */
	int raced;             /* evaluations not timed to full precision (racing) */
	int retime_more;       /* choices re-timed with twice the blocks: the rule's pick a tie on wide intervals */
	int restarts;          /* workers restarted after faults and hangs */
	int ngpus;             /* GPUs that checked and timed (one worker each) */
	int gpu[KT_TUNE_MAX_GPUS];
	size_t gpu_jobs[KT_TUNE_MAX_GPUS]; /* jobs each of them finished */
} kt_tune_stats;

typedef struct kt_tune_opts {
	const char *strategy;         /* search strategy; NULL: auto */
	long budget;                  /* evaluations per problem; <= 0: the whole space */
	double seconds;               /* wall seconds per problem, its share while tuned with others; <= 0: none */
	uint64_t seed;
	int gpu;                      /* device ordinal; -1: every GPU of the same kind as GPU 0 */
	const char *ninja;            /* NULL: searched in PATH */
	int jobs;                     /* parallel compiles; <= 0: cores */
	int batch;                    /* configurations per compile batch; <= 0: from jobs */
	int pack;                     /* most variants per nvcc translation unit; 0: KT_TUNE_PACK; 1: alone */
	int no_nvrtc;                 /* nvcc compiles every variant, never the toolkit's NVRTC (nvrtc.h) */
	const char *nvrtc_kt, *nvrtc_lib; /* tests: the `kt nvrtc` that compiles and the library it is
				       * given, for exe and the NVRTC beside nvcc */
	const char *workdir;          /* NULL: a temporary directory, removed at the end */
	const char *tmpdir;           /* where that one is made ($TMPDIR, read by the command); NULL: /tmp */
	const char *backend;          /* GPU backend: "cuda" (NULL) or "fake" */
	const char *exe;              /* the kt executable that runs workers; NULL: this one */
	double timeout_s;             /* watchdog per variant; <= 0: 10 s */
	int run_all;                  /* run every configuration asked for, also one that holds what made
				       * others at its shape hang (hangs.h): a recorded space */
	kt_ceilings *ceilings;        /* in: the GPU's known ceilings (0: unknown); out: with those measured.  NULL: measure */
	double near_floor;            /* stop within this fraction of the floor; 0: 0.03; < 0: never */
	int retime_top;               /* the fastest this many are always among the rivals timed again at the end
				       * (decide.h); 0: 5; < 0: none is, the fastest by its sweep time is chosen */
	int patience;                 /* see above; 0: kt_tune_patience; < 0: never converge */
	double race;                  /* racing margin; 0: KT_TUNE_RACE; < 0: no racing */
	kt_progress *progress;        /* one line for the whole batch; may be NULL */
	/* Called when a task is done, its result final: another task to tune in the same pipeline (the
	 * next round of the problem, owned by the caller and alive until kt_tune_batch returns), or NULL. */
	struct kt_tune_task *(*next)(void *ctx, struct kt_tune_task *done);
	void *next_ctx;
	kt_tune_stats *stats;         /* filled when not NULL */
	struct kt_trace *trace;       /* the run's timeline (trace.h); NULL: none */
} kt_tune_opts;

/* One problem of a batch.  The caller fills the first part; kt_tune_batch the rest. */
typedef struct kt_tune_task {
	kt_problem p;                 /* template, shape, toolchain; p.target may be NULL (the GPU's) */
	const char *label;            /* for progress lines ("rmsnorm rows=4096,hidden=4096"); NULL: the problem's */
	const uint16_t *seeds;        /* nseeds configurations (nparams value indices each) to evaluate first, */
	size_t nseeds;                /* best first; those infeasible at the shape are skipped */
	const uint16_t *known;        /* nknown configurations measured before at this very problem (an earlier */
	const double *known_us;       /* round): they steer the search and are not evaluated again; < 0: failed */
	size_t nknown;
	const uint16_t *only;         /* nonly configurations (nparams value indices each) evaluated instead of */
	size_t nonly;                 /* the whole space; each must be feasible at the shape */
	int give_up;                  /* stop after this many failures in a row (a round whose new parameter
				       * does not build); 0: never */
	kt_progress *progress;        /* this problem's line when it is done; may be NULL */

	kt_tune_result out;           /* release with kt_tune_result_free (also after a failure) */
	int rc;                       /* 0: tuned (also when nothing passed: out.best -1); -1: could not be, err says why */
	kt_err err;
} kt_tune_task;

/* Tunes tasks[0..n).  0 when the batch ran (each task's rc says how it went); -1 with err when
 * nothing could be tuned (no GPU, no compiler, no worker). */
int kt_tune_batch(kt_tune_task *tasks, size_t n, const kt_tune_opts *o, kt_err *err);

/* The default patience for template t: KT_TUNE_PATIENCE, or KT_TUNE_PATIENCE_PER_PARAM per
 * parameter where that is more (the best's lattice neighbours, a step either way in each
 * parameter, and a margin: a search of many parameters is not done when a few of them are). */
int kt_tune_patience(const kt_tmpl *t);

/* One problem: kt_tune_batch of one task.  0 on success, also when no configuration passed
 * (out->best is then -1); -1 with err set when it could not be tuned. */
int kt_tune(const kt_problem *p, const kt_tune_opts *o, kt_tune_result *out, kt_err *err);

/* Appends the GPUs that measured and the jobs each finished: " 0 (812 jobs), 1 (790 jobs)".  The
 * callers name them only when more than one did. */
void kt_tune_stats_gpus(const kt_tune_stats *st, kt_buf *out);

/* How many GPUs the backend sees (0 with the reason in why), and GPU ordinal's identity. */
int kt_tune_gpus(const char *backend, char *why, size_t whysz);
int kt_tune_gpu_info(const char *backend, int ordinal, kt_gpu_info *info, kt_err *err);

/* How many GPUs tuning with gpu -1 measures on: GPU 0 and those of its name and compute
 * capability.  0 when there is no GPU. */
int kt_tune_gpus_alike(const char *backend);

/* The configuration that is most robust across several tuned shapes: among those measured at
 * the most shapes, the one with the smallest worst-case slowdown against each shape's best
 * (a configuration that failed at a shape where it was measured is never chosen).  Writes it to
 * cfg and its worst slowdown (>= 1) to *worst.  -1 when no configuration passed anywhere. */
int kt_tune_robust(const kt_tmpl *t, const kt_tune_result *const *rs, size_t n, uint16_t *cfg, double *worst);

#endif
