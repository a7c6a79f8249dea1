/* search.h - search strategies: which configurations of a feasible space to evaluate next.
 *
 * A search proposes indices into a kt_space in batches and learns from the times it is told.
 * The caller loops: ask for up to `max` indices, evaluate them (compile, check, time), tell each
 * result (in any order, also after asking again), until ask returns 0.  A search never proposes
 * an index twice and never proposes more than `budget` in all.
 *
 * Strategies (see docs/search.md):
 *   exhaustive  every configuration in space order (the first `budget` when the budget is short)
 *   random      uniform without replacement
 *   bestfirst   best-first search over the parameter lattice: a sampled start (the default
 *               configuration and random points), then the unevaluated neighbours of the fastest
 *               configurations first, with a share of random restarts.  "local" is an alias.
 *   auto / NULL exhaustive when the whole space fits in the budget, else bestfirst.
 *
 * bestfirst may answer fewer than `max` while it waits for results that decide what comes next;
 * it answers 0 only when it is done (budget spent or space exhausted).
 *
 * Ownership: the search keeps pointers to t and space, which must outlive it.  Not thread-safe.
 */
#ifndef KT_SEARCH_H
#define KT_SEARCH_H

#include <stddef.h>
#include <stdint.h>

#include "space.h"
#include "tmpl.h"
#include "util.h"

typedef struct kt_search kt_search;

/* strategy: a name above, or NULL/"auto".  budget: max evaluations (<= 0: the whole space).
 * NULL with err set for an unknown strategy. */
kt_search *kt_search_new(const char *strategy, const kt_tmpl *t, const kt_space *space, long budget, uint64_t seed,
			 kt_err *err);
/* How many configurations the caller evaluates in the wall time of one (its parallel compile
 * jobs; 1 by default): once started, bestfirst proposes at least that many per ask, since a
 * smaller batch costs the same wall time and steers no sooner. */
void kt_search_set_parallel(kt_search *s, size_t n);
/* Configurations idx[0..n) (space indices) to propose first, in this order, after the default
 * (what is known to be good elsewhere: warm start).  With seeds, bestfirst's start holds the
 * default, the seeds and only a few random points.  Call before the first ask. */
void kt_search_seed(kt_search *s, const size_t *idx, size_t n);
/* A result measured before this search began (an earlier round at the same problem): told as if
 * asked (bestfirst expands from it), never proposed, not counted against the budget. */
void kt_search_known(kt_search *s, size_t idx, double time_us);
/* Next configurations to evaluate, written to idx[0..ret); 0 = done. */
size_t kt_search_ask(kt_search *s, size_t *idx, size_t max);
/* The result of an asked index: its time in microseconds, or < 0 when it failed. */
void kt_search_tell(kt_search *s, size_t idx, double time_us);
/* The strategy actually used ("exhaustive" for auto on a small space). */
const char *kt_search_name(const kt_search *s);
/* The fastest configuration told so far (index into the space) and its time; -1 when none passed. */
long kt_search_best(const kt_search *s, double *time_us);
/* How many indices were asked so far. */
size_t kt_search_asked(const kt_search *s);

/* 1 when what the strategy asks next depends on what it was told (bestfirst): a caller asks it
 * less at a time, as what it asks ahead of the results is partly guesswork. */
int kt_search_steered(const kt_search *s);

/* Convergence.  A result is a gain when it beats the best by more than the noise (a fraction
 * the caller sets from its timings; at least 0.5%).  The search counts the results told since
 * the last gain (bestfirst: past its sampled start); a bestfirst search has converged when that
 * count reaches patience (> 0).  exhaustive and random never converge: they do what their names
 * say. */
void kt_search_set_noise(kt_search *s, double rel);
double kt_search_noise(const kt_search *s);
size_t kt_search_since_gain(const kt_search *s);
int kt_search_converged(const kt_search *s, int patience);
void kt_search_free(kt_search *s);

/* Strategy names and one-line summaries, in table order, NULL-terminated (for --help). */
const char *kt_search_strategy_name(int i);
const char *kt_search_strategy_summary(int i);

#endif
