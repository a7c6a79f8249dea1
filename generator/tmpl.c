/* tmpl.c - parsing annotated kernel templates (see tmpl.h and docs/template-language.md).
 *
 * The source is scanned once for `// @kt` lines.  Declarations (kernel, shape, type, option,
 * param) are handled first, so that every other directive can use every name whatever the order
 * of the lines; then the directives holding expressions; then the checks across directives.
 * Each problem becomes a diagnostic and parsing goes on, so one run reports them all; the
 * diagnostics are printed in source order at the end.  Pass 2 is in tmpl_expr.c, the checks
 * across directives and the scans of the code in tmpl_check.c; what they share, in tmpl_int.h.
 */
#include "tmpl_int.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "diag.h"


const kt_etype_info kt_etypes[KT_NETYPES] = {
	[KT_HALF] = {"half", "__half", "__half_raw", 2, 1},
	[KT_BF16] = {"bfloat16", "__nv_bfloat16", "__nv_bfloat16_raw", 2, 1},
	[KT_F32] = {"float", "float", "float", 4, 1},
	[KT_F64] = {"double", "double", "double", 8, 1},
	[KT_I32] = {"int", "int", "int", 4, 0},
	[KT_I64] = {"int64", "int64_t", "int64_t", 8, 0},
	[KT_U8] = {"uint8", "uint8_t", "uint8_t", 1, 0},
};

/* ---- the directive table ---- */


static void d_kernel(pctx *, const dline *);
static void d_shape(pctx *, const dline *);
static void d_type(pctx *, const dline *);
static void d_option(pctx *, const dline *);
static void d_param(pctx *, const dline *);

/* Sorted by name (the unknown-directive message lists them in this order). */
static const struct directive {
	const char *name;
	int pass;   /* 1: declarations, 2: everything that holds expressions */
	int single; /* may appear once */
	void (*fn)(pctx *, const dline *);
} dirs[] = {
	{"arg", 2, 0, tp_d_arg},           {"block", 2, 1, tp_d_block}, {"bytes", 2, 1, tp_d_bytes},
	{"flops", 2, 1, tp_d_flops},       {"grid", 2, 1, tp_d_grid},   {"kernel", 1, 1, d_kernel},
	{"l2", 1, 1, tp_d_l2},             {"launch", 1, 1, tp_d_launch},
	{"option", 1, 0, d_option},     {"param", 1, 0, d_param}, {"reference", 2, 1, tp_d_reference},
	{"require", 2, 0, tp_d_require},   {"shape", 1, 1, d_shape}, {"smem", 2, 1, tp_d_smem},
	{"tolerance", 2, 1, tp_d_tolerance}, {"type", 1, 0, d_type},
};
_Static_assert(sizeof dirs / sizeof dirs[0] == NDIRS, "NDIRS in tmpl_int.h counts the directives");

/* Names that cannot be declared: the functions and constants of the expression language. */
const char *const tp_reserved[] = {"abs", "cdiv", "ceil", "false", "floor", "log2", "max", "min", "pow2", "sm", "sm_a", "sms", "true"};
const size_t tp_nreserved = sizeof tp_reserved / sizeof tp_reserved[0];

/* ---- diagnostics ---- */

void tp_error_at(pctx *pc, size_t off, const char *fmt, ...)
{
	pc->nerrors++;
	if (pc->ndiags >= MAX_ERRORS)
		return;
	char msg[1024];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	kt_loc at = tp_loc_of(pc, off);
	kt_buf b = {0};
	kt_diag_error(&b, pc->t->path, pc->src, pc->len, at.line, at.col, "%s", msg);
	pc->diags[pc->ndiags++] = (diagent){off, pc->ndiags, kt_buf_detach(&b)};
}

/* Line and column of a byte offset: a binary search in the line starts (scan_directives). */
kt_loc tp_loc_of(const pctx *pc, size_t off)
{
	int lo = 0, hi = pc->nbols - 1;
	if (off > pc->len)
		off = pc->len;
	while (lo < hi) {
		int mid = (lo + hi + 1) / 2;
		if (pc->bols[mid] <= off)
			lo = mid;
		else
			hi = mid - 1;
	}
	return (kt_loc){lo + 1, (int)(off - pc->bols[lo]) + 1};
}

static int line_of(const pctx *pc, size_t off) { return tp_loc_of(pc, off).line; }

/* ---- lexing inside a directive ---- */

int tp_is_blank(char c) { return c == ' ' || c == '\t' || c == '\r'; }
static int is_id0(char c) { return isalpha((unsigned char)c) || c == '_'; }
int tp_is_id(char c) { return isalnum((unsigned char)c) || c == '_'; }

size_t tp_skip_blanks(const pctx *pc, size_t pos, size_t end)
{
	while (pos < end && tp_is_blank(pc->src[pos]))
		pos++;
	return pos;
}

/* Length of the identifier at pos (0 if none). */
size_t tp_ident_len(const pctx *pc, size_t pos, size_t end)
{
	size_t n = 0;
	if (pos < end && is_id0(pc->src[pos]))
		while (pos + n < end && tp_is_id(pc->src[pos + n]))
			n++;
	return n;
}

int tp_word_is(const pctx *pc, size_t pos, size_t n, const char *w)
{
	return strlen(w) == n && memcmp(pc->src + pos, w, n) == 0;
}

/* "'tok'" or "the end of the line", for messages: a name, a number, one bracket or comma,
 * or a run of other symbols. */
