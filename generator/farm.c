/* farm.c - the misses as a list, the list as a Slurm job array, the job as Slurm tells it (see
 * farm.h; a task's own work is in farm_task.c). */
#define _XOPEN_SOURCE 700 /* realpath */
#include "farm.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

#include <cjson/cJSON.h>

#include "json.h"
#include "key.h"

const char *const kt_farm_state_names[KT_FARM_NSTATES] = {"pending", "running", "done", "failed"};

/* ---- KT_FARM ------------------------------------------------------------------------------ */

/* What a setting does: becomes its sbatch option, types the GPU's GRES, or is kt's own count. */
typedef enum setting_kind { S_SBATCH, S_GPU, S_TASKS, S_PARALLEL } setting_kind;

typedef struct setting {
	const char *key;
	setting_kind kind;
	const char *sbatch; /* S_SBATCH: the option */
} setting;

/* Sorted by key (docs/farm.md describes each). */
static const setting settings[] = {
	{"account", S_SBATCH, "--account"},     {"constraint", S_SBATCH, "--constraint"},
	{"cpus", S_SBATCH, "--cpus-per-task"},  {"gpu", S_GPU, NULL},
	{"mem", S_SBATCH, "--mem"},             {"parallel", S_PARALLEL, NULL},
	{"partition", S_SBATCH, "--partition"}, {"qos", S_SBATCH, "--qos"},
	{"reservation", S_SBATCH, "--reservation"}, {"tasks", S_TASKS, NULL},
	{"time", S_SBATCH, "--time"},
};
enum { NSETTINGS = sizeof settings / sizeof settings[0], MAX_COUNT = 1000000 };

static const setting *find_setting(const char *key, size_t n)
{
	for (size_t i = 0; i < NSETTINGS; i++)
		if (strlen(settings[i].key) == n && !strncmp(settings[i].key, key, n))
			return &settings[i];
	return NULL;
}

/* A value of tasks= or parallel=: a count from 1 to MAX_COUNT. */
static int parse_count(const char *text, const char *word, const char *v, int *out, kt_err *err)
{
	int64_t x;
	if (kt_parse_i64(v, strlen(v), &x) || x < 1 || x > MAX_COUNT)
		return kt_fail(err, "KT_FARM '%s': '%s': expected a count from 1 to %d", text, word, MAX_COUNT);
	*out = (int)x;
	return 0;
}

static void add_arg(kt_farm_spec *s, char *arg)
{
	s->args = kt_xrealloc(s->args, (size_t)(s->nargs + 2) * sizeof *s->args);
	s->args[s->nargs++] = arg;
	s->args[s->nargs] = NULL;
}

static int unknown_setting(const char *text, const char *word, size_t n, kt_err *err)
{
	kt_buf keys = {0};
	for (size_t i = 0; i < NSETTINGS; i++)
		kt_buf_printf(&keys, "%s%s", i ? ", " : "", settings[i].key);
	kt_fail(err, "KT_FARM '%s': unknown setting '%.*s' (known: %s)", text, (int)n, word, keys.data);
	kt_buf_free(&keys);
	return -1;
}

/* One KEY=VALUE word of text; seen[] marks the keys already given; *gres is the GPU's request. */
static int take_word(const char *text, const char *word, kt_farm_spec *s, int *seen, char **gres, kt_err *err)
{
	const char *eq = strchr(word, '=');
	const setting *st = eq ? find_setting(word, (size_t)(eq - word)) : NULL;
	if (!eq)
		return kt_fail(err, "KT_FARM '%s': '%s' is not KEY=VALUE (or the whole value ON)", text, word);
	if (!st)
		return unknown_setting(text, word, (size_t)(eq - word), err);
	if (!eq[1])
		return kt_fail(err, "KT_FARM '%s': '%s' has no value", text, word);
	if (seen[st - settings]++)
		return kt_fail(err, "KT_FARM '%s': '%s' is given twice", text, st->key);
	kt_buf arg = {0};
	switch (st->kind) {
	case S_TASKS:
		return parse_count(text, word, eq + 1, &s->tasks, err);
	case S_PARALLEL:
		return parse_count(text, word, eq + 1, &s->parallel, err);
	case S_GPU:
		kt_buf_printf(&arg, "--gres=gpu:%s:1", eq + 1);
		free(*gres);
		*gres = kt_buf_detach(&arg);
		return 0;
	case S_SBATCH:
		kt_buf_printf(&arg, "%s=%s", st->sbatch, eq + 1);
		add_arg(s, kt_buf_detach(&arg));
		return 0;
	}
	return 0;
}

