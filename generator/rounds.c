/* rounds.c - tune, plan, apply, tune again (see rounds.h). */
#include "rounds.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cusrc.h"
#include "json.h"
#include "key.h"
#include "space.h"

enum { MAX_ROUNDS = 20, SHOW_MAX = 200 /* bytes of a plan's or a note's line that kt cache show prints */ };
/* A later round stops after this many failures in a row (its new parameter does not build at
 * this shape, say) rather than walk its space. */
enum { ROUND_GIVE_UP = 8 };

/* Where rounds' templates go: o->workdir, else a temporary directory (removed at the end). */
typedef struct round_dirs {
	char *base;
	int temporary;
	char **orig_dirs;  /* each task's original template's directory, for -I */
	char **files;      /* written templates, removed at the end when temporary */
	int nfiles;
} round_dirs;

/* Opens the rounds' directory; orig[i] is task i's original template. */
static int dirs_open(round_dirs *d, const kt_tmpl *const *orig, size_t n, const kt_tune_opts *o, kt_err *err)
{
	*d = (round_dirs){0};
	d->orig_dirs = kt_xcalloc(n + 1, sizeof *d->orig_dirs);
	for (size_t i = 0; i < n; i++)
		d->orig_dirs[i] = kt_path_dir(orig[i]->path);
	if (o->workdir) {
		d->base = kt_path_join(o->workdir, "rounds");
		return kt_mkdirs(d->base, err);
	}
	d->base = kt_temp_dir(o->tmpdir, "kt-rounds", err);
	d->temporary = 1;
	return d->base ? 0 : -1;
}

static void dirs_close(round_dirs *d, size_t n)
{
	for (int i = 0; i < d->nfiles; i++)
		free(d->files[i]);
	if (d->temporary && d->base)
		kt_remove_tree(d->base);
	for (size_t i = 0; d->orig_dirs && i < n; i++)
		free(d->orig_dirs[i]);
	free(d->orig_dirs);
	free(d->files);
	free(d->base);
}

/* Parses a round's template written at path, with the original t's type choices and target; its
 * local headers are the original's (in orig_dir: nvcc finds them through -I).  NULL with why in
 * note. */
static kt_tmpl *parse_round(const char *path, const kt_tmpl *t, const char *orig_dir, int k, kt_buf *note)
{
	const char *base = strrchr(t->path, '/') ? strrchr(t->path, '/') + 1 : t->path;
	kt_buf tv = {0}; /* "T=half\n...": the choices t was parsed with */
	kt_tmpl_format_choices(t, '\n', &tv);
	const char **types = kt_xcalloc(tv.len + 1, sizeof *types);
	int ntypes = 0;
	for (char *save = NULL, *w = tv.len ? strtok_r(tv.data, "\n", &save) : NULL; w; w = strtok_r(NULL, "\n", &save))
		types[ntypes++] = w;
	kt_tmpl_opts to = {types, ntypes, t->arch[0] ? t->arch : NULL, t->sms};
	kt_buf diags = {0};
	kt_err perr = {0};
	kt_tmpl *n = kt_tmpl_parse(path, &to, &diags, &perr);
	if (n) {
		char *as = kt_path_join(orig_dir, base);
		const char **inc;
		n->nincludes = kt_cusrc_includes(n->arena, as, n->src, n->srclen, &inc);
		n->includes = inc;
		free(as);
	} else {
		kt_buf_printf(note, "the template of round %d does not parse:\n%s", k, diags.len ? kt_buf_str(&diags) : perr.msg);
	}
	kt_buf_free(&diags);
	kt_buf_free(&tv);
	free(types);
	return n;
}

/* Writes a round's template text under a directory named by its hash (problems whose plans gave
 * the same text share one file, and so their compiled variants), and parses it.  NULL with why
 * in note. */
