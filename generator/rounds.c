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

enum { MAX_ROUNDS = 20, SHOW_MAX = 200 /* bytes of a plan's or a note's line that kt cache show prints */ };

/* Where rounds' templates go: o->workdir, else a temporary directory (removed by cleanup). */
typedef struct round_dirs {
	char *base;
	int temporary;
	char *orig_dir;    /* the original template's directory, for -I */
	char **files;      /* written templates, removed at the end when temporary */
	int nfiles;
} round_dirs;

static int dirs_open(round_dirs *d, const kt_tmpl *t, const kt_tune_opts *o, kt_err *err)
{
	*d = (round_dirs){0};
	d->orig_dir = kt_path_dir(t->path);
	if (o->workdir) {
		d->base = kt_path_join(o->workdir, "rounds");
		return kt_mkdirs(d->base, err);
	}
	const char *td = getenv("TMPDIR");
	kt_buf b = {0};
	kt_buf_printf(&b, "%s/kt-rounds-XXXXXX", td && *td ? td : "/tmp");
	d->base = kt_buf_detach(&b);
	d->temporary = 1;
	if (!mkdtemp(d->base))
		return kt_fail_internal(err, "cannot create a work directory %s: %s", d->base, strerror(errno));
	return 0;
}

static void dirs_close(round_dirs *d)
{
	for (int i = 0; i < d->nfiles; i++) {
		if (d->temporary) {
			char *dir = kt_path_dir(d->files[i]);
			unlink(d->files[i]);
			rmdir(dir);
			free(dir);
		}
		free(d->files[i]);
	}
	if (d->temporary)
		rmdir(d->base);
	free(d->files);
	free(d->base);
	free(d->orig_dir);
}

/* Writes round k's template text and parses it from there; NULL with why in note. */
static kt_tmpl *round_tmpl(round_dirs *d, const kt_tmpl *t, const kt_tune_opts *o, int k, const char *text,
			   kt_buf *note, kt_err *err)
{
	const char *base = strrchr(t->path, '/') ? strrchr(t->path, '/') + 1 : t->path;
	kt_buf dir = {0};
	kt_buf_printf(&dir, "%s/round-%d", d->base, k);
	char *path = kt_path_join(kt_buf_str(&dir), base);
	kt_tmpl *n = NULL;
	if (kt_mkdirs(kt_buf_str(&dir), err) == 0 && kt_write_atomic(path, text, strlen(text), err) == 0) {
		d->files = kt_xrealloc(d->files, (size_t)(d->nfiles + 1) * sizeof *d->files);
		d->files[d->nfiles++] = kt_xstrdup(path);
		kt_tmpl_opts to = {o->types, o->ntypes, t->arch[0] ? t->arch : NULL};
		kt_buf diags = {0};
		kt_err perr = {0};
		n = kt_tmpl_parse(path, &to, &diags, &perr);
		if (n) { /* its local headers are the original's: nvcc finds them through -I<original's directory> */
			char *as = kt_path_join(d->orig_dir, base);
			const char **inc;
			n->nincludes = kt_cusrc_includes(n->arena, as, n->src, n->srclen, &inc);
			n->includes = inc;
			free(as);
		}
		if (!n)
			kt_buf_printf(note, "the template of round %d does not parse:\n%s", k,
				      diags.len ? kt_buf_str(&diags) : perr.msg);
		kt_buf_free(&diags);
	} else {
		kt_buf_printf(note, "round %d: %s", k, err->msg);
	}
	free(path);
	kt_buf_free(&dir);
	return n;
}

/* Tunes round k's template; the original in round 0, else with -I<original's directory>. */
static int tune_round(const round_dirs *d, const kt_tmpl *t, const int64_t *shape, const kt_tune_opts *o, int k,
		      kt_tune_result *r, kt_err *err)
{
	if (k == 0)
		return kt_tune(t, shape, o, r, err);
	kt_tune_opts ro = *o;
	const char **flags = kt_xcalloc((size_t)o->nflags + 1, sizeof *flags);
	for (int i = 0; i < o->nflags; i++)
		flags[i] = o->flags[i];
	kt_buf inc = {0};
	kt_buf_printf(&inc, "-I%s", d->orig_dir);
	flags[o->nflags] = kt_buf_str(&inc);
	ro.flags = flags;
	ro.nflags = o->nflags + 1;
	int rc = kt_tune(t, shape, &ro, r, err);
	kt_buf_free(&inc);
	free(flags);
	return rc;
}