static const char *found(const pctx *pc, size_t pos, size_t end, char *buf, size_t bufsz)
{
	pos = tp_skip_blanks(pc, pos, end);
	if (pos >= end)
		return "the end of the line";
	const char *s = pc->src + pos;
	size_t n = 1;
	if (tp_is_id(s[0]) || s[0] == '.')
		while (pos + n < end && (tp_is_id(s[n]) || s[n] == '.'))
			n++;
	else if (!strchr(",()[]=\"", s[0]))
		while (pos + n < end && !tp_is_blank(s[n]) && !tp_is_id(s[n]) && !strchr(",()[]=\"", s[n]))
			n++;
	if (n > 40)
		n = 40;
	kt_diag_quote(buf, bufsz, s, n);
	return buf;
}

void tp_expected(pctx *pc, size_t pos, size_t end, const char *what)
{
	char b[192];
	pos = tp_skip_blanks(pc, pos, end);
	tp_error_at(pc, pos, "expected %s but found %s", what, found(pc, pos, end, b, sizeof b));
}

/* Reads an identifier at *pos (after blanks) into [*start, *start + *n).  0 on success. */
int tp_take_ident(pctx *pc, size_t *pos, size_t end, size_t *start, size_t *n, const char *what)
{
	*pos = tp_skip_blanks(pc, *pos, end);
	*n = tp_ident_len(pc, *pos, end);
	if (*n == 0) {
		tp_expected(pc, *pos, end, what);
		return -1;
	}
	*start = *pos;
	*pos += *n;
	return 0;
}

/* Accepts the keyword w at *pos (after blanks). */
int tp_take_word(const pctx *pc, size_t *pos, size_t end, const char *w)
{
	size_t p = tp_skip_blanks(pc, *pos, end);
	size_t n = tp_ident_len(pc, p, end);
	if (!tp_word_is(pc, p, n, w))
		return 0;
	*pos = p + n;
	return 1;
}

int tp_take_char(const pctx *pc, size_t *pos, size_t end, char c)
{
	size_t p = tp_skip_blanks(pc, *pos, end);
	if (p >= end || pc->src[p] != c)
		return 0;
	*pos = p + 1;
	return 1;
}

/* An error unless only blanks are left. */
int tp_expect_end(pctx *pc, size_t pos, size_t end, const char *what)
{
	pos = tp_skip_blanks(pc, pos, end);
	if (pos >= end)
		return 0;
	tp_expected(pc, pos, end, what);
	return -1;
}

/* A decimal integer with an optional sign; must not run into a name or a fraction. */
static int take_int(pctx *pc, size_t *pos, size_t end, int64_t *v, const char *what)
{
	size_t p = tp_skip_blanks(pc, *pos, end), q = p;
	if (q < end && (pc->src[q] == '-' || pc->src[q] == '+'))
		q++;
	size_t d = q;
	while (q < end && isdigit((unsigned char)pc->src[q]))
		q++;
	int dotdot = q + 1 < end && pc->src[q] == '.' && pc->src[q + 1] == '.';
	if (q == d || (q < end && (tp_is_id(pc->src[q]) || (pc->src[q] == '.' && !dotdot)))) {
		size_t e = q;
		while (e < end && !tp_is_blank(pc->src[e]) && pc->src[e] != ',')
			e++;
		if (q == d) {
			tp_expected(pc, p, end, what);
			return -1;
		}
		tp_error_at(pc, p, "bad integer '%.*s' (expected %s)", (int)(e - p), pc->src + p, what);
		return -1;
	}
	const char *s = pc->src + p;
	size_t n = q - p;
	if (*s == '+') {
		s++;
		n--;
	}
	if (kt_parse_i64(s, n, v) != 0) {
		tp_error_at(pc, p, "integer '%.*s' is out of range", (int)(q - p), pc->src + p);
		return -1;
	}
	*pos = q;
	return 0;
}

/* A number (int or float) such as 1e-2 or -0.5. */
int tp_take_number(pctx *pc, size_t *pos, size_t end, double *v, const char *what)
{
	size_t p = tp_skip_blanks(pc, *pos, end);
	char c = p < end ? pc->src[p] : '\0';
	if (!(isdigit((unsigned char)c) || c == '.' || c == '-' || c == '+')) {
		tp_expected(pc, p, end, what);
		return -1;
	}
	char *stop;
	errno = 0;
	double x = strtod(pc->src + p, &stop);
	size_t q = (size_t)(stop - pc->src);
	if (stop == pc->src + p || q > end || errno == ERANGE || (q < end && (tp_is_id(pc->src[q]) || pc->src[q] == '.'))) {
		size_t e = p;
		while (e < end && !tp_is_blank(pc->src[e]) && !strchr(",()", pc->src[e]))
			e++;
		if (e == p)
			e = p + 1;
		tp_error_at(pc, p, "bad number '%.*s' (expected %s)", (int)(e - p), pc->src + p, what);
		return -1;
	}
	*v = x;
	*pos = q;
	return 0;
}

/* Tracks nesting in brackets and string literals across a scan: true when c stands at the top
 * level (outside both, and not itself a quote or an opening or closing bracket). */
static int at_top(int *depth, int *instr, char c)
{
	if (*instr) {
		*instr = c != '"';
		return 0;
	}
	if (c == '"') {
		*instr = 1;
		return 0;
	}
	if (c == '(' || c == '[') {
		++*depth;
		return 0;
	}
	if ((c == ')' || c == ']') && *depth > 0) {
		--*depth;
		return 0;
	}
	return *depth == 0;
}