static kt_tmpl *round_tmpl(round_dirs *d, const kt_tmpl *t, int i, int k, const char *text, kt_buf *note, kt_err *err)
{
	const char *base = strrchr(t->path, '/') ? strrchr(t->path, '/') + 1 : t->path;
	char hex[KT_KEY_HEX];
	kt_key_of_fields(text, strlen(text), hex);
	kt_buf dir = {0};
	kt_buf_printf(&dir, "%s/round-%.16s", d->base, hex);
	char *path = kt_path_join(kt_buf_str(&dir), base);
	kt_tmpl *n = NULL;
	if (kt_mkdirs(kt_buf_str(&dir), err) == 0 && kt_write_atomic(path, text, strlen(text), err) == 0) {
		int seen = 0;
		for (int f = 0; f < d->nfiles && !seen; f++)
			seen = !strcmp(d->files[f], path);
		if (!seen) {
			d->files = kt_xrealloc(d->files, (size_t)(d->nfiles + 1) * sizeof *d->files);
			d->files[d->nfiles++] = kt_xstrdup(path);
		}
		n = parse_round(path, t, d->orig_dirs[i], k, note);
	} else {
		kt_buf_printf(note, "round %d: %s", k, err->msg);
	}
	free(path);
	kt_buf_free(&dir);
	return n;
}

/* An extension that did not compile: a parameter's new value all of whose variants failed to
 * compile, for one original template; the planner is not followed there again in this run. */
typedef struct nocompile {
	const kt_tmpl *t0;
	char param[64];
	int64_t value;
	char where[128]; /* the problem that found it */
} nocompile;

typedef struct memory {
	nocompile *v;
	size_t n;
} memory;

/* Drops the extensions that did not compile for t0 elsewhere in this run; notes each. */
static void drop_known_failures(const memory *m, const kt_tmpl *t0, const kt_tmpl *t, kt_plan *plan, kt_buf *note)
{
	size_t keep = 0;
	for (size_t i = 0; i < plan->n; i++) {
		const kt_proposal *q = &plan->props[i];
		const nocompile *hit = NULL;
		for (size_t j = 0; j < m->n && !hit && q->kind == KT_PROP_EXTEND; j++)
			if (m->v[j].t0 == t0 && m->v[j].value == q->value && !strcmp(m->v[j].param, t->params[q->param].name))
				hit = &m->v[j];
		if (hit) {
			kt_buf_printf(note, "not extending %s with %lld: it did not compile at %s\n", hit->param,
				      (long long)hit->value, hit->where);
			free(plan->props[i].require);
		} else {
			plan->props[keep++] = plan->props[i];
		}
	}
	plan->n = keep;
}

/* Asks the planner after a round of problem p (of original template t0) and returns the next
 * template's text, or NULL (no further round; note says why). */
static char *plan_next(const kt_planner *pl, const kt_problem *p, const kt_tmpl *t0, const memory *m, kt_round *rd,
		       kt_buf *note)
{
	kt_plan plan = {0};
	char *revision = NULL;
	kt_buf tr = {0}, text = {0}, fmt = {0};
	kt_err e = {0};
	char *next = NULL;
	int failed = pl->plan(pl->ctx, p, &rd->result, &plan, &revision, note, &tr, &e);
	if (!failed)
		drop_known_failures(m, t0, p->tmpl, &plan, note);
	if (failed) {
		kt_buf_printf(note, "the planner failed: %s", e.msg);
	} else if (revision) {
		next = revision;
		kt_buf_puts(&fmt, "revise the template\n");
	} else if (!plan.n) {
		kt_buf_puts(note, "the planner proposes no change");
	} else if (kt_planner_apply(p->tmpl, &plan, &text, &e)) {
		kt_buf_printf(note, "the planner's proposals do not apply: %s", e.msg);
	} else {
		next = kt_buf_detach(&text);
	}
	kt_plan_format(p->tmpl, &plan, &fmt);
	rd->plan = fmt.len ? kt_buf_detach(&fmt) : NULL;
	rd->transcript = tr.len ? kt_buf_detach(&tr) : NULL;
	kt_plan_free(&plan);
	kt_buf_free(&tr);
	kt_buf_free(&text);
	kt_buf_free(&fmt);
	return next;
}

