/* tune.c - the tuning loop over a batch of problems (see tune.h).
 *
 * The pipeline: candidates (a problem's configuration) wait for their unit (a variant, compiled
 * once per template and toolchain, whatever the shape) and are measured once it is compiled.
 * While the workers measure what is ready, ninja compiles the next batch of units, asked from
 * every problem that is still searching; a compile batch starts as soon as the previous one is
 * finished, so nvcc never waits for a measurement and the GPU waits for nvcc only when nothing
 * else is ready.  A search is told its results after it was asked for more (one batch of
 * hindsight), which buys the overlap.
 */
#define _XOPEN_SOURCE 700 /* realpath */
#include "tune_int.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "compile.h"
#include "decide.h"
#include "proc.h"
#include "search.h"
#include "space.h"
#include "worker.h"

/* ---- GPUs ------------------------------------------------------------------------------------- */

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

int kt_tune_gpus_alike(const char *backend)
{
	kt_tune_opts o = {.backend = backend, .gpu = -1};
	kt_gpu_info info;
	int *gpus = NULL, n = 0;
	kt_err e = {0};
	if (pick_gpus(&o, &info, &gpus, &n, &e))
		n = 0;
	free(gpus);
	return n;
}

/* ---- the work directory ------------------------------------------------------------------------ */

static int make_workdir(tuner *tu, kt_err *err)
{
	if (tu->o->workdir) {
		tu->workdir = kt_xstrdup(tu->o->workdir);
		return kt_mkdirs(tu->workdir, err);
	}
	kt_sweep_temp_dirs(tu->o->tmpdir, "kt-tune"); /* the work directories of runs that were killed */
	tu->workdir = kt_temp_dir(tu->o->tmpdir, "kt-tune", err);
	tu->own_workdir = tu->workdir != NULL;
	return tu->workdir ? 0 : -1;
}

/* ---- candidates ------------------------------------------------------------------------------------ */

void tu_id_add(idlist *l, long id)
{
	if (l->n == l->cap) {
		l->cap = l->cap ? 2 * l->cap : 64;
		l->v = kt_xrealloc(l->v, l->cap * sizeof *l->v);
	}
	l->v[l->n++] = id;
}

void tu_list_add(candlist *l, const cand *c)
{
	if (l->n == l->cap) {
		l->cap = l->cap ? 2 * l->cap : 64;
		l->v = kt_xrealloc(l->v, l->cap * sizeof *l->v);
	}
	l->v[l->n++] = *c;
}

void tu_cand_free(cand *c)
{
	free(c->config);
	c->config = NULL;
}

static void list_free(candlist *l)
{
	for (size_t i = 0; i < l->n; i++)
		tu_cand_free(&l->v[i]);
	free(l->v);
	*l = (candlist){0};
}

/* ---- results ------------------------------------------------------------------------------------- */

int tu_is_active(const task *ta) { return ta->state == T_ASKING || ta->state == T_DRAINING; }
/* Set up, or waiting for its reference to compile: it will be active. */
static int is_coming(const task *ta) { return ta->state == T_SETUP || ta->state == T_STARTING; }

/* Tells the search the result of space index idx (when it asked for it) and follows the best
 * and the convergence count. */
void tu_tell(task *ta, size_t idx)
{
	const kt_eval *e = &ta->r->evals[ta->ev_of[idx]];
	int ok = e->status == KT_OK;
	ta->fail_streak = ok ? 0 : ta->fail_streak + 1;
	if (ok && !e->raced && (ta->best_us <= 0 || e->median_us < ta->best_us)) {
		ta->best_us = e->median_us;
		ta->best_spread = e->spread_us;
		/* The spread is of single launches (half the 10-90% range); a median of the many
		 * launches of a timing varies far less: half the spread still covers the drift from
		 * one timing to the next, where the whole of it stopped searches that were still
		 * gaining 1-3% a step. */
		kt_search_set_noise(ta->search, e->spread_us / e->median_us / 2);
	}
	if (ta->asked[idx]) /* a raced estimate is told as it is: it never beats the best */
		kt_search_tell(ta->search, idx, ok ? e->median_us : -1.0);
}

/* An eval's status, message, and what its variant uses and was compiled by (not its times). */
static void set_result(const tuner *tu, kt_eval *e, kt_status st, const char *msg, const kt_unit *u)
{
	e->status = st;
	e->msg = msg ? kt_xstrdup(msg) : NULL;
	e->regs = u ? u->regs : -1;
	e->smem_static = u ? u->smem_static : -1;
	e->local_bytes = u ? u->local_bytes : -1;
	e->stand_in = u && kt_unit_stands_in(&tu->batchcc, u);
}

