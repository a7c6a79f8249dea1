/* tmpl_expr.c - pass 2 of parsing a template: the directives that hold expressions (reference,
 * require, arg, grid, block, smem, bytes, flops, tolerance) and the measurement settings (l2,
 * launch), checked against the names that pass 1 declared (tmpl.c). */
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cusrc.h"
#include "diag.h"
#include "tmpl_int.h"

/* ---- pass 2: expressions ---- */

/* Parses src[s..e) as an expression; reports errors at their column. */
static const kt_expr *expr_at(pctx *pc, size_t s, size_t e, const char *what)
{
	s = tp_skip_blanks(pc, s, e);
	while (e > s && tp_is_blank(pc->src[e - 1]))
		e--;
	if (s == e) {
		char b[16];
		int delim = e < pc->len && pc->src[e] != '\n' && pc->src[e] != '\r'; /* the ',' or ']' that ends it */
		if (delim)
			kt_diag_quote(b, sizeof b, pc->src + e, 1);
		tp_error_at(pc, s, "expected %s but found %s", what, delim ? b : "the end of the line");
		return NULL;
	}
	size_t off;
	char msg[512];
	const kt_scope *sc = pc->in_req ? &pc->req_scope : pc->in_launch ? &pc->t->launch_scope : &pc->t->scope;
	const kt_expr *x = kt_expr_parse(pc->a, pc->src + s, e - s, sc, &off, msg, sizeof msg);
	if (!x)
		tp_error_at(pc, s + off, "%s", msg);
	return x;
}

/* An expression over shape symbols only; names the first parameter that it uses otherwise. */
static const kt_expr *shape_expr_at(pctx *pc, size_t s, size_t e, const char *what)
{
	const kt_expr *x = expr_at(pc, s, e, what);
	uint64_t shapes = pc->nshapes >= 64 ? ~(uint64_t)0 : (((uint64_t)1 << pc->nshapes) - 1);
	if (!x || !(kt_expr_deps(x) & ~shapes))
		return x;
	for (size_t i = s; i < e; i++) {
		size_t n = tp_ident_len(pc, i, e);
		if (n == 0 || (i > s && tp_is_id(pc->src[i - 1])))
			continue;
		for (int p = 0; p < pc->nparams; p++)
			if (tp_word_is(pc, i, n, pc->params[p].name)) {
				kt_buf sh = {0};
				for (int k = 0; k < pc->nshapes; k++)
					kt_buf_printf(&sh, "%s%s", k ? ", " : "", pc->shapes[k]);
				tp_error_at(pc, i, "'%s' is a tuning parameter, but %s may use only shape symbols (%s)", pc->params[p].name,
					 what, pc->nshapes ? kt_buf_str(&sh) : "none declared");
				kt_buf_free(&sh);
				return NULL;
			}
		i += n - 1;
	}
	return NULL;
}

/* 1 to 3 comma-separated expressions (grid, block). */
static int dims_at(pctx *pc, size_t s, size_t e, const kt_expr **out, const char *what, int shape_only)
{
	size_t st[MAX_DIMS + 1], en[MAX_DIMS + 1];
	int n = tp_split_commas(pc, s, e, st, en, MAX_DIMS + 1);
	if (n > MAX_DIMS) {
		tp_error_at(pc, tp_skip_blanks(pc, st[MAX_DIMS], e), "too many dimensions for %s (expected at most 3: x, y, z)", what);
		return -1;
	}
	char w[96];
	int rc = 0;
	for (int i = 0; i < n; i++) {
		snprintf(w, sizeof w, "an expression for dimension %c of %s", "xyz"[i], what);
		out[i] = shape_only ? shape_expr_at(pc, st[i], en[i], w) : expr_at(pc, st[i], en[i], w);
		rc |= out[i] ? 0 : -1;
	}
	return rc;
}

