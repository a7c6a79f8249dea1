/* test_space.c - the constrained enumerator against "all combinations, then filter".
 *
 * Random spaces are written as template text (random parameters, value lists and constraints)
 * and parsed, so the enumerator is tested on what the parser really produces.  The brute force
 * visits every combination in lexicographic order and evaluates every constraint on a full
 * environment; the walk must produce exactly the same list. */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "check.h"
#include "space.h"
#include "tmpl.h"

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;

static uint64_t rnd(void)
{
	rng_state ^= rng_state << 13;
	rng_state ^= rng_state >> 7;
	rng_state ^= rng_state << 17;
	return rng_state;
}

static int rndn(int n) { return (int)(rnd() % (uint64_t)n); }

/* ---- random templates --------------------------------------------------------------- */

enum { MAXP = 5 };

typedef struct rspace {
	int np;
	int kind[MAXP]; /* 0 int, 1 bool, 2 choice */
	int nvals[MAXP];
	int64_t vals[MAXP][6];
} rspace;

static const char *const choice_names[] = {"alpha", "beta", "gamma", "delta"};

/* A random integer-valued term: a parameter, a shape symbol or a literal. */
static void rand_atom(const rspace *s, kt_buf *b)
{
	int r = rndn(6);
	int p = rndn(s->np);
	if (r < 3 && s->kind[p] != 2)
		kt_buf_printf(b, "P%d", p);
	else if (r == 3)
		kt_buf_puts(b, rndn(2) ? "n" : "m");
	else
		kt_buf_printf(b, "%d", rndn(9));
}

/* A random integer expression; divisors are always positive literals. */
static void rand_int(const rspace *s, int depth, kt_buf *b)
{
	if (depth == 0) {
		rand_atom(s, b);
		return;
	}
	static const char *const ops[] = {"+", "-", "*"};
	int r = rndn(7);
	if (r < 3) {
		kt_buf_putc(b, '(');
		rand_int(s, depth - 1, b);
		kt_buf_printf(b, " %s ", ops[r]);
		rand_int(s, depth - 1, b);
		kt_buf_putc(b, ')');
	} else if (r == 3) {
		kt_buf_putc(b, '(');
		rand_int(s, depth - 1, b);
		kt_buf_printf(b, " %% %d)", 1 + rndn(5));
	} else if (r == 4) {
		kt_buf_printf(b, "cdiv(");
		rand_int(s, depth - 1, b);
		kt_buf_printf(b, ", %d)", 1 + rndn(4));
	} else if (r == 5) {
		kt_buf_printf(b, "%s(", rndn(2) ? "min" : "max");
		rand_int(s, depth - 1, b);
		kt_buf_puts(b, ", ");
		rand_int(s, depth - 1, b);
		kt_buf_putc(b, ')');
	} else {
		rand_atom(s, b);
	}
}

/* A random condition: comparisons, choice tests, logic. */
static void rand_cond(const rspace *s, int depth, kt_buf *b)
{
	static const char *const cmp[] = {"==", "!=", "<", "<=", ">", ">="};
	int r = rndn(depth > 0 ? 5 : 3);
	int p = rndn(s->np);
	if (r == 0 && s->kind[p] == 2) {
		kt_buf_printf(b, "P%d %s \"%s\"", p, rndn(2) ? "==" : "!=", choice_names[rndn(s->nvals[p])]);
	} else if (r == 1 && s->kind[p] == 1) {
		kt_buf_printf(b, "%sP%d", rndn(2) ? "!" : "", p);
	} else if (r <= 2) {
		rand_int(s, 2, b);
		kt_buf_printf(b, " %s ", cmp[rndn(6)]);
		rand_int(s, 2, b);
	} else {
		kt_buf_putc(b, '(');
		rand_cond(s, depth - 1, b);
		kt_buf_puts(b, r == 3 ? " && " : " || ");
		rand_cond(s, depth - 1, b);
		kt_buf_putc(b, ')');
	}
}

