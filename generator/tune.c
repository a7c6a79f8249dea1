/* tune.c - the tuning loop (see tune.h).
 *
 * The pipeline, one batch deep: while the workers check and time batch k, ninja compiles batch
 * k+1.  The search is told batch k's results after it was asked for batch k+1, which costs a
 * model-guided strategy one batch of hindsight and buys the overlap that makes tuning fast.
 */
#define _XOPEN_SOURCE 700 /* realpath */
#include "tune.h"

#include <cjson/cJSON.h>
#include <dirent.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "compile.h"
#include "emit.h"
#include "json.h"
#include "proc.h"
#include "search.h"
#include "space.h"
#include "target.h"
#include "worker.h"

static const double DEFAULT_NEAR_FLOOR = 0.03;
static const double NOISE_FLOOR = 0.005;       /* times within 0.5% are a tie whatever the spread */
static const int64_t BW_BYTES = 1LL << 30;     /* the copy measured for the bandwidth ceiling */
static const double MEASURE_TIMEOUT_S = 120;   /* watchdog of the ceilings and the final re-timing */
enum { PENDING = -2 }; /* ev_of: in a batch, not yet recorded */
enum { DEFAULT_RETIME_TOP = 5, RETIME_ROUNDS = 30, MIN_BATCH = 8, MAX_BATCH = 64 };
#define CEILINGS_FILE "gpu-ceilings.json"

/* One configuration on its way through compile and test. */
typedef struct cand {
	size_t idx;       /* index into the space */
	kt_unit u;
	kt_launch l;
	char *config;     /* "BLOCK=256,VEC=8" */
	long ev;          /* index into the result's evals once recorded, else -1 */
} cand;

typedef struct batch {
	cand *c;
	size_t n;
	kt_proc ninja;
	int compiling;
	int slot;         /* the compile slot it was started in */
} batch;

typedef struct tuner {
	const kt_tmpl *t;
	const int64_t *shape;
	const kt_tune_opts *o;
	kt_tune_result *r;
	kt_gpu_info info;
	kt_target target; /* info's facts and limits */
	kt_space space;
	kt_search *search;
	kt_compiler cc;
	char arch[8];     /* the device's compute capability digits, when the options name no target */
	kt_pool *pool;
	long *ev_of;      /* per space index: its eval, PENDING, or -1 */
	unsigned char *asked; /* per space index: the search asked for it (and wants a tell) */
	char **cubin_of;  /* per eval: its cubin (for the final re-timing) */
	char **kernel_of; /* per eval: its kernel name */
	size_t failed;
	double start, best_us;
	long def_idx;     /* the default configuration's space index, or -1 */
	char *workdir;
	int own_workdir;
	char *nvcc;       /* the compiler, absolute when given as a path (ninja runs in the work dir) */
	char **deps;      /* the template and its local headers, absolute */
	int ndeps;
	kt_tune_stats st;
	int slot;         /* the compile slot of the next batch */
	kt_buf prelude;   /* of translation units shared by several variants (tu->cc.prelude) */
} tuner;

/* ---- GPUs ----------------------------------------------------------------------------------- */

int kt_tune_gpus(const char *backend, char *why, size_t whysz)
{
	const kt_gpu_ops *ops = kt_gpu_backend(backend);
	int n = 0;
	if (!ops) {
		snprintf(why, whysz, "unknown GPU backend '%s'", backend);
		return 0;
	}
	ops->count(&n, why, whysz);
	return n;
}

int kt_tune_gpu_info(const char *backend, int ordinal, kt_gpu_info *info, kt_err *err)
{
	const kt_gpu_ops *ops = kt_gpu_backend(backend);
	if (!ops)
		return kt_fail(err, "unknown GPU backend '%s'", backend);
	return ops->info(ordinal, info, err);
}

/* The GPUs to use: o->gpu, or every GPU with the same name and compute capability as GPU 0. */
static int pick_gpus(const kt_tune_opts *o, kt_gpu_info *info, int **gpus, int *n, kt_err *err)
{
	char why[256] = "";
	int count = kt_tune_gpus(o->backend, why, sizeof why);
	if (count <= 0)
		return kt_fail(err, "cannot tune: %s", why[0] ? why : "no GPU");
	int first = o->gpu >= 0 ? o->gpu : 0;
	if (first >= count)
		return kt_fail(err, "GPU %d does not exist (%d found)", first, count);
	if (kt_tune_gpu_info(o->backend, first, info, err))
		return -1;
	*gpus = kt_xcalloc((size_t)count, sizeof **gpus);
	*n = 0;
	(*gpus)[(*n)++] = first;
	for (int i = first + 1; o->gpu < 0 && i < count; i++) {
		kt_gpu_info other;
		kt_err e = {0};
		if (kt_tune_gpu_info(o->backend, i, &other, &e) == 0 && !strcmp(other.id.name, info->id.name) &&
		    other.id.cc_major == info->id.cc_major && other.id.cc_minor == info->id.cc_minor)
			(*gpus)[(*n)++] = i;
	}
	return 0;
}

/* ---- ceilings, kept per GPU ------------------------------------------------------------------ */

static void gpu_key(const kt_gpu_id *id, char *key, size_t keysz)
{
	snprintf(key, keysz, "%s|sm_%d%d|%d SMs", id->name, id->cc_major, id->cc_minor, id->sms);
}