int kt_farm_spec_parse(const char *text, kt_farm_spec *out, kt_err *err)
{
	static const char *const on[] = {"1", "on", "yes", "true", "y"};
	memset(out, 0, sizeof *out);
	out->tasks = KT_FARM_TASKS;
	char *gres = kt_xstrdup("--gres=gpu:1"), *copy = kt_xstrdup(text ? text : "");
	int seen[NSETTINGS] = {0}, rc = 0, words = 0, is_on = 0;
	for (size_t i = 0; i < sizeof on / sizeof on[0]; i++)
		is_on |= !strcasecmp(copy, on[i]);
	char *save = NULL;
	for (char *w = strtok_r(copy, " \t\n", &save); rc == 0 && w && !is_on; w = strtok_r(NULL, " \t\n", &save), words++)
		rc = take_word(text, w, out, seen, &gres, err);
	if (rc == 0 && !words && !is_on)
		rc = kt_fail(err, "KT_FARM is empty: give ON or settings such as constraint=h100 (docs/farm.md)");
	add_arg(out, gres);
	free(copy);
	if (rc)
		kt_farm_spec_free(out);
	return rc;
}

void kt_farm_spec_free(kt_farm_spec *s)
{
	for (int i = 0; i < s->nargs; i++)
		free(s->args[i]);
	free(s->args);
	memset(s, 0, sizeof *s);
}

/* ---- the list --------------------------------------------------------------------------------- */

/* An absolute path for one the nodes must find: p resolved, else as given. */
static void add_path(cJSON *o, const char *name, const char *p)
{
	if (!p)
		return;
	char *real = realpath(p, NULL);
	cJSON_AddStringToObject(o, name, real ? real : p);
	free(real);
}

static void add_str(cJSON *o, const char *name, const char *s)
{
	if (s)
		cJSON_AddStringToObject(o, name, s);
}

static cJSON *miss_json(const kt_farm_miss *m)
{
	cJSON *o = cJSON_CreateObject();
	add_str(o, "name", m->name);
	add_path(o, "template", m->template_path);
	cJSON *types = cJSON_AddArrayToObject(o, "types");
	for (int i = 0; i < m->ntypes; i++)
		cJSON_AddItemToArray(types, cJSON_CreateString(m->types[i]));
	add_str(o, "arch", m->arch);
	/* a compiler named without a directory is searched in the node's PATH */
	if (m->nvcc && strchr(m->nvcc, '/'))
		add_path(o, "nvcc", m->nvcc);
	else
		add_str(o, "nvcc", m->nvcc);
	add_str(o, "flags", m->flags);
	add_path(o, "project_cache", m->project_cache);
	for (int s = 0; s < KT_NMEASURE; s++)
		add_str(o, kt_measure_infos[s].name, m->measure[s]);
	add_str(o, "shape", m->shape ? m->shape : "");
	add_str(o, "key", m->key);
	return o;
}

/* A miss's identity, the same whether its key was known or not: the hash of the problem (what
 * the miss says but its name and key) and where it is tuned for, as 16 hex digits.  Two misses of
 * one identity are one problem. */
static void miss_identity(const kt_farm_list *l, const kt_farm_miss *m, char id[17])
{
	cJSON *o = miss_json(m);
	cJSON_DeleteItemFromObjectCaseSensitive(o, "key");
	cJSON_DeleteItemFromObjectCaseSensitive(o, "name");
	add_str(o, "gpu", l->gpu ? l->gpu : "");
	add_str(o, "remote", l->remote);
	char *text = kt_json_text(o, 0), hex[KT_KEY_HEX];
	kt_key_of_fields(text, strlen(text), hex);
	snprintf(id, 17, "%.16s", hex);
	free(text);
	cJSON_Delete(o);
}

/* The misses worth a task: one per problem. */
static cJSON *misses_json(const kt_farm_list *l, size_t *n)
{
	cJSON *a = cJSON_CreateArray();
	char (*ids)[17] = kt_xcalloc(l->n + 1, sizeof *ids);
	*n = 0;
	for (size_t i = 0; i < l->n; i++) {
		int dup = 0;
		miss_identity(l, &l->misses[i], ids[i]);
		for (size_t j = 0; j < i && !dup; j++)
			dup = !strcmp(ids[j], ids[i]);
		if (!dup) {
			cJSON_AddItemToArray(a, miss_json(&l->misses[i]));
			(*n)++;
		}
	}
	free(ids);
	return a;
}

