/* report.c - the tuning report: reading the records it shows and what the page computes from
 * them (see report.h; the HTML is report_page.c). */
#include "report.h"

#include <fnmatch.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "cache.h"
#include "json.h"
#include "report_int.h"

/* ---- one record, as the page shows it ---------------------------------------------------- */

const char *kt_report_field(const kt_record *r, const char *name)
{
	return kt_json_str(cJSON_GetObjectItemCaseSensitive(r->doc, "fields"), name);
}

/* A configuration value as the key fields spell it: 8, row, true. */
static const char *value_text(kt_arena *a, const cJSON *v)
{
	char s[40];
	if (cJSON_IsString(v))
		return v->valuestring;
	if (cJSON_IsBool(v))
		return cJSON_IsTrue(v) ? "true" : "false";
	if (!cJSON_IsNumber(v))
		return NULL;
	if (v->valuedouble == floor(v->valuedouble) && fabs(v->valuedouble) < 1e15)
		snprintf(s, sizeof s, "%.0f", v->valuedouble);
	else
		snprintf(s, sizeof s, "%.17g", v->valuedouble);
	return kt_arena_strdup(a, s);
}

static int value_index(kt_report_param *p, kt_arena *a, const char *v)
{
	if (!v)
		return -1;
	for (int i = 0; i < p->nvals; i++)
		if (!strcmp(p->vals[i], v))
			return i;
	if (p->nvals == p->cap)
		return -1; /* cannot happen: cap counts every value the record can name */
	p->vals[p->nvals] = kt_arena_strdup(a, v);
	return p->nvals++;
}

/* Splits "KIND v1,v2,... default D" into p's values and default. */
static void parse_param(kt_report_param *p, kt_arena *a, const char *decl)
{
	const char *sp = strchr(decl, ' '), *def = strstr(decl, " default ");
	const char *end = def ? def : decl + strlen(decl);
	for (const char *s = sp ? sp + 1 : end; s < end && p->nvals < p->cap;) {
		size_t n = strcspn(s, ",");
		if (s + n > end)
			n = (size_t)(end - s);
		p->vals[p->nvals++] = kt_arena_strndup(a, s, n);
		s += n + 1;
	}
	p->dflt = def ? value_index(p, a, def + strlen(" default ")) : -1;
}

static void load_params(kt_report_entry *e, kt_arena *a)
{
	const cJSON *fields = cJSON_GetObjectItemCaseSensitive(e->rec.doc, "fields"), *it;
	int cap = cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(e->rec.doc, "evaluated")) + 2;
	cJSON_ArrayForEach(it, fields)
	{
		e->nparams += !strncmp(it->string, "param.", 6);
	}
	e->params = kt_arena_alloc(a, (size_t)(e->nparams + 1) * sizeof *e->params);
	int i = 0;
	cJSON_ArrayForEach(it, fields)
	{
		if (strncmp(it->string, "param.", 6) || !cJSON_IsString(it))
			continue;
		kt_report_param *p = &e->params[i++];
		p->name = it->string + 6;
		p->cap = cap + (int)strlen(it->valuestring); /* no more declared values than bytes */
		p->vals = kt_arena_alloc(a, (size_t)p->cap * sizeof *p->vals);
		parse_param(p, a, it->valuestring);
	}
	e->nparams = i;
}

/* Reads a configuration object into value indices; the text "A=1,B=x" into *text. */
static void read_config(kt_report_entry *e, kt_arena *a, const cJSON *conf, int *v, const char **text)
{
	kt_buf t = {0};
	for (int i = 0; i < e->nparams; i++) {
		const char *s = value_text(a, cJSON_GetObjectItemCaseSensitive(conf, e->params[i].name));
		v[i] = value_index(&e->params[i], a, s);
		kt_buf_printf(&t, "%s%s=%s", i ? "," : "", e->params[i].name, s ? s : "?");
	}
	*text = kt_arena_strdup(a, kt_buf_str(&t));
	kt_buf_free(&t);
}