/* The arithmetic ceilings, by kt_flops_unit: the name each is kept under and the worker's command
 * that measures it. */
static const struct rate_ceiling {
	const char *kept, *cmd;
} rate_ceilings[KT_NFLOPS_UNITS] = {
	[KT_FLOPS_FMA] = {"gflops", "rate"},
	[KT_FLOPS_TENSOR] = {"tensor_gflops", "rate\ttensor"},
};

/* Reads a kept ceiling ("bw_gbs", "gflops" or "tensor_gflops") for this GPU; 0 when none. */
static double kept_ceiling(const tuner *tu, const char *what)
{
	if (!tu->o->cache_dir)
		return 0;
	char *path = kt_path_join(tu->o->cache_dir, CEILINGS_FILE), key[256];
	kt_buf text = {0};
	kt_err e = {0};
	double v = 0;
	gpu_key(&tu->info.id, key, sizeof key);
	if (kt_read_file(path, &text, &e) == 0) {
		cJSON *doc = cJSON_Parse(kt_buf_str(&text));
		cJSON *n = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(doc, key), what);
		if (cJSON_IsNumber(n) && n->valuedouble > 0)
			v = n->valuedouble;
		cJSON_Delete(doc);
	}
	kt_buf_free(&text);
	free(path);
	return v;
}

/* Keeps a measured ceiling; a failure to write only costs a measurement next time. */
static void keep_ceiling(const tuner *tu, const char *what, double v)
{
	if (!tu->o->cache_dir)
		return;
	char *path = kt_path_join(tu->o->cache_dir, CEILINGS_FILE), key[256];
	kt_buf text = {0};
	kt_err e = {0};
	gpu_key(&tu->info.id, key, sizeof key);
	cJSON *doc = kt_read_file(path, &text, &e) == 0 ? cJSON_Parse(kt_buf_str(&text)) : NULL;
	if (!cJSON_IsObject(doc)) {
		cJSON_Delete(doc);
		doc = cJSON_CreateObject();
	}
	cJSON *g = cJSON_GetObjectItemCaseSensitive(doc, key);
	if (!cJSON_IsObject(g)) {
		cJSON_DeleteItemFromObjectCaseSensitive(doc, key);
		g = cJSON_AddObjectToObject(doc, key);
	}
	cJSON_DeleteItemFromObjectCaseSensitive(g, what);
	cJSON_AddNumberToObject(g, what, v);
	char *out = kt_json_text(doc, 1);
	if (kt_mkdirs(tu->o->cache_dir, &e) == 0)
		kt_write_atomic(path, out, strlen(out), &e);
	free(out);
	cJSON_Delete(doc);
	kt_buf_free(&text);
	free(path);
}

/* Runs one measuring command ("bw N", "rate") on the pool; its first number, or 0. */
static double measure(tuner *tu, const char *cmd, kt_err *err)
{
	kt_job j = {(char *)cmd, KT_OK, NULL, MEASURE_TIMEOUT_S};
	double v = 0;
	if (kt_pool_run(tu->pool, &j, 1, err) == 0 && j.status == KT_OK)
		v = atof(j.reply);
	kt_job_clear(&j);
	return v;
}

static double ceiling(tuner *tu, const char *what, const char *cmd, kt_err *err)
{
	double v = kept_ceiling(tu, what);
	if (v <= 0 && (v = measure(tu, cmd, err)) > 0)
		keep_ceiling(tu, what, v);
	return v;
}

/* The roofline floor at the default launch: bytes / bandwidth, flops / the rate of the template's
 * arithmetic (fp32 FMA or tensor cores), the larger.  A ceiling that is unknown (0) adds nothing. */
static int set_floor(tuner *tu, const kt_launch *l, kt_err *err)
{
	kt_tune_result *r = tu->r;
	char cmd[64];
	if (l->bytes > 0) {
		int64_t mem = tu->info.lim.mem_bytes, bytes = mem / 8 < BW_BYTES ? mem / 8 : BW_BYTES;
		snprintf(cmd, sizeof cmd, "bw\t%lld", (long long)bytes);
		r->bw_gbs = ceiling(tu, "bw_gbs", cmd, err);
	}
	const struct rate_ceiling *rate = &rate_ceilings[tu->t->flops_unit];
	if (l->flops > 0)
		r->flops_rate = ceiling(tu, rate->kept, rate->cmd, err);
	double tb = r->bw_gbs > 0 ? l->bytes / (r->bw_gbs * 1e3) : 0, tf = r->flops_rate > 0 ? l->flops / (r->flops_rate * 1e3) : 0;
	r->floor_us = tb > tf ? tb : tf;
	return 0;
}

/* ---- work directory ------------------------------------------------------------------------- */

static int make_workdir(tuner *tu, kt_err *err)
{
	if (tu->o->workdir) {
		tu->workdir = kt_xstrdup(tu->o->workdir);
		return kt_mkdirs(tu->workdir, err);
	}
	const char *tmp = getenv("TMPDIR");
	kt_buf b = {0};
	kt_buf_printf(&b, "%s/kt-tune-XXXXXX", tmp && *tmp ? tmp : "/tmp");
	tu->workdir = kt_buf_detach(&b);
	if (!mkdtemp(tu->workdir))
		return kt_fail_internal(err, "cannot create a work directory %s", tu->workdir);
	tu->own_workdir = 1;
	return 0;
}