int kt_farm_list_write(const kt_farm_list *l, const kt_farm_spec *spec, const char *dir, char **path, kt_err *err)
{
	*path = NULL;
	size_t n;
	cJSON *misses = misses_json(l, &n), *doc = cJSON_CreateObject();
	size_t most = (size_t)(l->tasks > 0 ? l->tasks : spec->tasks);
	int tasks = (int)(most < n ? most : n);
	cJSON_AddNumberToObject(doc, "kt_farm", KT_FARM_FORMAT);
	add_str(doc, "gpu", l->gpu ? l->gpu : "");
	add_str(doc, "remote", l->remote);
	add_str(doc, "farm", l->farm ? l->farm : "ON");
	cJSON_AddNumberToObject(doc, "budget", (double)l->budget);
	cJSON_AddNumberToObject(doc, "seconds", l->seconds);
	add_str(doc, "strategy", l->strategy);
	cJSON_AddNumberToObject(doc, "tasks", tasks);
	cJSON_AddItemToObject(doc, "misses", misses);
	char *text = kt_json_text(doc, 1);
	cJSON_Delete(doc);
	char hex[KT_KEY_HEX], name[64];
	kt_key_of_fields(text, strlen(text), hex);
	snprintf(name, sizeof name, "misses-%.16s.json", hex);
	int rc = n ? kt_mkdirs(dir, err) : kt_fail(err, "no miss to farm");
	if (rc == 0) {
		*path = kt_path_join(dir, name);
		rc = kt_write_if_changed(*path, text, strlen(text), NULL, err);
	}
	free(text);
	return rc;
}

/* What a list that was read owns. */
typedef struct list_store {
	cJSON *doc;
	const char **types; /* every miss's types, one array */
} list_store;

/* Miss i of the list's array a into m (its types into *types). */
static int read_miss(const char *path, const cJSON *a, int i, kt_farm_miss *m, const char ***types, kt_err *err)
{
	const cJSON *o = cJSON_GetArrayItem(a, i), *ty = cJSON_GetObjectItemCaseSensitive(o, "types"), *t;
	m->name = kt_json_str(o, "name");
	m->template_path = kt_json_str(o, "template");
	m->shape = kt_json_str(o, "shape");
	if (!cJSON_IsObject(o) || !m->name || !m->template_path || !m->shape || (ty && !cJSON_IsArray(ty)))
		return kt_fail(err, "%s: miss %d: expected an object with name, template and shape", path, i);
	m->types = *types;
	cJSON_ArrayForEach(t, ty)
	{
		if (!cJSON_IsString(t))
			return kt_fail(err, "%s: miss %d (%s): a type is not a string", path, i, m->name);
		*(*types)++ = t->valuestring;
		m->ntypes++;
	}
	m->arch = kt_json_str(o, "arch");
	m->nvcc = kt_json_str(o, "nvcc");
	m->flags = kt_json_str(o, "flags");
	m->project_cache = kt_json_str(o, "project_cache");
	for (int s = 0; s < KT_NMEASURE; s++)
		m->measure[s] = kt_json_str(o, kt_measure_infos[s].name);
	m->key = kt_json_str(o, "key");
	return 0;
}

int kt_farm_list_read(const char *path, kt_farm_list *l, kt_err *err)
{
	memset(l, 0, sizeof *l);
	kt_buf text = {0};
	if (kt_read_file(path, &text, err) != 0) {
		kt_buf_free(&text);
		return kt_fail(err, "the list %s cannot be read: %s", path, err->msg);
	}
	cJSON *doc = cJSON_ParseWithLength(text.data, text.len);
	kt_buf_free(&text);
	const cJSON *a = cJSON_GetObjectItemCaseSensitive(doc, "misses");
	if (!doc || kt_json_num(doc, "kt_farm", 0) != KT_FARM_FORMAT || !cJSON_IsArray(a) || !cJSON_GetArraySize(a)) {
		cJSON_Delete(doc);
		return kt_fail(err, "%s: not a list of misses of kt farm (format %d)", path, KT_FARM_FORMAT);
	}
	size_t ntypes = 0;
	const cJSON *o;
	cJSON_ArrayForEach(o, a) ntypes += (size_t)cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(o, "types"));
	list_store *st = kt_xcalloc(1, sizeof *st);
	st->doc = doc;
	st->types = kt_xcalloc(ntypes + 1, sizeof *st->types);
	l->owned = st;
	l->n = (size_t)cJSON_GetArraySize(a);
	l->misses = kt_xcalloc(l->n, sizeof *l->misses);
	const char **types = st->types;
	for (size_t i = 0; i < l->n; i++)
		if (read_miss(path, a, (int)i, &l->misses[i], &types, err) != 0) {
			kt_farm_list_free(l);
			return -1;
		}
	l->gpu = kt_json_str(doc, "gpu");
	l->remote = kt_json_str(doc, "remote");
	l->farm = kt_json_str(doc, "farm");
	l->strategy = kt_json_str(doc, "strategy");
	l->budget = (long)kt_json_num(doc, "budget", 0);
	l->seconds = kt_json_num(doc, "seconds", 0);
	double tasks = kt_json_num(doc, "tasks", 0);
	l->tasks = (int)tasks;
	if (!l->remote || !l->remote[0] || tasks < 1 || tasks > (double)l->n || l->tasks != tasks) {
		kt_farm_list_free(l);
		return kt_fail(err, "%s: the remote cache or the number of tasks (1 to the misses) is missing or wrong", path);
	}
	return 0;
}