static double best_time(const kt_round *rd)
{
	const kt_tune_result *r = &rd->result;
	if (r->best < 0 || (size_t)r->best >= r->nevals || r->evals[r->best].status != KT_OK)
		return -1;
	return r->evals[r->best].median_us;
}

static int map_config(const kt_tmpl *n, const uint16_t *c, const kt_tmpl *t, uint16_t *cfg);

/* True when template n's space at shape holds a configuration that t cannot express (a new
 * value or parameter) or n's code differs from t's (a revision): a reason to tune again. */
static int has_news(const kt_tmpl *t, const kt_tmpl *n, const int64_t *shape, int revised)
{
	if (revised)
		return 1;
	kt_space sp;
	kt_err e = {0};
	if (kt_space_enum(n, shape, &sp, &e))
		return 0;
	int news = 0;
	uint16_t c[KT_MAX_SLOTS];
	for (size_t i = 0; i < sp.count && !news; i++)
		news = map_config(n, kt_space_cfg(&sp, i), t, c) != 0;
	kt_space_free(&sp);
	return news;
}

/* One task's rounds as they run: its current template and toolchain (round > 0: with
 * -I<original's directory>), what it measured so far. */
typedef struct rtask {
	kt_rounds_task *rt;
	kt_tune_task tt[MAX_ROUNDS]; /* round k's task of the batch */
	kt_buf label[MAX_ROUNDS];
	kt_toolchain tc;
	kt_buf inc;           /* "-I<dir> " + the original flags */
	const kt_tmpl *cur;   /* the template of the round being tuned */
	int revised;
	uint16_t *known;      /* what earlier rounds measured, in cur's indices */
	double *known_us;
	size_t nknown;
} rtask;

/* The evaluations of every round of rt in template n's indices, for the next round's search. */
static void collect_known(rtask *r, const kt_tmpl *n)
{
	const kt_rounds *rs = &r->rt->out;
	size_t np = (size_t)(n->nparams ? n->nparams : 1), cap = 0;
	for (int k = 0; k < rs->n; k++)
		cap += rs->v[k].result.nevals;
	free(r->known);
	free(r->known_us);
	r->known = kt_xcalloc((cap + 1) * np, sizeof *r->known);
	r->known_us = kt_xcalloc(cap + 1, sizeof *r->known_us);
	r->nknown = 0;
	for (int k = 0; k < rs->n; k++) {
		const kt_round *rd = &rs->v[k];
		const kt_tmpl *t = rd->tmpl ? rd->tmpl : rs->t0;
		for (size_t i = 0; i < rd->result.nevals; i++) {
			const kt_eval *e = &rd->result.evals[i];
			if (map_config(t, e->cfg, n, r->known + r->nknown * np) == 0)
				r->known_us[r->nknown++] = e->status == KT_OK ? e->median_us : -1;
		}
	}
}

/* After round k of task i: plans, and when there is a reason, parses the next round's template
 * into a new round.  1 when task i tunes again. */
static int next_round(round_dirs *d, rtask *r, int i, int k, const kt_planner *pl, const memory *m)
{
	kt_rounds *out = &r->rt->out;
	kt_round *rd = &out->v[out->n - 1];
	kt_problem p = r->rt->p;
	p.tmpl = r->cur;
	kt_buf note = {0};
	kt_err e = {0};
	char *text = plan_next(pl, &p, out->t0, m, rd, &note);
	kt_tmpl *n = text ? round_tmpl(d, out->t0, i, k + 1, text, &note, &e) : NULL;
	int revised = text && rd->plan && !strncmp(rd->plan, "revise", 6);
	if (n && !has_news(r->cur, n, p.shape, revised)) {
		kt_buf_puts(&note, "the plan adds no configuration at this shape (it only rules some out): no further round");
		kt_tmpl_free(n);
		n = NULL;
	}
	if (note.len) {
		free(rd->note);
		rd->note = kt_buf_detach(&note);
	}
	kt_buf_free(&note);
	if (!n) {
		free(text);
		return 0;
	}
	kt_round *nx = &out->v[out->n++];
	*nx = (kt_round){.tmpl_text = text, .tmpl = n};
	nx->result.best = -1;
	collect_known(r, n);
	r->cur = n;
	r->revised = revised;
	return 1;
}

