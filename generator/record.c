/* record.c - cache records as JSON documents (see record.h and docs/cache.md). */
#define _POSIX_C_SOURCE 200809L
#include "record.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cjson/cJSON.h>

#include "json.h"
#include "space.h"

/* ---- writing ---- */

static cJSON *param_json(const kt_param *p, int i)
{
	if (p->type == KT_PCHOICE)
		return cJSON_CreateString(p->choices[i]);
	if (p->type == KT_PBOOL)
		return cJSON_CreateBool(p->vals[i] != 0);
	return cJSON_CreateNumber((double)p->vals[i]);
}

static cJSON *config_json(const kt_tmpl *t, const uint16_t *cfg)
{
	cJSON *o = cJSON_CreateObject();
	for (int i = 0; i < t->nparams; i++)
		cJSON_AddItemToObject(o, t->params[i].name, param_json(&t->params[i], cfg[i]));
	return o;
}

/* The field text back as an object of name -> unescaped value, in order. */
static void unescape(const char *s, size_t n, kt_buf *out)
{
	for (size_t i = 0; i < n; i++) {
		if (s[i] != '\\' || i + 1 >= n) {
			kt_buf_putc(out, s[i]);
			continue;
		}
		char c = s[++i];
		if (c == 'n')
			kt_buf_putc(out, '\n');
		else if (c == 'x' && i + 2 < n) {
			char hex[3] = {s[i + 1], s[i + 2], 0};
			kt_buf_putc(out, (char)strtol(hex, NULL, 16));
			i += 2;
		} else
			kt_buf_putc(out, c);
	}
	if (!out->data)
		kt_buf_add(out, "", 0);
}

static cJSON *fields_json(const kt_buf *text)
{
	cJSON *o = cJSON_CreateObject();
	kt_buf name = {0}, value = {0};
	for (const char *line = kt_buf_str(text); *line;) {
		size_t n = strcspn(line, "\n");
		const char *eq = memchr(line, '=', n);
		if (eq) {
			kt_buf_reset(&name);
			kt_buf_add(&name, line, (size_t)(eq - line));
			kt_buf_reset(&value);
			unescape(eq + 1, n - (size_t)(eq - line) - 1, &value);
			cJSON_AddItemToObject(o, name.data, cJSON_CreateString(value.data));
		}
		line += n;
		if (*line)
			line++;
	}
	kt_buf_free(&name);
	kt_buf_free(&value);
	return o;
}

/* How the times were taken: every setting, also at its default (measure.h). */
static void add_measure(cJSON *doc, const kt_measure *m)
{
	cJSON *o = cJSON_AddObjectToObject(doc, "measure");
	for (int s = 0; s < KT_NMEASURE; s++)
		cJSON_AddStringToObject(o, kt_measure_infos[s].name, kt_measure_infos[s].values[m->v[s]]);
}

static void add_roofline(cJSON *doc, const kt_tmpl *t, const int64_t *shape, const kt_tune_result *r,
			 const kt_eval *best)
{
	cJSON *o = cJSON_AddObjectToObject(doc, "roofline");
	cJSON_AddNumberToObject(o, "floor_us", r->floor_us);
	cJSON_AddNumberToObject(o, "bw_gbs", r->bw_gbs);
	cJSON_AddNumberToObject(o, "flops_rate", r->flops_rate);
	kt_val env[KT_MAX_SLOTS];
	kt_launch l;
	kt_tmpl_env(t, shape, best->cfg, env);
	if (kt_tmpl_launch(t, env, &l, NULL) != 0)
		return;
	cJSON_AddNumberToObject(o, "bytes", l.bytes);
	cJSON_AddNumberToObject(o, "flops", l.flops);
	const double us = kt_result_chosen_us(r);
	if (us > 0 && l.bytes > 0)
		cJSON_AddNumberToObject(o, "achieved_gbs", l.bytes / (us * 1e3));
	if (us > 0 && r->floor_us > 0)
		cJSON_AddNumberToObject(o, "fraction_of_floor", r->floor_us / us);
}