/* Removes the temporary work directory (it holds only files). */
static void remove_workdir(tuner *tu)
{
	if (!tu->own_workdir)
		return;
	DIR *d = opendir(tu->workdir);
	struct dirent *e;
	while (d && (e = readdir(d))) {
		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		char *p = kt_path_join(tu->workdir, e->d_name);
		unlink(p);
		free(p);
	}
	if (d)
		closedir(d);
	rmdir(tu->workdir);
}

/* ---- results ---------------------------------------------------------------------------------- */

static long add_eval(tuner *tu, size_t idx, kt_status st, const char *msg)
{
	kt_tune_result *r = tu->r;
	r->evals = kt_xrealloc(r->evals, (r->nevals + 1) * sizeof *r->evals);
	tu->cubin_of = kt_xrealloc(tu->cubin_of, (r->nevals + 1) * sizeof *tu->cubin_of);
	tu->kernel_of = kt_xrealloc(tu->kernel_of, (r->nevals + 1) * sizeof *tu->kernel_of);
	kt_eval *e = &r->evals[r->nevals];
	memset(e, 0, sizeof *e);
	e->cfg = kt_xmalloc((size_t)tu->t->nparams * sizeof *e->cfg + 1);
	memcpy(e->cfg, kt_space_cfg(&tu->space, idx), (size_t)tu->t->nparams * sizeof *e->cfg);
	e->status = st;
	e->regs = e->smem_static = e->local_bytes = -1;
	e->msg = msg ? kt_xstrdup(msg) : NULL;
	tu->cubin_of[r->nevals] = tu->kernel_of[r->nevals] = NULL;
	tu->ev_of[idx] = (long)r->nevals;
	if (st != KT_OK)
		tu->failed++;
	return (long)r->nevals++;
}

static void tell(tuner *tu, size_t idx)
{
	const kt_eval *e = &tu->r->evals[tu->ev_of[idx]];
	if (tu->asked[idx])
		kt_search_tell(tu->search, idx, e->status == KT_OK ? e->median_us : -1.0);
	if (e->status == KT_OK && (tu->best_us <= 0 || e->median_us < tu->best_us))
		tu->best_us = e->median_us;
}

static void progress(tuner *tu)
{
	if (!tu->o->progress)
		return;
	size_t planned = tu->space.count;
	if (tu->o->budget > 0 && (size_t)tu->o->budget < planned)
		planned = (size_t)tu->o->budget;
	kt_progress_update(tu->o->progress, tu->r->nevals, planned, tu->failed, tu->best_us, tu->r->floor_us);
}

/* ---- candidates --------------------------------------------------------------------------------- */

static void cand_init(tuner *tu, cand *c, size_t idx)
{
	const uint16_t *cfg = kt_space_cfg(&tu->space, idx);
	char sym[160];
	kt_buf cfgtext = {0};
	memset(c, 0, sizeof *c);
	c->idx = idx;
	c->ev = -1;
	kt_emit_symbol(tu->t, tu->t->kernel, cfg, sym, sizeof sym);
	snprintf(c->u.name, sizeof c->u.name, "%s", sym);
	snprintf(c->u.entry, sizeof c->u.entry, "%s_kernel", sym);
	kt_emit_variant(tu->t, cfg, sym, &c->u.src);
	if (tu->cc.prelude)
		kt_emit_part(tu->t, cfg, sym, &c->u.part);
	kt_tmpl_format_config(tu->t, cfg, &cfgtext);
	c->config = kt_buf_detach(&cfgtext);
}

static void batch_free(batch *b)
{
	if (b->compiling)
		kt_proc_kill(&b->ninja);
	for (size_t i = 0; i < b->n; i++) {
		kt_unit_free(&b->c[i].u);
		free(b->c[i].config);
	}
	free(b->c);
	memset(b, 0, sizeof *b);
}

/* Launch geometry; a configuration whose launch cannot be computed or exceeds the device's
 * launch limits is recorded as over the limits without compiling.  1 when it goes on. */
static int admit(tuner *tu, cand *c)
{
	kt_val env[KT_MAX_SLOTS];
	kt_err e = {0};
	char why[256];
	kt_tmpl_env(tu->t, tu->shape, kt_space_cfg(&tu->space, c->idx), env);
	if (kt_tmpl_launch(tu->t, env, &c->l, &e)) {
		c->ev = add_eval(tu, c->idx, KT_OVER_LIMITS, e.msg);
	} else if (kt_target_fits(&tu->target, &c->l, NULL, why, sizeof why)) {
		c->ev = add_eval(tu, c->idx, KT_OVER_LIMITS, why);
	} else {
		return 1;
	}
	tell(tu, c->idx);
	return 0;
}

/* Asks the search for up to max new configurations; those already evaluated (the default) are
 * told again at once.  Appends to b. */
static void ask(tuner *tu, batch *b, size_t max)
{
	size_t *idx = kt_xcalloc(max + 1, sizeof *idx);
	size_t n = kt_search_ask(tu->search, idx, max);
	b->c = kt_xrealloc(b->c, (b->n + n + 1) * sizeof *b->c);
	for (size_t i = 0; i < n; i++) {
		tu->asked[idx[i]] = 1;
		if (tu->ev_of[idx[i]] >= 0)
			tell(tu, idx[i]);
		if (tu->ev_of[idx[i]] != -1)
			continue; /* evaluated, or on its way: told when measured */
		cand *c = &b->c[b->n];
		cand_init(tu, c, idx[i]);
		tu->ev_of[idx[i]] = PENDING;
		if (admit(tu, c)) {
			b->n++;
		} else {
			kt_unit_free(&c->u);
			free(c->config);
		}
	}
	free(idx);
}

