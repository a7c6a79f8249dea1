/* test_decide.c - the final choice (decide.h): the rivals, the confidence interval, the tie set
 * and the rule, which must not depend on the order the configurations come in. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "check.h"
#include "decide.h"

/* A default in the middle of A's values, so that two configurations tie in distance from it. */
static const char src[] = "// @kt kernel k\n// @kt shape n\n"
			  "// @kt param A in 1, 2, 3, 4 default 2\n"
			  "// @kt param B in 8, 16 default 8\n"
			  "// @kt grid n\n// @kt block 32\n// @kt arg out float[n] out\n// @kt arg n int = n\n"
			  "__global__ void k(float *out, int n) {}\n";

static kt_tmpl *t;

static void add(kt_tune_result *r, int a, int b, kt_status st, double us, double spread, int raced)
{
	r->evals = kt_xrealloc(r->evals, (r->nevals + 1) * sizeof *r->evals);
	kt_eval *e = &r->evals[r->nevals++];
	memset(e, 0, sizeof *e);
	e->cfg = kt_xcalloc(2, sizeof *e->cfg);
	e->cfg[0] = (uint16_t)a;
	e->cfg[1] = (uint16_t)b;
	e->status = st;
	e->median_us = us;
	e->spread_us = spread;
	e->raced = raced;
}

static void test_interval(void)
{
	double m, h;
	kt_decide_interval((const double[]){1, 2, 3}, 3, &m, &h);
	CHECK(fabs(m - 2) < 1e-12);
	CHECK(fabs(h - 4.303 / sqrt(3)) < 1e-9); /* t(2) * sd 1 / sqrt 3 */
	kt_decide_interval((const double[]){5}, 1, &m, &h);
	CHECK(m == 5 && h == 0);
	kt_decide_interval((const double[]){4, 4, 4, 4, 4}, 5, &m, &h);
	CHECK(m == 4 && h == 0);
}

/* Rivals: the top ones, every one within the noise (2% here), never a failed or raced one; in
 * value order; a --config list whole; at most max, the fastest kept. */
static void test_rivals(void)
{
	kt_tune_result r = {0};
	add(&r, 3, 1, KT_OK, 10.0, 0.01, 0);   /* 0: the fastest */
	add(&r, 0, 0, KT_OK, 10.15, 0.01, 0);  /* 1: within 2% */
	add(&r, 1, 0, KT_OK, 11.0, 0.01, 0);   /* 2: 10% slower */
	add(&r, 2, 0, KT_OK, 10.1, 0.01, 1);   /* 3: raced: never */
	add(&r, 2, 1, KT_CHECK_FAILED, 0, 0, 0);
	add(&r, 1, 1, KT_OK, 10.9, 1.0, 0);    /* 5: within its own spread */
	long out[8];
	size_t n = kt_decide_rivals(t, &r, 1, 0, out, 8);
	CHECK_INT((long)n, 3);
	CHECK(n == 3 && out[0] == 1 && out[1] == 5 && out[2] == 0); /* A=1,B=8; A=2,B=16; A=4,B=16 */
	n = kt_decide_rivals(t, &r, 4, 0, out, 8); /* the top 4: 10.0, 10.15, 10.9, 11.0 */
	CHECK_INT((long)n, 4);
	n = kt_decide_rivals(t, &r, 1, 1, out, 8);
	CHECK_INT((long)n, 4);
	n = kt_decide_rivals(t, &r, 1, 1, out, 2);
	CHECK(n == 2 && out[0] == 1 && out[1] == 0);
	kt_tune_result_free(&r);
	kt_tune_result none = {0};
	CHECK_INT((long)kt_decide_rivals(t, &none, 5, 0, out, 8), 0);
}

/* The configuration chosen from rivals c[0..k) in the order perm gives. */
static long pick_in_order(const kt_tune_result *r, const kt_retimed *c, const int *perm, size_t k)
{
	kt_retimed p[8];
	for (size_t i = 0; i < k; i++)
		p[i] = c[perm[i]];
	return p[kt_decide_pick(t, r, p, k)].eval;
}

/* Every order of the same rivals gives the same choice. */
static int same_in_every_order(const kt_tune_result *r, const kt_retimed *c, long want)
{
	int perm[4] = {0, 1, 2, 3}, ok = 1;
	for (int a = 0; a < 4; a++)
		for (int b = 0; b < 4; b++)
			for (int d = 0; d < 4; d++) {
				int e = 6 - a - b - d;
				if (a == b || a == d || b == d || e < 0 || e > 3 || e == a || e == b || e == d)
					continue;
				perm[0] = a, perm[1] = b, perm[2] = d, perm[3] = e;
				ok &= pick_in_order(r, c, perm, 4) == want;
			}
	return ok;
}