/* Records space index idx of task ta as evaluated: status, times, resources. */
static kt_eval *add_eval(tuner *tu, task *ta, size_t idx, kt_status st, const char *msg, const kt_unit *u)
{
	kt_tune_result *r = ta->r;
	r->evals = kt_xrealloc(r->evals, (r->nevals + 1) * sizeof *r->evals);
	kt_eval *e = &r->evals[r->nevals];
	memset(e, 0, sizeof *e);
	e->cfg = kt_xmalloc((size_t)ta->t->nparams * sizeof *e->cfg + 1);
	memcpy(e->cfg, kt_space_cfg(ta->space, idx), (size_t)ta->t->nparams * sizeof *e->cfg);
	set_result(tu, e, st, msg, u);
	tu->st.stand_in += e->stand_in;
	ta->ev_of[idx] = (long)r->nevals++;
	ta->counts[st]++;
	tu->counts[st]++;
	tu->evaluated++;
	kt_progress *p = tu->o->progress;
	/* A hang or a fault names its configuration; the first one held back for a hang says why. */
	int named = st == KT_TIMED_OUT || st == KT_FAULTED, held = st == KT_NOT_RUN && ta->counts[st] == 1;
	if ((named || held) && p && p->f) {
		kt_buf sh = {0}, cf = {0};
		kt_tmpl_format_shape(ta->t, ta->shape, &sh);
		kt_progress_clear(p);
		if (held) {
			fprintf(p->f, "kt: %s %s: held back from now on, not run: %s\n", ta->t->kernel, kt_buf_str(&sh), msg);
		} else {
			kt_tmpl_format_config(ta->t, e->cfg, &cf);
			fprintf(p->f, "kt: %s %s: %s: %s: %s\n", ta->t->kernel, kt_buf_str(&sh), kt_buf_str(&cf),
				kt_status_causes[st], msg ? msg : "");
		}
		kt_buf_free(&sh);
		kt_buf_free(&cf);
	}
	return e;
}

/* A configuration measured again from nvcc's unit (cand.confirm): its eval takes the result in
 * place of what NVRTC's stand-in gave. */
static kt_eval *redo_eval(tuner *tu, task *ta, size_t idx, kt_status st, const char *msg, const kt_unit *u)
{
	kt_eval *e = &ta->r->evals[ta->ev_of[idx]];
	ta->counts[e->status]--, tu->counts[e->status]--;
	ta->counts[st]++, tu->counts[st]++;
	free(e->msg);
	e->median_us = e->spread_us = 0;
	e->raced = 0;
	set_result(tu, e, st, msg, u); /* nvcc's variant: no longer a stand-in */
	tu->st.confirmed++;
	return e;
}

/* Records candidate c's result: a new eval, or the confirmed one of a stand-in. */
kt_eval *tu_put_eval(tuner *tu, const cand *c, kt_status st, const char *msg, const kt_unit *u)
{
	task *ta = &tu->tasks[c->task];
	return c->confirm ? redo_eval(tu, ta, c->idx, st, msg, u) : add_eval(tu, ta, c->idx, st, msg, u);
}

/* Records a candidate that will not be measured (compile failure, over the limits) and tells. */
static void record_failed(tuner *tu, cand *c, kt_status st, const char *msg, const kt_unit *u)
{
	task *ta = &tu->tasks[c->task];
	tu_put_eval(tu, c, st, msg, u);
	ta->inflight--;
	if (!c->confirm)
		tu_tell(ta, c->idx);
}

/* ---- progress ----------------------------------------------------------------------------------- */

static void progress(tuner *tu)
{
	kt_progress *p = tu->o->progress;
	if (!p)
		return;
	size_t done = 0, planned = 0;
	for (size_t k = 0; k < tu->ntasks; k++) {
		const task *ta = &tu->tasks[k];
		done += ta->state == T_DONE || ta->state == T_FAILED;
		size_t count = ta->space ? ta->space->count : 0;
		planned += count && tu->o->budget > 0 && (size_t)tu->o->budget < count ? (size_t)tu->o->budget : count;
	}
	double best = 0, floor = 0;
	if (tu->ntasks == 1) {
		best = tu->tasks[0].best_us;
		floor = tu->tasks[0].r->floor_us;
	}
	kt_progress_update(p, tu->evaluated, planned, tu->counts, best, floor, tu->ntasks, done);
}

/* ---- stopping -------------------------------------------------------------------------------------- */

/* Why task ta should ask for nothing more, or NULL while it should go on (its search ending
 * on its own is noticed when it answers nothing). */
