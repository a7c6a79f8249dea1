/* tune.h - the tuning loop: find the fastest correct configuration of a template at a shape.
 *
 * kt_tune enumerates the feasible space, lets a search strategy (search.h) choose batches,
 * compiles each batch with ninja while workers (worker.h, one per GPU) check and time the
 * previous one, and stops at the budget (evaluations, seconds) or when the best is within a few
 * percent of the roofline floor (bytes / copy bandwidth, flops / the fp32 FMA or the mma.sync
 * tensor-core rate as the template's flops say, measured once per GPU and kept in the cache
 * directory).  At the end the top candidates are re-timed together, interleaved, and among those
 * within the noise of the fastest it prefers the default, then the configuration closest to it.
 */
#ifndef KT_TUNE_H
#define KT_TUNE_H

#include <stddef.h>
#include <stdint.h>

#include "gpu.h"
#include "progress.h"
#include "result.h"
#include "tmpl.h"
#include "util.h"

enum { KT_TUNE_MAX_GPUS = 16 }; /* GPUs reported in kt_tune_stats (all of them are used) */
enum { KT_TUNE_PACK = 8 };      /* variants per nvcc translation unit: past this, cicc and ptxas dominate */

/* Where the time of one tuning went (wall seconds). */
typedef struct kt_tune_stats {
	double setup_s;        /* GPUs, space, first compile, workers, reference, ceilings */
	double measure_s;      /* workers checking and timing batches */
	double compile_wait_s; /* waiting for nvcc after a batch was measured */
	double retime_s;       /* the final interleaved re-timing */
	int batches;
	int packed;            /* variants compiled in shared translation units */
	int restarts;          /* workers restarted after faults and hangs */
	int ngpus;             /* GPUs that checked and timed (one worker each) */
	int gpu[KT_TUNE_MAX_GPUS];
	size_t gpu_jobs[KT_TUNE_MAX_GPUS]; /* jobs each of them finished */
} kt_tune_stats;

typedef struct kt_tune_opts {
	const char *strategy;         /* search strategy; NULL: auto */
	long budget;                  /* evaluations; <= 0: the whole space */
	double seconds;               /* wall-time budget; <= 0: none */
	uint64_t seed;
	int gpu;                      /* device ordinal; -1: every GPU of the same kind as GPU 0 */
	const char *arch;             /* the target after "sm_" ("90", "90a"); NULL: the device's */
	const char *nvcc, *ninja;     /* NULL: searched in PATH */
	const char *const *flags;     /* the user's code-generation flags */
	int nflags;
	int jobs;                     /* parallel compiles; <= 0: cores */
	int batch;                    /* configurations per compile batch; <= 0: from jobs */
	int pack;                     /* most variants per nvcc translation unit; 0: KT_TUNE_PACK; 1: alone */
	const char *workdir;          /* NULL: a temporary directory, removed at the end */
	const char *backend;          /* GPU backend: "cuda" (NULL) or "fake" */
	const char *exe;              /* the kt executable that runs workers; NULL: this one */
	const char *const *types;     /* "T=half": how t was parsed (workers parse it again) */
	int ntypes;
	double timeout_s;             /* watchdog per variant; <= 0: 10 s */
	const char *cache_dir;        /* keeps the measured ceilings; NULL: measure every time */
	double near_floor;            /* stop within this fraction of the floor; 0: 0.03; < 0: never */
	int retime_top;               /* candidates re-timed at the end; 0: 5; < 0: none */
	const uint16_t *only;         /* nonly configurations (nparams values each) evaluated instead of */
	size_t nonly;                 /* the whole space; each must be feasible at the shape */
	kt_progress *progress;        /* may be NULL */
	kt_tune_stats *stats;         /* filled when not NULL */
} kt_tune_opts;

/* Tunes t at shape into out (released with kt_tune_result_free).  0 on success, also when no
 * configuration passed (out->best is then -1); -1 with err set when tuning could not run
 * (no GPU, no feasible configuration, a compiler or worker that cannot start). */
int kt_tune(const kt_tmpl *t, const int64_t *shape, const kt_tune_opts *o, kt_tune_result *out, kt_err *err);

/* How many GPUs the backend sees (0 with the reason in why), and GPU ordinal's identity. */
int kt_tune_gpus(const char *backend, char *why, size_t whysz);
int kt_tune_gpu_info(const char *backend, int ordinal, kt_gpu_info *info, kt_err *err);

/* The configuration that is most robust across several tuned shapes: among those measured at
 * the most shapes, the one with the smallest worst-case slowdown against each shape's best
 * (a configuration that failed at a shape where it was measured is never chosen).  Writes it to
 * cfg and its worst slowdown (>= 1) to *worst.  -1 when no configuration passed anywhere. */
int kt_tune_robust(const kt_tmpl *t, const kt_tune_result *const *rs, size_t n, uint16_t *cfg, double *worst);

#endif