void tp_d_reference(pctx *pc, const dline *d)
{
	size_t pos = d->pos, s, n;
	if (tp_take_ident(pc, &pos, d->end, &s, &n, "the name of the reference __global__ function") != 0)
		return;
	size_t g = tp_find_keyword(pc, pos, d->end, "grid"), b = tp_find_keyword(pc, pos, d->end, "block");
	size_t m = tp_find_keyword(pc, pos, d->end, "smem");
	if (tp_skip_blanks(pc, pos, d->end) != g) {
		tp_expected(pc, pos, d->end, "'grid' and the reference kernel's launch (grid E block E [smem E])");
		return;
	}
	if (b == d->end || b < g) {
		tp_expected(pc, d->end, d->end, "'block' and the reference kernel's block size");
		return;
	}
	if (m < b) {
		tp_error_at(pc, m, "expected 'smem' after 'block' (the order is grid, block, smem)");
		return;
	}
	pc->t->reference = kt_arena_strndup(pc->a, pc->src + s, n);
	pc->reference_off = s;
	dims_at(pc, g + 4, b, pc->t->ref_grid, "the reference's grid", 1);
	dims_at(pc, b + 5, m, pc->t->ref_block, "the reference's block", 1);
	if (m < d->end)
		pc->t->ref_smem = shape_expr_at(pc, m + 4, d->end, "the reference's shared memory");
}

void tp_d_require(pctx *pc, const dline *d)
{
	if (pc->nreq == MAX_REQS) {
		tp_error_at(pc, d->name_off, "too many constraints (at most %d)", MAX_REQS);
		return;
	}
	pc->in_req = 1;
	const kt_expr *x = expr_at(pc, d->pos, d->end, "a constraint after 'require' (e.g. hidden % VEC == 0)");
	pc->in_req = 0;
	if (!x)
		return;
	size_t s = tp_skip_blanks(pc, d->pos, d->end);
	pc->req[pc->nreq] = x;
	pc->req_text[pc->nreq] = kt_arena_strndup(pc->a, pc->src + s, d->end - s);
	pc->req_loc[pc->nreq++] = tp_loc_of(pc, s);
}

static const struct {
	const char *name;
	kt_role role;
} roles[] = {{"in", KT_IN}, {"inout", KT_INOUT}, {"out", KT_OUT}};

static const struct {
	const char *name;
	kt_fillkind kind;
	int nargs;
} fills[] = {{"const", KT_FILL_CONST, 1}, {"int", KT_FILL_INT, 2}, {"normal", KT_FILL_NORMAL, 2}, {"uniform", KT_FILL_UNIFORM, 2}};
#define NFILLS ((int)(sizeof fills / sizeof fills[0]))

/* fill KIND(a[, b]) */
static int parse_fill(pctx *pc, size_t *pos, size_t end, kt_fill *f)
{
	size_t s, n;
	if (tp_take_ident(pc, pos, end, &s, &n, "a fill after 'fill' (uniform(a,b), normal(mean,std), int(a,b) or const(v))") != 0)
		return -1;
	int k;
	for (k = 0; k < NFILLS && !tp_word_is(pc, s, n, fills[k].name); k++)
		;
	if (k == NFILLS) {
		tp_error_at(pc, s, "unknown fill '%.*s' (expected uniform(a,b), normal(mean,std), int(a,b) or const(v))", (int)n, pc->src + s);
		return -1;
	}
	if (!tp_take_char(pc, pos, end, '(')) {
		tp_expected(pc, *pos, end, "'(' after the fill name");
		return -1;
	}
	double v[2] = {0, 0};
	for (int i = 0; i < fills[k].nargs; i++) {
		if (i && !tp_take_char(pc, pos, end, ',')) {
			tp_expected(pc, *pos, end, "',' and the second number of the fill");
			return -1;
		}
		if (tp_take_number(pc, pos, end, &v[i], "a number") != 0)
			return -1;
	}
	if (!tp_take_char(pc, pos, end, ')')) {
		char w[64];
		snprintf(w, sizeof w, "')' after %d number%s of %s()", fills[k].nargs, fills[k].nargs > 1 ? "s" : "", fills[k].name);
		tp_expected(pc, *pos, end, w);
		return -1;
	}
	f->kind = fills[k].kind;
	f->a = v[0];
	f->b = v[1];
	if ((f->kind == KT_FILL_UNIFORM || f->kind == KT_FILL_INT) && f->b < f->a) {
		tp_error_at(pc, s, "%s(%g, %g) is empty (expected the lower bound first)", fills[k].name, f->a, f->b);
		return -1;
	}
	if (f->kind == KT_FILL_NORMAL && f->b < 0) {
		tp_error_at(pc, s, "normal(%g, %g) has a negative standard deviation", f->a, f->b);
		return -1;
	}
	return 0;
}

