/* space.c - enumerating the feasible configurations of a template at one shape (see space.h).
 *
 * The walk binds parameters in declaration order.  Before it starts, every constraint is filed
 * under the depth of the last parameter it mentions; constraints over shape symbols alone are
 * checked once.  At each depth only the constraints filed there are evaluated, so a violated
 * prefix prunes its whole subtree and no constraint is evaluated twice for one prefix.  The walk
 * counts the feasible configurations and the prefixes it visits, and fails past the bounds.
 */
#include "space.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The constraints, grouped by the depth at which they become decidable. */
typedef struct walk {
	const kt_tmpl *t;
	kt_val env[KT_MAX_SLOTS];
	uint16_t cfg[KT_MAX_SLOTS];
	int *at;      /* constraint indices, grouped by depth */
	int *start;   /* start[d] .. start[d+1]: the constraints checked once parameter d is bound */
	int (*visit)(void *ctx, const uint16_t *cfg);
	void *ctx;
	const int64_t *shape;
	long long visited; /* feasible configurations */
	long long nodes;   /* prefixes: parameters bound to a value */
	int stop;
	kt_err *err;
} walk;

double kt_space_combinations(const kt_tmpl *t)
{
	double n = 1;
	for (int i = 0; i < t->nparams; i++)
		n *= t->params[i].nvals;
	return n;
}

/* The depth (parameter index) at which constraint e becomes decidable; -1 for shape-only. */
static int constraint_depth(const kt_tmpl *t, const kt_expr *e)
{
	uint64_t deps = kt_expr_deps(e);
	int depth = -1;
	for (int p = 0; p < t->nparams; p++)
		if (deps >> t->params[p].slot & 1)
			depth = p;
	return depth;
}

/* Files the constraints by depth (a counting sort); index 0 holds the shape-only ones. */
static void file_constraints(walk *w)
{
	const kt_tmpl *t = w->t;
	int nd = t->nparams + 1;
	w->start = kt_xcalloc((size_t)nd + 1, sizeof *w->start);
	w->at = kt_xcalloc((size_t)t->nreq + 1, sizeof *w->at);
	int *depth = kt_xcalloc((size_t)t->nreq + 1, sizeof *depth);
	for (int r = 0; r < t->nreq; r++) {
		depth[r] = constraint_depth(t, t->req[r]) + 1;
		w->start[depth[r] + 1]++;
	}
	for (int d = 0; d < nd; d++)
		w->start[d + 1] += w->start[d];
	int *fill = kt_xcalloc((size_t)nd, sizeof *fill);
	for (int r = 0; r < t->nreq; r++)
		w->at[w->start[depth[r]] + fill[depth[r]]++] = r;
	free(fill);
	free(depth);
}

/* " (at BLOCK=64,VEC=2)" for the first n parameters, the ones bound so far. */
static void format_prefix(const kt_tmpl *t, const uint16_t *cfg, int n, kt_buf *out)
{
	for (int d = 0; d < n; d++) {
		const kt_param *p = &t->params[d];
		kt_buf_puts(out, d ? "," : " (at ");
		if (p->type == KT_PCHOICE)
			kt_buf_printf(out, "%s=%s", p->name, p->choices[cfg[d]]);
		else if (p->type == KT_PBOOL)
			kt_buf_printf(out, "%s=%s", p->name, p->vals[cfg[d]] ? "true" : "false");
		else
			kt_buf_printf(out, "%s=%lld", p->name, (long long)p->vals[cfg[d]]);
	}
	if (n)
		kt_buf_putc(out, ')');
}

/* 1 when every constraint filed at group g holds, 0 when one is violated, -1 on an
 * evaluation error (err names the constraint). */
static int check_group(walk *w, int g)
{
	for (int k = w->start[g]; k < w->start[g + 1]; k++) {
		int r = w->at[k];
		kt_val v;
		char msg[256];
		if (kt_expr_eval(w->t->req[r], w->env, &v, msg, sizeof msg) != 0) {
			kt_buf where = {0};
			format_prefix(w->t, w->cfg, g, &where);
			kt_fail(w->err, "%s:%d: constraint '%s' cannot be evaluated: %s%s", w->t->path,
				w->t->req_loc[r].line, w->t->req_text[r], msg, kt_buf_str(&where));
			kt_buf_free(&where);
			return -1;
		}
		if (!kt_val_truthy(v))
			return 0;
	}
	return 1;
}

/* "10^16", "2.5 x 10^12", or the number itself below 10^9. */
static void format_count(double n, kt_buf *out)
{
	if (n < 1e9) {
		kt_buf_printf(out, "%.0f", n);
		return;
	}
	int e = (int)floor(log10(n));
	double m = n / pow(10, e);
	if (m < 1.05)
		kt_buf_printf(out, "10^%d", e);
	else
		kt_buf_printf(out, "%.1f x 10^%d", m, e);
}