static void rand_space(rspace *s, kt_buf *b)
{
	s->np = 1 + rndn(MAXP);
	kt_buf_puts(b, "// @kt kernel k\n// @kt shape n m\n");
	for (int p = 0; p < s->np; p++) {
		s->kind[p] = rndn(4) == 0 ? 1 : rndn(4) == 0 ? 2 : 0;
		if (s->kind[p] == 1) {
			s->nvals[p] = 2;
			kt_buf_printf(b, "// @kt param P%d bool\n", p);
			continue;
		}
		s->nvals[p] = s->kind[p] == 2 ? 2 + rndn(3) : 1 + rndn(6);
		kt_buf_printf(b, "// @kt param P%d in ", p);
		int64_t v = rndn(3);
		for (int i = 0; i < s->nvals[p]; i++) {
			if (s->kind[p] == 2) {
				kt_buf_printf(b, "%s%s", i ? ", " : "", choice_names[i]);
			} else {
				v += 1 + rndn(4);
				s->vals[p][i] = v;
				kt_buf_printf(b, "%s%lld", i ? ", " : "", (long long)v);
			}
		}
		kt_buf_putc(b, '\n');
	}
	for (int r = 0, nr = rndn(5); r < nr; r++) {
		kt_buf_puts(b, "// @kt require ");
		rand_cond(s, 2, b);
		kt_buf_putc(b, '\n');
	}
	kt_buf_puts(b, "// @kt arg n int = n\n// @kt arg m int = m\n// @kt grid 1\n// @kt block 32\n"
		       "__global__ void k(int n, int m) {}\n");
}

/* ---- the two enumerators ------------------------------------------------------------ */

typedef struct list {
	size_t n, cap;
	int np;
	uint16_t *v;
} list;

static void list_add(list *l, const uint16_t *cfg)
{
	if (l->n == l->cap) {
		l->cap = l->cap ? 2 * l->cap : 64;
		l->v = realloc(l->v, l->cap * (size_t)(l->np ? l->np : 1) * sizeof *l->v);
	}
	memcpy(l->v + l->n * (size_t)l->np, cfg, (size_t)l->np * sizeof *cfg);
	l->n++;
}

/* Every combination in lexicographic order of value indices, kept when all constraints hold. */
static int brute(const kt_tmpl *t, const int64_t *shape, list *out)
{
	uint16_t cfg[KT_MAX_SLOTS] = {0};
	for (;;) {
		kt_val env[KT_MAX_SLOTS];
		kt_tmpl_env(t, shape, cfg, env);
		int ok = 1;
		for (int r = 0; r < t->nreq && ok; r++) {
			kt_val v;
			char msg[128];
			if (kt_expr_eval(t->req[r], env, &v, msg, sizeof msg) != 0)
				return -1;
			ok = kt_val_truthy(v);
		}
		CHECK(ok == kt_space_feasible(t, shape, cfg));
		if (ok)
			list_add(out, cfg);
		int d = t->nparams - 1;
		while (d >= 0 && ++cfg[d] == t->params[d].nvals)
			cfg[d--] = 0;
		if (d < 0)
			return 0;
	}
}

static int collect(void *ctx, const uint16_t *cfg)
{
	list_add(ctx, cfg);
	return 0;
}

typedef struct stopper {
	long long seen, stop_at;
} stopper;

static int stop_early(void *ctx, const uint16_t *cfg)
{
	(void)cfg;
	stopper *s = ctx;
	return ++s->seen == s->stop_at;
}

static void test_random_spaces(int rounds)
{
	int compared = 0, nonempty = 0, pruned = 0;
	for (int round = 0; round < rounds; round++) {
		rspace s;
		kt_buf text = {0}, diags = {0};
		kt_err err = {0};
		rand_space(&s, &text);
		kt_tmpl *t = kt_tmpl_parse_text("random.cu.tmpl", text.data, text.len, NULL, &diags, &err);
		if (!t) {
			fprintf(stderr, "round %d: template did not parse:\n%s%s\n%s", round, text.data, err.msg,
				kt_buf_str(&diags));
			CHECK(t != NULL);
			kt_buf_free(&text);
			kt_buf_free(&diags);
			continue;
		}
		int64_t shape[2] = {rndn(10), rndn(10)};
		list want = {.np = t->nparams}, got = {.np = t->nparams};
		int brc = brute(t, shape, &want);
		long long n = kt_space_walk(t, shape, collect, &got, &err);
		CHECK(brc == 0);
		CHECK_INT(n, (long long)got.n);
		CHECK_INT(got.n, want.n);
		int same = got.n == want.n &&
			   (got.n == 0 || !memcmp(got.v, want.v, got.n * (size_t)t->nparams * sizeof *got.v));
		if (!same)
			fprintf(stderr, "round %d: walk and brute force differ for\n%s", round, text.data);
		CHECK(same);
		kt_space sp;
		CHECK(kt_space_enum(t, shape, &sp, &err) == 0);
		CHECK(sp.count == want.n && (sp.count == 0 || !memcmp(sp.cfgs, want.v, sp.count * (size_t)t->nparams * 2)));
		kt_space_free(&sp);
		if (want.n > 1) { /* stopping early visits exactly as many as asked */
			stopper st = {0, 1 + rndn((int)want.n - 1)};
			CHECK_INT(kt_space_walk(t, shape, stop_early, &st, &err), st.stop_at);
		}
		compared++;
		nonempty += want.n > 0;
		pruned += want.n < (size_t)kt_space_combinations(t);
		free(want.v);
		free(got.v);
		kt_tmpl_free(t);
		kt_buf_free(&text);
		kt_buf_free(&diags);
	}
	printf("random spaces: %d compared (%d non-empty, %d with pruning)\n", compared, nonempty, pruned);
	CHECK(compared == rounds);
	CHECK(nonempty > rounds / 4); /* the generator makes interesting spaces, not only empty ones */
	CHECK(pruned > rounds / 4);
}

