/* worker.h - testing and timing variants in worker processes (`kt worker`), one per GPU.
 *
 * A worker owns one GPU context and serves every problem of a tuning batch.  It says `ready`,
 * then answers one line per command, fields separated by tabs:
 *
 *   problem ID TEMPLATE SHAPE [T=x]... [measure.NAME=VALUE]...   define problem ID: a template
 *                                 (with its type choices) at a shape, timed as the measurement
 *                                 settings say (measure.h: measure.l2=warm, measure.launch=graph;
 *                                 a setting not given is its default, whatever the template says:
 *                                 the tuner resolved it).  Its buffers are allocated when it is
 *                                 first used: with a cold L2, many copies of the arguments, so
 *                                 that timed launches rotate through more than the L2 holds;
 *                                 problems stay resident while they fit in a quarter of the GPU's
 *                                 memory, the least recently used one is evicted to make room and
 *                                 made again (inputs, the reference's outputs) when it is used next
 *   check CUBIN                   load the helper kernels (kt_fill_<etype>, kt_check_<etype>,
 *                                 kt_fma, kt_mma); needed before any problem is used
 *   ref ID CUBIN KERNEL CONFIG|- [RACE_US|untimed]   run problem ID's reference once (- : the
 *                                 template's reference launch, else KERNEL at CONFIG), keep its
 *                                 outputs, time it (every time is per launch: of launches on the
 *                                 stream, or of replays of a CUDA graph of launches with
 *                                 measure.launch=graph); with RACE_US, one slower than that is
 *                                 timed by its estimate alone, as eval; untimed: not at all (the
 *                                 reply's times are 0), as a restarted worker replays it
 *   eval ID CUBIN KERNEL CONFIG [RACE_US]   poison outputs, reset inout buffers, run, compare
 *                                 every output element with the reference, then time; with
 *                                 RACE_US, a variant whose fastest of three estimate launches is
 *                                 slower than RACE_US is not timed further: its estimate is the
 *                                 answer, marked `raced`
 *   retime ID ROUNDS (CUBIN KERNEL CONFIG)...   time candidates interleaved, round by round
 *   bw BYTES                      device-to-device copy bandwidth, GB/s (bytes read + written)
 *   rate [UNIT]                   arithmetic rate of a kt_flops_unit, GFLOP/s, the best of a few
 *                                 launches (needs `check` first): fma (the default, kt_fma) or
 *                                 tensor (mma.sync fp16 with fp32 accumulation, kt_mma); 0 when
 *                                 unknown (the check module was built for an arch without it)
 *   quit
 *
 * Replies: `ok ...numbers [raced]`, `check-failed MSG`, `faulted MSG` (the context is broken: the
 * worker exits after saying so), `error MSG` (the command failed; the worker goes on).
 *
 * A worker never outlives its tuner: it is killed when its parent dies (PR_SET_PDEATHSIG on
 * Linux, and it checks the parent it was given) and exits at the end of its input.
 *
 * The parent side is a pool (pool.c; the worker is worker.c): jobs are shared among the
 * workers, each has a watchdog; a worker that faults, dies or hangs is killed, its job recorded
 * (KT_FAULTED, KT_TIMED_OUT), and a new worker is started for the next job, replaying the setup
 * commands (check, every problem and reference).
 */
#ifndef KT_WORKER_H
#define KT_WORKER_H

#include <stddef.h>
#include <stdint.h>

#include "result.h"
#include "util.h"

/* How to start a worker.  The pool copies the strings. */
typedef struct kt_worker_opts {
	const char *exe;               /* the kt executable */
	const char *backend;           /* "cuda" (NULL), or "fake" in test builds (gpu.h) */
	uint64_t seed;                 /* of the test inputs */
	double timeout_s;              /* watchdog per job; <= 0: 10 s */
	double start_timeout_s;        /* for start and setup; <= 0: 120 s */
	const char *log;               /* workers' stderr goes here (appended per start); NULL: inherit */
} kt_worker_opts;

typedef struct kt_job {
	char *cmd;          /* the command line, without its newline (owned by the caller) */
	kt_status status;   /* KT_OK, KT_CHECK_FAILED, KT_FAULTED or KT_TIMED_OUT (KT_NOT_RUN: held, kt_pool_gate) */
	char *reply;        /* the reply after its first field, e.g. "12.5\t0.3" (owned) */
	double timeout_s;   /* the watchdog for this job; <= 0: the pool's */
} kt_job;

typedef struct kt_pool kt_pool;

/* Starts one worker on each of gpus[0..ngpus).  NULL with err set when one cannot start. */
kt_pool *kt_pool_new(const kt_worker_opts *o, const int *gpus, int ngpus, kt_err *err);
/* Runs a setup command on every worker, now and whenever one is restarted.  Its reply must be ok;
 * the reply of the first worker is returned in *reply (owned by the pool; may be NULL). */
int kt_pool_setup(kt_pool *p, const char *cmd, const char **reply, kt_err *err);
/* The same, with another command for restarted workers (replay; NULL: cmd itself): one that
 * sets up the same state without measuring again what was measured (`ref ... untimed`). */
int kt_pool_setup_replay(kt_pool *p, const char *cmd, const char *replay, const char **reply, kt_err *err);
/* Runs jobs (shared among the workers).  -1 only when no worker can be (re)started. */
int kt_pool_run(kt_pool *p, kt_job *jobs, size_t n, kt_err *err);
/* What a caller decides while its jobs run: hold is asked before job i is sent (nonzero: it is
 * not sent; its status is KT_NOT_RUN and its reply what hold wrote to why), done is told each
 * job's outcome as it comes.  Either may be NULL. */
typedef struct kt_pool_gate {
	void *ctx;
	int (*hold)(void *ctx, size_t i, char *why, size_t whysz);
	void (*done)(void *ctx, size_t i, const kt_job *j);
} kt_pool_gate;
/* kt_pool_run, the jobs passing gate (NULL: all are sent). */
int kt_pool_run_gated(kt_pool *p, kt_job *jobs, size_t n, const kt_pool_gate *gate, kt_err *err);
/* Workers restarted so far (after faults and timeouts). */
int kt_pool_restarts(const kt_pool *p);
/* The GPU ordinal of each worker and how many jobs it finished, for up to max workers; returns
 * the number of workers. */
int kt_pool_gpus(const kt_pool *p, int *gpus, size_t *jobs, int max);
void kt_pool_free(kt_pool *p);
void kt_job_clear(kt_job *j);

/* The `kt worker` subcommand (in cmd.h too). */
int kt_cmd_worker(int argc, char **argv);

#endif
