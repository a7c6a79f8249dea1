/* agent.h - the LLM agent: stage 1 refactors a plain kernel into a template, stage 2 proposes
 * changes to a template's space between tuning rounds.  See docs/agent.md.
 *
 * The model's output is data.  A template it writes is parsed like any input (all diagnostics),
 * its space is enumerated at the shapes, and it is compiled and checked only through the seams
 * below (nvcc spawned with an argv; a GPU worker).  A proposal is parsed against a fixed JSON
 * schema and validated against the template, the declared space and the device's limits; nothing
 * of a reply is ever executed on the host or handed to a shell.  A reply that is malformed,
 * truncated or off-schema is rejected with a reason, and the loop goes on or ends cleanly.
 *
 * Transcripts (every message, reply and outcome; never the API key) are JSON documents that the
 * callers save next to what the agent produced; their "format" is KT_TRANSCRIPT_FORMAT.
 */
#ifndef KT_AGENT_H
#define KT_AGENT_H

#include <stddef.h>
#include <stdint.h>

#include "gpu.h"
#include "llm.h"
#include "planner.h"
#include "target.h"
#include "result.h"
#include "tmpl.h"
#include "util.h"

#define KT_TRANSCRIPT_FORMAT "kt-transcript-1"

/* ---- control ---------------------------------------------------------------------------- */

typedef enum kt_agent_mode { KT_AGENT_OFF, KT_AGENT_BUILTIN, KT_AGENT_LLM, KT_AGENT_NMODES } kt_agent_mode;

extern const char *const kt_agent_mode_names[KT_AGENT_NMODES]; /* "off", "builtin", "llm" */

enum { KT_AGENT_MAX_REPLIES = 50 };

typedef struct kt_agent_cfg {
	kt_agent_mode mode; /* KT_AGENT: off | builtin (the default) | llm */
	int replies;        /* KT_AGENT_REPLIES: model replies per task (default 4) */
	long tokens;        /* KT_AGENT_TOKENS: tokens per task, prompt + completion (default 400000) */
} kt_agent_cfg;

/* Parses a mode name; -1 with err listing the names. */
int kt_agent_mode_parse(const char *s, kt_agent_mode *out, kt_err *err);
/* The defaults: builtin, 4 replies, 400000 tokens (the commands add the environment, cmd_env.h). */
void kt_agent_cfg_defaults(kt_agent_cfg *c);

/* ---- replies ---------------------------------------------------------------------------- */

/* The template in a reply: the first fenced block tagged cuda, cu, c++, cpp or tmpl (else the
 * first fenced block; else the whole reply when it holds an `// @kt kernel` line).  -1 when the
 * reply holds none, or a fence that is never closed (a truncated reply). */
int kt_agent_extract_template(const char *reply, kt_buf *out, char *why, size_t whysz);

/* The definition of __global__ kernel `name` in CUDA source: [*begin, *end) from the start of
 * its declaration to its closing brace.  -1 when there is none. */
int kt_agent_find_kernel(const char *src, const char *name, size_t *begin, size_t *end);

/* ---- stage 1: refactoring ----------------------------------------------------------------- */

/* Compiles one configuration of a template.  Returns 0 when it compiled, 1 when it failed (log
 * holds the compiler's exact messages, to show the model), -1 when the compiler could not run
 * (err set; the refactoring stops). */
typedef int (*kt_agent_compile_fn)(void *ctx, const kt_tmpl *t, const uint16_t *cfg, kt_buf *log, kt_err *err);

/* Runs up to `samples` configurations of a template at one shape on a GPU against its reference
 * kernel (the original).  0 when every one matched (*nchecked counts them), 1 when one did not
 * (log says which and why), -1 when the check could not run (err set). */
typedef int (*kt_agent_verify_fn)(void *ctx, const kt_tmpl *t, const int64_t *shape, int samples, int *nchecked,
				  kt_buf *log, kt_err *err);

typedef struct kt_refactor_req {
	const char *source_path;       /* the plain kernel, for messages */
	const char *source;            /* its text */
	const char *kernel;            /* the __global__ function to refactor */
	const char *const *shapes;     /* "rows=4096,hidden=4096": shapes the template must serve */
	int nshapes;
	const char *tmpl_path;         /* where the template goes (its diagnostics name it) */
	const char *lang_ref;          /* docs/template-language.md */
	const kt_target *gpu;
	int rounds;                    /* model replies at most */
	long tokens;                   /* token budget (<= 0: none) */
	int samples;                   /* configurations compiled (and verified) besides the default */
	kt_agent_compile_fn compile;   /* NULL: not compiled */
	void *compile_ctx;
	kt_agent_verify_fn verify;     /* NULL: not verified (no GPU) */
	void *verify_ctx;
	void (*progress)(void *ctx, const char *line); /* one line per event, or NULL */
	void *progress_ctx;
} kt_refactor_req;

typedef struct kt_refactor_out {
	char *tmpl_text;         /* the accepted template, or NULL (owned) */
	int rounds;              /* model replies used */
	int compiled;            /* configurations compiled */
	int verified;            /* configurations verified against the reference on a GPU */
	kt_buf transcript;       /* JSON: messages, replies and outcomes (no key) */
} kt_refactor_out;

/* Runs the refactoring loop: prompt, reply, validate, and on a failure the exact error back to
 * the model, until a template passes or the rounds or tokens are spent.  0 when a template
 * passed; -1 with err otherwise.  out->transcript is filled either way. */
