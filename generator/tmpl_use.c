/* tmpl_use.c - using a parsed template: shapes and configurations as text, the environment of
 * one configuration at one shape, its constraints, its launch and the launcher's argument list
 * (see tmpl.h).  Parsing is in tmpl.c. */
#include "tmpl.h"

#include <ctype.h>
#include <stdio.h>
#include <string.h>

#include "diag.h"

#define MAX_DIMS 3 /* grid and block dimensions */
#define MAX_LISTED 16 /* values listed in a message */

/* ---- shapes and configurations as text ---- */

/* Splits "a=1,b=2" (commas or blanks) into items; calls fn for each NAME=VALUE. */
static int each_item(const char *spec, int (*fn)(void *ctx, const char *name, size_t n, const char *val, size_t vn, kt_err *err),
		     void *ctx, kt_err *err)
{
	const char *p = spec;
	for (;;) {
		while (*p == ',' || *p == ' ' || *p == '\t')
			p++;
		if (!*p)
			return 0;
		const char *s = p;
		while (*p && *p != ',' && *p != ' ' && *p != '\t')
			p++;
		const char *eq = memchr(s, '=', (size_t)(p - s));
		if (!eq)
			return kt_fail(err, "'%.*s' is not NAME=VALUE", (int)(p - s), s);
		if (fn(ctx, s, (size_t)(eq - s), eq + 1, (size_t)(p - eq - 1), err) != 0)
			return -1;
	}
}

static int find_name(const char *const *names, int n, const char *s, size_t len)
{
	for (int i = 0; i < n; i++)
		if (strlen(names[i]) == len && !memcmp(names[i], s, len))
			return i;
	return -1;
}

static void join_names(const char *const *names, int n, kt_buf *out)
{
	for (int i = 0; i < n; i++)
		kt_buf_printf(out, "%s%s", i ? ", " : "", names[i]);
}

static int unknown_item(const char *what, const char *const *names, int n, const char *s, size_t len, kt_err *err)
{
	const char *near = kt_diag_closest(s, len, names, n);
	if (near)
		return kt_fail(err, "unknown %s '%.*s'; did you mean '%s'?", what, (int)len, s, near);
	kt_buf all = {0};
	join_names(names, n, &all);
	kt_fail(err, "unknown %s '%.*s' (expected one of: %s)", what, (int)len, s, n ? all.data : "none declared");
	kt_buf_free(&all);
	return -1;
}

struct shape_ctx {
	const kt_tmpl *t;
	int64_t *vals;
	int given[KT_MAX_SLOTS];
};

static int shape_item(void *ctx, const char *name, size_t n, const char *val, size_t vn, kt_err *err)
{
	struct shape_ctx *c = ctx;
	int i = find_name(c->t->shapes, c->t->nshapes, name, n);
	if (i < 0)
		return unknown_item("shape symbol", c->t->shapes, c->t->nshapes, name, n, err);
	if (c->given[i])
		return kt_fail(err, "shape symbol '%s' is given twice", c->t->shapes[i]);
	if (kt_parse_i64(val, vn, &c->vals[i]) != 0 || c->vals[i] < 0)
		return kt_fail(err, "bad value '%.*s' for '%s' (expected a non-negative integer)", (int)vn, val, c->t->shapes[i]);
	c->given[i] = 1;
	return 0;
}

int kt_tmpl_parse_shape(const kt_tmpl *t, const char *spec, int64_t *vals, kt_err *err)
{
	struct shape_ctx c = {t, vals, {0}};
	if (each_item(spec, shape_item, &c, err) != 0)
		return -1;
	for (int i = 0; i < t->nshapes; i++)
		if (!c.given[i])
			return kt_fail(err, "shape '%s' does not give '%s' (expected NAME=VALUE for each shape symbol)", spec,
				       t->shapes[i]);
	return 0;
}

void kt_tmpl_format_shape(const kt_tmpl *t, const int64_t *vals, kt_buf *out)
{
	for (int i = 0; i < t->nshapes; i++)
		kt_buf_printf(out, "%s%s=%lld", i ? "," : "", t->shapes[i], (long long)vals[i]);
}

void kt_tmpl_format_value(const kt_param *p, int idx, kt_buf *out)
{
	if (p->type == KT_PCHOICE)
		kt_buf_puts(out, p->choices[idx]);
	else if (p->type == KT_PBOOL)
		kt_buf_puts(out, p->vals[idx] ? "true" : "false");
	else
		kt_buf_printf(out, "%lld", (long long)p->vals[idx]);
}