static int status_index(const char *s)
{
	for (int i = 0; s && i < KT_NSTATUS; i++)
		if (!strcmp(s, kt_status_names[i]))
			return i;
	return KT_REPORT_STATUS_UNKNOWN;
}

static long find_eval(const kt_report_entry *e, const int *v, int need_ok)
{
	for (size_t i = 0; i < e->nevals; i++)
		if (!memcmp(e->evals[i].v, v, (size_t)e->nparams * sizeof *v) && (!need_ok || e->evals[i].status == KT_OK))
			return (long)i;
	return -1;
}

static void load_evals(kt_report_entry *e, kt_arena *a)
{
	const cJSON *list = cJSON_GetObjectItemCaseSensitive(e->rec.doc, "evaluated"), *it;
	e->evals = kt_arena_alloc(a, ((size_t)cJSON_GetArraySize(list) + 1) * sizeof *e->evals);
	cJSON_ArrayForEach(it, list)
	{
		kt_report_eval *ev = &e->evals[e->nevals++];
		ev->v = kt_arena_alloc(a, (size_t)(e->nparams + 1) * sizeof *ev->v);
		read_config(e, a, cJSON_GetObjectItemCaseSensitive(it, "config"), ev->v, &ev->config);
		ev->status = status_index(kt_json_str(it, "status"));
		ev->us = ev->status == KT_OK && kt_json_num(it, "time_us", 0) > 0 ? kt_json_num(it, "time_us", 0) : NAN;
		ev->msg = kt_json_str(it, "msg");
		e->counts[ev->status]++;
		if (!e->first_msg[ev->status] && ev->msg)
			e->first_msg[ev->status] = ev->msg;
		e->nok += ev->status == KT_OK;
	}
}

/* The chosen and the default configuration among the evaluations, and the times to compare. */
static void load_choices(kt_report_entry *e, kt_arena *a)
{
	const cJSON *doc = e->rec.doc;
	int *v = kt_arena_alloc(a, (size_t)(e->nparams + 1) * sizeof *v);
	const char *text;
	read_config(e, a, cJSON_GetObjectItemCaseSensitive(doc, "config"), v, &text);
	e->chosen = find_eval(e, v, 1);
	for (int i = 0; i < e->nparams; i++)
		v[i] = e->params[i].dflt;
	e->dflt = find_eval(e, v, 0);
	e->time_us = isfinite(e->rec.time_us) ? e->rec.time_us : 0;
	e->spread_us = isfinite(e->rec.spread_us) ? e->rec.spread_us : 0;
	e->floor_us = kt_json_num(cJSON_GetObjectItemCaseSensitive(doc, "roofline"), "floor_us", 0);
	e->reference_us = kt_json_num(doc, "reference_us", 0);
	e->default_us = kt_json_num(doc, "default_us", 0);
	if (e->default_us <= 0 && e->dflt >= 0 && e->evals[e->dflt].status == KT_OK)
		e->default_us = e->evals[e->dflt].us;
}

/* "T=half arch 90 flags -O3 on NVIDIA H200": what separates records of one kernel and shape (a
 * warm L2 or graph replays too); and how the record's times were taken. */
static void load_variant(kt_report_entry *e, kt_arena *a)
{
	kt_buf b = {0};
	const cJSON *it;
	cJSON_ArrayForEach(it, cJSON_GetObjectItemCaseSensitive(e->rec.doc, "fields"))
	{
		if (!strncmp(it->string, "type.", 5) && cJSON_IsString(it))
			kt_buf_printf(&b, "%s%s=%s", b.len ? " " : "", it->string + 5, it->valuestring);
	}
	const char *arch = kt_report_field(&e->rec, "arch"), *flags = kt_report_field(&e->rec, "flags");
	if (arch && *arch)
		kt_buf_printf(&b, "%sarch %s", b.len ? ", " : "", arch);
	if (flags && *flags)
		kt_buf_printf(&b, "%sflags %s", b.len ? ", " : "", flags);
	kt_measure m;
	kt_record_measure(&e->rec, &m);
	for (int s = 0; s < KT_NMEASURE; s++) /* the settings that key records apart: those not at their default */
		if (m.v[s] > 0)
			kt_buf_printf(&b, "%s%s", b.len ? ", " : "", kt_measure_infos[s].words[m.v[s]]);
	e->variant = kt_arena_strdup(a, kt_buf_str(&b));
	kt_buf_reset(&b);
	kt_measure_describe(&m, &b);
	e->timed = kt_arena_strdup(a, kt_buf_str(&b));
	kt_buf_free(&b);
}

