/* transfer.c - warm start: seeds from the records of the same template (see transfer.h). */
#include "transfer.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "key.h"
#include "record.h"
#include "space.h"

/* One problem's sources, as the scan finds them. */
typedef struct sources {
	const kt_problem *p;
	kt_buf fields;    /* its key fields; the template's own are the first prefixlen bytes */
	size_t prefixlen; /* 0: it has no key (a local header cannot be read): no record is of it */
	kt_seed_source *src;
	size_t n, cap;
} sources;

/* One pass over the records for n problems. */
typedef struct scan {
	sources *pr;
	size_t n;
} scan;

/* The distance of a record's shape and GPU from the problem's. */
static double distance(const kt_problem *p, const int64_t *shape, const kt_gpu_id *gpu)
{
	double d = 0;
	for (int i = 0; i < p->tmpl->nshapes; i++) {
		int64_t a = p->shape[i], b = shape[i];
		d += a == b ? 0 : a > 0 && b > 0 ? fabs(log2((double)a / (double)b)) : 1;
	}
	const kt_gpu_id *g = &p->target->id;
	int same = !strcmp(g->name, gpu->name) && g->sms == gpu->sms && g->cc_major == gpu->cc_major &&
		   g->cc_minor == gpu->cc_minor;
	return d + (same ? 0 : KT_TRANSFER_OTHER_GPU);
}

static const kt_tune_result *sort_res;
static int by_time(const void *a, const void *b)
{
	double x = sort_res->evals[*(const size_t *)a].median_us, y = sort_res->evals[*(const size_t *)b].median_us;
	return (x > y) - (x < y);
}

/* The record's chosen configuration, then its fastest fully timed others. */
static void take_configs(const kt_problem *p, const kt_tune_result *r, kt_seed_source *s)
{
	size_t np = (size_t)(p->tmpl->nparams ? p->tmpl->nparams : 1);
	size_t *ok = kt_xcalloc(r->nevals + 1, sizeof *ok), nok = 0;
	for (size_t i = 0; i < r->nevals; i++)
		if (r->evals[i].status == KT_OK && !r->evals[i].raced && (long)i != r->best)
			ok[nok++] = i;
	sort_res = r;
	qsort(ok, nok, sizeof *ok, by_time);
	s->cfgs = kt_xcalloc((KT_TRANSFER_PER_RECORD + 1) * np, sizeof *s->cfgs);
	if (r->best >= 0)
		memcpy(s->cfgs + s->n++ * np, r->evals[r->best].cfg, (size_t)p->tmpl->nparams * sizeof *s->cfgs);
	for (size_t i = 0; i < nok && s->n < KT_TRANSFER_PER_RECORD; i++)
		memcpy(s->cfgs + s->n++ * np, r->evals[ok[i]].cfg, (size_t)p->tmpl->nparams * sizeof *s->cfgs);
	free(ok);
}

/* Reads the head of the record at path (kt_record_read_head: no evaluations), keeping its text in
 * text (when given) to be read whole after; 0, or -1 when it cannot be read (it then gives
 * nothing). */
static int read_head(const char *path, kt_record *rec, kt_buf *text)
{
	kt_buf own = {0}, *t = text ? text : &own;
	int rc = kt_read_file(path, t, NULL) == 0 && kt_record_read_head(t->data, t->len, rec, NULL) == 0 ? 0 : -1;
	kt_buf_free(&own);
	return rc;
}

/* 1 when the record whose key fields are f is of the template of a problem of sc (its
 * evaluations are then read). */
static int same_template(const scan *sc, const char *f)
{
	for (size_t k = 0; k < sc->n; k++)
		if (sc->pr[k].prefixlen && !strncmp(f, sc->pr[k].fields.data, sc->pr[k].prefixlen) &&
		    !strncmp(f + sc->pr[k].prefixlen, "shape=", 6))
			return 1;
	return 0;
}

static kt_seed_source *add_source(sources *sc, const kt_record *rec, double d)
{
	if (sc->n == sc->cap) {
		sc->cap = sc->cap ? 2 * sc->cap : 16;
		sc->src = kt_xrealloc(sc->src, sc->cap * sizeof *sc->src);
	}
	kt_seed_source *s = &sc->src[sc->n++];
	memset(s, 0, sizeof *s);
	s->distance = d;
	snprintf(s->gpu, sizeof s->gpu, "%s", rec->gpu.name);
	snprintf(s->shape, sizeof s->shape, "%s", rec->shape ? rec->shape : "");
	return s;
}

/* The remote's latest record of the problem whose key fields are fields, when it is of another
 * version of the template (kt_cache_remote_other_version): 1 with rec. */
static int remote_version(kt_cache *c, const kt_buf *fields, kt_record *rec)
{
	kt_key key = {.fields = *fields}; /* borrowed */
	kt_key_of_fields(kt_buf_str(fields), fields->len, key.hex);
	return kt_cache_remote_other_version(c, &key, rec);
}

/* rec, the problem of pr itself tuned from another version of the template, as its source at
 * KT_TRANSFER_OTHER_VERSION (its chosen configuration, read as the template reads one now). */
