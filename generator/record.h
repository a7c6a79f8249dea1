/* record.h - one cache record: the JSON document stored under a key.
 *
 * A record holds the key's fields in full, the chosen configuration (parameter name -> value),
 * its time and spread, how the times were taken (measure.h), the roofline figures, every
 * evaluated configuration with its status and time, the rivals of the final choice with their tie
 * set (optional), the search that was run, the tool, driver and runtime versions and the date.  It
 * holds values, never code.  The layout is documented in docs/cache.md.
 *
 * Reading is two steps: kt_record_read checks the document on its own (format version, the key
 * is the hash of the stored fields, a configuration is present), which is all `kt cache verify`
 * can know; kt_record_match then checks it against what a lookup expects (every key field, and
 * the configuration against the declared space and its constraints at the shape).
 */
#ifndef KT_RECORD_H
#define KT_RECORD_H

#include <stddef.h>
#include <stdint.h>

#include "key.h"
#include "result.h"
#include "tmpl.h"
#include "util.h"

struct cJSON;

/* A record as read.  Owns everything; release with kt_record_free. */
typedef struct kt_record {
	int format;
	char key[KT_KEY_HEX];
	kt_buf fields;         /* the key fields as text, in the stored order */
	const char *kernel;    /* borrowed from doc */
	const char *shape;     /* "rows=4096,hidden=4096" */
	const char *date;
	kt_gpu_id gpu;
	double time_us, spread_us;
	struct cJSON *doc;     /* the parsed document */
} kt_record;

/* How a record's template and configuration came to be: each a JSON document (borrowed), or NULL
 * for none.  Both are optional fields of the record; a record without them reads as before. */
typedef struct kt_record_history {
	const char *refactor; /* stage 1: the template's kt refactor provenance (kt_provenance_json) */
	const char *rounds;   /* stage 2: the tuning rounds (kt_rounds_json) */
} kt_record_history;

/* The JSON text of a record for key k of problem p (the tuned configuration r->best), with the
 * history h (NULL: none) as the fields "refactor" and "rounds", in that order.  The caller frees
 * it.  NULL with err when r chose nothing, or (internal) when a history document is not JSON. */
char *kt_record_json(const kt_key *k, const kt_problem *p, const kt_tune_result *r, const kt_record_history *h,
		     kt_err *err);

/* Parses and checks a record on its own.  0 on success; -1 with err saying what is wrong. */
int kt_record_read(const char *text, size_t len, kt_record *out, kt_err *err);
/* The same without its bulk, the evaluations ("evaluated", "retimed", "rounds", "refactor"),
 * which are skipped unparsed: for a scan over many records that needs their fields, date and
 * configuration only (a record of 2,000 evaluations is 0.8 MB, its head 5 kB).  What it leaves
 * out is not checked, and kt_record_result finds no evaluations in it. */
int kt_record_read_head(const char *text, size_t len, kt_record *out, kt_err *err);

/* Checks r against the expected key (every field) and reads its configuration into cfg
 * (t->nparams value indices), which must be declared values satisfying every constraint at
 * shape.  0 on success; -1 with err naming the first mismatch. */
int kt_record_match(const kt_record *r, const kt_key *expect, const kt_tmpl *t, const int64_t *shape,
		    uint16_t *cfg, kt_err *err);

/* The stored evaluations as a tuning result in t's value indices (released with
 * kt_tune_result_free): each "evaluated" entry with its status, time, spread and resources, in
 * the stored order, and best at the entry of the record's configuration (-1 when none is), and
 * the rivals of the final choice ("retimed"; none in older records) at their entries.  An
 * entry whose configuration t cannot express is skipped.  Call after kt_record_match.  The
 * same as the result that was stored, so what is computed from it (the robust fallback) does
 * not depend on whether a shape was just tuned or came from the cache. */
void kt_record_result(const kt_record *r, const kt_tmpl *t, kt_tune_result *out);

/* A configuration object as records store it (parameter name -> value) read into cfg
 * (t->nparams value indices): every declared parameter exactly once, each with a declared value.
 * 0 on success; -1 with err naming the first parameter that is missing, unknown or undeclared. */
int kt_record_config_read(const struct cJSON *conf, const kt_tmpl *t, uint16_t *cfg, kt_err *err);

/* A configuration of another version of t's template (a record that kt_key_same_problem pairs
 * with t's problem) read into cfg: each parameter it sets must still be declared, with that
 * value; one it does not set (declared since) takes t's default, which is how a parameter is
 * usually added.  0 on success; -1 with err naming the first parameter t cannot take. */
int kt_record_config_adapt(const struct cJSON *conf, const kt_tmpl *t, uint16_t *cfg, kt_err *err);

/* 1 when the record of date a_date and key a_key is later than b's: by date, then by key, so that
 * of two records stored in one second one is chosen the same way every time (`kt cache promote`,
 * the stand-ins of another version: transfer.h). */
int kt_record_later(const char *a_date, const char *a_key, const char *b_date, const char *b_key);

/* r's evaluations as a record's "evaluated" array, in r's order (a new cJSON array; the caller
 * deletes it). */
struct cJSON *kt_record_evaluated_json(const kt_tmpl *t, const kt_tune_result *r);

/* How the record's times were taken (its "measure"): each setting, or KT_MEASURE_UNSET when the
 * record does not say (the old worker measured it; kt_measure_describe says how). */
void kt_record_measure(const kt_record *r, kt_measure *out);

/* The chosen configuration as "BLOCK=256,VEC=8,ALGO=onepass" (appended to out). */
void kt_record_config_text(const kt_record *r, kt_buf *out);

void kt_record_free(kt_record *r);

/* A GPU's identity alone, as a small JSON document (the remote keeps one per GPU name, so that a
 * machine without a GPU and without local records can make keys for it). */
char *kt_record_gpu_json(const kt_gpu_id *gpu);
/* Reads such a document; -1 with err when it is not one, or names another GPU than name. */
int kt_record_gpu_read(const char *text, size_t len, const char *name, kt_gpu_id *out, kt_err *err);
/* A GPU's identity as the object that document holds under "gpu": name, cc ("9.0"), sms,
 * l2_bytes, smem_optin (a new cJSON object). */
struct cJSON *kt_record_gpu_object(const kt_gpu_id *gpu);

#endif