cJSON *kt_record_evaluated_json(const kt_tmpl *t, const kt_tune_result *r)
{
	cJSON *a = cJSON_CreateArray();
	for (size_t i = 0; i < r->nevals; i++) {
		const kt_eval *e = &r->evals[i];
		cJSON *o = cJSON_CreateObject();
		cJSON_AddItemToObject(o, "config", config_json(t, e->cfg));
		cJSON_AddStringToObject(o, "status", kt_status_names[e->status]);
		if (e->status == KT_OK) {
			cJSON_AddNumberToObject(o, "time_us", e->median_us);
			cJSON_AddNumberToObject(o, "spread_us", e->spread_us);
		}
		if (e->status == KT_OK && e->raced)
			cJSON_AddTrueToObject(o, "raced");
		if (e->regs >= 0)
			cJSON_AddNumberToObject(o, "regs", e->regs);
		if (e->smem_static >= 0)
			cJSON_AddNumberToObject(o, "smem_static", e->smem_static);
		if (e->local_bytes >= 0)
			cJSON_AddNumberToObject(o, "local_bytes", e->local_bytes);
		if (e->msg)
			cJSON_AddStringToObject(o, "msg", e->msg);
		cJSON_AddItemToArray(a, o);
	}
	return a;
}

/* The rivals of the final choice (decide.h), when there were several: each one's configuration,
 * its time and interval when timed again together, and whether it was in the tie set. */
static void add_retimed(cJSON *doc, const kt_tmpl *t, const kt_tune_result *r)
{
	if (!r->nretimed)
		return;
	cJSON *a = cJSON_AddArrayToObject(doc, "retimed");
	for (size_t i = 0; i < r->nretimed; i++) {
		const kt_retimed *c = &r->retimed[i];
		cJSON *o = cJSON_CreateObject();
		cJSON_AddItemToObject(o, "config", config_json(t, r->evals[c->eval].cfg));
		cJSON_AddNumberToObject(o, "time_us", c->us);
		cJSON_AddNumberToObject(o, "ci_us", c->ci_us);
		if (c->paired)
			cJSON_AddNumberToObject(o, "gap_ci_us", c->gap_ci_us);
		cJSON_AddBoolToObject(o, "tie", c->tie);
		cJSON_AddItemToArray(a, o);
	}
}

static void add_search(cJSON *doc, const kt_tune_result *r)
{
	cJSON *o = cJSON_AddObjectToObject(doc, "search");
	cJSON_AddStringToObject(o, "strategy", r->strategy);
	char seed[24];
	snprintf(seed, sizeof seed, "%" PRIu64, r->seed); /* a string: 64 bits do not fit a double */
	cJSON_AddStringToObject(o, "seed", seed);
	cJSON_AddNumberToObject(o, "budget", (double)r->budget);
	cJSON_AddNumberToObject(o, "evaluations", (double)r->nevals);
	cJSON_AddNumberToObject(o, "seconds", r->seconds);
	if (r->stop[0])
		cJSON_AddStringToObject(o, "stopped", r->stop);
	size_t failed[KT_NSTATUS] = {0};
	for (size_t i = 0; i < r->nevals; i++)
		failed[r->evals[i].status]++;
	cJSON *f = cJSON_AddObjectToObject(o, "failures"); /* by cause */
	for (int s = 0; s < KT_NSTATUS; s++)
		if (s != KT_OK && failed[s])
			cJSON_AddNumberToObject(f, kt_status_names[s], (double)failed[s]);
}

static void add_date(cJSON *doc)
{
	char date[32] = "";
	time_t now = time(NULL);
	struct tm tm;
	if (gmtime_r(&now, &tm))
		strftime(date, sizeof date, "%Y-%m-%dT%H:%M:%SZ", &tm);
	cJSON_AddStringToObject(doc, "date", date);
}

/* Adds the JSON document text (NULL: none) as doc's field name; -1 when it is not JSON. */
static int add_document(cJSON *doc, const char *name, const char *text)
{
	cJSON *v = text ? cJSON_Parse(text) : NULL;
	if (text && !v)
		return -1;
	if (v)
		cJSON_AddItemToObject(doc, name, v);
	return 0;
}

