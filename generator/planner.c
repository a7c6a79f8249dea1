/* planner.c - the built-in planner between tuning rounds (see planner.h). */
#include "planner.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_VALUE (1LL << 24)    /* no parameter grows beyond this */
#define MAX_VALUES 64            /* nor to more values than this */
#define MAX_FORBIDS 8            /* forbidden regions proposed per round */
#define MIN_GAIN 0.005           /* an edge value must beat its neighbour by this share to be a trend */

static kt_proposal *add(kt_plan *plan, kt_prop_kind kind, int param, int64_t value)
{
	plan->props = kt_xrealloc(plan->props, (plan->n + 1) * sizeof *plan->props);
	kt_proposal *p = &plan->props[plan->n++];
	*p = (kt_proposal){kind, param, value, -1, 0, NULL, ""};
	return p;
}

void kt_plan_free(kt_plan *plan)
{
	for (size_t i = 0; i < plan->n; i++)
		free(plan->props[i].require);
	free(plan->props);
	plan->props = NULL;
	plan->n = 0;
}

/* The fastest passing evaluation, or -1. */
static long fastest(const kt_eval *evals, size_t n)
{
	long b = -1;
	for (size_t i = 0; i < n; i++)
		if (evals[i].status == KT_OK && (b < 0 || evals[i].median_us < evals[b].median_us))
			b = (long)i;
	return b;
}

/* ---- extend ---- */

static int is_pow2(int64_t v)
{
	return v > 0 && !(v & (v - 1));
}

static void min_max(const kt_param *pa, int64_t *lo, int64_t *lo2, int64_t *hi, int64_t *hi2)
{
	*lo = *hi = pa->vals[0];
	for (int k = 1; k < pa->nvals; k++) {
		if (pa->vals[k] < *lo)
			*lo = pa->vals[k];
		if (pa->vals[k] > *hi)
			*hi = pa->vals[k];
	}
	*lo2 = *hi, *hi2 = *lo; /* the second smallest and second largest */
	for (int k = 0; k < pa->nvals; k++) {
		int64_t v = pa->vals[k];
		if (v > *lo && v < *lo2)
			*lo2 = v;
		if (v < *hi && v > *hi2)
			*hi2 = v;
	}
}

/* The value beyond edge, continuing the progression from its neighbour inner; 0 in *ok when none. */
static int64_t beyond(int64_t edge, int64_t inner, int64_t lowest, int *ok)
{
	int64_t next;
	if (is_pow2(edge) && is_pow2(inner) && (edge == 2 * inner || inner == 2 * edge))
		next = edge > inner ? edge * 2 : edge / 2;
	else
		next = edge + (edge - inner);
	*ok = next != edge && next <= MAX_VALUE && next >= -MAX_VALUE && !(lowest > 0 && next < 1) &&
	      !(lowest >= 0 && next < 0);
	return next;
}

/* True when the launch of env fits the target. */
static int launch_fits(const kt_tmpl *t, const kt_val *env, const kt_target *g)
{
	kt_launch L;
	kt_err e = {0};
	char why[160];
	return kt_tmpl_launch(t, env, &L, &e) == 0 && kt_target_fits(g, &L, NULL, why, sizeof why) == 0;
}

/* True when the fastest configuration stays feasible with p = next: the evidence for the edge is
 * its, so a value that a constraint keeps from it (one pinned there, such as a raster width that
 * only another path of the template takes) would be tuned for nothing. */
static int next_feasible(const kt_tmpl *t, const int64_t *shape, const kt_target *g, const kt_eval *best, int p,
			 int64_t next)
{
	kt_val env[KT_MAX_SLOTS];
	kt_tmpl_env(t, shape, best->cfg, env);
	env[t->params[p].slot] = kt_int(next);
	return kt_tmpl_violated(t, env) < 0 && launch_fits(t, env, g);
}

