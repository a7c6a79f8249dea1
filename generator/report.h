/* report.h - the tuning report: one self-contained HTML page (inline CSS and SVG; no script,
 * nothing fetched) from the records in directory tiers of the cache.
 *
 * The page opens with a summary table (one row per record: tuned, default and naive times, the
 * roofline floor and the share of it reached), then the GPUs and toolchains the records were
 * tuned with, then one section per record: the chosen configuration against the default, the
 * search, a scatter of every passing evaluation's time by the parameter that matters most
 * (kt_report_main_param), the best time so far against the evaluation number, and the failures
 * by cause.  The last element of the body is <footer id="kt-report-end">, so a reader (or a
 * test) can tell a complete page from a cut one.  docs/report.md describes the page.
 *
 * A record that cannot be read is skipped with a warning (and listed on the page), never an
 * error; a directory that does not exist, or a requested key that no directory holds, is one.
 */
#ifndef KT_REPORT_H
#define KT_REPORT_H

#include <stddef.h>

#include "util.h"

/* A directory tier to read. */
typedef struct kt_report_dir {
	const char *path;
	const char *what; /* how messages and the page name it, e.g. "--project-cache" */
} kt_report_dir;

typedef struct kt_report_opts {
	const kt_report_dir *dirs; /* read in order; a key in two of them is taken from the first */
	int ndirs;
	const char *kernel;        /* only kernels whose name matches this fnmatch pattern; NULL: all */
	const char *gpu;           /* only records of the GPU of this name; NULL: all */
	const char *const *keys;   /* only these keys (32 hex digits), each of which must be found */
	int nkeys;                 /* 0: every key */
	const char *title;         /* NULL: "kt tuning report" */
	const char *out;           /* the page's path; written atomically */
	void (*warn)(void *ctx, const char *msg); /* a record skipped, and why; NULL: dropped */
	void *warn_ctx;
} kt_report_opts;

/* What a page holds. */
typedef struct kt_report_stats {
	int records; /* records shown */
	int kernels; /* distinct kernel names among them */
	int skipped; /* records that could not be read */
} kt_report_stats;

/* Reads the records o selects, renders the page and writes it to o->out.  0 with *st filled (st
 * may be NULL); -1 with err naming the bad directory, key or output. */
int kt_report_write(const kt_report_opts *o, kt_report_stats *st, kt_err *err);

/* The parameter that matters most, by a rule simple enough to check by hand: group the passing
 * evaluations by the parameter's value and take the share of the variance of log(time) that the
 * groups explain, adjusted for the number of groups (epsilon squared:
 * (SS_between - (k - 1) * SS_within / (n - k)) / SS_total, so that a parameter with many values
 * is not favoured by chance).  vals holds n rows of np value indices (row i: evaluation i's
 * value of each parameter), us their times; rows whose time is not positive and finite are left
 * out.  A parameter counts when it takes k >= 2 values among the rows left and n > k.  Returns
 * the index of the parameter with the largest share (the first on a tie) and its share in *share
 * (which may be <= 0: no parameter explains more than chance); -1 when no parameter counts or
 * every time is the same. */
int kt_report_main_param(const int *vals, const double *us, size_t n, int np, double *share);

#endif