/* The rounds of a batch: what the tuner's `next` hook needs. */
typedef struct rounds_run {
	rtask *rs;
	kt_tune_task *batch; /* round 0 of each, as the batch holds it */
	size_t n;
	const kt_tune_opts *o;
	const kt_planner *pl;
	int rounds;
	round_dirs d;
	int dirs_open;
	kt_err err;
	memory mem;          /* extensions that did not compile */
	kt_tmpl **shared;    /* the rounds' templates as tuned: one per file, shared by the problems */
	size_t nshared;
} rounds_run;

/* The template of round file path as the tuner sees it: one parse per file, so that problems
 * whose plans gave the same text share its compiled variants. */
static const kt_tmpl *shared_tmpl(rounds_run *run, const kt_tmpl *cur, const kt_tmpl *t0, size_t i, int k)
{
	for (size_t j = 0; j < run->nshared; j++)
		if (!strcmp(run->shared[j]->path, cur->path))
			return run->shared[j];
	kt_buf note = {0};
	kt_tmpl *t = parse_round(cur->path, t0, run->d.orig_dirs[i], k, &note);
	kt_buf_free(&note);
	if (!t)
		return cur; /* it parsed a moment ago: not reached */
	run->shared = kt_xrealloc(run->shared, (run->nshared + 1) * sizeof *run->shared);
	return run->shared[run->nshared++] = t;
}

/* After round k (>= 1) of r: the values its template added that never compiled go to memory. */
static void learn(rounds_run *run, rtask *r, int k)
{
	const kt_rounds *out = &r->rt->out;
	const kt_tmpl *cur = out->v[k].tmpl, *prev = k > 1 ? out->v[k - 1].tmpl : out->t0;
	const kt_tune_result *res = &out->v[k].result;
	for (int p = 0; cur && p < cur->nparams; p++) {
		const kt_param *cp = &cur->params[p], *pp = NULL;
		for (int q = 0; q < prev->nparams && !pp; q++)
			if (!strcmp(prev->params[q].name, cp->name))
				pp = &prev->params[q];
		if (!pp || cp->type != KT_PINT || pp->type != KT_PINT)
			continue;
		for (int v = 0; v < cp->nvals; v++) {
			int old = 0;
			for (int w = 0; w < pp->nvals && !old; w++)
				old = pp->vals[w] == cp->vals[v];
			size_t seen = 0, failed = 0;
			for (size_t i = 0; !old && i < res->nevals; i++)
				if (res->evals[i].cfg[p] == v) {
					seen++;
					failed += res->evals[i].status == KT_COMPILE_FAILED;
				}
			if (old || !seen || failed < seen)
				continue;
			run->mem.v = kt_xrealloc(run->mem.v, (run->mem.n + 1) * sizeof *run->mem.v);
			nocompile *nc = &run->mem.v[run->mem.n++];
			*nc = (nocompile){.t0 = out->t0, .value = cp->vals[v]};
			snprintf(nc->param, sizeof nc->param, "%s", cp->name);
			snprintf(nc->where, sizeof nc->where, "%s", r->rt->label ? r->rt->label : "another shape");
		}
	}
}

/* The task of round k + 1 of rtask r (its template r->cur): tuned with -I<the original's directory>,
 * starting from what the earlier rounds measured. */
