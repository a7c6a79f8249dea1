/* decide.c - the final choice among a shape's rivals (see decide.h). */
#include "decide.h"

#include <math.h>
#include <stdlib.h>

#include "util.h"

/* Student's t, two-sided 95%, by degrees of freedom (1..10); beyond, the normal's 1.96 is within
 * 14% (t at 11 is 2.20) and the interval only decides ties: no more precision is needed. */
static const double t975[] = {0, 12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228};
enum { T975_MAX = sizeof t975 / sizeof t975[0] - 1 };

void kt_decide_interval(const double *v, size_t n, double *mean, double *half)
{
	double sum = 0, ss = 0;
	for (size_t i = 0; i < n; i++)
		sum += v[i];
	*mean = n ? sum / (double)n : 0;
	*half = 0;
	if (n < 2)
		return;
	for (size_t i = 0; i < n; i++)
		ss += (v[i] - *mean) * (v[i] - *mean);
	double sd = sqrt(ss / (double)(n - 1)), t = n - 1 <= T975_MAX ? t975[n - 1] : 1.96;
	*half = t * sd / sqrt((double)n);
}

int kt_decide_cmp_values(const kt_tmpl *t, const uint16_t *a, const uint16_t *b)
{
	for (int i = 0; i < t->nparams; i++)
		if (a[i] != b[i])
			return a[i] < b[i] ? -1 : 1;
	return 0;
}

/* How far cfg is from t's default: parameters changed, then the sum of value-index steps. */
static void distance(const kt_tmpl *t, const uint16_t *cfg, long *changed, long *steps)
{
	*changed = *steps = 0;
	for (int i = 0; i < t->nparams; i++) {
		int d = abs((int)cfg[i] - t->params[i].def);
		*changed += d != 0;
		*steps += d;
	}
}

/* The rule: a before b when nearer the default, then first in value order. */
static int nearer(const kt_tmpl *t, const uint16_t *a, const uint16_t *b)
{
	long ca, sa, cb, sb;
	distance(t, a, &ca, &sa);
	distance(t, b, &cb, &sb);
	if (ca != cb)
		return ca < cb;
	if (sa != sb)
		return sa < sb;
	return kt_decide_cmp_values(t, a, b) < 0;
}

/* ---- the rivals ----------------------------------------------------------------------------- */

typedef struct ranked {
	const kt_tmpl *t;
	const kt_eval *e;
	long eval;
} ranked;

static int by_time(const void *pa, const void *pb)
{
	const ranked *a = pa, *b = pb;
	if (a->e->median_us != b->e->median_us)
		return a->e->median_us < b->e->median_us ? -1 : 1;
	return kt_decide_cmp_values(a->t, a->e->cfg, b->e->cfg);
}

static int by_values(const void *pa, const void *pb)
{
	const ranked *a = pa, *b = pb;
	return kt_decide_cmp_values(a->t, a->e->cfg, b->e->cfg);
}

size_t kt_decide_rivals(const kt_tmpl *t, const kt_tune_result *r, size_t top, int all, long *out, size_t max)
{
	ranked *v = kt_xcalloc(r->nevals + 1, sizeof *v);
	size_t n = 0, k = 0;
	for (size_t i = 0; i < r->nevals; i++)
		if (r->evals[i].status == KT_OK && !r->evals[i].raced)
			v[n++] = (ranked){t, &r->evals[i], (long)i};
	qsort(v, n, sizeof *v, by_time);
	const kt_eval *best = n ? v[0].e : NULL;
	for (; k < n && k < max; k++) {
		const kt_eval *e = v[k].e;
		double noise = fmax(fmax(best->spread_us, e->spread_us), KT_DECIDE_WINDOW * best->median_us);
		if (!all && k >= top && e->median_us - best->median_us > noise)
			break; /* sorted by time: the rest are further */
	}
	qsort(v, k, sizeof *v, by_values);
	for (size_t i = 0; i < k; i++)
		out[i] = v[i].eval;
	free(v);
	return k;
}

/* ---- the tie set and the rule ---------------------------------------------------------------- */

size_t kt_decide_fastest(const kt_tmpl *t, const kt_tune_result *r, const kt_retimed *c, size_t k)
{
	size_t f = 0;
	for (size_t i = 1; i < k; i++) /* equal means go to the first in value order */
		if (c[i].us < c[f].us ||
		    (c[i].us == c[f].us && kt_decide_cmp_values(t, r->evals[c[i].eval].cfg, r->evals[c[f].eval].cfg) < 0))
			f = i;
	return f;
}

size_t kt_decide_pick(const kt_tmpl *t, const kt_tune_result *r, kt_retimed *c, size_t k)
{
	size_t f = kt_decide_fastest(t, r, c, k), pick = f;
	for (size_t i = 0; i < k; i++) {
		double d = c[i].us - c[f].us, width = c[i].paired ? c[i].gap_ci_us : c[i].ci_us + c[f].ci_us;
		c[i].tie = d <= fmax(width, KT_TIE_FLOOR * c[f].us) && d <= KT_TIE_MAX * c[f].us;
		if (c[i].tie && nearer(t, r->evals[c[i].eval].cfg, r->evals[c[pick].eval].cfg))
			pick = i;
	}
	return pick;
}

int kt_decide_unsure(const kt_retimed *c, size_t k, size_t pick)
{
	double fastest = c[pick].us;
	for (size_t i = 0; i < k; i++)
		fastest = fmin(fastest, c[i].us);
	return c[pick].us - fastest > KT_TIE_FLOOR * fastest;
}
