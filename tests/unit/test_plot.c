/* test_plot.c - the SVG charts: axes fitted to ordinary and degenerate data (nothing, one value,
 * all equal, values spanning decades), ticks, positions, escaping, and the elements a chart holds. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "plot.h"

static int near(double a, double b) { return fabs(a - b) <= 1e-9 * fmax(1, fabs(b)); }

static size_t count(const char *s, const char *what)
{
	size_t n = 0;
	for (const char *p = s; (p = strstr(p, what)); p += strlen(what))
		n++;
	return n;
}

static void test_fit(void)
{
	kt_plot_axis a;
	kt_plot_fit(&a, NULL, 0); /* nothing */
	CHECK(!a.log && a.lo == 0 && a.hi == 1);
	double bad[] = {NAN, -1, 0, INFINITY};
	kt_plot_fit(&a, bad, 4); /* nothing usable */
	CHECK(!a.log && a.lo == 0 && a.hi == 1);
	double one[] = {5};
	kt_plot_fit(&a, one, 1); /* one value: 10% either side, in the middle */
	CHECK(!a.log && near(a.lo, 4.5) && near(a.hi, 5.5));
	CHECK(near(kt_plot_frac(&a, 5), 0.5));
	double same[] = {2, 2, 2, NAN};
	kt_plot_fit(&a, same, 4);
	CHECK(!a.log && a.lo < 2 && a.hi > 2);
	double lin[] = {100, 150, 200};
	kt_plot_fit(&a, lin, 3); /* within a decade: linear, with a margin */
	CHECK(!a.log && a.lo < 100 && a.lo > 90 && a.hi > 200 && a.hi < 210);
	double wide[] = {1, 3, 50, 1000};
	kt_plot_fit(&a, wide, 4); /* three decades: logarithmic */
	CHECK(a.log && a.lo < 1 && a.lo > 0.5 && a.hi > 1000 && a.hi < 2000);
	CHECK(kt_plot_frac(&a, 1) > 0 && kt_plot_frac(&a, 1000) < 1);
	CHECK(near(kt_plot_frac(&a, sqrt(a.lo * a.hi)), 0.5)); /* the geometric middle */
	double edge[] = {1, 10};
	kt_plot_fit(&a, edge, 2); /* exactly a decade is logarithmic */
	CHECK(a.log);
	double low[] = {0.01, 0.05};
	kt_plot_fit(&a, low, 2); /* a linear axis never goes below 0 */
	CHECK(!a.log && a.lo >= 0);
}

static void test_frac(void)
{
	kt_plot_axis a;
	kt_plot_linear(&a, 10, 20, 0);
	CHECK(near(kt_plot_frac(&a, 15), 0.5));
	CHECK(kt_plot_frac(&a, 5) == 0 && kt_plot_frac(&a, 25) == 1); /* clamped */
	CHECK(kt_plot_frac(&a, NAN) == 0);
	kt_plot_linear(&a, 3, 3, 0); /* an empty range is widened */
	CHECK(a.lo == 2.5 && a.hi == 3.5);
	kt_plot_linear(&a, 4, 1, 0); /* so is a reversed one */
	CHECK(a.lo < a.hi);
	a = (kt_plot_axis){.lo = 1, .hi = 100, .log = 1};
	CHECK(near(kt_plot_frac(&a, 10), 0.5));
	CHECK(kt_plot_frac(&a, 0) == 0 && kt_plot_frac(&a, -3) == 0);
}

static void test_ticks(void)
{
	double t[32];
	kt_plot_axis a;
	kt_plot_linear(&a, 0, 1, 0);
	int n = kt_plot_ticks(&a, t, 32);
	CHECK_INT(n, 6); /* 0, 0.2, ..., 1 */
	CHECK(t[0] == 0 && near(t[1], 0.2) && near(t[5], 1));
	kt_plot_linear(&a, 187, 921, 0);
	n = kt_plot_ticks(&a, t, 32);
	CHECK(n >= 4 && n <= 9 && t[0] >= 187 && t[n - 1] <= 921);
	CHECK(near(t[1] - t[0], 100) || near(t[1] - t[0], 200));
	kt_plot_linear(&a, 0.5, 3.5, 1); /* counts: whole numbers only */
	n = kt_plot_ticks(&a, t, 32);
	CHECK_INT(n, 3);
	CHECK(t[0] == 1 && t[2] == 3);
	kt_plot_linear(&a, -0.5, 0.5, 0); /* zero is printed as 0, not -1e-17 */
	n = kt_plot_ticks(&a, t, 32);
	int zero = 0;
	for (int i = 0; i < n; i++)
		zero |= t[i] == 0 && !signbit(t[i]);
	CHECK(zero);
	a = (kt_plot_axis){.lo = 3, .hi = 300, .log = 1}; /* two decades: 1, 2, 5 of each */
	n = kt_plot_ticks(&a, t, 32);
	CHECK_INT(n, 6);
	CHECK(t[0] == 5 && t[1] == 10 && t[5] == 200);
	a = (kt_plot_axis){.lo = 0.005, .hi = 2000, .log = 1}; /* many decades: powers of ten */
	n = kt_plot_ticks(&a, t, 32);
	CHECK_INT(n, 6);
	CHECK(near(t[0], 0.01) && near(t[5], 1000));
	CHECK_INT(kt_plot_ticks(&a, t, 2), 2); /* never more than asked */
	a = (kt_plot_axis){.lo = 1e-30, .hi = 1e30, .log = 1}; /* sixty decades: every eighth or so */
	n = kt_plot_ticks(&a, t, 32);
	CHECK(n >= 4 && n <= 9);
	double extreme[] = {1e-300, 1e300};
	kt_plot_fit(&a, extreme, 2); /* the margin never leaves the doubles */
	CHECK(a.log && a.lo > 0 && isfinite(a.hi) && kt_plot_frac(&a, 1) > 0.4 && kt_plot_frac(&a, 1) < 0.6);
}

