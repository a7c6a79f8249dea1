/* tune_int.h - what the tuner's files share: its constants, its pieces (compile groups, units,
 * candidates, tasks, the tuner) and the functions one file gives the others.  Private to
 * tune.c (the loop: asking, the batch), tune_setup.c (a problem's setup, the ceilings, the
 * first batch), tune_units.c (units, compile groups and compile batches), tune_measure.c
 * (measuring) and tune_choose.c (a task's end: its rivals timed again, its
 * siblings' fastest, the choice). */
#ifndef KT_TUNE_INT_H
#define KT_TUNE_INT_H

#include <limits.h>

#include "compile.h"
#include "hangs.h"
#include "proc.h"
#include "search.h"
#include "space.h"
#include "trace.h"
#include "tune.h"
#include "worker.h"

static const double DEFAULT_NEAR_FLOOR = 0.03;
static const int64_t BW_BYTES = 1LL << 30;     /* the copy measured for the bandwidth ceiling */
static const double MEASURE_TIMEOUT_S = 120;   /* watchdog of setup, the ceilings and the final re-timing */
enum { REF_RACE_US = 1000 }; /* a reference slower than this is timed by its estimate alone (its time is only reported) */
enum { DEFAULT_RETIME_TOP = 5, MIN_BATCH = 8, MAX_BATCH = 256, MIN_ASK = 4 };
/* The final choice: its rivals are timed again in RETIME_BLOCKS blocks of interleaved rounds, each
 * block about RETIME_BLOCK_US of GPU time (decide.h), counting RETIME_LAUNCH_US for each launch's
 * preparation (inputs reset, the L2 flushed for small shapes, events): 60 rounds for the small
 * kernels whose choice wavered, at least RETIME_MIN_ROUNDS for the large ones. */
enum { RETIME_BLOCKS = 5, RETIME_MIN_ROUNDS = 8, RETIME_MAX_ROUNDS = 60 };
static const double RETIME_BLOCK_US = 10000, RETIME_LAUNCH_US = 10;
/* Before the blocks, the rivals of a kernel bound by arithmetic run untimed for RETIME_WARM_FACTOR
 * times a round's time, at most RETIME_WARM_US: the clock a long kernel keeps under sustained
 * load (tune_choose.c). */
static const double RETIME_WARM_FACTOR = 300, RETIME_WARM_US = 1e6;
enum { SLOTS = 2 };                            /* compile batches in flight at once */
/* and the slot of the rivals' nvcc variants compiled while their task still searches, with half
 * the jobs: see tune.c, confirm_early */
enum { CONFIRM = SLOTS, NSLOTS = SLOTS + 1 };
static const double FIRST_BATCH_S = 2.0;       /* the searches' first batch compiles in about this */
enum { PENDING = -2 };                         /* ev_of: on its way, not yet recorded */
/* Candidates measured in one turn of the loop, at most (about 0.3 s of the GPU): a turn that
 * measured many more left the compile slots idle meanwhile (bench/RESULTS.md, "A configure's
 * turns kept short"). */
enum { MEASURE_TURN = 32 };
/* The trace's lanes (trace.h): the loop, the measuring, the re-timings, each slot's batches and
 * each slot's variants. */
enum { LANE_LOOP = 1, LANE_MEASURE = 2, LANE_RETIME = 3, LANE_BATCH = 10, LANE_UNITS = 20 };

/* How the units of one template and toolchain are compiled. */
typedef struct group {
	const kt_tmpl *t;
	const kt_toolchain *tc;
	kt_compiler cc;
	kt_compiler ccn;  /* cc without NVRTC: the variants that confirm what NVRTC stood in for */
	kt_buf prelude;
	char *nvcc;       /* the compiler, absolute when given as a path (ninja runs in the work dir) */
	char **deps;      /* the template and its local headers, absolute */
	int ndeps;
	char **flagv;     /* the toolchain's flags as words */
	char *flagwords;
	char arch[16];
	char *noref;      /* the template without its reference kernel, in the work dir (kt_emit_unreferenced); NULL: none */
	kt_nvrtc_use rtc; /* cc.nvrtc when its toolkit's NVRTC may compile (rtc.lib owned) */
} group;

enum { U_NEW, U_COMPILING, U_DONE };
/* Which unit of a configuration (tu_unit_make): the group's, the reference's own, nvcc's. */
enum { UNIT_PLAIN, UNIT_REF, UNIT_NVCC };