/* Splits src[pos..end) at commas outside parentheses, brackets and strings. */
int tp_split_commas(const pctx *pc, size_t pos, size_t end, size_t *starts, size_t *ends, int max)
{
	int n = 0, depth = 0, instr = 0;
	size_t s = pos;
	for (size_t i = pos; i <= end; i++) {
		char c = i < end ? pc->src[i] : ',';
		int in_string = instr, top = at_top(&depth, &instr, c);
		if (!in_string && c == ',' && (top || i == end)) {
			if (n < max) {
				starts[n] = s;
				ends[n] = i;
			}
			n++;
			s = i + 1;
		}
	}
	return n;
}

/* The first identifier equal to w outside parentheses and strings in src[pos..end), or end. */
size_t tp_find_keyword(const pctx *pc, size_t pos, size_t end, const char *w)
{
	int depth = 0, instr = 0;
	for (size_t i = pos; i < end; i++) {
		char c = pc->src[i];
		if (at_top(&depth, &instr, c) && is_id0(c) && (i == pos || !tp_is_id(pc->src[i - 1]))) {
			size_t n = tp_ident_len(pc, i, end);
			if (tp_word_is(pc, i, n, w))
				return i;
			i += n - 1;
		}
	}
	return end;
}

/* ---- names ---- */

const char *tp_suggest(const char *name, size_t n, const char *const *cands, int ncands, char *buf, size_t bufsz)
{
	const char *near = kt_diag_closest(name, n, cands, ncands);
	if (!near)
		return "";
	snprintf(buf, bufsz, "; did you mean '%s'?", near);
	return buf;
}

/* What a declared name is: a slot (shape symbol, parameter), a type symbol or an option. */
typedef enum decl_kind { DECL_SLOT, DECL_TYPE, DECL_OPTION } decl_kind;

/* Registers a declared name; an error when it is reserved or declared before. */
static const char *declare(pctx *pc, size_t off, size_t n, const char *what, decl_kind kind)
{
	if (kind == DECL_SLOT && pc->nshapes + pc->nparams >= KT_MAX_SLOTS - 1) { /* the last slot is sms's */
		tp_error_at(pc, off, "too many shape symbols and parameters (at most %d together)", KT_MAX_SLOTS - 1);
		return NULL;
	}
	for (size_t i = 0; i < tp_nreserved; i++)
		if (tp_word_is(pc, off, n, tp_reserved[i])) {
			tp_error_at(pc, off, "'%.*s' is reserved by the expression language (expected another name for the %s)",
				 (int)n, pc->src + off, what);
			return NULL;
		}
	for (int i = 0; i < pc->nnames; i++)
		if (tp_word_is(pc, off, n, pc->names[i].name)) {
			tp_error_at(pc, off, "'%.*s' is already declared (first declared at line %d)", (int)n, pc->src + off,
				 line_of(pc, pc->names[i].off));
			return NULL;
		}
	if (kind == DECL_TYPE && pc->ntypes == MAX_TYPES) {
		tp_error_at(pc, off, "too many type symbols (at most %d)", MAX_TYPES);
		return NULL;
	}
	if (kind == DECL_OPTION && pc->noptions == MAX_OPTIONS) {
		tp_error_at(pc, off, "too many options (at most %d)", MAX_OPTIONS);
		return NULL;
	}
	const char *s = kt_arena_strndup(pc->a, pc->src + off, n);
	pc->names[pc->nnames++] = (decl){s, off};
	return s;
}

int tp_find_etype(const char *s, size_t n)
{
	for (int i = 0; i < KT_NETYPES; i++)
		if (strlen(kt_etypes[i].name) == n && !memcmp(kt_etypes[i].name, s, n))
			return i;
	return -1;
}

void tp_unknown_etype(pctx *pc, size_t off, size_t n, int allow_syms)
{
	const char *cands[KT_NETYPES + MAX_TYPES];
	int nc = 0;
	for (int i = 0; i < KT_NETYPES; i++)
		cands[nc++] = kt_etypes[i].name;
	for (int i = 0; allow_syms && i < pc->ntypes; i++)
		cands[nc++] = pc->types[i].name;
	char b[80];
	const char *s = tp_suggest(pc->src + off, n, cands, nc, b, sizeof b);
	if (*s)
		tp_error_at(pc, off, "unknown element type '%.*s'%s", (int)n, pc->src + off, s);
	else
		tp_error_at(pc, off, "unknown element type '%.*s' (expected one of: half, bfloat16, float, double, int, int64, uint8%s)",
			 (int)n, pc->src + off, allow_syms ? ", or a type symbol" : "");
}

/* ---- pass 1: declarations ---- */

static void d_kernel(pctx *pc, const dline *d)
{
	size_t pos = d->pos, s, n;
	if (tp_take_ident(pc, &pos, d->end, &s, &n, "the name of the __global__ function to tune") != 0)
		return;
	if (tp_expect_end(pc, pos, d->end, "the end of the line after the kernel name") != 0)
		return;
	pc->t->kernel = kt_arena_strndup(pc->a, pc->src + s, n);
	pc->t->kernel_loc = tp_loc_of(pc, s);
	pc->kernel_off = s;
}

static void d_shape(pctx *pc, const dline *d)
{
	size_t pos = d->pos, s, n;
	int count = 0;
	for (;;) {
		if (tp_take_ident(pc, &pos, d->end, &s, &n, count ? "a shape symbol or the end of the line" : "the names of the shape symbols (e.g. rows hidden)") != 0)
			return;
		const char *name = declare(pc, s, n, "shape symbol", DECL_SLOT);
		if (name) {
			pc->shape_off[pc->nshapes] = s;
			pc->shapes[pc->nshapes++] = name;
		}
		count++;
		tp_take_char(pc, &pos, d->end, ',');
		if (tp_skip_blanks(pc, pos, d->end) >= d->end)
			return;
	}
}