char *kt_record_json(const kt_key *k, const kt_problem *p, const kt_tune_result *r, const kt_record_history *h,
		     kt_err *err)
{
	const kt_tmpl *t = p->tmpl;
	const int64_t *shape = p->shape; /* the GPU and the toolchain are in the key's fields */
	if (r->best < 0 || (size_t)r->best >= r->nevals)
		return kt_fail(err, "%s: no configuration passed; nothing to store", t->kernel), NULL;
	const kt_eval *best = &r->evals[r->best];
	cJSON *doc = cJSON_CreateObject();
	cJSON_AddNumberToObject(doc, "format", KT_KEY_FORMAT);
	cJSON_AddStringToObject(doc, "key", k->hex);
	cJSON_AddItemToObject(doc, "fields", fields_json(&k->fields));
	cJSON_AddStringToObject(doc, "kernel", t->kernel);
	kt_buf s = {0};
	for (int i = 0; i < t->nshapes; i++)
		kt_buf_printf(&s, "%s%s=%" PRId64, i ? "," : "", t->shapes[i], shape[i]);
	cJSON_AddStringToObject(doc, "shape", kt_buf_str(&s));
	kt_buf_free(&s);
	cJSON_AddItemToObject(doc, "config", config_json(t, best->cfg));
	const double chosen_us = kt_result_chosen_us(r);
	cJSON_AddNumberToObject(doc, "time_us", chosen_us);
	cJSON_AddNumberToObject(doc, "spread_us", best->spread_us);
	if (chosen_us != best->median_us) /* re-timed: the sweep's own time, before the warm-up */
		cJSON_AddNumberToObject(doc, "sweep_us", best->median_us);
	if (r->default_us > 0) /* the tuner leaves 0 when not measured; older records have neither */
		cJSON_AddNumberToObject(doc, "default_us", r->default_us);
	if (r->reference_us > 0)
		cJSON_AddNumberToObject(doc, "reference_us", r->reference_us);
	add_measure(doc, &p->measure);
	add_roofline(doc, t, shape, r, best);
	add_search(doc, r);
	cJSON_AddItemToObject(doc, "evaluated", kt_record_evaluated_json(t, r));
	add_retimed(doc, t, r);
	const char *bad = NULL;
	if (add_document(doc, "refactor", h ? h->refactor : NULL) != 0)
		bad = "refactor";
	else if (add_document(doc, "rounds", h ? h->rounds : NULL) != 0)
		bad = "rounds";
	if (bad) {
		cJSON_Delete(doc);
		return kt_fail_internal(err, "%s: the record's %s history is not JSON", t->kernel, bad), NULL;
	}
	cJSON_AddStringToObject(doc, "tool", "kt " KT_VERSION);
	cJSON_AddStringToObject(doc, "driver", r->driver);
	cJSON_AddStringToObject(doc, "runtime", r->runtime);
	add_date(doc);
	char *text = kt_json_text(doc, 1);
	cJSON_Delete(doc);
	return text;
}

/* ---- reading ---- */

/* Rebuilds the field text from the stored object; -1 when a value is not a string. */
static int fields_text(const cJSON *fields, kt_buf *out)
{
	const cJSON *it;
	cJSON_ArrayForEach(it, fields)
	{
		if (!cJSON_IsString(it) || !it->string)
			return -1;
		kt_buf_printf(out, "%s=", it->string);
		kt_key_escape(it->valuestring, out);
		kt_buf_putc(out, '\n');
	}
	return 0;
}

static void gpu_from_fields(const cJSON *fields, kt_gpu_id *g)
{
	const char *s;
	memset(g, 0, sizeof *g);
	if ((s = kt_json_str(fields, "gpu.name")))
		snprintf(g->name, sizeof g->name, "%s", s);
	if ((s = kt_json_str(fields, "gpu.cc")))
		sscanf(s, "%d.%d", &g->cc_major, &g->cc_minor);
	if ((s = kt_json_str(fields, "gpu.sms")))
		g->sms = atoi(s);
	if ((s = kt_json_str(fields, "gpu.l2_bytes")))
		g->l2_bytes = strtoll(s, NULL, 10);
	if ((s = kt_json_str(fields, "gpu.smem_optin")))
		g->smem_optin = strtoll(s, NULL, 10);
}