void kt_tmpl_format_config(const kt_tmpl *t, const uint16_t *cfg, kt_buf *out)
{
	for (int i = 0; i < t->nparams; i++) {
		kt_buf_printf(out, "%s%s=", i ? "," : "", t->params[i].name);
		kt_tmpl_format_value(&t->params[i], cfg[i], out);
	}
}

struct config_ctx {
	const kt_tmpl *t;
	uint16_t *cfg;
	int given[KT_MAX_SLOTS];
	const char *names[KT_MAX_SLOTS];
};

static int value_index(const kt_param *p, const char *val, size_t vn)
{
	for (int i = 0; i < p->nvals; i++) {
		kt_buf b = {0};
		kt_tmpl_format_value(p, i, &b);
		int same = b.len == vn && !memcmp(b.data, val, vn);
		kt_buf_free(&b);
		if (same)
			return i;
	}
	return -1;
}

static int config_item(void *ctx, const char *name, size_t n, const char *val, size_t vn, kt_err *err)
{
	struct config_ctx *c = ctx;
	int i = find_name(c->names, c->t->nparams, name, n);
	if (i < 0)
		return unknown_item("parameter", c->names, c->t->nparams, name, n, err);
	const kt_param *p = &c->t->params[i];
	if (c->given[i])
		return kt_fail(err, "parameter '%s' is given twice", p->name);
	int v = value_index(p, val, vn);
	if (v < 0) {
		kt_buf all = {0};
		for (int k = 0; k < p->nvals && k < MAX_LISTED; k++) {
			kt_buf_puts(&all, k ? ", " : "");
			kt_tmpl_format_value(p, k, &all);
		}
		kt_fail(err, "'%.*s' is not a value of '%s' (expected one of: %s%s)", (int)vn, val, p->name, kt_buf_str(&all),
			p->nvals > MAX_LISTED ? ", ..." : "");
		kt_buf_free(&all);
		return -1;
	}
	c->cfg[i] = (uint16_t)v;
	c->given[i] = 1;
	return 0;
}

int kt_tmpl_parse_config(const kt_tmpl *t, const char *spec, uint16_t *cfg, kt_err *err)
{
	struct config_ctx c = {t, cfg, {0}, {0}};
	for (int i = 0; i < t->nparams; i++)
		c.names[i] = t->params[i].name;
	if (each_item(spec, config_item, &c, err) != 0)
		return -1;
	for (int i = 0; i < t->nparams; i++)
		if (!c.given[i])
			return kt_fail(err, "configuration '%s' does not give '%s' (expected a value for every parameter)", spec,
				       t->params[i].name);
	return 0;
}

void kt_tmpl_default_config(const kt_tmpl *t, uint16_t *cfg)
{
	for (int i = 0; i < t->nparams; i++)
		cfg[i] = (uint16_t)t->params[i].def;
}

int kt_tmpl_code_config(const kt_tmpl *t, const uint16_t *cfg, uint16_t *code)
{
	int other = 0;
	for (int i = 0; i < t->nparams; i++) {
		code[i] = t->launch_only && t->launch_only[i] ? (uint16_t)t->params[i].def : cfg[i];
		other |= code[i] != cfg[i];
	}
	return other;
}

/* ---- evaluation ---- */

void kt_tmpl_env(const kt_tmpl *t, const int64_t *shape, const uint16_t *cfg, kt_val *env)
{
	for (int i = 0; i < KT_MAX_SLOTS; i++)
		env[i] = kt_int(0);
	for (int i = 0; i < t->nshapes; i++)
		env[i] = kt_int(shape[i]);
	for (int i = 0; i < t->nparams; i++)
		env[t->params[i].slot] = kt_int(t->params[i].vals[cfg ? cfg[i] : t->params[i].def]);
	env[kt_tmpl_sms_slot(t)] = kt_int(t->sms);
}

int kt_tmpl_violated(const kt_tmpl *t, const kt_val *env)
{
	for (int i = 0; i < t->nreq; i++) {
		kt_val v;
		char msg[256];
		if (kt_expr_eval(t->req[i], env, &v, msg, sizeof msg) != 0 || !kt_val_truthy(v))
			return i;
	}
	return -1;
}

