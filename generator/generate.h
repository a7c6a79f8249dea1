/* generate.h - `kt generate`: from a template and its shapes to the emitted sources.
 *
 * The steps: parse the template and each shape; check that the template's default
 * configuration is feasible at every shape (it is what ships when nothing better is known);
 * choose a configuration per shape (forced by the caller, found in a cache, tuned on this GPU,
 * or the default); emit (emit.h).  Nothing is written unless every step before emit succeeded.
 */
#ifndef KT_GENERATE_H
#define KT_GENERATE_H

#include "util.h"

struct kt_agent_cfg;

/* A GPU present on this machine always gives the keys their GPU identity (also with --no-tune and
 * --require-hit, which only forbid tuning a miss); --gpu / KT_GPU names the target when none is.
 */

/* Every option of `kt generate`.  Strings are borrowed; NULL (or 0) means "not given". */
typedef struct kt_generate_opts {
	const char *template_path;
	const char *name;            /* C identifier: the launcher is kt_<name> */
	const char *outdir;
	const char *const *shapes;   /* "rows=4096,hidden=4096", one per tuned shape */
	int nshapes;
	const char *const *types;    /* "T=bfloat16" */
	int ntypes;
	const char *const *configs;  /* "INDEX:BLOCK=128,VEC=4": force shape INDEX's configuration */
	int nconfigs;

	const char *arch;            /* "90" (compute capability digits) */
	const char *nvcc;            /* path or name of nvcc */
	const char *flags;           /* extra code-generation flags, one string */
	const char *cache_dir;       /* the user's cache; else $KT_CACHE_DIR */
	const char *project_cache;   /* the project's committed cache directory */
	const char *remote;          /* remote cache URL; else $KT_REMOTE_CACHE */
	const char *gpu;             /* target GPU name when none is present; else $KT_GPU */
	const char *retune;          /* NULL: use hits; "" or "*": re-tune all; else a name pattern */
	int require_hit;             /* a cache miss is an error (CI); never tunes */
	int read_only;               /* never write a cache tier; a miss is still tuned with a GPU, not stored */
	int no_tune;                 /* never tune, even with a GPU */
	const char *backend;         /* GPU backend (tune.h): NULL is "cuda"; "fake" for tests only */
	/* The budget of one tuning round of a shape on a miss (tune.h): evaluations and wall seconds
	 * (0: the defaults below; < 0: no limit), and the search strategy (NULL: auto).  With a
	 * planner a shape takes at most agent_rounds such rounds. */
	long budget;
	double seconds;
	const char *strategy;
	/* The planner between tuning rounds (agent.h; KT_AGENT): off or NULL tunes a miss once; builtin
	 * or llm runs at most agent_rounds rounds of tune -> plan -> apply -> re-tune (rounds.h; 0:
	 * KT_GENERATE_ROUNDS) and keeps their history in the record.  A hit never calls the planner.
	 * The records of a template that kt refactor wrote also say so (provenance.h). */
	const struct kt_agent_cfg *agent;
	int agent_rounds;
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
