/* result.h - what tuning produces and the cache stores: the GPU's identity, each evaluated
 * configuration and the choice.  Shared by the tuner (tune.c, which fills it) and the cache
 * (record.c, which writes and reads it as JSON). */
#ifndef KT_RESULT_H
#define KT_RESULT_H

#include <stddef.h>
#include <stdint.h>

/* The identity of a GPU, as far as it changes which configuration is best. */
typedef struct kt_gpu_id {
	char name[128];       /* "NVIDIA H200" */
	int cc_major, cc_minor;
	int sms;              /* multiprocessors */
	int64_t l2_bytes;
	int64_t smem_optin;   /* opt-in shared memory per block, bytes */
} kt_gpu_id;

typedef enum kt_status {
	KT_OK,             /* compiled, agreed with the reference, timed */
	KT_COMPILE_FAILED, /* nvcc failed; msg holds its message */
	KT_OVER_LIMITS,    /* compiled, but uses more than the device allows; msg says what */
	KT_CHECK_FAILED,   /* ran, but an output differed from the reference beyond the tolerance */
	KT_FAULTED,        /* an illegal address, a launch failure: the worker was restarted */
	KT_TIMED_OUT,      /* the watchdog fired: the worker was killed and restarted */
	KT_NOT_RUN,        /* not run: it holds what made others at its shape hang (hangs.h) */
	KT_NSTATUS
} kt_status;

/* "ok", "compile-failed", "over-limits", "check-failed", "faulted", "timed-out", "not-run"
 * (records, tables) */
extern const char *const kt_status_names[KT_NSTATUS];
/* The causes in words for people: "do not compile", "exceed a limit", "wrong result", "launch
 * error", "timeout", "not run, like ones that hung" ("passed" for KT_OK). */
extern const char *const kt_status_causes[KT_NSTATUS];
/* "5 failed (3 do not compile, 2 wrong result)" from counts per status into out; returns the
 * failures. */
size_t kt_failures_format(const size_t counts[KT_NSTATUS], char *out, size_t outsz);
/* The status named name (one of kt_status_names), or -1 when name is none of them (or NULL). */
int kt_status_named(const char *name);

typedef struct kt_eval {
	uint16_t *cfg;        /* nparams value indices (owned by the result) */
	kt_status status;
	double median_us;     /* KT_OK only */
	double spread_us;     /* half the distance between the 10th and 90th percentile */
	int regs, smem_static, local_bytes; /* from the compiled variant; -1 when unknown */
	char *msg;            /* why it failed, or NULL (owned) */
	int raced;            /* KT_OK, but not timed to full precision: its estimate was clearly slower
	                       * than the best at the time (racing); median_us is the estimate's */
	int stand_in;         /* measured as NVRTC compiled it, standing in for nvcc (nvrtc.h); a choice's
	                       * rivals are measured again as nvcc compiles them */
} kt_eval;

/* A configuration timed again for the final choice, against the others (decide.h). */
typedef struct kt_retimed {
	long eval;            /* index into evals */
	double us;            /* the mean of its blocks' medians (its sweep time when not timed again) */
	double ci_us;         /* half-width of the 95% confidence interval of us; 0 when unknown */
	int tie;              /* in the tie set that the choice was made from */
	int paired;           /* gap_ci_us is known (records since 2026-11-29 keep it) */
	double gap_ci_us;     /* half-width of the 95% interval of its time less the fastest rival's, taken
			       * block by block (paired: what a block's rivals share cancels) */
} kt_retimed;

typedef struct kt_tune_result {
	int nparams;
	size_t nevals;
	kt_eval *evals;       /* in evaluation order (owned) */
	long best;            /* index into evals of the chosen configuration; -1 when none passed */
	double floor_us;      /* roofline floor at this shape; 0 when the template gives no bytes/flops */
	double bw_gbs;        /* measured copy bandwidth used for the floor (GB/s) */
	double flops_rate;    /* measured arithmetic rate used for the floor (GFLOP/s), 0 if unused */
	char strategy[32];
	char stop[96];        /* why the search stopped: "converged: ...", "budget", "time", ... ("" unknown) */
	uint64_t seed;
	long budget;          /* evaluations allowed */
	double seconds;       /* wall time of the tuning */
	char driver[32], runtime[32];
	double reference_us;  /* the reference kernel's median time; 0 when not measured */
	double default_us;    /* the default configuration's median time; 0 when it did not pass */
	kt_retimed *retimed;  /* the rivals the choice was made among, in value order (owned); */
	size_t nretimed;      /* none when there was one, or none was timed again (older records) */
} kt_tune_result;

void kt_tune_result_free(kt_tune_result *r);

/* The time of the choice: the mean of its re-timed blocks when its rivals were timed again (after
 * a warm-up at the clock that a sustained load leaves: tune_choose.c), else its sweep median; 0
 * when nothing passed.  A record's time_us (record.h). */
double kt_result_chosen_us(const kt_tune_result *r);

#endif
