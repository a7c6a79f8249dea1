/* test_expr.c - the expression language: parsing, precedence, int vs float semantics, errors
 * with offsets, canonical text, dependencies, and kt_expr_to_c checked against kt_expr_eval by
 * compiling the generated C with the system compiler. */
#include <errno.h>
#include <fcntl.h>
#include <spawn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "expr.h"
#include "util.h"

extern char **environ;

/* A scope: rows, hidden, BLOCK, ALGO (a choice of twopass, onepass), x, y, z. */
static const char *const names[] = {"rows", "hidden", "BLOCK", "ALGO", "x", "y", "z"};
enum { S_ROWS, S_HIDDEN, S_BLOCK, S_ALGO, S_X, S_Y, S_Z, NSLOTS };
static const char *const algo_choices[] = {"twopass", "onepass"};

static int is_choice(void *ctx, int slot) { return slot == S_ALGO; }

static int choice(void *ctx, int slot, const char *lit, size_t len)
{
	for (int i = 0; i < 2; i++)
		if (strlen(algo_choices[i]) == len && !memcmp(algo_choices[i], lit, len))
			return i;
	return -1;
}

static const kt_scope scope = {names, NSLOTS, is_choice, choice, NULL, NULL};
static kt_arena *arena;
static kt_val env[KT_MAX_SLOTS];

static kt_expr *parse(const char *s)
{
	size_t off;
	char msg[256];
	kt_expr *e = kt_expr_parse(arena, s, strlen(s), &scope, &off, msg, sizeof msg);
	if (!e)
		fprintf(stderr, "parse failed: %s: at %zu: %s\n", s, off, msg);
	return e;
}

/* Evaluates s; returns the value with type, or {type=-1} when it does not parse or evaluate. */
static kt_val eval(const char *s)
{
	kt_expr *e = parse(s);
	kt_val v = {(kt_vtype)-1, 0, 0};
	char msg[256];
	if (e && kt_expr_eval(e, env, &v, msg, sizeof msg) != 0) {
		fprintf(stderr, "eval failed: %s: %s\n", s, msg);
		v.type = (kt_vtype)-1;
	}
	return v;
}

#define CHECK_IEVAL(s, want)                                  \
	do {                                                  \
		kt_val v_ = eval(s);                          \
		CHECK_INT(v_.type, KT_VINT);                  \
		CHECK_INT(v_.i, want);                        \
	} while (0)

#define CHECK_FEVAL(s, want)                                  \
	do {                                                  \
		kt_val v_ = eval(s);                          \
		CHECK_INT(v_.type, KT_VFLOAT);                \
		CHECK(v_.f == (want));                        \
	} while (0)