static int compile_start(tuner *tu, batch *b, kt_err *err)
{
	if (!b->n)
		return 0;
	kt_unit *u = kt_xcalloc(b->n, sizeof *u);
	for (size_t i = 0; i < b->n; i++)
		u[i] = b->c[i].u;
	b->slot = tu->slot;
	int rc = kt_compile_start(&tu->cc, u, b->n, b->slot, &b->ninja, err);
	tu->slot ^= 1; /* the next batch may start while this one finishes */
	free(u); /* the units are shallow copies: b->c keeps the buffers */
	b->compiling = rc == 0;
	return rc;
}

static int compile_finish(tuner *tu, batch *b, kt_err *err)
{
	if (!b->compiling)
		return 0;
	kt_unit *u = kt_xcalloc(b->n, sizeof *u);
	for (size_t i = 0; i < b->n; i++)
		u[i] = b->c[i].u;
	int rc = kt_compile_finish(&tu->cc, u, b->n, b->slot, &b->ninja, err);
	for (size_t i = 0; i < b->n; i++) {
		b->c[i].u = u[i];
		tu->st.packed += u[i].packed;
	}
	free(u);
	b->compiling = 0;
	if (rc == 1) /* the template cannot share a translation unit: each variant alone from now on */
		tu->cc.prelude = NULL;
	return rc < 0 ? -1 : 0;
}

/* After compiling: record compile failures and resource overruns.  The rest get an eval slot
 * (status filled when measured). */
static void sort_out(tuner *tu, batch *b)
{
	for (size_t i = 0; i < b->n; i++) {
		cand *c = &b->c[i];
		char why[256];
		if (c->ev >= 0)
			continue;
		if (!c->u.ok) {
			c->ev = add_eval(tu, c->idx, KT_COMPILE_FAILED, c->u.msg);
		} else if (kt_target_fits(&tu->target, &c->l, &(kt_usage){c->u.regs, c->u.smem_static}, why, sizeof why)) {
			c->ev = add_eval(tu, c->idx, KT_OVER_LIMITS, why);
		} else {
			continue;
		}
		kt_eval *e = &tu->r->evals[c->ev];
		e->regs = c->u.regs;
		e->smem_static = c->u.smem_static;
		e->local_bytes = c->u.local_bytes;
		tell(tu, c->idx);
	}
}

static void job_cmd(const char *verb, const cand *c, const char *kernel, const char *config, kt_buf *out)
{
	kt_buf_printf(out, "%s\t%s\t%s\t%s", verb, c->u.cubin, kernel, config);
}

/* Checks and times the compiled candidates of b on the workers. */
static int measure_batch(tuner *tu, batch *b, kt_err *err)
{
	kt_job *jobs = kt_xcalloc(b->n + 1, sizeof *jobs);
	size_t *which = kt_xcalloc(b->n + 1, sizeof *which), nj = 0;
	for (size_t i = 0; i < b->n; i++) {
		if (b->c[i].ev >= 0)
			continue;
		kt_buf cmd = {0};
		job_cmd("eval", &b->c[i], b->c[i].u.entry, b->c[i].config, &cmd);
		jobs[nj].cmd = kt_buf_detach(&cmd);
		which[nj++] = i;
	}
	int rc = nj ? kt_pool_run(tu->pool, jobs, nj, err) : 0;
	for (size_t j = 0; rc == 0 && j < nj; j++) {
		cand *c = &b->c[which[j]];
		int ok = jobs[j].status == KT_OK;
		c->ev = add_eval(tu, c->idx, jobs[j].status, ok ? NULL : jobs[j].reply);
		kt_eval *e = &tu->r->evals[c->ev];
		if (ok && sscanf(jobs[j].reply, "%lf\t%lf", &e->median_us, &e->spread_us) != 2) {
			e->status = KT_FAULTED;
			e->msg = kt_xstrdup("the worker's answer had no times");
			tu->failed++;
		}
		e->regs = c->u.regs;
		e->smem_static = c->u.smem_static;
		e->local_bytes = c->u.local_bytes;
		tu->cubin_of[c->ev] = kt_xstrdup(c->u.cubin);
		tu->kernel_of[c->ev] = kt_xstrdup(c->u.entry);
		tell(tu, c->idx);
		progress(tu);
	}
	for (size_t j = 0; j < nj; j++) {
		free(jobs[j].cmd);
		kt_job_clear(&jobs[j]);
	}
	free(jobs);
	free(which);
	return rc;
}

static int should_stop(const tuner *tu)
{
	const kt_tune_opts *o = tu->o;
	if (o->seconds > 0 && kt_now() - tu->start >= o->seconds)
		return 1;
	double near = o->near_floor == 0 ? DEFAULT_NEAR_FLOOR : o->near_floor;
	double floor = tu->r->floor_us;
	/* A best time well under the floor means the floor is wrong (tensor-core flops declared as
	 * fma, or a wgmma kernel that beats the mma.sync probe's rate), so it says nothing about how
	 * close the search is: go on. */
	return near > 0 && floor > 0 && tu->best_us > 0 && tu->best_us <= floor * (1 + near) &&
	       tu->best_us >= floor * (1 - near);
}