const char *tu_stop_reason(const tuner *tu, const task *ta, char *buf, size_t bufsz)
{
	const kt_tune_opts *o = tu->o;
	if (o->seconds > 0 && ta->charged >= o->seconds)
		return snprintf(buf, bufsz, "time: its share of %.0f s is spent", o->seconds), buf;
	double near = o->near_floor == 0 ? DEFAULT_NEAR_FLOOR : o->near_floor, floor = ta->r->floor_us;
	/* A best time well under the floor means the floor is wrong (tensor-core flops declared as
	 * fma, or a wgmma kernel that beats the mma.sync probe's rate), so it says nothing about how
	 * close the search is: go on. */
	int all = !strcmp(kt_search_name(ta->search), "exhaustive"); /* every configuration, as its name says */
	if (!all && near > 0 && floor > 0 && ta->best_us > 0 && ta->best_us <= floor * (1 + near) &&
	    ta->best_us >= floor * (1 - near))
		return snprintf(buf, bufsz, "near the floor: %.1f%% of it", 100.0 * floor / ta->best_us), buf;
	if (ta->tt->give_up > 0 && ta->fail_streak >= ta->tt->give_up)
		return snprintf(buf, bufsz, "gave up: the last %d evaluations all failed", ta->fail_streak), buf;
	int patience = o->patience == 0 ? kt_tune_patience(ta->t) : o->patience;
	if (kt_search_converged(ta->search, patience))
		return snprintf(buf, bufsz, "converged: no gain beyond the noise (%.1f%%) in the last %zu evaluations",
				100.0 * kt_search_noise(ta->search), kt_search_since_gain(ta->search)), buf;
	return NULL;
}

int kt_tune_patience(const kt_tmpl *t)
{
	int n = KT_TUNE_PATIENCE_PER_PARAM * t->nparams;
	return n > KT_TUNE_PATIENCE ? n : KT_TUNE_PATIENCE;
}

void kt_tune_stats_gpus(const kt_tune_stats *st, kt_buf *out)
{
	for (int i = 0; i < st->ngpus && i < KT_TUNE_MAX_GPUS; i++)
		kt_buf_printf(out, "%s %d (%zu jobs)", i ? "," : "", st->gpu[i], st->gpu_jobs[i]);
}

/* Charges the wall time since the last charge to the active tasks, in equal shares. */
static void charge(tuner *tu)
{
	double now = kt_now(), dt = now - tu->last_charge;
	size_t active = 0;
	tu->last_charge = now;
	for (size_t k = 0; k < tu->ntasks; k++)
		active += tu_is_active(&tu->tasks[k]);
	for (size_t k = 0; active && k < tu->ntasks; k++)
		if (tu_is_active(&tu->tasks[k]))
			tu->tasks[k].charged += dt / (double)active;
}

/* ---- asking ----------------------------------------------------------------------------------------- */

/* Launch geometry; a configuration whose launch cannot be computed or exceeds the device's
 * launch limits is recorded as over the limits without compiling.  1 when it goes on. */
static int admit(tuner *tu, cand *c)
{
	task *ta = &tu->tasks[c->task];
	kt_val env[KT_MAX_SLOTS];
	kt_err e = {0};
	char why[512];
	kt_tmpl_env(ta->t, ta->shape, kt_space_cfg(ta->space, c->idx), env);
	if (!c->confirm && kt_hangs_hold(ta->hangs, kt_space_cfg(ta->space, c->idx), why, sizeof why)) {
		record_failed(tu, c, KT_NOT_RUN, why, NULL);
	} else if (kt_tmpl_launch(ta->t, env, &c->l, &e)) {
		record_failed(tu, c, KT_OVER_LIMITS, e.msg, NULL);
	} else if (kt_target_fits(&tu->target, &c->l, NULL, why, sizeof why)) {
		record_failed(tu, c, KT_OVER_LIMITS, why, NULL);
	} else {
		return 1;
	}
	return 0;
}

/* After its unit compiled: a compile failure or a resource overrun is recorded; else 1 (to be
 * measured). */
int tu_sort_out(tuner *tu, cand *c)
{
	const kt_unit *u = &tu->units[c->unit].u;
	char why[256];
	if (!u->ok) {
		record_failed(tu, c, KT_COMPILE_FAILED, u->msg, u);
		return 0;
	}
	if (kt_target_fits(&tu->target, &c->l, &(kt_usage){u->regs, u->smem_static}, why, sizeof why)) {
		record_failed(tu, c, KT_OVER_LIMITS, why, u);
		return 0;
	}
	return 1;
}