/* The fastest passing evaluation with parameter p at value v, or -1. */
static long fastest_with(const kt_param *pa, int p, int64_t v, const kt_eval *evals, size_t n)
{
	long b = -1;
	for (size_t i = 0; i < n; i++)
		if (evals[i].status == KT_OK && pa->vals[evals[i].cfg[p]] == v &&
		    (b < 0 || evals[i].median_us < evals[b].median_us))
			b = (long)i;
	return b;
}

/* True when a is faster than b by more than the noise: a's spread, and at least MIN_GAIN. */
static int beats(const kt_eval *a, const kt_eval *b)
{
	double margin = a->spread_us > a->median_us * MIN_GAIN ? a->spread_us : a->median_us * MIN_GAIN;
	return a->median_us + margin < b->median_us;
}

static void propose_extensions(const kt_tmpl *t, const int64_t *shape, const kt_target *g, const kt_eval *evals,
			       size_t n, long best, kt_plan *plan)
{
	for (int p = 0; p < t->nparams; p++) {
		const kt_param *pa = &t->params[p];
		if (pa->type != KT_PINT || pa->nvals < 2 || pa->nvals >= MAX_VALUES)
			continue;
		int64_t lo, lo2, hi, hi2, v = pa->vals[evals[best].cfg[p]];
		min_max(pa, &lo, &lo2, &hi, &hi2);
		if (v != lo && v != hi)
			continue;
		int ok;
		int64_t inner = v == hi ? hi2 : lo2;
		int64_t next = v == hi ? beyond(hi, hi2, lo, &ok) : beyond(lo, lo2, lo, &ok);
		long in = fastest_with(pa, p, inner, evals, n);
		if (!ok || in < 0 || !beats(&evals[best], &evals[in]) ||
		    !next_feasible(t, shape, g, &evals[best], p, next))
			continue;
		kt_proposal *pr = add(plan, KT_PROP_EXTEND, p, next);
		snprintf(pr->reason, sizeof pr->reason,
			 "the fastest configuration (%.3f us) has %s=%lld, the %s of its values %lld..%lld (the fastest "
			 "with %lld: %.3f us)",
			 evals[best].median_us, pa->name, (long long)v, v == hi ? "top" : "bottom", (long long)lo,
			 (long long)hi, (long long)inner, evals[in].median_us);
	}
}

/* ---- forbid ---- */

/* `P != v` as template text. */
static void neq_text(const kt_param *pa, int64_t vidx, kt_buf *out)
{
	if (pa->type == KT_PCHOICE)
		kt_buf_printf(out, "%s != \"%s\"", pa->name, pa->choices[vidx]);
	else
		kt_buf_printf(out, "%s != %lld", pa->name, (long long)pa->vals[vidx]);
}

static void value_text(const kt_param *pa, int64_t vidx, kt_buf *out)
{
	if (pa->type == KT_PCHOICE)
		kt_buf_printf(out, "%s=%s", pa->name, pa->choices[vidx]);
	else
		kt_buf_printf(out, "%s=%lld", pa->name, (long long)pa->vals[vidx]);
}

static void add_forbid(const kt_tmpl *t, kt_plan *plan, int p, int v, int q, int w, int failed)
{
	kt_buf req = {0}, what = {0};
	kt_proposal *pr = add(plan, KT_PROP_FORBID, p, v);
	neq_text(&t->params[p], v, &req);
	value_text(&t->params[p], v, &what);
	if (q >= 0) {
		pr->param2 = q;
		pr->value2 = w;
		kt_buf_puts(&req, " || ");
		neq_text(&t->params[q], w, &req);
		kt_buf_puts(&what, " with ");
		value_text(&t->params[q], w, &what);
	}
	pr->require = kt_buf_detach(&req);
	snprintf(pr->reason, sizeof pr->reason, "all %d evaluated configurations with %s failed", failed,
		 kt_buf_str(&what));
	kt_buf_free(&what);
}

