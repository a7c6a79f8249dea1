/* test_report.c - kt report's library: the rule that picks the parameter that matters (against
 * hand-computed shares), and the page written from a fixture cache (report_fixture.h) whose
 * evaluations are known: one point per passing evaluation, a mark per failure, degenerate
 * records (one evaluation, all failed) drawn without a crash, a corrupt record skipped with a
 * warning, markup escaped, filters, and errors that name the bad directory or key. */
#define _XOPEN_SOURCE 700
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "report.h"
#include "report_fixture.h"

static int near(double a, double b) { return fabs(a - b) <= 1e-9; }

static void test_main_param(void)
{
	double share = -1;
	/* one parameter, two groups: log times {0, 0.2} and {1, 1.2}.  SS_total 1.04, SS_between 1.0,
	 * SS_within 0.04 over 4 - 2 degrees of freedom: (1.0 - 0.02) / 1.04. */
	int v1[] = {0, 0, 1, 1};
	double t1[] = {1, exp(0.2), exp(1), exp(1.2)};
	CHECK_INT(kt_report_main_param(v1, t1, 4, 1, &share), 0);
	CHECK(near(share, 0.98 / 1.04));

	/* BLOCK (column 1) sets the time; VEC (column 0) only nudges it. */
	int v2[] = {0, 0, 1, 1, 0, 2, 1, 0, 0, 1, 1, 2};
	double t2[] = {10, 20.5, 40, 10.5, 20, 40.5};
	CHECK_INT(kt_report_main_param(v2, t2, 6, 2, &share), 1);
	CHECK(share > 0.9);

	/* A parameter with a value per row counts for nothing (n must exceed the number of groups);
	 * a two-valued one that splits the times wins over a five-valued one that does by chance. */
	int v3[] = {0, 0, 0, 1, 1, 2, 1, 3, 1, 4, 0, 0, 1, 1};
	double t3[] = {1.0, 1.1, 3.0, 3.1, 3.05, 1.05, 2.9};
	CHECK_INT(kt_report_main_param(v3, t3, 7, 2, &share), 0);
	int v4[] = {0, 1, 2};
	double t4[] = {1, 2, 3};
	CHECK_INT(kt_report_main_param(v4, t4, 3, 1, &share), -1);

	/* A parameter unrelated to the time: it is still the only candidate, with a share <= 0. */
	int v5[] = {0, 0, 1, 1};
	double t5[] = {1, 2, 1, 2};
	CHECK_INT(kt_report_main_param(v5, t5, 4, 1, &share), 0);
	CHECK(share < 0);

	/* Degenerate: nothing, one row, equal times, a constant parameter, unusable times. */
	CHECK_INT(kt_report_main_param(NULL, NULL, 0, 3, &share), -1);
	CHECK(share == 0);
	CHECK_INT(kt_report_main_param(v1, t1, 1, 1, &share), -1);
	double same[] = {5, 5, 5, 5};
	CHECK_INT(kt_report_main_param(v1, same, 4, 1, &share), -1);
	int flat[] = {3, 3, 3, 3};
	CHECK_INT(kt_report_main_param(flat, t1, 4, 1, &share), -1);
	double bad[] = {NAN, 0, -1, 7};
	CHECK_INT(kt_report_main_param(v1, bad, 4, 1, &share), -1); /* one usable row */

	/* Rows without a usable time are left out: the same answer as without them. */
	int v6[] = {0, 0, 1, 1, 1, 0};
	double t6[] = {1, exp(0.2), exp(1), exp(1.2), NAN, 0};
	CHECK_INT(kt_report_main_param(v6, t6, 6, 1, &share), 0);
	CHECK(near(share, 0.98 / 1.04));

	/* A tie goes to the first parameter. */
	int v7[] = {0, 0, 0, 0, 1, 1, 1, 1};
	CHECK_INT(kt_report_main_param(v7, t1, 4, 2, &share), 0);
}

/* ---- the page ---- */

static char *root; /* under TMPDIR: ctest checks that nothing is left there (tests/tmp) */

static char keys[FX_N][KT_KEY_HEX];
static int nwarn;
static char warned[1024];

static void on_warn(void *ctx, const char *msg)
{
	(void)ctx;
	nwarn++;
	snprintf(warned, sizeof warned, "%s", msg);
}

static size_t count(const char *s, const char *what)
{
	size_t n = 0;
	for (const char *p = s; p && (p = strstr(p, what)); p += strlen(what))
		n++;
	return n;
}

/* The text of a record's section (a new string), or NULL when the page has none. */
static char *section(const char *page, const char *key)
{
	char id[64];
	snprintf(id, sizeof id, "id=\"r-%s\"", key);
	const char *s = strstr(page, id), *e = s ? strstr(s, "</section>") : NULL;
	if (!e)
		return NULL;
	char *out = kt_xmalloc((size_t)(e - s) + 1);
	memcpy(out, s, (size_t)(e - s));
	out[e - s] = 0;
	return out;
}

