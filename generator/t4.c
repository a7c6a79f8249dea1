/* t4.c - Kernel Tuner's T4 results format, out and in (see t4.h and docs/cache.md). */
#define _DEFAULT_SOURCE /* timegm */
#include "t4.h"

#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cjson/cJSON.h>

#include "json.h"

#define T4_OBJECTIVE "time"       /* the objective's measurement, as Kernel Tuner names its default */
#define T4_SPREAD "time_spread"   /* kt's spread of that time */
#define T4_UNIT "ms"              /* the unit Kernel Tuner gives times in */
#define T4_TIMEUNIT "milliseconds" /* the same, as metadata.timeunit names it */
#define US_PER_MS 1e3
#define DATE_FORMAT "%Y-%m-%dT%H:%M:%SZ"

/* kt's statuses in T4: the invalidity, the correctness (0 only where the output was compared and
 * differed, as Kernel Tuner and the methodology's converters write it), and the objective's value
 * for a failure as Kernel Tuner writes one (the name of its error class, which tools that read its
 * files take for an invalid result). */
static const struct t4_status {
	const char *invalidity;
	int correctness;
	const char *error;
} t4_status[KT_NSTATUS] = {
	[KT_OK] = {"correct", 1, NULL},
	[KT_COMPILE_FAILED] = {"compile", 1, "CompilationFailedConfig"},
	[KT_OVER_LIMITS] = {"runtime", 1, "RuntimeFailedConfig"},
	[KT_CHECK_FAILED] = {"correctness", 0, "RuntimeFailedConfig"},
	[KT_FAULTED] = {"runtime", 1, "RuntimeFailedConfig"},
	[KT_TIMED_OUT] = {"timeout", 1, "RuntimeFailedConfig"},
	[KT_NOT_RUN] = {"timeout", 1, "RuntimeFailedConfig"}, /* held back as a hang (kt.status says so) */
};

/* T4's invalidities and the status each reads as (kt's own "kt.status" refines "runtime"). */
static const struct {
	const char *name;
	kt_status status;
} invalidities[] = {
	{"timeout", KT_TIMED_OUT}, {"compile", KT_COMPILE_FAILED}, {"runtime", KT_FAULTED},
	{"correctness", KT_CHECK_FAILED}, {"constraints", KT_OVER_LIMITS}, {"correct", KT_OK},
};

/* The units a time may be given in, and microseconds per unit. */
static const struct {
	const char *name;
	double us;
} time_units[] = {
	{"nanoseconds", 1e-3}, {"ns", 1e-3}, {"microseconds", 1}, {"us", 1}, {"\xc2\xb5s", 1},
	{"milliseconds", 1e3}, {"ms", 1e3}, {"seconds", 1e6}, {"s", 1e6},
};

/* What a record measured, as T4 measurements: its field, the measurement's name and unit, the
 * field's units per the measurement's, and whether it is a time (which only a passed one has). */
static const struct {
	const char *field, *name, *unit;
	double per;
	int time;
} measured[] = {
	{"time_us", T4_OBJECTIVE, T4_UNIT, US_PER_MS, 1},
	{"spread_us", T4_SPREAD, T4_UNIT, US_PER_MS, 1},
	{"regs", "registers", "", 1, 0},
	{"smem_static", "smem_static", "bytes", 1, 0},
	{"local_bytes", "local_bytes", "bytes", 1, 0},
};

/* The type symbols' choices of t, "T=half,U=float" (nothing when it has none). */
static void types_text(const kt_tmpl *t, kt_buf *out)
{
	for (int i = 0; i < t->ntypes; i++)
		kt_buf_printf(out, "%s%s=%s", i ? "," : "", t->types[i].name, kt_etypes[t->types[i].chosen].name);
}

/* ---- writing ---- */

/* Where a T4 document's results came from. */
typedef struct t4_run {
	const char *kernel, *shape, *types, *arch, *key; /* key: the cache key, or NULL */
	kt_gpu_id gpu;
	const char *strategy, *seed;
	double budget, evaluations, seconds; /* NAN when unknown */
	const char *version, *driver, *runtime; /* kt's, the CUDA driver's and runtime's versions */
	time_t finished;                         /* when tuning ended; -1 when unknown */
	const cJSON *config;                     /* the chosen configuration, or NULL */
	const cJSON *evaluated;                  /* the evaluations, as records keep them */
} t4_run;

