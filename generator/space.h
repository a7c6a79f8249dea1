/* space.h - the feasible configurations of a template at one shape.
 *
 * Enumeration is a depth-first walk over the parameters in declaration order.  Each constraint
 * is attached to the depth at which the last parameter it mentions is bound, and is checked
 * there, so an infeasible prefix is cut with everything below it.  Constraints that mention
 * only shape symbols are checked once, before the walk.
 *
 * A walk is bounded, so that a template whose space is too large to tune (16 parameters of 10
 * values: 10^16 combinations) is an error at once, not a walk of years: it fails, naming the
 * template, the shape and the bound, past KT_SPACE_MAX_CONFIGS feasible configurations or
 * KT_SPACE_MAX_NODES visited prefixes (partial configurations; the bound for constraints that are
 * decided only at the last parameters), whichever comes first.
 */
#ifndef KT_SPACE_H
#define KT_SPACE_H

#include <stddef.h>
#include <stdint.h>

#include "tmpl.h"

/* The most feasible configurations a walk finds, and the most prefixes it visits (each parameter
 * bound to a value counts one), before it fails.  Both take well under a second. */
enum { KT_SPACE_MAX_CONFIGS = 1000000, KT_SPACE_MAX_NODES = 10 * KT_SPACE_MAX_CONFIGS };

/* The enumerated configurations: a dense array of count * nparams value indices.
 * Owned by the caller; release with kt_space_free. */
typedef struct kt_space {
	int nparams;
	size_t count;
	uint16_t *cfgs; /* configuration i is cfgs + i * nparams */
} kt_space;

/* Number of combinations before constraints (a double: it may not fit 64 bits). */
double kt_space_combinations(const kt_tmpl *t);

/* Calls visit for each feasible configuration at this shape, in lexicographic order of value
 * indices; stops early when visit returns non-zero.  Returns the number visited, or -1 with err
 * set when a constraint cannot be evaluated (e.g. division by zero), naming it, or when the walk
 * passes a bound (KT_SPACE_MAX_CONFIGS, KT_SPACE_MAX_NODES), naming the template and the bound. */
long long kt_space_walk(const kt_tmpl *t, const int64_t *shape, int (*visit)(void *ctx, const uint16_t *cfg),
			void *ctx, kt_err *err);

/* Collects every feasible configuration.  0 on success, -1 with err as kt_space_walk. */
int kt_space_enum(const kt_tmpl *t, const int64_t *shape, kt_space *out, kt_err *err);
void kt_space_free(kt_space *s);

static inline const uint16_t *kt_space_cfg(const kt_space *s, size_t i) { return s->cfgs + i * (size_t)s->nparams; }

/* The index of configuration cfg (nparams value indices) in s; -1 when it is not there (not
 * feasible at the space's shape).  Any order (a space narrowed to a --config list keeps the
 * list's); search.c's bisection relies on kt_space_enum's lexicographic order. */
long kt_space_find(const kt_space *s, const uint16_t *cfg);

/* True when cfg satisfies every constraint at this shape (the slow, obvious check). */
int kt_space_feasible(const kt_tmpl *t, const int64_t *shape, const uint16_t *cfg);

#endif