/* `in TYPE, TYPE... [default TYPE]` of a type symbol named src[s..s+n). */
static int parse_type_list(pctx *pc, size_t *pos, size_t end, size_t s, size_t n, kt_etype *opts, int *nopts, int *def)
{
	size_t vs, vn;
	if (!tp_take_word(pc, pos, end, "in")) {
		tp_expected(pc, *pos, end, "'in' and the element types the symbol may stand for (e.g. T in half, bfloat16)");
		return -1;
	}
	do {
		if (tp_take_ident(pc, pos, end, &vs, &vn, "an element type (half, bfloat16, float, double, int, int64, uint8)") != 0)
			return -1;
		int e = tp_find_etype(pc->src + vs, vn);
		if (e < 0) {
			tp_unknown_etype(pc, vs, vn, 0);
			return -1;
		}
		for (int i = 0; i < *nopts; i++)
			if (opts[i] == (kt_etype)e) {
				tp_error_at(pc, vs, "'%.*s' is listed twice (expected distinct element types)", (int)vn, pc->src + vs);
				return -1;
			}
		opts[(*nopts)++] = (kt_etype)e;
	} while (tp_take_char(pc, pos, end, ','));
	if (tp_take_word(pc, pos, end, "default")) {
		if (tp_take_ident(pc, pos, end, &vs, &vn, "the default element type after 'default'") != 0)
			return -1;
		int e = tp_find_etype(pc->src + vs, vn);
		for (*def = 0; *def < *nopts && opts[*def] != (kt_etype)e; (*def)++)
			;
		if (*def == *nopts) {
			*def = 0;
			tp_error_at(pc, vs, "default '%.*s' is not one of the types listed for '%.*s'", (int)vn, pc->src + vs, (int)n,
				 pc->src + s);
			return -1;
		}
	}
	return tp_expect_end(pc, *pos, end, "',', 'default' or the end of the line");
}

static void d_type(pctx *pc, const dline *d)
{
	size_t pos = d->pos, s, n;
	if (tp_take_ident(pc, &pos, d->end, &s, &n, "the name of the type symbol (e.g. T)") != 0)
		return;
	kt_etype opts[KT_NETYPES];
	int nopts = 0, def = 0;
	/* After an error the symbol is still declared (the template fails anyway), so that the
	 * arguments written with it do not report errors of their own. */
	if (parse_type_list(pc, &pos, d->end, s, n, opts, &nopts, &def) != 0 && nopts == 0)
		opts[nopts++] = KT_F32;
	const char *name = declare(pc, s, n, "type symbol", DECL_TYPE);
	if (!name)
		return;
	pc->type_off[pc->ntypes] = s;
	kt_typesym *ts = &pc->types[pc->ntypes++];
	ts->name = name;
	ts->nopts = nopts;
	ts->opts = memcpy(kt_arena_alloc(pc->a, sizeof opts), opts, sizeof opts);
	ts->chosen = opts[def];
	ts->loc = tp_loc_of(pc, s);
}

/* The values of a parameter while it is parsed (malloc'd; copied into the arena at the end). */
typedef struct vlist {
	int64_t *v;
	const char **names; /* choices: the name of each value */
	int n, cap;
} vlist;

/* Adds a value; `listed` values are checked against the earlier ones (a range needs no check). */
static int vlist_add(pctx *pc, vlist *l, int64_t v, const char *name, size_t off, int listed)
{
	if (l->n == MAX_VALUES) {
		tp_error_at(pc, off, "too many values (at most %d)", MAX_VALUES);
		return -1;
	}
	for (int i = 0; listed && i < l->n; i++)
		if (name ? !strcmp(l->names[i], name) : l->v[i] == v) {
			if (name)
				tp_error_at(pc, off, "'%s' is listed twice (expected distinct values)", name);
			else
				tp_error_at(pc, off, "%lld is listed twice (expected distinct values)", (long long)v);
			return -1;
		}
	if (l->n == l->cap) {
		l->cap = l->cap ? 2 * l->cap : 16;
		l->v = kt_xrealloc(l->v, sizeof *l->v * (size_t)l->cap);
		l->names = kt_xrealloc(l->names, sizeof *l->names * (size_t)l->cap);
	}
	l->v[l->n] = name ? l->n : v;
	l->names[l->n++] = name;
	return 0;
}

/* A..B [pow2 | step S] after the first integer A was read. */
static int parse_range(pctx *pc, size_t *pos, size_t end, int64_t a, size_t aoff, vlist *l)
{
	int64_t b, step = 1;
	*pos += 2; /* ".." */
	if (take_int(pc, pos, end, &b, "the upper bound of the range after '..'") != 0)
		return -1;
	if (b < a) {
		tp_error_at(pc, aoff, "empty range %lld..%lld (expected the lower bound first)", (long long)a, (long long)b);
		return -1;
	}
	if (tp_take_word(pc, pos, end, "pow2")) {
		for (int64_t p = 1; p > 0 && p <= b; p *= 2)
			if (p >= a && vlist_add(pc, l, p, NULL, aoff, 0) != 0)
				return -1;
		if (l->n == 0) {
			tp_error_at(pc, aoff, "no power of two lies in %lld..%lld", (long long)a, (long long)b);
			return -1;
		}
		return 0;
	}
	if (tp_take_word(pc, pos, end, "step")) {
		size_t soff = tp_skip_blanks(pc, *pos, end);
		if (take_int(pc, pos, end, &step, "the step of the range after 'step'") != 0)
			return -1;
		if (step <= 0) {
			tp_error_at(pc, soff, "step %lld is not positive (expected a step of 1 or more)", (long long)step);
			return -1;
		}
	}
	if ((uint64_t)(b - a) / (uint64_t)step >= MAX_VALUES) {
		tp_error_at(pc, aoff, "range %lld..%lld has more than %d values", (long long)a, (long long)b, MAX_VALUES);
		return -1;
	}
	for (int64_t v = a; v <= b; v += step) {
		if (vlist_add(pc, l, v, NULL, aoff, 0) != 0)
			return -1;
		if (v > INT64_MAX - step)
			break;
	}
	return 0;
}

