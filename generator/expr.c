/* expr.c - parsing, evaluation and printing of template expressions (see expr.h).
 *
 * Every node carries a static type (int or float), computed at parse time with every slot
 * taken as an integer (shape symbols and parameter values are integers).  Evaluation follows
 * the operands' actual types like C does, and kt_expr_to_c emits C whose types are the static
 * ones, so the two agree whenever the environment holds integers.
 */
#include "expr.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "diag.h"

#define EXPR_MAX_DEPTH 200 /* nesting limit, so hostile input cannot exhaust the stack */
#define EXPR_MAX_ARGS 16   /* arguments of one function call */
#define POW2_MAX 62        /* pow2(a) must fit int64 */

typedef enum op {
	OP_INT, OP_FLOAT, OP_STR, OP_SLOT,
	OP_NEG, OP_POS, OP_NOT,
	OP_MUL, OP_DIV, OP_MOD, OP_ADD, OP_SUB,
	OP_LT, OP_LE, OP_GT, OP_GE, OP_EQ, OP_NE,
	OP_AND, OP_OR, OP_COND, OP_CALL,
} op;

typedef enum fn { FN_ABS, FN_CDIV, FN_CEIL, FN_FLOOR, FN_LOG2, FN_MAX, FN_MIN, FN_POW2, FN_COUNT } fn;

struct kt_expr {
	op op;
	int isf;           /* static type is double */
	int slot;          /* OP_SLOT; OP_STR: the choice parameter's slot (-1 while unresolved) */
	fn fn;             /* OP_CALL */
	int nargs;         /* OP_CALL */
	int64_t i;         /* OP_INT; OP_STR: the choice's index */
	double f;          /* OP_FLOAT */
	const char *text;  /* OP_STR: the literal without quotes */
	size_t textlen;
	kt_expr *a, *b, *c; /* operands: unary a; binary a b; cond a ? b : c */
	kt_expr **args;    /* OP_CALL */
	size_t off;        /* where the node starts in the source */
	uint64_t deps;
};

/* ---- tables ---- */

static const struct fninfo {
	const char *name;
	int minargs, maxargs; /* maxargs 0: any number */
	int intargs;          /* arguments must be integers */
	const char *c_int, *c_float; /* C function for integer / floating arguments */
} fns[FN_COUNT] = {
	[FN_ABS] = {"abs", 1, 1, 0, "KT_ABS", "KT_FABS"},
	[FN_CDIV] = {"cdiv", 2, 2, 1, "KT_CDIV", NULL},
	[FN_CEIL] = {"ceil", 1, 1, 0, NULL, "KT_CEIL"},
	[FN_FLOOR] = {"floor", 1, 1, 0, NULL, "KT_FLOOR"},
	[FN_LOG2] = {"log2", 1, 1, 1, "KT_LOG2", NULL},
	[FN_MAX] = {"max", 2, 0, 0, "KT_MAX", "KT_FMAX"},
	[FN_MIN] = {"min", 2, 0, 0, "KT_MIN", "KT_FMIN"},
	[FN_POW2] = {"pow2", 1, 1, 1, "KT_POW2", NULL},
};

static const char *const fn_names[FN_COUNT] = {"abs", "cdiv", "ceil", "floor", "log2", "max", "min", "pow2"};

/* Binary operators by binding level, loosest first (C's levels). */
enum { LV_OR = 1, LV_AND, LV_EQ, LV_REL, LV_ADD, LV_MUL, LV_COUNT };

static const struct binop {
	const char *tok;
	op op;
	int level;
} binops[] = {
	{"||", OP_OR, LV_OR},  {"&&", OP_AND, LV_AND}, {"==", OP_EQ, LV_EQ},  {"!=", OP_NE, LV_EQ},
	{"<=", OP_LE, LV_REL}, {">=", OP_GE, LV_REL},  {"<", OP_LT, LV_REL},  {">", OP_GT, LV_REL},
	{"+", OP_ADD, LV_ADD}, {"-", OP_SUB, LV_ADD},  {"*", OP_MUL, LV_MUL}, {"/", OP_DIV, LV_MUL},
	{"%", OP_MOD, LV_MUL},
};

static const char *op_text(op o)
{
	for (size_t i = 0; i < sizeof binops / sizeof binops[0]; i++)
		if (binops[i].op == o)
			return binops[i].tok;
	return "?";
}

/* ---- parser ---- */

typedef struct parser {
	kt_arena *a;
	const char *s;
	size_t len, pos;
	const kt_scope *sc;
	int depth;
	int failed;
	size_t err_off;
	char *msg;
	size_t msgsz;
} parser;