/* Asks the planner after round k and returns the next template's text, or NULL (stop; note says why). */
static char *plan_next(const kt_agent_cfg *cfg, kt_llm *llm, const kt_tmpl *cur, const int64_t *shape,
		       const kt_target *g, kt_round *rd, kt_buf *note)
{
	kt_plan plan = {0};
	char *revision = NULL;
	kt_buf tr = {0}, text = {0}, fmt = {0};
	kt_err e = {0};
	char *next = NULL;
	if (kt_agent_propose(cfg, llm, cur, shape, g, &rd->result, &plan, &revision, note, &tr, &e)) {
		kt_buf_printf(note, "the planner failed: %s", e.msg);
	} else if (revision) {
		next = revision;
		kt_buf_puts(&fmt, "revise the template\n");
	} else if (!plan.n) {
		kt_buf_puts(note, "the planner proposes no change");
	} else if (kt_planner_apply(cur, &plan, &text, &e)) {
		kt_buf_printf(note, "the planner's proposals do not apply: %s", e.msg);
	} else {
		next = kt_buf_detach(&text);
	}
	kt_plan_format(cur, &plan, &fmt);
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

int kt_rounds_run(const kt_tmpl *t, const int64_t *shape, const kt_tune_opts *o, const kt_agent_cfg *cfg,
		  kt_llm *llm, const kt_target *g, int rounds, kt_rounds *out, kt_err *err)
{
	*out = (kt_rounds){0, kt_xcalloc(MAX_ROUNDS, sizeof(kt_round)), -1, t};
	if (rounds < 1)
		rounds = 1;
	if (rounds > MAX_ROUNDS)
		rounds = MAX_ROUNDS;
	if (cfg->mode == KT_AGENT_OFF)
		rounds = 1;
	round_dirs d;
	if (dirs_open(&d, t, o, err)) {
		dirs_close(&d);
		return -1;
	}
	const kt_tmpl *cur = t;
	char *text = kt_xstrdup(t->src);
	int rc = 0;
	for (int k = 0; k < rounds && text; k++) {
		kt_round *rd = &out->v[out->n];
		kt_buf note = {0};
		kt_err e = {0};
		rd->tmpl_text = text;
		text = NULL;
		if (k > 0 && !(rd->tmpl = round_tmpl(&d, t, o, k, rd->tmpl_text, &note, &e))) {
			free(rd->tmpl_text);
			rd->tmpl_text = NULL;
			kt_round *prev = &out->v[out->n - 1];
			kt_buf all = {0};
			kt_buf_printf(&all, "%s%s%s", prev->note ? prev->note : "", prev->note ? "\n" : "", kt_buf_str(&note));
			free(prev->note);
			prev->note = kt_buf_detach(&all);
			kt_buf_free(&note);
			break;
		}
		cur = k ? rd->tmpl : t;
		out->n++;
		if (tune_round(&d, cur, shape, o, k, &rd->result, &e)) {
			if (k == 0)
				rc = (*err = e, -1);
			kt_buf_printf(&note, "round %d could not be tuned: %s", k, e.msg);
		} else if (k + 1 < rounds) {
			text = plan_next(cfg, llm, cur, shape, g, rd, &note);
		}
		rd->note = note.len ? kt_buf_detach(&note) : NULL;
		kt_buf_free(&note);
	}
	free(text);
	for (int k = 0; k < out->n; k++) {
		double tk = best_time(&out->v[k]);
		if (tk >= 0 && (out->best < 0 || tk < best_time(&out->v[out->best])))
			out->best = k;
	}
	dirs_close(&d);
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
	out->best = -1;
	add_round_evals(r, t, round, out);
	for (int k = 0; k < r->n; k++)
		if (k != round)
			add_round_evals(r, t, k, out);
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

static double num_of(const cJSON *o, const char *name)
{
	const cJSON *it = cJSON_GetObjectItemCaseSensitive(o, name);
	return cJSON_IsNumber(it) ? it->valuedouble : 0;
}

static const char *str_of(const cJSON *o, const char *name)
{
	const cJSON *it = cJSON_GetObjectItemCaseSensitive(o, name);
	return cJSON_IsString(it) ? it->valuestring : NULL;
}

void kt_rounds_text(const cJSON *history, kt_buf *out)
{
	const cJSON *rounds = cJSON_GetObjectItemCaseSensitive(history, "rounds"), *it;
	if (!cJSON_IsArray(rounds))
		return;
	kt_buf_printf(out, "stage 2, tuning rounds: best round %.0f\n", num_of(history, "best_round"));
	cJSON_ArrayForEach(it, rounds)
	{
		const char *best = str_of(it, "best");
		kt_buf_printf(out, "  round %.0f: %.0f evaluated, %.0f ok", num_of(it, "round"), num_of(it, "evaluated"),
			      num_of(it, "ok"));
		if (best) {
			kt_buf_puts(out, ", best ");
			kt_buf_put_line(out, best, SHOW_MAX);
			kt_buf_printf(out, " at %.3f us", num_of(it, "best_us"));
		}
		kt_buf_putc(out, '\n');
		lines_text("plan", str_of(it, "plan"), out);
		lines_text("note", str_of(it, "note"), out);
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