static void test_values(void)
{
	CHECK_IEVAL("1 + 2 * 3", 7);
	CHECK_IEVAL("(1 + 2) * 3", 9);
	CHECK_IEVAL("10 - 3 - 2", 5);
	CHECK_IEVAL("64 / 4 / 2", 8);
	CHECK_IEVAL("7 / 2", 3);
	CHECK_IEVAL("-7 / 2", -3);
	CHECK_IEVAL("-7 % 3", -1);
	CHECK_IEVAL("7 % -3", 1);
	CHECK_FEVAL("7 / 2.0", 3.5);
	CHECK_FEVAL("1e-6 * 2", 2e-6);
	CHECK_FEVAL(".5 + 1", 1.5);
	CHECK_IEVAL("1 < 2 == 2 < 3", 1);   /* C: (1<2) == (2<3) */
	CHECK_IEVAL("3 > 2 > 1", 0);        /* C: (3>2) > 1 */
	CHECK_IEVAL("1 || 0 && 0", 1);      /* && binds tighter */
	CHECK_IEVAL("!0 + !5", 1);
	CHECK_IEVAL("-(-3)", 3);
	CHECK_IEVAL("+4", 4);
	CHECK_IEVAL("0 ? 1 : 0 ? 2 : 3", 3); /* right-associative */
	CHECK_FEVAL("1 ? 2 : 3.5", 2.0);     /* the common type of the arms is double */
	CHECK_IEVAL("2.5 > 2", 1);
	CHECK_IEVAL("true + true + false", 2);
	CHECK_IEVAL("cdiv(10, 4)", 3);
	CHECK_IEVAL("cdiv(8, 4)", 2);
	CHECK_IEVAL("cdiv(-10, 4)", -2);
	CHECK_IEVAL("cdiv(-10, -4)", 3);
	CHECK_IEVAL("log2(1024)", 10);
	CHECK_IEVAL("log2(1000)", 9);
	CHECK_IEVAL("log2(1)", 0);
	CHECK_IEVAL("pow2(10)", 1024);
	CHECK_IEVAL("min(3, 1, 2)", 1);
	CHECK_IEVAL("max(3, 9, 2, 7)", 9);
	CHECK_FEVAL("max(1, 2.5)", 2.5);
	CHECK_FEVAL("min(1, 2.5)", 1.0);
	CHECK_IEVAL("abs(-4)", 4);
	CHECK_FEVAL("abs(-4.5)", 4.5);
	CHECK_IEVAL("floor(2.7)", 2);
	CHECK_IEVAL("floor(-2.5)", -3);
	CHECK_IEVAL("ceil(2.1)", 3);
	CHECK_IEVAL("ceil(7)", 7);
	CHECK_IEVAL("9223372036854775807", INT64_MAX);

	env[S_ROWS] = kt_int(4096);
	env[S_HIDDEN] = kt_int(4096);
	env[S_BLOCK] = kt_int(256);
	env[S_ALGO] = kt_int(1);
	CHECK_IEVAL("hidden % (BLOCK * 2) == 0", 1);
	CHECK_IEVAL("rows*hidden", 4096 * 4096);
	CHECK_IEVAL("ALGO == \"onepass\"", 1);
	CHECK_IEVAL("\"twopass\" != ALGO", 1);
	CHECK_IEVAL("ALGO == \"twopass\" ? 1 : BLOCK", 256);
	CHECK_IEVAL("BLOCK <= 1024 && hidden % BLOCK == 0", 1);
	/* Short-circuit: the right side is not evaluated. */
	CHECK_IEVAL("rows == 0 && hidden / rows", 0);
	CHECK_IEVAL("rows != 0 || 1 / 0", 1);
	CHECK_IEVAL("1 ? 2 : 1 / 0", 2);
}

static void check_parse_error(const char *s, size_t want_off, const char *want_msg, int line)
{
	size_t off = 9999;
	char msg[256];
	kt_expr *e = kt_expr_parse(arena, s, strlen(s), &scope, &off, msg, sizeof msg);
	if (e || off != want_off || strcmp(msg, want_msg) != 0) {
		check_failed++;
		fprintf(stderr, "%s:%d: parse of <%s>: got %s at %zu: %s\nwant error at %zu: %s\n", __FILE__, line, s,
			e ? "success" : "error", off, msg, want_off, want_msg);
	} else {
		check_passed++;
	}
}
#define CHECK_PERR(s, off, msg) check_parse_error(s, off, msg, __LINE__)