static void test_escape(void)
{
	kt_buf b = {0};
	kt_plot_escape(&b, "<a href=\"x\">'&'</a>");
	CHECK_STR(kt_buf_str(&b), "&lt;a href=&quot;x&quot;&gt;&#39;&amp;&#39;&lt;/a&gt;");
	kt_buf_reset(&b);
	kt_plot_escape(&b, NULL);
	CHECK_STR(kt_buf_str(&b), "");
	kt_buf_free(&b);
}

/* A chart of one point on a categorical axis and one with nothing: well-formed, the point inside
 * the plot area, the labels escaped. */
static void test_chart(void)
{
	kt_buf out = {0};
	static const char *const cats[] = {"a<b"};
	double v[] = {7};
	kt_plot p = {.out = &out, .kind = "scatter", .xlabel = "X", .ylabel = "time, us", .width = 300, .height = 200,
		     .cats = cats, .ncats = 1};
	kt_plot_fit(&p.y, v, 1);
	kt_plot_begin(&p);
	kt_plot_point(&p, 0, 7, 3, "pt", "#1 <cfg>: 7 us");
	kt_plot_hline(&p, 7, "ref floor", NULL);
	kt_plot_end(&p);
	const char *s = kt_buf_str(&out);
	CHECK(!strncmp(s, "<svg ", 5) && strstr(s, "data-plot=\"scatter\""));
	CHECK(!strcmp(s + strlen(s) - 6, "</svg>"));
	CHECK_INT(count(s, "<circle"), 1);
	CHECK(strstr(s, "a&lt;b") && !strstr(s, "a<b"));
	CHECK(strstr(s, "<title>#1 &lt;cfg&gt;: 7 us</title>"));
	double cx = 0, cy = 0;
	const char *c = strstr(s, "<circle");
	CHECK(c && sscanf(strstr(c, "cx=\""), "cx=\"%lf\" cy=\"%lf\"", &cx, &cy) == 2);
	CHECK(cx > 62 && cx < 300 - 14 && cy > 10 && cy < 200 - 44); /* inside the plot area */
	CHECK(!strstr(s, "nan") && !strstr(s, "inf"));

	kt_buf_reset(&out);
	kt_plot empty = {.out = &out, .kind = "progress", .xlabel = "evaluation", .ylabel = "time, us", .width = 300,
			 .height = 200};
	kt_plot_fit(&empty.y, NULL, 0);
	kt_plot_linear(&empty.x, 0.5, 0.5, 1);
	kt_plot_begin(&empty);
	kt_plot_steps(&empty, NULL, NULL, 0, "best");
	kt_plot_mark(&empty, 1, "fail", "#1 failed");
	kt_plot_note(&empty, "no evaluation passed");
	kt_plot_end(&empty);
	s = kt_buf_str(&out);
	CHECK_INT(count(s, "<circle"), 0);
	CHECK_INT(count(s, "<path"), 0);
	CHECK_INT(count(s, "class=\"fail\""), 1);
	CHECK(strstr(s, ">no evaluation passed</text>") != NULL);
	CHECK(!strstr(s, "nan") && !strstr(s, "inf"));

	kt_buf_reset(&out);
	double xs[] = {1, 4, 9}, ys[] = {9, 5, 5};
	kt_plot steps = empty;
	kt_plot_linear(&steps.x, 0.5, 9.5, 1);
	kt_plot_linear(&steps.y, 0, 10, 0);
	kt_plot_begin(&steps);
	kt_plot_steps(&steps, xs, ys, 3, "best");
	kt_plot_end(&steps);
	s = kt_buf_str(&out);
	CHECK_INT(count(s, "<path class=\"best\" d=\"M"), 1);
	const char *d = strstr(s, " d=\"");
	char path[256] = "";
	CHECK(d && sscanf(d, " d=\"%255[^\"]", path) == 1);
	CHECK_INT(count(path, "H"), 2); /* a step to each later point */
	CHECK_INT(count(path, "V"), 2);
	kt_buf_free(&out);
}

int main(void)
{
	test_fit();
	test_frac();
	test_ticks();
	test_escape();
	test_chart();
	return check_done();
}
