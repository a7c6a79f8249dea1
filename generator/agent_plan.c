/* agent_plan.c - stage 2 of the LLM agent: proposals between tuning rounds (see agent.h).
 *
 * A proposal is applied to the template's text (a parameter's directive line replaced, a
 * `require` line added, or the whole text replaced) and the result goes through the parser like
 * any template, so a proposal can never reach further than a template a user could write. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent_int.h"

enum {
	MAX_PROPOSALS = 8,
	MAX_VALUES = 64,
	MAX_REASON = 1000,       /* bytes of a reason that are kept */
	MAX_EXPR = 1000,
	MAX_TEMPLATE_BYTES = 256 * 1024,
	SUMMARY_BEST = 5,        /* configurations listed in a summary */
	SUMMARY_FAILURES = 6,
};

const char *const kt_agent_prop_kind_names[KT_AGENT_NPROP_KINDS + 1] = {"set_values", "add_constraint",
									  "revise_template", "unknown"};

/* ---- parsing ---- */

static char *clipped(const char *s, size_t max)
{
	size_t n = strlen(s);
	char *r = kt_xmalloc((n > max ? max : n) + 1);
	memcpy(r, s, n > max ? max : n);
	r[n > max ? max : n] = 0;
	return r;
}

static int reject(kt_agent_prop *p, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int reject(kt_agent_prop *p, const char *fmt, ...)
{
	kt_buf b = {0};
	va_list ap;
	va_start(ap, fmt);
	kt_buf_vprintf(&b, fmt, ap);
	va_end(ap);
	free(p->why);
	p->why = kt_buf_detach(&b);
	p->accepted = 0;
	free(p->new_src);
	p->new_src = NULL;
	return -1;
}

static const char *str_field(const cJSON *o, const char *name)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, name);
	return cJSON_IsString(v) ? v->valuestring : NULL;
}

static int read_values(const cJSON *arr, kt_agent_prop *p)
{
	if (!cJSON_IsArray(arr) || !cJSON_GetArraySize(arr))
		return reject(p, "set_values needs a non-empty \"values\" array");
	int n = cJSON_GetArraySize(arr);
	if (n > MAX_VALUES)
		return reject(p, "set_values gives %d values; at most %d are allowed", n, MAX_VALUES);
	p->vals = kt_xcalloc((size_t)n, sizeof *p->vals);
	const cJSON *v;
	cJSON_ArrayForEach(v, arr)
	{
		char num[32];
		if (cJSON_IsNumber(v)) {
			if (v->valuedouble != floor(v->valuedouble) || fabs(v->valuedouble) > 2147483647.0)
				return reject(p, "value %g is not a 32-bit integer", v->valuedouble);
			snprintf(num, sizeof num, "%lld", (long long)v->valuedouble);
			p->vals[p->nvals++] = kt_xstrdup(num);
		} else if (cJSON_IsString(v) || cJSON_IsBool(v)) {
			p->vals[p->nvals++] = cJSON_IsBool(v) ? kt_xstrdup(cJSON_IsTrue(v) ? "true" : "false")
							      : clipped(v->valuestring, 64);
		} else {
			return reject(p, "values must be integers or choice names");
		}
	}
	return 0;
}