static void test_parse_errors(void)
{
	CHECK_PERR("1 +", 3, "expected an expression (a number, a name or '(') but found the end of the expression");
	CHECK_PERR("", 0, "expected an expression (a number, a name or '(') but found the end of the expression");
	CHECK_PERR("rows * hiden", 7, "unknown name 'hiden'; did you mean 'hidden'?");
	CHECK_PERR("rows * colums", 7, "unknown name 'colums' (expected a shape symbol, a parameter or a number)");
	CHECK_PERR("(1 + 2", 6, "expected ')' but found the end of the expression");
	CHECK_PERR("min(1, 2", 8, "expected ',' or ')' in the argument list but found the end of the expression");
	CHECK_PERR("min(1)", 0, "min() takes at least 2 arguments, not 1");
	CHECK_PERR("cdiv(1, 2, 3)", 0, "cdiv() takes 2 arguments, not 3");
	CHECK_PERR("abs(1, 2)", 0, "abs() takes 1 argument, not 2");
	CHECK_PERR("1 + cdiv(1.5, 2)", 9, "cdiv() needs integer arguments, but this one is a floating-point value");
	CHECK_PERR("rows % 2.0", 7, "'%' needs integer operands, but this one is a floating-point value");
	CHECK_PERR("sqrt(1)", 0,
		   "unknown function 'sqrt' (expected one of: abs, cdiv, ceil, floor, log2, max, min, pow2)");
	CHECK_PERR("mni(1, 2)", 0, "unknown function 'mni'; did you mean 'min'?");
	CHECK_PERR("min + 1", 4, "expected '(' after the function name 'min'");
	CHECK_PERR("ALGO == \"three\"", 8, "\"three\" is not a choice of 'ALGO'");
	CHECK_PERR("rows == \"x\"", 8, "a string may only be compared with a choice parameter (e.g. ALGO == \"onepass\")");
	CHECK_PERR("\"onepass\"", 0, "a string may only be compared with a choice parameter (e.g. ALGO == \"onepass\")");
	CHECK_PERR("ALGO < \"onepass\"", 7, "a string may only be compared with a choice parameter (e.g. ALGO == \"onepass\")");
	CHECK_PERR("ALGO == \"one", 8, "unterminated string (expected a closing '\"')");
	CHECK_PERR("2x + 1", 0, "bad number '2x' (expected digits, optionally with a fraction and an exponent, like 256 or 1e-6)");
	CHECK_PERR("1e", 0, "bad number '1e' (expected digits, optionally with a fraction and an exponent, like 256 or 1e-6)");
	CHECK_PERR("99999999999999999999", 0, "integer '99999999999999999999' is out of range (expected at most 9223372036854775807)");
	CHECK_PERR("1e999", 0, "number '1e999' is out of range (expected a finite double)");
	CHECK_PERR("rows $ 2", 5, "expected an operator or the end of the expression but found '$'");
	CHECK_PERR("rows = 2", 5, "expected an operator or the end of the expression but found '='; did you mean '=='?");
	CHECK_PERR("rows 2", 5, "expected an operator or the end of the expression but found '2'");
	CHECK_PERR("1 ? 2", 5, "expected ':' of the conditional '?:' but found the end of the expression");
	CHECK_PERR("!", 1, "expected an expression (a number, a name or '(') but found the end of the expression");

	/* Deep nesting is an error, not a stack overflow. */
	kt_buf deep = {0};
	for (int i = 0; i < 100000; i++)
		kt_buf_puts(&deep, "(-");
	size_t off;
	char msg[256];
	CHECK(kt_expr_parse(arena, deep.data, deep.len, &scope, &off, msg, sizeof msg) == NULL);
	CHECK(strstr(msg, "nested too deeply") != NULL);
	kt_buf_free(&deep);
}

static void check_eval_error(const char *s, const char *want, int line)
{
	kt_expr *e = parse(s);
	kt_val v;
	char msg[256] = "";
	if (!e || kt_expr_eval(e, env, &v, msg, sizeof msg) == 0 || strcmp(msg, want) != 0) {
		check_failed++;
		fprintf(stderr, "%s:%d: eval of <%s>: got <%s>, want <%s>\n", __FILE__, line, s, msg, want);
	} else {
		check_passed++;
	}
}