static void add_str(cJSON *o, const char *name, const char *v)
{
	if (v && v[0])
		cJSON_AddStringToObject(o, name, v);
}

static void add_num(cJSON *o, const char *name, double v)
{
	if (isfinite(v))
		cJSON_AddNumberToObject(o, name, v);
}

static void add_date(cJSON *o, const char *name, time_t t)
{
	char s[32];
	struct tm tm;
	if (t >= 0 && gmtime_r(&t, &tm) && strftime(s, sizeof s, DATE_FORMAT, &tm))
		cJSON_AddStringToObject(o, name, s);
}

static void add_measurement(cJSON *a, const char *name, cJSON *value, const char *unit)
{
	cJSON *m = cJSON_CreateObject();
	cJSON_AddStringToObject(m, "name", name);
	cJSON_AddItemToObject(m, "value", value);
	cJSON_AddStringToObject(m, "unit", unit);
	cJSON_AddItemToArray(a, m);
}

/* One evaluation as records keep it ({config, status, time_us, spread_us, regs, ..., msg}). */
static cJSON *t4_result(const cJSON *ev)
{
	int s = kt_status_named(kt_json_str(ev, "status"));
	if (s < 0)
		s = KT_CHECK_FAILED; /* an unknown status never counts as passed */
	const struct t4_status *m = &t4_status[s];
	const cJSON *conf = cJSON_GetObjectItemCaseSensitive(ev, "config");
	cJSON *o = cJSON_CreateObject();
	cJSON_AddItemToObject(o, "configuration", cJSON_IsObject(conf) ? cJSON_Duplicate(conf, 1) : cJSON_CreateObject());
	cJSON_AddObjectToObject(o, "times");
	cJSON_AddStringToObject(o, "invalidity", m->invalidity);
	cJSON_AddNumberToObject(o, "correctness", m->correctness);
	cJSON *meas = cJSON_AddArrayToObject(o, "measurements");
	if (s != KT_OK)
		add_measurement(meas, T4_OBJECTIVE, cJSON_CreateString(m->error), T4_UNIT);
	for (size_t i = 0; i < sizeof measured / sizeof measured[0]; i++) {
		double v = kt_json_num(ev, measured[i].field, NAN);
		if (measured[i].time && s != KT_OK)
			continue; /* only a passed configuration has a time */
		if (isfinite(v)) /* JSON has no NaN: a field the record lacks gets no measurement */
			add_measurement(meas, measured[i].name, cJSON_CreateNumber(v / measured[i].per), measured[i].unit);
	}
	cJSON_AddItemToArray(cJSON_AddArrayToObject(o, "objectives"), cJSON_CreateString(T4_OBJECTIVE));
	cJSON *kt = cJSON_AddObjectToObject(o, "kt");
	cJSON_AddStringToObject(kt, "status", kt_status_names[s]);
	add_str(kt, "message", kt_json_str(ev, "msg"));
	return o;
}

static cJSON *t4_metadata(const t4_run *run)
{
	cJSON *m = cJSON_CreateObject();
	cJSON_AddStringToObject(m, "compute_api", "CUDA");
	add_str(m, "device", run->gpu.name);
	cJSON_AddStringToObject(m, "autotuner", "kt");
	add_str(m, "autotuner_version", run->version);
	if (run->finished >= 0) /* when tuning began, to the second */
		add_date(m, "timestamp", run->finished - (time_t)llround(isfinite(run->seconds) ? run->seconds : 0));
	cJSON_AddStringToObject(m, "timeunit", T4_TIMEUNIT);
	cJSON *kt = cJSON_AddObjectToObject(m, "kt");
	add_str(kt, "kernel", run->kernel);
	add_str(kt, "shape", run->shape);
	add_str(kt, "types", run->types);
	add_str(kt, "arch", run->arch);
	if (run->gpu.name[0])
		cJSON_AddItemToObject(kt, "gpu", kt_record_gpu_object(&run->gpu));
	add_str(kt, "key", run->key);
	if (cJSON_IsObject(run->config))
		cJSON_AddItemToObject(kt, "config", cJSON_Duplicate(run->config, 1));
	cJSON *search = cJSON_AddObjectToObject(kt, "search");
	add_str(search, "strategy", run->strategy);
	add_str(search, "seed", run->seed);
	add_num(search, "budget", run->budget);
	add_num(search, "evaluations", run->evaluations);
	add_num(search, "seconds", run->seconds);
	add_str(kt, "driver", run->driver);
	add_str(kt, "runtime", run->runtime);
	add_date(kt, "finished", run->finished);
	return m;
}