static void add_version(sources *pr, const kt_record *rec)
{
	const kt_tmpl *t = pr->p->tmpl;
	uint16_t *cfg = kt_xcalloc((size_t)t->nparams + 1, sizeof *cfg);
	if (kt_record_config_adapt(cJSON_GetObjectItemCaseSensitive(rec->doc, "config"), t, cfg, NULL) != 0) {
		free(cfg);
		return;
	}
	kt_seed_source *src = add_source(pr, rec, KT_TRANSFER_OTHER_VERSION);
	src->cfgs = cfg;
	src->n = 1;
	src->version = 1;
}

/* A record, read once, becomes a source of every problem it is of: of the same template (its
 * evaluations read once for each template among the problems), or the problem itself tuned from
 * another version of the template. */
static int visit(void *ctx, const char *path, const char *key)
{
	scan *sc = ctx;
	kt_record rec;
	kt_buf text = {0};
	(void)key;
	int rc = read_head(path, &rec, &text);
	if (rc == 0 && same_template(sc, kt_buf_str(&rec.fields))) { /* most records are not: their heads do */
		kt_record_free(&rec);
		rc = kt_record_read(text.data, text.len, &rec, NULL);
	}
	kt_buf_free(&text);
	if (rc != 0)
		return 0;
	const char *f = kt_buf_str(&rec.fields);
	const kt_tmpl *rt = NULL; /* the template r was read for */
	kt_tune_result r = {0};
	int64_t shape[KT_MAX_SLOTS];
	for (size_t k = 0; k < sc->n; k++) {
		sources *pr = &sc->pr[k];
		const kt_tmpl *t = pr->p->tmpl;
		kt_err e = {0};
		if (!pr->prefixlen)
			continue;
		int same = !strncmp(f, pr->fields.data, pr->prefixlen) && !strncmp(f + pr->prefixlen, "shape=", 6);
		if (same && rec.shape && kt_tmpl_parse_shape(t, rec.shape, shape, &e) == 0) {
			if (rt != t) {
				if (rt)
					kt_tune_result_free(&r);
				kt_record_result(&rec, t, &r);
				rt = t;
			}
			take_configs(pr->p, &r, add_source(pr, &rec, distance(pr->p, shape, &rec.gpu)));
		} else if (!same && kt_key_same_problem(f, pr->fields.data))
			add_version(pr, &rec);
	}
	if (rt)
		kt_tune_result_free(&r);
	kt_record_free(&rec);
	return 0;
}

static int by_distance(const void *a, const void *b)
{
	const kt_seed_source *x = a, *y = b;
	int c = (x->distance > y->distance) - (x->distance < y->distance);
	return c ? c : strcmp(x->shape, y->shape); /* ties in a fixed order, whatever the directory's */
}

size_t kt_transfer_pick(const kt_problem *p, kt_seed_source *src, size_t nsrc, uint16_t *seeds)
{
	size_t np = (size_t)(p->tmpl->nparams ? p->tmpl->nparams : 1), n = 0;
	if (nsrc)
		qsort(src, nsrc, sizeof *src, by_distance);
	size_t use = nsrc < KT_TRANSFER_RECORDS ? nsrc : KT_TRANSFER_RECORDS;
	for (size_t rank = 0; rank < KT_TRANSFER_PER_RECORD && n < KT_TRANSFER_SEEDS; rank++)
		for (size_t s = 0; s < use && n < KT_TRANSFER_SEEDS; s++) {
			if (rank >= src[s].n)
				continue;
			const uint16_t *c = src[s].cfgs + rank * np;
			int dup = !kt_space_feasible(p->tmpl, p->shape, c);
			for (size_t j = 0; j < n && !dup; j++)
				dup = !memcmp(seeds + j * np, c, (size_t)p->tmpl->nparams * sizeof *c);
			if (!dup)
				memcpy(seeds + n++ * np, c, (size_t)p->tmpl->nparams * sizeof *c);
		}
	return n;
}

