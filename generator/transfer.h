/* transfer.h - warm start: where a search for a missed problem begins.
 *
 * A miss is a template at a shape on a GPU that nobody tuned, but the caches usually know the
 * same template elsewhere: on other GPUs (the project's committed records, which CI and every
 * machine share) and at other shapes on this GPU.  The best configurations of those records are
 * the seeds of the search (kt_search_seed): measured first, they give it a good start and make
 * racing effective from the first batch.  How seeds are chosen and what they save is in
 * docs/search.md ("Warm start").
 *
 * A record is of the same template when its key fields up to the shape are the problem's (the
 * template's bytes and headers, its space, constraints and type choices); the GPU, the shape and
 * the toolchain may differ.  Records are ranked by how close they are: the shape's distance (the
 * sum over shape symbols of |log2 of the ratio|) plus a penalty when the GPU is another one.
 * From the closest KT_TRANSFER_RECORDS records, the chosen configuration, then each one's next
 * fastest fully timed ones, in turn, up to KT_TRANSFER_SEEDS configurations, each feasible at the
 * problem's shape.
 *
 * The problem itself tuned from another version of the template (every key field the same but
 * the template's own: kt_key_same_problem) can no longer be hit, but what it chose is still the
 * best guess there is (usually of an earlier version: a template edited, its records not yet
 * tuned again): it seeds the search (its chosen configuration, read as the template reads
 * it now: kt_record_config_adapt) at KT_TRANSFER_OTHER_VERSION, and where the shape cannot be
 * tuned (no GPU, tuning off) it stands in for the template's defaults (kt_transfer_other_version).
 */
#ifndef KT_TRANSFER_H
#define KT_TRANSFER_H

#include <stddef.h>
#include <stdint.h>

#include "cache.h"
#include "problem.h"

enum { KT_TRANSFER_RECORDS = 4, KT_TRANSFER_PER_RECORD = 3, KT_TRANSFER_SEEDS = 8 };
#define KT_TRANSFER_OTHER_GPU 2.0 /* the distance another GPU adds (as much as two doublings of a dimension) */
#define KT_TRANSFER_OTHER_VERSION 0.5 /* the distance of the problem tuned from another version of the template */

/* One source of seeds: a record's evaluations (in the problem template's indices), best first. */
typedef struct kt_seed_source {
	double distance;
	char gpu[128];
	char shape[128];
	uint16_t *cfgs;  /* n configurations */
	size_t n;
	int version;     /* the problem itself, tuned from another version of the template */
} kt_seed_source;

/* The seeds of problem p from the records in the directories dirs[0..ndirs) (the user and the
 * project tiers; NULL entries skipped): at most KT_TRANSFER_SEEDS configurations, best first, in
 * *seeds (p->tmpl->nparams value indices each; malloc'ed, the caller frees it) and their number
 * in *n.  The sources used are described in why (one line each: "NVIDIA H200 rows=4096,hidden=4096
 * (distance 2.0)"), when why is not NULL.  A record that cannot be read is skipped. */
void kt_transfer_seeds(const kt_problem *p, const char *const *dirs, int ndirs, uint16_t **seeds, size_t *n,
		       kt_buf *why);

/* A shape that missed (p, in) and what another version of its template chose there (out). */
typedef struct kt_other_version {
	const kt_problem *p;
	uint16_t *cfg;         /* room for p->tmpl->nparams value indices; set when found */
	int found;
	char key[KT_KEY_HEX];  /* the record's key and date, when found */
	char date[32];
} kt_other_version;

/* For each of the n problems e[i].p, the configuration of the latest record in dirs[0..ndirs)
 * (NULL entries skipped; latest by date, then by key, as `kt cache promote` orders them) of the
 * same problem tuned from another version of its template, among those whose configuration the
 * template can still take (kt_record_config_adapt) and which is feasible at the shape.  One pass
 * over the directories serves all n.  Returns how many were found. */
size_t kt_transfer_other_version(kt_other_version *e, size_t n, const char *const *dirs, int ndirs);
/* The same over cache c's user and project tiers, then, for each problem they leave, the latest
 * record the remote keeps of it (kt_cache_remote_other_version).  *remote (may be NULL): how many
 * of those found came from the remote. */
size_t kt_transfer_other_version_in(kt_other_version *e, size_t n, kt_cache *c, size_t *remote);
/* Takes rec's configuration for e when the template can still take it and it is feasible at e's
 * shape (as kt_transfer_other_version does).  1 when taken, else 0. */
int kt_transfer_other_take(kt_other_version *e, const kt_record *rec);

/* The seeds of each of the n problems p[k] into seeds[k] and nseeds[k] (and why[k], when why is
 * not NULL), as kt_transfer_seeds gives them, from one pass over the directories: a record is
 * read once however many problems it seeds (a project's records of a large template can hold
 * thousands of evaluations each).  With remote (may be NULL), a problem of which the directories
 * hold no record of another version asks that cache's remote for one (its problem's latest). */
void kt_transfer_seeds_all(const kt_problem *p, size_t n, const char *const *dirs, int ndirs, kt_cache *remote,
			   uint16_t **seeds, size_t *nseeds, kt_buf *why);

/* The same from sources already read (tests, the recorded-space benchmark): ranks them by
 * distance and interleaves their configurations into seeds (room for KT_TRANSFER_SEEDS). */
size_t kt_transfer_pick(const kt_problem *p, kt_seed_source *src, size_t nsrc, uint16_t *seeds);

#endif