static const char *known(kt_arena *a, const char *s) { return kt_arena_strdup(a, s && *s ? s : "unknown"); }

/* The GPU and the toolchain, each as the page shows it. */
static void load_toolchain(kt_report_entry *e, kt_arena *a)
{
	const kt_gpu_id *g = &e->rec.gpu;
	char cc[32], sms[32], l2[32];
	snprintf(cc, sizeof cc, "%d.%d", g->cc_major, g->cc_minor);
	snprintf(sms, sizeof sms, "%d", g->sms);
	snprintf(l2, sizeof l2, "%lld", (long long)g->l2_bytes);
	const cJSON *doc = e->rec.doc;
	const char *t[KT_REPORT_NTOOL] = {g->name, cc, sms, l2, kt_report_field(&e->rec, "compiler"),
					  kt_json_str(doc, "driver"), kt_json_str(doc, "runtime"),
					  kt_json_str(doc, "tool")};
	for (int i = 0; i < KT_REPORT_NTOOL; i++)
		e->tool[i] = known(a, t[i]);
}

static void load_entry(kt_report_entry *e, kt_arena *a)
{
	load_toolchain(e, a);
	load_params(e, a);
	load_evals(e, a);
	load_choices(e, a);
	load_variant(e, a);
}

/* ---- the parameter that matters -------------------------------------------------------- */

/* Epsilon squared of parameter p over the rows in use; -INFINITY when it does not count. */
static double param_share(const int *vals, const double *lt, const char *use, size_t n, int np, int p, double mean,
			  double sst)
{
	size_t k = 0, used = 0;
	int *gval = kt_xcalloc(n + 1, sizeof *gval);
	size_t *gn = kt_xcalloc(n + 1, sizeof *gn);
	double *gsum = kt_xcalloc(n + 1, sizeof *gsum);
	for (size_t i = 0; i < n; i++) {
		if (!use[i])
			continue;
		size_t g = 0;
		while (g < k && gval[g] != vals[i * (size_t)np + (size_t)p])
			g++;
		if (g == k)
			gval[k++] = vals[i * (size_t)np + (size_t)p];
		gn[g]++;
		gsum[g] += lt[i];
		used++;
	}
	double ssb = 0;
	for (size_t g = 0; g < k; g++)
		ssb += (double)gn[g] * (gsum[g] / (double)gn[g] - mean) * (gsum[g] / (double)gn[g] - mean);
	free(gval);
	free(gn);
	free(gsum);
	if (k < 2 || used <= k)
		return -INFINITY;
	double ssw = fmax(0, sst - ssb);
	return (ssb - (double)(k - 1) * ssw / (double)(used - k)) / sst;
}

int kt_report_main_param(const int *vals, const double *us, size_t n, int np, double *share)
{
	double *lt = kt_xcalloc(n + 1, sizeof *lt), mean = 0, sst = 0;
	char *use = kt_xcalloc(n + 1, 1);
	size_t used = 0;
	for (size_t i = 0; i < n; i++)
		if (isfinite(us[i]) && us[i] > 0) {
			use[i] = 1;
			lt[i] = log(us[i]);
			mean += lt[i];
			used++;
		}
	mean = used ? mean / (double)used : 0;
	for (size_t i = 0; i < n; i++)
		if (use[i])
			sst += (lt[i] - mean) * (lt[i] - mean);
	int best = -1;
	double best_share = -INFINITY;
	for (int p = 0; p < np && sst > 0; p++) {
		double s = param_share(vals, lt, use, n, np, p, mean, sst);
		if (s > best_share + 1e-12) {
			best = p;
			best_share = s;
		}
	}
	free(lt);
	free(use);
	if (share)
		*share = best >= 0 ? best_share : 0;
	return best;
}