void kt_farm_list_free(kt_farm_list *l)
{
	list_store *st = l->owned;
	if (st) {
		cJSON_Delete(st->doc);
		free(st->types);
		free(st);
		free(l->misses);
	}
	memset(l, 0, sizeof *l);
}

/* ---- submitting ------------------------------------------------------------------------------- */

/* The list's path without ".json": what its script and logs are named after. */
static char *list_stem(const char *path)
{
	size_t n = strlen(path);
	if (n > 5 && !strcmp(path + n - 5, ".json"))
		n -= 5;
	char *s = kt_xmalloc(n + 1);
	memcpy(s, path, n);
	s[n] = 0;
	return s;
}

static char *stem_file(const char *path, const char *suffix)
{
	char *stem = list_stem(path);
	kt_buf b = {0};
	kt_buf_printf(&b, "%s%s", stem, suffix);
	free(stem);
	return kt_buf_detach(&b);
}

/* s in single quotes for sh ('\'' for a quote inside). */
static void sh_quote(kt_buf *b, const char *s)
{
	kt_buf_putc(b, '\'');
	for (; *s; s++)
		if (*s == '\'')
			kt_buf_puts(b, "'\\''");
		else
			kt_buf_putc(b, *s);
	kt_buf_putc(b, '\'');
}

/* The job script: every task runs kt farm run on the list with its array index. */
static int write_script(const char *script, const char *kt, const char *list, kt_err *err)
{
	kt_buf b = {0};
	kt_buf_puts(&b, "#!/bin/sh\n# kt farm: one array task tunes its share of the misses in the list (docs/farm.md).\n"
			"# Written by kt; submitted by kt farm submit or a configure with KT_FARM.\nexec ");
	sh_quote(&b, kt);
	kt_buf_puts(&b, " farm run ");
	sh_quote(&b, list);
	kt_buf_puts(&b, " --task \"$SLURM_ARRAY_TASK_ID\"\n");
	int rc = kt_write_if_changed(script, b.data, b.len, NULL, err);
	kt_buf_free(&b);
	return rc;
}

/* --array's value: 0-(n-1), or the tasks given, and %parallel. */
static void array_arg(const kt_farm_list *l, const int *tasks, size_t ntasks, int parallel, kt_buf *b)
{
	kt_buf_puts(b, "--array=");
	if (!tasks)
		kt_buf_printf(b, "0-%d", l->tasks - 1);
	for (size_t i = 0; tasks && i < ntasks; i++)
		kt_buf_printf(b, "%s%d", i ? "," : "", tasks[i]);
	if (parallel)
		kt_buf_printf(b, "%%%d", parallel);
}

/* The first lines of a command's error output, on one line, for a message. */
static void brief(const kt_buf *text, kt_buf *out)
{
	const char *s = kt_buf_str(text);
	for (int lines = 0; *s && lines < 4; lines++) {
		size_t n = strcspn(s, "\n");
		if (n)
			kt_buf_printf(out, "%s%.*s", out->len ? " / " : "", (int)n, s);
		s += n + (s[n] == '\n');
	}
	if (!out->len)
		kt_buf_puts(out, "no message");
}

/* Runs a Slurm command; -1 with err saying why it could not run. */
static int slurm_run(const kt_slurm *s, const char *const *argv, int *status, kt_buf *out, kt_buf *errout, kt_err *err)
{
	kt_err e = {0};
	if (s->run(s->ctx, argv, status, out, errout, &e) == 0)
		return 0;
	return kt_fail(err, "%s (is Slurm's client installed here and its controller up? docs/farm.md)", e.msg);
}

/* sbatch --parsable's answer: "123" or "123;cluster". */
static int parse_jobid(const kt_buf *out, char jobid[KT_FARM_JOBID], kt_err *err)
{
	const char *s = kt_buf_str(out);
	size_t n = strspn(s, "0123456789");
	if (!n || n >= KT_FARM_JOBID || (s[n] && s[n] != ';' && s[n] != '\n'))
		return kt_fail(err, "sbatch answered '%.*s' instead of a job id", (int)strcspn(s, "\n"), s);
	memcpy(jobid, s, n);
	jobid[n] = 0;
	return 0;
}

