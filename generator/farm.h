/* farm.h - tuning farmed out through Slurm: a configure's misses tuned on a cluster's GPUs.
 *
 * A configure with KT_FARM (generate.h) tunes nothing itself: it writes its misses to a list and
 * submits the list to Slurm as one job array (sbatch --array, --gres=gpu:1 and KT_FARM's
 * settings).  Each array task runs `kt farm run LIST --task N` on a GPU node: it tunes its share
 * of the misses through kt_generate and the records go to the remote cache, where the next
 * configure anywhere finds them.  docs/farm.md is the site's side: the Slurm settings, the paths
 * every node must see, how results flow, the failure modes.
 *
 * The list is JSON, named by the hash of its text (misses-<hash>.json), so the same misses make
 * the same list and a list never changes under a job that reads it.  It holds what its tasks
 * share (the target GPU's name, the remote cache, the tuning budget, the KT_FARM it was made
 * with) and per miss what kt generate needs to tune it: the template, the kernel's name, types,
 * arch, compiler, flags, project cache and measurement settings, the shape, and the key when the
 * target GPU's identity was known.  Miss i belongs to task i % tasks.  Beside it: its job script (<stem>.sh) and the
 * tasks' logs (<stem>-<job>_<task>.log); in jobs/, per miss, the job and task that farm it, so
 * that a configure farms only the misses that are not in flight already.
 *
 * Slurm's commands run behind a seam (slurm.h).  Nothing here prints: what happened comes back
 * as text, errors in a kt_err.
 */
#ifndef KT_FARM_H
#define KT_FARM_H

#include <stddef.h>

#include "generate.h"
#include "slurm.h"
#include "util.h"

enum {
	KT_FARM_FORMAT = 1, /* the list's format version */
	KT_FARM_TASKS = 256, /* array tasks at most, unless KT_FARM says tasks=N */
	KT_FARM_JOBID = 32,  /* room for a job id */
};

/* ---- KT_FARM: how to reach the GPUs ---------------------------------------------------------- */

/* KT_FARM's value parsed.  The value is ON (the cluster's defaults), or words KEY=VALUE separated
 * by blanks: partition, constraint, gpu (the GRES type: --gres=gpu:TYPE:1), account, qos, time,
 * cpus, mem and reservation become sbatch options; tasks=N bounds the array's tasks and
 * parallel=N the tasks that run at once.  Owns its strings; release with kt_farm_spec_free. */
typedef struct kt_farm_spec {
	char **args;   /* the sbatch options: "--gres=gpu:1", "--partition=gpu", ... (NULL-terminated) */
	int nargs;
	int tasks;     /* at most this many tasks (KT_FARM_TASKS when not given) */
	int parallel;  /* at most this many at once; 0: no limit */
} kt_farm_spec;

/* 0, or -1 with err naming the bad word (an unknown key lists the known ones). */
int kt_farm_spec_parse(const char *text, kt_farm_spec *out, kt_err *err);
void kt_farm_spec_free(kt_farm_spec *s);

/* ---- the list of misses ------------------------------------------------------------------------ */

/* One missed problem.  Strings are borrowed (read: owned by the list). */
typedef struct kt_farm_miss {
	const char *name;           /* the kernel (kt_<name>) */
	const char *template_path;  /* absolute, as the nodes see it */
	const char *const *types;   /* "T=half", as kt generate --type takes them */
	int ntypes;
	const char *arch, *nvcc, *flags; /* as kt generate takes them; NULL: not given */
	const char *project_cache;  /* the project's cache directory, or NULL */
	const char *shape;          /* "rows=4096,hidden=4096"; "" for a template without shape symbols */
	const char *key;            /* its key, or NULL when the target GPU's identity was unknown */
	const char *measure[KT_NMEASURE]; /* --l2, --launch as kt generate takes them; NULL: not given */
} kt_farm_miss;

typedef struct kt_farm_list {
	const char *gpu;       /* the target GPU's name: the nodes must have it */
	const char *remote;    /* the remote cache the records go to */
	const char *farm;      /* the KT_FARM it was made with: the default of kt farm submit */
	long budget;           /* kt_generate_opts's budget, seconds and strategy for the tasks */
	double seconds;
	const char *strategy;
	kt_farm_miss *misses;
	size_t n;
	int tasks;             /* the array's tasks; 0 in a list to write: min(n, KT_FARM's tasks) */
	void *owned;           /* a list that was read: what its strings live in (kt_farm_list_free) */
} kt_farm_list;