static int read_doc(kt_record *out, kt_err *err)
{
	const cJSON *doc = out->doc;
	if (!cJSON_IsObject(doc))
		return kt_fail(err, "not a JSON object");
	const cJSON *fmt = cJSON_GetObjectItemCaseSensitive(doc, "format");
	if (!cJSON_IsNumber(fmt))
		return kt_fail(err, "no format version");
	out->format = fmt->valueint;
	if (out->format != KT_KEY_FORMAT)
		return kt_fail(err, "record format %d, this kt reads format %d", out->format, KT_KEY_FORMAT);
	const char *key = kt_json_str(doc, "key");
	if (!key || !kt_key_is_hex(key))
		return kt_fail(err, "no valid key");
	snprintf(out->key, sizeof out->key, "%s", key);
	const cJSON *fields = cJSON_GetObjectItemCaseSensitive(doc, "fields");
	if (!cJSON_IsObject(fields) || fields_text(fields, &out->fields) != 0)
		return kt_fail(err, "no valid key fields");
	char hex[KT_KEY_HEX];
	kt_key_of_fields(kt_buf_str(&out->fields), out->fields.len, hex);
	if (strcmp(hex, out->key) != 0)
		return kt_fail(err, "the key fields hash to %s, not to the stored key", hex);
	if (!cJSON_IsObject(cJSON_GetObjectItemCaseSensitive(doc, "config")))
		return kt_fail(err, "no configuration");
	out->kernel = kt_json_str(doc, "kernel");
	out->shape = kt_json_str(doc, "shape");
	out->date = kt_json_str(doc, "date");
	if (!out->kernel || !out->shape)
		return kt_fail(err, "no kernel or shape");
	gpu_from_fields(fields, &out->gpu);
	out->time_us = kt_json_num(doc, "time_us", NAN);
	out->spread_us = kt_json_num(doc, "spread_us", NAN);
	return 0;
}

int kt_record_read(const char *text, size_t len, kt_record *out, kt_err *err)
{
	memset(out, 0, sizeof *out);
	out->doc = cJSON_ParseWithLength(text, len);
	if (!out->doc)
		return kt_fail(err, "not valid JSON (truncated or corrupt)");
	return read_doc(out, err);
}

/* ---- a record's head: its members but the evaluations, read without parsing those ---------------- */

static size_t skip_blank(const char *s, size_t i, size_t n)
{
	while (i < n && (s[i] == ' ' || s[i] == '\t' || s[i] == '\n' || s[i] == '\r'))
		i++;
	return i;
}

/* The end of the JSON value that starts at s[i]: past a string, object or array's last
 * character, or at the ',', '}' or ']' that ends a number or literal.  0 when it does not end
 * within n.  Only the brackets and strings are followed, not checked: the parse of what is kept
 * checks that. */
static size_t skip_value(const char *s, size_t i, size_t n)
{
	static const unsigned char stop[256] = {['"'] = 1, ['{'] = 1, ['}'] = 1, ['['] = 1, [']'] = 1, [','] = 1};
	size_t start = i;
	for (int depth = 0; i < n;) {
		char c = s[i];
		if (c == '"') { /* to the quote after an even run of backslashes */
			for (i++;;) {
				const char *q = memchr(s + i, '"', n - i);
				if (!q)
					return 0;
				size_t j = (size_t)(q - s), k = j;
				while (k > i && s[k - 1] == '\\')
					k--;
				i = j + 1;
				if ((j - k) % 2 == 0)
					break;
			}
			if (depth == 0)
				return i;
			continue;
		}
		if ((c == ',' || c == '}' || c == ']') && depth == 0)
			return i > start ? i : 0;
		depth += c == '{' || c == '[' ? 1 : c == '}' || c == ']' ? -1 : 0;
		i++;
		if ((c == '}' || c == ']') && depth == 0)
			return i;
		while (i < n && !stop[(unsigned char)s[i]]) /* numbers, names' colons, blanks */
			i++;
	}
	return 0;
}

/* The members of a record's top-level object whose values are the bulk of it, and which a
 * head read leaves out. */
static int bulky(const char *name, size_t n)
{
	static const char *const names[] = {"evaluated", "retimed", "rounds", "refactor"};
	for (size_t k = 0; k < sizeof names / sizeof *names; k++)
		if (n == strlen(names[k]) && !memcmp(name, names[k], n))
			return 1;
	return 0;
}