/* ---- fixed cases -------------------------------------------------------------------- */

static kt_tmpl *parse(const char *text)
{
	kt_buf diags = {0};
	kt_err err = {0};
	kt_tmpl *t = kt_tmpl_parse_text("fixed.cu.tmpl", text, strlen(text), NULL, &diags, &err);
	if (!t)
		fprintf(stderr, "%s%s\n", kt_buf_str(&diags), err.msg);
	kt_buf_free(&diags);
	return t;
}

/* The CPU time this process has used, in seconds: what a walk costs, whatever else the machine
 * runs (a wall clock would charge it for the other processes of a loaded machine). */
static double cpu_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* A kernel k at shape n with parameters Q0..Q<np-1> of the values 0 to 9, and the directives in
 * more (further parameters, constraints). */
static kt_tmpl *lattice(int np, const char *more)
{
	kt_buf text = {0};
	kt_buf_puts(&text, "// @kt kernel k\n// @kt shape n\n");
	for (int p = 0; p < np; p++)
		kt_buf_printf(&text, "// @kt param Q%d in 0, 1, 2, 3, 4, 5, 6, 7, 8, 9\n", p);
	kt_buf_printf(&text, "%s// @kt arg n int = n\n// @kt grid 1\n// @kt block 32\n__global__ void k(int n) {}\n", more);
	kt_tmpl *t = parse(text.data);
	kt_buf_free(&text);
	return t;
}

static void test_million(void)
{
	kt_tmpl *t = lattice(6, "// @kt require Q0 + Q5 < n\n");
	CHECK(t != NULL);
	if (t) {
		CHECK(kt_space_combinations(t) == 1e6);
		int64_t shape[1] = {100};
		kt_err err = {0};
		double a = cpu_s();
		long long n = kt_space_walk(t, shape, NULL, NULL, &err);
		double s = cpu_s() - a;
		printf("10^6 combinations enumerated in %.3f s of CPU\n", s);
		CHECK_INT(n, 1000000);
		CHECK(s < 1.0);
		shape[0] = 10; /* Q0 + Q5 < 10: 55 of 100 pairs */
		CHECK_INT(kt_space_walk(t, shape, NULL, NULL, &err), 550000);
	}
	kt_tmpl_free(t);
}

static int stop_at_5(void *ctx, const uint16_t *cfg)
{
	(void)cfg;
	return ++*(int *)ctx == 5;
}

/* A space too large to enumerate fails at once, naming the template, the shape and the bound;
 * a walk that stops early does not meet the bound.  16 parameters of 10 values: 10^16
 * combinations, all feasible for n >= 10, none for n = 0, and the only constraint is decided at
 * the last parameter. */