/* The values after `in`: integers, a range, or names. */
static int parse_values(pctx *pc, size_t *pos, size_t end, kt_param *p, vlist *l)
{
	size_t first = tp_skip_blanks(pc, *pos, end);
	size_t fn = tp_ident_len(pc, first, end);
	if (fn && !tp_word_is(pc, first, fn, "default")) {
		p->type = KT_PCHOICE;
		size_t s, n;
		do {
			if (tp_take_ident(pc, pos, end, &s, &n, "a choice name (the choices are names like twopass, onepass)") != 0)
				return -1;
			if (vlist_add(pc, l, 0, kt_arena_strndup(pc->a, pc->src + s, n), s, 1) != 0)
				return -1;
		} while (tp_take_char(pc, pos, end, ','));
		return 0;
	}
	p->type = KT_PINT;
	int64_t v;
	if (take_int(pc, pos, end, &v, "a list of values after 'in' (e.g. 1, 2, 4 or 64..1024 pow2 or twopass, onepass)") != 0)
		return -1;
	if (*pos + 1 < end && pc->src[*pos] == '.' && pc->src[*pos + 1] == '.')
		return parse_range(pc, pos, end, v, first, l);
	if (vlist_add(pc, l, v, NULL, first, 1) != 0)
		return -1;
	while (tp_take_char(pc, pos, end, ',')) {
		size_t off = tp_skip_blanks(pc, *pos, end);
		if (take_int(pc, pos, end, &v, "an integer after ','") != 0 || vlist_add(pc, l, v, NULL, off, 1) != 0)
			return -1;
	}
	return 0;
}

/* `default V` of a parameter: sets p->def. */
static int parse_default(pctx *pc, size_t *pos, size_t end, kt_param *p, const vlist *l)
{
	size_t off = tp_skip_blanks(pc, *pos, end);
	if (p->type == KT_PINT) {
		int64_t v;
		if (take_int(pc, pos, end, &v, "the default value after 'default'") != 0)
			return -1;
		for (p->def = 0; p->def < l->n && l->v[p->def] != v; p->def++)
			;
	} else {
		size_t s, n;
		if (tp_take_ident(pc, pos, end, &s, &n, p->type == KT_PBOOL ? "true or false after 'default'" : "the default choice after 'default'") != 0)
			return -1;
		for (p->def = 0; p->def < l->n && !tp_word_is(pc, s, n, p->type == KT_PBOOL ? (l->v[p->def] ? "true" : "false") : l->names[p->def]); p->def++)
			;
	}
	if (p->def < l->n)
		return 0;
	kt_buf vals = {0};
	for (int i = 0; i < l->n && i < MAX_LISTED; i++) {
		if (p->type == KT_PINT)
			kt_buf_printf(&vals, "%s%lld", i ? ", " : "", (long long)l->v[i]);
		else
			kt_buf_printf(&vals, "%s%s", i ? ", " : "", p->type == KT_PBOOL ? (l->v[i] ? "true" : "false") : l->names[i]);
	}
	tp_error_at(pc, off, "the default is not one of the values of '%s' (expected one of: %s%s)", p->name,
		 kt_buf_str(&vals), l->n > MAX_LISTED ? ", ..." : "");
	kt_buf_free(&vals);
	return -1;
}

/* Everything after the name of a parameter: `bool` or `in VALUES`, then `[default V]`. */
static int parse_param_body(pctx *pc, size_t *pos, size_t end, kt_param *p, vlist *l, size_t name_off)
{
	if (tp_take_word(pc, pos, end, "bool")) {
		p->type = KT_PBOOL;
		vlist_add(pc, l, 0, NULL, name_off, 0);
		vlist_add(pc, l, 1, NULL, name_off, 0);
	} else if (!tp_take_word(pc, pos, end, "in")) {
		tp_expected(pc, *pos, end, "'in' and a list of values, or 'bool', after the parameter name");
		return -1;
	} else if (parse_values(pc, pos, end, p, l) != 0) {
		return -1;
	}
	if (tp_take_word(pc, pos, end, "default") && parse_default(pc, pos, end, p, l) != 0)
		return -1;
	return tp_expect_end(pc, *pos, end, p->type == KT_PBOOL ? "'default' or the end of the line" : "',', 'default' or the end of the line");
}