static void test_eval_errors(void)
{
	env[S_ROWS] = kt_int(8);
	check_eval_error("1 / (rows - rows)", "division by zero", __LINE__);
	check_eval_error("1.5 / (rows - rows)", "division by zero", __LINE__);
	check_eval_error("rows % 0", "modulo by zero", __LINE__);
	check_eval_error("cdiv(rows, 0)", "division by zero in cdiv(8, 0)", __LINE__);
	check_eval_error("log2(rows - 8)", "log2() of a non-positive value (0)", __LINE__);
	check_eval_error("pow2(63)", "pow2() exponent 63 is outside 0..62", __LINE__);
	check_eval_error("9223372036854775807 + 1", "integer overflow in 9223372036854775807 + 1", __LINE__);
	check_eval_error("-9223372036854775807 - 2", "integer overflow in -9223372036854775807 - 2", __LINE__);
	check_eval_error("4294967296 * 4294967296", "integer overflow in 4294967296 * 4294967296", __LINE__);
	check_eval_error("floor(1e300)", "floor(1e+300) is out of the integer range", __LINE__);
}

static void test_canon_deps_slot(void)
{
	kt_buf a = {0}, b = {0};
	kt_expr_canon(parse("rows*hidden+1"), &scope, &a);
	kt_expr_canon(parse("  rows *  hidden\t+ 1 "), &scope, &b);
	CHECK_STR(a.data, "((rows * hidden) + 1)");
	CHECK_STR(a.data, b.data);
	kt_buf_reset(&a);
	kt_expr_canon(parse("min( BLOCK ,1024, rows)>=-2 ? ALGO==\"onepass\" : !x"), &scope, &a);
	CHECK_STR(a.data, "((min(BLOCK, 1024, rows) >= (-2)) ? (ALGO == \"onepass\") : (!x))");
	kt_buf_reset(&a);
	kt_expr_canon(parse("1e-6 + 2.50 + 3."), &scope, &a);
	CHECK_STR(a.data, "((1e-06 + 2.5) + 3.0)");
	kt_buf_reset(&a);
	kt_expr_canon(parse("0.1"), &scope, &a);
	CHECK_STR(a.data, "0.1");

	CHECK(kt_expr_deps(parse("rows * BLOCK")) == ((1u << S_ROWS) | (1u << S_BLOCK)));
	CHECK(kt_expr_deps(parse("min(1, z) + cdiv(x, 2)")) == ((1u << S_X) | (1u << S_Z)));
	CHECK(kt_expr_deps(parse("ALGO == \"onepass\"")) == (1u << S_ALGO));
	CHECK(kt_expr_deps(parse("42")) == 0);
	CHECK_INT(kt_expr_slot(parse("hidden")), S_HIDDEN);
	CHECK_INT(kt_expr_slot(parse(" ( hidden ) ")), S_HIDDEN);
	CHECK_INT(kt_expr_slot(parse("hidden + 0")), -1);
	CHECK_INT(kt_expr_slot(parse("3")), -1);

	/* C text: slots substituted, min with three arguments nested, float min for mixed types. */
	const char *slot_c[NSLOTS] = {"r", "h", "8", "1", "vx", "vy", "vz"};
	kt_buf_reset(&a);
	kt_expr_to_c(parse("min(rows, hidden, 3)"), slot_c, &a);
	CHECK_STR(a.data, "KT_MIN(KT_MIN(((int64_t)(r)), ((int64_t)(h))), ((int64_t)3))");
	kt_buf_reset(&a);
	kt_expr_to_c(parse("max(rows, 0.5) + ceil(rows / 3.0) + floor(rows)"), slot_c, &a);
	CHECK_STR(a.data, "((KT_FMAX((double)((int64_t)(r)), 0.5) + KT_CEIL((((int64_t)(r)) / 3.0))) + ((int64_t)(r)))");
	kt_buf_free(&a);
	kt_buf_free(&b);
}

static uint64_t rng_state = 0x9E3779B97F4A7C15u;
static unsigned rnd(unsigned n)
{
	rng_state ^= rng_state << 13;
	rng_state ^= rng_state >> 7;
	rng_state ^= rng_state << 17;
	return (unsigned)(rng_state % n);
}