/* A variant: one configuration of a group, compiled once. */
typedef struct unitrec {
	kt_unit u;
	char sym[160];    /* its launcher's symbol: kernels sym_kernel and sym_reference */
	int group, state;
	int slot;         /* U_COMPILING: the compile slot */
	int task;         /* the problem it was made for (another that measures it reuses it) */
} unitrec;

/* A problem's configuration on its way: waiting for its unit, then measured. */
typedef struct cand {
	int task;
	size_t seq;       /* the order it was asked in: measured in that order, per task */
	size_t idx;       /* into the task's space */
	long unit;
	kt_launch l;
	char *config;     /* "BLOCK=256,VEC=8" */
	int confirm;      /* measured again from nvcc's unit: its result replaces the stand-in's */
} cand;

typedef struct candlist {
	cand *v;
	size_t n, cap;
} candlist;

/* Units to compile next. */
typedef struct idlist {
	long *v;
	size_t n, cap;
} idlist;

enum { T_SETUP, T_STARTING, T_ASKING, T_DRAINING, T_DONE, T_FAILED };

typedef struct task {
	kt_tune_task *tt;
	const kt_tmpl *t;
	const int64_t *shape;
	kt_tune_result *r;
	int group;
	char id[24];      /* the workers' name for the problem */
	int state;
	kt_space *space;  /* its own allocation: the search points at it while tasks move */
	kt_search *search;
	kt_hangs *hangs;  /* what made its configurations hang; NULL: every configuration runs */
	long *ev_of;      /* per space index: its eval, PENDING, or -1 */
	unsigned char *asked;
	long def_idx;     /* the default configuration's space index, or -1 */
	long ref_unit;    /* the unit whose reference (or default) run is the reference */
	double best_us, best_spread;
	size_t inflight;
	size_t counts[KT_NSTATUS];
	int fail_streak;  /* evaluations in a row that failed */
	double charged;   /* its share of the wall time so far */
	int siblings_asked; /* the other shapes' fastest configurations were asked before the choice */
	kt_launch ref_l;  /* the launch of the reference or default, for the floor */
	kt_err err;
} task;

typedef struct tuner {
	task *tasks;      /* grows while the batch runs (a next round): hold indices, not pointers, across that */
	size_t ntasks;
	kt_tune_task **pending; /* tasks to add at the top of the next turn of the loop */
	size_t npending;
	int closing;      /* the batch is ending: no task is added any more */
	int ended_in_ask; /* a search ended in this turn's ask (tu_ask_task): the next turn comes at once */
	const kt_tune_opts *o;
	kt_gpu_info info;
	kt_target target;
	group **groups;   /* each allocated alone: units point at their compiler */
	int ngroups;
	unitrec *units;
	size_t nunits, capunits;
	long *index;      /* open-addressing table of unit names: unit index + 1, 0 empty */
	size_t capindex;
	kt_compiler batchcc; /* ninja, jobs, workdir (and the check unit's compiler) */
	char exe[PATH_MAX];  /* the kt executable: workers and `kt nvrtc` */
	kt_compiler confirmcc; /* batchcc with half its jobs: slot CONFIRM's */
	kt_proc ninja[NSLOTS];
	long *slot_units[NSLOTS];
	size_t slot_n[NSLOTS];
	unsigned char *slot_done[NSLOTS]; /* its units whose results came before the batch ended */
	int busy[NSLOTS];
	double slot_t0[NSLOTS]; /* when its batch started */
	int next_slot;    /* of the batches' SLOTS; CONFIRM is used by nothing else */
	candlist waiting, ready;
	candlist untold;  /* measured, not yet told: a steered search is told in the order it asked */
	idlist later;     /* units made outside a refill, for the next compile batch */
	kt_pool *pool;
	char *workdir;
	int own_workdir;
	double start, last_charge;
	size_t evaluated, seq;
	size_t counts[KT_NSTATUS];
	kt_tune_stats st;
	kt_ceilings ceil;
} tuner;

