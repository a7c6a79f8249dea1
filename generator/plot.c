/* plot.c - small charts as inline SVG (see plot.h). */
#include "plot.h"

#include <float.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

/* The plot area's distance from the svg's edges, in pixels: room for the tick labels and the
 * axis labels on the left and at the bottom. */
enum { MARGIN_LEFT = 62, MARGIN_RIGHT = 14, MARGIN_TOP = 10, MARGIN_BOTTOM = 44 };
enum { MAX_TICKS = 32, MAX_LOG_TICKS = 8, MARK_PX = 7 };
#define FIT_MARGIN 0.06 /* of the range (linear) or of the decades (log) added at either end */
#define ONE_VALUE_SPREAD 0.1 /* one value: the axis reaches 10% either side of it */

void kt_plot_linear(kt_plot_axis *a, double lo, double hi, int integer)
{
	if (!(hi > lo)) {
		hi = lo + 0.5;
		lo -= 0.5;
	}
	*a = (kt_plot_axis){.lo = lo, .hi = hi, .log = 0, .integer = integer};
}

void kt_plot_fit(kt_plot_axis *a, const double *v, size_t n)
{
	double lo = INFINITY, hi = -INFINITY;
	for (size_t i = 0; i < n; i++)
		if (isfinite(v[i]) && v[i] > 0) {
			lo = fmin(lo, v[i]);
			hi = fmax(hi, v[i]);
		}
	if (!isfinite(lo)) {
		kt_plot_linear(a, 0, 1, 0);
	} else if (hi == lo) {
		kt_plot_linear(a, lo * (1 - ONE_VALUE_SPREAD), lo * (1 + ONE_VALUE_SPREAD), 0);
	} else if (hi / lo >= KT_PLOT_LOG_SPAN) {
		double pad = pow(hi / lo, FIT_MARGIN);
		*a = (kt_plot_axis){.lo = fmax(lo / pad, DBL_MIN), .hi = fmin(hi * pad, DBL_MAX), .log = 1};
	} else {
		double pad = (hi - lo) * FIT_MARGIN;
		kt_plot_linear(a, fmax(0, lo - pad), fmin(hi + pad, DBL_MAX), 0);
	}
}

double kt_plot_frac(const kt_plot_axis *a, double v)
{
	double f;
	if (!isfinite(v) || (a->log && v <= 0))
		return 0;
	if (a->log)
		f = (log(v) - log(a->lo)) / (log(a->hi) - log(a->lo));
	else
		f = (v - a->lo) / (a->hi - a->lo);
	return f < 0 ? 0 : f > 1 ? 1 : f;
}

/* The step of about n ticks across range: 1, 2 or 5 times a power of ten. */
static double nice_step(double range, int n)
{
	double raw = range / n, p = pow(10, floor(log10(raw))), m = raw / p;
	return (m < 1.5 ? 1 : m < 3.5 ? 2 : m < 7.5 ? 5 : 10) * p;
}

static int linear_ticks(const kt_plot_axis *a, double *out, int max)
{
	double step = nice_step(a->hi - a->lo, 5);
	if (a->integer && step < 1)
		step = 1;
	int n = 0;
	for (double k = ceil(a->lo / step - 1e-9); n < max; k++) {
		double v = k * step;
		if (v > a->hi + step * 1e-9)
			break;
		out[n++] = fabs(v) < step * 1e-9 ? 0 : v;
	}
	return n;
}

static int log_ticks(const kt_plot_axis *a, double *out, int max)
{
	static const double fine[] = {1, 2, 5}, coarse[] = {1};
	int d0 = (int)floor(log10(a->lo)), d1 = (int)ceil(log10(a->hi)), few = log10(a->hi / a->lo) <= 2 + 1e-9;
	const double *mult = few ? fine : coarse;
	int nmult = few ? 3 : 1, n = 0, step = (d1 - d0 + MAX_LOG_TICKS - 1) / MAX_LOG_TICKS;
	for (int d = d0; d <= d1; d += step > 1 ? step : 1)
		for (int i = 0; i < nmult && n < max; i++) {
			double v = mult[i] * pow(10, d);
			if (v >= a->lo && v <= a->hi)
				out[n++] = v;
		}
	return n;
}