/* Reads one entry of the "proposals" array into p; an off-schema entry is rejected with why. */
static int read_proposal(const cJSON *o, kt_agent_prop *p)
{
	p->accepted = 1;
	p->kind = KT_AGENT_NPROP_KINDS;
	if (!cJSON_IsObject(o))
		return reject(p, "a proposal must be a JSON object");
	const char *kind = str_field(o, "kind"), *reason = str_field(o, "reason");
	p->reason = clipped(reason ? reason : "", MAX_REASON);
	int k = -1;
	for (int i = 0; kind && i < KT_AGENT_NPROP_KINDS; i++)
		if (!strcmp(kind, kt_agent_prop_kind_names[i]))
			k = i;
	if (k < 0)
		return reject(p, "unknown kind '%s' (expected set_values, add_constraint or revise_template)",
			      kind ? kind : "(none)");
	p->kind = (kt_agent_prop_kind)k;
	if (!reason || !*reason)
		return reject(p, "every proposal needs a \"reason\"");
	const char *s;
	switch (p->kind) {
	case KT_AGENT_SET_VALUES:
		if (!(s = str_field(o, "param")))
			return reject(p, "set_values needs a \"param\" string");
		p->param = clipped(s, 128);
		return read_values(cJSON_GetObjectItemCaseSensitive(o, "values"), p);
	case KT_AGENT_ADD_CONSTRAINT:
		if (!(s = str_field(o, "expr")))
			return reject(p, "add_constraint needs an \"expr\" string");
		if (strlen(s) > MAX_EXPR)
			return reject(p, "the constraint is longer than %d bytes", MAX_EXPR);
		p->expr = kt_xstrdup(s);
		return 0;
	case KT_AGENT_REVISE_TEMPLATE:
		if (!(s = str_field(o, "template")))
			return reject(p, "revise_template needs a \"template\" string");
		if (strlen(s) > MAX_TEMPLATE_BYTES)
			return reject(p, "the template is longer than %d bytes", MAX_TEMPLATE_BYTES);
		p->tmpl = kt_xstrdup(s);
		return 0;
	case KT_AGENT_NPROP_KINDS:
		break;
	}
	return 0;
}

/* The JSON document of a reply: a fenced block's body, else from the first '{' to the last '}'. */
static char *json_text(const char *text)
{
	kt_buf b = {0};
	char why[128];
	const char *open = strstr(text, "```");
	if (open && kt_agent_extract_template(text, &b, why, sizeof why) == 0 && strchr(kt_buf_str(&b), '{'))
		return kt_buf_detach(&b);
	kt_buf_free(&b);
	const char *l = strchr(text, '{'), *r = strrchr(text, '}');
	return l && r && r > l ? clipped(l, (size_t)(r - l + 1)) : kt_xstrdup(text);
}

int kt_agent_parse_proposals(const char *text, kt_agent_props *out, kt_err *err)
{
	*out = (kt_agent_props){0};
	char *doc = json_text(text);
	cJSON *root = cJSON_Parse(doc);
	if (!root) {
		const char *at = cJSON_GetErrorPtr();
		long off = at && at >= doc && at <= doc + strlen(doc) ? (long)(at - doc) : -1;
		free(doc);
		return off >= 0 ? kt_fail(err, "the answer is not valid JSON (at byte %ld of the document)", off)
				: kt_fail(err, "the answer is not valid JSON");
	}
	free(doc);
	const cJSON *arr = cJSON_GetObjectItemCaseSensitive(root, "proposals");
	if (!cJSON_IsObject(root) || !cJSON_IsArray(arr)) {
		cJSON_Delete(root);
		return kt_fail(err, "the answer does not follow the schema: expected {\"proposals\": [...]}");
	}
	int n = cJSON_GetArraySize(arr);
	out->v = kt_xcalloc((size_t)(n ? n : 1), sizeof *out->v);
	const cJSON *o;
	cJSON_ArrayForEach(o, arr)
	{
		kt_agent_prop *p = &out->v[out->n++];
		read_proposal(o, p);
		if (out->n > MAX_PROPOSALS && p->accepted)
			reject(p, "more than %d proposals in one answer", MAX_PROPOSALS);
	}
	cJSON_Delete(root);
	return 0;
}

static void proposal_free(kt_agent_prop *p)
{
	kt_plan_free(&p->plan);
	free(p->param);
	for (int i = 0; i < p->nvals; i++)
		free(p->vals[i]);
	free(p->vals);
	free(p->expr);
	free(p->tmpl);
	free(p->reason);
	free(p->why);
	free(p->new_src);
}

void kt_agent_props_free(kt_agent_props *p)
{
	for (int i = 0; i < p->n; i++)
		proposal_free(&p->v[i]);
	free(p->v);
	*p = (kt_agent_props){0};
}

/* ---- translating a proposal into the planner's structure ---- */

static int param_index(const kt_tmpl *t, const char *name)
{
	for (int i = 0; i < t->nparams; i++)
		if (!strcmp(t->params[i].name, name))
			return i;
	return -1;
}

