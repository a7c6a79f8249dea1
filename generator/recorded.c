/* recorded.c - recorded spaces: load, answer evaluations, write (see recorded.h). */
#include "recorded.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAGIC "# kt-recording v1"
#define COLUMNS "config,status,median_us,spread_us"

struct entry {
	const uint16_t *cfg;
	int nparams;
	kt_status status;
	double median_us, spread_us;
};

struct kt_recorded {
	int nparams;
	size_t n, cap;
	struct entry *entries; /* sorted by cfg once loaded */
	uint16_t *cfgs;        /* n * nparams, the storage behind entries[i].cfg */
	int64_t shape[KT_MAX_SLOTS];
	kt_gpu_id gpu;
};

static int cfg_cmp(const uint16_t *a, const uint16_t *b, int np)
{
	for (int p = 0; p < np; p++)
		if (a[p] != b[p])
			return a[p] < b[p] ? -1 : 1;
	return 0;
}

static int entry_cmp(const void *a, const void *b)
{
	const struct entry *x = a, *y = b;
	return cfg_cmp(x->cfg, y->cfg, x->nparams);
}

static const struct entry *find(const kt_recorded *r, const uint16_t *cfg)
{
	size_t lo = 0, hi = r->n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		int c = cfg_cmp(r->entries[mid].cfg, cfg, r->nparams);
		if (!c)
			return &r->entries[mid];
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
}

/* ---- reading ---- */

struct reader {
	const char *path;
	const kt_tmpl *t;
	kt_recorded *r;
	int line;
	int have_shape, have_columns;
	kt_err *err;
};

static int bad(struct reader *rd, const char *what, const char *text, size_t len)
{
	return kt_fail(rd->err, "%s:%d: error: %s\n  %.*s", rd->path, rd->line, what, (int)(len > 200 ? 200 : len),
		       text);
}

/* Parses `name="NVIDIA H200" cc=9.0 sms=132 l2=52428800 smem_optin=232448`; unknown keys are skipped. */
static void parse_gpu(const char *s, kt_gpu_id *g)
{
	const char *q = strstr(s, "name=\"");
	if (q) {
		q += 6;
		const char *e = strchr(q, '"');
		size_t n = e ? (size_t)(e - q) : strlen(q);
		if (n >= sizeof g->name)
			n = sizeof g->name - 1;
		memcpy(g->name, q, n);
		g->name[n] = 0;
	}
	if ((q = strstr(s, " cc=")))
		sscanf(q + 4, "%d.%d", &g->cc_major, &g->cc_minor);
	if ((q = strstr(s, " sms=")))
		sscanf(q + 5, "%d", &g->sms);
	long long v;
	if ((q = strstr(s, " l2=")) && sscanf(q + 4, "%lld", &v) == 1)
		g->l2_bytes = v;
	if ((q = strstr(s, " smem_optin=")) && sscanf(q + 12, "%lld", &v) == 1)
		g->smem_optin = v;
}

static int comment_line(struct reader *rd, const char *s, size_t len)
{
	char *text = kt_xmalloc(len + 1);
	memcpy(text, s, len);
	text[len] = 0;
	int rc = 0;
	if (!strncmp(text, "# shape:", 8)) {
		kt_err e = {0};
		if (kt_tmpl_parse_shape(rd->t, text + 8 + strspn(text + 8, " "), rd->r->shape, &e) < 0)
			rc = bad(rd, e.msg, s, len);
		rd->have_shape = 1;
	} else if (!strncmp(text, "# gpu:", 6)) {
		parse_gpu(text + 6, &rd->r->gpu);
	}
	free(text);
	return rc;
}

static int parse_time(const char *s, size_t n, double *out)
{
	char tmp[64];
	if (n == 0 || n >= sizeof tmp)
		return -1;
	memcpy(tmp, s, n);
	tmp[n] = 0;
	char *end;
	*out = strtod(tmp, &end);
	return *end || !isfinite(*out) || *out < 0 ? -1 : 0;
}

static int status_of(const char *s, size_t n, kt_status *out)
{
	for (int i = 0; i < KT_NSTATUS; i++)
		if (strlen(kt_status_names[i]) == n && !strncmp(kt_status_names[i], s, n)) {
			*out = (kt_status)i;
			return 0;
		}
	return -1;
}

static uint16_t *new_cfg(kt_recorded *r)
{
	if (r->n == r->cap) {
		r->cap = r->cap ? 2 * r->cap : 256;
		r->cfgs = kt_xrealloc(r->cfgs, r->cap * (size_t)(r->nparams ? r->nparams : 1) * sizeof *r->cfgs);
		r->entries = kt_xrealloc(r->entries, r->cap * sizeof *r->entries);
	}
	return r->cfgs + r->n * (size_t)r->nparams;
}