static char *t4_text(const t4_run *run)
{
	cJSON *doc = cJSON_CreateObject(), *ev;
	cJSON_AddStringToObject(doc, "schema_version", KT_T4_SCHEMA_VERSION);
	cJSON_AddItemToObject(doc, "metadata", t4_metadata(run));
	cJSON *results = cJSON_AddArrayToObject(doc, "results");
	cJSON_ArrayForEach(ev, run->evaluated)
		cJSON_AddItemToArray(results, t4_result(ev));
	kt_buf text = {0};
	kt_buf_put_json(&text, doc);
	kt_buf_putc(&text, '\n');
	cJSON_Delete(doc);
	return kt_buf_detach(&text);
}

/* A record's date ("2026-11-22T00:55:59Z") as a time; -1 when it is not one. */
static time_t parse_date(const char *s)
{
	struct tm tm = {0};
	int n = 0;
	if (!s || sscanf(s, "%d-%d-%dT%d:%d:%dZ%n", &tm.tm_year, &tm.tm_mon, &tm.tm_mday, &tm.tm_hour, &tm.tm_min,
			 &tm.tm_sec, &n) != 6 || s[n])
		return -1;
	tm.tm_year -= 1900;
	tm.tm_mon -= 1;
	return timegm(&tm);
}

char *kt_t4_from_record(const kt_record *r)
{
	const cJSON *doc = r->doc, *it, *fields = cJSON_GetObjectItemCaseSensitive(doc, "fields");
	const cJSON *search = cJSON_GetObjectItemCaseSensitive(doc, "search");
	const char *tool = kt_json_str(doc, "tool");
	kt_buf types = {0};
	cJSON_ArrayForEach(it, fields)
		if (cJSON_IsString(it) && !strncmp(it->string, "type.", 5))
			kt_buf_printf(&types, "%s%s=%s", types.len ? "," : "", it->string + 5, it->valuestring);
	t4_run run = {
		.kernel = r->kernel,
		.shape = r->shape,
		.types = kt_buf_str(&types),
		.arch = kt_json_str(fields, "arch"),
		.key = r->key,
		.gpu = r->gpu,
		.strategy = kt_json_str(search, "strategy"),
		.seed = kt_json_str(search, "seed"),
		.budget = kt_json_num(search, "budget", NAN),
		.evaluations = kt_json_num(search, "evaluations", NAN),
		.seconds = kt_json_num(search, "seconds", NAN),
		.version = tool && !strncmp(tool, "kt ", 3) ? tool + 3 : tool,
		.driver = kt_json_str(doc, "driver"),
		.runtime = kt_json_str(doc, "runtime"),
		.finished = parse_date(r->date),
		.config = cJSON_GetObjectItemCaseSensitive(doc, "config"),
		.evaluated = cJSON_GetObjectItemCaseSensitive(doc, "evaluated"),
	};
	char *text = t4_text(&run);
	kt_buf_free(&types);
	return text;
}

char *kt_t4_from_result(const kt_tmpl *t, const int64_t *shape, const kt_gpu_id *gpu, const kt_tune_result *r)
{
	cJSON *evaluated = kt_record_evaluated_json(t, r);
	const cJSON *best = r->best >= 0 ? cJSON_GetArrayItem(evaluated, (int)r->best) : NULL;
	kt_buf sh = {0}, types = {0};
	char seed[24];
	kt_tmpl_format_shape(t, shape, &sh);
	types_text(t, &types);
	snprintf(seed, sizeof seed, "%" PRIu64, r->seed); /* a string: 64 bits do not fit a double */
	t4_run run = {
		.kernel = t->kernel,
		.shape = kt_buf_str(&sh),
		.types = kt_buf_str(&types),
		.arch = t->arch,
		.gpu = *gpu,
		.strategy = r->strategy,
		.seed = seed,
		.budget = (double)r->budget,
		.evaluations = (double)r->nevals,
		.seconds = r->seconds,
		.version = KT_VERSION,
		.driver = r->driver,
		.runtime = r->runtime,
		.finished = time(NULL),
		.config = cJSON_GetObjectItemCaseSensitive(best, "config"),
		.evaluated = evaluated,
	};
	char *text = t4_text(&run);
	cJSON_Delete(evaluated);
	kt_buf_free(&sh);
	kt_buf_free(&types);
	return text;
}