/* Pointer argument: TYPE[EXTENT] in|out|inout [fill ...] [neginf F], from the '['. */
static int parse_pointer_arg(pctx *pc, size_t pos, size_t end, kt_arg *a)
{
	size_t open = pos, close = pos + 1;
	int depth = 1;
	for (; close < end && depth; close++)
		depth += pc->src[close] == '[' ? 1 : pc->src[close] == ']' ? -1 : 0;
	if (depth) {
		tp_error_at(pc, open, "expected ']' to close the extent that starts here");
		return -1;
	}
	a->extent = shape_expr_at(pc, open + 1, close - 1, "the extent of an argument");
	if (!a->extent)
		return -1;
	pos = close;
	size_t s, n;
	if (tp_take_ident(pc, &pos, end, &s, &n, "the role of the argument after its extent (in, out or inout)") != 0)
		return -1;
	int r;
	for (r = 0; r < 3 && !tp_word_is(pc, s, n, roles[r].name); r++)
		;
	if (r == 3) {
		tp_error_at(pc, s, "unknown role '%.*s' (expected in, out or inout)", (int)n, pc->src + s);
		return -1;
	}
	a->role = roles[r].role;
	a->fill = (kt_fill){KT_FILL_UNIFORM, -1.0, 1.0, 0.0};
	size_t fill_off = tp_skip_blanks(pc, pos, end);
	if (tp_take_word(pc, &pos, end, "fill")) {
		if (a->role == KT_OUT) {
			tp_error_at(pc, fill_off, "an 'out' argument is not filled (expected 'fill' only for in and inout arguments)");
			return -1;
		}
		if (parse_fill(pc, &pos, end, &a->fill) != 0)
			return -1;
	}
	size_t ni = tp_skip_blanks(pc, pos, end);
	if (tp_take_word(pc, &pos, end, "neginf")) {
		int paren = tp_take_char(pc, &pos, end, '(');
		if (tp_take_number(pc, &pos, end, &a->fill.neginf, "the fraction of -inf elements after 'neginf' (0 to 1)") != 0)
			return -1;
		if (paren && !tp_take_char(pc, &pos, end, ')')) {
			tp_expected(pc, pos, end, "')' after the fraction of neginf(F)");
			return -1;
		}
		if (!(a->fill.neginf >= 0 && a->fill.neginf <= 1)) {
			tp_error_at(pc, ni, "neginf %g is not a fraction (expected a number from 0 to 1)", a->fill.neginf);
			return -1;
		}
	}
	return tp_expect_end(pc, pos, end, "'fill', 'neginf' or the end of the line");
}

/* What the name of a parameter, type symbol or option is ("parameter", ...) and the line that
 * declares it (these names become macros); NULL when no such name is declared. */
static const char *macro_owner(const pctx *pc, const char *name, int *line)
{
	for (int i = 0; i < pc->nparams; i++)
		if (!strcmp(pc->params[i].name, name))
			return *line = pc->params[i].loc.line, "parameter";
	for (int i = 0; i < pc->ntypes; i++)
		if (!strcmp(pc->types[i].name, name))
			return *line = pc->types[i].loc.line, "type symbol";
	for (int i = 0; i < pc->noptions; i++)
		if (!strcmp(pc->options[i].name, name))
			return *line = pc->options[i].loc.line, "option";
	return NULL;
}