static void d_param(pctx *pc, const dline *d)
{
	size_t pos = d->pos, s, n;
	if (tp_take_ident(pc, &pos, d->end, &s, &n, "the name of the parameter (e.g. BLOCK)") != 0)
		return;
	kt_param p = {0};
	p.name = kt_arena_strndup(pc->a, pc->src + s, n);
	p.loc = tp_loc_of(pc, s);
	vlist l = {0};
	/* After an error the parameter is still declared, with the values read so far (the
	 * template fails anyway), so that its uses do not report errors of their own. */
	if (parse_param_body(pc, &pos, d->end, &p, &l, s) != 0) {
		p.def = 0;
		if (l.n == 0) {
			p.type = KT_PINT;
			vlist_add(pc, &l, 0, NULL, s, 0);
		}
	}
	if (declare(pc, s, n, "parameter", DECL_SLOT)) {
		p.nvals = l.n;
		p.vals = memcpy(kt_arena_alloc(pc->a, sizeof(int64_t) * (size_t)l.n), l.v, sizeof(int64_t) * (size_t)l.n);
		if (p.type == KT_PCHOICE)
			p.choices = memcpy(kt_arena_alloc(pc->a, sizeof(char *) * (size_t)l.n), l.names, sizeof(char *) * (size_t)l.n);
		pc->params[pc->nparams++] = p;
	}
	free(l.v);
	free(l.names);
}

/* Everything after the name of an option: `in CHOICE, CHOICE...`, then `[default CHOICE]`; the
 * choices are read as a choice parameter's are. */
static int parse_option_body(pctx *pc, size_t *pos, size_t end, kt_param *p, vlist *l)
{
	if (!tp_take_word(pc, pos, end, "in")) {
		tp_expected(pc, *pos, end, "'in' and the choices the caller may make (e.g. LSE in natural, base2)");
		return -1;
	}
	size_t first = tp_skip_blanks(pc, *pos, end), n = tp_ident_len(pc, first, end);
	if (n == 0 || tp_word_is(pc, first, n, "default")) {
		tp_expected(pc, first, end, "a choice name (an option's choices are names like natural, base2)");
		return -1;
	}
	if (parse_values(pc, pos, end, p, l) != 0)
		return -1;
	if (tp_take_word(pc, pos, end, "default") && parse_default(pc, pos, end, p, l) != 0)
		return -1;
	return tp_expect_end(pc, *pos, end, "',', 'default' or the end of the line");
}

static void d_option(pctx *pc, const dline *d)
{
	size_t pos = d->pos, s, n;
	if (tp_take_ident(pc, &pos, d->end, &s, &n, "the name of the option (e.g. LSE)") != 0)
		return;
	kt_param p = {.type = KT_PCHOICE};
	p.name = kt_arena_strndup(pc->a, pc->src + s, n);
	vlist l = {0};
	/* After an error the option is still declared, with the choices read so far (the template
	 * fails anyway), so that an argument of its name is not reported twice. */
	if (parse_option_body(pc, &pos, d->end, &p, &l) != 0)
		p.def = 0;
	if (declare(pc, s, n, "option", DECL_OPTION)) {
		pc->option_off[pc->noptions] = s;
		kt_option *o = &pc->options[pc->noptions++];
		size_t sz = sizeof(char *) * (size_t)l.n;
		o->name = p.name;
		o->nchoices = l.n;
		o->choices = l.n ? memcpy(kt_arena_alloc(pc->a, sz), l.names, sz) : NULL;
		o->chosen = p.def;
		o->loc = tp_loc_of(pc, s);
	}
	free(l.v);
	free(l.names);
}

/* ---- between the passes: slots and the scope ---- */

static int scope_is_choice(void *ctx, int slot)
{
	const kt_tmpl *t = ctx;
	return slot >= t->nshapes && slot < t->nshapes + t->nparams && t->params[slot - t->nshapes].type == KT_PCHOICE;
}

static int scope_choice(void *ctx, int slot, const char *lit, size_t len)
{
	const kt_tmpl *t = ctx;
	const kt_param *p = &t->params[slot - t->nshapes];
	for (int i = 0; i < p->nvals; i++)
		if (strlen(p->choices[i]) == len && !memcmp(p->choices[i], lit, len))
			return i;
	return -1;
}

/* The compile target's names: constants in constraints; elsewhere an error (a grid or a size
 * that depended on the target would differ between the tuner and the worker that runs it). */
static int target_name(const char *name, size_t len)
{
	return (len == 2 && !memcmp(name, "sm", 2)) || (len == 4 && !memcmp(name, "sm_a", 4));
}

/* An option's name: an error in every expression (the code sees an option as macros only). */
static int option_name(const kt_tmpl *t, const char *name, size_t len, const char **why)
{
	for (int i = 0; i < t->noptions; i++)
		if (strlen(t->options[i].name) == len && !memcmp(t->options[i].name, name, len)) {
			*why = "is an option, fixed by the caller: the code sees it as macros (#if NAME_IS_<choice>), "
			       "expressions cannot use it";
			return 1;
		}
	return 0;
}

/* `sms` outside the launch geometry: an error (the space and the constraints are the same on
 * every GPU; only how many blocks a launch takes may follow the GPU it runs on). */
static int sms_name(const char *name, size_t len, const char **why)
{
	if (len != 3 || memcmp(name, "sms", 3))
		return 0;
	*why = "(the GPU's multiprocessor count) may be used only in the launch geometry ('@kt grid', 'block', 'smem')";
	return 1;
}

static int scope_target(void *ctx, const char *name, size_t len, int64_t *out, const char **why)
{
	const kt_tmpl *t = ctx;
	int sm = 0, sm_a = 0;
	if (option_name(t, name, len, why) || sms_name(name, len, why))
		return -1;
	if (!target_name(name, len))
		return 0;
	if (t->arch[0])
		kt_arch_parse(t->arch, &sm, &sm_a);
	*out = len == 2 ? sm : sm_a;
	(void)why;
	return 1;
}

