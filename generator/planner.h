/* planner.h - the built-in planner: after a tuning round, propose how to change the space.
 *
 * Deterministic and offline.  It looks at the evaluated configurations of one round and proposes:
 *   extend  an integer parameter whose fastest configuration uses the first or last of its values,
 *           faster beyond the noise than the fastest with the value next to it, gets the next value
 *           beyond the edge (x2 / /2 for powers of two, else one more step), when the template's
 *           constraints and the GPU's launch limits (threads per block, shared memory, grid) allow
 *           that value with the rest of the fastest configuration (a value it is pinned to by a
 *           constraint is no trend);
 *   forbid  a value of one parameter, or a pair of values of two, under which every evaluated
 *           configuration failed (at least KT_PLAN_MIN_EVIDENCE of them) becomes a constraint.
 * A proposal is applied by rewriting the template's text (kt_planner_apply): the parameter's
 * `@kt param` line is rewritten with the new value list, forbidden regions become `@kt require`
 * lines; the caller parses the new text with kt_tmpl_parse_text and tunes the next round.
 * A forbidden value stays forbidden, so a later round does not extend into it again.
 */
#ifndef KT_PLANNER_H
#define KT_PLANNER_H

#include <stddef.h>
#include <stdint.h>

#include "problem.h"
#include "result.h"
#include "target.h"
#include "tmpl.h"
#include "util.h"

#define KT_PLAN_MIN_EVIDENCE 3 /* failed configurations needed to forbid a region */

typedef enum kt_prop_kind { KT_PROP_EXTEND, KT_PROP_FORBID } kt_prop_kind;

typedef struct kt_proposal {
	kt_prop_kind kind;
	int param;      /* index into t->params */
	int64_t value;  /* EXTEND: the value to add; FORBID: the value (a value index for bool/choice) */
	int param2;     /* FORBID of a pair: the second parameter, else -1 */
	int64_t value2;
	char *require;  /* FORBID: the constraint to add, e.g. "VEC != 16" (owned) */
	char reason[256];
} kt_proposal;

/* Owns its proposals; zero-initialise, release with kt_plan_free. */
typedef struct kt_plan {
	size_t n;
	kt_proposal *props;
} kt_plan;

/* The seam through which the tuning rounds (rounds.h) ask for a plan: after a round's result r of
 * problem p, a plan of proposals (out) or a whole revised template (*revision, malloc'ed, owned by
 * the caller), or neither; notes for the user and a transcript (JSON) appended to note and
 * transcript.  -1 with err when the planner itself failed. */
typedef struct kt_planner {
	const char *name;
	int (*plan)(void *ctx, const kt_problem *p, const kt_tune_result *r, kt_plan *out, char **revision,
		    kt_buf *note, kt_buf *transcript, kt_err *err);
	void *ctx;
} kt_planner;

/* The built-in planner behind the seam (kt_planner_propose; ctx unused). */
extern const kt_planner kt_planner_builtin;

/* Proposes changes from evals[0..n) of template t at shape on gpu (NULL: kt_target_common).
 * out->n == 0 when there is nothing to change. */
int kt_planner_propose(const kt_tmpl *t, const int64_t *shape, const kt_target *gpu, const kt_eval *evals, size_t n,
		       kt_plan *out, kt_err *err);
/* The template's text with the plan applied (to parse and tune next). */
int kt_planner_apply(const kt_tmpl *t, const kt_plan *plan, kt_buf *text, kt_err *err);
/* One line per proposal: "extend BLOCK with 2048: ..." (for progress output and records). */
void kt_plan_format(const kt_tmpl *t, const kt_plan *plan, kt_buf *out);
void kt_plan_free(kt_plan *plan);

#endif