int kt_plot_ticks(const kt_plot_axis *a, double *out, int max)
{
	return a->log ? log_ticks(a, out, max) : linear_ticks(a, out, max);
}

/* ---- drawing ---- */

static double px_x(const kt_plot *p, double x)
{
	return MARGIN_LEFT + kt_plot_frac(&p->x, x) * (p->width - MARGIN_LEFT - MARGIN_RIGHT);
}

static double px_y(const kt_plot *p, double y)
{
	return p->height - MARGIN_BOTTOM - kt_plot_frac(&p->y, y) * (p->height - MARGIN_TOP - MARGIN_BOTTOM);
}

void kt_plot_escape(kt_buf *out, const char *s)
{
	for (; s && *s; s++) {
		switch (*s) {
		case '&': kt_buf_puts(out, "&amp;"); break;
		case '<': kt_buf_puts(out, "&lt;"); break;
		case '>': kt_buf_puts(out, "&gt;"); break;
		case '"': kt_buf_puts(out, "&quot;"); break;
		case '\'': kt_buf_puts(out, "&#39;"); break;
		default: kt_buf_putc(out, *s);
		}
	}
}

static void tip(kt_buf *out, const char *text)
{
	if (!text)
		return;
	kt_buf_puts(out, "<title>");
	kt_plot_escape(out, text);
	kt_buf_puts(out, "</title>");
}

/* A tick label: %g keeps 0.5, 20 and 1e+03 short. */
static void tick_text(double v, char *s, size_t n)
{
	snprintf(s, n, "%g", v);
}

static void y_grid(const kt_plot *p)
{
	double ticks[MAX_TICKS];
	int n = kt_plot_ticks(&p->y, ticks, MAX_TICKS);
	for (int i = 0; i < n; i++) {
		double y = px_y(p, ticks[i]);
		char s[32];
		tick_text(ticks[i], s, sizeof s);
		kt_buf_printf(p->out, "<line class=\"kp-grid\" x1=\"%d\" x2=\"%d\" y1=\"%.1f\" y2=\"%.1f\"/>", MARGIN_LEFT,
			      p->width - MARGIN_RIGHT, y, y);
		kt_buf_printf(p->out, "<text class=\"kp-tick\" x=\"%d\" y=\"%.1f\" text-anchor=\"end\">%s</text>",
			      MARGIN_LEFT - 5, y + 4, s);
	}
}

static void x_label_at(const kt_plot *p, double x, const char *text)
{
	kt_buf_printf(p->out, "<text class=\"kp-tick\" x=\"%.1f\" y=\"%d\" text-anchor=\"middle\">", px_x(p, x),
		      p->height - MARGIN_BOTTOM + 15);
	kt_plot_escape(p->out, text);
	kt_buf_puts(p->out, "</text>");
}

static void x_grid(const kt_plot *p)
{
	if (p->cats) {
		for (int i = 0; i < p->ncats; i++) {
			if (i) {
				double x = px_x(p, i - 0.5);
				kt_buf_printf(p->out, "<line class=\"kp-grid\" x1=\"%.1f\" x2=\"%.1f\" y1=\"%d\" y2=\"%d\"/>", x,
					      x, MARGIN_TOP, p->height - MARGIN_BOTTOM);
			}
			x_label_at(p, i, p->cats[i]);
		}
		return;
	}
	double ticks[MAX_TICKS];
	int n = kt_plot_ticks(&p->x, ticks, MAX_TICKS);
	for (int i = 0; i < n; i++) {
		char s[32];
		tick_text(ticks[i], s, sizeof s);
		x_label_at(p, ticks[i], s);
	}
}