/* The launch geometry's names beyond its slots (sms is one of them there): none. */
static int scope_launch(void *ctx, const char *name, size_t len, int64_t *out, const char **why)
{
	(void)out;
	if (option_name(ctx, name, len, why))
		return -1;
	*why = "(the compile target) may be used only in a constraint ('@kt require')";
	return target_name(name, len) ? -1 : 0;
}

static int scope_no_target(void *ctx, const char *name, size_t len, int64_t *out, const char **why)
{
	return sms_name(name, len, why) ? -1 : scope_launch(ctx, name, len, out, why);
}

static void build_scope(pctx *pc)
{
	kt_tmpl *t = pc->t;
	for (int i = 0; i < pc->nshapes; i++)
		pc->slot_names[i] = pc->shapes[i];
	for (int i = 0; i < pc->nparams; i++) {
		pc->params[i].slot = pc->nshapes + i;
		pc->slot_names[pc->nshapes + i] = pc->params[i].name;
	}
	t->nshapes = pc->nshapes;
	t->shapes = pc->shapes;
	t->nparams = pc->nparams;
	t->params = pc->params;
	t->ntypes = pc->ntypes;
	t->types = pc->types;
	t->noptions = pc->noptions;
	t->options = pc->options;
	t->scope = (kt_scope){pc->slot_names, pc->nshapes + pc->nparams, scope_is_choice, scope_choice, scope_no_target, t};
	pc->req_scope = t->scope;
	pc->req_scope.constant = scope_target;
	pc->slot_names[pc->nshapes + pc->nparams] = "sms";
	t->launch_scope = t->scope;
	t->launch_scope.n++;
	t->launch_scope.constant = scope_launch;
}

/* ---- the source: directive lines ---- */

int tp_find_dir(const char *s, size_t n)
{
	for (int i = 0; i < NDIRS; i++)
		if (strlen(dirs[i].name) == n && !memcmp(dirs[i].name, s, n))
			return i;
	return -1;
}

static void unknown_directive(pctx *pc, size_t off, size_t n)
{
	const char *names[NDIRS];
	for (int i = 0; i < NDIRS; i++)
		names[i] = dirs[i].name;
	char b[64];
	const char *s = tp_suggest(pc->src + off, n, names, NDIRS, b, sizeof b);
	if (*s) {
		tp_error_at(pc, off, "unknown directive '%.*s'%s", (int)n, pc->src + off, s);
		return;
	}
	kt_buf all = {0};
	for (int i = 0; i < NDIRS; i++)
		kt_buf_printf(&all, "%s%s", i ? ", " : "", dirs[i].name);
	tp_error_at(pc, off, "unknown directive '%.*s' (expected one of: %s)", (int)n, pc->src + off, all.data);
	kt_buf_free(&all);
}

/* Records the directive on the line src[bol..eol), if it is one. */
static void scan_line(pctx *pc, size_t bol, size_t eol)
{
	size_t p = tp_skip_blanks(pc, bol, eol);
	if (p + 2 > eol || pc->src[p] != '/' || pc->src[p + 1] != '/')
		return;
	p = tp_skip_blanks(pc, p + 2, eol);
	if (p + 3 > eol || memcmp(pc->src + p, "@kt", 3) != 0 || (p + 3 < eol && !tp_is_blank(pc->src[p + 3])))
		return;
	p = tp_skip_blanks(pc, p + 3, eol);
	size_t n = tp_ident_len(pc, p, eol);
	if (n == 0) {
		tp_expected(pc, p, eol, "a directive name after '@kt' (e.g. kernel, param, arg)");
		return;
	}
	int d = tp_find_dir(pc->src + p, n);
	if (d < 0) {
		unknown_directive(pc, p, n);
		return;
	}
	if (dirs[d].single && pc->seen[d]) {
		tp_error_at(pc, p, "a second '%s' directive (the first is at line %d; expected one)", dirs[d].name,
			 line_of(pc, pc->lines[pc->seen[d] - 1].name_off));
		return;
	}
	while (eol > p + n && tp_is_blank(pc->src[eol - 1]))
		eol--;
	if (pc->nlines == pc->caplines) {
		pc->caplines = pc->caplines ? 2 * pc->caplines : 32;
		pc->lines = kt_xrealloc(pc->lines, sizeof *pc->lines * (size_t)pc->caplines);
	}
	pc->lines[pc->nlines++] = (dline){d, p, p + n, eol};
	if (!pc->seen[d])
		pc->seen[d] = pc->nlines;
}

/* Records where each line starts (for loc_of), then the directive lines. */
static void scan_directives(pctx *pc)
{
	int cap = 64;
	pc->bols = kt_xmalloc(sizeof *pc->bols * (size_t)cap);
	pc->bols[pc->nbols++] = 0;
	for (size_t i = 0; i < pc->len; i++)
		if (pc->src[i] == '\n') {
			if (pc->nbols == cap) {
				cap *= 2;
				pc->bols = kt_xrealloc(pc->bols, sizeof *pc->bols * (size_t)cap);
			}
			pc->bols[pc->nbols++] = i + 1;
		}
	for (int ln = 0; ln < pc->nbols; ln++) {
		size_t bol = pc->bols[ln], eol = ln + 1 < pc->nbols ? pc->bols[ln + 1] - 1 : pc->len;
		scan_line(pc, bol, eol);
	}
}

/* ---- driver ---- */

static int diag_cmp(const void *x, const void *y)
{
	const diagent *a = x, *b = y;
	if (a->off != b->off)
		return a->off < b->off ? -1 : 1;
	return a->seq - b->seq;
}