static kt_tune_task *round_task(rounds_run *run, rtask *r, size_t i, int k)
{
	kt_buf_reset(&r->inc);
	kt_buf_printf(&r->inc, "-I%s %s", run->d.orig_dirs[i], r->rt->p.tc->flags ? r->rt->p.tc->flags : "");
	r->tc = *r->rt->p.tc;
	r->tc.flags = kt_buf_str(&r->inc);
	kt_buf_printf(&r->label[k + 1], "%s, round %d", r->rt->label ? r->rt->label : r->rt->p.tmpl->kernel, k + 1);
	kt_tune_task *t = &r->tt[k + 1];
	*t = (kt_tune_task){.p = r->rt->p, .label = kt_buf_str(&r->label[k + 1]), .progress = r->rt->progress,
			    .known = r->known, .known_us = r->known_us, .nknown = r->nknown, .give_up = ROUND_GIVE_UP};
	t->p.tmpl = shared_tmpl(run, r->cur, r->rt->p.tmpl, i, k + 1);
	t->p.tc = &r->tc;
	return t;
}

/* The tuner's hook: round k of a problem is done; its result is the round's; the planner may
 * give the next round, tuned in the same pipeline. */
static kt_tune_task *on_done(void *ctx, kt_tune_task *done)
{
	rounds_run *run = ctx;
	for (size_t i = 0; i < run->n; i++) {
		rtask *r = &run->rs[i];
		kt_rounds *out = &r->rt->out;
		int k = out->n - 1;
		if (done != (k == 0 ? &run->batch[i] : &r->tt[k]))
			continue;
		out->v[k].result = done->out;
		memset(&done->out, 0, sizeof done->out);
		done->out.best = -1;
		if (k > 0)
			learn(run, r, k);
		if (k + 1 >= run->rounds)
			return NULL;
		if (!run->dirs_open) {
			const kt_tmpl **orig = kt_xcalloc(run->n + 1, sizeof *orig);
			for (size_t j = 0; j < run->n; j++)
				orig[j] = run->rs[j].rt->p.tmpl;
			int rc = dirs_open(&run->d, orig, run->n, run->o, &run->err);
			free(orig);
			if (rc != 0)
				return NULL; /* no work directory for the rounds' templates: no further round */
			run->dirs_open = 1;
		}
		return next_round(&run->d, r, (int)i, k, run->pl, &run->mem) ? round_task(run, r, i, k) : NULL;
	}
	return NULL;
}

