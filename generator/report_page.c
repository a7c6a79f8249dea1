/* report_page.c - the tuning report's HTML: the summary, the toolchains and one section per
 * record, with the charts of plot.h (see report.h). */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "plot.h"
#include "json.h"
#include "report_int.h"

#define DEFAULT_TITLE "kt tuning report"
/* The page's own promise, kept by the browser: nothing is fetched and no script runs (a browser
 * reports any attempt on its console, which the browser test watches). */
#define PAGE_CSP "default-src 'none'; style-src 'unsafe-inline'"
#define MSG_MAX 240 /* bytes of a failure's message shown on the page */
enum { PLOT_W = 560, PLOT_H = 300 };
#define JITTER_WIDTH 0.5    /* of a category's width, over which its points spread */
#define GOLDEN 0.6180339887 /* spreads successive points of a category evenly */
#define REF_REACH 5.0       /* a reference time within this factor of the evaluations' sets the charts' axis */
#define R_POINT 3.5         /* radii of the points, pixels */
#define R_DEFAULT 5.5
#define R_CHOSEN 6.5
#define R_EVAL 2.5

/* ---- rendering: pieces ------------------------------------------------------------------ */

static void esc(kt_buf *out, const char *s) { kt_plot_escape(out, s); }

static void escf(kt_buf *out, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void escf(kt_buf *out, const char *fmt, ...)
{
	kt_buf b = {0};
	va_list ap;
	va_start(ap, fmt);
	kt_buf_vprintf(&b, fmt, ap);
	va_end(ap);
	esc(out, kt_buf_str(&b));
	kt_buf_free(&b);
}

/* A time in microseconds for a table: two decimals, or three significant digits below 0.1. */
static const char *us_text(double us, char *s, size_t n)
{
	if (!(us > 0) || !isfinite(us))
		snprintf(s, n, "&#8212;");
	else
		snprintf(s, n, us < 0.1 ? "%.3g" : "%.2f", us);
	return s;
}

/* slow / fast as "1.52&#215;", or a dash when either is unknown. */
static const char *ratio_text(double slow, double fast, char *s, size_t n)
{
	if (slow > 0 && fast > 0 && isfinite(slow / fast))
		snprintf(s, n, "%.2f&#215;", slow / fast);
	else
		snprintf(s, n, "&#8212;");
	return s;
}

static void pct_cell(kt_buf *out, double floor_us, double us)
{
	if (!(floor_us > 0 && us > 0)) {
		kt_buf_puts(out, "<td class=\"num\">&#8212;</td>");
		return;
	}
	double pct = 100 * floor_us / us, w = pct > 100 ? 100 : pct;
	kt_buf_printf(out,
		      "<td class=\"num\" style=\"background:linear-gradient(90deg,#cfe3cf %.0f%%,transparent %.0f%%)\">",
		      w, w);
	kt_buf_printf(out, pct < 10 ? "%.1f%%</td>" : "%.0f%%</td>", pct);
}

static const char *status_name(int s) { return s < KT_NSTATUS ? kt_status_names[s] : "unknown status"; }

static size_t nfailed(const kt_report_entry *e) { return e->nevals - e->nok; }

/* ---- rendering: the summary and the toolchains --------------------------------------------- */

/* The summary's row of e; first: the first row of its kernel (which alone names it). */
static void summary_row(kt_buf *out, const kt_report_entry *e, int first, int naive)
{
	char a[32], b[32], c[32];
	kt_buf_printf(out, "<tr%s><td>", first ? " class=\"first\"" : "");
	if (first)
		esc(out, e->rec.kernel);
	kt_buf_printf(out, "</td><td><a href=\"#r-%s\">", e->rec.key);
	esc(out, e->rec.shape);
	kt_buf_puts(out, "</a></td><td>");
	esc(out, e->variant);
	kt_buf_puts(out, "</td><td>");
	esc(out, e->rec.gpu.name);
	kt_buf_printf(out, "</td><td class=\"num\"><b>%s</b></td><td class=\"num\">%s</td><td class=\"num\">%s</td>",
		      us_text(e->time_us, a, sizeof a), us_text(e->default_us, b, sizeof b),
		      ratio_text(e->default_us, e->time_us, c, sizeof c));
	if (naive)
		kt_buf_printf(out, "<td class=\"num\">%s</td><td class=\"num\">%s</td>", us_text(e->reference_us, a, sizeof a),
			      ratio_text(e->reference_us, e->time_us, b, sizeof b));
	kt_buf_printf(out, "<td class=\"num\">%s</td>", us_text(e->floor_us, a, sizeof a));
	pct_cell(out, e->floor_us, e->time_us);
	kt_buf_printf(out, "<td class=\"num\">%zu</td><td class=\"num%s\">%zu</td></tr>\n", e->nevals,
		      nfailed(e) ? " bad" : "", nfailed(e));
}

static void render_summary(kt_buf *out, const kt_report_page *pg)
{
	int naive = 0;
	for (size_t i = 0; i < pg->n; i++)
		naive |= pg->e[i].reference_us > 0;
	kt_buf_printf(out, "<h2 id=\"summary\">Summary</h2>\n<table class=\"summary\"><thead><tr><th>kernel</th>"
			   "<th>shape</th><th>types, target</th><th>GPU</th><th>tuned, us</th><th>default, us</th>"
			   "<th>vs default</th>%s<th>floor, us</th><th>%% of floor</th><th>evals</th><th>failed</th>"
			   "</tr></thead><tbody>\n",
		      naive ? "<th>naive, us</th><th>vs naive</th>" : "");
	for (size_t i = 0; i < pg->n; i++)
		summary_row(out, &pg->e[i], i == 0 || strcmp(pg->e[i].rec.kernel, pg->e[i - 1].rec.kernel) != 0, naive);
	kt_buf_printf(out, "</tbody></table>\n<p class=\"note\">Times are medians in microseconds. <i>vs default</i>%s: "
			   "how many times faster the tuned configuration is than the template's default "
			   "configuration%s; a dash where the record holds no such time. <i>%% of floor</i>: the "
			   "roofline floor (the template's minimal bytes and flops at the bandwidth and rate measured "
			   "on the GPU) over the tuned time.  Times are per launch, with a cold L2 and on the stream "
			   "unless the variant says <i>warm L2</i> or <i>CUDA-graph replays</i> (a record that does not "
			   "say was timed with the L2 as the old worker left it).%s</p>\n",
		      naive ? " and <i>vs naive</i>" : "", naive ? " and than its reference (naive) kernel" : "",
		      naive ? "" : " None of these records holds a naive kernel's time (its template declares no "
				   "<code>@kt reference</code>, or the record was written before kt kept it).");
}

static int same_toolchain(const kt_report_entry *a, const kt_report_entry *b)
{
	for (int i = 0; i < KT_REPORT_NTOOL; i++)
		if (strcmp(a->tool[i], b->tool[i]))
			return 0;
	return 1;
}

static void toolchain_row(kt_buf *out, const kt_report_entry *e, int count)
{
	kt_buf_puts(out, "<tr>");
	for (int i = 0; i < KT_REPORT_NTOOL; i++) {
		kt_buf_puts(out, "<td>");
		esc(out, e->tool[i]);
		kt_buf_puts(out, "</td>");
	}
	kt_buf_printf(out, "<td class=\"num\">%d</td></tr>\n", count);
}

static void render_toolchains(kt_buf *out, const kt_report_page *pg)
{
	kt_buf_puts(out, "<h2 id=\"toolchains\">GPUs and toolchains</h2>\n<table class=\"tools\"><thead><tr><th>GPU</th>"
			 "<th>cc</th><th>SMs</th><th>L2 bytes</th><th>compiler</th><th>driver</th><th>runtime</th>"
			 "<th>tool</th><th>records</th></tr></thead><tbody>\n");
	const kt_report_entry **seen = kt_xcalloc(pg->n + 1, sizeof *seen);
	int *count = kt_xcalloc(pg->n + 1, sizeof *count);
	size_t nseen = 0;
	for (size_t i = 0; i < pg->n; i++) {
		size_t j = 0;
		while (j < nseen && !same_toolchain(seen[j], &pg->e[i]))
			j++;
		if (j == nseen)
			seen[nseen++] = &pg->e[i];
		count[j]++;
	}
	for (size_t j = 0; j < nseen; j++)
		toolchain_row(out, seen[j], count[j]);
	free(seen);
	free(count);
	kt_buf_puts(out, "</tbody></table>\n<p class=\"note\">The driver is the CUDA version the driver supports; the "
			 "compiler is the <code>nvcc --version</code> the records were keyed with.</p>\n");
}

/* ---- rendering: one record's charts ------------------------------------------------------ */

/* The y axis of a record's charts: every passing time, the chosen and the default time, and the
 * floor and the naive time when they lie within REF_REACH of those (else the caption says where
 * they are: a floor a thousand times below the times would squash them into a line). */
static void fit_times(const kt_report_entry *e, kt_plot_axis *y)
{
	double *v = kt_xcalloc(e->nevals + 4, sizeof *v), lo = INFINITY, hi = 0;
	size_t n = 0;
	for (size_t i = 0; i < e->nevals; i++)
		v[n++] = e->evals[i].us;
	v[n++] = e->time_us;
	v[n++] = e->default_us;
	for (size_t i = 0; i < n; i++)
		if (v[i] > 0 && isfinite(v[i])) {
			lo = fmin(lo, v[i]);
			hi = fmax(hi, v[i]);
		}
	if (e->floor_us > 0 && (hi == 0 || e->floor_us * REF_REACH >= lo))
		v[n++] = e->floor_us;
	if (e->reference_us > 0 && (hi == 0 || e->reference_us <= hi * REF_REACH))
		v[n++] = e->reference_us;
	kt_plot_fit(y, v, n);
	free(v);
}

static int on_axis(const kt_plot_axis *y, double v) { return v > 0 && v >= y->lo && v <= y->hi; }

/* What the charts leave out: a reference time beyond the axis. */
static void off_axis(const kt_report_entry *e, const kt_plot_axis *y, kt_buf *out)
{
	char t[32];
	if (e->floor_us > 0 && !on_axis(y, e->floor_us))
		kt_buf_printf(out, " The roofline floor, %s us, lies below the axis.", us_text(e->floor_us, t, sizeof t));
	if (e->reference_us > 0 && !on_axis(y, e->reference_us))
		kt_buf_printf(out, " The naive kernel's time, %s us, lies above the axis.",
			      us_text(e->reference_us, t, sizeof t));
}

static void ref_lines(const kt_plot *p, const kt_report_entry *e)
{
	static const char *const cls[] = {"ref floor", "ref default", "ref naive"};
	static const char *const what[] = {"roofline floor", "default configuration", "naive (reference) kernel"};
	const double us[] = {e->floor_us, e->default_us, e->reference_us};
	for (int i = 0; i < 3; i++) {
		char tip[96], t[32];
		if (!on_axis(&p->y, us[i]))
			continue;
		snprintf(tip, sizeof tip, "%s %s us", what[i], us_text(us[i], t, sizeof t));
		kt_plot_hline(p, us[i], cls[i], tip);
	}
}

/* An evaluation's tooltip: its number, configuration and time or failure (the message cut short). */
static const char *eval_tip(const kt_report_entry *e, size_t i, kt_buf *s)
{
	const kt_report_eval *ev = &e->evals[i];
	kt_buf_reset(s);
	if (ev->status == KT_OK) {
		kt_buf_printf(s, "#%zu %s: %.2f us", i + 1, ev->config, ev->us);
	} else {
		kt_buf_printf(s, "#%zu %s: %s", i + 1, ev->config, status_name(ev->status));
		if (ev->msg) {
			kt_buf_puts(s, ": ");
			kt_buf_add(s, ev->msg, kt_utf8_cut(ev->msg, strlen(ev->msg), MSG_MAX));
		}
	}
	return kt_buf_str(s);
}

/* The x parameter of the scatter and the sentence that says why. */
static int scatter_param(const kt_report_entry *e, kt_buf *why)
{
	int *vals = kt_xcalloc(e->nevals * (size_t)e->nparams + 1, sizeof *vals);
	double *us = kt_xcalloc(e->nevals + 1, sizeof *us), share = 0;
	for (size_t i = 0; i < e->nevals; i++) {
		memcpy(vals + i * (size_t)e->nparams, e->evals[i].v, (size_t)e->nparams * sizeof *vals);
		us[i] = e->evals[i].us;
	}
	int p = kt_report_main_param(vals, us, e->nevals, e->nparams, &share);
	free(vals);
	free(us);
	if (p >= 0 && share > 0) {
		escf(why, "Each passing evaluation's time by its value of %s: the parameter whose values explain the "
			  "largest share of the variance of log(time) among the %zu passing evaluations (%.0f%%, adjusted "
			  "for its number of values).",
		     e->params[p].name, e->nok, 100 * share);
	} else if (p >= 0) {
		escf(why, "Each passing evaluation's time by its value of %s. No parameter explains more of the "
			  "variance of log(time) than chance would (%s's adjusted share, the largest, is %.0f%%).",
		     e->params[p].name, e->params[p].name, 100 * share);
	} else if (e->nparams) {
		p = 0;
		escf(why, "Each passing evaluation's time by its value of %s, the first parameter: too few passing "
			  "evaluations, or too little spread in their times, to rank the parameters.",
		     e->params[0].name);
	} else {
		escf(why, "Each passing evaluation's time (the template declares no parameters).");
	}
	return p;
}

static void point_in_cat(const kt_plot *p, const kt_report_entry *e, size_t i, int xp, int *seen, double r,
			 const char *cls)
{
	kt_buf tip = {0};
	int cat = xp >= 0 && e->evals[i].v[xp] >= 0 ? e->evals[i].v[xp] : 0;
	double frac = fmod((double)seen[cat]++ * GOLDEN, 1.0) - 0.5;
	kt_plot_point(p, cat + frac * JITTER_WIDTH, e->evals[i].us, r, cls, eval_tip(e, i, &tip));
	kt_buf_free(&tip);
}

static void render_scatter(kt_buf *out, const kt_report_entry *e)
{
	kt_buf why = {0};
	int xp = scatter_param(e, &why);
	static const char *const all[] = {"(all)"};
	kt_plot p = {.out = out, .kind = "scatter", .ylabel = "time, us", .width = PLOT_W, .height = PLOT_H,
		     .cats = xp >= 0 ? e->params[xp].vals : all, .ncats = xp >= 0 ? e->params[xp].nvals : 1,
		     .xlabel = xp >= 0 ? e->params[xp].name : "configuration"};
	fit_times(e, &p.y);
	if (p.y.log)
		p.ylabel = "time, us (log scale)";
	int *seen = kt_xcalloc((size_t)p.ncats + 1, sizeof *seen);
	kt_buf_puts(out, "<figure data-x=\"");
	esc(out, p.xlabel);
	kt_buf_puts(out, "\">");
	kt_plot_begin(&p);
	ref_lines(&p, e);
	for (size_t i = 0; i < e->nevals; i++)
		if (e->evals[i].status == KT_OK && (long)i != e->chosen && (long)i != e->dflt)
			point_in_cat(&p, e, i, xp, seen, R_POINT, "pt");
	if (e->dflt >= 0 && e->dflt != e->chosen && e->evals[e->dflt].status == KT_OK)
		point_in_cat(&p, e, (size_t)e->dflt, xp, seen, R_DEFAULT, "pt default");
	if (e->chosen >= 0)
		point_in_cat(&p, e, (size_t)e->chosen, xp, seen, R_CHOSEN, "pt chosen");
	if (!e->nok)
		kt_plot_note(&p, "no evaluation passed");
	kt_plot_end(&p);
	kt_buf_puts(out, "<figcaption>");
	kt_buf_add(out, why.data, why.len);
	off_axis(e, &p.y, out);
	kt_buf_puts(out, "</figcaption></figure>\n");
	free(seen);
	kt_buf_free(&why);
}

static void render_progress(kt_buf *out, const kt_report_entry *e)
{
	kt_plot p = {.out = out, .kind = "progress", .xlabel = "evaluation", .ylabel = "time, us",
		     .width = PLOT_W, .height = PLOT_H};
	fit_times(e, &p.y);
	if (p.y.log)
		p.ylabel = "time, us (log scale)";
	kt_plot_linear(&p.x, 0.5, (double)e->nevals + 0.5, 1);
	double *xs = kt_xcalloc(e->nevals + 2, sizeof *xs), *ys = kt_xcalloc(e->nevals + 2, sizeof *ys);
	size_t nbest = 0;
	kt_buf tip = {0};
	kt_buf_puts(out, "<figure>");
	kt_plot_begin(&p);
	ref_lines(&p, e);
	for (size_t i = 0; i < e->nevals; i++) {
		const kt_report_eval *ev = &e->evals[i];
		if (ev->status != KT_OK) {
			kt_plot_mark(&p, (double)i + 1, "fail", eval_tip(e, i, &tip));
			continue;
		}
		if (!nbest || ev->us < ys[nbest - 1]) {
			xs[nbest] = (double)i + 1;
			ys[nbest++] = ev->us;
		}
		kt_plot_point(&p, (double)i + 1, ev->us, R_EVAL, (long)i == e->chosen ? "ev chosen" : "ev",
			      eval_tip(e, i, &tip));
	}
	if (nbest) {
		xs[nbest] = (double)e->nevals;
		ys[nbest] = ys[nbest - 1];
		kt_plot_steps(&p, xs, ys, nbest + 1, "best");
	} else {
		kt_plot_note(&p, e->nevals ? "no evaluation passed" : "no evaluations recorded");
	}
	kt_plot_end(&p);
	kt_buf_puts(out, "<figcaption>The search: each evaluation in the order it ran, and the best time so far "
			 "(the line). Failed evaluations are the marks on the x axis.");
	off_axis(e, &p.y, out);
	kt_buf_puts(out, "</figcaption></figure>\n");
	free(xs);
	free(ys);
	kt_buf_free(&tip);
}

/* What the charts' marks mean; only those the record's charts have. */
static void render_legend(kt_buf *out, const kt_report_entry *e)
{
	kt_buf_puts(out, "<p class=\"legend\"><span class=\"sw pt\"></span>evaluation "
			 "<span class=\"sw chosen\"></span>chosen ");
	if (e->dflt >= 0 && e->dflt != e->chosen && e->evals[e->dflt].status == KT_OK)
		kt_buf_puts(out, "<span class=\"sw default\"></span>default ");
	kt_buf_puts(out, "<span class=\"ln best\"></span>best so far ");
	if (e->floor_us > 0)
		kt_buf_puts(out, "<span class=\"ln floor\"></span>roofline floor ");
	if (e->default_us > 0)
		kt_buf_puts(out, "<span class=\"ln default\"></span>default's time ");
	if (e->reference_us > 0)
		kt_buf_puts(out, "<span class=\"ln naive\"></span>naive kernel ");
	if (e->nevals > e->nok)
		kt_buf_puts(out, "<span class=\"ln fail\"></span>failed");
	kt_buf_puts(out, "</p>\n");
}

/* ---- rendering: one record --------------------------------------------------------------- */

static void fact(kt_buf *out, const char *name, const char *html)
{
	kt_buf_printf(out, "<tr><th>%s</th><td>%s</td></tr>\n", name, html);
}

static void fact_configs(kt_buf *out, const kt_report_entry *e)
{
	kt_buf b = {0}, conf = {0};
	kt_record_config_text(&e->rec, &conf);
	kt_buf_puts(&b, "<code>");
	esc(&b, kt_buf_str(&conf));
	kt_buf_puts(&b, "</code>");
	fact(out, "chosen", b.data);
	kt_buf_reset(&b);
	if (e->dflt >= 0) {
		const kt_report_eval *d = &e->evals[e->dflt];
		kt_buf_puts(&b, "<code>");
		esc(&b, d->config);
		kt_buf_puts(&b, "</code>");
		if (d->status != KT_OK)
			escf(&b, " (%s)", status_name(d->status));
	} else {
		kt_buf_puts(&b, "not among the evaluations");
	}
	fact(out, "default", b.data);
	kt_buf_free(&b);
	kt_buf_free(&conf);
}

static void fact_times(kt_buf *out, const kt_report_entry *e)
{
	kt_buf b = {0};
	char t[32], r[32];
	kt_buf_printf(&b, "tuned <b>%s</b> &#177; %.2f us", us_text(e->time_us, t, sizeof t), e->spread_us);
	escf(&b, " (%s)", e->timed);
	kt_buf_printf(&b, "; default %s us (tuned is %s faster)", us_text(e->default_us, t, sizeof t),
		      ratio_text(e->default_us, e->time_us, r, sizeof r));
	if (e->reference_us > 0)
		kt_buf_printf(&b, "; naive %s us (%s)", us_text(e->reference_us, t, sizeof t),
			      ratio_text(e->reference_us, e->time_us, r, sizeof r));
	else
		kt_buf_puts(&b, "; naive: not in the record");
	fact(out, "time", b.data);
	kt_buf_reset(&b);
	const cJSON *roof = cJSON_GetObjectItemCaseSensitive(e->rec.doc, "roofline");
	if (e->floor_us > 0 && e->time_us > 0) {
		kt_buf_printf(&b, "floor %s us at %.2f TB/s", us_text(e->floor_us, t, sizeof t),
			      kt_json_num(roof, "bw_gbs", 0) / 1e3);
		if (kt_json_num(roof, "flops_rate", 0) > 0 && kt_json_num(roof, "flops", 0) > 0)
			kt_buf_printf(&b, " and %.1f TFLOP/s", kt_json_num(roof, "flops_rate", 0) / 1e3);
		kt_buf_printf(&b, 100 * e->floor_us < 10 * e->time_us ? "; tuned reaches <b>%.1f%%</b> of it"
									: "; tuned reaches <b>%.0f%%</b> of it",
			      100 * e->floor_us / e->time_us);
	} else {
		kt_buf_puts(&b, "no floor (the template gives no bytes or flops)");
	}
	fact(out, "roofline", b.data);
	kt_buf_free(&b);
}

static void fact_search(kt_buf *out, const kt_report_entry *e)
{
	const cJSON *doc = e->rec.doc, *s = cJSON_GetObjectItemCaseSensitive(doc, "search");
	const cJSON *rounds = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(doc, "rounds"), "rounds");
	const char *strategy = kt_json_str(s, "strategy"), *seed = kt_json_str(s, "seed");
	kt_buf b = {0};
	escf(&b, "%s, seed %s: %zu evaluations (%zu passed) of a budget of %.0f, %.1f s", strategy ? strategy : "unknown",
	     seed ? seed : "?", e->nevals, e->nok, kt_json_num(s, "budget", 0), kt_json_num(s, "seconds", 0));
	if (cJSON_GetArraySize(rounds) > 1)
		kt_buf_printf(&b, "; %d rounds, the best in round %.0f", cJSON_GetArraySize(rounds),
			      kt_json_num(cJSON_GetObjectItemCaseSensitive(doc, "rounds"), "best_round", 0));
	fact(out, "search", b.data);
	kt_buf_free(&b);
}