/* Random token soup: the parser never crashes, reports an offset inside the text, and what it
 * accepts prints canonically (parsing the canonical text gives the same text again). */
static void test_garbage(void)
{
	static const char *const toks[] = {"rows", "hidden", "BLOCK", "ALGO", "x", "1", "0", "2.5", "1e3", "(", ")",
					   ",", "+", "-", "*", "/", "%", "<", "<=", "==", "!=", "!", "&&", "||", "?",
					   ":", "min(", "cdiv(", "log2(", "\"onepass\"", "\"", " ", "=", "&", "$", "."};
	const char *slot_c[NSLOTS] = {"r", "h", "b", "a", "x", "y", "z"};
	int accepted = 0;
	for (int it = 0; it < 20000; it++) {
		kt_buf src = {0}, c1 = {0}, c2 = {0}, cc = {0};
		int n = 1 + (int)rnd(12);
		for (int i = 0; i < n; i++)
			kt_buf_puts(&src, toks[rnd(sizeof toks / sizeof toks[0])]);
		size_t off = 0;
		char msg[256];
		kt_expr *e = kt_expr_parse(arena, src.data, src.len, &scope, &off, msg, sizeof msg);
		if (!e) {
			CHECK(off <= src.len && msg[0] != '\0');
		} else {
			accepted++;
			kt_val v;
			(void)kt_expr_eval(e, env, &v, msg, sizeof msg);
			kt_expr_canon(e, &scope, &c1);
			kt_expr *e2 = kt_expr_parse(arena, c1.data, c1.len, &scope, &off, msg, sizeof msg);
			CHECK(e2 != NULL);
			if (e2)
				kt_expr_canon(e2, &scope, &c2);
			CHECK_STR(kt_buf_str(&c1), kt_buf_str(&c2));
			kt_expr_to_c(e, slot_c, &cc);
		}
		kt_buf_free(&src);
		kt_buf_free(&c1);
		kt_buf_free(&c2);
		kt_buf_free(&cc);
	}
	CHECK(accepted > 100);
}

/* ---- kt_expr_to_c against kt_expr_eval, through the system C compiler ---- */

#define RANDOM_EXPRS 3000
#define RANDOM_DEPTH 5


/* Writes one random expression twice: in the template language (kt) and as plain C with the
 * same tokens (raw), so that C's own precedence checks ours.  *plain stays 1 while the
 * expression uses nothing that plain C spells differently (function calls). */
static void gen(int depth, kt_buf *kt, kt_buf *raw, int *plain)
{
	static const char *const atoms_f[] = {"0.5", "2.25", "3.0", "1e2", "0.1", "7.5"};
	static const char *const vars[] = {"x", "y", "z", "rows"};
	static const char *const binops[] = {"+", "-", "*", "/", "%", "<", "<=", ">", ">=", "==", "!=", "&&", "||"};
	static const char *const fns[] = {"min", "max", "cdiv", "abs", "floor", "ceil", "log2", "pow2"};
	unsigned k = depth == 0 ? rnd(4) : rnd(11);
	if (k < 4) {
		switch (k) {
		case 0: {
			unsigned v = rnd(21);
			kt_buf_printf(kt, "%u", v);
			kt_buf_printf(raw, "INT64_C(%u)", v);
			break;
		}
		case 1: {
			const char *f = atoms_f[rnd(6)];
			kt_buf_puts(kt, f);
			kt_buf_puts(raw, f);
			break;
		}
		default: {
			const char *v = vars[rnd(4)];
			kt_buf_puts(kt, v);
			kt_buf_puts(raw, v);
		}
		}
		return;
	}
	int paren = rnd(2);
	if (paren) {
		kt_buf_putc(kt, '(');
		kt_buf_putc(raw, '(');
	}
	if (k < 8) {
		gen(depth - 1, kt, raw, plain);
		const char *o = binops[rnd(13)];
		kt_buf_printf(kt, " %s ", o);
		kt_buf_printf(raw, " %s ", o);
		gen(depth - 1, kt, raw, plain);
	} else if (k == 8) {
		const char *o = rnd(3) == 0 ? "! " : rnd(2) ? "- " : "+ ";
		kt_buf_puts(kt, o);
		kt_buf_puts(raw, o);
		gen(depth - 1, kt, raw, plain);
	} else if (k == 9) {
		gen(depth - 1, kt, raw, plain);
		kt_buf_puts(kt, " ? ");
		kt_buf_puts(raw, " ? ");
		gen(depth - 1, kt, raw, plain);
		kt_buf_puts(kt, " : ");
		kt_buf_puts(raw, " : ");
		gen(depth - 1, kt, raw, plain);
	} else {
		unsigned f = rnd(8);
		int nargs = f < 2 ? 2 + (int)rnd(3) : f == 2 ? 2 : 1;
		*plain = 0;
		kt_buf_printf(kt, "%s(", fns[f]);
		for (int i = 0; i < nargs; i++) {
			if (i)
				kt_buf_puts(kt, ", ");
			if (f == 7) { /* pow2: keep the exponent small so most cases evaluate */
				kt_buf_printf(kt, "%u", rnd(40));
				continue;
			}
			gen(depth - 1, kt, raw, plain);
		}
		kt_buf_putc(kt, ')');
	}
	if (paren) {
		kt_buf_putc(kt, ')');
		kt_buf_putc(raw, ')');
	}
}