/* <dir>/jobs/<identity>: the job and task that farm a miss ("123 4"). */
static char *inflight_path(const char *dir, const kt_farm_list *l, const kt_farm_miss *m)
{
	char id[17];
	kt_buf b = {0};
	miss_identity(l, m, id);
	kt_buf_printf(&b, "%s/jobs/%s", dir, id);
	return kt_buf_detach(&b);
}

/* Notes that the misses of the given tasks are farmed by job jobid (best effort: a note that is
 * not written only costs a second submission of those misses). */
static void note_inflight(const char *dir, const kt_farm_list *l, const int *tasks, size_t ntasks, const char *jobid)
{
	char *jobs = kt_path_join(dir, "jobs");
	kt_mkdirs(jobs, NULL);
	for (size_t t = 0; t < (tasks ? ntasks : (size_t)l->tasks); t++) {
		int task = tasks ? tasks[t] : (int)t;
		for (size_t i = (size_t)task; task >= 0 && i < l->n; i += (size_t)l->tasks) {
			char *path = inflight_path(dir, l, &l->misses[i]);
			kt_buf line = {0};
			kt_buf_printf(&line, "%s %d\n", jobid, task);
			kt_write_atomic(path, line.data, line.len, NULL);
			kt_buf_free(&line);
			free(path);
		}
	}
	free(jobs);
}

int kt_farm_submit(const kt_farm_opts *o, const char *path, const kt_farm_list *l, const int *tasks, size_t ntasks,
		   char jobid[KT_FARM_JOBID], kt_err *err)
{
	kt_farm_spec spec;
	const char *text = o->spec && o->spec[0] ? o->spec : l->farm;
	char *abs = realpath(path, NULL); /* the job runs elsewhere: every path it gets is absolute */
	if (!abs)
		return kt_fail(err, "the list %s: %s", path, strerror(errno));
	if (kt_farm_spec_parse(text, &spec, err) != 0) {
		free(abs);
		return -1;
	}
	path = abs;
	char *script = stem_file(path, ".sh"), *stem = list_stem(path), *dir = kt_path_dir(path);
	kt_buf arr = {0}, outarg = {0}, dirarg = {0}, out = {0}, errout = {0}, why = {0};
	array_arg(l, tasks, ntasks, spec.parallel, &arr);
	kt_buf_printf(&outarg, "--output=%s-%%A_%%a.log", stem);
	kt_buf_printf(&dirarg, "--chdir=%s", dir);
	const char **argv = kt_xcalloc((size_t)spec.nargs + 8, sizeof *argv);
	int argc = 0, status = 0;
	argv[argc++] = "sbatch";
	argv[argc++] = "--parsable";
	argv[argc++] = "--job-name=kt-farm";
	argv[argc++] = arr.data;
	for (int i = 0; i < spec.nargs; i++)
		argv[argc++] = spec.args[i];
	argv[argc++] = outarg.data;
	argv[argc++] = dirarg.data;
	argv[argc++] = script;
	int rc = write_script(script, o->kt, path, err);
	if (rc == 0)
		rc = slurm_run(o->slurm, argv, &status, &out, &errout, err);
	if (rc == 0 && status != 0) {
		brief(&errout, &why);
		rc = kt_fail(err, "sbatch failed (exit status %d): %s", status, why.data);
	}
	if (rc == 0)
		rc = parse_jobid(&out, jobid, err);
	if (rc == 0)
		note_inflight(dir, l, tasks, ntasks, jobid);
	free(argv);
	kt_buf_free(&arr);
	kt_buf_free(&outarg);
	kt_buf_free(&dirarg);
	kt_buf_free(&out);
	kt_buf_free(&errout);
	kt_buf_free(&why);
	free(script);
	free(stem);
	free(dir);
	free(abs);
	kt_farm_spec_free(&spec);
	return rc;
}

/* The jobs asked about during one configure: each once. */
typedef struct asked {
	char id[KT_FARM_JOBID];
	int known;      /* Slurm told */
	int busy;       /* a miss of this configure is in flight in it */
	kt_farm_job job;
} asked;