static void fact_toolchain(kt_buf *out, const kt_report_entry *e)
{
	const char *arch = kt_report_field(&e->rec, "arch"), *flags = kt_report_field(&e->rec, "flags");
	kt_buf b = {0};
	escf(&b, "%s (cc %s, %s SMs); compiler %s; driver %s, runtime %s; arch %s, flags %s; %s, %s", e->tool[0],
	     e->tool[1], e->tool[2], e->tool[4], e->tool[5], e->tool[6], arch && *arch ? arch : "-",
	     flags && *flags ? flags : "none", e->tool[7], e->rec.date ? e->rec.date : "");
	fact(out, "GPU, toolchain", b.data);
	kt_buf_reset(&b);
	kt_buf_printf(&b, "<code>%s</code>", e->rec.key);
	fact(out, "key", b.data);
	kt_buf_free(&b);
}

static void render_failures(kt_buf *out, const kt_report_entry *e)
{
	kt_buf_puts(out, "<table class=\"fails\"><thead><tr><th>status</th><th>evaluations</th><th>first message</th>"
			 "</tr></thead><tbody>");
	for (int s = 0; s <= KT_NSTATUS; s++) {
		if (!e->counts[s] && s != KT_OK)
			continue;
		const char *m = e->first_msg[s];
		kt_buf_printf(out, "<tr class=\"%s\"><td>%s</td><td class=\"num\">%d</td><td>", s == KT_OK ? "ok" : "bad",
			      status_name(s), e->counts[s]);
		if (m) {
			kt_buf t = {0};
			kt_buf_add(&t, m, kt_utf8_cut(m, strlen(m), MSG_MAX));
			kt_buf_puts(out, "<code>");
			esc(out, kt_buf_str(&t));
			kt_buf_puts(out, strlen(m) > t.len ? "...</code>" : "</code>");
			kt_buf_free(&t);
		}
		kt_buf_puts(out, "</td></tr>");
	}
	kt_buf_puts(out, "</tbody></table>\n");
}