static int choice_index(const kt_param *pa, const char *v)
{
	for (int i = 0; i < pa->nvals; i++)
		if (!strcmp(pa->choices[i], v))
			return i;
	return -1;
}

/* The value indices (choices) or values (integers) of a set_values proposal into ints; -1 when
 * one is not of the parameter's kind (rejected). */
static int check_values(const kt_param *pa, kt_agent_prop *p, int64_t *ints)
{
	for (int i = 0; i < p->nvals; i++) {
		const char *v = p->vals[i];
		if (pa->type == KT_PCHOICE) {
			if ((ints[i] = choice_index(pa, v)) < 0) {
				kt_buf d = {0};
				for (int c = 0; c < pa->nvals; c++)
					kt_buf_printf(&d, "%s%s", c ? ", " : "", pa->choices[c]);
				reject(p, "'%s' is outside the declared space: %s has the choices %s (a new choice needs "
					  "revise_template)",
				       v, pa->name, kt_buf_str(&d));
				kt_buf_free(&d);
				return -1;
			}
		} else if (kt_parse_i64(v, strlen(v), &ints[i]) || ints[i] < -2147483647LL - 1 || ints[i] > 2147483647LL) {
			return reject(p, "'%s' is outside the declared space: %s takes 32-bit integers", v, pa->name);
		}
		for (int j = 0; j < i; j++)
			if (ints[j] == ints[i])
				return reject(p, "the value %s is given twice", v);
	}
	return 0;
}

static kt_proposal *plan_add(kt_plan *pl, kt_prop_kind kind, int param, int64_t value, const char *reason)
{
	pl->props = kt_xrealloc(pl->props, (pl->n + 1) * sizeof *pl->props);
	kt_proposal *q = &pl->props[pl->n++];
	*q = (kt_proposal){.kind = kind, .param = param, .value = value, .param2 = -1};
	snprintf(q->reason, sizeof q->reason, "%s", reason);
	return q;
}

static int has_value(const int64_t *v, int n, int64_t x)
{
	for (int i = 0; i < n; i++)
		if (v[i] == x)
			return 1;
	return 0;
}

/* set_values: each new integer value an EXTEND, each dropped value a FORBID "P != v". */
static int plan_set_values(const kt_tmpl *t, kt_agent_prop *p)
{
	int pi = param_index(t, p->param);
	if (pi < 0) {
		kt_buf d = {0};
		for (int i = 0; i < t->nparams; i++)
			kt_buf_printf(&d, "%s%s", i ? ", " : "", t->params[i].name);
		reject(p, "'%s' is outside the declared space: the template declares the parameters %s", p->param,
		       t->nparams ? kt_buf_str(&d) : "(none)");
		kt_buf_free(&d);
		return -1;
	}
	const kt_param *pa = &t->params[pi];
	if (pa->type == KT_PBOOL)
		return reject(p, "%s is a bool; fix its value with add_constraint instead", pa->name);
	int64_t ints[MAX_VALUES];
	if (check_values(pa, p, ints))
		return -1;
	const int64_t *old = pa->vals;
	for (int i = 0; i < p->nvals; i++)
		if (pa->type == KT_PINT && !has_value(old, pa->nvals, ints[i]))
			plan_add(&p->plan, KT_PROP_EXTEND, pi, ints[i], p->reason);
	for (int v = 0; v < pa->nvals; v++) {
		if (has_value(ints, p->nvals, pa->type == KT_PCHOICE ? v : old[v]))
			continue;
		kt_buf req = {0};
		if (pa->type == KT_PCHOICE)
			kt_buf_printf(&req, "%s != \"%s\"", pa->name, pa->choices[v]);
		else
			kt_buf_printf(&req, "%s != %lld", pa->name, (long long)old[v]);
		plan_add(&p->plan, KT_PROP_FORBID, pi, pa->type == KT_PCHOICE ? v : old[v], p->reason)->require =
			kt_buf_detach(&req);
	}
	return 0;
}