/* Counts of evaluations and failures per value of p (and of q when q >= 0), row-major [v][w]. */
static void tally(const kt_tmpl *t, const kt_eval *evals, size_t n, int p, int q, int *cnt, int *bad)
{
	int nw = q >= 0 ? t->params[q].nvals : 1;
	for (size_t i = 0; i < n; i++) {
		int k = evals[i].cfg[p] * nw + (q >= 0 ? evals[i].cfg[q] : 0);
		cnt[k]++;
		bad[k] += evals[i].status != KT_OK;
	}
}

static int all_failed(const int *cnt, const int *bad, int k)
{
	return cnt[k] >= KT_PLAN_MIN_EVIDENCE && bad[k] == cnt[k];
}

static void propose_forbids(const kt_tmpl *t, const kt_eval *evals, size_t n, kt_plan *plan)
{
	int np = t->nparams, forbids = 0;
	int **single = kt_xcalloc((size_t)np + 1, sizeof *single); /* single[p][v]: v of p is forbidden */
	for (int p = 0; p < np; p++) {
		int nv = t->params[p].nvals;
		int *cnt = kt_xcalloc((size_t)nv, sizeof *cnt), *bad = kt_xcalloc((size_t)nv, sizeof *bad);
		single[p] = kt_xcalloc((size_t)nv, sizeof **single);
		tally(t, evals, n, p, -1, cnt, bad);
		for (int v = 0; v < nv && forbids < MAX_FORBIDS; v++)
			if (v != t->params[p].def && all_failed(cnt, bad, v)) {
				add_forbid(t, plan, p, v, -1, 0, cnt[v]);
				single[p][v] = 1;
				forbids++;
			}
		free(cnt);
		free(bad);
	}
	for (int p = 0; p < np; p++)
		for (int q = p + 1; q < np; q++) {
			int nv = t->params[p].nvals, nw = t->params[q].nvals;
			int *cnt = kt_xcalloc((size_t)(nv * nw), sizeof *cnt), *bad = kt_xcalloc((size_t)(nv * nw), sizeof *bad);
			tally(t, evals, n, p, q, cnt, bad);
			for (int v = 0; v < nv; v++)
				for (int w = 0; w < nw && forbids < MAX_FORBIDS; w++)
					if (!single[p][v] && !single[q][w] &&
					    !(v == t->params[p].def && w == t->params[q].def) &&
					    all_failed(cnt, bad, v * nw + w)) {
						add_forbid(t, plan, p, v, q, w, cnt[v * nw + w]);
						forbids++;
					}
			free(cnt);
			free(bad);
		}
	for (int p = 0; p < np; p++)
		free(single[p]);
	free(single);
}

int kt_planner_propose(const kt_tmpl *t, const int64_t *shape, const kt_target *gpu, const kt_eval *evals, size_t n,
		       kt_plan *out, kt_err *err)
{
	out->n = 0;
	out->props = NULL;
	long best = fastest(evals, n);
	if (best < 0)
		return 0; /* nothing passed: the template is broken, not a region of it */
	kt_target common;
	if (!gpu)
		kt_target_common(&common);
	propose_extensions(t, shape, gpu ? gpu : &common, evals, n, best, out);
	propose_forbids(t, evals, n, out);
	return 0;
}

void kt_plan_format(const kt_tmpl *t, const kt_plan *plan, kt_buf *out)
{
	for (size_t i = 0; i < plan->n; i++) {
		const kt_proposal *p = &plan->props[i];
		if (p->kind == KT_PROP_EXTEND)
			kt_buf_printf(out, "extend %s with %lld: %s\n", t->params[p->param].name, (long long)p->value,
				      p->reason);
		else
			kt_buf_printf(out, "require %s: %s\n", p->require, p->reason);
	}
}

/* ---- apply ---- */

static int cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
	return x < y ? -1 : x > y;
}