static void render_entry(kt_buf *out, const kt_report_entry *e)
{
	kt_buf_printf(out, "<section class=\"rec\" id=\"r-%s\"><h3>", e->rec.key);
	esc(out, e->rec.kernel);
	kt_buf_puts(out, " <span class=\"shape\">");
	esc(out, e->rec.shape);
	kt_buf_puts(out, "</span> <span class=\"variant\">");
	escf(out, "%s%s%s", e->variant, *e->variant ? " on " : "", e->rec.gpu.name);
	kt_buf_puts(out, "</span></h3>\n<table class=\"facts\">");
	fact_configs(out, e);
	fact_times(out, e);
	fact_search(out, e);
	fact_toolchain(out, e);
	kt_buf_puts(out, "</table>\n<div class=\"plots\">");
	render_scatter(out, e);
	render_progress(out, e);
	kt_buf_puts(out, "</div>\n");
	render_legend(out, e);
	render_failures(out, e);
	kt_buf_puts(out, "</section>\n");
}

/* ---- rendering: the page ----------------------------------------------------------------- */

static const char PAGE_CSS[] =
	"body{font:14px/1.45 system-ui,sans-serif;color:#1d2125;margin:24px auto;max-width:1180px;padding:0 16px}"
	"h1{font-size:24px;margin:0 0 4px}h2{font-size:19px;margin:28px 0 8px;border-bottom:1px solid #ccd}"
	"h3{font-size:16px;margin:0 0 8px}h3 .shape{font-weight:600;color:#2456a8}h3 .variant{font-weight:400;color:#555}"
	".sub,.note{color:#555;font-size:12.5px}"
	"table{border-collapse:collapse;font-size:12.5px}th,td{padding:3px 7px;text-align:left;vertical-align:top}"
	"thead th{background:#eef0f4;border-bottom:1px solid #bbc}tbody tr:nth-child(even){background:#f7f8fa}"
	"table.summary td,table.tools td{white-space:nowrap}tr.first td{border-top:1px solid #ccd}"
	"td.num{text-align:right;font-variant-numeric:tabular-nums}td.bad{color:#b3261e;font-weight:600}"
	"code{font:12px ui-monospace,monospace;background:#f1f2f4;padding:0 3px;border-radius:3px}"
	"section.rec{margin:22px 0;padding:14px 16px;border:1px solid #d8dbe0;border-radius:6px}"
	"table.facts th{color:#555;font-weight:600;white-space:nowrap;width:110px}table.facts tr{background:none}"
	".plots{display:flex;flex-wrap:wrap;gap:12px;margin-top:10px}"
	"figure{margin:0;width:560px}figcaption{font-size:12px;color:#555}"
	"table.fails tr.bad td:first-child{color:#b3261e}"
	".legend{font-size:12px;color:#333;margin:6px 0}"
	".sw{display:inline-block;width:9px;height:9px;border-radius:50%;margin:0 3px 0 10px;vertical-align:middle}"
	".ln{display:inline-block;width:18px;height:0;margin:0 3px 0 10px;vertical-align:middle;border-top:2px solid}"
	".sw.pt{background:#4c78a8}.sw.chosen{background:#e4572e}.sw.default{background:#54a24b}"
	".ln.best{border-color:#e4572e}.ln.floor{border-top:2px dashed #555}.ln.default{border-top:2px dashed #54a24b}"
	".ln.naive{border-top:2px dashed #b279a2}.ln.fail{width:0;height:9px;border-top:0;border-left:2px solid #b3261e}"
	"circle.pt,circle.ev{fill:#4c78a8;fill-opacity:.6}circle.default{fill:#54a24b;fill-opacity:1;stroke:#fff}"
	"circle.chosen{fill:#e4572e;fill-opacity:1;stroke:#fff;stroke-width:1.5}"
	"path.best{fill:none;stroke:#e4572e;stroke-width:2}"
	"line.ref{stroke-width:1.5;stroke-dasharray:6 4}line.floor{stroke:#555}line.default{stroke:#54a24b}"
	"line.naive{stroke:#b279a2}line.fail{stroke:#b3261e;stroke-width:1.5}"
	"footer{margin-top:30px;color:#777;font-size:12px}";