static int plan_constraint(kt_agent_prop *p)
{
	if (strpbrk(p->expr, "\r\n") || !p->expr[strspn(p->expr, " \t")])
		return reject(p, "a constraint is one non-empty line");
	plan_add(&p->plan, KT_PROP_FORBID, -1, 0, p->reason)->require = kt_xstrdup(p->expr);
	return 0;
}

/* The template text with p applied, or NULL (rejected). */
static char *apply(const kt_tmpl *t, kt_agent_prop *p)
{
	if (p->kind == KT_AGENT_REVISE_TEMPLATE) {
		kt_buf why = {0};
		int bad = kt_agent_check_includes(p->tmpl, t->path, &why);
		if (bad)
			reject(p, "%s", kt_buf_str(&why));
		kt_buf_free(&why);
		return bad ? NULL : kt_xstrdup(p->tmpl);
	}
	if (p->kind == KT_AGENT_SET_VALUES ? plan_set_values(t, p) : plan_constraint(p))
		return NULL;
	kt_buf text = {0};
	kt_err e = {0};
	if (kt_planner_apply(t, &p->plan, &text, &e)) {
		reject(p, "%s", e.msg);
		kt_buf_free(&text);
		return NULL;
	}
	return kt_buf_detach(&text);
}

void kt_agent_props_to_plan(const kt_agent_props *ps, kt_plan *out)
{
	for (int i = 0; i < ps->n; i++) {
		const kt_plan *pl = &ps->v[i].plan;
		for (size_t k = 0; ps->v[i].accepted && k < pl->n; k++) {
			kt_proposal *q = plan_add(out, pl->props[k].kind, pl->props[k].param, pl->props[k].value, "");
			*q = pl->props[k];
			q->require = pl->props[k].require ? kt_xstrdup(pl->props[k].require) : NULL;
		}
	}
}

/* ---- validating the result ---- */

static int same_strings(const char *const *a, const char *const *b, int n)
{
	for (int i = 0; i < n; i++)
		if (strcmp(a[i], b[i]))
			return 0;
	return 1;
}

/* A revision keeps the kernel, the reference kernel unchanged, the shapes and the arguments. */
static int check_revision(const kt_tmpl *t, const kt_tmpl *n, kt_agent_prop *p)
{
	if (!t->reference)
		return reject(p, "the template has no reference kernel, so a revision could change what counts as "
				 "correct; only set_values and add_constraint are accepted"),
		       -1;
	if (strcmp(t->kernel, n->kernel))
		return reject(p, "the revision renames the kernel %s to %s", t->kernel, n->kernel), -1;
	size_t ob, oe, nb, ne;
	if (!n->reference || strcmp(t->reference, n->reference) ||
	    kt_agent_find_kernel(t->src, t->reference, &ob, &oe) ||
	    kt_agent_find_kernel(n->src, n->reference, &nb, &ne) ||
	    !kt_agent_same_text(t->src + ob, oe - ob, n->src + nb, ne - nb))
		return reject(p, "the revision must keep the reference kernel %s unchanged", t->reference), -1;
	if (t->nshapes != n->nshapes || !same_strings(t->shapes, n->shapes, t->nshapes))
		return reject(p, "the revision changes the shape symbols"), -1;
	kt_buf a = {0}, b = {0};
	kt_tmpl_arglist(t, 0, &a);
	kt_tmpl_arglist(n, 0, &b);
	int same = !strcmp(kt_buf_str(&a), kt_buf_str(&b));
	if (!same)
		reject(p, "the revision changes the arguments from (%s) to (%s)", kt_buf_str(&a), kt_buf_str(&b));
	kt_buf_free(&a);
	kt_buf_free(&b);
	return same ? 0 : -1;
}

/* Every shape keeps a configuration within the device's limits; for set_values, every new value
 * is used by one at some shape. */