int kt_rounds_run(kt_rounds_task *tasks, size_t n, const kt_tune_opts *o, const kt_planner *pl, int rounds,
		  kt_err *err)
{
	if (rounds < 1 || !pl)
		rounds = 1;
	if (rounds > MAX_ROUNDS)
		rounds = MAX_ROUNDS;
	rounds_run run = {.rs = kt_xcalloc(n + 1, sizeof *run.rs), .n = n, .o = o, .pl = pl, .rounds = rounds};
	kt_tune_task *batch = run.batch = kt_xcalloc(n + 1, sizeof *batch);
	for (size_t i = 0; i < n; i++) {
		kt_rounds_task *t = &tasks[i];
		rtask *r = &run.rs[i];
		t->out = (kt_rounds){0, kt_xcalloc(MAX_ROUNDS, sizeof(kt_round)), -1, t->p.tmpl};
		t->out.v[0] = (kt_round){.tmpl_text = kt_xstrdup(t->p.tmpl->src)};
		t->out.v[0].result.best = -1;
		t->out.n = 1;
		t->rc = 0;
		r->rt = t;
		r->cur = t->p.tmpl;
		r->tt[0] = (kt_tune_task){.p = t->p, .label = t->label, .progress = t->progress, .seeds = t->seeds,
					  .nseeds = t->nseeds};
	}
	/* The batch's own array holds round 0; later rounds come through the hook. */
	kt_tune_opts ro = *o;
	ro.next = on_done;
	ro.next_ctx = &run;
	for (size_t i = 0; i < n; i++)
		batch[i] = run.rs[i].tt[0];
	int rc = kt_tune_batch(batch, n, &ro, err);
	for (size_t i = 0; i < n; i++) {
		rtask *r = &run.rs[i];
		r->tt[0] = batch[i]; /* round 0 ran in the batch's array */
		kt_rounds *out = &r->rt->out;
		for (int k = 0; k < out->n; k++) {
			kt_tune_task *t = k == 0 ? &batch[i] : &r->tt[k];
			if (t->out.evals || t->out.nevals) /* not taken by the hook (the batch ended) */
				out->v[k].result = t->out;
			if (t->rc && k == 0) {
				r->rt->rc = -1;
				r->rt->err = rc ? *err : t->err;
			} else if (t->rc) {
				kt_buf note = {0};
				kt_buf_printf(&note, "round %d could not be tuned: %s", k, t->err.msg);
				free(out->v[k].note);
				out->v[k].note = kt_buf_detach(&note);
			}
		}
		for (int k = 0; k < out->n; k++) {
			double tk = best_time(&out->v[k]);
			if (tk >= 0 && (out->best < 0 || tk < best_time(&out->v[out->best])))
				out->best = k;
		}
		kt_buf_free(&r->inc);
		for (int k = 0; k < MAX_ROUNDS; k++)
			kt_buf_free(&r->label[k]);
		free(r->known);
		free(r->known_us);
	}
	if (run.dirs_open)
		dirs_close(&run.d, n);
	for (size_t j = 0; j < run.nshared; j++)
		kt_tmpl_free(run.shared[j]);
	free(run.shared);
	free(run.mem.v);
	free(run.rs);
	free(batch);
	return rc;
}

const kt_eval *kt_rounds_best(const kt_rounds *r)
{
	if (r->best < 0)
		return NULL;
	const kt_tune_result *res = &r->v[r->best].result;
	return &res->evals[res->best];
}

/* The value indices in t of configuration c of template n (by parameter name and value);
 * -1 when t lacks a parameter or a value. */
static int map_config(const kt_tmpl *n, const uint16_t *c, const kt_tmpl *t, uint16_t *cfg)
{
	for (int p = 0; p < t->nparams; p++) {
		const kt_param *tp = &t->params[p], *np = NULL;
		for (int q = 0; q < n->nparams && !np; q++)
			if (!strcmp(n->params[q].name, tp->name))
				np = &n->params[q];
		if (!np || np->type != tp->type)
			return -1;
		int q = (int)(np - n->params), found = -1;
		for (int v = 0; v < tp->nvals && found < 0; v++)
			if (tp->type == KT_PCHOICE ? !strcmp(tp->choices[v], np->choices[c[q]]) : tp->vals[v] == np->vals[c[q]])
				found = v;
		if (found < 0)
			return -1;
		cfg[p] = (uint16_t)found;
	}
	return 0;
}

/* Appends round k's evaluations that t can express and that out does not hold yet. */
static void add_round_evals(const kt_rounds *r, const kt_tmpl *t, int k, kt_tune_result *out)
{
	const kt_round *rd = &r->v[k];
	const kt_tmpl *n = rd->tmpl ? rd->tmpl : t;
	size_t np = (size_t)(t->nparams ? t->nparams : 1);
	uint16_t c[KT_MAX_SLOTS];
	out->evals = kt_xrealloc(out->evals, (out->nevals + rd->result.nevals + 1) * sizeof *out->evals);
	for (size_t i = 0; i < rd->result.nevals; i++) {
		const kt_eval *e = &rd->result.evals[i];
		int seen = map_config(n, e->cfg, t, c) != 0;
		for (size_t j = 0; j < out->nevals && !seen; j++)
			seen = !memcmp(out->evals[j].cfg, c, (size_t)t->nparams * sizeof *c);
		if (seen)
			continue;
		kt_eval *d = &out->evals[out->nevals++];
		*d = *e;
		d->cfg = kt_xcalloc(np, sizeof *d->cfg);
		memcpy(d->cfg, c, (size_t)t->nparams * sizeof *c);
		d->msg = e->msg ? kt_xstrdup(e->msg) : NULL;
	}
}