/* The text of the record's object without its bulky members, into out; -1 when s is not an
 * object of members. */
static int head_text(const char *s, size_t n, kt_buf *out)
{
	size_t i = skip_blank(s, 0, n);
	if (i >= n || s[i++] != '{')
		return -1;
	kt_buf_putc(out, '{');
	for (int first = 1;;) {
		i = skip_blank(s, i, n);
		if (i < n && s[i] == '}' && first)
			break;
		size_t name = i, name_end = i < n && s[i] == '"' ? skip_value(s, i, n) : 0;
		size_t colon = name_end ? skip_blank(s, name_end, n) : n;
		if (colon >= n || s[colon] != ':')
			return -1;
		size_t value = skip_blank(s, colon + 1, n), value_end = skip_value(s, value, n);
		if (!value_end)
			return -1;
		if (!bulky(s + name + 1, name_end - name - 2)) {
			if (out->len > 1)
				kt_buf_putc(out, ',');
			kt_buf_add(out, s + name, value_end - name);
		}
		i = skip_blank(s, value_end, n);
		if (i < n && s[i] == '}')
			break;
		if (i >= n || s[i++] != ',')
			return -1;
		first = 0;
	}
	kt_buf_putc(out, '}');
	return 0;
}

int kt_record_read_head(const char *text, size_t len, kt_record *out, kt_err *err)
{
	memset(out, 0, sizeof *out);
	kt_buf head = {0};
	if (head_text(text, len, &head) == 0)
		out->doc = cJSON_ParseWithLength(head.data, head.len);
	kt_buf_free(&head);
	if (!out->doc)
		return kt_fail(err, "not valid JSON (truncated or corrupt)");
	return read_doc(out, err);
}

void kt_record_free(kt_record *r)
{
	cJSON_Delete(r->doc);
	kt_buf_free(&r->fields);
	memset(r, 0, sizeof *r);
}

/* One "name=value" line of a field text: its name and value as (pointer, length). */
typedef struct field_line {
	const char *name, *value;
	int nname, nvalue;
} field_line;

/* Splits the line at *text and moves *text past it.  0 at the end of the text. */
static int next_field(const char **text, field_line *f)
{
	if (!**text)
		return 0;
	size_t n = strcspn(*text, "\n"), eq = strcspn(*text, "=\n");
	f->name = *text;
	f->nname = (int)eq;
	f->value = eq < n ? *text + eq + 1 : *text + n;
	f->nvalue = eq < n ? (int)(n - eq - 1) : 0;
	*text += n + ((*text)[n] != 0);
	return 1;
}

/* Describes the first field in which two field texts differ. */
static void first_difference(const char *got, const char *want, kt_buf *out)
{
	field_line g, w;
	for (;;) {
		int hg = next_field(&got, &g), hw = next_field(&want, &w);
		if (!hg && !hw)
			return;
		if (!hw) {
			kt_buf_printf(out, "the record has an extra field %.*s", g.nname, g.name);
			return;
		}
		if (!hg || g.nname != w.nname || memcmp(g.name, w.name, (size_t)g.nname) != 0) {
			kt_buf_printf(out, "field %.*s is missing from the record", w.nname, w.name);
			return;
		}
		if (g.nvalue != w.nvalue || memcmp(g.value, w.value, (size_t)g.nvalue) != 0) {
			kt_buf_printf(out, "field %.*s is '%.*s' in the record, '%.*s' expected", w.nname, w.name,
				      g.nvalue, g.value, w.nvalue, w.value);
			return;
		}
	}
}

/* The index of value v among p's declared values, or -1. */
static int value_index(const kt_param *p, const cJSON *v)
{
	for (int j = 0; j < p->nvals; j++) {
		if (p->type == KT_PCHOICE && cJSON_IsString(v) && !strcmp(v->valuestring, p->choices[j]))
			return j;
		if (p->type == KT_PBOOL && cJSON_IsBool(v) && cJSON_IsTrue(v) == (p->vals[j] != 0))
			return j;
		if (p->type == KT_PINT && cJSON_IsNumber(v) && v->valuedouble == (double)p->vals[j])
			return j;
	}
	return -1;
}

