/* report_int.h - what report.c (reading the records) and report_page.c (writing the page) share;
 * not a public contract. */
#ifndef KT_REPORT_INT_H
#define KT_REPORT_INT_H

#include <stddef.h>

#include "record.h"
#include "report.h"
#include "result.h"

struct cJSON;

#define KT_REPORT_STATUS_UNKNOWN KT_NSTATUS /* an evaluation whose status this kt does not know */
enum { KT_REPORT_NTOOL = 8 };

/* A declared parameter, from the record's key field param.NAME ("int 1,2,4 default 2"). */
typedef struct kt_report_param {
	const char *name;
	const char **vals; /* the declared values, then values met only in evaluations */
	int nvals, cap;
	int dflt;          /* index of the default value, -1 when the field has none */
} kt_report_param;

typedef struct kt_report_eval {
	int *v;             /* each parameter's value index; -1 when the entry has none */
	int status;         /* index into kt_status_names, or KT_REPORT_STATUS_UNKNOWN */
	double us;          /* the median time when ok, else NAN */
	const char *config; /* "BLOCK=128,VEC=4" */
	const char *msg;    /* why it failed, or NULL */
} kt_report_eval;

/* A record and what the page computes from it.  Everything but rec lives in the page's arena. */
typedef struct kt_report_entry {
	kt_record rec;
	const char *variant; /* the key fields that tell records of one kernel and shape apart */
	kt_report_param *params;
	int nparams;
	kt_report_eval *evals;
	size_t nevals, nok;
	long chosen, dflt;   /* evaluation index of the chosen and of the default configuration, or -1 */
	double time_us, spread_us, floor_us, default_us, reference_us;
	int counts[KT_NSTATUS + 1];
	const char *first_msg[KT_NSTATUS + 1];
	const char *tool[KT_REPORT_NTOOL]; /* GPU, cc, SMs, L2 bytes, compiler, driver, runtime, tool */
	const char *timed;   /* how its times were taken: "cold L2, stream launches" (kt_measure_describe) */
} kt_report_entry;

typedef struct kt_report_page {
	kt_arena *a;
	kt_report_entry *e;
	size_t n, cap;
	const char **skipped; /* "PATH: WHY" */
	size_t nskipped, skipcap;
} kt_report_page;

/* A key field of r (its "fields" object), or NULL. */
const char *kt_report_field(const kt_record *r, const char *name);
/* The number of distinct kernels of pg (its entries are sorted by kernel). */
int kt_report_kernels(const kt_report_page *pg);

/* The page of pg's entries (sorted) as HTML, for the options o. */
void kt_report_render(kt_buf *out, const kt_report_opts *o, const kt_report_page *pg);

#endif
