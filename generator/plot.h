/* plot.h - small charts as inline SVG text, for pages that must stand alone (no scripts, no
 * network): a frame with a y axis (linear, or logarithmic when the values span a decade), a
 * numeric or categorical x axis, points, horizontal reference lines, a step line, marks on the
 * x axis for events without a value, and a note.
 *
 * A chart is a kt_plot the caller fills (the axes in data units, the size in pixels) and a
 * sequence of calls between kt_plot_begin and kt_plot_end that append SVG to p->out.  Data lands
 * inside the plot area; values outside an axis are clamped to its edge.  Every text that comes in
 * (labels, tooltips) is escaped.  The frame's look is kt_plot_css(); the caller's CSS styles the
 * classes it gives to data (points, lines, marks).
 */
#ifndef KT_PLOT_H
#define KT_PLOT_H

#include <stddef.h>

#include "util.h"

#define KT_PLOT_LOG_SPAN 10.0 /* max/min at or above which kt_plot_fit makes a logarithmic axis */

typedef struct kt_plot_axis {
	double lo, hi; /* lo < hi; for a logarithmic axis 0 < lo */
	int log;
	int integer;   /* ticks only at whole numbers (an axis of counts) */
} kt_plot_axis;

/* Fits an axis to the positive finite values of v[0..n) (the others are ignored), with a margin:
 * logarithmic when max/min >= KT_PLOT_LOG_SPAN, else linear and never below 0.  One value, or
 * all equal: a linear range 10% either side of it.  None: linear [0, 1]. */
void kt_plot_fit(kt_plot_axis *a, const double *v, size_t n);
/* A linear axis over [lo, hi]; an empty or reversed range becomes [lo - 0.5, lo + 0.5]. */
void kt_plot_linear(kt_plot_axis *a, double lo, double hi, int integer);
/* Where v lies along a: 0 at lo, 1 at hi, clamped to [0, 1] (a non-finite or, on a log axis,
 * non-positive v gives 0). */
double kt_plot_frac(const kt_plot_axis *a, double v);
/* Up to max tick values inside a, ascending; returns how many.  Linear: steps of 1, 2 or 5 times a
 * power of ten (whole numbers for an integer axis).  Logarithmic: the powers of ten (every k-th
 * one when there are more than eight), and their 2 and 5 multiples when the axis spans at most
 * two decades. */
int kt_plot_ticks(const kt_plot_axis *a, double *out, int max);

typedef struct kt_plot {
	kt_buf *out;              /* where the SVG goes */
	const char *kind;         /* the svg element's data-plot attribute, e.g. "scatter" */
	const char *xlabel, *ylabel;
	int width, height;        /* pixels, margins included */
	kt_plot_axis x, y;
	const char *const *cats;  /* a categorical x axis: labels of 0 .. ncats-1; NULL: numeric */
	int ncats;
} kt_plot;

/* Opens the <svg> and draws the frame: grid, ticks and their labels, the axis labels.  For a
 * categorical x axis, p->x is set to [-0.5, ncats - 0.5] here. */
void kt_plot_begin(kt_plot *p);
/* A horizontal line across the plot area at y (class cls), with tip as its tooltip (may be NULL). */
void kt_plot_hline(const kt_plot *p, double y, const char *cls, const char *tip);
/* A point (a circle of radius r pixels, class cls) with tip as its tooltip (may be NULL). */
void kt_plot_point(const kt_plot *p, double x, double y, double r, const char *cls, const char *tip);
/* A short mark at x on the bottom edge of the plot area, for an event that has no y value. */
void kt_plot_mark(const kt_plot *p, double x, const char *cls, const char *tip);
/* A step line through (xs[i], ys[i]): each value holds until the next x.  Nothing when n is 0. */
void kt_plot_steps(const kt_plot *p, const double *xs, const double *ys, size_t n, const char *cls);
/* A line of text in the middle of the plot area (e.g. why there is nothing to plot). */
void kt_plot_note(const kt_plot *p, const char *text);
void kt_plot_end(const kt_plot *p);

/* The CSS of the frame's classes (all prefixed "kp-"), for the page's <style>. */
const char *kt_plot_css(void);

/* Appends s escaped for HTML and SVG text and attribute values (& < > " '). */
void kt_plot_escape(kt_buf *out, const char *s);

#endif