int kt_t4_write_result(const char *path, const kt_tmpl *t, const int64_t *shape, const kt_gpu_id *gpu,
		       const kt_tune_result *r, kt_err *err)
{
	char *text = kt_t4_from_result(t, shape, gpu, r);
	int rc = kt_write_atomic(path, text, strlen(text), err);
	free(text);
	return rc;
}

/* ---- reading ---- */

struct reader {
	const char *path;
	const kt_tmpl *t;
	const int64_t *shape;
	double unit_us; /* microseconds per unit of a time given without one: metadata.timeunit, else ms */
	kt_err *err;
};

/* Fails with "PATH: results[ENTRY]: WHY" (entry < 0: "PATH: WHY"). */
static int fail_at(const struct reader *rd, int entry, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int fail_at(const struct reader *rd, int entry, const char *fmt, ...)
{
	kt_buf why = {0};
	va_list ap;
	va_start(ap, fmt);
	kt_buf_vprintf(&why, fmt, ap);
	va_end(ap);
	if (entry >= 0)
		kt_fail(rd->err, "%s: results[%d]: %s", rd->path, entry, kt_buf_str(&why));
	else
		kt_fail(rd->err, "%s: %s", rd->path, kt_buf_str(&why));
	kt_buf_free(&why);
	return -1;
}

/* The JSON types T4 gives its fields. */
enum { J_OBJECT, J_ARRAY, J_STRING, J_NUMBER, J_VALUE /* number, string or array */ };
static const char *const jtype_names[] = {"an object", "an array", "a string", "a number", "a number, string or array"};

static int is_jtype(const cJSON *v, int type)
{
	switch (type) {
	case J_OBJECT: return cJSON_IsObject(v);
	case J_ARRAY: return cJSON_IsArray(v);
	case J_STRING: return cJSON_IsString(v);
	case J_NUMBER: return cJSON_IsNumber(v);
	default: return cJSON_IsNumber(v) || cJSON_IsString(v) || cJSON_IsArray(v);
	}
}

typedef struct field {
	const char *name;
	int type, required;
} field;

/* A result's fields (results-schema.json: "required": configuration, times, invalidity, correctness). */
static const field result_fields[] = {
	{"configuration", J_OBJECT, 1}, {"times", J_OBJECT, 1},     {"invalidity", J_STRING, 1},
	{"correctness", J_NUMBER, 1},   {"timestamp", J_STRING, 0}, {"objectives", J_ARRAY, 0},
	{"measurements", J_ARRAY, 0},
};
static const field times_fields[] = {
	{"compilation_time", J_NUMBER, 0}, {"runtimes", J_ARRAY, 0},   {"framework", J_NUMBER, 0},
	{"search_algorithm", J_NUMBER, 0}, {"validation", J_NUMBER, 0},
};
static const field measurement_fields[] = {{"name", J_STRING, 0}, {"value", J_VALUE, 0}, {"unit", J_STRING, 0}};

/* Checks o's fields against fs (where: how o is named in messages, e.g. "times."). */
static int check_fields(const struct reader *rd, int entry, const char *where, const cJSON *o, const field *fs, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, fs[i].name);
		if (!v && fs[i].required)
			return fail_at(rd, entry, "no '%s%s' (T4 requires it)", where, fs[i].name);
		if (v && !is_jtype(v, fs[i].type))
			return fail_at(rd, entry, "'%s%s' is not %s", where, fs[i].name, jtype_names[fs[i].type]);
	}
	return 0;
}

/* Every element of the array a (which may be absent) of type type. */
static int check_items(const struct reader *rd, int entry, const char *what, const cJSON *a, int type)
{
	const cJSON *it;
	int i = 0;
	cJSON_ArrayForEach(it, a)
	{
		if (!is_jtype(it, type))
			return fail_at(rd, entry, "%s[%d] is not %s", what, i, jtype_names[type]);
		i++;
	}
	return 0;
}