/* v as parameter p's value index into *slot; -1 with err when p does not declare it ("is <not>
 * a declared value"). */
static int take_value(const kt_param *p, const cJSON *v, const char *not, uint16_t *slot, kt_err *err)
{
	int j = value_index(p, v);
	if (j < 0) {
		char *txt = kt_json_text(v, 0);
		kt_fail(err, "%s=%s is %s a declared value of %s", p->name, txt, not, p->name);
		free(txt);
		return -1;
	}
	*slot = (uint16_t)j;
	return 0;
}

int kt_record_config_read(const cJSON *conf, const kt_tmpl *t, uint16_t *cfg, kt_err *err)
{
	for (int i = 0; i < t->nparams; i++) {
		const kt_param *p = &t->params[i];
		const cJSON *v = cJSON_GetObjectItemCaseSensitive(conf, p->name);
		if (!v)
			return kt_fail(err, "the configuration has no value for %s", p->name);
		if (take_value(p, v, "not", &cfg[i], err) != 0)
			return -1;
	}
	if (cJSON_GetArraySize(conf) != t->nparams) {
		const cJSON *it;
		cJSON_ArrayForEach(it, conf)
		{
			int known = 0;
			for (int i = 0; i < t->nparams; i++)
				known |= !strcmp(it->string, t->params[i].name);
			if (!known)
				return kt_fail(err, "the configuration sets %s, which the template does not declare",
					       it->string);
		}
		return kt_fail(err, "the configuration repeats a parameter");
	}
	return 0;
}

int kt_record_config_adapt(const cJSON *conf, const kt_tmpl *t, uint16_t *cfg, kt_err *err)
{
	kt_tmpl_default_config(t, cfg);
	const cJSON *it;
	if (!cJSON_IsObject(conf))
		return kt_fail(err, "the record has no configuration");
	cJSON_ArrayForEach(it, conf)
	{
		int i = 0;
		while (i < t->nparams && strcmp(it->string, t->params[i].name) != 0)
			i++;
		if (i == t->nparams)
			return kt_fail(err, "it sets %s, which the template no longer declares", it->string);
		if (take_value(&t->params[i], it, "no longer", &cfg[i], err) != 0)
			return -1;
	}
	return 0;
}

int kt_record_later(const char *a_date, const char *a_key, const char *b_date, const char *b_key)
{
	int d = strcmp(a_date, b_date);
	return d > 0 || (d == 0 && strcmp(a_key, b_key) > 0);
}

int kt_record_match(const kt_record *r, const kt_key *expect, const kt_tmpl *t, const int64_t *shape,
		    uint16_t *cfg, kt_err *err)
{
	if (strcmp(r->key, expect->hex) != 0)
		return kt_fail(err, "the record is for key %s, not %s", r->key, expect->hex);
	if (r->fields.len != expect->fields.len || memcmp(r->fields.data, expect->fields.data, r->fields.len)) {
		kt_buf why = {0};
		first_difference(kt_buf_str(&r->fields), kt_buf_str(&expect->fields), &why);
		kt_fail(err, "the record's key fields differ: %s", kt_buf_str(&why));
		kt_buf_free(&why);
		return -1;
	}
	if (kt_record_config_read(cJSON_GetObjectItemCaseSensitive(r->doc, "config"), t, cfg, err) != 0)
		return -1;
	if (!kt_space_feasible(t, shape, cfg)) {
		kt_buf c = {0};
		kt_tmpl_format_config(t, cfg, &c);
		kt_fail(err, "the configuration %s violates a constraint at this shape", kt_buf_str(&c));
		kt_buf_free(&c);
		return -1;
	}
	return 0;
}

cJSON *kt_record_gpu_object(const kt_gpu_id *gpu)
{
	cJSON *g = cJSON_CreateObject();
	char cc[32];
	snprintf(cc, sizeof cc, "%d.%d", gpu->cc_major, gpu->cc_minor);
	cJSON_AddStringToObject(g, "name", gpu->name);
	cJSON_AddStringToObject(g, "cc", cc);
	cJSON_AddNumberToObject(g, "sms", gpu->sms);
	cJSON_AddNumberToObject(g, "l2_bytes", (double)gpu->l2_bytes);
	cJSON_AddNumberToObject(g, "smem_optin", (double)gpu->smem_optin);
	return g;
}

