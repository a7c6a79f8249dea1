/* farm_task.c - what one array task runs on a GPU node: its share of a list's misses, looked up,
 * tuned through kt_generate, and each record checked in the remote cache (see farm.h,
 * kt_farm_run). */
#include "farm.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <cjson/cJSON.h>

#include "gpu.h"
#include "remote.h"
#include "tune.h"

/* The misses of one task and what became of each. */
typedef struct share {
	const kt_farm_list *l;
	const kt_generate_opts *base;
	char *work;                /* the task's work directory: the outputs and a user cache of its own */
	char *cache;               /* <work>/cache: a hit there is one the remote just gave */
	size_t n;
	const kt_farm_miss **m;    /* n */
	char **outdir;             /* n */
	kt_farm_state *state;      /* n: pending (still to tune), done, failed */
	kt_buf *line;              /* n: what became of it */
} share;

/* Miss j as a kt_generate kernel. */
static kt_generate_kernel kernel_of(const share *s, size_t j)
{
	const kt_farm_miss *m = s->m[j];
	struct stat st;
	const char *pc = m->project_cache && stat(m->project_cache, &st) == 0 && S_ISDIR(st.st_mode) ? m->project_cache : NULL;
	kt_generate_kernel k = {.template_path = m->template_path, .name = m->name, .outdir = s->outdir[j],
				.shapes = m->shape[0] ? &m->shape : NULL, .nshapes = m->shape[0] ? 1 : 0,
				.types = m->types, .ntypes = m->ntypes, .arch = m->arch, .nvcc = m->nvcc,
				.flags = m->flags, .cache_dir = s->cache, .project_cache = pc};
	memcpy(k.measure, m->measure, sizeof k.measure);
	return k;
}

/* The origin and key kt_generate gave miss j (its manifest); 0, or -1 when there is none. */
static int outcome(const share *s, size_t j, kt_buf *origin, kt_buf *key)
{
	kt_buf path = {0}, text = {0};
	kt_buf_printf(&path, "%s/kt_%s.json", s->outdir[j], s->m[j]->name);
	cJSON *doc = kt_read_file(path.data, &text, NULL) == 0 ? cJSON_ParseWithLength(text.data, text.len) : NULL;
	const cJSON *sh = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(doc, "shapes"), 0);
	const cJSON *o = cJSON_GetObjectItemCaseSensitive(sh, "origin"), *k = cJSON_GetObjectItemCaseSensitive(sh, "key");
	int rc = cJSON_IsString(o) ? 0 : -1;
	kt_buf_reset(origin);
	kt_buf_reset(key);
	if (rc == 0)
		kt_buf_puts(origin, o->valuestring);
	if (cJSON_IsString(k))
		kt_buf_puts(key, k->valuestring);
	cJSON_Delete(doc);
	kt_buf_free(&path);
	kt_buf_free(&text);
	return rc;
}

/* kt_generate over the misses still pending: a lookup only, or tuning.  -1 with err when the
 * kernels do not read (their diagnostics in diags). */
static int pass(share *s, int tune, kt_buf *diags, kt_err *err)
{
	kt_generate_kernel *ks = kt_xcalloc(s->n + 1, sizeof *ks);
	int nk = 0;
	for (size_t j = 0; j < s->n; j++)
		if (s->state[j] == KT_FARM_PENDING)
			ks[nk++] = kernel_of(s, j);
	kt_generate_opts o = *s->base;
	o.kernels = ks;
	o.nkernels = nk;
	o.remote = s->l->remote;
	o.gpu = NULL; /* the GPU here gives the keys */
	o.retune = NULL;
	o.require_hit = o.read_only = 0;
	o.no_tune = !tune;
	o.budget = s->l->budget;
	o.seconds = s->l->seconds;
	o.strategy = s->l->strategy;
	o.report = NULL;
	o.farm = NULL;
	o.quiet = s->base->quiet || !tune;
	int rc = nk ? kt_generate(&o, diags, err) : 0;
	free(ks);
	return rc;
}

static void decide(share *s, size_t j, kt_farm_state st, const char *fmt, ...) __attribute__((format(printf, 4, 5)));

/* Miss j is done or failed, for the reason fmt says. */
static void decide(share *s, size_t j, kt_farm_state st, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	s->state[j] = st;
	kt_buf_vprintf(&s->line[j], fmt, ap);
	va_end(ap);
}

/* After the lookup: a miss in a cache is done; one whose key is not the list's is not tuned. */
static void after_lookup(share *s)
{
	kt_buf origin = {0}, key = {0};
	for (size_t j = 0; j < s->n; j++) {
		const char *want = s->m[j]->key;
		if (outcome(s, j, &origin, &key) != 0 || !key.len)
			decide(s, j, KT_FARM_FAILED, "kt generate made no key for it");
		else if (!strncmp(origin.data, "cache:", 6))
			decide(s, j, KT_FARM_DONE, "already in the cache (%s), key %s: skipped", origin.data + 6, key.data);
		else if (want && want[0] && strcmp(want, key.data))
			decide(s, j, KT_FARM_FAILED,
			       "its key here is %s, the configure's %s: the template, its headers or the compiler differ "
			       "from the configure's (kt cache explain shows the fields); not tuned", key.data, want);
	}
	kt_buf_free(&origin);
	kt_buf_free(&key);
}