/* Makes configuration idx of task k a candidate of its unit of kind UNIT_PLAIN or UNIT_NVCC:
 * waiting for the unit, or ready when it is compiled already (for another shape, or earlier). */
static void enqueue(tuner *tu, int k, size_t idx, int kind, idlist *fresh)
{
	task *ta = &tu->tasks[k];
	cand c = {.task = k, .idx = idx, .seq = tu->seq++, .confirm = kind == UNIT_NVCC};
	if (!c.confirm)
		ta->ev_of[idx] = PENDING;
	ta->inflight++;
	if (!admit(tu, &c))
		return;
	kt_buf cfg = {0};
	kt_tmpl_format_config(ta->t, kt_space_cfg(ta->space, idx), &cfg);
	c.config = kt_buf_detach(&cfg);
	c.unit = tu_unit_make(tu, k, kt_space_cfg(ta->space, idx), kind);
	unitrec *ur = &tu->units[c.unit];
	if (ur->state == U_NEW) {
		ur->state = U_COMPILING;
		ur->task = k;
		tu_id_add(fresh, c.unit);
	} else if (ur->task != k) {
		tu->st.reused++;
	} else if (!c.confirm) {
		tu->st.relaunched++;
	}
	if (ur->state == U_DONE) {
		if (tu_sort_out(tu, &c))
			tu_list_add(&tu->ready, &c);
		else
			tu_cand_free(&c);
	} else {
		tu_list_add(&tu->waiting, &c);
	}
}

void tu_enqueue(tuner *tu, int k, size_t idx, idlist *fresh) { enqueue(tu, k, idx, UNIT_PLAIN, fresh); }

/* Configuration idx of task k, measured from a variant NVRTC compiled standing in for nvcc,
 * measured again from nvcc's variant. */
void tu_enqueue_confirm(tuner *tu, int k, size_t idx, idlist *fresh) { enqueue(tu, k, idx, UNIT_NVCC, fresh); }

/* Asks task k's search for up to max configurations; those already evaluated (the default, a
 * known one) are told again at once. */
size_t tu_ask_task(tuner *tu, int k, size_t max, idlist *fresh)
{
	task *ta = &tu->tasks[k];
	size_t *idx = kt_xcalloc(max + 1, sizeof *idx);
	size_t n = kt_search_ask(ta->search, idx, max);
	for (size_t i = 0; i < n; i++) {
		ta->asked[idx[i]] = 1;
		if (ta->ev_of[idx[i]] >= 0)
			tu_tell(ta, idx[i]);
		else if (ta->ev_of[idx[i]] == -1)
			tu_enqueue(tu, k, idx[i], fresh);
	}
	free(idx);
	if (n == 0 && ta->state == T_ASKING) {
		snprintf(ta->r->stop, sizeof ta->r->stop, "%s",
			 tu->o->budget > 0 && (long)kt_search_asked(ta->search) >= tu->o->budget ? "the budget is spent"
												   : "the space is exhausted");
		ta->state = T_DRAINING;
		tu->ended_in_ask = 1;
	}
	return n;
}

int tu_batch_size(const tuner *tu)
{
	if (tu->o->batch > 0)
		return tu->o->batch;
	/* A pack of 16 variants per nvcc job: nvcc's fixed cost (the CUDA headers, about 0.5 s) is
	 * then a third of the job's, where one variant alone is 90% of it; see bench/RESULTS.md. */
	int n = 16 * kt_compile_jobs(&tu->batchcc);
	return n < MIN_BATCH ? MIN_BATCH : n > MAX_BATCH ? MAX_BATCH : n;
}

/* Asks the searching tasks, in turn, for a batch's worth of configurations (each at least a
 * few); new units go to fresh. */
static void ask_all(tuner *tu, idlist *fresh)
{
	size_t active = 0;
	for (size_t k = 0; k < tu->ntasks; k++)
		active += tu->tasks[k].state == T_ASKING;
	if (!active)
		return;
	size_t total = (size_t)tu_batch_size(tu), each = (total + active - 1) / active;
	/* A search steered by results asks a quarter as much (kt_search_steered); many shapes
	 * fill a batch between them anyway. */
	size_t steered = (total / 4 + active - 1) / active;
	each = each < MIN_ASK ? MIN_ASK : each;
	steered = steered < MIN_ASK ? MIN_ASK : steered;
	double t0 = kt_now();
	size_t n = 0;
	for (size_t k = 0; k < tu->ntasks; k++)
		if (tu->tasks[k].state == T_ASKING)
			n += tu_ask_task(tu, (int)k, kt_search_steered(tu->tasks[k].search) ? steered : each, fresh);
	if (tu->o->trace) {
		char args[64];
		snprintf(args, sizeof args, "\"configurations\":%zu,\"units\":%zu", n, fresh->n);
		kt_trace_span(tu->o->trace, LANE_LOOP, "ask", t0, kt_now(), args);
	}
}