static void test_pick(void)
{
	kt_tune_result r = {0};
	add(&r, 3, 0, KT_OK, 10.0, 0, 0); /* 0: A=4,B=8 */
	add(&r, 0, 0, KT_OK, 10.0, 0, 0); /* 1: A=1,B=8: one step from the default */
	add(&r, 2, 0, KT_OK, 10.0, 0, 0); /* 2: A=3,B=8: one step too, last in value order */
	add(&r, 1, 1, KT_OK, 10.0, 0, 0); /* 3: A=2,B=16: one step, between them in value order */
	kt_retimed c[4] = {{.eval = 0, .us = 10.0, .ci_us = 0.01},
			   {.eval = 1, .us = 10.04, .ci_us = 0.01},
			   {.eval = 2, .us = 10.04, .ci_us = 0.01},
			   {.eval = 3, .us = 10.04, .ci_us = 0.01}};
	/* All within 0.5% of the fastest: a tie; one step each from the default, then value order. */
	CHECK(same_in_every_order(&r, c, 1));
	size_t i = kt_decide_pick(t, &r, c, 4);
	CHECK(c[i].eval == 1 && c[0].tie && c[1].tie && c[2].tie && c[3].tie);
	/* A=1 0.8% slower with narrow intervals: not a tie; A=2,B=16 next in value order. */
	c[1].us = 10.08;
	CHECK(same_in_every_order(&r, c, 3));
	kt_decide_pick(t, &r, c, 4);
	CHECK(!c[1].tie && c[2].tie && c[3].tie);
	/* ... unless the intervals overlap. */
	c[1].ci_us = 0.05, c[0].ci_us = 0.04;
	CHECK(same_in_every_order(&r, c, 1));
	/* Where the blocks pair them, the interval of the difference decides, not the two intervals:
	 * a clock that moved both alike widened those, not that. */
	for (int k = 0; k < 4; k++)
		c[k].paired = 1, c[k].gap_ci_us = 0.01;
	CHECK(same_in_every_order(&r, c, 3));
	c[1].gap_ci_us = 0.09; /* the difference 0.08, within its interval: a tie again */
	CHECK(same_in_every_order(&r, c, 1));
	for (int k = 0; k < 4; k++)
		c[k].paired = 0, c[k].gap_ci_us = 0;
	/* Never more than 1% slower, whatever the intervals: the fastest then has no rival. */
	for (int k = 1; k < 4; k++)
		c[k].us = 10.12, c[k].ci_us = 1.0;
	CHECK(same_in_every_order(&r, c, 0));
	kt_decide_pick(t, &r, c, 4);
	CHECK(c[0].tie && !c[1].tie && !c[2].tie && !c[3].tie);
	/* All equally fast and tied, two of them equally near: the nearest wins. */
	for (int k = 0; k < 4; k++)
		c[k].us = 10.0, c[k].ci_us = 0;
	r.evals[1].cfg[0] = 3, r.evals[1].cfg[1] = 1; /* A=4,B=16: far from the default */
	r.evals[2].cfg[0] = 0, r.evals[2].cfg[1] = 1; /* A=1,B=16 */
	r.evals[3].cfg[0] = 2, r.evals[3].cfg[1] = 1; /* A=3,B=16 */
	CHECK(same_in_every_order(&r, c, 0));       /* A=4,B=8: one parameter changed, the others two */
	kt_tune_result_free(&r);
}

/* The rule's pick is unsure when it is a tie on the intervals alone: more than KT_TIE_FLOOR
 * slower than the fastest. */
static void test_unsure(void)
{
	kt_retimed c[3] = {{.eval = 0, .us = 10.0, .ci_us = 0.05},
			   {.eval = 1, .us = 10.04, .ci_us = 0.05},
			   {.eval = 2, .us = 10.09, .ci_us = 0.1}};
	CHECK_INT(kt_decide_unsure(c, 3, 0), 0); /* the fastest */
	CHECK_INT(kt_decide_unsure(c, 3, 1), 0); /* 0.4%: a tie whatever the intervals */
	CHECK_INT(kt_decide_unsure(c, 3, 2), 1); /* 0.9%: a tie by its interval only */
	/* the fastest anywhere in c */
	kt_retimed d[2] = {{.eval = 0, .us = 10.09, .ci_us = 0.1}, {.eval = 1, .us = 10.0, .ci_us = 0.05}};
	CHECK_INT(kt_decide_unsure(d, 2, 0), 1);
	CHECK_INT(kt_decide_unsure(d, 2, 1), 0);
}

int main(void)
{
	kt_buf diags = {0};
	kt_err err = {0};
	t = kt_tmpl_parse_text("decide.cu.tmpl", src, sizeof src - 1, NULL, &diags, &err);
	if (!t) {
		fprintf(stderr, "%s%s\n", kt_buf_str(&diags), err.msg);
		return 1;
	}
	test_interval();
	test_rivals();
	test_pick();
	test_unsure();
	kt_tmpl_free(t);
	kt_buf_free(&diags);
	return check_done();
}