void tp_d_arg(pctx *pc, const dline *d)
{
	size_t pos = d->pos, s, n, ts, tn;
	if (tp_take_ident(pc, &pos, d->end, &s, &n, "the name of the argument") != 0)
		return;
	if (tp_take_ident(pc, &pos, d->end, &ts, &tn, "the type of the argument (an element type or a type symbol)") != 0)
		return;
	kt_arg a = {0};
	a.name = kt_arena_strndup(pc->a, pc->src + s, n);
	a.loc = tp_loc_of(pc, s);
	a.typesym = -1;
	a.shape_slot = -1;
	int e = tp_find_etype(pc->src + ts, tn);
	for (int i = 0; e < 0 && i < pc->ntypes; i++)
		if (tp_word_is(pc, ts, tn, pc->types[i].name)) {
			a.typesym = i;
			e = (int)pc->types[i].chosen;
		}
	if (e < 0) {
		tp_unknown_etype(pc, ts, tn, 1);
		return;
	}
	a.type = (kt_etype)e;
	for (int i = 0; i < pc->nargs; i++)
		if (!strcmp(pc->args[i].name, a.name)) {
			tp_error_at(pc, s, "argument '%s' is already declared (first declared at line %d)", a.name, pc->args[i].loc.line);
			return;
		}
	int at;
	const char *owner = macro_owner(pc, a.name, &at);
	if (owner) {
		tp_error_at(pc, s, "argument '%s' has the name of the %s declared at line %d (it becomes a macro; expected another name)",
			 a.name, owner, at);
		return;
	}
	if (pc->nargs == MAX_ARGS) {
		tp_error_at(pc, s, "too many arguments (at most %d)", MAX_ARGS);
		return;
	}
	pos = tp_skip_blanks(pc, pos, d->end);
	if (pos < d->end && pc->src[pos] == '[') {
		if (parse_pointer_arg(pc, pos, d->end, &a) != 0)
			return;
	} else if (pos < d->end && pc->src[pos] == '=') {
		a.role = KT_SCALAR;
		a.value = shape_expr_at(pc, pos + 1, d->end, "the value of a scalar argument");
		if (!a.value)
			return;
		int slot = kt_expr_slot(a.value);
		a.shape_slot = slot >= 0 && slot < pc->nshapes ? slot : -1;
	} else {
		tp_expected(pc, pos, d->end, "'[' (a pointer: TYPE[EXTENT] in|out|inout) or '=' (a scalar: TYPE = VALUE) after the type");
		return;
	}
	pc->args[pc->nargs++] = a;
}

/* The launch geometry may also name sms, the GPU's multiprocessor count (a persistent grid). */
void tp_d_grid(pctx *pc, const dline *d)
{
	pc->in_launch = 1;
	dims_at(pc, d->pos, d->end, pc->t->grid, "the grid", 0);
	pc->in_launch = 0;
}

void tp_d_block(pctx *pc, const dline *d)
{
	pc->in_launch = 1;
	dims_at(pc, d->pos, d->end, pc->t->block, "the block", 0);
	pc->in_launch = 0;
}

void tp_d_smem(pctx *pc, const dline *d)
{
	pc->in_launch = 1;
	pc->t->smem = expr_at(pc, d->pos, d->end, "the dynamic shared memory in bytes after 'smem'");
	pc->in_launch = 0;
}

void tp_d_bytes(pctx *pc, const dline *d)
{
	pc->t->bytes = expr_at(pc, d->pos, d->end, "the minimal number of bytes moved after 'bytes'");
}

const char *const kt_flops_units[KT_NFLOPS_UNITS] = {[KT_FLOPS_FMA] = "fma", [KT_FLOPS_TENSOR] = "tensor"};

/* True when name[0..n) is declared (a shape symbol, parameter or type symbol) or reserved. */
static int is_declared(const pctx *pc, size_t off, size_t n)
{
	for (int i = 0; i < pc->nnames; i++)
		if (tp_word_is(pc, off, n, pc->names[i].name))
			return 1;
	for (size_t i = 0; i < tp_nreserved; i++)
		if (tp_word_is(pc, off, n, tp_reserved[i]))
			return 1;
	return 0;
}

/* `flops [fma|tensor] EXPR`: a first word that is a unit word is the unit.  Another undeclared
 * word followed by blanks and an operand stands where a unit goes (no expression puts two
 * operands side by side), so it is reported as an unknown unit. */