/* `"P=v,P=v",status,median,spread` */
static int data_line(struct reader *rd, const char *s, size_t len)
{
	kt_recorded *r = rd->r;
	const char *end = s + len;
	if (len < 2 || s[0] != '"')
		return bad(rd, "expected a quoted configuration (\"P=v,P=v\") at the start of the row", s, len);
	const char *q = memchr(s + 1, '"', len - 1);
	if (!q || q + 1 >= end || q[1] != ',')
		return bad(rd, "expected '\",' after the configuration", s, len);
	char *cfgtext = kt_xmalloc((size_t)(q - s));
	memcpy(cfgtext, s + 1, (size_t)(q - s - 1));
	cfgtext[q - s - 1] = 0;
	uint16_t *cfg = new_cfg(r);
	kt_err e = {0};
	int rc = kt_tmpl_parse_config(rd->t, cfgtext, cfg, &e);
	free(cfgtext);
	if (rc < 0)
		return bad(rd, e.msg, s, len);

	const char *f[3];
	size_t fl[3];
	const char *p = q + 2;
	for (int i = 0; i < 3; i++) {
		const char *c = i < 2 ? memchr(p, ',', (size_t)(end - p)) : NULL;
		if (i < 2 && !c)
			return bad(rd, "expected 4 fields: config,status,median_us,spread_us", s, len);
		f[i] = p;
		fl[i] = (size_t)((c ? c : end) - p);
		p = c ? c + 1 : end;
	}
	struct entry *en = &r->entries[r->n];
	*en = (struct entry){NULL, r->nparams, KT_OK, -1, -1}; /* cfg is set when cfgs stops moving */
	if (status_of(f[0], fl[0], &en->status) < 0)
		return bad(rd, "unknown status (expected ok, compile-failed, over-limits, check-failed, faulted, timed-out or not-run)",
			   s, len);
	if (en->status == KT_OK &&
	    (parse_time(f[1], fl[1], &en->median_us) < 0 || parse_time(f[2], fl[2], &en->spread_us) < 0))
		return bad(rd, "an ok row needs a median and a spread in microseconds (non-negative numbers)", s, len);
	r->n++;
	return 0;
}

static int header_line(struct reader *rd, const char *s, size_t len)
{
	if (len != strlen(COLUMNS) || strncmp(s, COLUMNS, len))
		return bad(rd, "expected the column row '" COLUMNS "'", s, len);
	rd->have_columns = 1;
	return 0;
}

static int parse_lines(struct reader *rd, const char *text)
{
	const char *s = text;
	for (rd->line = 1; *s; rd->line++) {
		const char *nl = strchr(s, '\n');
		size_t len = nl ? (size_t)(nl - s) : strlen(s);
		if (len && s[len - 1] == '\r')
			len--;
		int rc = 0;
		if (rd->line == 1) {
			if (len != strlen(MAGIC) || strncmp(s, MAGIC, len))
				rc = bad(rd, "not a kt recording of this version (expected '" MAGIC "' as the first line)", s,
					 len);
		} else if (len == 0) {
			rc = 0;
		} else if (s[0] == '#') {
			rc = rd->have_columns ? 0 : comment_line(rd, s, len);
		} else if (!rd->have_columns) {
			rc = header_line(rd, s, len);
		} else {
			rc = data_line(rd, s, len);
		}
		if (rc < 0)
			return -1;
		s = nl ? nl + 1 : s + len;
	}
	if (!rd->have_shape && rd->t->nshapes > 0)
		return kt_fail(rd->err, "%s: error: no '# shape:' line", rd->path);
	if (!rd->have_columns)
		return kt_fail(rd->err, "%s: error: no column row '" COLUMNS "'", rd->path);
	return 0;
}

int kt_recorded_load(const char *path, const kt_tmpl *t, kt_recorded **out, kt_err *err)
{
	kt_buf text = {0};
	*out = NULL;
	if (kt_read_file(path, &text, err) < 0)
		return -1;
	kt_recorded *r = kt_xcalloc(1, sizeof *r);
	r->nparams = t->nparams;
	struct reader rd = {path, t, r, 0, 0, 0, err};
	int rc = parse_lines(&rd, kt_buf_str(&text));
	kt_buf_free(&text);
	for (size_t i = 0; i < r->n; i++)
		r->entries[i].cfg = r->cfgs + i * (size_t)r->nparams;
	if (rc == 0 && r->n) {
		qsort(r->entries, r->n, sizeof *r->entries, entry_cmp);
		for (size_t i = 1; i < r->n; i++)
			if (!entry_cmp(&r->entries[i - 1], &r->entries[i])) {
				kt_buf c = {0};
				kt_tmpl_format_config(t, r->entries[i].cfg, &c);
				rc = kt_fail(err, "%s: error: configuration %s is recorded twice", path, kt_buf_str(&c));
				kt_buf_free(&c);
				break;
			}
	}
	if (rc < 0) {
		kt_recorded_free(r);
		return -1;
	}
	*out = r;
	return 0;
}

