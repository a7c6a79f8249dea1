/* decide.h - the final choice of a tuned shape: which configurations are timed again against the
 * best, the confidence interval of each, the tie set, and the one rule that picks from it.
 *
 * A search measures each configuration once, at its own moment; the same project tuned twice
 * cold on one GPU chose differently at 19 of 31 shapes, 5 of them more than 2% apart (issue 22).
 * So the choice is made again when a shape's search ends (tune.c): its rivals are timed
 * together, interleaved, in blocks on one worker; each block gives each rival a median, and the
 * blocks' medians give it a mean and a 95% confidence interval (kt_decide_interval).
 *
 * The tie set is the fastest rival (by its mean) and every rival whose difference from it, block
 * by block, has a 95% interval that reaches 0 (kt_retimed.gap_ci_us: what a block's rivals share,
 * a clock that wandered, cancels; where that is not known, whose own interval overlaps the
 * fastest's), or that is within KT_TIE_FLOOR of it, but none more than KT_TIE_MAX slower.  From
 * the tie set the rule takes the configuration nearest the template's default (fewest parameters
 * changed, then the smallest sum of value-index steps), then the first in value order (parameter
 * by parameter, each one's values in their declared order).  Neither the set nor the rule looks
 * at the order in which the search evaluated the configurations.
 */
#ifndef KT_DECIDE_H
#define KT_DECIDE_H

#include <stddef.h>
#include <stdint.h>

#include "result.h"
#include "tmpl.h"

enum { KT_DECIDE_MAX = 16 };  /* rivals timed again at most (a worker's command has 64 fields) */
#define KT_DECIDE_WINDOW 0.02 /* a rival's sweep time is within the noise of the best's, or this much */
#define KT_TIE_FLOOR 0.005    /* within 0.5% of the fastest is a tie, whatever the intervals */
#define KT_TIE_MAX 0.01       /* more than 1% slower than the fastest is never a tie */

/* The rivals of result r's fastest fully timed evaluation: the top fastest ones (by sweep time;
 * raced estimates never count) and every other whose sweep time is within the noise of the
 * fastest's (the larger of the two spreads, at least KT_DECIDE_WINDOW of it); with all, every
 * fully timed one (the configurations a user asked to compare).  At most max, the fastest kept.
 * Writes their eval indices to out in value order (the order they are timed in) and returns
 * how many; 0 when nothing passed. */
size_t kt_decide_rivals(const kt_tmpl *t, const kt_tune_result *r, size_t top, int all, long *out, size_t max);

/* The mean of v[0..n) and the half-width of its 95% confidence interval (Student's t with n - 1
 * degrees of freedom); the half-width is 0 when n < 2. */
void kt_decide_interval(const double *v, size_t n, double *mean, double *half);

/* The index into c of the fastest of the k >= 1 rivals: the least mean, then the first in value
 * order. */
size_t kt_decide_fastest(const kt_tmpl *t, const kt_tune_result *r, const kt_retimed *c, size_t k);

/* Marks the tie set among the k >= 1 timed rivals c[0..k) of result r (c[i].tie) and returns the
 * index into c of the configuration the rule chooses.  The same for c in any order. */
size_t kt_decide_pick(const kt_tmpl *t, const kt_tune_result *r, kt_retimed *c, size_t k);

/* Whether the rule's pick (c[pick], as kt_decide_pick chose from the k rivals c) is a tie on
 * the intervals alone: slower than the fastest by more than KT_TIE_FLOOR.  The re-timing then
 * takes more blocks before the rule picks again (tune_choose.c). */
int kt_decide_unsure(const kt_retimed *c, size_t k, size_t pick);

/* Compares two configurations of t in value order (<0, 0, >0). */
int kt_decide_cmp_values(const kt_tmpl *t, const uint16_t *a, const uint16_t *b);

#endif
