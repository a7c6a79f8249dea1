/* generate.h - `kt generate`: from templates and their shapes to the emitted sources.
 *
 * One run generates one or more kernels (a CMake configure hands over every
 * kt_add_tuned_kernel() call at once).  The steps: parse each template and shape and check that
 * the template's default configuration is feasible at every shape (it is what ships when nothing
 * better is known); look every shape up in the caches; tune all the misses of all kernels together
 * in one pipeline (rounds.h, tune.h), each warm-started from what the caches know of its template
 * (transfer.h); store their records; emit each kernel (emit.h).  Nothing is written unless every
 * kernel's input is valid; a kernel whose tuning fails gets its template's defaults and a note.
 */
#ifndef KT_GENERATE_H
#define KT_GENERATE_H

#include "agent.h"
#include "llm.h"
#include "measure.h"
#include "util.h"

struct kt_farm_opts;

/* Each kernel is generated for a list of GPU models (--gpus; default: the GPU here, else --gpu /
 * KT_GPU), one table each, built for that GPU's own target: the GPU here tunes its misses (unless
 * --no-tune or --require-hit, which only forbid tuning), the others take what the caches hold (a
 * miss is a note; under --require-hit an error).  A miss that is not tuned, where the caches hold
 * the problem tuned from another version of the template (an edit since), takes that version's
 * configuration rather than the defaults (origin "other-version").  The identity of a GPU that
 * is not here comes from the records that name it.  A GPU table that would hold only template defaults is left
 * out; the generic table (the template defaults, built for every target of the build) serves the
 * GPUs without a table, and holds the shapes' configurations itself when no GPU is known.
 */

/* One kernel (one kt_add_tuned_kernel call).  Strings are borrowed; NULL (or 0) is "not given". */
typedef struct kt_generate_kernel {
	const char *template_path;
	const char *name;            /* C identifier: the launcher is kt_<name> */
	const char *outdir;
	const char *const *shapes;   /* "rows=4096,hidden=4096", one per tuned shape */
	int nshapes;
	const char *const *types;    /* "T=bfloat16" */
	int ntypes;
	const char *const *configs;  /* "INDEX:BLOCK=128,VEC=4": force shape INDEX's configuration */
	int nconfigs;
	const char *arch;            /* the build's targets, "80;90a" (';' or ','); the flags' arch flags add theirs */
	const char *gpus;            /* the GPU models to generate for, "NVIDIA H200;NVIDIA H100 80GB HBM3"; NULL: the run's */
	const char *nvcc;            /* path or name of nvcc */
	const char *flags;           /* the build's CUDA flags, one string (flags.h sorts them) */
	const char *cache_dir;       /* the user's cache (the command resolves the default) */
	const char *project_cache;   /* the project's committed cache directory */
	const char *measure[KT_NMEASURE]; /* --l2, --launch: "warm", "graph"; NULL: the template's, else the default */
} kt_generate_kernel;

/* Everything else: the same for every kernel of the run. */
typedef struct kt_generate_opts {
	const kt_generate_kernel *kernels;
	int nkernels;
	const char *remote;          /* remote cache URL, or NULL */
	const char *gpu;             /* target GPU name when none is present */
	const char *gpus;            /* the GPU models of every kernel that names none (KT_GPUS); NULL: see above */
	const char *retune;          /* NULL: use hits; "" or "*": re-tune all; else a name pattern */
	int require_hit;             /* a cache miss is an error (CI); never tunes */
	int read_only;               /* never write a cache tier; a miss is still tuned with a GPU, not stored */
	int no_tune;                 /* never tune, even with a GPU */
	const char *backend;         /* GPU backend (tune.h): NULL is "cuda"; "fake" in test builds */
	const char *tmpdir;          /* where temporary work directories go; NULL: /tmp */
	long store_pause_ms;         /* tests only: a cache store waits this long before its rename */
	int no_nvrtc;                /* tuning compiles with nvcc only (KT_NVRTC=0) */
	int all_gpus;                /* tune on every GPU here of the first one's model, a worker each (tune.h's
				      * gpu -1); 0: on the first alone */
	/* The budget of one tuning round of a shape on a miss (tune.h): evaluations and wall seconds
	 * (0: the defaults below; < 0: no limit), and the search strategy (NULL: auto). */
	long budget;
	double seconds;
	const char *strategy;
	/* The planner between tuning rounds of a miss: off tunes once; builtin or llm run at most
	 * rounds (0: KT_GENERATE_ROUNDS) rounds of tune -> plan -> apply -> re-tune (rounds.h) and
	 * keep their history in the record.  A hit never calls the planner.  With llm, the model is
	 * made at the first miss from llm (NULL: none, and llm_why says why; the built-in planner
	 * plans then).  The records of a template that kt refactor wrote also say so (provenance.h),
	 * without the key secret. */
	kt_agent_mode planner;
	int rounds;
	kt_agent_cfg agent;
	const kt_llm_config *llm;
	const char *llm_why;
	const char *secret;
	const char *report;          /* after a run that tuned: the HTML report of its kernels' records (report.h) */
	const char *trace;           /* after a run that tuned: its timeline (trace.h) */
	/* KT_FARM (farm.h): when tuning is allowed (not --no-tune, not --require-hit), the misses are
	 * not tuned here but farmed out to Slurm, and meanwhile each gets the configuration of the
	 * closest record of its template (transfer.h), else the default.  NULL: tune here. */
	const struct kt_farm_opts *farm;
	int quiet;                   /* no notes */
	void (*note)(void *ctx, const char *msg); /* notes for the user ("using the template defaults"); may be NULL */
	void *note_ctx;
} kt_generate_opts;

#define KT_GENERATE_BUDGET 400   /* evaluations per shape when none is given */
#define KT_GENERATE_SECONDS 90.0 /* seconds per shape when none are given */
#define KT_GENERATE_ROUNDS 2     /* tuning rounds per shape with a planner, when none are given */

/* Runs the whole generation.  0 on success; -1 with err set.  Parser diagnostics are appended
 * to diags (file:line:col, the line, a caret) for the caller to print as they are. */
int kt_generate(const kt_generate_opts *o, kt_buf *diags, kt_err *err);

/* Parses "INDEX:BLOCK=128,VEC=4" into the shape index and the configuration text after ':'. */
int kt_generate_parse_force(const char *spec, int nshapes, int *index, const char **cfgtext, kt_err *err);

#endif