/* After tuning: a miss is done when its record is in the remote cache. */
static void after_tuning(share *s, kt_remote *r)
{
	kt_buf origin = {0}, key = {0}, name = {0};
	for (size_t j = 0; j < s->n; j++) {
		if (s->state[j] != KT_FARM_PENDING)
			continue;
		if (outcome(s, j, &origin, &key) != 0 || strcmp(origin.data, "tuned") || !key.len) {
			decide(s, j, KT_FARM_FAILED, "not tuned: no configuration passed the check, or the tuning failed "
						      "(the notes above say which)");
			continue;
		}
		kt_err e = {0};
		kt_buf_reset(&name);
		kt_buf_printf(&name, "%s.json", key.data);
		int there = kt_remote_head(r, name.data, &e);
		if (there > 0)
			decide(s, j, KT_FARM_DONE, "tuned; the record is in the remote cache, key %s", key.data);
		else
			decide(s, j, KT_FARM_FAILED, "tuned, but the record is not in the remote cache (%s)",
			       there < 0 ? e.msg : "it was not stored there");
	}
	kt_buf_free(&origin);
	kt_buf_free(&key);
	kt_buf_free(&name);
}

/* The GPU here must be the list's. */
static int check_gpu(const kt_farm_list *l, const char *backend, kt_err *err)
{
	char why[256] = "";
	kt_gpu_info info;
	kt_err e = {0};
	if (kt_tune_gpus(backend, why, sizeof why) <= 0 || kt_tune_gpu_info(backend, 0, &info, &e) != 0)
		return kt_fail(err, "no GPU here (%s): a farm task must run on a node with the GPU (--gres=gpu:1)",
			       why[0] ? why : e.msg);
	if (l->gpu && l->gpu[0] && strcmp(info.id.name, l->gpu))
		return kt_fail(err, "the GPU here is '%s', but the misses are for '%s': KT_FARM must reach nodes with that "
				    "GPU (docs/farm.md)", info.id.name, l->gpu);
	return 0;
}

static void share_free(share *s)
{
	for (size_t j = 0; j < s->n; j++) {
		free(s->outdir[j]);
		kt_buf_free(&s->line[j]);
	}
	free(s->m);
	free(s->outdir);
	free(s->state);
	free(s->line);
	free(s->cache);
	if (s->work)
		kt_remove_tree(s->work);
	free(s->work);
}

/* Task task's misses (i % tasks == task) and a work directory for them. */
static int share_init(share *s, const kt_farm_list *l, int task, const kt_generate_opts *base, kt_err *err)
{
	memset(s, 0, sizeof *s);
	s->l = l;
	s->base = base;
	if (task < 0 || task >= l->tasks)
		return kt_fail(err, "--task %d: the list has tasks 0 to %d", task, l->tasks - 1);
	kt_sweep_temp_dirs(base->tmpdir, "kt-farm"); /* the work directories of tasks that were killed */
	if (!(s->work = kt_temp_dir(base->tmpdir, "kt-farm", err)))
		return -1;
	s->cache = kt_path_join(s->work, "cache");
	s->m = kt_xcalloc(l->n, sizeof *s->m);
	s->outdir = kt_xcalloc(l->n, sizeof *s->outdir);
	s->state = kt_xcalloc(l->n, sizeof *s->state);
	s->line = kt_xcalloc(l->n, sizeof *s->line);
	for (size_t i = (size_t)task; i < l->n; i += (size_t)l->tasks) {
		char dir[32];
		snprintf(dir, sizeof dir, "%zu", i);
		s->m[s->n] = &l->misses[i];
		s->outdir[s->n++] = kt_path_join(s->work, dir);
	}
	return 0;
}

int kt_farm_run(const kt_farm_list *l, int task, const kt_generate_opts *base, kt_buf *report, kt_err *err)
{
	share s;
	kt_err e = {0};
	kt_remote *r = NULL;
	kt_buf diags = {0};
	int rc = share_init(&s, l, task, base, err);
	if (rc == 0)
		rc = check_gpu(l, base->backend, err);
	if (rc == 0 && !(r = kt_remote_open(l->remote, &e)))
		rc = kt_fail(err, "the list's remote cache: %s", e.msg);
	if (rc == 0 && (pass(&s, 0, &diags, err) != 0 || (after_lookup(&s), pass(&s, 1, &diags, err) != 0)))
		rc = -1;
	if (rc == 0)
		after_tuning(&s, r);
	kt_buf_add(report, diags.data, diags.len);
	int failed = 0;
	for (size_t j = 0; rc == 0 && j < s.n; j++) {
		failed += s.state[j] == KT_FARM_FAILED;
		kt_buf_printf(report, "task %d: %s %s: %s%s\n", task, s.m[j]->name, s.m[j]->shape,
			      s.state[j] == KT_FARM_FAILED ? "failed: " : "", kt_buf_str(&s.line[j]));
	}
	kt_remote_close(r);
	kt_buf_free(&diags);
	share_free(&s);
	return rc == 0 ? failed : -1;
}