/* Whether the task that farms miss m (jobs/) is pending or running: then its job is busy (1). */
static int inflight(const kt_farm_opts *o, const kt_farm_list *l, const kt_farm_miss *m, asked **jobs, size_t *njobs)
{
	char *path = inflight_path(o->dir, l, m), jobid[KT_FARM_JOBID];
	kt_buf text = {0};
	int task = -1, rc = 0;
	if (kt_read_file(path, &text, NULL) == 0 && sscanf(text.data, "%31[0-9] %d", jobid, &task) == 2) {
		size_t j = 0;
		while (j < *njobs && strcmp((*jobs)[j].id, jobid))
			j++;
		if (j == *njobs) {
			kt_err e = {0};
			*jobs = kt_xrealloc(*jobs, (*njobs + 1) * sizeof **jobs);
			asked *a = &(*jobs)[(*njobs)++];
			memset(a, 0, sizeof *a);
			snprintf(a->id, sizeof a->id, "%s", jobid);
			a->known = kt_farm_status(o->slurm, jobid, &a->job, &e) == 0;
		}
		for (size_t t = 0; (*jobs)[j].known && t < (*jobs)[j].job.n; t++) {
			const kt_farm_task *ft = &(*jobs)[j].job.tasks[t];
			rc |= ft->id == task && (ft->state == KT_FARM_PENDING || ft->state == KT_FARM_RUNNING);
		}
		(*jobs)[j].busy |= rc;
	}
	kt_buf_free(&text);
	free(path);
	return rc;
}

/* Submits the misses of l that are not in flight; says what happened in msg. */
static int farm_rest(const kt_farm_opts *o, const kt_farm_list *l, const kt_farm_spec *spec, kt_buf *msg, kt_err *err)
{
	kt_farm_miss *pick = kt_xcalloc(l->n + 1, sizeof *pick);
	asked *jobs = NULL;
	size_t njobs = 0, n = 0, busy = 0;
	kt_buf busy_jobs = {0};
	char jobid[KT_FARM_JOBID];
	for (size_t i = 0; i < l->n; i++)
		if (inflight(o, l, &l->misses[i], &jobs, &njobs))
			busy++;
		else
			pick[n++] = l->misses[i];
	for (size_t j = 0; j < njobs; j++)
		if (jobs[j].busy)
			kt_buf_printf(&busy_jobs, "%s%s", busy_jobs.len ? ", " : "", jobs[j].id);
	kt_farm_list sub = *l, written = {0};
	sub.misses = pick;
	sub.n = n;
	char *path = NULL;
	int rc = 0;
	if (n && (rc = kt_farm_list_write(&sub, spec, o->dir, &path, err)) == 0 &&
	    (rc = kt_farm_list_read(path, &written, err)) == 0 && (rc = kt_farm_submit(o, path, &written, NULL, 0, jobid, err)) == 0)
		kt_buf_printf(msg, "farmed %zu miss%s out to Slurm as job %s (%d array task%s; the list: %s): `kt farm status %s` "
				   "follows it; the next configure finds the records in the remote cache",
			      written.n, written.n == 1 ? "" : "es", jobid, written.tasks, written.tasks == 1 ? "" : "s", path,
			      jobid);
	if (rc == 0 && busy)
		kt_buf_printf(msg, "%s%zu miss%s %s being farmed already, by job %s (kt farm status)", msg->len ? "; " : "", busy,
			      busy == 1 ? "" : "es", busy == 1 ? "is" : "are", busy_jobs.data);
	for (size_t j = 0; j < njobs; j++)
		kt_farm_job_free(&jobs[j].job);
	free(jobs);
	kt_farm_list_free(&written);
	kt_buf_free(&busy_jobs);
	free(path);
	free(pick);
	return rc;
}

int kt_farm_misses(const kt_farm_opts *o, const kt_farm_list *l, kt_buf *msg, kt_err *err)
{
	if (!l->remote || !l->remote[0])
		return kt_fail(err, "KT_FARM needs a remote cache that the nodes can reach (KT_REMOTE_CACHE): the farm's "
				    "records come back through it");
	kt_farm_spec spec;
	if (kt_farm_spec_parse(o->spec, &spec, err) != 0)
		return -1;
	int rc = farm_rest(o, l, &spec, msg, err);
	kt_farm_spec_free(&spec);
	return rc;
}

/* ---- following a job -------------------------------------------------------------------------- */

typedef struct state_word {
	const char *word;
	kt_farm_state state;
} state_word;

/* Slurm's job states (squeue's %T, sacct's State); any other is a failure. */
static const state_word state_words[] = {
	{"COMPLETED", KT_FARM_DONE},      {"COMPLETING", KT_FARM_RUNNING}, {"CONFIGURING", KT_FARM_PENDING},
	{"PENDING", KT_FARM_PENDING},     {"REQUEUED", KT_FARM_PENDING},   {"REQUEUE_FED", KT_FARM_PENDING},
	{"REQUEUE_HOLD", KT_FARM_PENDING}, {"RESIZING", KT_FARM_RUNNING},   {"RESV_DEL_HOLD", KT_FARM_PENDING},
	{"RUNNING", KT_FARM_RUNNING},     {"SIGNALING", KT_FARM_RUNNING},  {"STAGE_OUT", KT_FARM_RUNNING},
	{"STOPPED", KT_FARM_RUNNING},     {"SUSPENDED", KT_FARM_PENDING},
};