int kt_recorded_header(const char *path, const char *key, kt_buf *out, kt_err *err)
{
	kt_buf text = {0}, tag = {0};
	if (kt_read_file(path, &text, err) < 0)
		return -1;
	const char *s = kt_buf_str(&text);
	int rc = -1;
	kt_buf_printf(&tag, "\n# %s:", key);
	const char *columns = strstr(s, "\n" COLUMNS);
	const char *p = strstr(s, kt_buf_str(&tag));
	kt_buf_reset(out);
	if (strncmp(s, MAGIC "\n", strlen(MAGIC) + 1) && strncmp(s, MAGIC "\r\n", strlen(MAGIC) + 2)) {
		kt_fail(err, "%s:1: error: not a kt recording of this version (expected '" MAGIC "')", path);
	} else if (!p || (columns && p > columns)) {
		rc = 1;
	} else {
		p += tag.len;
		p += strspn(p, " ");
		size_t n = strcspn(p, "\r\n");
		while (n && p[n - 1] == ' ')
			n--;
		kt_buf_add(out, p, n);
		rc = 0;
	}
	kt_buf_free(&tag);
	kt_buf_free(&text);
	return rc;
}

int kt_recorded_template_path(const char *path, kt_buf *out, kt_err *err)
{
	int rc = kt_recorded_header(path, "template", out, err);
	return rc > 0 ? kt_fail(err, "%s: error: no '# template:' line", path) : rc;
}

/* ---- answering ---- */

int kt_recorded_eval(kt_recorded *r, const uint16_t *cfg, kt_eval *out)
{
	const struct entry *e = find(r, cfg);
	if (!e)
		return -1;
	out->status = e->status;
	out->median_us = e->status == KT_OK ? e->median_us : -1;
	out->spread_us = e->status == KT_OK ? e->spread_us : -1;
	out->regs = out->smem_static = out->local_bytes = -1;
	out->msg = NULL;
	return 0;
}

const int64_t *kt_recorded_shape(const kt_recorded *r)
{
	return r->shape;
}

const kt_gpu_id *kt_recorded_gpu(const kt_recorded *r)
{
	return &r->gpu;
}

size_t kt_recorded_count(const kt_recorded *r)
{
	return r->n;
}

void kt_recorded_free(kt_recorded *r)
{
	if (!r)
		return;
	free(r->entries);
	free(r->cfgs);
	free(r);
}

/* ---- writing ---- */

static void write_header(kt_buf *b, const kt_tmpl *t, const int64_t *shape, const kt_gpu_id *gpu)
{
	kt_buf_puts(b, MAGIC "\n");
	kt_buf_printf(b, "# template: %s\n# shape: ", t->path ? t->path : "");
	kt_tmpl_format_shape(t, shape, b);
	kt_buf_putc(b, '\n');
	for (int i = 0; i < t->ntypes; i++)
		kt_buf_printf(b, "%s%s=%s%s", i ? "," : "# types: ", t->types[i].name, kt_etypes[t->types[i].chosen].name,
			      i + 1 == t->ntypes ? "\n" : "");
	if (t->arch[0]) /* the compile target, which the constraints saw */
		kt_buf_printf(b, "# arch: %s\n", t->arch);
	if (gpu && gpu->name[0])
		kt_buf_printf(b, "# gpu: name=\"%s\" cc=%d.%d sms=%d l2=%lld smem_optin=%lld\n", gpu->name,
			      gpu->cc_major, gpu->cc_minor, gpu->sms, (long long)gpu->l2_bytes,
			      (long long)gpu->smem_optin);
	kt_buf_puts(b, COLUMNS "\n");
}

int kt_recorded_write(const char *path, const kt_tmpl *t, const int64_t *shape, const kt_gpu_id *gpu,
		      const kt_eval *evals, size_t n, kt_err *err)
{
	kt_buf b = {0};
	write_header(&b, t, shape, gpu);
	for (size_t i = 0; i < n; i++) {
		const kt_eval *e = &evals[i];
		if ((unsigned)e->status >= KT_NSTATUS) {
			kt_buf_free(&b);
			return kt_fail_internal(err, "kt_recorded_write: evaluation %zu has no valid status", i);
		}
		kt_buf_putc(&b, '"');
		kt_tmpl_format_config(t, e->cfg, &b);
		kt_buf_printf(&b, "\",%s,", kt_status_names[e->status]);
		if (e->status == KT_OK)
			kt_buf_printf(&b, "%.4f,%.4f", e->median_us, e->spread_us > 0 ? e->spread_us : 0.0);
		else
			kt_buf_putc(&b, ',');
		kt_buf_putc(&b, '\n');
	}
	int rc = kt_write_atomic(path, b.data, b.len, err);
	kt_buf_free(&b);
	return rc;
}