static int check_result(const struct reader *rd, int entry, const cJSON *res)
{
	if (!cJSON_IsObject(res))
		return fail_at(rd, entry, "not an object");
	const cJSON *times = cJSON_GetObjectItemCaseSensitive(res, "times");
	const cJSON *meas = cJSON_GetObjectItemCaseSensitive(res, "measurements"), *m;
	if (check_fields(rd, entry, "", res, result_fields, sizeof result_fields / sizeof result_fields[0]) ||
	    check_fields(rd, entry, "times.", times, times_fields, sizeof times_fields / sizeof times_fields[0]) ||
	    check_items(rd, entry, "times.runtimes", cJSON_GetObjectItemCaseSensitive(times, "runtimes"), J_NUMBER) ||
	    check_items(rd, entry, "objectives", cJSON_GetObjectItemCaseSensitive(res, "objectives"), J_STRING) ||
	    check_items(rd, entry, "measurements", meas, J_OBJECT))
		return -1;
	int i = 0;
	cJSON_ArrayForEach(m, meas)
	{
		char where[48];
		snprintf(where, sizeof where, "measurements[%d].", i++);
		if (check_fields(rd, entry, where, m, measurement_fields, sizeof measurement_fields / sizeof measurement_fields[0]))
			return -1;
	}
	return 0;
}

/* Microseconds per unit named name; 0 when it is no unit of time. */
static double unit_named(const char *name)
{
	for (size_t i = 0; name && i < sizeof time_units / sizeof time_units[0]; i++)
		if (!strcmp(name, time_units[i].name))
			return time_units[i].us;
	return 0;
}

/* The value of the numeric measurement named name, in microseconds, into *us: 0 when there is
 * one, 1 when there is none, -1 when its unit is no unit of time. */
static int measured_us(const struct reader *rd, const cJSON *meas, const char *name, double *us)
{
	const cJSON *m;
	cJSON_ArrayForEach(m, meas)
	{
		const char *n = kt_json_str(m, "name"), *unit = kt_json_str(m, "unit");
		double v = kt_json_num(m, "value", NAN), per = unit && unit[0] ? unit_named(unit) : rd->unit_us;
		if (!n || strcmp(n, name) || isnan(v))
			continue;
		*us = v * per;
		return per > 0 ? 0 : -1;
	}
	return 1;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

/* The median of times.runtimes in microseconds, and half the distance between their 10th and 90th
 * percentiles (kt's spread); -1 when there are none. */
static int runtimes_us(const struct reader *rd, const cJSON *runtimes, double *median, double *spread)
{
	int n = cJSON_GetArraySize(runtimes), i = 0;
	if (n <= 0)
		return -1;
	double *v = kt_xcalloc((size_t)n, sizeof *v);
	const cJSON *it;
	cJSON_ArrayForEach(it, runtimes)
		v[i++] = it->valuedouble * rd->unit_us;
	qsort(v, (size_t)n, sizeof *v, cmp_double);
	*median = n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
	*spread = (v[(int)lround(0.9 * (n - 1))] - v[(int)lround(0.1 * (n - 1))]) / 2;
	free(v);
	return 0;
}

/* A correct result's time and spread in microseconds: the measurement "time", else the one its
 * first objective names, else the runtimes. */
static int result_time(const struct reader *rd, int entry, const cJSON *res, kt_eval *e)
{
	const cJSON *meas = cJSON_GetObjectItemCaseSensitive(res, "measurements");
	const cJSON *obj = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(res, "objectives"), 0);
	const char *name = T4_OBJECTIVE;
	int got = measured_us(rd, meas, name, &e->median_us);
	if (got > 0 && cJSON_IsString(obj))
		got = measured_us(rd, meas, name = obj->valuestring, &e->median_us);
	if (got < 0)
		return fail_at(rd, entry, "the measurement '%s' has no unit of time (expected ns, us, ms, s or their names)",
			       name);
	if (got == 0 && measured_us(rd, meas, T4_SPREAD, &e->spread_us) != 0)
		e->spread_us = 0;
	const cJSON *runtimes = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(res, "times"), "runtimes");
	if (got > 0 && runtimes_us(rd, runtimes, &e->median_us, &e->spread_us) < 0)
		return fail_at(rd, entry, "a correct result without a time: no numeric measurement '%s' and no times.runtimes",
			       name);
	if (!isfinite(e->median_us) || e->median_us < 0)
		return fail_at(rd, entry, "the time %g us is not a non-negative number", e->median_us);
	return 0;
}