static void finish_diags(pctx *pc, kt_buf *diags)
{
	qsort(pc->diags, (size_t)pc->ndiags, sizeof *pc->diags, diag_cmp);
	for (int i = 0; i < pc->ndiags; i++) {
		if (diags)
			kt_buf_puts(diags, pc->diags[i].text);
		free(pc->diags[i].text);
	}
	if (diags && pc->nerrors > pc->ndiags)
		kt_buf_printf(diags, "%s: error: %d more errors not shown\n", pc->t->path, pc->nerrors - pc->ndiags);
}

static void run_pass(pctx *pc, int pass)
{
	for (int i = 0; i < pc->nlines; i++) {
		const struct directive *d = &dirs[pc->lines[i].dir];
		int before = pc->nerrors;
		if (d->pass == pass)
			d->fn(pc, &pc->lines[i]);
		if (d->fn == tp_d_arg)
			pc->arg_errors += pc->nerrors - before;
	}
}

/* Moves what pass 2 collected into the template (arrays copied into the arena). */
static void publish(pctx *pc)
{
	kt_tmpl *t = pc->t;
	kt_arena *a = pc->a;
	t->nargs = pc->nargs;
	t->args = memcpy(kt_arena_alloc(a, sizeof(kt_arg) * (size_t)pc->nargs), pc->args, sizeof(kt_arg) * (size_t)pc->nargs);
	for (int i = 0; i < pc->nargs; i++)
		if (pc->args[i].typesym >= 0)
			((kt_arg *)t->args)[i].type = pc->types[pc->args[i].typesym].chosen;
	t->nreq = pc->nreq;
	t->req = memcpy(kt_arena_alloc(a, sizeof(void *) * (size_t)pc->nreq), pc->req, sizeof(void *) * (size_t)pc->nreq);
	t->req_text = memcpy(kt_arena_alloc(a, sizeof(char *) * (size_t)pc->nreq), pc->req_text, sizeof(char *) * (size_t)pc->nreq);
	t->req_loc = memcpy(kt_arena_alloc(a, sizeof(kt_loc) * (size_t)pc->nreq), pc->req_loc, sizeof(kt_loc) * (size_t)pc->nreq);
	size_t np = sizeof(kt_param) * (size_t)pc->nparams, ns = sizeof(char *) * (size_t)pc->nshapes;
	t->params = memcpy(kt_arena_alloc(a, np), pc->params, np);
	t->shapes = memcpy(kt_arena_alloc(a, ns), pc->shapes, ns);
	t->types = memcpy(kt_arena_alloc(a, sizeof(kt_typesym) * (size_t)pc->ntypes), pc->types, sizeof(kt_typesym) * (size_t)pc->ntypes);
	t->options = memcpy(kt_arena_alloc(a, sizeof(kt_option) * (size_t)pc->noptions), pc->options, sizeof(kt_option) * (size_t)pc->noptions);
	size_t nn = sizeof(char *) * (size_t)(pc->nshapes + pc->nparams + 1); /* and sms */
	t->scope.names = t->launch_scope.names = memcpy(kt_arena_alloc(a, nn), pc->slot_names, nn);
}

kt_tmpl *kt_tmpl_parse_text(const char *path, const char *text, size_t len, const kt_tmpl_opts *opts, kt_buf *diags,
			    kt_err *err)
{
	kt_arena *a = kt_arena_new();
	kt_tmpl *t = kt_arena_alloc(a, sizeof *t);
	t->arena = a;
	t->path = kt_arena_strdup(a, path);
	t->src = kt_arena_strndup(a, text, len);
	t->srclen = len;
	t->atol = t->rtol = DEFAULT_TOL;
	kt_measure_unset(&t->measure);
	if (opts && opts->arch) {
		if (kt_arch_check(opts->arch, err) != 0) {
			kt_tmpl_free(t);
			return NULL;
		}
		snprintf(t->arch, sizeof t->arch, "%s", opts->arch);
	}
	t->sms = opts && opts->sms > 0 ? opts->sms : 0;
	pctx *pc = kt_xcalloc(1, sizeof *pc);
	pc->t = t;
	pc->a = a;
	pc->src = t->src;
	pc->len = len;
	pc->opts = opts;
	pc->diags = kt_xcalloc(MAX_ERRORS, sizeof *pc->diags);
	scan_directives(pc);
	run_pass(pc, 1);
	tp_apply_choices(pc);
	build_scope(pc);
	run_pass(pc, 2);
	tp_check_across(pc);
	publish(pc);
	tp_scan_code(pc);
	finish_diags(pc, diags);
	int nerr = pc->nerrors;
	free(pc->lines);
	free(pc->bols);
	free(pc->diags);
	free(pc);
	if (nerr) {
		kt_fail(err, "%s: %d error%s", path, nerr, nerr == 1 ? "" : "s");
		kt_tmpl_free(t);
		return NULL;
	}
	return t;
}

kt_tmpl *kt_tmpl_parse(const char *path, const kt_tmpl_opts *opts, kt_buf *diags, kt_err *err)
{
	kt_buf text = {0};
	if (kt_read_file(path, &text, err) != 0) {
		kt_buf_free(&text);
		return NULL;
	}
	kt_tmpl *t = kt_tmpl_parse_text(path, text.data, text.len, opts, diags, err);
	kt_buf_free(&text);
	return t;
}

void kt_tmpl_free(kt_tmpl *t)
{
	if (t)
		kt_arena_free(t->arena);
}