/* Evaluates an integer launch figure; `what` names it in messages. */
static int eval_int(const kt_tmpl *t, const kt_expr *e, const kt_val *env, const char *what, int64_t min, int64_t *out,
		    kt_err *err)
{
	kt_val v;
	char msg[256];
	kt_buf canon = {0};
	kt_expr_canon(e, &t->launch_scope, &canon);
	/* sms unknown (no GPU): say so beside a figure that names it */
	const char *nosms = t->sms <= 0 && (kt_expr_deps(e) >> kt_tmpl_sms_slot(t) & 1) ? "; sms, the GPU's multiprocessor count, is 0: no GPU is known" : "";
	int rc = 0;
	if (kt_expr_eval(e, env, &v, msg, sizeof msg) != 0)
		rc = kt_fail(err, "%s: %s = %s: %s%s", t->path, what, canon.data, msg, nosms);
	else if (v.type != KT_VINT)
		rc = kt_fail(err, "%s: %s = %s is %g at this configuration (expected an integer)%s", t->path, what, canon.data, v.f, nosms);
	else if (v.i < min)
		rc = kt_fail(err, "%s: %s = %s is %lld at this configuration (expected %s)%s", t->path, what, canon.data,
			     (long long)v.i, min > 0 ? "a positive integer" : "a non-negative integer", nosms);
	else
		*out = v.i;
	kt_buf_free(&canon);
	return rc;
}

static int eval_float(const kt_tmpl *t, const kt_expr *e, const kt_val *env, const char *what, double *out, kt_err *err)
{
	kt_val v;
	char msg[256];
	if (!e) {
		*out = 0;
		return 0;
	}
	if (kt_expr_eval(e, env, &v, msg, sizeof msg) != 0)
		return kt_fail(err, "%s: %s: %s", t->path, what, msg);
	*out = kt_val_f(v);
	return 0;
}

int kt_tmpl_launch(const kt_tmpl *t, const kt_val *env, kt_launch *out, kt_err *err)
{
	static const char *const gname[MAX_DIMS] = {"grid dimension x", "grid dimension y", "grid dimension z"};
	static const char *const bname[MAX_DIMS] = {"block dimension x", "block dimension y", "block dimension z"};
	for (int i = 0; i < MAX_DIMS; i++) {
		out->grid[i] = out->block[i] = 1;
		if (t->grid[i] && eval_int(t, t->grid[i], env, gname[i], 1, &out->grid[i], err) != 0)
			return -1;
		if (t->block[i] && eval_int(t, t->block[i], env, bname[i], 1, &out->block[i], err) != 0)
			return -1;
	}
	out->smem = 0;
	if (t->smem && eval_int(t, t->smem, env, "smem", 0, &out->smem, err) != 0)
		return -1;
	if (eval_float(t, t->bytes, env, "bytes", &out->bytes, err) != 0 || eval_float(t, t->flops, env, "flops", &out->flops, err) != 0)
		return -1;
	return 0;
}

void kt_tmpl_arglist(const kt_tmpl *t, int c_header, kt_buf *out)
{
	for (int i = 0; i < t->nargs; i++) {
		const kt_arg *a = &t->args[i];
		const kt_etype_info *e = &kt_etypes[a->type];
		const char *ty = c_header ? e->c : e->cxx;
		if (i)
			kt_buf_puts(out, ", ");
		if (a->role == KT_SCALAR)
			kt_buf_printf(out, "%s %s", ty, a->name);
		else
			kt_buf_printf(out, "%s%s* %s", a->role == KT_IN ? "const " : "", ty, a->name);
	}
}

void kt_tmpl_format_choices(const kt_tmpl *t, char sep, kt_buf *out)
{
	for (int i = 0; i < t->ntypes; i++)
		kt_buf_printf(out, "%s=%s%c", t->types[i].name, kt_etypes[t->types[i].chosen].name, sep);
	for (int i = 0; i < t->noptions; i++)
		kt_buf_printf(out, "%s=%s%c", t->options[i].name, t->options[i].choices[t->options[i].chosen], sep);
}

/* 1 when word occurs in text as a whole identifier. */
static int has_word(const char *text, size_t len, const char *word)
{
	size_t wl = strlen(word);
	for (const char *p = text, *end = text + len; p + wl <= end; p++) {
		int before = p > text && (isalnum((unsigned char)p[-1]) || p[-1] == '_');
		int after = p + wl < end && (isalnum((unsigned char)p[wl]) || p[wl] == '_');
		if (!before && !after && !memcmp(p, word, wl))
			return 1;
	}
	return 0;
}

int kt_tmpl_arch_specific(const kt_tmpl *t)
{
	for (int r = 0; r < t->nreq; r++)
		if (has_word(t->req_text[r], strlen(t->req_text[r]), "sm_a"))
			return 1;
	static const char *const feats[] = {"__CUDA_ARCH_FEAT_SM90_ALL", "__CUDA_ARCH_SPECIFIC__", "__CUDA_ARCH_FAMILY_SPECIFIC__"};
	for (size_t i = 0; i < sizeof feats / sizeof feats[0]; i++)
		if (has_word(t->src, t->srclen, feats[i]))
			return 1;
	return 0;
}