/* The status of a result: from its invalidity, refined by kt's own status when kt wrote it. */
static int result_status(const struct reader *rd, int entry, const cJSON *res, kt_status *out)
{
	const char *inv = kt_json_str(res, "invalidity");
	const char *own = kt_json_str(cJSON_GetObjectItemCaseSensitive(res, "kt"), "status");
	size_t i = 0, n = sizeof invalidities / sizeof invalidities[0];
	while (i < n && strcmp(inv, invalidities[i].name))
		i++;
	if (i == n)
		return fail_at(rd, entry, "invalidity '%s' is not one of timeout, compile, runtime, correctness, constraints, correct",
			       inv);
	*out = invalidities[i].status;
	int s = kt_status_named(own);
	if (own && (s < 0 || strcmp(t4_status[s].invalidity, inv)))
		return fail_at(rd, entry, "kt.status '%s' does not agree with invalidity '%s'", own, inv);
	if (s >= 0)
		*out = (kt_status)s;
	if (*out == KT_OK && kt_json_num(res, "correctness", NAN) == 0) /* an output known to be wrong never passed */
		*out = KT_CHECK_FAILED;
	return 0;
}

/* Reads one result into e (whose cfg has room for t->nparams); *skip when it is a "constraints"
 * result that t's constraints exclude too. */
static int read_result(const struct reader *rd, int entry, const cJSON *res, kt_eval *e, int *skip)
{
	const kt_tmpl *t = rd->t;
	kt_err why = {0};
	*skip = 0;
	if (check_result(rd, entry, res) || result_status(rd, entry, res, &e->status))
		return -1;
	if (kt_record_config_read(cJSON_GetObjectItemCaseSensitive(res, "configuration"), t, e->cfg, &why))
		return fail_at(rd, entry, "%s: not in the space of %s", why.msg, t->path);
	kt_val env[KT_MAX_SLOTS];
	kt_tmpl_env(t, rd->shape, e->cfg, env);
	int bad = kt_tmpl_violated(t, env);
	if (bad >= 0 && !strcmp(kt_json_str(res, "invalidity"), "constraints")) {
		*skip = 1;
		return 0;
	}
	if (bad >= 0) {
		kt_buf c = {0}, sh = {0};
		kt_tmpl_format_config(t, e->cfg, &c);
		kt_tmpl_format_shape(t, rd->shape, &sh);
		fail_at(rd, entry, "the configuration %s violates '%s' (%s:%d) at shape %s: not in the template's space",
			kt_buf_str(&c), t->req_text[bad], t->path, t->req_loc[bad].line, kt_buf_str(&sh));
		kt_buf_free(&c);
		kt_buf_free(&sh);
		return -1;
	}
	const char *msg = kt_json_str(cJSON_GetObjectItemCaseSensitive(res, "kt"), "message");
	e->msg = msg ? kt_xstrdup(msg) : NULL;
	e->regs = e->smem_static = e->local_bytes = -1;
	return e->status == KT_OK ? result_time(rd, entry, res, e) : 0;
}

static void read_gpu(const cJSON *g, kt_gpu_id *out)
{
	const char *name = kt_json_str(g, "name"), *cc = kt_json_str(g, "cc");
	if (!name)
		return;
	snprintf(out->name, sizeof out->name, "%s", name);
	if (cc)
		sscanf(cc, "%d.%d", &out->cc_major, &out->cc_minor);
	out->sms = isfinite(kt_json_num(g, "sms", NAN)) ? (int)kt_json_num(g, "sms", NAN) : 0;
	out->l2_bytes = isfinite(kt_json_num(g, "l2_bytes", NAN)) ? (int64_t)kt_json_num(g, "l2_bytes", NAN) : 0;
	out->smem_optin = isfinite(kt_json_num(g, "smem_optin", NAN)) ? (int64_t)kt_json_num(g, "smem_optin", NAN) : 0;
}