static kt_farm_state state_of(const char *word)
{
	for (size_t i = 0; i < sizeof state_words / sizeof state_words[0]; i++)
		if (!strcmp(state_words[i].word, word))
			return state_words[i].state;
	return KT_FARM_FAILED;
}

/* Sets (or adds) task id of job j. */
static void set_task(kt_farm_job *j, int id, const char *slurm, size_t slen, const char *why, size_t wlen)
{
	size_t i = 0;
	while (i < j->n && j->tasks[i].id != id)
		i++;
	if (i == j->n) {
		j->tasks = kt_xrealloc(j->tasks, (j->n + 1) * sizeof *j->tasks);
		j->n++;
	}
	kt_farm_task *t = &j->tasks[i];
	memset(t, 0, sizeof *t);
	t->id = id;
	snprintf(t->slurm, sizeof t->slurm, "%.*s", (int)slen, slurm);
	snprintf(t->why, sizeof t->why, "%.*s", (int)wlen, why);
	t->state = state_of(t->slurm);
}

/* Adds the tasks of one part of an array expression: "4", "0-3" or "1-7:2".  -1 when malformed. */
static int task_range(const char *part, int **ids, size_t *nids)
{
	long a, b, step = 1;
	char tail;
	size_t len = strlen(part);
	int got = sscanf(part, "%ld-%ld:%ld%c", &a, &b, &step, &tail);
	if (got == 1 && strspn(part, "0123456789") == len)
		b = a;
	else if (!(got == 2 && strspn(part, "0123456789-") == len) && got != 3)
		return -1;
	if (a < 0 || b < a || step < 1 || b > MAX_COUNT)
		return -1;
	for (long x = a; x <= b; x += step) {
		*ids = kt_xrealloc(*ids, (*nids + 1) * sizeof **ids);
		(*ids)[(*nids)++] = (int)x;
	}
	return 0;
}

/* The tasks of an id field after "<job>_": "4", or "[0-3,5,7-11:2%2]" (a pending array, with its
 * limit of tasks at once after '%').  -1 when malformed. */
static int task_ids(const char *s, size_t n, int **ids, size_t *nids)
{
	char expr[256];
	*nids = 0;
	if (n >= 2 && s[0] == '[' && s[n - 1] == ']')
		s++, n -= 2;
	if (!n || n >= sizeof expr)
		return -1;
	memcpy(expr, s, n);
	expr[n] = 0;
	expr[strcspn(expr, "%")] = 0;
	char *save = NULL;
	for (char *part = strtok_r(expr, ",", &save); part; part = strtok_r(NULL, ",", &save))
		if (task_range(part, ids, nids) != 0)
			return -1;
	return *nids ? 0 : -1;
}

/* Splits a '|'-separated line into at most max fields (the last takes the rest). */
static int split(const char *line, size_t len, const char **f, size_t *fl, int max)
{
	int n = 0;
	for (size_t at = 0; n < max;) {
		const char *bar = n < max - 1 ? memchr(line + at, '|', len - at) : NULL;
		size_t e = bar ? (size_t)(bar - line) : len;
		f[n] = line + at;
		fl[n++] = e - at;
		if (!bar)
			break;
		at = e + 1;
	}
	return n;
}

/* One line of squeue (%i|%T|%r|%o) or sacct (JobID|State|ExitCode) about job id. */
static void take_line(kt_farm_job *j, const char *id, const char *line, size_t len, int from_squeue)
{
	const char *f[4];
	size_t fl[4], idl = strlen(id);
	int nf = split(line, len, f, fl, from_squeue ? 4 : 3);
	if (nf < 3 || fl[0] <= idl + 1 || strncmp(f[0], id, idl) || f[0][idl] != '_')
		return;
	int *ids = NULL;
	size_t nids;
	size_t wordlen = strcspn(f[1], " |"); /* sacct: "CANCELLED by 0" */
	wordlen = wordlen > fl[1] ? fl[1] : wordlen;
	kt_buf why = {0};
	if (from_squeue && !(fl[2] == 4 && !strncmp(f[2], "None", 4)))
		kt_buf_add(&why, f[2], fl[2]);
	else if (!from_squeue && !(fl[2] == 3 && !strncmp(f[2], "0:0", 3)))
		kt_buf_printf(&why, "exit code %.*s", (int)fl[2], f[2]);
	if (task_ids(f[0] + idl + 1, fl[0] - idl - 1, &ids, &nids) == 0)
		for (size_t i = 0; i < nids; i++)
			set_task(j, ids[i], f[1], wordlen, kt_buf_str(&why), why.len);
	if (from_squeue && nf == 4 && !j->list && fl[3] > 3 && !strncmp(f[3] + fl[3] - 3, ".sh", 3)) {
		kt_buf list = {0};
		struct stat st;
		kt_buf_printf(&list, "%.*s.json", (int)fl[3] - 3, f[3]);
		if (stat(list.data, &st) == 0)
			j->list = kt_buf_detach(&list);
		kt_buf_free(&list);
	}
	kt_buf_free(&why);
	free(ids);
}