/* ---- reading the directories --------------------------------------------------------------- */

typedef struct walk {
	const kt_report_opts *o;
	kt_report_page *pg;
	char *found;        /* per requested key: a directory holds it */
	char (*seen)[KT_KEY_HEX]; /* the keys read so far, readable or not: a later directory's copy is not */
	size_t nseen, cap;
} walk;

static void warnf(const kt_report_opts *o, kt_report_page *pg, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static void warnf(const kt_report_opts *o, kt_report_page *pg, const char *fmt, ...)
{
	kt_buf b = {0};
	va_list ap;
	va_start(ap, fmt);
	kt_buf_vprintf(&b, fmt, ap);
	va_end(ap);
	if (o->warn)
		o->warn(o->warn_ctx, kt_buf_str(&b));
	if (pg->nskipped == pg->skipcap) {
		pg->skipcap = pg->skipcap ? 2 * pg->skipcap : 8;
		pg->skipped = kt_xrealloc(pg->skipped, pg->skipcap * sizeof *pg->skipped);
	}
	pg->skipped[pg->nskipped++] = kt_arena_strdup(pg->a, kt_buf_str(&b));
	kt_buf_free(&b);
}

static int requested(walk *w, const char *key)
{
	if (!w->o->nkeys)
		return 1;
	for (int i = 0; i < w->o->nkeys; i++)
		if (!strcmp(w->o->keys[i], key))
			return w->found[i] = 1;
	return 0;
}

/* True when key was met before; else remembers it. */
static int seen_before(walk *w, const char *key)
{
	for (size_t i = 0; i < w->nseen; i++)
		if (!strcmp(w->seen[i], key))
			return 1;
	if (w->nseen == w->cap) {
		w->cap = w->cap ? 2 * w->cap : 64;
		w->seen = kt_xrealloc(w->seen, w->cap * sizeof *w->seen);
	}
	snprintf(w->seen[w->nseen++], KT_KEY_HEX, "%s", key);
	return 0;
}

static int selected(const kt_report_opts *o, const kt_record *r)
{
	return (!o->kernel || fnmatch(o->kernel, r->kernel, 0) == 0) && (!o->gpu || !strcmp(o->gpu, r->gpu.name));
}

static int visit(void *ctx, const char *path, const char *key)
{
	walk *w = ctx;
	kt_report_page *pg = w->pg;
	if (!requested(w, key) || seen_before(w, key))
		return 0;
	kt_buf text = {0};
	kt_err err = {0};
	kt_record r;
	int rc = kt_read_file(path, &text, &err);
	if (rc == 0)
		rc = kt_record_read(text.data, text.len, &r, &err);
	else
		memset(&r, 0, sizeof r);
	kt_buf_free(&text);
	if (rc == 0 && strcmp(r.key, key) != 0)
		rc = kt_fail(&err, "it holds key %s", r.key);
	if (rc != 0) {
		warnf(w->o, pg, "cache record %s: %s; skipped", path, err.msg);
	} else if (selected(w->o, &r)) {
		if (pg->n == pg->cap) {
			pg->cap = pg->cap ? 2 * pg->cap : 16;
			pg->e = kt_xrealloc(pg->e, pg->cap * sizeof *pg->e);
		}
		memset(&pg->e[pg->n], 0, sizeof *pg->e);
		pg->e[pg->n++].rec = r;
		return 0;
	}
	kt_record_free(&r);
	return 0;
}

static int missing_key(const kt_report_opts *o, const char *key, kt_err *err)
{
	kt_buf where = {0};
	for (int i = 0; i < o->ndirs; i++)
		kt_buf_printf(&where, "%s%s '%s'", i ? ", " : "", o->dirs[i].what, o->dirs[i].path);
	kt_fail(err, "key %s: no record in %s", key, kt_buf_str(&where));
	kt_buf_free(&where);
	return -1;
}

static int collect(const kt_report_opts *o, kt_report_page *pg, kt_err *err)
{
	for (int i = 0; i < o->ndirs; i++)
		if (kt_check_dir(o->dirs[i].what, o->dirs[i].path, err) != 0)
			return -1;
	for (int i = 0; i < o->nkeys; i++)
		if (!kt_key_is_hex(o->keys[i]))
			return kt_fail(err, "key '%s': not a key (32 lowercase hex digits)", o->keys[i]);
	walk w = {o, pg, kt_xcalloc((size_t)o->nkeys + 1, 1), NULL, 0, 0};
	for (int i = 0; i < o->ndirs; i++)
		kt_cache_each(o->dirs[i].path, visit, &w);
	int rc = 0;
	for (int i = 0; i < o->nkeys && rc == 0; i++)
		if (!w.found[i])
			rc = missing_key(o, o->keys[i], err);
	free(w.found);
	free(w.seen);
	for (size_t i = 0; i < pg->n; i++)
		load_entry(&pg->e[i], pg->a);
	return rc;
}

/* ---- order ----------------------------------------------------------------------------- */

/* Compares strings with runs of digits as numbers: rows=16 before rows=128. */
static int natural_cmp(const char *a, const char *b)
{
	while (*a && *b) {
		if (*a >= '0' && *a <= '9' && *b >= '0' && *b <= '9') {
			while (*a == '0' && a[1] >= '0' && a[1] <= '9')
				a++;
			while (*b == '0' && b[1] >= '0' && b[1] <= '9')
				b++;
			size_t na = strspn(a, "0123456789"), nb = strspn(b, "0123456789");
			int c = na != nb ? (na < nb ? -1 : 1) : strncmp(a, b, na);
			if (c)
				return c;
			a += na;
			b += nb;
		} else if (*a != *b) {
			return (unsigned char)*a < (unsigned char)*b ? -1 : 1;
		} else {
			a++, b++;
		}
	}
	return *a ? 1 : *b ? -1 : 0;
}

static int entry_cmp(const void *pa, const void *pb)
{
	const kt_report_entry *a = pa, *b = pb;
	int c = strcmp(a->rec.kernel, b->rec.kernel);
	if (!c)
		c = strcmp(a->rec.gpu.name, b->rec.gpu.name);
	if (!c)
		c = strcmp(a->variant, b->variant);
	if (!c)
		c = natural_cmp(a->rec.shape, b->rec.shape);
	return c ? c : strcmp(a->rec.key, b->rec.key);
}

int kt_report_kernels(const kt_report_page *pg)
{
	int n = 0;
	for (size_t i = 0; i < pg->n; i++)
		n += i == 0 || strcmp(pg->e[i].rec.kernel, pg->e[i - 1].rec.kernel) != 0; /* sorted by kernel */
	return n;
}

int kt_report_write(const kt_report_opts *o, kt_report_stats *st, kt_err *err)
{
	kt_report_page pg = {.a = kt_arena_new()};
	int rc = collect(o, &pg, err);
	if (rc == 0) {
		if (pg.n)
			qsort(pg.e, pg.n, sizeof *pg.e, entry_cmp);
		kt_buf html = {0};
		char *dir = kt_path_dir(o->out);
		kt_report_render(&html, o, &pg);
		rc = kt_mkdirs(dir, err);
		if (rc == 0)
			rc = kt_write_atomic(o->out, html.data, html.len, err);
		free(dir);
		kt_buf_free(&html);
	}
	if (rc == 0 && st)
		*st = (kt_report_stats){(int)pg.n, kt_report_kernels(&pg), (int)pg.nskipped};
	for (size_t i = 0; i < pg.n; i++)
		kt_record_free(&pg.e[i].rec);
	free(pg.e);
	free(pg.skipped);
	kt_arena_free(pg.a);
	return rc;
}