char *kt_record_gpu_json(const kt_gpu_id *gpu)
{
	cJSON *doc = cJSON_CreateObject();
	cJSON_AddNumberToObject(doc, "format", KT_KEY_FORMAT);
	cJSON_AddItemToObject(doc, "gpu", kt_record_gpu_object(gpu));
	char *text = kt_json_text(doc, 1);
	cJSON_Delete(doc);
	return text;
}

int kt_record_gpu_read(const char *text, size_t len, const char *name, kt_gpu_id *out, kt_err *err)
{
	cJSON *doc = cJSON_ParseWithLength(text, len);
	const cJSON *g = cJSON_GetObjectItemCaseSensitive(doc, "gpu");
	const cJSON *fmt = cJSON_GetObjectItemCaseSensitive(doc, "format");
	const char *gname = kt_json_str(g, "name"), *cc = kt_json_str(g, "cc");
	int rc = 0;
	memset(out, 0, sizeof *out);
	if (!doc)
		rc = kt_fail(err, "not valid JSON (truncated or corrupt)");
	else if (!cJSON_IsNumber(fmt) || fmt->valueint != KT_KEY_FORMAT)
		rc = kt_fail(err, "not a GPU identity of format %d", KT_KEY_FORMAT);
	else if (!gname || strcmp(gname, name) != 0 || !cc || sscanf(cc, "%d.%d", &out->cc_major, &out->cc_minor) != 2)
		rc = kt_fail(err, "not the identity of GPU '%s'", name);
	else {
		snprintf(out->name, sizeof out->name, "%s", gname);
		out->sms = (int)kt_json_num(g, "sms", 0);
		out->l2_bytes = (int64_t)kt_json_num(g, "l2_bytes", 0);
		out->smem_optin = (int64_t)kt_json_num(g, "smem_optin", 0);
		if (out->sms <= 0)
			rc = kt_fail(err, "the identity of GPU '%s' has no SM count", name);
	}
	cJSON_Delete(doc);
	return rc;
}

static kt_status status_of(const char *name)
{
	for (int i = 0; name && i < KT_NSTATUS; i++)
		if (!strcmp(name, kt_status_names[i]))
			return (kt_status)i;
	return KT_CHECK_FAILED; /* an unknown status never counts as passed */
}

/* The stored rivals of the final choice into out->retimed, each at the evaluation of its
 * configuration (one that t cannot express, or that no evaluation has, is skipped). */
static void read_retimed(const cJSON *doc, const kt_tmpl *t, kt_tune_result *out)
{
	const cJSON *a = cJSON_GetObjectItemCaseSensitive(doc, "retimed"), *it;
	uint16_t *cfg = kt_xcalloc((size_t)t->nparams + 1, sizeof *cfg);
	out->retimed = kt_xcalloc((size_t)cJSON_GetArraySize(a) + 1, sizeof *out->retimed);
	cJSON_ArrayForEach(it, a)
	{
		if (kt_record_config_read(cJSON_GetObjectItemCaseSensitive(it, "config"), t, cfg, NULL) != 0)
			continue;
		long e = -1;
		for (size_t i = 0; e < 0 && i < out->nevals; i++)
			if (!memcmp(out->evals[i].cfg, cfg, (size_t)t->nparams * sizeof *cfg))
				e = (long)i;
		const cJSON *gap = cJSON_GetObjectItemCaseSensitive(it, "gap_ci_us");
		if (e >= 0)
			out->retimed[out->nretimed++] = (kt_retimed){.eval = e, .us = kt_json_num(it, "time_us", 0),
								     .ci_us = kt_json_num(it, "ci_us", 0),
								     .tie = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(it, "tie")),
								     .paired = cJSON_IsNumber(gap),
								     .gap_ci_us = cJSON_IsNumber(gap) ? gap->valuedouble : 0};
	}
	free(cfg);
}