static void render_head(kt_buf *out, const kt_report_opts *o, const kt_report_page *pg)
{
	const char *title = o->title ? o->title : DEFAULT_TITLE;
	kt_buf_puts(out, "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
			 "<meta http-equiv=\"Content-Security-Policy\" content=\"" PAGE_CSP "\">"
			 "<meta name=\"generator\" content=\"kt " KT_VERSION "\"><title>");
	esc(out, title);
	kt_buf_printf(out, "</title>\n<style>%s%s</style></head>\n<body>\n<h1>", kt_plot_css(), PAGE_CSS);
	esc(out, title);
	kt_buf_printf(out, "</h1>\n<p class=\"sub\">%zu record%s of %d kernel%s, from ", pg->n, pg->n == 1 ? "" : "s",
		      kt_report_kernels(pg), kt_report_kernels(pg) == 1 ? "" : "s");
	for (int i = 0; i < o->ndirs; i++) {
		kt_buf_puts(out, i ? ", <code>" : "<code>");
		esc(out, o->dirs[i].path);
		kt_buf_puts(out, "</code> (");
		esc(out, o->dirs[i].what);
		kt_buf_puts(out, ")");
	}
	if (o->kernel || o->gpu)
		escf(out, "; only %s%s%s%s", o->kernel ? "kernels " : "", o->kernel ? o->kernel : "",
		     o->kernel && o->gpu ? ", " : "", o->gpu ? o->gpu : "");
	if (o->nkeys)
		kt_buf_printf(out, "; %d requested key%s", o->nkeys, o->nkeys == 1 ? "" : "s");
	kt_buf_puts(out, ".</p>\n");
}