static void test_bounds(void)
{
	kt_tmpl *t = lattice(16, "// @kt require Q15 < n\n");
	CHECK(t != NULL);
	if (!t)
		return;
	CHECK(kt_space_combinations(t) == 1e16);
	int64_t all[1] = {1000}, none[1] = {0};
	kt_err err = {0};
	double a = cpu_s();
	CHECK_INT(kt_space_walk(t, all, NULL, NULL, &err), -1);
	double s = cpu_s() - a;
	printf("10^16 combinations, all feasible: refused in %.3f s of CPU\n", s);
	CHECK(s < 1.0);
	CHECK_STR(err.msg, "fixed.cu.tmpl: more than 1000000 feasible configurations at shape n=1000 (10^16 combinations): "
			   "kt enumerates at most 1000000; narrow the parameters' value lists or add constraints");
	CHECK(err.cls == KT_E_INPUT);

	err = (kt_err){0};
	a = cpu_s();
	CHECK_INT(kt_space_walk(t, none, NULL, NULL, &err), -1);
	s = cpu_s() - a;
	printf("10^16 combinations, none feasible: refused in %.3f s of CPU\n", s);
	CHECK(s < 1.0);
	CHECK_STR(err.msg, "fixed.cu.tmpl: the space at shape n=0 (10^16 combinations) is too large to enumerate: kt stops "
			   "after 10000000 partial configurations (0 feasible found by then); narrow the parameters' value "
			   "lists or add constraints on the first parameters, which prune earlier");

	int seen = 0;
	CHECK_INT(kt_space_walk(t, all, stop_at_5, &seen, &err), 5);
	kt_space sp;
	CHECK_INT(kt_space_enum(t, all, &sp, &err), -1);
	CHECK(sp.cfgs == NULL && sp.count == 0);
	kt_tmpl_free(t);

	/* One feasible configuration past the bound: 10^6 with E=0, and one with E=1. */
	t = lattice(6, "// @kt param E in 0, 1\n// @kt require E == 0 || Q0 + Q1 + Q2 + Q3 + Q4 + Q5 == n\n");
	CHECK(t != NULL);
	if (t) {
		int64_t zero[1] = {0}, never[1] = {-1};
		CHECK_INT(kt_space_walk(t, never, NULL, NULL, &err), KT_SPACE_MAX_CONFIGS);
		CHECK_INT(kt_space_walk(t, zero, NULL, NULL, &err), -1);
		CHECK(strstr(err.msg, "more than 1000000 feasible configurations at shape n=0 (2000000 combinations)") != NULL);
	}
	kt_tmpl_free(t);
}

static void test_shape_only_and_errors(void)
{
	kt_tmpl *t = parse("// @kt kernel k\n// @kt shape n\n// @kt param A in 1, 2\n// @kt param B in 1, 2, 3\n"
			   "// @kt require n > 4\n// @kt require 12 / (B - 1) > 0\n// @kt arg n int = n\n"
			   "// @kt grid 1\n// @kt block 32\n__global__ void k(int n) {}\n");
	CHECK(t != NULL);
	if (!t)
		return;
	int64_t small[1] = {2}, big[1] = {8};
	kt_err err = {0};
	CHECK_INT(kt_space_walk(t, small, NULL, NULL, &err), 0); /* the shape-only constraint cuts everything */
	CHECK_INT(kt_space_walk(t, big, NULL, NULL, &err), -1);  /* B = 1 divides by zero */
	CHECK(strstr(err.msg, "12 / (B - 1) > 0") != NULL);
	CHECK(strstr(err.msg, "fixed.cu.tmpl:6") != NULL);
	CHECK(strstr(err.msg, "A=1,B=1") != NULL);
	CHECK(err.cls == KT_E_INPUT);
	kt_tmpl_free(t);
}

static void test_no_params(void)
{
	kt_tmpl *t = parse("// @kt kernel k\n// @kt shape n\n// @kt arg n int = n\n// @kt grid 1\n// @kt block 32\n"
			   "__global__ void k(int n) {}\n");
	CHECK(t != NULL);
	if (!t)
		return;
	int64_t shape[1] = {3};
	kt_space s;
	kt_err err = {0};
	CHECK(kt_space_enum(t, shape, &s, &err) == 0);
	CHECK_INT(s.count, 1); /* the one, empty configuration */
	CHECK(kt_space_combinations(t) == 1);
	kt_space_free(&s);
	kt_tmpl_free(t);
}

int main(int argc, char **argv)
{
	if (argc > 1)
		rng_state = strtoull(argv[1], NULL, 0);
	printf("seed 0x%llx\n", (unsigned long long)rng_state);
	test_random_spaces(400);
	test_million();
	test_bounds();
	test_shape_only_and_errors();
	test_no_params();
	return check_done();
}