void kt_transfer_seeds_all(const kt_problem *p, size_t n, const char *const *dirs, int ndirs, kt_cache *remote,
			   uint16_t **seeds, size_t *nseeds, kt_buf *why)
{
	scan sc = {.pr = kt_xcalloc(n + 1, sizeof *sc.pr), .n = n};
	kt_err e = {0};
	for (size_t k = 0; k < n; k++) {
		sources *pr = &sc.pr[k];
		pr->p = &p[k];
		const char *shape = kt_key_fields(&p[k], &pr->fields, &e) == 0 ? strstr(kt_buf_str(&pr->fields), "\nshape=") : NULL;
		pr->prefixlen = shape ? (size_t)(shape - pr->fields.data) + 1 : 0;
	}
	for (int i = 0; n && i < ndirs; i++)
		if (dirs[i])
			kt_cache_each(dirs[i], visit, &sc);
	for (size_t k = 0; k < n && remote && kt_cache_remote(remote); k++) { /* what they leave, from the remote */
		sources *pr = &sc.pr[k];
		int have = !pr->prefixlen;
		for (size_t s = 0; s < pr->n; s++)
			have |= pr->src[s].version;
		kt_record rec;
		if (!have && remote_version(remote, &pr->fields, &rec)) {
			add_version(pr, &rec);
			kt_record_free(&rec);
		}
	}
	for (size_t k = 0; k < n; k++) {
		sources *pr = &sc.pr[k];
		size_t np = (size_t)(p[k].tmpl->nparams ? p[k].tmpl->nparams : 1);
		seeds[k] = kt_xcalloc((KT_TRANSFER_SEEDS + 1) * np, sizeof **seeds);
		nseeds[k] = kt_transfer_pick(&p[k], pr->src, pr->n, seeds[k]);
		for (size_t s = 0; why && nseeds[k] && s < pr->n && s < KT_TRANSFER_RECORDS; s++)
			kt_buf_printf(&why[k], "%s%s %s (distance %.1f%s)", s ? "; " : "", pr->src[s].gpu, pr->src[s].shape,
				      pr->src[s].distance, pr->src[s].version ? ", another version of the template" : "");
		for (size_t s = 0; s < pr->n; s++)
			free(pr->src[s].cfgs);
		free(pr->src);
		kt_buf_free(&pr->fields);
	}
	free(sc.pr);
}

void kt_transfer_seeds(const kt_problem *p, const char *const *dirs, int ndirs, uint16_t **seeds, size_t *n,
		       kt_buf *why)
{
	kt_transfer_seeds_all(p, 1, dirs, ndirs, NULL, seeds, n, why);
}

/* ---- the problem tuned from another version of its template ---- */

typedef struct vscan {
	kt_other_version *e;
	kt_buf *fields; /* e[i]'s key fields */
	size_t n;
} vscan;

int kt_transfer_other_take(kt_other_version *e, const kt_record *rec)
{
	const kt_tmpl *t = e->p->tmpl;
	uint16_t cfg[KT_MAX_SLOTS];
	if (kt_record_config_adapt(cJSON_GetObjectItemCaseSensitive(rec->doc, "config"), t, cfg, NULL) != 0 ||
	    !kt_space_feasible(t, e->p->shape, cfg))
		return 0;
	memcpy(e->cfg, cfg, (size_t)t->nparams * sizeof *cfg);
	e->found = 1;
	snprintf(e->key, sizeof e->key, "%s", rec->key);
	snprintf(e->date, sizeof e->date, "%s", rec->date ? rec->date : "");
	return 1;
}

static int visit_version(void *ctx, const char *path, const char *key)
{
	vscan *vs = ctx;
	kt_record rec;
	(void)key;
	if (read_head(path, &rec, NULL) != 0)
		return 0;
	const char *f = kt_buf_str(&rec.fields), *date = rec.date ? rec.date : "";
	for (size_t i = 0; i < vs->n; i++) {
		kt_other_version *e = &vs->e[i];
		const char *want = kt_buf_str(&vs->fields[i]);
		if (!strcmp(f, want) || !kt_key_same_problem(f, want) ||
		    (e->found && !kt_record_later(date, rec.key, e->date, e->key)))
			continue; /* not another version of the problem, or not the latest one */
		kt_transfer_other_take(e, &rec);
	}
	kt_record_free(&rec);
	return 0;
}

size_t kt_transfer_other_version(kt_other_version *e, size_t n, const char *const *dirs, int ndirs)
{
	vscan vs = {.e = e, .fields = kt_xcalloc(n + 1, sizeof *vs.fields), .n = n};
	kt_err err = {0};
	for (size_t i = 0; i < n; i++) {
		e[i].found = 0;
		e[i].key[0] = e[i].date[0] = 0;
		if (kt_key_fields(e[i].p, &vs.fields[i], &err) != 0)
			kt_buf_reset(&vs.fields[i]); /* unkeyable: no record is of its problem */
	}
	for (int d = 0; n && d < ndirs; d++)
		if (dirs[d])
			kt_cache_each(dirs[d], visit_version, &vs);
	size_t found = 0;
	for (size_t i = 0; i < n; i++) {
		found += (size_t)e[i].found;
		kt_buf_free(&vs.fields[i]);
	}
	free(vs.fields);
	return found;
}

size_t kt_transfer_other_version_in(kt_other_version *e, size_t n, kt_cache *c, size_t *remote)
{
	const char *dirs[2] = {kt_cache_dir(c, KT_TIER_USER), kt_cache_dir(c, KT_TIER_PROJECT)};
	size_t found = n ? kt_transfer_other_version(e, n, dirs, 2) : 0, far = 0;
	for (size_t i = 0; i < n && kt_cache_remote(c); i++) { /* what they leave, from the remote */
		kt_buf fields = {0};
		kt_record rec;
		if (!e[i].found && kt_key_fields(e[i].p, &fields, NULL) == 0 && remote_version(c, &fields, &rec)) {
			far += (size_t)kt_transfer_other_take(&e[i], &rec);
			kt_record_free(&rec);
		}
		kt_buf_free(&fields);
	}
	if (remote)
		*remote = far;
	return found + far;
}