/* ---- the end: re-time the top candidates together and choose ----------------------------------- */

/* How far cfg is from the default: parameters that differ, then the sum of index distances. */
static long distance(const kt_tmpl *t, const uint16_t *cfg)
{
	long differ = 0, sum = 0;
	for (int i = 0; i < t->nparams; i++) {
		int d = abs((int)cfg[i] - t->params[i].def);
		differ += d != 0;
		sum += d;
	}
	return differ * 100000 + sum;
}

static const kt_tune_result *sort_r;
static int by_time(const void *a, const void *b)
{
	double x = sort_r->evals[*(const long *)a].median_us, y = sort_r->evals[*(const long *)b].median_us;
	return (x > y) - (x < y);
}

/* Re-times candidates which[0..k) together, interleaved; their times go to med/spr (unchanged
 * when the re-timing fails: the sweep's times stand). */
static void retime(tuner *tu, const long *which, size_t k, double *med, double *spr)
{
	kt_tune_result *r = tu->r;
	kt_buf cmd = {0};
	kt_buf_printf(&cmd, "retime\t%d", RETIME_ROUNDS);
	for (size_t i = 0; i < k; i++) {
		kt_buf cfg = {0};
		kt_tmpl_format_config(tu->t, r->evals[which[i]].cfg, &cfg);
		kt_buf_printf(&cmd, "\t%s\t%s\t%s", tu->cubin_of[which[i]], tu->kernel_of[which[i]], kt_buf_str(&cfg));
		kt_buf_free(&cfg);
	}
	kt_job j = {cmd.data, KT_OK, NULL, MEASURE_TIMEOUT_S};
	kt_err e = {0};
	if (kt_pool_run(tu->pool, &j, 1, &e) == 0 && j.status == KT_OK) {
		const char *p = j.reply;
		for (size_t i = 0; i < k && p; i++) {
			char *end;
			double m = strtod(p, &end), sp = strtod(end, &end);
			if (m > 0)
				med[i] = m, spr[i] = sp;
			p = *end ? end + 1 : NULL;
		}
	}
	kt_job_clear(&j);
	kt_buf_free(&cmd);
}

/* The choice: the fastest few (and the default, when its sweep time is within the noise of the
 * fastest) are re-timed together; among those within the noise of the fastest of them, the
 * default, else the one closest to it.  The evals keep their sweep times. */
static void choose(tuner *tu)
{
	kt_tune_result *r = tu->r;
	long *ok = kt_xcalloc(r->nevals + 1, sizeof *ok);
	size_t nok = 0;
	for (size_t i = 0; i < r->nevals; i++)
		if (r->evals[i].status == KT_OK)
			ok[nok++] = (long)i;
	r->best = -1;
	if (!nok) {
		free(ok);
		return;
	}
	sort_r = r;
	qsort(ok, nok, sizeof *ok, by_time);
	int top = tu->o->retime_top == 0 ? DEFAULT_RETIME_TOP : tu->o->retime_top;
	size_t k = top < 1 ? 1 : (size_t)top < nok ? (size_t)top : nok;
	long def = tu->def_idx >= 0 ? tu->ev_of[tu->def_idx] : -1;
	if (def >= 0 && r->evals[def].status == KT_OK) {
		const kt_eval *b = &r->evals[ok[0]], *d = &r->evals[def];
		double noise = fmax(fmax(b->spread_us, d->spread_us), NOISE_FLOOR * b->median_us);
		int in_top = 0;
		for (size_t i = 0; i < k; i++)
			in_top |= ok[i] == def;
		if (!in_top && d->median_us - b->median_us <= noise)
			ok[k++] = def; /* a slot beyond the top: ok has room for every passing eval */
	}
	double *med = kt_xcalloc(k, sizeof *med), *spr = kt_xcalloc(k, sizeof *spr);
	for (size_t i = 0; i < k; i++) {
		med[i] = r->evals[ok[i]].median_us;
		spr[i] = r->evals[ok[i]].spread_us;
	}
	if (k > 1)
		retime(tu, ok, k, med, spr);
	size_t fastest = 0;
	for (size_t i = 1; i < k; i++)
		if (med[i] < med[fastest])
			fastest = i;
	size_t best = fastest;
	for (size_t i = 0; i < k; i++) {
		double noise = fmax(fmax(spr[fastest], spr[i]), NOISE_FLOOR * med[fastest]);
		if (i != best && med[i] - med[fastest] <= noise &&
		    distance(tu->t, r->evals[ok[i]].cfg) < distance(tu->t, r->evals[ok[best]].cfg))
			best = i;
	}
	r->best = ok[best];
	free(med);
	free(spr);
	free(ok);
}

/* ---- setup --------------------------------------------------------------------------------------- */

static long find_default(const tuner *tu)
{
	uint16_t def[KT_MAX_SLOTS];
	kt_tmpl_default_config(tu->t, def);
	size_t sz = (size_t)tu->t->nparams * sizeof *def;
	for (size_t i = 0; i < tu->space.count; i++)
		if (!memcmp(kt_space_cfg(&tu->space, i), def, sz))
			return (long)i;
	return -1;
}

