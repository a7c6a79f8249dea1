/* cache.h - the tuning cache: three tiers of records, looked up in order.
 *
 *   user     a directory of the user's (KT_CACHE_DIR, else ~/.cache/kt)   (read and written)
 *   project  the project's committed cache/ directory                     (read; `kt cache promote` writes)
 *   remote   an HTTP store (KT_REMOTE_CACHE; GET/HEAD, PUT)               (read and written)
 *
 * A directory tier keeps key K at <dir>/v<format>/<K[0..2)>/K.json, so a directory of another
 * format version sits beside it untouched.  A hit below the user tier is copied up.  A record that
 * cannot be read, or does not match what the lookup expects, is a miss and a warning, never a
 * wrong hit; the next store replaces it.  The remote, on its first failure, is reported once and
 * switched off for the rest of the run; so is a remote URL that is not http(s).  Writes are atomic (temporary file, fsync, rename), so
 * concurrent writers of one key leave one whole record.
 *
 * Warnings go to the opts' warn callback (the command prints them); errors fill a kt_err.
 */
#ifndef KT_CACHE_H
#define KT_CACHE_H

#include <stdint.h>

#include "key.h"
#include "record.h"
#include "result.h"
#include "target.h"
#include "tmpl.h"
#include "util.h"

typedef enum kt_tier { KT_TIER_USER, KT_TIER_PROJECT, KT_TIER_REMOTE, KT_NTIERS } kt_tier;

extern const char *const kt_tier_names[KT_NTIERS]; /* "user", "project", "remote" */

typedef struct kt_cache_opts {
	const char *user_dir;    /* required (the command resolves KT_CACHE_DIR and the default) */
	const char *project_dir; /* the project's cache/, or NULL */
	const char *remote;      /* URL; NULL or "": none */
	long store_pause_ms;     /* tests only: a store waits this long before its rename (a crash window) */
	int read_only;           /* look up only: no copy-up, no store, no statistics */
	const char *retune;      /* NULL: use hits; else an fnmatch pattern on kernel names ("" or "*": all) */
	void (*warn)(void *ctx, const char *msg); /* NULL: warnings are dropped */
	void *warn_ctx;
} kt_cache_opts;

/* Counters of one run, added to <user>/v<format>/stats.json when the cache is closed. */
typedef struct kt_cache_stats {
	long hits[KT_NTIERS], misses[KT_NTIERS];
	long corrupt;  /* records that could not be read or did not match */
	long retuned;  /* lookups skipped by the retune pattern */
	long stores;
	long remote_errors;
} kt_cache_stats;

typedef struct kt_cache kt_cache;

kt_cache *kt_cache_open(const kt_cache_opts *o, kt_err *err);
/* Adds this run's counters to the statistics file (unless read-only) and frees c. */
int kt_cache_close(kt_cache *c, kt_err *err);

/* True when the retune pattern selects kernel. */
int kt_cache_retune(const kt_cache *c, const char *kernel);

/* Looks k, the key of problem p, up tier by tier.  On a hit fills cfg (p->tmpl->nparams value
 * indices, checked against the space at p->shape), *tier (may be NULL) and, when r is not NULL,
 * the record's evaluations as a tuning result (kt_record_result; release with
 * kt_tune_result_free), and returns 1.  A miss returns 0 (r empty, best -1). */
int kt_cache_lookup(kt_cache *c, const kt_key *k, const kt_problem *p, uint16_t *cfg, kt_tier *tier,
		    kt_tune_result *r);

/* Stores the result of tuning problem p (key k) in the user tier and the remote (a remote
 * failure is a warning), with the record's history h (the template's kt refactor provenance, the
 * tuning rounds; NULL: none).  Read-only: stores nothing and returns 0. */
int kt_cache_store(kt_cache *c, const kt_key *k, const kt_problem *p, const kt_tune_result *r,
		   const kt_record_history *h, kt_err *err);

/* The names of the remote's files (remote.h) beside a record's "<key>.json", appended to out:
 * the latest record of the problem whose key fields are fields ("problem/<kt_key_problem>.json")
 * and the identity of the GPU called gpu ("gpu/<gpu>.json"). */
void kt_cache_problem_name(const char *fields, kt_buf *out);
void kt_cache_gpu_name(const char *gpu, kt_buf *out);

/* The record the remote keeps as the latest of k's problem (kt_key_problem: every store puts it
 * there too), when it is of another version of the template than k's: 1 with rec (release with
 * kt_record_free).  0 when there is none, it is k's own, or there is no remote; a failure or a
 * record that is not of k's problem is reported and switches the remote off, as in a lookup. */
int kt_cache_remote_other_version(kt_cache *c, const kt_key *k, kt_record *rec);

/* The identity of the GPU named name, from a record of that GPU in the user or project tier
 * (the newest one), else from the identity the remote keeps beside that GPU's records.
 * 1 when found, 0 when nothing names it. */
int kt_cache_find_gpu(kt_cache *c, const char *name, kt_gpu_id *out);

/* The measured ceilings (target.h) of GPU id, kept in the user tier as a small versioned record
 * (<user>/v<format>/ceilings/<hash of the identity>.json).  0 when found; -1 leaves out zeroed
 * (a record of another format or GPU is a warning and measured again). */
int kt_cache_ceilings(kt_cache *c, const kt_gpu_id *id, kt_ceilings *out);
/* Keeps them (read-only: nothing); a failure is a warning: it only costs a measurement. */
void kt_cache_ceilings_store(kt_cache *c, const kt_gpu_id *id, const kt_ceilings *in);

const char *kt_cache_dir(const kt_cache *c, kt_tier tier); /* NULL for the remote or a tier not set */
const kt_cache_stats *kt_cache_run_stats(const kt_cache *c);
int kt_cache_read_only(const kt_cache *c);
/* The remote, or NULL when none is configured or it was switched off. */
struct kt_remote *kt_cache_remote(kt_cache *c);

/* Why key k missed, when a record of the user or project tier has the same kernel, shape and GPU:
 * the fields in which the closest such record differs ("flags: here '-DX', in the record ''"),
 * appended to why.  0 when no record is that close. */
int kt_cache_closest(kt_cache *c, const kt_key *k, kt_buf *why);

/* ---- directory tiers, for the `kt cache` tools ---- */

/* <dir>/v<format>/<K[0..2)>/K.json (a new string). */
char *kt_cache_record_path(const char *dir, const char *key);
/* Calls visit(ctx, path, key) for every record file of dir's format-version directory, in key
 * order; stops when visit returns non-zero and returns that value.  A missing dir visits nothing. */
int kt_cache_each(const char *dir, int (*visit)(void *ctx, const char *path, const char *key), void *ctx);
/* Reads the accumulated statistics of a user directory (zeros when there are none). */
void kt_cache_stats_load(const char *dir, kt_cache_stats *out);

#endif