/* The text of the svg of kind in sec (a new string). */
static char *plot_of(const char *sec, const char *kind)
{
	char attr[64];
	snprintf(attr, sizeof attr, "data-plot=\"%s\"", kind);
	const char *s = sec ? strstr(sec, attr) : NULL, *e = s ? strstr(s, "</svg>") : NULL;
	if (!e)
		return kt_xstrdup("");
	char *out = kt_xmalloc((size_t)(e - s) + 1);
	memcpy(out, s, (size_t)(e - s));
	out[e - s] = 0;
	return out;
}

static int write_page(const kt_report_opts *o, kt_buf *page, kt_report_stats *st, kt_err *err)
{
	nwarn = 0;
	warned[0] = 0;
	int rc = kt_report_write(o, st, err);
	kt_buf_reset(page);
	if (rc == 0)
		rc = kt_read_file(o->out, page, err);
	return rc;
}

static void check_plots(const char *page, int which, size_t ok, size_t failed)
{
	char *sec = section(page, keys[which]), *sc = plot_of(sec, "scatter"), *pr = plot_of(sec, "progress");
	CHECK(sec != NULL);
	CHECK_INT(count(sc, "<circle class=\"pt"), ok);
	CHECK_INT(count(pr, "<circle class=\"ev"), ok);
	CHECK_INT(count(pr, "<line class=\"fail\""), failed);
	CHECK_INT(count(sc, "<circle") + count(pr, "<circle"), 2 * ok); /* nothing else is a circle */
	CHECK(!strstr(sec, "nan") && !strstr(sec, "inf\""));
	free(sec);
	free(sc);
	free(pr);
}

static void test_page(void)
{
	kt_err err = {0};
	CHECK(fx_write(root, keys, &err) == 0);
	char out[1024];
	snprintf(out, sizeof out, "%s/out/sub/report.html", root); /* directories are made */
	kt_report_dir dir = {root, "--cache-dir"};
	kt_report_opts o = {.dirs = &dir, .ndirs = 1, .out = out, .warn = on_warn};
	kt_buf page = {0};
	kt_report_stats st = {0};
	CHECK(write_page(&o, &page, &st, &err) == 0);
	const char *s = kt_buf_str(&page);
	CHECK_INT(st.records, 3);
	CHECK_INT(st.kernels, 1);
	CHECK_INT(st.skipped, 1);
	CHECK_INT(nwarn, 1); /* the corrupt record, by its path */
	CHECK(strstr(warned, keys[FX_CORRUPT]) && strstr(warned, "not valid JSON") && strstr(warned, "skipped"));
	CHECK(strstr(s, "<h2 id=\"skipped\">") != NULL);

	/* complete, self-contained, and the marker last in the body */
	CHECK(!strncmp(s, "<!DOCTYPE html>", 15));
	CHECK(strstr(s, "<footer id=\"kt-report-end\">") != NULL);
	const char *end = "</footer>\n</body></html>\n";
	CHECK(page.len > strlen(end) && !strcmp(s + page.len - strlen(end), end));
	CHECK(!strstr(s, "<script") && !strstr(s, "src=") && !strstr(s, "url(") && !strstr(s, "@import"));
	CHECK(strstr(s, "Content-Security-Policy") != NULL);

	/* the plots hold what the records hold */
	check_plots(s, FX_MAIN, FX_MAIN_OK, FX_MAIN_EVALS - FX_MAIN_OK);
	check_plots(s, FX_SINGLE, 1, 0);
	check_plots(s, FX_ALLFAIL, 0, FX_ALLFAIL_EVALS);
	char *sec = section(s, keys[FX_MAIN]);
	CHECK(sec && strstr(sec, "<figure data-x=\"BLOCK\">"));
	CHECK(sec && strstr(sec, "<circle class=\"pt chosen\"") && strstr(sec, "<circle class=\"pt default\""));
	CHECK(sec && strstr(sec, "<line class=\"ref naive\"") && strstr(sec, "<line class=\"ref floor\""));
	CHECK(sec && strstr(sec, "<td>compile-failed</td><td class=\"num\">2</td>"));
	CHECK(sec && strstr(sec, "<td>timed-out</td><td class=\"num\">1</td>"));
	CHECK(sec && strstr(sec, "<td>ok</td><td class=\"num\">15</td>"));
	CHECK(sec && strstr(sec, "ptxas error: &lt;b&gt;bold&lt;/b&gt; &amp; &quot;quoted&quot;"));
	CHECK(!strstr(s, "<b>bold</b>"));
	CHECK(sec && strstr(sec, "naive 61.50 us"));
	free(sec);
	sec = section(s, keys[FX_ALLFAIL]);
	CHECK(sec && count(sec, ">no evaluation passed</text>") == 2);
	free(sec);
	sec = section(s, keys[FX_SINGLE]);
	CHECK(sec && strstr(sec, "naive: not in the record") && strstr(sec, "no floor"));
	/* how the times were taken: in the heading when not the defaults, and in the facts */
	CHECK(sec && strstr(sec, "<span class=\"variant\">T=half, arch 90, flags -O3, warm L2, CUDA-graph replays on NVIDIA "
				 "H200</span>"));
	CHECK(sec && strstr(sec, " us (warm L2, CUDA-graph replays); default"));
	free(sec);
	sec = section(s, keys[FX_MAIN]);
	CHECK(sec && strstr(sec, " us (cold L2, stream launches); default"));
	CHECK(sec && strstr(sec, "<span class=\"variant\">T=half, arch 90, flags -O3 on NVIDIA H200</span>"));
	free(sec);
	sec = section(s, keys[FX_ALLFAIL]);
	CHECK(sec && strstr(sec, " us (L2 as the old worker left it, stream launches); default"));
	free(sec);
	/* sorted by variant, then by shape as numbers: rows=2, rows=4096, then the warm L2's rows=1 */
	const char *a = strstr(s, keys[FX_SINGLE]), *b = strstr(s, keys[FX_ALLFAIL]), *c = strstr(s, keys[FX_MAIN]);
	CHECK(a && b && c && b < c && c < a);

	/* the same directory twice: each key once */
	kt_report_dir twice[2] = {{root, "--cache-dir"}, {root, "--project-cache"}};
	o.dirs = twice;
	o.ndirs = 2;
	CHECK(write_page(&o, &page, &st, &err) == 0);
	CHECK_INT(st.records, 3);
	CHECK_INT(nwarn, 1);
	kt_buf_free(&page);
}