/* Runs argv with stdout to out_path (NULL: inherit).  Returns the exit status, -1 if it could
 * not be started (errno set), -2 if it died of a signal. */
static int spawn(char *const argv[], const char *out_path)
{
	posix_spawn_file_actions_t fa;
	posix_spawn_file_actions_init(&fa);
	if (out_path)
		posix_spawn_file_actions_addopen(&fa, 1, out_path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	pid_t pid;
	int rc = posix_spawnp(&pid, argv[0], &fa, NULL, argv, environ);
	posix_spawn_file_actions_destroy(&fa);
	if (rc != 0) {
		errno = rc;
		return -1;
	}
	int st;
	while (waitpid(pid, &st, 0) < 0)
		if (errno != EINTR)
			return -1;
	return WIFEXITED(st) ? WEXITSTATUS(st) : -2;
}

static void put_result(kt_buf *b, int i, kt_val v)
{
	if (v.type == KT_VINT)
		kt_buf_printf(b, "%d i %lld\n", i, (long long)v.i);
	else
		kt_buf_printf(b, "%d f %a\n", i, v.f);
}

static void test_to_c_matches_eval(void)
{
	const char *cc = getenv("CC") && getenv("CC")[0] ? getenv("CC") : "cc";
	kt_err terr = {0};
	char *dir = kt_temp_dir(getenv("TMPDIR"), "kt-test-expr", &terr);
	if (!dir) {
		fprintf(stderr, "to_c check skipped: %s\n", terr.msg);
		return;
	}
	char *src = kt_path_join(dir, "exprs.c"), *exe = kt_path_join(dir, "exprs"), *out = kt_path_join(dir, "out.txt");
	static const int64_t xs[] = {7, -3, 0, 12};
	env[S_X] = kt_int(xs[0]);
	env[S_Y] = kt_int(xs[1]);
	env[S_Z] = kt_int(xs[2]);
	env[S_ROWS] = kt_int(xs[3]);
	const char *slot_c[NSLOTS] = {"rows", "0", "0", "0", "x", "y", "z"};

	kt_buf prog = {0}, want = {0}, e_kt = {0}, e_raw = {0};
	kt_buf_puts(&prog, kt_expr_c_prelude());
	kt_buf_puts(&prog, "#include <stdio.h>\n#define TAG(e) _Generic((e), double: 'f', default: 'i')\n");
	kt_buf_printf(&prog, "static volatile int64_t vx = %lld, vy = %lld, vz = %lld, vrows = %lld;\n", (long long)xs[0],
		      (long long)xs[1], (long long)xs[2], (long long)xs[3]);
	kt_buf_puts(&prog, "#define OUT(i, e) (TAG(e) == 'f' ? printf(\"%d f %a\\n\", i, (double)(e)) "
			   ": printf(\"%d i %lld\\n\", i, (long long)(e)))\n");
	kt_buf_puts(&prog, "int main(void)\n{\n\tint64_t x = vx, y = vy, z = vz, rows = vrows;\n");
	int n = 0, nplain = 0, nparsed = 0;
	for (int i = 0; i < RANDOM_EXPRS; i++) {
		int plain = 1;
		kt_buf_reset(&e_kt);
		kt_buf_reset(&e_raw);
		gen(RANDOM_DEPTH, &e_kt, &e_raw, &plain);
		size_t off;
		char msg[256];
		kt_expr *e = kt_expr_parse(arena, e_kt.data, e_kt.len, &scope, &off, msg, sizeof msg);
		if (!e)
			continue; /* '%' or an integer-only function with a float operand */
		nparsed++;
		kt_val v;
		if (kt_expr_eval(e, env, &v, msg, sizeof msg) != 0)
			continue; /* division by zero, log2 of 0, ...: C would be undefined */
		kt_buf c = {0};
		kt_expr_to_c(e, slot_c, &c);
		kt_buf_printf(&prog, "\t/* %s */\n\tOUT(%d, %s);\n", e_kt.data, n, c.data);
		put_result(&want, n, v);
		kt_buf_free(&c);
		n++;
		if (plain) { /* the same text, read by a C compiler */
			kt_buf_printf(&prog, "\tOUT(%d, %s);\n", n, e_raw.data);
			put_result(&want, n, v);
			n++;
			nplain++;
		}
	}
	kt_buf_puts(&prog, "\treturn 0;\n}\n");
	kt_err err = {0};
	CHECK(nparsed > RANDOM_EXPRS / 2);
	CHECK(n > RANDOM_EXPRS / 2);
	CHECK(nplain > RANDOM_EXPRS / 10);
	if (kt_write_atomic(src, prog.data, prog.len, &err) != 0) {
		CHECK(!"cannot write the test program");
		fprintf(stderr, "%s\n", err.msg);
		goto done;
	}
	char *cc_argv[] = {(char *)cc, "-std=c11", "-O1", "-ffp-contract=off", "-w", "-o", exe, src, "-lm", NULL};
	int rc = spawn(cc_argv, NULL);
	if (rc == -1) {
		fprintf(stderr, "to_c check skipped: no C compiler: cannot run '%s': %s (set CC to one)\n", cc, strerror(errno));
		goto done;
	}
	CHECK_INT(rc, 0);
	if (rc != 0)
		goto done;
	char *run_argv[] = {exe, NULL};
	CHECK_INT(spawn(run_argv, out), 0);
	kt_buf got = {0};
	if (kt_read_file(out, &got, &err) == 0) {
		CHECK_STR(got.data, want.data);
		printf("to_c check: %d results (%d through plain C) compiled with %s agree with kt_expr_eval\n", n, nplain, cc);
	} else {
		CHECK(!"no output from the test program");
	}
	kt_buf_free(&got);
done:
	if (!check_failed) {
		unlink(src);
		unlink(exe);
		unlink(out);
		rmdir(dir);
	} else {
		fprintf(stderr, "to_c check: files kept in %s\n", dir);
	}
	kt_buf_free(&prog);
	kt_buf_free(&want);
	kt_buf_free(&e_kt);
	kt_buf_free(&e_raw);
	free(src);
	free(exe);
	free(out);
	free(dir);
}

int main(void)
{
	arena = kt_arena_new();
	test_values();
	test_parse_errors();
	test_eval_errors();
	test_canon_deps_slot();
	test_garbage();
	test_to_c_matches_eval();
	kt_arena_free(arena);
	return check_done();
}