/* Writes l into dir (made when missing) as misses-<hash of the text>.json; a miss of the same
 * problem as an earlier one (another name for it) is left out.  *path receives the file's path (malloc'ed); a list of the same
 * text is left as it is.  0, or -1 with err. */
int kt_farm_list_write(const kt_farm_list *l, const kt_farm_spec *spec, const char *dir, char **path,
		       kt_err *err);
/* Reads a list; -1 with err naming the file and what is wrong in it. */
int kt_farm_list_read(const char *path, kt_farm_list *l, kt_err *err);
void kt_farm_list_free(kt_farm_list *l);

/* ---- submitting --------------------------------------------------------------------------------- */

typedef struct kt_farm_opts {
	const char *spec;      /* KT_FARM */
	const char *dir;       /* where lists, job scripts and logs go */
	const char *kt;        /* the kt tool the tasks run: an absolute path the nodes see */
	const kt_slurm *slurm;
} kt_farm_opts;

/* The configure's side: the misses of l whose task of an earlier job is still pending or running
 * are left to it; the others are written to a list and submitted.  msg receives what happened,
 * for the user: the job id, how to follow it.  -1 with err when the misses could not be farmed
 * (no remote cache, KT_FARM malformed, Slurm absent or down). */
int kt_farm_misses(const kt_farm_opts *o, const kt_farm_list *l, kt_buf *msg, kt_err *err);

/* Submits the list at path (read as l) as one job array of the given tasks (NULL: all of them),
 * with o->spec's settings (NULL or "": the list's); writes the job script beside the list, the
 * job's id into jobid, and notes the job as the one that farms those tasks' misses.  -1 with err
 * (sbatch's own message when it refused). */
int kt_farm_submit(const kt_farm_opts *o, const char *path, const kt_farm_list *l, const int *tasks, size_t ntasks,
		   char jobid[KT_FARM_JOBID], kt_err *err);

/* ---- following a job ------------------------------------------------------------------------ */

typedef enum kt_farm_state { KT_FARM_PENDING, KT_FARM_RUNNING, KT_FARM_DONE, KT_FARM_FAILED, KT_FARM_NSTATES } kt_farm_state;
extern const char *const kt_farm_state_names[KT_FARM_NSTATES]; /* "pending", "running", "done", "failed" */

typedef struct kt_farm_task {
	int id;                 /* the array index */
	kt_farm_state state;
	char slurm[32];         /* Slurm's word for it: PENDING, COMPLETED, CANCELLED, ... */
	char why[96];           /* a pending task's reason, a failed one's exit code; "" */
} kt_farm_task;

/* An array job as Slurm tells it.  Release with kt_farm_job_free. */
typedef struct kt_farm_job {
	kt_farm_task *tasks;    /* by id */
	size_t n;
	int count[KT_FARM_NSTATES];
	char *list;             /* the list it farms, when Slurm still knows the job's script; else NULL */
	const char *source;     /* "squeue" or "sacct" */
} kt_farm_job;

/* Asks squeue, then (for a job the controller has forgotten) sacct, about job jobid.  -1 with err
 * when neither knows it or Slurm cannot be reached (their own messages in err). */
int kt_farm_status(const kt_slurm *s, const char *jobid, kt_farm_job *out, kt_err *err);
void kt_farm_job_free(kt_farm_job *j);
/* "4 tasks: 2 done, 1 running, 1 failed" (states with no task left out). */
void kt_farm_job_summary(const kt_farm_job *j, kt_buf *out);

/* ---- a task ------------------------------------------------------------------------------------- */

/* What array task `task` of list l runs on a GPU node: tunes its share of the misses through
 * kt_generate with the options of base (backend, planner, notes; the rest comes from the list):
 * first looks each one up (a miss already in a cache is skipped: tasks are idempotent; a key
 * other than the list's means this node, the template or the compiler is not the configure's,
 * and the miss is not tuned), then tunes the rest together and checks that each record reached
 * the remote cache.  report receives one line per miss.  The number of misses that failed, or
 * -1 with err when the task could not run at all (no GPU here, another GPU than the list's, a
 * template that does not read). */
int kt_farm_run(const kt_farm_list *l, int task, const kt_generate_opts *base, kt_buf *report, kt_err *err);

/* The path of the running kt tool (for the job script), malloc'ed; NULL with err. */
char *kt_farm_self(kt_err *err);

#endif