static void test_selection(void)
{
	kt_err err = {0};
	char out[1024];
	snprintf(out, sizeof out, "%s/sel.html", root);
	kt_report_dir dir = {root, "--project-cache"};
	kt_report_opts o = {.dirs = &dir, .ndirs = 1, .out = out, .warn = on_warn};
	kt_buf page = {0};
	kt_report_stats st = {0};

	const char *one[] = {keys[FX_MAIN]}; /* by key: only that record, and nothing else is read */
	o.keys = one;
	o.nkeys = 1;
	CHECK(write_page(&o, &page, &st, &err) == 0);
	CHECK_INT(st.records, 1);
	CHECK_INT(nwarn, 0);
	CHECK(strstr(kt_buf_str(&page), keys[FX_MAIN]) && !strstr(kt_buf_str(&page), keys[FX_SINGLE]));

	const char *unknown[] = {keys[FX_MAIN], "0123456789abcdef0123456789abcdef"};
	o.keys = unknown;
	o.nkeys = 2;
	CHECK(kt_report_write(&o, &st, &err) == -1);
	CHECK(strstr(err.msg, "key 0123456789abcdef0123456789abcdef: no record in --project-cache '") != NULL);
	CHECK_INT(err.cls, KT_E_INPUT);
	const char *notkey[] = {"xyz"};
	o.keys = notkey;
	o.nkeys = 1;
	CHECK(kt_report_write(&o, &st, &err) == -1);
	CHECK_STR(err.msg, "key 'xyz': not a key (32 lowercase hex digits)");
	o.nkeys = 0;

	o.kernel = "fixture_*"; /* filters */
	CHECK(write_page(&o, &page, &st, &err) == 0);
	CHECK_INT(st.records, 3);
	o.kernel = "rms*";
	CHECK(write_page(&o, &page, &st, &err) == 0);
	CHECK_INT(st.records, 0);
	CHECK(strstr(kt_buf_str(&page), "No records match.") && strstr(kt_buf_str(&page), "id=\"kt-report-end\""));
	o.kernel = NULL;
	o.gpu = "NVIDIA H100";
	CHECK(write_page(&o, &page, &st, &err) == 0);
	CHECK_INT(st.records, 0);
	o.gpu = "NVIDIA H200";
	CHECK(write_page(&o, &page, &st, &err) == 0);
	CHECK_INT(st.records, 3);
	o.gpu = NULL;

	char missing[1024];
	snprintf(missing, sizeof missing, "%s/nope", root);
	kt_report_dir gone = {missing, "--cache-dir"};
	o.dirs = &gone;
	CHECK(kt_report_write(&o, &st, &err) == -1);
	CHECK(strstr(err.msg, "--cache-dir '") && strstr(err.msg, "/nope': no such directory"));
	kt_report_dir file = {out, "--cache-dir"};
	o.dirs = &file;
	CHECK(kt_report_write(&o, &st, &err) == -1);
	CHECK(strstr(err.msg, "sel.html': not a directory") != NULL);
	kt_buf_free(&page);
}

int main(void)
{
	test_main_param();
	if (!(root = kt_temp_dir(getenv("TMPDIR"), "kt-test-report", NULL)))
		return 1;
	test_page();
	test_selection();
	if (check_failed == 0) /* else kept, to look at */
		kt_remove_tree(root);
	free(root);
	return check_done();
}