static int check_space(const kt_tmpl *n, const int64_t *shapes, int nshapes, const kt_target *g,
		       kt_agent_prop *p, int pi, const kt_param *old)
{
	int nv = pi >= 0 ? n->params[pi].nvals : 0;
	char *used = kt_xcalloc((size_t)nv + 1, 1);
	int rc = 0;
	for (int s = 0; s < nshapes && rc == 0; s++) {
		const int64_t *sh = shapes + (size_t)s * (size_t)n->nshapes;
		kt_space fit;
		kt_err e = {0};
		char why[300] = "";
		kt_buf name = {0};
		kt_tmpl_format_shape(n, sh, &name);
		if (kt_agent_fitting_space(n, sh, g, &fit, why, sizeof why, &e))
			rc = (reject(p, "at shape %s: %s", kt_buf_str(&name), e.msg), -1);
		else if (!fit.count)
			rc = (reject(p, "it leaves no configuration within the device's limits at shape %s%s%s",
				     kt_buf_str(&name), why[0] ? "; for example " : "", why),
			      -1);
		for (size_t i = 0; rc == 0 && pi >= 0 && i < fit.count; i++)
			used[kt_space_cfg(&fit, i)[pi]] = 1;
		kt_space_free(&fit);
		kt_buf_free(&name);
	}
	for (int v = 0; rc == 0 && nshapes > 0 && v < nv; v++) {
		if (used[v])
			continue;
		int known = n->params[pi].type == KT_PCHOICE;
		for (int o = 0; o < old->nvals && !known; o++)
			known |= old->vals[o] == n->params[pi].vals[v];
		if (known)
			continue;
		/* Why: the default configuration with this value, at the first shape. */
		uint16_t cfg[KT_MAX_SLOTS];
		kt_val env[KT_MAX_SLOTS];
		kt_launch l;
		kt_err e = {0};
		char why[256] = "no feasible configuration uses it";
		kt_tmpl_default_config(n, cfg);
		cfg[pi] = (uint16_t)v;
		kt_tmpl_env(n, shapes, cfg, env);
		if (kt_tmpl_launch(n, env, &l, &e) == 0 && kt_target_fits(g, &l, NULL, why, sizeof why) == 0)
			snprintf(why, sizeof why, "no feasible configuration uses it");
		reject(p, "%s=%lld is beyond the device's limits or infeasible at every shape: %s", old->name,
		       (long long)n->params[pi].vals[v], why);
		rc = -1;
	}
	free(used);
	return rc;
}

int kt_agent_check_proposal(const kt_tmpl *t, const int64_t *shapes, int nshapes, const kt_target *g,
			    kt_agent_prop *p)
{
	if (!p->accepted)
		return 0;
	char *src = apply(t, p);
	if (!src)
		return 0;
	kt_buf diags = {0};
	kt_err e = {0};
	kt_tmpl_opts to = {.sms = t->sms};
	kt_tmpl *n = kt_tmpl_parse_text(t->path, src, strlen(src), &to, &diags, &e);
	if (!n) {
		reject(p, "the template with this change does not parse:\n%s", diags.len ? kt_buf_str(&diags) : e.msg);
		kt_buf_free(&diags);
		free(src);
		return 0;
	}
	kt_buf_free(&diags);
	int pi = p->kind == KT_AGENT_SET_VALUES ? param_index(n, p->param) : -1;
	const kt_param *old = pi >= 0 ? &t->params[param_index(t, p->param)] : NULL;
	if ((p->kind != KT_AGENT_REVISE_TEMPLATE || check_revision(t, n, p) == 0) &&
	    check_space(n, shapes, nshapes, g, p, pi, old) == 0) {
		p->new_src = src;
		src = NULL;
	}
	free(src);
	kt_tmpl_free(n);
	return p->accepted;
}

/* ---- the summary of a round ---- */

typedef struct ranked {
	double us;
	size_t i;
} ranked;

static int by_time(const void *a, const void *b)
{
	double x = ((const ranked *)a)->us, y = ((const ranked *)b)->us;
	return (x > y) - (x < y);
}