/* The `@kt param` line of p with the values extended by the plan. */
static int param_line(const kt_tmpl *t, const kt_plan *plan, int p, const char *line, size_t len, kt_buf *out,
		      kt_err *err)
{
	const kt_param *pa = &t->params[p];
	const char *at = strstr(line, "@kt");
	if (!at || (size_t)(at - line) > len)
		return kt_fail_internal(err, "%s:%d: the declaration of %s is not an @kt line", t->path, pa->loc.line,
					pa->name);
	int64_t *vals = kt_xmalloc(((size_t)pa->nvals + plan->n) * sizeof *vals);
	int nv = pa->nvals;
	memcpy(vals, pa->vals, (size_t)nv * sizeof *vals);
	for (size_t i = 0; i < plan->n; i++)
		if (plan->props[i].kind == KT_PROP_EXTEND && plan->props[i].param == p)
			vals[nv++] = plan->props[i].value;
	qsort(vals, (size_t)nv, sizeof *vals, cmp_i64);
	kt_buf_add(out, line, (size_t)(at - line));
	kt_buf_printf(out, "@kt param %s in ", pa->name);
	for (int k = 0; k < nv; k++)
		if (!k || vals[k] != vals[k - 1]) /* an extension by a value already declared adds nothing */
			kt_buf_printf(out, k ? ", %lld" : "%lld", (long long)vals[k]);
	kt_buf_printf(out, " default %lld", (long long)pa->vals[pa->def]);
	free(vals);
	return 0;
}

/* The line of the last `@kt` directive (forbids go after it). */
static int last_directive(const char *src)
{
	int last = 0, line = 1;
	for (const char *s = src; *s; line++) {
		size_t n = strcspn(s, "\n");
		size_t sp = strspn(s, " \t");
		if (sp + 2 < n && !strncmp(s + sp, "//", 2) && !strncmp(s + sp + 2 + strspn(s + sp + 2, " \t"), "@kt", 3))
			last = line;
		s += n + (s[n] == '\n');
	}
	return last;
}

int kt_planner_apply(const kt_tmpl *t, const kt_plan *plan, kt_buf *text, kt_err *err)
{
	for (size_t i = 0; i < plan->n; i++) {
		const kt_proposal *p = &plan->props[i];
		if (p->kind == KT_PROP_EXTEND && (p->param < 0 || p->param >= t->nparams || t->params[p->param].type != KT_PINT))
			return kt_fail(err, "only an integer parameter can be extended with a value");
		if (p->kind == KT_PROP_FORBID && (!p->require || strpbrk(p->require, "\r\n")))
			return kt_fail(err, "a constraint to add must be one line");
	}
	int after = last_directive(t->src);
	int line = 1;
	kt_buf_reset(text);
	for (const char *s = t->src; *s; line++) {
		size_t n = strcspn(s, "\n");
		int rewritten = 0;
		for (int p = 0; p < t->nparams && !rewritten; p++) {
			int extended = 0;
			for (size_t i = 0; i < plan->n; i++)
				extended |= plan->props[i].kind == KT_PROP_EXTEND && plan->props[i].param == p;
			if (extended && t->params[p].loc.line == line) {
				if (param_line(t, plan, p, s, n, text, err) < 0)
					return -1;
				rewritten = 1;
			}
		}
		if (!rewritten)
			kt_buf_add(text, s, n);
		kt_buf_putc(text, '\n');
		if (line == after)
			for (size_t i = 0; i < plan->n; i++)
				if (plan->props[i].kind == KT_PROP_FORBID)
					kt_buf_printf(text, "// @kt require   %s\n", plan->props[i].require);
		s += n + (s[n] == '\n');
	}
	if (!after && plan->n)
		return kt_fail_internal(err, "%s: no @kt directive to place the planner's changes after", t->path);
	return 0;
}

static int builtin_plan(void *ctx, const kt_problem *p, const kt_tune_result *r, kt_plan *out, char **revision,
			kt_buf *note, kt_buf *transcript, kt_err *err)
{
	(void)ctx, (void)note, (void)transcript;
	*revision = NULL;
	return kt_planner_propose(p->tmpl, p->shape, p->target, r->evals, r->nevals, out, err);
}

const kt_planner kt_planner_builtin = {"builtin", builtin_plan, NULL};