/* A task is still to be set up. */
static int any_setup(const tuner *tu)
{
	for (size_t k = 0; k < tu->ntasks; k++)
		if (tu->tasks[k].state == T_SETUP)
			return 1;
	return 0;
}

/* ---- the loop ------------------------------------------------------------------------------------- */

/* Drops the candidates of tasks that failed (their results no longer matter). */
static void drop_failed(tuner *tu, candlist *l)
{
	size_t keep = 0;
	for (size_t i = 0; i < l->n; i++)
		if (tu->tasks[l->v[i].task].state == T_FAILED)
			tu_cand_free(&l->v[i]);
		else
			l->v[keep++] = l->v[i];
	l->n = keep;
}

/* A task is searching, or will be (a round that was added, or one that is starting). */
static int any_active(const tuner *tu)
{
	for (size_t k = 0; k < tu->ntasks; k++)
		if (tu_is_active(&tu->tasks[k]) || is_coming(&tu->tasks[k]))
			return 1;
	return tu->npending > 0;
}

/* Adds task tt to the batch: its space, search and result (T_SETUP); one that cannot be tuned is
 * failed with its reason, the others go on.  Moves tu->tasks: no task pointer may be held. */
static void add_task(tuner *tu, kt_tune_task *tt)
{
	tu->tasks = kt_xrealloc(tu->tasks, (tu->ntasks + 1) * sizeof *tu->tasks);
	size_t k = tu->ntasks++;
	task *ta = &tu->tasks[k];
	memset(&tt->out, 0, sizeof tt->out);
	tt->out.best = -1;
	tt->rc = 0;
	tt->err = (kt_err){0};
	*ta = (task){.tt = tt, .t = tt->p.tmpl, .shape = tt->p.shape, .r = &tt->out, .def_idx = -1, .ref_unit = -1};
	snprintf(ta->id, sizeof ta->id, "p%zu", k);
	kt_err e = {0};
	int g = tu_group_of(tu, ta->t, tt->p.tc, &e);
	ta->group = g < 0 ? 0 : g;
	if (g < 0 || tu_task_setup(tu, ta, &e) != 0)
		tu_fail_task(ta, &e);
	else if (ta->search)
		kt_search_set_parallel(ta->search, 1 + (size_t)kt_compile_jobs(&tu->batchcc) / (k + 1));
}

/* The tasks added since the last turn (next rounds) join the batch; their references go to the
 * next compile batch (fresh). */
static void join_pending(tuner *tu, idlist *fresh)
{
	for (size_t i = 0; i < tu->npending; i++)
		add_task(tu, tu->pending[i]);
	tu->npending = 0;
	for (size_t k = 0; k < tu->ntasks; k++)
		if (tu->tasks[k].state == T_SETUP) {
			tu_task_reference(tu, (int)k, fresh);
			tu->tasks[k].state = T_STARTING;
		}
}

/* The tasks whose reference compiled start: defined on the workers, the reference run, the
 * floor set; then they search. */
static int start_ready(tuner *tu, kt_err *err)
{
	for (size_t k = 0; k < tu->ntasks; k++) {
		task *ta = &tu->tasks[k];
		if (ta->state != T_STARTING || tu->units[ta->ref_unit].state != U_DONE)
			continue;
		if (tu_task_start(tu, ta) != 0)
			continue; /* failed, with its reason */
		if (tu_measure_ceilings(tu, err) != 0)
			return -1;
		tu_set_floor(tu, ta);
		ta->state = T_ASKING;
	}
	return 0;
}

/* Compiles by nvcc, in slot CONFIRM, the variants of the searching tasks' rivals as they stand that
 * NVRTC stood in for.  Before a task chooses, its rivals are measured again from nvcc's variants
 * (confirm_rivals in tune_choose.c); one compiled here is then ready, where else that compile
 * (nvcc's fixed cost, 0.6-0.7 s a unit on the GPU machine) came after the search's last result.
 * With half the compile jobs (tu.confirmcc), so that the five or six rivals of a shape compile
 * side by side, a unit each, in the time of one: with one job, all in one unit, a batch took
 * 1.3-1.6 s, and the last one still held the choice up after the search's end (bench/RESULTS.md,
 * "The rivals' slot with half the jobs").  A steered search leaves most of the cores idle
 * between its small batches. */