static int open_pool(tuner *tu, const int *gpus, int ngpus, kt_err *err)
{
	const kt_tune_opts *o = tu->o;
	char exe[PATH_MAX];
	if (!o->exe) {
		ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
		if (n <= 0)
			return kt_fail_internal(err, "cannot find the kt executable for the workers");
		exe[n] = 0;
	}
	kt_buf shape = {0};
	kt_tmpl_format_shape(tu->t, tu->shape, &shape);
	char *log = kt_path_join(tu->workdir, "worker.log");
	kt_worker_opts wo = {o->exe ? o->exe : exe, o->backend, tu->t->path, o->types, o->ntypes, kt_buf_str(&shape),
			     o->seed, o->timeout_s, 0, log};
	tu->pool = kt_pool_new(&wo, gpus, ngpus, err);
	kt_buf_free(&shape);
	free(log);
	return tu->pool ? 0 : -1;
}

/* The reference: the template's reference kernel, else the default configuration. */
static int run_reference(tuner *tu, const cand *ref, kt_err *err)
{
	kt_buf cmd = {0}, kernel = {0};
	if (tu->t->reference) {
		kt_buf_printf(&kernel, "%s_reference", ref->u.name);
		job_cmd("ref", ref, kt_buf_str(&kernel), "-", &cmd);
	} else {
		job_cmd("ref", ref, ref->u.entry, ref->config, &cmd);
	}
	const char *reply = NULL;
	int rc = kt_pool_setup(tu->pool, kt_buf_str(&cmd), &reply, err);
	if (rc == 0 && tu->t->reference)
		tu->r->reference_us = atof(reply);
	if (rc) {
		kt_err e = *err;
		kt_fail_internal(err, "the reference (%s) failed: %s", tu->t->reference ? tu->t->reference : "the default configuration", e.msg);
	}
	kt_buf_free(&cmd);
	kt_buf_free(&kernel);
	return rc;
}

static int batch_size(const tuner *tu)
{
	if (tu->o->batch > 0)
		return tu->o->batch;
	int n = 4 * kt_compile_jobs(&tu->cc); /* several waves of nvcc per batch: the last wave's tail idles fewer cores */
	return n < MIN_BATCH ? MIN_BATCH : n > MAX_BATCH ? MAX_BATCH : n;
}

/* The first batch: the check kernels (unit 0), a reference unit when the default is not
 * measured (unit 1), the default configuration and what the search asks first.  The workers
 * start while nvcc runs.  On return b holds the configurations; *ref points at the unit that
 * holds the reference (in b, or the extra one in pre). */
static int first_batch(tuner *tu, batch *b, batch *pre, const cand **ref, const int *gpus, int ngpus, kt_err *err)
{
	tu->def_idx = find_default(tu);
	if (tu->def_idx < 0 && !tu->t->reference)
		return kt_fail(err, "the default configuration is infeasible at this shape and the template names no reference kernel");
	pre->c = kt_xcalloc(2, sizeof *pre->c);
	cand *check = &pre->c[pre->n++];
	snprintf(check->u.name, sizeof check->u.name, "kt_check");
	kt_check_source(&check->u.src);
	check->ev = -1;
	b->c = kt_xcalloc(2, sizeof *b->c);
	if (tu->def_idx >= 0) { /* the default is measured like every other configuration, first */
		cand_init(tu, &b->c[0], (size_t)tu->def_idx);
		tu->ev_of[tu->def_idx] = PENDING;
		if (admit(tu, &b->c[0]))
			b->n = 1;
		else
			kt_unit_free(&b->c[0].u), free(b->c[0].config);
	}
	if (!b->n) { /* only the reference kernel: from the variant text of any configuration */
		cand *r = &pre->c[pre->n++];
		kt_val env[KT_MAX_SLOTS];
		kt_err e = {0};
		cand_init(tu, r, tu->def_idx >= 0 ? (size_t)tu->def_idx : 0);
		snprintf(r->u.name, sizeof r->u.name, "kt_reference");
		kt_buf_free(&r->u.part); /* compiled alone, under its own name */
		kt_tmpl_env(tu->t, tu->shape, kt_space_cfg(&tu->space, r->idx), env);
		kt_tmpl_launch(tu->t, env, &r->l, &e);
	}
	int ref_in_b = b->n > 0;
	ask(tu, b, (size_t)batch_size(tu)); /* may move b->c */
	*ref = ref_in_b ? &b->c[0] : &pre->c[1];
	batch all = {0};
	all.n = pre->n + b->n;
	all.c = kt_xcalloc(all.n + 1, sizeof *all.c);
	memcpy(all.c, pre->c, pre->n * sizeof *all.c);
	memcpy(all.c + pre->n, b->c, b->n * sizeof *all.c);
	int rc = compile_start(tu, &all, err);
	if (rc == 0)
		rc = open_pool(tu, gpus, ngpus, err);
	if (all.compiling) {
		kt_err e = {0};
		int crc = compile_finish(tu, &all, &e);
		if (rc == 0 && crc)
			rc = -1, *err = e;
	}
	memcpy(pre->c, all.c, pre->n * sizeof *all.c);
	memcpy(b->c, all.c + pre->n, b->n * sizeof *all.c);
	free(all.c);
	if (rc)
		return -1;
	if (!check->u.ok)
		return kt_fail_internal(err, "the check kernels did not compile:\n%s", check->u.msg);
	if (!(*ref)->u.ok)
		return kt_fail(err, "the reference variant did not compile:\n%s", (*ref)->u.msg);
	kt_buf cmd = {0};
	kt_buf_printf(&cmd, "check\t%s", check->u.cubin);
	rc = kt_pool_setup(tu->pool, kt_buf_str(&cmd), NULL, err);
	kt_buf_free(&cmd);
	return rc;
}