/* The walk passed a bound: -1 with err naming the template, the shape and the bound. */
static int too_large(walk *w)
{
	kt_buf shape = {0}, comb = {0};
	kt_tmpl_format_shape(w->t, w->shape, &shape);
	format_count(kt_space_combinations(w->t), &comb);
	if (w->visited > KT_SPACE_MAX_CONFIGS)
		kt_fail(w->err, "%s: more than %d feasible configurations at shape %s (%s combinations): kt enumerates "
			"at most %d; narrow the parameters' value lists or add constraints", w->t->path,
			KT_SPACE_MAX_CONFIGS, kt_buf_str(&shape), kt_buf_str(&comb), KT_SPACE_MAX_CONFIGS);
	else
		kt_fail(w->err, "%s: the space at shape %s (%s combinations) is too large to enumerate: kt stops after "
			"%d partial configurations (%lld feasible found by then); narrow the parameters' value lists "
			"or add constraints on the first parameters, which prune earlier", w->t->path,
			kt_buf_str(&shape), kt_buf_str(&comb), KT_SPACE_MAX_NODES, w->visited);
	kt_buf_free(&shape);
	kt_buf_free(&comb);
	return -1;
}

/* Binds parameter d to each of its values in turn; 0 to go on, -1 on error. */
static int walk_from(walk *w, int d)
{
	const kt_tmpl *t = w->t;
	if (d == t->nparams) {
		if (++w->visited > KT_SPACE_MAX_CONFIGS)
			return too_large(w);
		if (w->visit && w->visit(w->ctx, w->cfg))
			w->stop = 1;
		return 0;
	}
	const kt_param *p = &t->params[d];
	for (int i = 0; i < p->nvals && !w->stop; i++) {
		if (++w->nodes > KT_SPACE_MAX_NODES)
			return too_large(w);
		w->cfg[d] = (uint16_t)i;
		w->env[p->slot] = kt_int(p->vals[i]);
		int ok = check_group(w, d + 1);
		if (ok < 0)
			return -1;
		if (ok && walk_from(w, d + 1) != 0)
			return -1;
	}
	return 0;
}

long long kt_space_walk(const kt_tmpl *t, const int64_t *shape, int (*visit)(void *ctx, const uint16_t *cfg),
			void *ctx, kt_err *err)
{
	walk w = {.t = t, .visit = visit, .ctx = ctx, .shape = shape, .err = err};
	kt_tmpl_env(t, shape, NULL, w.env);
	file_constraints(&w);
	long long rc = 0;
	int ok = check_group(&w, 0);
	if (ok < 0 || (ok && walk_from(&w, 0) != 0))
		rc = -1;
	else
		rc = w.visited;
	free(w.at);
	free(w.start);
	return rc;
}

typedef struct collect {
	kt_space *s;
	size_t cap;
} collect;

static int collect_one(void *ctx, const uint16_t *cfg)
{
	collect *c = ctx;
	kt_space *s = c->s;
	size_t np = (size_t)(s->nparams ? s->nparams : 1);
	if (s->count == c->cap) {
		c->cap = c->cap ? c->cap * 2 : 64;
		s->cfgs = kt_xrealloc(s->cfgs, c->cap * np * sizeof *s->cfgs);
	}
	memcpy(s->cfgs + s->count * (size_t)s->nparams, cfg, (size_t)s->nparams * sizeof *cfg);
	s->count++;
	return 0;
}

int kt_space_enum(const kt_tmpl *t, const int64_t *shape, kt_space *out, kt_err *err)
{
	*out = (kt_space){.nparams = t->nparams};
	collect c = {.s = out};
	if (kt_space_walk(t, shape, collect_one, &c, err) < 0) {
		kt_space_free(out);
		return -1;
	}
	return 0;
}

void kt_space_free(kt_space *s)
{
	free(s->cfgs);
	s->cfgs = NULL;
	s->count = 0;
}

long kt_space_find(const kt_space *s, const uint16_t *cfg)
{
	for (size_t i = 0; i < s->count; i++)
		if (!memcmp(kt_space_cfg(s, i), cfg, (size_t)s->nparams * sizeof *cfg))
			return (long)i;
	return -1;
}

int kt_space_feasible(const kt_tmpl *t, const int64_t *shape, const uint16_t *cfg)
{
	kt_val env[KT_MAX_SLOTS];
	kt_tmpl_env(t, shape, cfg, env);
	return kt_tmpl_violated(t, env) < 0;
}