static kt_expr *fail_at(parser *p, size_t off, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static kt_expr *fail_at(parser *p, size_t off, const char *fmt, ...)
{
	if (p->failed)
		return NULL;
	p->failed = 1;
	p->err_off = off;
	if (p->msg && p->msgsz) {
		va_list ap;
		va_start(ap, fmt);
		vsnprintf(p->msg, p->msgsz, fmt, ap);
		va_end(ap);
	}
	return NULL;
}

static void skip_ws(parser *p)
{
	while (p->pos < p->len && (p->s[p->pos] == ' ' || p->s[p->pos] == '\t' || p->s[p->pos] == '\r' || p->s[p->pos] == '\n'))
		p->pos++;
}

static int is_ident_start(char c) { return isalpha((unsigned char)c) || c == '_'; }
static int is_ident_char(char c) { return isalnum((unsigned char)c) || c == '_'; }

/* Describes the token at the current position for "but found ..." messages. */
static void describe_here(parser *p, char *out, size_t outsz)
{
	skip_ws(p);
	if (p->pos >= p->len) {
		snprintf(out, outsz, "the end of the expression");
		return;
	}
	size_t n = 1;
	if (is_ident_start(p->s[p->pos]) || isdigit((unsigned char)p->s[p->pos]))
		while (p->pos + n < p->len && (is_ident_char(p->s[p->pos + n]) || p->s[p->pos + n] == '.'))
			n++;
	if (n > 32)
		n = 32;
	kt_diag_quote(out, outsz, p->s + p->pos, n);
}

static kt_expr *expected(parser *p, const char *what)
{
	char found[160];
	describe_here(p, found, sizeof found);
	return fail_at(p, p->pos, "expected %s but found %s", what, found);
}

static int accept(parser *p, const char *tok)
{
	skip_ws(p);
	size_t n = strlen(tok);
	if (p->pos + n > p->len || memcmp(p->s + p->pos, tok, n) != 0)
		return 0;
	p->pos += n;
	return 1;
}

static kt_expr *node(parser *p, op o, size_t off)
{
	kt_expr *e = kt_arena_alloc(p->a, sizeof *e);
	e->op = o;
	e->off = off;
	e->slot = -1;
	return e;
}

static kt_expr *parse_expr(parser *p);

static kt_expr *parse_number(parser *p)
{
	size_t start = p->pos, i = p->pos;
	int isfloat = 0;
	while (i < p->len && isdigit((unsigned char)p->s[i]))
		i++;
	if (i < p->len && p->s[i] == '.') {
		isfloat = 1;
		i++;
		while (i < p->len && isdigit((unsigned char)p->s[i]))
			i++;
	}
	if (i < p->len && (p->s[i] == 'e' || p->s[i] == 'E')) {
		size_t j = i + 1;
		if (j < p->len && (p->s[j] == '+' || p->s[j] == '-'))
			j++;
		if (j < p->len && isdigit((unsigned char)p->s[j])) {
			isfloat = 1;
			i = j;
			while (i < p->len && isdigit((unsigned char)p->s[i]))
				i++;
		}
	}
	size_t end = i;
	while (end < p->len && (is_ident_char(p->s[end]) || p->s[end] == '.'))
		end++;
	if (end != i || i - start > 64)
		return fail_at(p, start, "bad number '%.*s' (expected digits, optionally with a fraction and an exponent, like 256 or 1e-6)",
			       (int)(end - start > 64 ? 64 : end - start), p->s + start);
	p->pos = i;
	char tmp[80];
	memcpy(tmp, p->s + start, i - start);
	tmp[i - start] = '\0';
	kt_expr *e;
	if (isfloat) {
		errno = 0;
		double f = strtod(tmp, NULL);
		if (errno == ERANGE && (f == HUGE_VAL || f == -HUGE_VAL))
			return fail_at(p, start, "number '%s' is out of range (expected a finite double)", tmp);
		e = node(p, OP_FLOAT, start);
		e->f = f;
		e->isf = 1;
	} else {
		int64_t v;
		if (kt_parse_i64(tmp, i - start, &v) != 0)
			return fail_at(p, start, "integer '%s' is out of range (expected at most %lld)", tmp,
				       (long long)INT64_MAX);
		e = node(p, OP_INT, start);
		e->i = v;
	}
	return e;
}

static kt_expr *parse_string(parser *p)
{
	size_t start = p->pos, i = p->pos + 1;
	while (i < p->len && p->s[i] != '"' && p->s[i] != '\n')
		i++;
	if (i >= p->len || p->s[i] != '"')
		return fail_at(p, start, "unterminated string (expected a closing '\"')");
	kt_expr *e = node(p, OP_STR, start);
	e->text = p->s + start + 1;
	e->textlen = i - start - 1;
	p->pos = i + 1;
	return e;
}

static int find_slot(const kt_scope *sc, const char *name, size_t n)
{
	for (int i = 0; sc && i < sc->n; i++)
		if (sc->names[i] && strlen(sc->names[i]) == n && memcmp(sc->names[i], name, n) == 0)
			return i;
	return -1;
}

static int find_fn(const char *name, size_t n)
{
	for (int i = 0; i < FN_COUNT; i++)
		if (strlen(fn_names[i]) == n && memcmp(fn_names[i], name, n) == 0)
			return i;
	return -1;
}

static kt_expr *unknown_name(parser *p, size_t start, size_t n)
{
	const char *near = p->sc ? kt_diag_closest(p->s + start, n, p->sc->names, p->sc->n) : NULL;
	if (near)
		return fail_at(p, start, "unknown name '%.*s'; did you mean '%s'?", (int)n, p->s + start, near);
	return fail_at(p, start, "unknown name '%.*s' (expected a shape symbol, a parameter or a number)", (int)n,
		       p->s + start);
}

static kt_expr *parse_call(parser *p, size_t start, size_t n)
{
	int f = find_fn(p->s + start, n);
	if (f < 0) {
		const char *near = kt_diag_closest(p->s + start, n, fn_names, FN_COUNT);
		if (near)
			return fail_at(p, start, "unknown function '%.*s'; did you mean '%s'?", (int)n, p->s + start, near);
		return fail_at(p, start, "unknown function '%.*s' (expected one of: abs, cdiv, ceil, floor, log2, max, min, pow2)",
			       (int)n, p->s + start);
	}
	const struct fninfo *fi = &fns[f];
	kt_expr *args[EXPR_MAX_ARGS];
	int na = 0;
	for (;;) {
		if (na == EXPR_MAX_ARGS)
			return fail_at(p, p->pos, "too many arguments to %s() (at most %d)", fi->name, EXPR_MAX_ARGS);
		skip_ws(p);
		kt_expr *arg = parse_expr(p);
		if (!arg)
			return NULL;
		if (fi->intargs && arg->isf)
			return fail_at(p, arg->off, "%s() needs integer arguments, but this one is a floating-point value",
				       fi->name);
		args[na++] = arg;
		if (accept(p, ","))
			continue;
		if (accept(p, ")"))
			break;
		return expected(p, "',' or ')' in the argument list");
	}
	if (na < fi->minargs || (fi->maxargs && na > fi->maxargs)) {
		if (fi->maxargs == fi->minargs)
			return fail_at(p, start, "%s() takes %d argument%s, not %d", fi->name, fi->minargs,
				       fi->minargs == 1 ? "" : "s", na);
		return fail_at(p, start, "%s() takes at least %d arguments, not %d", fi->name, fi->minargs, na);
	}
	kt_expr *e = node(p, OP_CALL, start);
	e->fn = (fn)f;
	e->nargs = na;
	e->args = kt_arena_alloc(p->a, sizeof(kt_expr *) * (size_t)na);
	for (int i = 0; i < na; i++) {
		e->args[i] = args[i];
		e->deps |= args[i]->deps;
		if (args[i]->isf)
			e->isf = 1;
	}
	if (f == FN_FLOOR || f == FN_CEIL || fi->intargs)
		e->isf = 0;
	return e;
}

static kt_expr *parse_name(parser *p)
{
	size_t start = p->pos, n = 0;
	while (start + n < p->len && is_ident_char(p->s[start + n]))
		n++;
	p->pos += n;
	if (accept(p, "("))
		return parse_call(p, start, n);
	if ((n == 4 && !memcmp(p->s + start, "true", 4)) || (n == 5 && !memcmp(p->s + start, "false", 5))) {
		kt_expr *e = node(p, OP_INT, start);
		e->i = n == 4;
		return e;
	}
	int slot = find_slot(p->sc, p->s + start, n);
	if (slot < 0 && p->sc && p->sc->constant) {
		int64_t v;
		const char *why = "";
		int c = p->sc->constant(p->sc->ctx, p->s + start, n, &v, &why);
		if (c < 0)
			return fail_at(p, start, "'%.*s' %s", (int)n, p->s + start, why);
		if (c > 0) {
			kt_expr *e = node(p, OP_INT, start);
			e->i = v;
			return e;
		}
	}
	if (slot < 0) {
		if (find_fn(p->s + start, n) >= 0)
			return fail_at(p, p->pos, "expected '(' after the function name '%.*s'", (int)n, p->s + start);
		return unknown_name(p, start, n);
	}
	if (slot >= KT_MAX_SLOTS)
		return fail_at(p, start, "'%.*s' is slot %d, beyond the limit of %d", (int)n, p->s + start, slot, KT_MAX_SLOTS);
	kt_expr *e = node(p, OP_SLOT, start);
	e->slot = slot;
	e->deps = (uint64_t)1 << slot;
	return e;
}

static kt_expr *parse_primary(parser *p)
{
	skip_ws(p);
	if (p->pos >= p->len)
		return expected(p, "an expression (a number, a name or '(')");
	char c = p->s[p->pos];
	if (isdigit((unsigned char)c) || (c == '.' && p->pos + 1 < p->len && isdigit((unsigned char)p->s[p->pos + 1])))
		return parse_number(p);
	if (c == '"')
		return parse_string(p);
	if (is_ident_start(c))
		return parse_name(p);
	if (c == '(') {
		p->pos++;
		kt_expr *e = parse_expr(p);
		if (e && !accept(p, ")"))
			return expected(p, "')'");
		return e;
	}
	return expected(p, "an expression (a number, a name or '(')");
}

static kt_expr *parse_unary(parser *p)
{
	skip_ws(p);
	size_t start = p->pos;
	op o;
	if (accept(p, "-"))
		o = OP_NEG;
	else if (accept(p, "+"))
		o = OP_POS;
	else if (p->pos < p->len && p->s[p->pos] == '!' && !(p->pos + 1 < p->len && p->s[p->pos + 1] == '=')) {
		p->pos++;
		o = OP_NOT;
	}
	else
		return parse_primary(p);
	if (++p->depth > EXPR_MAX_DEPTH)
		return fail_at(p, start, "expression nested too deeply (at most %d levels)", EXPR_MAX_DEPTH);
	kt_expr *a = parse_unary(p);
	p->depth--;
	if (!a)
		return NULL;
	kt_expr *e = node(p, o, start);
	e->a = a;
	e->deps = a->deps;
	e->isf = o == OP_NOT ? 0 : a->isf;
	return e;
}

/* The binary operator at the current position, if it binds at `level`. */
static const struct binop *peek_binop(parser *p, int level)
{
	skip_ws(p);
	for (size_t i = 0; i < sizeof binops / sizeof binops[0]; i++) {
		size_t n = strlen(binops[i].tok);
		if (p->pos + n <= p->len && !memcmp(p->s + p->pos, binops[i].tok, n))
			return binops[i].level == level ? &binops[i] : NULL;
	}
	return NULL;
}

/* A comparison of a choice parameter with a string: resolves the string to the choice index. */
static int resolve_choice(parser *p, kt_expr *slot, kt_expr *str)
{
	const kt_scope *sc = p->sc;
	if (slot->op != OP_SLOT || !sc || !sc->is_choice || !sc->is_choice(sc->ctx, slot->slot)) {
		fail_at(p, str->off, "a string may only be compared with a choice parameter (e.g. ALGO == \"onepass\")");
		return -1;
	}
	int idx = sc->choice ? sc->choice(sc->ctx, slot->slot, str->text, str->textlen) : -1;
	if (idx < 0) {
		fail_at(p, str->off, "\"%.*s\" is not a choice of '%s'", (int)str->textlen, str->text, sc->names[slot->slot]);
		return -1;
	}
	str->i = idx;
	str->slot = slot->slot;
	return 0;
}

static kt_expr *parse_binary(parser *p, int level)
{
	if (level == LV_COUNT)
		return parse_unary(p);
	kt_expr *lhs = parse_binary(p, level + 1);
	const struct binop *bo;
	while (lhs && (bo = peek_binop(p, level)) != NULL) {
		p->pos += strlen(bo->tok);
		kt_expr *rhs = parse_binary(p, level + 1);
		if (!rhs)
			return NULL;
		if (bo->op == OP_MOD && (lhs->isf || rhs->isf))
			return fail_at(p, lhs->isf ? lhs->off : rhs->off, "'%%' needs integer operands, but this one is a floating-point value");
		if (bo->op == OP_EQ || bo->op == OP_NE) {
			if (rhs->op == OP_STR && lhs->op != OP_STR && resolve_choice(p, lhs, rhs) != 0)
				return NULL;
			if (lhs->op == OP_STR && rhs->op != OP_STR && resolve_choice(p, rhs, lhs) != 0)
				return NULL;
		}
		kt_expr *e = node(p, bo->op, lhs->off);
		e->a = lhs;
		e->b = rhs;
		e->deps = lhs->deps | rhs->deps;
		e->isf = bo->level >= LV_ADD && (lhs->isf || rhs->isf);
		lhs = e;
	}
	return lhs;
}

static kt_expr *parse_expr(parser *p)
{
	if (++p->depth > EXPR_MAX_DEPTH)
		return fail_at(p, p->pos, "expression nested too deeply (at most %d levels)", EXPR_MAX_DEPTH);
	kt_expr *c = parse_binary(p, LV_OR);
	if (!c)
		return NULL;
	if (accept(p, "?")) {
		kt_expr *a = parse_expr(p);
		if (!a)
			return NULL;
		if (!accept(p, ":"))
			return expected(p, "':' of the conditional '?:'");
		kt_expr *b = parse_expr(p);
		if (!b)
			return NULL;
		kt_expr *e = node(p, OP_COND, c->off);
		e->a = c;
		e->b = a;
		e->c = b;
		e->deps = c->deps | a->deps | b->deps;
		e->isf = a->isf || b->isf;
		c = e;
	}
	p->depth--;
	return c;
}

/* A string literal that was not resolved by a comparison with a choice parameter. */
static const kt_expr *stray_string(const kt_expr *e)
{
	if (!e)
		return NULL;
	if (e->op == OP_STR)
		return e->slot < 0 ? e : NULL;
	const kt_expr *s;
	if ((s = stray_string(e->a)) || (s = stray_string(e->b)) || (s = stray_string(e->c)))
		return s;
	for (int i = 0; i < (e->op == OP_CALL ? e->nargs : 0); i++)
		if ((s = stray_string(e->args[i])))
			return s;
	return NULL;
}

kt_expr *kt_expr_parse(kt_arena *a, const char *src, size_t len, const kt_scope *sc, size_t *err_off, char *msg,
		       size_t msgsz)
{
	parser p = {a, src, len, 0, sc, 0, 0, 0, msg, msgsz};
	if (msg && msgsz)
		msg[0] = '\0';
	kt_expr *e = parse_expr(&p);
	if (e) {
		skip_ws(&p);
		if (p.pos < p.len && src[p.pos] == '=' && !(p.pos + 1 < len && src[p.pos + 1] == '='))
			e = fail_at(&p, p.pos, "expected an operator or the end of the expression but found '='; did you mean '=='?");
		else if (p.pos < p.len)
			e = expected(&p, "an operator or the end of the expression");
	}
	const kt_expr *s = e ? stray_string(e) : NULL;
	if (s)
		e = fail_at(&p, s->off, "a string may only be compared with a choice parameter (e.g. ALGO == \"onepass\")");
	if (!e && err_off)
		*err_off = p.err_off;
	return e;
}

/* ---- evaluation ---- */

static int eval_fail(char *msg, size_t msgsz, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int eval_fail(char *msg, size_t msgsz, const char *fmt, ...)
{
	if (msg && msgsz) {
		va_list ap;
		va_start(ap, fmt);
		vsnprintf(msg, msgsz, fmt, ap);
		va_end(ap);
	}
	return -1;
}

static int eval_node(const kt_expr *e, const kt_val *env, kt_val *out, char *msg, size_t msgsz);

static int overflow(char *msg, size_t msgsz, op o, int64_t a, int64_t b)
{
	return eval_fail(msg, msgsz, "integer overflow in %lld %s %lld", (long long)a, op_text(o), (long long)b);
}

static int eval_arith(op o, kt_val a, kt_val b, kt_val *out, char *msg, size_t msgsz)
{
	if (a.type == KT_VFLOAT || b.type == KT_VFLOAT) {
		double x = kt_val_f(a), y = kt_val_f(b);
		if (o == OP_MOD)
			return eval_fail(msg, msgsz, "'%%' needs integer operands");
		if (o == OP_DIV && y == 0.0)
			return eval_fail(msg, msgsz, "division by zero");
		*out = kt_float(o == OP_ADD ? x + y : o == OP_SUB ? x - y : o == OP_MUL ? x * y : x / y);
		return 0;
	}
	int64_t x = a.i, y = b.i, r;
	switch (o) {
	case OP_ADD:
		if (__builtin_add_overflow(x, y, &r))
			return overflow(msg, msgsz, o, x, y);
		break;
	case OP_SUB:
		if (__builtin_sub_overflow(x, y, &r))
			return overflow(msg, msgsz, o, x, y);
		break;
	case OP_MUL:
		if (__builtin_mul_overflow(x, y, &r))
			return overflow(msg, msgsz, o, x, y);
		break;
	default: /* OP_DIV, OP_MOD */
		if (y == 0)
			return eval_fail(msg, msgsz, o == OP_DIV ? "division by zero" : "modulo by zero");
		if (x == INT64_MIN && y == -1)
			return overflow(msg, msgsz, o, x, y);
		r = o == OP_DIV ? x / y : x % y;
		break;
	}
	*out = kt_int(r);
	return 0;
}

static int eval_compare(op o, kt_val a, kt_val b)
{
	if (a.type == KT_VINT && b.type == KT_VINT) {
		int64_t x = a.i, y = b.i;
		return o == OP_LT ? x < y : o == OP_LE ? x <= y : o == OP_GT ? x > y : o == OP_GE ? x >= y : o == OP_EQ ? x == y : x != y;
	}
	double x = kt_val_f(a), y = kt_val_f(b);
	return o == OP_LT ? x < y : o == OP_LE ? x <= y : o == OP_GT ? x > y : o == OP_GE ? x >= y : o == OP_EQ ? x == y : x != y;
}

static int to_int64(double x, const char *what, kt_val *out, char *msg, size_t msgsz)
{
	/* 2^63 is exactly representable; every double below it in magnitude converts. */
	if (!(x >= -9223372036854775808.0 && x < 9223372036854775808.0))
		return eval_fail(msg, msgsz, "%s(%g) is out of the integer range", what, x);
	*out = kt_int((int64_t)x);
	return 0;
}

static int need_int(kt_val v, const char *fname, char *msg, size_t msgsz)
{
	if (v.type == KT_VINT)
		return 0;
	return eval_fail(msg, msgsz, "%s() needs integer arguments, got %g", fname, v.f);
}

/* min or max of v[0..n); a float result when the call's static type is float, like C. */
static kt_val eval_minmax(int want_max, int isf, const kt_val *v, int n)
{
	kt_val r = v[0];
	for (int i = 1; i < n; i++) {
		if (r.type == KT_VINT && v[i].type == KT_VINT) {
			if (want_max ? v[i].i > r.i : v[i].i < r.i)
				r = v[i];
		} else {
			double x = kt_val_f(r), y = kt_val_f(v[i]);
			r = kt_float(want_max ? (y > x ? y : x) : (y < x ? y : x));
		}
	}
	return isf && r.type == KT_VINT ? kt_float((double)r.i) : r;
}

static int eval_cdiv(int64_t a, int64_t b, kt_val *out, char *msg, size_t msgsz)
{
	if (b == 0)
		return eval_fail(msg, msgsz, "division by zero in cdiv(%lld, 0)", (long long)a);
	if (a == INT64_MIN && b == -1)
		return overflow(msg, msgsz, OP_DIV, a, b);
	int64_t q = a / b;
	if (a % b != 0 && ((a < 0) == (b < 0)))
		q++;
	*out = kt_int(q);
	return 0;
}

static int eval_log2(int64_t a, kt_val *out, char *msg, size_t msgsz)
{
	int64_t r = 0;
	if (a <= 0)
		return eval_fail(msg, msgsz, "log2() of a non-positive value (%lld)", (long long)a);
	while (a > 1) {
		a >>= 1;
		r++;
	}
	*out = kt_int(r);
	return 0;
}

static int eval_call(const kt_expr *e, const kt_val *env, kt_val *out, char *msg, size_t msgsz)
{
	kt_val v[EXPR_MAX_ARGS];
	const char *name = fns[e->fn].name;
	for (int i = 0; i < e->nargs; i++) {
		if (eval_node(e->args[i], env, &v[i], msg, msgsz) != 0)
			return -1;
		if (fns[e->fn].intargs && need_int(v[i], name, msg, msgsz) != 0)
			return -1;
	}
	switch (e->fn) {
	case FN_MIN:
	case FN_MAX:
		*out = eval_minmax(e->fn == FN_MAX, e->isf, v, e->nargs);
		return 0;
	case FN_ABS:
		if (v[0].type == KT_VFLOAT) {
			*out = kt_float(fabs(v[0].f));
			return 0;
		}
		if (v[0].i == INT64_MIN)
			return eval_fail(msg, msgsz, "integer overflow in abs(%lld)", (long long)v[0].i);
		*out = kt_int(v[0].i < 0 ? -v[0].i : v[0].i);
		return 0;
	case FN_FLOOR:
	case FN_CEIL:
		if (v[0].type == KT_VINT) {
			*out = v[0];
			return 0;
		}
		return to_int64(e->fn == FN_FLOOR ? floor(v[0].f) : ceil(v[0].f), name, out, msg, msgsz);
	case FN_CDIV:
		return eval_cdiv(v[0].i, v[1].i, out, msg, msgsz);
	case FN_LOG2:
		return eval_log2(v[0].i, out, msg, msgsz);
	case FN_POW2:
		if (v[0].i < 0 || v[0].i > POW2_MAX)
			return eval_fail(msg, msgsz, "pow2() exponent %lld is outside 0..%d", (long long)v[0].i, POW2_MAX);
		*out = kt_int((int64_t)1 << v[0].i);
		return 0;
	default:
		return eval_fail(msg, msgsz, "internal error: unknown function");
	}
}

static int eval_node(const kt_expr *e, const kt_val *env, kt_val *out, char *msg, size_t msgsz)
{
	kt_val a, b;
	switch (e->op) {
	case OP_INT:
	case OP_STR:
		*out = kt_int(e->i);
		return 0;
	case OP_FLOAT:
		*out = kt_float(e->f);
		return 0;
	case OP_SLOT:
		*out = env[e->slot];
		return 0;
	case OP_NEG:
	case OP_POS:
	case OP_NOT:
		if (eval_node(e->a, env, &a, msg, msgsz) != 0)
			return -1;
		if (e->op == OP_NOT)
			*out = kt_int(!kt_val_truthy(a));
		else if (e->op == OP_POS || a.type == KT_VFLOAT)
			*out = e->op == OP_POS ? a : kt_float(-a.f);
		else if (a.i == INT64_MIN)
			return eval_fail(msg, msgsz, "integer overflow in -(%lld)", (long long)a.i);
		else
			*out = kt_int(-a.i);
		return 0;
	case OP_AND:
	case OP_OR:
		if (eval_node(e->a, env, &a, msg, msgsz) != 0)
			return -1;
		if (kt_val_truthy(a) == (e->op == OP_OR)) {
			*out = kt_int(e->op == OP_OR);
			return 0;
		}
		if (eval_node(e->b, env, &b, msg, msgsz) != 0)
			return -1;
		*out = kt_int(kt_val_truthy(b));
		return 0;
	case OP_COND:
		if (eval_node(e->a, env, &a, msg, msgsz) != 0)
			return -1;
		if (eval_node(kt_val_truthy(a) ? e->b : e->c, env, out, msg, msgsz) != 0)
			return -1;
		if (e->isf && out->type == KT_VINT)
			*out = kt_float((double)out->i); /* C converts both arms to the common type */
		return 0;
	case OP_CALL:
		return eval_call(e, env, out, msg, msgsz);
	default:
		break;
	}
	if (eval_node(e->a, env, &a, msg, msgsz) != 0 || eval_node(e->b, env, &b, msg, msgsz) != 0)
		return -1;
	if (e->op >= OP_LT && e->op <= OP_NE) {
		*out = kt_int(eval_compare(e->op, a, b));
		return 0;
	}
	return eval_arith(e->op, a, b, out, msg, msgsz);
}

int kt_expr_eval(const kt_expr *e, const kt_val *env, kt_val *out, char *msg, size_t msgsz)
{
	if (msg && msgsz)
		msg[0] = '\0';
	return eval_node(e, env, out, msg, msgsz);
}

uint64_t kt_expr_deps(const kt_expr *e) { return e->deps; }

int kt_expr_slot(const kt_expr *e) { return e->op == OP_SLOT ? e->slot : -1; }

/* ---- printing ---- */

/* The shortest text that reads back as exactly f, always with a '.' or an exponent. */
static void put_double(kt_buf *out, double f)
{
	char tmp[40];
	for (int prec = 1; prec <= 17; prec++) {
		snprintf(tmp, sizeof tmp, "%.*g", prec, f);
		if (strtod(tmp, NULL) == f)
			break;
	}
	kt_buf_puts(out, tmp);
	if (!strpbrk(tmp, ".eEn")) /* 'n': inf and nan cannot come from a literal, kept for safety */
		kt_buf_puts(out, ".0");
}

typedef struct printer {
	const kt_scope *sc;      /* canon: slot names */
	const char *const *slot_c; /* C: slot texts */
} printer;

static void print_node(const kt_expr *e, const printer *pr, kt_buf *out);

static void print_call_c(const kt_expr *e, const printer *pr, kt_buf *out)
{
	const struct fninfo *fi = &fns[e->fn];
	int fa = 0;
	for (int i = 0; i < e->nargs; i++)
		fa |= e->args[i]->isf;
	if ((e->fn == FN_FLOOR || e->fn == FN_CEIL) && !fa) {
		print_node(e->args[0], pr, out); /* floor/ceil of an integer is the integer */
		return;
	}
	const char *cf = fa ? fi->c_float : fi->c_int;
	/* min/max with several arguments nest: KT_MIN(KT_MIN(a, b), c). */
	int nest = e->nargs > 2 ? e->nargs - 1 : 1;
	for (int i = 0; i < nest; i++)
		kt_buf_printf(out, "%s(", cf);
	for (int i = 0; i < e->nargs; i++) {
		if (i > 0)
			kt_buf_puts(out, ", ");
		if (fa && e->args[i]->isf == 0)
			kt_buf_puts(out, "(double)");
		print_node(e->args[i], pr, out);
		if (i > 0 && e->nargs > 2)
			kt_buf_putc(out, ')');
	}
	if (e->nargs <= 2)
		kt_buf_putc(out, ')');
}

static void print_node(const kt_expr *e, const printer *pr, kt_buf *out)
{
	int c = pr->slot_c != NULL;
	switch (e->op) {
	case OP_INT:
		kt_buf_printf(out, c ? "((int64_t)%lld)" : "%lld", (long long)e->i);
		return;
	case OP_FLOAT:
		put_double(out, e->f);
		return;
	case OP_STR:
		if (c)
			kt_buf_printf(out, "((int64_t)%lld)", (long long)e->i);
		else
			kt_buf_printf(out, "\"%.*s\"", (int)e->textlen, e->text);
		return;
	case OP_SLOT:
		if (c)
			kt_buf_printf(out, "((int64_t)(%s))", pr->slot_c[e->slot]);
		else if (pr->sc && e->slot < pr->sc->n && pr->sc->names[e->slot])
			kt_buf_puts(out, pr->sc->names[e->slot]);
		else
			kt_buf_printf(out, "$%d", e->slot);
		return;
	case OP_NEG:
	case OP_POS:
	case OP_NOT:
		kt_buf_putc(out, '(');
		kt_buf_putc(out, e->op == OP_NEG ? '-' : e->op == OP_POS ? '+' : '!');
		print_node(e->a, pr, out);
		kt_buf_putc(out, ')');
		return;
	case OP_COND:
		kt_buf_putc(out, '(');
		print_node(e->a, pr, out);
		kt_buf_puts(out, " ? ");
		print_node(e->b, pr, out);
		kt_buf_puts(out, " : ");
		print_node(e->c, pr, out);
		kt_buf_putc(out, ')');
		return;
	case OP_CALL:
		if (c) {
			print_call_c(e, pr, out);
			return;
		}
		kt_buf_printf(out, "%s(", fns[e->fn].name);
		for (int i = 0; i < e->nargs; i++) {
			if (i > 0)
				kt_buf_puts(out, ", ");
			print_node(e->args[i], pr, out);
		}
		kt_buf_putc(out, ')');
		return;
	default:
		kt_buf_putc(out, '(');
		print_node(e->a, pr, out);
		kt_buf_printf(out, " %s ", op_text(e->op));
		print_node(e->b, pr, out);
		kt_buf_putc(out, ')');
		return;
	}
}

void kt_expr_canon(const kt_expr *e, const kt_scope *sc, kt_buf *out)
{
	printer pr = {sc, NULL};
	print_node(e, &pr, out);
}

void kt_expr_to_c(const kt_expr *e, const char *const *slot_c, kt_buf *out)
{
	printer pr = {NULL, slot_c};
	print_node(e, &pr, out);
}

const char *kt_expr_c_prelude(void)
{
	return "#ifndef KT_EXPR_PRELUDE\n"
	       "#define KT_EXPR_PRELUDE\n"
	       "#include <math.h>\n"
	       "#include <stdint.h>\n"
	       "#ifdef __CUDACC__\n"
	       "#define KT_EXPR_FN static inline __host__ __device__\n"
	       "#else\n"
	       "#define KT_EXPR_FN static inline\n"
	       "#endif\n"
	       "KT_EXPR_FN int64_t KT_MIN(int64_t a, int64_t b) { return b < a ? b : a; }\n"
	       "KT_EXPR_FN int64_t KT_MAX(int64_t a, int64_t b) { return b > a ? b : a; }\n"
	       "KT_EXPR_FN double KT_FMIN(double a, double b) { return b < a ? b : a; }\n"
	       "KT_EXPR_FN double KT_FMAX(double a, double b) { return b > a ? b : a; }\n"
	       "KT_EXPR_FN int64_t KT_ABS(int64_t a) { return a < 0 ? -a : a; }\n"
	       "KT_EXPR_FN double KT_FABS(double a) { return fabs(a); }\n"
	       "KT_EXPR_FN int64_t KT_FLOOR(double a) { return (int64_t)floor(a); }\n"
	       "KT_EXPR_FN int64_t KT_CEIL(double a) { return (int64_t)ceil(a); }\n"
	       "KT_EXPR_FN int64_t KT_CDIV(int64_t a, int64_t b)\n"
	       "{\n"
	       "\tint64_t q = a / b;\n"
	       "\treturn (a % b != 0 && ((a < 0) == (b < 0))) ? q + 1 : q;\n"
	       "}\n"
	       "KT_EXPR_FN int64_t KT_LOG2(int64_t a)\n"
	       "{\n"
	       "\tint64_t r = 0;\n"
	       "\twhile (a > 1) {\n"
	       "\t\ta >>= 1;\n"
	       "\t\tr++;\n"
	       "\t}\n"
	       "\treturn r;\n"
	       "}\n"
	       "KT_EXPR_FN int64_t KT_POW2(int64_t a) { return (int64_t)1 << a; }\n"
	       "#endif\n";
}