static void tuner_free(tuner *tu)
{
	kt_pool_free(tu->pool);
	if (tu->search)
		kt_search_free(tu->search);
	for (size_t i = 0; i < tu->r->nevals; i++) {
		free(tu->cubin_of[i]);
		free(tu->kernel_of[i]);
	}
	free(tu->cubin_of);
	free(tu->kernel_of);
	free(tu->ev_of);
	free(tu->asked);
	kt_space_free(&tu->space);
	remove_workdir(tu);
	free(tu->workdir);
	free(tu->nvcc);
	kt_buf_free(&tu->prelude);
	for (int i = 0; i < tu->ndeps; i++)
		free(tu->deps[i]);
	free(tu->deps);
}

/* Narrows the space to the configurations of o->only, in their order; each must be in it.  The
 * default stays too when it is feasible (without a reference kernel it is the reference). */
static int keep_only(tuner *tu, kt_err *err)
{
	const kt_tune_opts *o = tu->o;
	size_t np = (size_t)tu->t->nparams, n = 0;
	long def = find_default(tu);
	uint16_t *keep = kt_xcalloc((o->nonly + 1) * np + 1, sizeof *keep);
	if (def >= 0)
		memcpy(keep + n++ * np, kt_space_cfg(&tu->space, (size_t)def), np * sizeof *keep);
	for (size_t j = 0; j < o->nonly; j++) {
		const uint16_t *want = o->only + j * np;
		size_t i = 0;
		while (i < tu->space.count && memcmp(kt_space_cfg(&tu->space, i), want, np * sizeof *want))
			i++;
		if (i == tu->space.count) {
			kt_buf cfg = {0};
			kt_tmpl_format_config(tu->t, want, &cfg);
			kt_fail(err, "configuration %s is not feasible at this shape", kt_buf_str(&cfg));
			kt_buf_free(&cfg);
			free(keep);
			return -1;
		}
		size_t k = 0; /* given twice, or the default: evaluated once */
		while (k < n && memcmp(keep + k * np, want, np * sizeof *want))
			k++;
		if (k == n)
			memcpy(keep + n++ * np, want, np * sizeof *want);
	}
	free(tu->space.cfgs);
	tu->space.cfgs = keep;
	tu->space.count = n;
	return 0;
}

static int setup(tuner *tu, int **gpus, int *ngpus, kt_err *err)
{
	const kt_tune_opts *o = tu->o;
	if (pick_gpus(o, &tu->info, gpus, ngpus, err) || kt_space_enum(tu->t, tu->shape, &tu->space, err))
		return -1;
	if (!tu->space.count)
		return kt_fail(err, "no configuration of %s is feasible at this shape", tu->t->kernel);
	if (o->nonly && keep_only(tu, err))
		return -1;
	tu->search = kt_search_new(o->strategy, tu->t, &tu->space, o->budget, o->seed, err);
	if (!tu->search || make_workdir(tu, err))
		return -1;
	tu->ev_of = kt_xmalloc(tu->space.count * sizeof *tu->ev_of);
	tu->asked = kt_xcalloc(tu->space.count, 1);
	for (size_t i = 0; i < tu->space.count; i++)
		tu->ev_of[i] = -1;
	tu->nvcc = o->nvcc && strchr(o->nvcc, '/') ? realpath(o->nvcc, NULL) : NULL;
	if (o->nvcc && strchr(o->nvcc, '/') && !tu->nvcc)
		return kt_fail(err, "the compiler %s does not exist", o->nvcc);
	tu->deps = kt_xcalloc((size_t)tu->t->nincludes + 1, sizeof *tu->deps);
	for (int i = -1; i < tu->t->nincludes; i++) {
		char *p = realpath(i < 0 ? tu->t->path : tu->t->includes[i], NULL);
		if (p)
			tu->deps[tu->ndeps++] = p;
	}
	kt_target_from_info(&tu->info, &tu->target);
	kt_gpu_arch(&tu->info.id, tu->arch, sizeof tu->arch);
	tu->cc = (kt_compiler){tu->nvcc ? tu->nvcc : o->nvcc, o->ninja, o->arch ? o->arch : tu->arch,
			       o->flags, o->nflags, o->jobs, tu->workdir, (const char *const *)tu->deps, tu->ndeps,
			       NULL, 0};
	tu->cc.pack = o->pack > 0 ? o->pack : KT_TUNE_PACK;
	kt_search_set_parallel(tu->search, (size_t)kt_compile_jobs(&tu->cc)); /* a batch of one nvcc per job */
	if (tu->cc.pack > 1 && kt_emit_prelude(tu->t, &tu->prelude) == 0)
		tu->cc.prelude = kt_buf_str(&tu->prelude);
	kt_tune_result *r = tu->r;
	r->nparams = tu->t->nparams;
	r->best = -1;
	snprintf(r->strategy, sizeof r->strategy, "%s", kt_search_name(tu->search));
	snprintf(r->driver, sizeof r->driver, "%s", tu->info.driver);
	r->seed = o->seed;
	r->budget = o->budget > 0 ? o->budget : (long)tu->space.count;
	return 0;
}