static void summary_best(const kt_tmpl *t, const kt_tune_result *r, kt_buf *out)
{
	ranked *rk = kt_xcalloc(r->nevals + 1, sizeof *rk);
	size_t n = 0;
	for (size_t i = 0; i < r->nevals; i++)
		if (r->evals[i].status == KT_OK)
			rk[n++] = (ranked){r->evals[i].median_us, i};
	qsort(rk, n, sizeof *rk, by_time);
	kt_buf_puts(out, n ? "fastest configurations:\n" : "no configuration passed\n");
	for (size_t k = 0; k < n && k < SUMMARY_BEST; k++) {
		const kt_eval *e = &r->evals[rk[k].i];
		kt_buf c = {0};
		kt_tmpl_format_config(t, e->cfg, &c);
		kt_buf_printf(out, "  %zu. %s: %.2f us (+-%.2f)", k + 1, kt_buf_str(&c), e->median_us, e->spread_us);
		if (r->floor_us > 0 && e->median_us > 0)
			kt_buf_printf(out, ", %.0f%% of the floor", 100.0 * r->floor_us / e->median_us);
		if (e->regs >= 0)
			kt_buf_printf(out, ", %d registers", e->regs);
		if (e->smem_static >= 0)
			kt_buf_printf(out, ", %d B static shared", e->smem_static);
		if (e->local_bytes > 0)
			kt_buf_printf(out, ", %d B local (spills)", e->local_bytes);
		kt_buf_putc(out, '\n');
		kt_buf_free(&c);
	}
	if (n) {
		const uint16_t *best = r->evals[rk[0].i].cfg;
		for (int p = 0; p < t->nparams; p++) {
			const kt_param *pa = &t->params[p];
			if (pa->type == KT_PINT && pa->nvals > 1 && (best[p] == 0 || best[p] == pa->nvals - 1))
				kt_buf_printf(out, "  the best %s, %lld, is the %s declared value\n", pa->name,
					      (long long)pa->vals[best[p]], best[p] == 0 ? "smallest" : "largest");
		}
	}
	free(rk);
}

void kt_agent_summary(const kt_tmpl *t, const int64_t *shape, const kt_tune_result *r, kt_buf *out)
{
	size_t counts[KT_NSTATUS] = {0};
	for (size_t i = 0; i < r->nevals; i++)
		if (r->evals[i].status < KT_NSTATUS)
			counts[r->evals[i].status]++;
	kt_buf sh = {0};
	kt_tmpl_format_shape(t, shape, &sh);
	kt_buf_printf(out, "shape %s: %zu evaluated (strategy %s, budget %ld)", kt_buf_str(&sh), r->nevals, r->strategy,
		      r->budget);
	for (int s = 0; s < KT_NSTATUS; s++)
		if (counts[s])
			kt_buf_printf(out, ", %zu %s", counts[s], kt_status_names[s]);
	kt_buf_putc(out, '\n');
	if (r->floor_us > 0)
		kt_buf_printf(out, "roofline floor: %.2f us (%.0f GB/s measured)\n", r->floor_us, r->bw_gbs);
	summary_best(t, r, out);
	int shown = 0;
	for (size_t i = 0; i < r->nevals && shown < SUMMARY_FAILURES; i++) {
		const kt_eval *e = &r->evals[i];
		if (e->status == KT_OK)
			continue;
		kt_buf c = {0};
		kt_tmpl_format_config(t, e->cfg, &c);
		const char *msg = e->msg ? e->msg : "";
		kt_buf_printf(out, "%s  %s: %s: %.*s\n", shown ? "" : "failures:\n", kt_buf_str(&c),
			      kt_status_names[e->status], (int)strcspn(msg, "\n"), msg);
		kt_buf_free(&c);
		shown++;
	}
	kt_buf_free(&sh);
}

/* ---- the planning conversation ---- */

static const char plan_system[] =
	"You are the planning agent of kt, a tool that auto-tunes CUDA kernel templates. Between search rounds "
	"you read what was measured and propose changes to the template's search space. Answer with one JSON "
	"document and nothing else:\n"
	"{\"proposals\": [\n"
	"  {\"kind\": \"set_values\", \"param\": \"NAME\", \"values\": [...], \"reason\": \"...\"},\n"
	"  {\"kind\": \"add_constraint\", \"expr\": \"...\", \"reason\": \"...\"},\n"
	"  {\"kind\": \"revise_template\", \"template\": \"...\", \"reason\": \"...\"}\n"
	"]}\n"
	"At most %d proposals; an empty list means no change. set_values replaces the values of an integer "
	"parameter, or narrows a choice parameter to some of its declared choices. add_constraint adds a "
	"`// @kt require` expression over the parameters and shape symbols. revise_template gives a complete new "
	"template that keeps the kernel's name, the reference kernel unchanged, the shape symbols and the "
	"arguments. Every configuration must stay within the device's limits:\n";