static void render_skipped(kt_buf *out, const kt_report_page *pg)
{
	if (!pg->nskipped)
		return;
	kt_buf_printf(out, "<h2 id=\"skipped\">Skipped records</h2>\n<p class=\"note\">%zu record%s could not be read "
			   "and %s not shown:</p>\n<ul>",
		      pg->nskipped, pg->nskipped == 1 ? "" : "s", pg->nskipped == 1 ? "is" : "are");
	for (size_t i = 0; i < pg->nskipped; i++) {
		kt_buf_puts(out, "<li><code>");
		esc(out, pg->skipped[i]);
		kt_buf_puts(out, "</code></li>");
	}
	kt_buf_puts(out, "</ul>\n");
}

void kt_report_render(kt_buf *out, const kt_report_opts *o, const kt_report_page *pg)
{
	render_head(out, o, pg);
	if (pg->n) {
		render_summary(out, pg);
		render_toolchains(out, pg);
		kt_buf_puts(out, "<h2 id=\"records\">Records</h2>\n");
	} else {
		kt_buf_puts(out, "<p class=\"note\">No records match.</p>\n");
	}
	for (size_t i = 0; i < pg->n; i++)
		render_entry(out, &pg->e[i]);
	render_skipped(out, pg);
	kt_buf_puts(out, "<footer id=\"kt-report-end\">Written by kt " KT_VERSION
			 " (<code>kt report</code>); self-contained: no scripts, nothing fetched.</footer>\n"
			 "</body></html>\n");
}