/* tune.c: candidates, stopping, asking. */
/* Asking or draining: its search has results to come. */
int tu_is_active(const task *ta);
/* Tells task ta's search the result of space index idx (when it asked for it). */
void tu_tell(task *ta, size_t idx);
/* Tells the measured candidates whose turn it is (tune_measure.c). */
void tu_tell_due(tuner *tu);
/* Records candidate c's result: a new eval, or the confirmed one of a stand-in. */
kt_eval *tu_put_eval(tuner *tu, const cand *c, kt_status st, const char *msg, const kt_unit *u);
void tu_list_add(candlist *l, const cand *c);
void tu_cand_free(cand *c);
const char *tu_stop_reason(const tuner *tu, const task *ta, char *buf, size_t bufsz);
int tu_sort_out(tuner *tu, cand *c);
void tu_enqueue(tuner *tu, int k, size_t idx, idlist *fresh);
void tu_enqueue_confirm(tuner *tu, int k, size_t idx, idlist *fresh);
void tu_id_add(idlist *l, long id);
/* The rivals of task ta's choice as they stand (decide.h) into rival[KT_DECIDE_MAX]; how many. */
size_t tu_rivals(const tuner *tu, const task *ta, long *rival);
/* Asks task k's search for up to max configurations into fresh; how many it gave. */
size_t tu_ask_task(tuner *tu, int k, size_t max, idlist *fresh);
/* Configurations per compile batch. */
int tu_batch_size(const tuner *tu);

/* tune_setup.c: a task's setup and reference, the ceilings and floors, the first batch. */
/* The task's space, search (with its seeds and what is known), and result. */
int tu_task_setup(tuner *tu, task *ta, kt_err *err);
/* The reference of task k: the default configuration (measured like any other, first), or,
 * when the template names a reference kernel, that kernel in the default's unit (any feasible
 * configuration's when the default is infeasible). */
void tu_task_reference(tuner *tu, int k, idlist *fresh);
/* Defines task ta on the workers and runs its reference. */
int tu_task_start(tuner *tu, task *ta);
/* The ceilings the tasks need and nobody knew: measured once for the batch. */
int tu_measure_ceilings(tuner *tu, kt_err *err);
/* The roofline floor of task ta at its reference launch: bytes / bandwidth, flops / the rate of
 * the template's arithmetic, the larger.  A ceiling that is unknown (0) adds nothing. */
void tu_set_floor(tuner *tu, task *ta);
/* The first compile batches.  First the check kernels and each task's reference (its default's
 * unit, or one of its own), each alone: the least the GPU can start on, so the first
 * measurement waits for one variant's compile whatever the template.  The workers start while
 * nvcc runs.  How long that took sizes the searches' first batch (a template of heavily unrolled
 * variants gets a small one), which compiles while the check kernels are loaded, every problem is
 * defined and its reference run, and the ceilings are measured. */
int tu_first_batch(tuner *tu, const int *gpus, int ngpus, kt_err *err);
/* The two terms of task ta's roofline floor, in us: its bytes over the copy bandwidth (tb) and its
 * arithmetic over the rate of its kind (tf); 0 where the template or the ceiling gives none. */
void tu_floor_terms(const task *ta, double *tb, double *tf);

/* tune_units.c: units and compile groups, compile batches. */
void tu_index_put(tuner *tu, long u);
long tu_unit_add(tuner *tu);
long tu_unit_make(tuner *tu, int k, const uint16_t *cfg, int kind);
long tu_unit_of(tuner *tu, int k, const uint16_t *cfg);
void tu_group_free(group *g);
int tu_group_of(tuner *tu, const kt_tmpl *t, const kt_toolchain *tc, kt_err *err);
int tu_compile_start(tuner *tu, const idlist *l, kt_err *err);
/* The same in slot CONFIRM, for the rivals' nvcc variants compiled early (tune.c). */
int tu_compile_confirm(tuner *tu, const idlist *l, kt_err *err);
int tu_compile_finish(tuner *tu, int s, kt_err *err);
int tu_oldest_busy(const tuner *tu);
int tu_reap(tuner *tu, int wait, kt_err *err);

/* tune_measure.c: measuring. */
/* Checks and times the ready candidates that are in turn on the workers, grouped by problem. */
int tu_measure_ready(tuner *tu, kt_err *err);
/* Something ready can be measured now. */
int tu_measurable(const tuner *tu);

/* tune_choose.c: the end of a task. */
void tu_finish_task(tuner *tu, task *ta);
/* Moves task ta on: it stops asking when a rule says so, asks its siblings' fastest, confirms its
 * rivals, and (when may_finish) chooses.  1 when it chose (a re-timing ran). */
int tu_update_state(tuner *tu, task *ta, int may_finish);
void tu_fail_task(task *ta, const kt_err *e);

#endif