int kt_agent_refactor(kt_llm *llm, const kt_refactor_req *req, kt_refactor_out *out, kt_err *err);
void kt_refactor_out_free(kt_refactor_out *o);

/* Validates a template text as kt_agent_refactor does (parse, reference, shapes, space, device
 * limits, compile, verify).  0 when it passed; 1 when it failed with the messages for the model
 * in log; -1 when a check could not run. */
int kt_agent_check_template(const kt_refactor_req *req, const char *text, int *ncompiled, int *nverified,
			    kt_buf *log, kt_err *err);

/* ---- stage 2: proposals -------------------------------------------------------------------
 * The model answers {"proposals":[{"kind":"set_values","param":"BLOCK","values":[...],"reason":".."},
 * {"kind":"add_constraint","expr":"...","reason":".."},{"kind":"revise_template","template":"...",
 * "reason":".."}]}.  Accepted set_values and add_constraint proposals are translated into the
 * built-in planner's structure (planner.h), so the tuning loop applies either planner's output
 * with kt_planner_apply: a new integer value becomes an EXTEND, a dropped value a FORBID
 * "P != v" (param = P, value = v, or its index for a choice), a constraint a FORBID whose require
 * is the expression (param = -1).  A revised template is whole text (new_src). */

typedef enum kt_agent_prop_kind {
	KT_AGENT_SET_VALUES,
	KT_AGENT_ADD_CONSTRAINT,
	KT_AGENT_REVISE_TEMPLATE,
	KT_AGENT_NPROP_KINDS
} kt_agent_prop_kind;

/* "set_values", "add_constraint", "revise_template", and "unknown" at KT_AGENT_NPROP_KINDS: the
 * kind of a proposal whose kind was not one of these (it is rejected). */
extern const char *const kt_agent_prop_kind_names[KT_AGENT_NPROP_KINDS + 1];

/* One proposal of the model.  Every string is owned by the proposal. */
typedef struct kt_agent_prop {
	kt_agent_prop_kind kind;
	char *param;     /* set_values: the parameter */
	int nvals;
	char **vals;     /* set_values: the new values as written (integers, choice names) */
	char *expr;      /* add_constraint */
	char *tmpl;      /* revise_template: the whole new template */
	char *reason;    /* the model's reason */
	/* filled by kt_agent_check_proposal */
	int accepted;
	char *why;       /* why it was rejected, or NULL */
	char *new_src;   /* accepted: the template text with the proposal applied */
	kt_plan plan;    /* accepted set_values / add_constraint: as the built-in planner's proposals */
} kt_agent_prop;

typedef struct kt_agent_props {
	int n;
	kt_agent_prop *v;
} kt_agent_props;

/* Parses {"proposals":[...]} (optionally in a ```json fence).  Off-schema entries are kept as
 * rejected proposals with the reason; -1 with err only when the document itself is malformed. */
int kt_agent_parse_proposals(const char *text, kt_agent_props *out, kt_err *err);
void kt_agent_props_free(kt_agent_props *p);

/* Validates p against template t at the shapes and the device: the parameter exists, values are
 * of its kind (integers, or declared choices), the applied template parses, its space is not
 * empty, every new value has a feasible configuration within the device's limits; a revised
 * template keeps the kernel, the reference kernel, the shapes and the argument list.  Sets
 * p->accepted, p->why, p->new_src and p->plan; returns p->accepted. */
int kt_agent_check_proposal(const kt_tmpl *t, const int64_t *shapes, int nshapes, const kt_target *g,
			    kt_agent_prop *p);

/* Appends the planner proposals of every accepted set_values and add_constraint to out. */
void kt_agent_props_to_plan(const kt_agent_props *ps, kt_plan *out);

/* The compact summary of a tuning round that the planner reads: best configurations and their
 * times, percent of the roofline floor, resource use, failures and why. */
void kt_agent_summary(const kt_tmpl *t, const int64_t *shape, const kt_tune_result *r, kt_buf *out);

typedef struct kt_plan_req {
	const kt_tmpl *t;
	const int64_t *shapes;  /* nshapes * t->nshapes values */
	int nshapes;
	const kt_target *gpu;
	const char *summary;    /* kt_agent_summary of the rounds so far */
	int attempts;           /* replies allowed for one plan (a malformed one is answered with the error) */
	long tokens;            /* token budget (<= 0: none) */
} kt_plan_req;

/* Asks the model for proposals and validates each.  0 with out filled (possibly none accepted);
 * -1 with err when the model gave no usable document within the attempts, or the client failed.
 * transcript (may be NULL) receives the JSON transcript either way. */
int kt_agent_plan(kt_llm *llm, const kt_plan_req *req, kt_agent_props *out, kt_buf *transcript, kt_err *err);

/* The LLM planner behind the tuning rounds' seam (planner.h): the model is asked (kt_agent_plan
 * on the round's summary) and its accepted set_values and add_constraint proposals come back as a
 * plan, the first accepted revised template as the revision.  When the model fails (no endpoint,
 * no usable answer, budget spent), the built-in planner answers instead and the note says why. */
typedef struct kt_agent_planner {
	kt_agent_cfg cfg;   /* its token budget */
	kt_llm *llm;        /* NULL: no model could be made (the built-in planner answers) */
} kt_agent_planner;

/* The seam for ap (which must outlive it). */
kt_planner kt_agent_planner_seam(kt_agent_planner *ap);

#endif