/* Round k's rivals of its final choice, at their evaluations in out (those t cannot express are
 * left out). */
static void add_round_retimed(const kt_rounds *r, const kt_tmpl *t, int k, kt_tune_result *out)
{
	const kt_round *rd = &r->v[k];
	const kt_tmpl *n = rd->tmpl ? rd->tmpl : t;
	uint16_t c[KT_MAX_SLOTS];
	out->retimed = kt_xcalloc(rd->result.nretimed + 1, sizeof *out->retimed);
	for (size_t i = 0; i < rd->result.nretimed; i++) {
		const kt_retimed *x = &rd->result.retimed[i];
		if (map_config(n, rd->result.evals[x->eval].cfg, t, c) != 0)
			continue;
		for (size_t j = 0; j < out->nevals; j++)
			if (!memcmp(out->evals[j].cfg, c, (size_t)t->nparams * sizeof *c)) {
				out->retimed[out->nretimed] = *x;
				out->retimed[out->nretimed++].eval = (long)j;
				break;
			}
	}
}

void kt_rounds_result(const kt_rounds *r, const kt_tmpl *t, int round, const uint16_t *cfg, kt_tune_result *out)
{
	memset(out, 0, sizeof *out);
	out->nparams = t->nparams;
	out->best = -1;
	if (round < 0 || round >= r->n)
		return;
	const kt_tune_result *src = &r->v[round].result;
	*out = *src; /* the figures; the evaluations are rebuilt below */
	out->nparams = t->nparams;
	out->evals = NULL;
	out->nevals = 0;
	out->retimed = NULL;
	out->nretimed = 0;
	out->best = -1;
	add_round_evals(r, t, round, out);
	for (int k = 0; k < r->n; k++)
		if (k != round)
			add_round_evals(r, t, k, out);
	add_round_retimed(r, t, round, out);
	for (size_t j = 0; j < out->nevals && out->best < 0; j++)
		if (!memcmp(out->evals[j].cfg, cfg, (size_t)t->nparams * sizeof *cfg))
			out->best = (long)j;
}

int kt_rounds_choose(const kt_rounds *r, const kt_tmpl *t, uint16_t *cfg, kt_buf *note)
{
	int chosen = -1;
	double best = -1;
	uint16_t c[KT_MAX_SLOTS];
	for (int k = 0; k < r->n; k++) {
		const kt_round *rd = &r->v[k];
		double tk = best_time(rd);
		if (tk < 0 || (chosen >= 0 && tk >= best))
			continue;
		const kt_tmpl *n = rd->tmpl ? rd->tmpl : t;
		if (map_config(n, rd->result.evals[rd->result.best].cfg, t, c) == 0) {
			chosen = k;
			best = tk;
			memcpy(cfg, c, (size_t)t->nparams * sizeof *c);
		}
	}
	if (r->best >= 0 && r->best != chosen) {
		const kt_round *rd = &r->v[r->best];
		kt_buf cf = {0};
		kt_tmpl_format_config(rd->tmpl ? rd->tmpl : t, rd->result.evals[rd->result.best].cfg, &cf);
		kt_buf_printf(note, "round %d found %s at %.3f us (%.0f%% faster) with values the template does not "
				    "declare; the changes that led there:\n",
			      r->best, kt_buf_str(&cf), best_time(rd), best > 0 ? 100.0 * (best / best_time(rd) - 1) : 0.0);
		for (int k = 0; k < r->best; k++)
			if (r->v[k].plan)
				kt_buf_printf(note, "%s", r->v[k].plan);
		kt_buf_free(&cf);
	}
	return chosen;
}