/* kt's metadata (metadata.kt) against the template, the shape and the types it was given. */
static int check_kt_metadata(const struct reader *rd, const cJSON *kt, kt_t4_space *out)
{
	const kt_tmpl *t = rd->t;
	const char *kernel = kt_json_str(kt, "kernel"), *shape = kt_json_str(kt, "shape"), *types = kt_json_str(kt, "types");
	const char *arch = kt_json_str(kt, "arch");
	kt_buf want = {0};
	int64_t vals[KT_MAX_SLOTS];
	int rc = 0;
	kt_tmpl_format_shape(t, rd->shape, &want);
	if (kernel && strcmp(kernel, t->kernel))
		rc = fail_at(rd, -1, "its results are of kernel '%s' (metadata.kt.kernel), %s is '%s'", kernel, t->path, t->kernel);
	else if (shape && (kt_tmpl_parse_shape(t, shape, vals, NULL) ||
			   memcmp(vals, rd->shape, (size_t)t->nshapes * sizeof *vals)))
		rc = fail_at(rd, -1, "its results were measured at shape %s (metadata.kt.shape), not at %s", shape,
			     kt_buf_str(&want));
	kt_buf_reset(&want);
	types_text(t, &want);
	if (!rc && types && strcmp(types, kt_buf_str(&want)))
		rc = fail_at(rd, -1, "its results were measured with types %s (metadata.kt.types), not %s", types,
			     want.len ? kt_buf_str(&want) : "the template's defaults");
	if (!rc && arch && strcmp(arch, t->arch))
		rc = fail_at(rd, -1, "its results were compiled for %s (metadata.kt.arch), not for %s", arch,
			     t->arch[0] ? t->arch : "an unknown target");
	kt_buf_free(&want);
	read_gpu(cJSON_GetObjectItemCaseSensitive(kt, "gpu"), &out->gpu);
	return rc;
}

static int read_metadata(struct reader *rd, const cJSON *meta, kt_t4_space *out)
{
	if (!meta)
		return 0;
	if (!cJSON_IsObject(meta))
		return fail_at(rd, -1, "'metadata' is not an object");
	const cJSON *unit = cJSON_GetObjectItemCaseSensitive(meta, "timeunit");
	const char *device = kt_json_str(meta, "device");
	if (unit && !(cJSON_IsString(unit) && (rd->unit_us = unit_named(unit->valuestring)) > 0))
		return fail_at(rd, -1, "metadata.timeunit is not one of nanoseconds, microseconds, milliseconds, seconds");
	if (device)
		snprintf(out->gpu.name, sizeof out->gpu.name, "%s", device);
	const cJSON *kt = cJSON_GetObjectItemCaseSensitive(meta, "kt");
	return kt ? check_kt_metadata(rd, kt, out) : 0;
}

/* schema_version, when given: major.minor.patch of major version 1. */
static int check_version(const struct reader *rd, const cJSON *v)
{
	int major, minor, patch, n = 0;
	if (!v)
		return 0;
	if (!cJSON_IsString(v) || sscanf(v->valuestring, "%d.%d.%d%n", &major, &minor, &patch, &n) != 3 ||
	    v->valuestring[n])
		return fail_at(rd, -1, "schema_version is not a version (major.minor.patch)");
	if (major != 1)
		return fail_at(rd, -1, "schema_version %s: this kt reads T4 1.x", v->valuestring);
	return 0;
}

struct seen {
	const uint16_t *cfg;
	size_t bytes;
	int entry;
};

static int seen_cmp(const void *a, const void *b)
{
	const struct seen *x = a, *y = b;
	int c = memcmp(x->cfg, y->cfg, x->bytes);
	return c ? c : (x->entry > y->entry) - (x->entry < y->entry);
}

/* A recorded space holds each configuration once. */
static int check_repeats(const struct reader *rd, const kt_tune_result *r, const int *entries)
{
	struct seen *v = kt_xcalloc(r->nevals + 1, sizeof *v);
	int rc = 0;
	for (size_t i = 0; i < r->nevals; i++)
		v[i] = (struct seen){r->evals[i].cfg, (size_t)rd->t->nparams * sizeof(uint16_t), entries[i]};
	qsort(v, r->nevals, sizeof *v, seen_cmp);
	for (size_t i = 1; i < r->nevals && !rc; i++)
		if (!memcmp(v[i - 1].cfg, v[i].cfg, v[i].bytes)) {
			kt_buf c = {0};
			kt_tmpl_format_config(rd->t, v[i].cfg, &c);
			rc = fail_at(rd, v[i].entry, "the configuration %s repeats results[%d]; a recorded space holds each once",
				     kt_buf_str(&c), v[i - 1].entry);
			kt_buf_free(&c);
		}
	free(v);
	return rc;
}