void tp_d_flops(pctx *pc, const dline *d)
{
	size_t pos = tp_skip_blanks(pc, d->pos, d->end), n = tp_ident_len(pc, pos, d->end);
	size_t next = tp_skip_blanks(pc, pos + n, d->end);
	for (int u = 0; n && u < KT_NFLOPS_UNITS; u++)
		if (tp_word_is(pc, pos, n, kt_flops_units[u])) {
			char what[96];
			snprintf(what, sizeof what, "the number of floating-point operations after 'flops %s'", kt_flops_units[u]);
			pc->t->flops_unit = (kt_flops_unit)u;
			pc->t->flops = expr_at(pc, pos + n, d->end, what);
			return;
		}
	if (n && next > pos + n && next < d->end && (tp_is_id(pc->src[next]) || pc->src[next] == '.') &&
	    !is_declared(pc, pos, n)) {
		char b[80];
		const char *s = tp_suggest(pc->src + pos, n, kt_flops_units, KT_NFLOPS_UNITS, b, sizeof b);
		tp_error_at(pc, pos, "unknown arithmetic '%.*s' after 'flops'%s", (int)n, pc->src + pos,
			 *s ? s : " (expected fma or tensor before the expression)");
		return;
	}
	pc->t->flops = expr_at(pc, d->pos, d->end, "the number of floating-point operations after 'flops'");
}

void tp_d_tolerance(pctx *pc, const dline *d)
{
	size_t pos = d->pos;
	double atol, rtol;
	size_t off = tp_skip_blanks(pc, pos, d->end);
	if (tp_take_number(pc, &pos, d->end, &atol, "the absolute tolerance (e.g. 1e-2)") != 0)
		return;
	rtol = atol;
	size_t roff = tp_skip_blanks(pc, pos, d->end);
	if (roff < d->end && tp_take_number(pc, &pos, d->end, &rtol, "the relative tolerance or the end of the line") != 0)
		return;
	if (tp_expect_end(pc, pos, d->end, "the end of the line after the tolerances (ATOL [RTOL])") != 0)
		return;
	if (!(atol >= 0) || !(rtol >= 0)) {
		tp_error_at(pc, atol >= 0 ? roff : off, "a tolerance must not be negative");
		return;
	}
	pc->t->atol = atol;
	pc->t->rtol = rtol;
}

/* `l2 cold|warm`, `launch stream|graph`: how the tuner times the variants (measure.h). */
static void d_measure(pctx *pc, const dline *d, kt_measure_setting s)
{
	const kt_measure_info *in = &kt_measure_infos[s];
	size_t pos = tp_skip_blanks(pc, d->pos, d->end), n = tp_ident_len(pc, pos, d->end);
	int v = n ? kt_measure_value(s, pc->src + pos, n) : -1;
	kt_buf want = {0}, after = {0};
	kt_measure_values(s, &want);
	if (v < 0 && n) {
		char b[80];
		const char *hint = tp_suggest(pc->src + pos, n, in->values, in->nvalues, b, sizeof b);
		kt_buf_printf(&after, " (expected %s)", want.data);
		tp_error_at(pc, pos, "unknown %s '%.*s' after '%s'%s", in->what, (int)n, pc->src + pos, in->name,
			 *hint ? hint : after.data);
	} else if (v < 0) {
		kt_buf_printf(&after, "%s after '%s'", want.data, in->name);
		tp_expected(pc, pos, d->end, after.data);
	} else {
		kt_buf_printf(&after, "the end of the line after '%s %s'", in->name, in->values[v]);
		if (tp_expect_end(pc, pos + n, d->end, after.data) == 0)
			pc->t->measure.v[s] = v;
	}
	kt_buf_free(&want);
	kt_buf_free(&after);
}

void tp_d_l2(pctx *pc, const dline *d) { d_measure(pc, d, KT_MEASURE_L2); }
void tp_d_launch(pctx *pc, const dline *d) { d_measure(pc, d, KT_MEASURE_LAUNCH); }