static cJSON *round_json(const kt_rounds *r, int k, const kt_tmpl *t0)
{
	const kt_round *rd = &r->v[k];
	const kt_tmpl *t = rd->tmpl ? rd->tmpl : t0;
	cJSON *o = cJSON_CreateObject();
	cJSON_AddNumberToObject(o, "round", k);
	if (k > 0 && rd->tmpl_text)
		cJSON_AddStringToObject(o, "template", rd->tmpl_text);
	size_t ok = 0;
	for (size_t i = 0; i < rd->result.nevals; i++)
		ok += rd->result.evals[i].status == KT_OK;
	cJSON_AddNumberToObject(o, "evaluated", (double)rd->result.nevals);
	cJSON_AddNumberToObject(o, "ok", (double)ok);
	if (best_time(rd) >= 0) {
		kt_buf c = {0};
		kt_tmpl_format_config(t, rd->result.evals[rd->result.best].cfg, &c);
		cJSON_AddStringToObject(o, "best", kt_buf_str(&c));
		cJSON_AddNumberToObject(o, "best_us", best_time(rd));
		kt_buf_free(&c);
	}
	if (rd->plan)
		cJSON_AddStringToObject(o, "plan", rd->plan);
	if (rd->note)
		cJSON_AddStringToObject(o, "note", rd->note);
	cJSON *tr = rd->transcript ? cJSON_Parse(rd->transcript) : NULL;
	if (tr)
		cJSON_AddItemToObject(o, "transcript", tr);
	return o;
}

void kt_rounds_json(const kt_rounds *r, kt_buf *out)
{
	cJSON *root = cJSON_CreateObject();
	cJSON_AddNumberToObject(root, "best_round", r->best);
	cJSON *arr = cJSON_AddArrayToObject(root, "rounds");
	for (int k = 0; k < r->n; k++)
		cJSON_AddItemToArray(arr, round_json(r, k, r->t0));
	kt_buf_put_json(out, root);
	cJSON_Delete(root);
}

/* Each line of text as "    LABEL: line" (data: kt_buf_put_line). */
static void lines_text(const char *label, const char *text, kt_buf *out)
{
	for (size_t at = 0; text && text[at];) {
		kt_buf_printf(out, "    %s: ", label);
		at += kt_buf_put_line(out, text + at, SHOW_MAX);
		kt_buf_putc(out, '\n');
	}
}

void kt_rounds_text(const cJSON *history, kt_buf *out)
{
	const cJSON *rounds = cJSON_GetObjectItemCaseSensitive(history, "rounds"), *it;
	if (!cJSON_IsArray(rounds))
		return;
	kt_buf_printf(out, "stage 2, tuning rounds: best round %.0f\n", kt_json_num(history, "best_round", 0));
	cJSON_ArrayForEach(it, rounds)
	{
		const char *best = kt_json_str(it, "best");
		kt_buf_printf(out, "  round %.0f: %.0f evaluated, %.0f ok", kt_json_num(it, "round", 0),
			      kt_json_num(it, "evaluated", 0),
			      kt_json_num(it, "ok", 0));
		if (best) {
			kt_buf_puts(out, ", best ");
			kt_buf_put_line(out, best, SHOW_MAX);
			kt_buf_printf(out, " at %.3f us", kt_json_num(it, "best_us", 0));
		}
		kt_buf_putc(out, '\n');
		lines_text("plan", kt_json_str(it, "plan"), out);
		lines_text("note", kt_json_str(it, "note"), out);
	}
}

void kt_rounds_free(kt_rounds *r)
{
	for (int k = 0; k < r->n; k++) {
		kt_round *rd = &r->v[k];
		free(rd->tmpl_text);
		kt_tmpl_free(rd->tmpl);
		kt_tune_result_free(&rd->result);
		free(rd->plan);
		free(rd->note);
		free(rd->transcript);
	}
	free(r->v);
	*r = (kt_rounds){0, NULL, -1, NULL};
}