void kt_record_result(const kt_record *r, const kt_tmpl *t, kt_tune_result *out)
{
	memset(out, 0, sizeof *out);
	out->nparams = t->nparams;
	out->best = -1;
	const cJSON *doc = r->doc, *search = cJSON_GetObjectItemCaseSensitive(doc, "search");
	const cJSON *roof = cJSON_GetObjectItemCaseSensitive(doc, "roofline");
	const cJSON *evals = cJSON_GetObjectItemCaseSensitive(doc, "evaluated"), *it;
	const char *s;
	out->floor_us = kt_json_num(roof, "floor_us", 0);
	out->bw_gbs = kt_json_num(roof, "bw_gbs", 0);
	out->flops_rate = kt_json_num(roof, "flops_rate", 0);
	snprintf(out->strategy, sizeof out->strategy, "%s", (s = kt_json_str(search, "strategy")) ? s : "");
	out->seed = (s = kt_json_str(search, "seed")) ? strtoull(s, NULL, 10) : 0;
	out->budget = (long)kt_json_num(search, "budget", 0);
	out->seconds = kt_json_num(search, "seconds", 0);
	snprintf(out->stop, sizeof out->stop, "%s", (s = kt_json_str(search, "stopped")) ? s : "");
	snprintf(out->driver, sizeof out->driver, "%s", (s = kt_json_str(doc, "driver")) ? s : "");
	snprintf(out->runtime, sizeof out->runtime, "%s", (s = kt_json_str(doc, "runtime")) ? s : "");
	out->default_us = kt_json_num(doc, "default_us", 0);
	out->reference_us = kt_json_num(doc, "reference_us", 0);
	size_t np = (size_t)(t->nparams ? t->nparams : 1);
	uint16_t *chosen = kt_xcalloc(np, sizeof *chosen);
	int have_chosen = kt_record_config_read(cJSON_GetObjectItemCaseSensitive(doc, "config"), t, chosen, NULL) == 0;
	out->evals = kt_xcalloc((size_t)cJSON_GetArraySize(evals) + 1, sizeof *out->evals);
	cJSON_ArrayForEach(it, evals)
	{
		kt_eval *e = &out->evals[out->nevals];
		e->cfg = kt_xcalloc(np, sizeof *e->cfg);
		if (kt_record_config_read(cJSON_GetObjectItemCaseSensitive(it, "config"), t, e->cfg, NULL) != 0) {
			free(e->cfg);
			e->cfg = NULL;
			continue;
		}
		e->status = status_of(kt_json_str(it, "status"));
		e->median_us = e->status == KT_OK ? kt_json_num(it, "time_us", 0) : 0;
		e->spread_us = e->status == KT_OK ? kt_json_num(it, "spread_us", 0) : 0;
		e->raced = e->status == KT_OK && cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(it, "raced"));
		e->regs = (int)kt_json_num(it, "regs", -1);
		e->smem_static = (int)kt_json_num(it, "smem_static", -1);
		e->local_bytes = (int)kt_json_num(it, "local_bytes", -1);
		e->msg = (s = kt_json_str(it, "msg")) ? kt_xstrdup(s) : NULL;
		if (have_chosen && out->best < 0 && !memcmp(e->cfg, chosen, (size_t)t->nparams * sizeof *chosen))
			out->best = (long)out->nevals;
		out->nevals++;
	}
	free(chosen);
	read_retimed(doc, t, out);
}

void kt_record_measure(const kt_record *r, kt_measure *out)
{
	const cJSON *o = cJSON_GetObjectItemCaseSensitive(r->doc, "measure");
	kt_measure_unset(out);
	for (int s = 0; s < KT_NMEASURE; s++) {
		const char *v = kt_json_str(o, kt_measure_infos[s].name);
		out->v[s] = v ? kt_measure_value((kt_measure_setting)s, v, strlen(v)) : KT_MEASURE_UNSET;
	}
}

void kt_record_config_text(const kt_record *r, kt_buf *out)
{
	const cJSON *it, *conf = cJSON_GetObjectItemCaseSensitive(r->doc, "config");
	int first = 1;
	cJSON_ArrayForEach(it, conf)
	{
		char *v = cJSON_IsString(it) ? NULL : kt_json_text(it, 0);
		kt_buf_printf(out, "%s%s=%s", first ? "" : ",", it->string, v ? v : it->valuestring);
		free(v);
		first = 0;
	}
}
