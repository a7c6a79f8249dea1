/* measure.h - how a variant is timed: the state of the L2 cache when a timed launch starts, and
 * how the launches reach the GPU.
 *
 *   l2      cold (the default): each timed launch meets its arguments in DRAM, as a first touch
 *           (the worker rotates through copies of them that span more than the L2: worker.c);
 *           warm: each timed launch reuses one copy, which the launch before it left in the L2,
 *           for kernels whose inputs are hot in real use (made just before by another kernel)
 *   launch  stream (the default): each sample is one launch on the stream;
 *           graph: each sample is a replay of a captured CUDA graph of several launches, back to
 *           back (the way LLM decode runs its kernels), timed per launch
 *
 * A setting comes from the command (kt tune and kt generate --l2, --launch; kt_add_tuned_kernel's
 * L2 and LAUNCH), else from the template (`@kt l2 warm`, `@kt launch graph`), else its default.
 *
 * Keys and records, by one rule (kt_measure_fields): a setting at its default is not a key field,
 * so the keys of records measured before the settings existed (the committed cache/) still hit;
 * a setting away from its default is the field measure.NAME=VALUE, after every other field.  The
 * worker protocol carries the same fields.  A record states every setting ("measure": {"l2":
 * "cold", "launch": "stream"}); a record without them was measured by the old worker: the L2 as
 * that worker left it (KT_MEASURE_UNSET), launches on the stream.
 */
#ifndef KT_MEASURE_H
#define KT_MEASURE_H

#include <stddef.h>

#include "util.h"

typedef enum kt_measure_setting { KT_MEASURE_L2, KT_MEASURE_LAUNCH, KT_NMEASURE } kt_measure_setting;

enum { KT_L2_COLD, KT_L2_WARM };            /* the values of KT_MEASURE_L2, in kt_measure_infos' order */
enum { KT_LAUNCH_STREAM, KT_LAUNCH_GRAPH }; /* the values of KT_MEASURE_LAUNCH */
enum { KT_MEASURE_UNSET = -1 };             /* not given (a command or template), not known (an old record) */

/* Each setting's value, an index into its kt_measure_info.values.  Zero-initialised, it is the
 * defaults; a partial one (what a command or a template gives) starts as kt_measure_unset's. */
typedef struct kt_measure {
	int v[KT_NMEASURE];
} kt_measure;

typedef struct kt_measure_info {
	const char *name;          /* "l2": the option --l2, the directive, the key field measure.l2 */
	const char *what;          /* "L2 state", for messages */
	const char *const *values; /* its words, the default first: "cold", "warm" */
	int nvalues;
	const char *const *words;  /* each value for people: "cold L2" */
	const char *unknown;       /* how the old worker measured: "L2 as the old worker left it" */
} kt_measure_info;

extern const kt_measure_info kt_measure_infos[KT_NMEASURE];

/* The value of setting s spelt word[0..n), or -1. */
int kt_measure_value(kt_measure_setting s, const char *word, size_t n);
/* Appends setting s's values as "cold or warm". */
void kt_measure_values(kt_measure_setting s, kt_buf *out);
/* Sets m's setting s from word; -1 with a bad-input err "unknown L2 state 'hot' (expected cold or
 * warm)" otherwise. */
int kt_measure_set(kt_measure *m, kt_measure_setting s, const char *word, kt_err *err);
/* Every setting KT_MEASURE_UNSET. */
void kt_measure_unset(kt_measure *m);
/* Each setting from given, else from tmpl, else its default (either may be NULL). */
void kt_measure_resolve(const kt_measure *given, const kt_measure *tmpl, kt_measure *out);
/* The rule: appends "measure.NAME=VALUE" and sep for each setting of m away from its default. */
void kt_measure_fields(const kt_measure *m, char sep, kt_buf *out);
/* One such field read into m: 1 when text is one, 0 when it is no measure field, -1 with err when
 * it names a setting with a value that is none of its values. */
int kt_measure_field(kt_measure *m, const char *text, kt_err *err);
/* "cold L2, stream launches"; an unset setting as the old worker measured it. */
void kt_measure_describe(const kt_measure *m, kt_buf *out);

#endif