static int by_id(const void *a, const void *b)
{
	const kt_farm_task *x = a, *y = b;
	return (x->id > y->id) - (x->id < y->id);
}

/* Asks one command; 1 when it knew the job, 0 when not (why in why), -1 when it could not run. */
static int ask(const kt_slurm *s, const char *const *argv, const char *id, int from_squeue, kt_farm_job *j, kt_buf *why,
	       kt_err *err)
{
	kt_buf out = {0}, errout = {0};
	int status = 0, rc = slurm_run(s, argv, &status, &out, &errout, err);
	for (const char *line = kt_buf_str(&out); rc == 0 && *line;) {
		size_t n = strcspn(line, "\n");
		take_line(j, id, line, n, from_squeue);
		line += n + (line[n] == '\n');
	}
	if (rc == 0 && !j->n) {
		kt_buf said = {0};
		brief(status ? &errout : &out, &said);
		int named = !strncmp(said.data, argv[0], strlen(argv[0])) && said.data[strlen(argv[0])] == ':';
		kt_buf_printf(why, "%s%s%s%s", named ? "" : argv[0], named ? "" : ": ", said.data,
			      !status && !out.len ? " (it lists no task of the job)" : "");
		kt_buf_free(&said);
	}
	kt_buf_free(&out);
	kt_buf_free(&errout);
	return rc < 0 ? -1 : j->n > 0;
}

int kt_farm_status(const kt_slurm *s, const char *jobid, kt_farm_job *out, kt_err *err)
{
	memset(out, 0, sizeof *out);
	size_t n = strlen(jobid);
	if (!n || n >= KT_FARM_JOBID || strspn(jobid, "0123456789") != n)
		return kt_fail(err, "job id '%s': expected the number that sbatch printed", jobid);
	kt_buf jobs = {0}, why = {0};
	kt_buf_printf(&jobs, "--jobs=%s", jobid);
	const char *squeue[] = {"squeue", "--noheader", "--array", "--states=all", jobs.data, "--format=%i|%T|%r|%o", NULL};
	const char *sacct[] = {"sacct", "--noheader", "--parsable2", "--allocations", jobs.data,
			       "--format=JobID,State,ExitCode", NULL};
	kt_err e = {0};
	int rc = ask(s, squeue, jobid, 1, out, &why, &e);
	out->source = "squeue";
	if (rc <= 0) {
		if (rc < 0)
			kt_buf_printf(&why, "%s", e.msg);
		kt_buf_puts(&why, "; ");
		rc = ask(s, sacct, jobid, 0, out, &why, &e);
		out->source = "sacct";
		if (rc < 0)
			kt_buf_printf(&why, "%s", e.msg);
	}
	if (rc <= 0)
		kt_fail(err, "Slurm cannot tell about job %s: %s", jobid, why.data);
	if (out->n)
		qsort(out->tasks, out->n, sizeof *out->tasks, by_id);
	for (size_t i = 0; i < out->n; i++)
		out->count[out->tasks[i].state]++;
	kt_buf_free(&jobs);
	kt_buf_free(&why);
	if (rc <= 0)
		kt_farm_job_free(out);
	return rc > 0 ? 0 : -1;
}

void kt_farm_job_free(kt_farm_job *j)
{
	free(j->tasks);
	free(j->list);
	memset(j, 0, sizeof *j);
}

void kt_farm_job_summary(const kt_farm_job *j, kt_buf *out)
{
	kt_buf_printf(out, "%zu task%s", j->n, j->n == 1 ? "" : "s");
	for (int s = 0, first = 1; s < KT_FARM_NSTATES; s++)
		if (j->count[s]) {
			kt_buf_printf(out, "%s%d %s", first ? ": " : ", ", j->count[s], kt_farm_state_names[s]);
			first = 0;
		}
}

char *kt_farm_self(kt_err *err)
{
	char *p = realpath("/proc/self/exe", NULL);
	if (!p)
		kt_fail_internal(err, "cannot find the kt tool's own path (/proc/self/exe): %s", strerror(errno));
	return p;
}