void kt_plot_begin(kt_plot *p)
{
	if (p->cats)
		kt_plot_linear(&p->x, -0.5, p->ncats - 0.5, 1);
	kt_buf_printf(p->out, "<svg xmlns=\"http://www.w3.org/2000/svg\" class=\"kp\" data-plot=\"");
	kt_plot_escape(p->out, p->kind);
	kt_buf_printf(p->out, "\" width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\">", p->width, p->height, p->width,
		      p->height);
	kt_buf_printf(p->out, "<rect class=\"kp-area\" x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\"/>", MARGIN_LEFT,
		      MARGIN_TOP, p->width - MARGIN_LEFT - MARGIN_RIGHT, p->height - MARGIN_TOP - MARGIN_BOTTOM);
	y_grid(p);
	x_grid(p);
	kt_buf_printf(p->out, "<text class=\"kp-label\" x=\"%.1f\" y=\"%d\" text-anchor=\"middle\">",
		      MARGIN_LEFT + (p->width - MARGIN_LEFT - MARGIN_RIGHT) / 2.0, p->height - 8);
	kt_plot_escape(p->out, p->xlabel);
	kt_buf_printf(p->out,
		      "</text><text class=\"kp-label\" text-anchor=\"middle\" transform=\"translate(14 %.1f) rotate(-90)\">",
		      MARGIN_TOP + (p->height - MARGIN_TOP - MARGIN_BOTTOM) / 2.0);
	kt_plot_escape(p->out, p->ylabel);
	kt_buf_puts(p->out, "</text>");
}

void kt_plot_hline(const kt_plot *p, double y, const char *cls, const char *tiptext)
{
	double py = px_y(p, y);
	kt_buf_printf(p->out, "<line class=\"%s\" x1=\"%d\" x2=\"%d\" y1=\"%.1f\" y2=\"%.1f\">", cls, MARGIN_LEFT,
		      p->width - MARGIN_RIGHT, py, py);
	tip(p->out, tiptext);
	kt_buf_puts(p->out, "</line>");
}

void kt_plot_point(const kt_plot *p, double x, double y, double r, const char *cls, const char *tiptext)
{
	kt_buf_printf(p->out, "<circle class=\"%s\" cx=\"%.1f\" cy=\"%.1f\" r=\"%.1f\">", cls, px_x(p, x), px_y(p, y), r);
	tip(p->out, tiptext);
	kt_buf_puts(p->out, "</circle>");
}

void kt_plot_mark(const kt_plot *p, double x, const char *cls, const char *tiptext)
{
	double px = px_x(p, x);
	int base = p->height - MARGIN_BOTTOM;
	kt_buf_printf(p->out, "<line class=\"%s\" x1=\"%.1f\" x2=\"%.1f\" y1=\"%d\" y2=\"%d\">", cls, px, px, base,
		      base - MARK_PX);
	tip(p->out, tiptext);
	kt_buf_puts(p->out, "</line>");
}

void kt_plot_steps(const kt_plot *p, const double *xs, const double *ys, size_t n, const char *cls)
{
	if (!n)
		return;
	kt_buf_printf(p->out, "<path class=\"%s\" d=\"M%.1f %.1f", cls, px_x(p, xs[0]), px_y(p, ys[0]));
	for (size_t i = 1; i < n; i++)
		kt_buf_printf(p->out, "H%.1fV%.1f", px_x(p, xs[i]), px_y(p, ys[i]));
	kt_buf_puts(p->out, "\"/>");
}

void kt_plot_note(const kt_plot *p, const char *text)
{
	kt_buf_printf(p->out, "<text class=\"kp-note\" x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">",
		      MARGIN_LEFT + (p->width - MARGIN_LEFT - MARGIN_RIGHT) / 2.0,
		      MARGIN_TOP + (p->height - MARGIN_TOP - MARGIN_BOTTOM) / 2.0);
	kt_plot_escape(p->out, text);
	kt_buf_puts(p->out, "</text>");
}

void kt_plot_end(const kt_plot *p)
{
	kt_buf_puts(p->out, "</svg>");
}

const char *kt_plot_css(void)
{
	return ".kp{font:11px system-ui,sans-serif;overflow:visible}"
	       ".kp-area{fill:#fbfbfd;stroke:#9aa0a6}"
	       ".kp-grid{stroke:#e3e5e8}"
	       ".kp-tick{fill:#444}"
	       ".kp-label{fill:#222;font-size:12px}"
	       ".kp-note{fill:#777;font-size:13px}";
}