static int read_results(struct reader *rd, const cJSON *results, kt_t4_space *out)
{
	kt_tune_result *r = &out->result;
	size_t n = (size_t)cJSON_GetArraySize(results), np = (size_t)(rd->t->nparams ? rd->t->nparams : 1);
	int *entries = kt_xcalloc(n + 1, sizeof *entries), entry = 0, rc = 0, skip;
	const cJSON *res;
	r->evals = kt_xcalloc(n + 1, sizeof *r->evals);
	cJSON_ArrayForEach(res, results)
	{
		kt_eval *e = &r->evals[r->nevals];
		e->cfg = kt_xcalloc(np, sizeof *e->cfg);
		if ((rc = read_result(rd, entry, res, e, &skip)) != 0 || skip) {
			free(e->cfg);
			free(e->msg);
			memset(e, 0, sizeof *e);
			out->skipped += !rc;
		} else {
			entries[r->nevals++] = entry;
		}
		if (rc)
			break;
		entry++;
	}
	if (!rc && !r->nevals)
		rc = fail_at(rd, -1, "no result to import (%zu in the file, %zu outside the template's constraints)", n,
			     out->skipped);
	if (!rc)
		rc = check_repeats(rd, r, entries);
	free(entries);
	return rc;
}

/* "PATH:LINE:COL: not JSON" at cJSON's error position. */
static int not_json(const struct reader *rd, const char *text, size_t len)
{
	const char *at = cJSON_GetErrorPtr();
	int line = 1, col = 1;
	for (const char *p = text; at && p < at && p < text + len; p++, col++)
		if (*p == '\n')
			line++, col = 0;
	return kt_fail(rd->err, "%s:%d:%d: not JSON (a T4 file is one JSON object)", rd->path, line, col);
}

static int read_doc(struct reader *rd, const cJSON *doc, kt_t4_space *out)
{
	if (!cJSON_IsObject(doc))
		return fail_at(rd, -1, "not a T4 results document (expected a JSON object)");
	const cJSON *results = cJSON_GetObjectItemCaseSensitive(doc, "results");
	if (check_version(rd, cJSON_GetObjectItemCaseSensitive(doc, "schema_version")) ||
	    read_metadata(rd, cJSON_GetObjectItemCaseSensitive(doc, "metadata"), out))
		return -1;
	if (!cJSON_IsArray(results))
		return fail_at(rd, -1, "not a T4 results document (no 'results' array)");
	if (read_results(rd, results, out))
		return -1;
	for (size_t i = 0; i < out->result.nevals; i++) {
		const kt_eval *e = &out->result.evals[i];
		if (e->status == KT_OK && (out->result.best < 0 || e->median_us < out->result.evals[out->result.best].median_us))
			out->result.best = (long)i;
	}
	return 0;
}

int kt_t4_read(const char *path, const char *text, size_t len, const kt_tmpl *t, const int64_t *shape,
	       kt_t4_space *out, kt_err *err)
{
	struct reader rd = {path, t, shape, US_PER_MS, err};
	memset(out, 0, sizeof *out);
	out->result.nparams = t->nparams;
	out->result.best = -1;
	cJSON *doc = cJSON_ParseWithLength(text, len);
	int rc = doc ? read_doc(&rd, doc, out) : not_json(&rd, text, len);
	cJSON_Delete(doc);
	if (rc)
		kt_t4_space_free(out);
	return rc;
}

int kt_t4_kt_field(const char *text, size_t len, const char *name, kt_buf *out)
{
	cJSON *doc = cJSON_ParseWithLength(text, len);
	const cJSON *meta = cJSON_GetObjectItemCaseSensitive(doc, "metadata");
	const char *v = kt_json_str(cJSON_GetObjectItemCaseSensitive(meta, "kt"), name);
	kt_buf_reset(out);
	if (v)
		kt_buf_puts(out, v);
	cJSON_Delete(doc);
	return v ? 0 : 1;
}

void kt_t4_space_free(kt_t4_space *s)
{
	kt_tune_result_free(&s->result);
	memset(s, 0, sizeof *s);
	s->result.best = -1;
}