static int confirm_early(tuner *tu, kt_err *err)
{
	if (tu->busy[CONFIRM])
		return 0;
	idlist early = {0};
	long rival[KT_DECIDE_MAX];
	for (size_t k = 0; k < tu->ntasks; k++) {
		task *ta = &tu->tasks[k];
		if (!tu_is_active(ta))
			continue;
		size_t n = tu_rivals(tu, ta, rival);
		for (size_t i = 0; i < n && early.n < KT_TUNE_PACK; i++) {
			const kt_eval *e = &ta->r->evals[rival[i]];
			if (!e->stand_in)
				continue;
			long u = tu_unit_make(tu, (int)k, e->cfg, UNIT_NVCC);
			unitrec *ur = &tu->units[u];
			if (ur->state != U_NEW)
				continue;
			ur->state = U_COMPILING;
			ur->task = (int)k;
			tu_id_add(&early, u);
		}
	}
	tu->st.confirm_early += (int)early.n;
	int rc = early.n ? tu_compile_confirm(tu, &early, err) : 0;
	free(early.v);
	return rc;
}

/* Starts a compile batch in each free slot while the searches have something to ask.  A search
 * steered by results asks a small batch, whose compile keeps the cores busy for less time than
 * it takes to come back: a second batch, asked from the same results, compiles beside it. */
static int refill(tuner *tu, kt_err *err)
{
	for (int i = 0; i < SLOTS && !tu->busy[tu->next_slot]; i++) {
		idlist fresh = tu->later;
		tu->later = (idlist){0};
		join_pending(tu, &fresh);
		ask_all(tu, &fresh);
		int rc = fresh.n ? tu_compile_start(tu, &fresh, err) : 0;
		size_t n = fresh.n;
		free(fresh.v);
		if (rc || !n)
			return rc;
	}
	return 0;
}

/* Each turn measures what compiled, lets the searches stop or go on, and only then asks again,
 * so that the newest results steer the asks; it waits for a compile only when nothing can be
 * measured. */
static int pipeline(tuner *tu, kt_err *err)
{
	int rc = 0;
	while (rc == 0 && any_active(tu)) {
		rc = tu_reap(tu, 0, err);
		if (rc == 0)
			rc = start_ready(tu, err);
		if (rc == 0)
			rc = tu_measure_ready(tu, err);
		charge(tu);
		tu_tell_due(tu); /* what was measured, or failed, this turn lets its successors be told */
		int finished = 0; /* one re-timing a turn: the compile slots are refilled between */
		for (size_t k = 0; k < tu->ntasks; k++)
			if (tu_is_active(&tu->tasks[k]))
				finished += tu_update_state(tu, &tu->tasks[k], !finished);
		drop_failed(tu, &tu->waiting);
		if (rc == 0)
			rc = refill(tu, err);
		if (rc == 0)
			rc = confirm_early(tu, err);
		/* A search that ended in this turn's ask moves on (its rivals confirmed, its choice made)
		 * in the next turn, at once: waiting for the compiler first had softmax's best-first
		 * run idle 0.08-0.87 s after its last result, until some other compile ended
		 * (bench/RESULTS.md, "A search that ends in an ask"). */
		int again = tu->ended_in_ask;
		tu->ended_in_ask = 0;
		if (rc == 0 && !again && !tu_measurable(tu) && tu_oldest_busy(tu) >= 0) {
			double t0 = kt_now();
			rc = tu_reap(tu, 1, err);
			tu->st.compile_wait_s += kt_now() - t0;
			kt_trace_span(tu->o->trace, LANE_LOOP, "wait for the compiler", t0, kt_now(), NULL);
		}
		progress(tu);
		if (rc == 0 && !tu->ready.n && tu_oldest_busy(tu) < 0 && !tu->waiting.n && !tu->npending) {
			/* Nothing in flight and nothing asked: every search is waiting on nothing (a task
			 * that stopped asking this turn finishes in the next). */
			int asked = 0;
			for (size_t k = 0; k < tu->ntasks; k++) {
				const task *ta = &tu->tasks[k];
				asked |= ta->state == T_ASKING || ta->state == T_SETUP || (ta->state == T_DRAINING && !ta->inflight);
			}
			if (!asked)
				break;
		}
	}
	return rc;
}

/* ---- the batch -------------------------------------------------------------------------------------- */