/* Asks for the next batch and starts compiling it (nothing when tuning should stop). */
static int next_batch(tuner *tu, batch *b, kt_err *err)
{
	memset(b, 0, sizeof *b);
	if (should_stop(tu))
		return 0;
	ask(tu, b, (size_t)batch_size(tu));
	return compile_start(tu, b, err);
}

/* The pipeline, two batches ahead: while the workers measure batch a, batch b compiles, and
 * batch c starts as soon as a is measured, so nvcc never waits for a batch's slowest compile.
 * On entry a is compiled and b compiling (or empty). */
static int pipeline(tuner *tu, batch *a, batch *b, kt_err *err)
{
	int rc = 0;
	while (rc == 0 && a->n) {
		sort_out(tu, a);
		double t0 = kt_now();
		rc = measure_batch(tu, a, err);
		double t1 = kt_now();
		batch c = {0};
		if (rc == 0)
			rc = next_batch(tu, &c, err);
		if (rc == 0)
			rc = compile_finish(tu, b, err);
		if (rc == 0 && !b->n) { /* nothing was ahead: take c */
			batch_free(b);
			*b = c;
			memset(&c, 0, sizeof c);
			rc = compile_finish(tu, b, err);
		}
		if (rc == 0 && !b->n) { /* a strategy that waited for a's results */
			batch_free(b);
			if ((rc = next_batch(tu, b, err)) == 0)
				rc = compile_finish(tu, b, err);
		}
		tu->st.measure_s += t1 - t0;
		tu->st.compile_wait_s += kt_now() - t1;
		tu->st.batches++;
		batch_free(a);
		*a = *b;
		*b = c;
	}
	return rc;
}

int kt_tune(const kt_tmpl *t, const int64_t *shape, const kt_tune_opts *o, kt_tune_result *out, kt_err *err)
{
	memset(out, 0, sizeof *out);
	out->best = -1;
	tuner tu = {.t = t, .shape = shape, .o = o, .r = out, .def_idx = -1, .start = kt_now()};
	int *gpus = NULL, ngpus = 0;
	batch a = {0}, b = {0}, pre = {0};
	const cand *ref = NULL;
	int rc = setup(&tu, &gpus, &ngpus, err);
	if (rc == 0)
		rc = first_batch(&tu, &a, &pre, &ref, gpus, ngpus, err);
	if (rc == 0) /* the second batch compiles while the reference and the ceilings run */
		rc = next_batch(&tu, &b, err);
	if (rc == 0)
		rc = run_reference(&tu, ref, err);
	if (rc == 0)
		rc = set_floor(&tu, &ref->l, err);
	tu.st.setup_s = kt_now() - tu.start;
	if (rc == 0)
		rc = pipeline(&tu, &a, &b, err);
	if (rc == 0) {
		double t0 = kt_now();
		choose(&tu);
		tu.st.retime_s = kt_now() - t0;
		if (tu.def_idx >= 0 && tu.ev_of[tu.def_idx] >= 0 && out->evals[tu.ev_of[tu.def_idx]].status == KT_OK)
			out->default_us = out->evals[tu.ev_of[tu.def_idx]].median_us;
	}
	out->seconds = kt_now() - tu.start;
	if (o->progress && rc == 0)
		kt_progress_done(o->progress, out->nevals, tu.failed, out->best >= 0 ? out->evals[out->best].median_us : 0,
				 out->floor_us);
	tu.st.restarts = tu.pool ? kt_pool_restarts(tu.pool) : 0;
	tu.st.ngpus = tu.pool ? kt_pool_gpus(tu.pool, tu.st.gpu, tu.st.gpu_jobs, KT_TUNE_MAX_GPUS) : 0;
	if (o->stats)
		*o->stats = tu.st;
	batch_free(&a);
	batch_free(&b);
	batch_free(&pre);
	free(gpus);
	tuner_free(&tu);
	return rc;
}

/* ---- several shapes ----------------------------------------------------------------------------- */

static double best_time(const kt_tune_result *r)
{
	return r->best >= 0 ? r->evals[r->best].median_us : 0;
}

int kt_tune_robust(const kt_tmpl *t, const kt_tune_result *const *rs, size_t n, uint16_t *cfg, double *worst)
{
	size_t np = (size_t)t->nparams, best_shapes = 0;
	double best_worst = 0;
	int found = 0;
	for (size_t s = 0; s < n; s++)
		for (size_t i = 0; i < rs[s]->nevals; i++) {
			const uint16_t *c = rs[s]->evals[i].cfg;
			if (rs[s]->evals[i].status != KT_OK)
				continue;
			size_t shapes = 0;
			double w = 1;
			for (size_t u = 0; u < n && w < INFINITY; u++)
				for (size_t j = 0; j < rs[u]->nevals; j++) {
					const kt_eval *e = &rs[u]->evals[j];
					if (memcmp(e->cfg, c, np * sizeof *c))
						continue;
					shapes++;
					double b = best_time(rs[u]);
					w = e->status != KT_OK || b <= 0 ? INFINITY : fmax(w, e->median_us / b);
					break;
				}
			if (w < INFINITY && (!found || shapes > best_shapes || (shapes == best_shapes && w < best_worst))) {
				found = 1;
				best_shapes = shapes;
				best_worst = w;
				memcpy(cfg, c, np * sizeof *c);
			}
		}
	if (found)
		*worst = best_worst;
	return found ? 0 : -1;
}