static void plan_prompt(const kt_plan_req *req, kt_convo *c)
{
	kt_buf sys = {0}, user = {0};
	kt_buf_printf(&sys, plan_system, MAX_PROPOSALS);
	kt_target_describe(req->gpu, &sys);
	kt_buf_printf(&user, "The template `%s`:\n```cuda\n%s\n```\n\nShapes:\n", req->t->path, req->t->src);
	for (int s = 0; s < req->nshapes; s++) {
		kt_buf_puts(&user, "- ");
		kt_tmpl_format_shape(req->t, req->shapes + (size_t)s * (size_t)req->t->nshapes, &user);
		kt_buf_putc(&user, '\n');
	}
	kt_buf_printf(&user, "\nResults so far:\n%s\nWhat should the next round change?", req->summary ? req->summary : "");
	kt_convo_add(c, "system", kt_buf_str(&sys));
	kt_convo_add(c, "user", kt_buf_str(&user));
	kt_buf_free(&sys);
	kt_buf_free(&user);
}

static cJSON *proposals_json(const kt_agent_props *ps)
{
	cJSON *arr = cJSON_CreateArray();
	for (int i = 0; i < ps->n; i++) {
		const kt_agent_prop *p = &ps->v[i];
		cJSON *o = cJSON_CreateObject();
		cJSON_AddStringToObject(o, "kind", kt_agent_prop_kind_names[p->kind]);
		if (p->param)
			cJSON_AddStringToObject(o, "param", p->param);
		if (p->nvals)
			cJSON_AddItemToObject(o, "values", cJSON_CreateStringArray((const char *const *)p->vals, p->nvals));
		if (p->expr)
			cJSON_AddStringToObject(o, "expr", p->expr);
		cJSON_AddStringToObject(o, "reason", p->reason ? p->reason : "");
		cJSON_AddStringToObject(o, "outcome", p->accepted ? "accepted" : "rejected");
		if (p->why)
			cJSON_AddStringToObject(o, "why", p->why);
		cJSON_AddItemToArray(arr, o);
	}
	return arr;
}

/* One reply: 0 parsed (out filled), 1 unusable (problem says why), -1 client failure. */
static int plan_round(kt_llm *llm, const kt_plan_req *req, kt_convo *c, int round, cJSON *rounds, kt_agent_props *out,
		      kt_buf *problem, kt_err *err)
{
	kt_llm_reply r;
	kt_err e = {0};
	if (kt_llm_chat(llm, c->v, c->n, &r, &e)) {
		cJSON_AddItemToArray(rounds, kt_transcript_round(round, "llm-error", e.msg, NULL));
		kt_buf_puts(problem, e.msg);
		if (kt_llm_last_failure(llm) == KT_LLM_BAD_ANSWER)
			return 1;
		*err = e;
		return -1;
	}
	kt_convo_add(c, "assistant", kt_buf_str(&r.content));
	int rc = kt_agent_parse_proposals(kt_buf_str(&r.content), out, &e) ? 1 : 0;
	if (rc) {
		kt_buf_printf(problem, "%s%s", e.msg,
			      !strcmp(r.finish_reason, "length") ? " (the reply was cut off at the token limit)" : "");
		kt_buf b = {0};
		kt_buf_printf(&b, "kt could not use the answer: %s. Answer with one JSON document {\"proposals\": [...]}.",
			      kt_buf_str(problem));
		kt_convo_add(c, "user", kt_buf_str(&b));
		kt_buf_free(&b);
	}
	cJSON_AddItemToArray(rounds, kt_transcript_round(round, rc ? "rejected" : "parsed", kt_buf_str(problem), &r));
	kt_llm_reply_free(&r);
	return rc;
}