static void tuner_free(tuner *tu)
{
	free(tu->later.v);
	for (int s = 0; s < NSLOTS; s++) {
		if (tu->busy[s])
			kt_proc_kill(&tu->ninja[s]);
		free(tu->slot_units[s]);
		free(tu->slot_done[s]);
	}
	kt_pool_free(tu->pool);
	free(tu->pending);
	list_free(&tu->waiting);
	list_free(&tu->ready);
	list_free(&tu->untold);
	for (size_t k = 0; k < tu->ntasks; k++) {
		task *ta = &tu->tasks[k];
		if (ta->search)
			kt_search_free(ta->search);
		kt_hangs_free(ta->hangs);
		free(ta->ev_of);
		free(ta->asked);
		if (ta->space)
			kt_space_free(ta->space);
		free(ta->space);
	}
	free(tu->tasks);
	for (size_t u = 0; u < tu->nunits; u++)
		kt_unit_free(&tu->units[u].u);
	free(tu->units);
	free(tu->index);
	for (int g = 0; g < tu->ngroups; g++)
		tu_group_free(tu->groups[g]), free(tu->groups[g]);
	free(tu->groups);
	if (tu->own_workdir)
		kt_remove_tree(tu->workdir);
	free(tu->workdir);
}

/* The trace's lanes, and the setup on it. */
static void trace_lanes(const tuner *tu)
{
	kt_trace *tr = tu->o->trace;
	if (!tr)
		return;
	kt_trace_lane(tr, LANE_LOOP, "loop: asks, waits for the compiler");
	kt_trace_lane(tr, LANE_MEASURE, "workers: check and time");
	kt_trace_lane(tr, LANE_RETIME, "the choice: rivals re-timed");
	for (int s = 0; s < SLOTS; s++) {
		char name[48];
		snprintf(name, sizeof name, "compile slot %d: batches", s);
		kt_trace_lane(tr, LANE_BATCH + s, name);
		snprintf(name, sizeof name, "compile slot %d: variants", s);
		kt_trace_lane(tr, LANE_UNITS + s, name);
	}
	kt_trace_lane(tr, LANE_BATCH + CONFIRM, "rivals' nvcc variants, early");
	kt_trace_lane(tr, LANE_UNITS + CONFIRM, "rivals' nvcc variants, early: each");
	kt_trace_span(tr, LANE_LOOP, "setup", tu->start, tu->start + tu->st.setup_s, NULL);
}

int kt_tune_batch(kt_tune_task *tasks, size_t n, const kt_tune_opts *o, kt_err *err)
{
	tuner tu = {.o = o, .start = kt_now()};
	int *gpus = NULL, ngpus = 0;
	if (o->exe)
		snprintf(tu.exe, sizeof tu.exe, "%s", o->exe);
	else {
		ssize_t len = readlink("/proc/self/exe", tu.exe, sizeof tu.exe - 1);
		tu.exe[len > 0 ? len : 0] = 0;
	}
	if (o->ceilings)
		tu.ceil = *o->ceilings;
	int rc = pick_gpus(o, &tu.info, &gpus, &ngpus, err);
	if (rc == 0) {
		kt_target_from_info(&tu.info, &tu.target);
		rc = make_workdir(&tu, err);
	}
	tu.batchcc = (kt_compiler){NULL, o->ninja, "", NULL, 0, o->jobs, tu.workdir, NULL, 0, NULL, 0, NULL};
	char arch[16];
	kt_gpu_arch(&tu.info.id, arch, sizeof arch);
	tu.batchcc.arch = arch; /* the check kernels' target: the device's own */
	tu.confirmcc = tu.batchcc;
	int half = kt_compile_jobs(&tu.batchcc) / 2;
	tu.confirmcc.jobs = half > 1 ? half : 1;
	if (rc == 0) {
		for (size_t k = 0; k < n; k++)
			add_task(&tu, &tasks[k]);
		for (size_t k = 0; k < n; k++)
			if (tu.tasks[k].state == T_SETUP) {
				tu.batchcc.nvcc = tu.groups[tu.tasks[k].group]->cc.nvcc; /* the check kernels' compiler */
				break;
			}
		rc = any_setup(&tu) ? tu_first_batch(&tu, gpus, ngpus, err) : 0;
	}
	tu.st.setup_s = kt_now() - tu.start;
	tu.last_charge = kt_now();
	trace_lanes(&tu);
	if (rc == 0)
		rc = pipeline(&tu, err);
	tu.closing = 1;
	for (size_t i = 0; i < tu.npending; i++) { /* rounds that were asked for when the batch ended */
		tu.pending[i]->rc = -1;
		kt_fail_internal(&tu.pending[i]->err, "the batch ended before this round could be tuned");
	}
	for (size_t k = 0; k < tu.ntasks; k++) {
		task *ta = &tu.tasks[k];
		if (rc == 0 && ta->state != T_DONE && ta->state != T_FAILED)
			tu_finish_task(&tu, ta);
		ta->tt->rc = ta->state == T_FAILED || rc ? -1 : 0;
		if (ta->state == T_FAILED)
			ta->tt->err = ta->err;
		else if (rc)
			ta->tt->err = *err;
	}
	tu.st.restarts = tu.pool ? kt_pool_restarts(tu.pool) : 0;
	tu.st.ngpus = tu.pool ? kt_pool_gpus(tu.pool, tu.st.gpu, tu.st.gpu_jobs, KT_TUNE_MAX_GPUS) : 0;
	if (o->stats)
		*o->stats = tu.st;
	if (o->ceilings)
		*o->ceilings = tu.ceil;
	if (o->progress)
		kt_progress_clear(o->progress);
	free(gpus);
	tuner_free(&tu);
	return rc;
}