int kt_agent_plan(kt_llm *llm, const kt_plan_req *req, kt_agent_props *out, kt_buf *transcript, kt_err *err)
{
	*out = (kt_agent_props){0};
	kt_convo c = {0};
	cJSON *root = kt_transcript_start(llm, "plan");
	cJSON_AddStringToObject(root, "template", req->t->path);
	cJSON_AddStringToObject(root, "gpu", req->gpu->id.name);
	cJSON *rounds = cJSON_AddArrayToObject(root, "rounds");
	long start = kt_llm_get_usage(llm).total_tokens;
	int attempts = req->attempts > 0 ? req->attempts : 1, rc = 1, round = 0;
	kt_buf problem = {0};
	plan_prompt(req, &c);
	while (rc > 0) {
		if (round >= attempts) {
			rc = kt_fail(err, "no usable plan after %d repl%s; the last problem: %s", round, round == 1 ? "y" : "ies",
				     kt_buf_str(&problem));
			break;
		}
		long used = kt_llm_get_usage(llm).total_tokens - start;
		if (req->tokens > 0 && used >= req->tokens) {
			rc = kt_fail(err, "the token budget of %ld is spent (%ld used)", req->tokens, used);
			break;
		}
		kt_buf_reset(&problem);
		rc = plan_round(llm, req, &c, ++round, rounds, out, &problem, err);
	}
	for (int i = 0; rc == 0 && i < out->n; i++)
		kt_agent_check_proposal(req->t, req->shapes, req->nshapes, req->gpu, &out->v[i]);
	if (rc == 0)
		cJSON_AddItemToObject(root, "proposals", proposals_json(out));
	kt_buf tmp = {0};
	kt_transcript_finish(llm, root, &c, rc == 0 ? "planned" : "failed", rc == 0 ? NULL : err->msg,
			     transcript ? transcript : &tmp);
	kt_buf_free(&tmp);
	cJSON_Delete(root);
	kt_convo_free(&c);
	kt_buf_free(&problem);
	return rc;
}

/* ---- the planner between rounds ---- */

static int llm_plan(void *ctx, const kt_problem *p, const kt_tune_result *r, kt_plan *out, char **revision,
		    kt_buf *note, kt_buf *transcript, kt_err *err)
{
	const kt_agent_planner *ap = ctx;
	*revision = NULL;
	*out = (kt_plan){0};
	if (!ap->llm)
		kt_buf_puts(note, "no LLM client (set KT_LLM_BASE_URL and KT_LLM_MODEL); the built-in planner answers");
	if (ap->llm) {
		kt_buf summary = {0};
		kt_agent_summary(p->tmpl, p->shape, r, &summary);
		kt_plan_req req = {p->tmpl, p->shape, 1, p->target, kt_buf_str(&summary), 2, ap->cfg.tokens};
		kt_agent_props ps;
		kt_err e = {0};
		int rc = kt_agent_plan(ap->llm, &req, &ps, transcript, &e);
		kt_buf_free(&summary);
		if (rc == 0) {
			kt_agent_props_to_plan(&ps, out);
			for (int i = 0; i < ps.n && !*revision; i++)
				if (ps.v[i].accepted && ps.v[i].kind == KT_AGENT_REVISE_TEMPLATE)
					*revision = kt_xstrdup(ps.v[i].new_src);
			for (int i = 0; i < ps.n; i++)
				if (!ps.v[i].accepted)
					kt_buf_printf(note, "rejected %s: %s\n", kt_agent_prop_kind_names[ps.v[i].kind], ps.v[i].why);
			kt_agent_props_free(&ps);
			return 0;
		}
		kt_agent_props_free(&ps);
		kt_buf_printf(note, "the LLM planner failed (%s); the built-in planner answers", e.msg);
	}
	return kt_planner_builtin.plan(NULL, p, r, out, revision, note, transcript, err);
}

kt_planner kt_agent_planner_seam(kt_agent_planner *ap)
{
	return (kt_planner){"llm", llm_plan, ap};
}