int kt_tune(const kt_problem *p, const kt_tune_opts *o, kt_tune_result *out, kt_err *err)
{
	kt_tune_task t = {.p = *p};
	int rc = kt_tune_batch(&t, 1, o, err);
	if (rc == 0 && t.rc)
		*err = t.err, rc = -1;
	*out = t.out;
	return rc;
}

/* ---- several shapes ----------------------------------------------------------------------------- */

static double best_time(const kt_tune_result *r)
{
	return r->best >= 0 ? r->evals[r->best].median_us : 0;
}

static const kt_tune_result *order_r;
static size_t order_np;
static int by_config(const void *a, const void *b)
{
	size_t x = *(const size_t *)a, y = *(const size_t *)b;
	int c = memcmp(order_r->evals[x].cfg, order_r->evals[y].cfg, order_np * sizeof *order_r->evals[x].cfg);
	return c ? c : (x > y) - (x < y);
}

/* r's evaluations in the order of their configurations, then of their index (malloc'ed). */
static size_t *config_order(const kt_tune_result *r, size_t np)
{
	size_t *ord = kt_xcalloc(r->nevals + 1, sizeof *ord);
	for (size_t j = 0; j < r->nevals; j++)
		ord[j] = j;
	order_r = r;
	order_np = np;
	qsort(ord, r->nevals, sizeof *ord, by_config);
	return ord;
}

/* r's first evaluation (by index) of configuration c, found in its order ord; NULL when none. */
static const kt_eval *first_eval(const kt_tune_result *r, const size_t *ord, size_t np, const uint16_t *c)
{
	size_t lo = 0, hi = r->nevals;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (memcmp(r->evals[ord[mid]].cfg, c, np * sizeof *c) < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < r->nevals && !memcmp(r->evals[ord[lo]].cfg, c, np * sizeof *c) ? &r->evals[ord[lo]] : NULL;
}

int kt_tune_robust(const kt_tmpl *t, const kt_tune_result *const *rs, size_t n, uint16_t *cfg, double *worst)
{
	size_t np = (size_t)t->nparams, best_shapes = 0;
	double best_worst = 0;
	int found = 0;
	/* Each shape's evaluations sorted by configuration: a record of an exhaustive search holds
	 * thousands, and every one of them is looked up at every shape. */
	size_t **ord = kt_xcalloc(n + 1, sizeof *ord);
	for (size_t u = 0; u < n; u++)
		ord[u] = config_order(rs[u], np);
	for (size_t s = 0; s < n; s++)
		for (size_t i = 0; i < rs[s]->nevals; i++) {
			const uint16_t *c = rs[s]->evals[i].cfg;
			if (rs[s]->evals[i].status != KT_OK)
				continue;
			size_t shapes = 0;
			double w = 1;
			for (size_t u = 0; u < n && w < INFINITY; u++) {
				const kt_eval *e = first_eval(rs[u], ord[u], np, c);
				if (!e)
					continue;
				if (u < s || (u == s && e != &rs[s]->evals[i])) { /* weighed where it came first */
					w = INFINITY;
					break;
				}
				shapes++;
				double b = best_time(rs[u]);
				w = e->status != KT_OK || b <= 0 ? INFINITY : fmax(w, e->median_us / b);
			}
			if (w < INFINITY && (!found || shapes > best_shapes || (shapes == best_shapes && w < best_worst))) {
				found = 1;
				best_shapes = shapes;
				best_worst = w;
				memcpy(cfg, c, np * sizeof *c);
			}
		}
	for (size_t u = 0; u < n; u++)
		free(ord[u]);
	free(ord);
	if (found)
		*worst = best_worst;
	return found ? 0 : -1;
}
