/* tune_setup.c - the start of a pipeline (tune.c): each problem's space, search and reference,
 * the GPU's ceilings and each problem's roofline floor, and the batch's first compiles, sized
 * by what the first unit cost the compiler. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tune_int.h"

/* Narrows the space to the configurations of tt->only, in their order; each must be in it.  The
 * default stays too when it is feasible (without a reference kernel it is the reference). */
static int keep_only(task *ta, kt_err *err)
{
	const kt_tune_task *tt = ta->tt;
	size_t np = (size_t)ta->t->nparams, n = 0;
	uint16_t def[KT_MAX_SLOTS];
	kt_tmpl_default_config(ta->t, def);
	long d = kt_space_find(ta->space, def);
	uint16_t *keep = kt_xcalloc((tt->nonly + 1) * np + 1, sizeof *keep);
	if (d >= 0)
		memcpy(keep + n++ * np, def, np * sizeof *keep);
	for (size_t j = 0; j < tt->nonly; j++) {
		const uint16_t *want = tt->only + j * np;
		if (kt_space_find(ta->space, want) < 0) {
			kt_buf cfg = {0};
			kt_tmpl_format_config(ta->t, want, &cfg);
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
	free(ta->space->cfgs);
	ta->space->cfgs = keep;
	ta->space->count = n;
	return 0;
}

int tu_task_setup(tuner *tu, task *ta, kt_err *err)
{
	const kt_tune_task *tt = ta->tt;
	const kt_tune_opts *o = tu->o;
	ta->space = kt_xcalloc(1, sizeof *ta->space);
	if (kt_space_enum(ta->t, ta->shape, ta->space, err))
		return -1;
	if (!ta->space->count)
		return kt_fail(err, "no configuration of %s is feasible at this shape", ta->t->kernel);
	if (tt->nonly && keep_only(ta, err))
		return -1;
	ta->search = kt_search_new(o->strategy, ta->t, ta->space, o->budget, o->seed, err);
	if (!ta->search)
		return -1;
	if (!o->run_all && !tt->nonly) /* a list asked for, or a recording, runs whole */
		ta->hangs = kt_hangs_new(ta->t);
	int np = ta->t->nparams;
	size_t ns = 0, *seeds = kt_xcalloc(tt->nseeds + 1, sizeof *seeds);
	for (size_t i = 0; i < tt->nseeds; i++) {
		long j = kt_space_find(ta->space, tt->seeds + i * (size_t)np);
		if (j >= 0)
			seeds[ns++] = (size_t)j;
	}
	kt_search_seed(ta->search, seeds, ns);
	free(seeds);
	for (size_t i = 0; i < tt->nknown; i++) {
		long j = kt_space_find(ta->space, tt->known + i * (size_t)np);
		if (j >= 0)
			kt_search_known(ta->search, (size_t)j, tt->known_us[i]);
	}
	ta->ev_of = kt_xmalloc(ta->space->count * sizeof *ta->ev_of);
	ta->asked = kt_xcalloc(ta->space->count, 1);
	for (size_t i = 0; i < ta->space->count; i++)
		ta->ev_of[i] = -1;
	uint16_t def[KT_MAX_SLOTS];
	kt_tmpl_default_config(ta->t, def);
	ta->def_idx = kt_space_find(ta->space, def);
	if (ta->def_idx < 0 && !ta->t->reference)
		return kt_fail(err, "the default configuration is infeasible at this shape and the template names no reference kernel");
	kt_tune_result *r = ta->r;
	r->nparams = np;
	r->best = -1;
	snprintf(r->strategy, sizeof r->strategy, "%s", kt_search_name(ta->search));
	snprintf(r->driver, sizeof r->driver, "%s", tu->info.driver);
	r->seed = o->seed;
	r->budget = o->budget > 0 ? o->budget : (long)ta->space->count;
	return 0;
}

/* The configuration whose unit runs task ta's reference: the default; where it is infeasible,
 * the first that compiles to the default's code (it differs only in how it is launched:
 * kt_tmpl_code_config), whose unit holds the reference anyway; else the first. */
static size_t reference_config(const task *ta)
{
	if (ta->def_idx >= 0)
		return (size_t)ta->def_idx;
	uint16_t code[KT_MAX_SLOTS], def[KT_MAX_SLOTS];
	kt_tmpl_default_config(ta->t, def);
	for (size_t i = 0; i < ta->space->count; i++)
		if (kt_tmpl_code_config(ta->t, kt_space_cfg(ta->space, i), code) &&
		    !memcmp(code, def, (size_t)ta->t->nparams * sizeof *code))
			return i;
	return 0;
}

void tu_task_reference(tuner *tu, int k, idlist *fresh)
{
	task *ta = &tu->tasks[k];
	size_t ri = reference_config(ta);
	if (ta->def_idx >= 0)
		tu_enqueue(tu, k, ri, fresh);
	ta->ref_unit = tu_unit_make(tu, k, kt_space_cfg(ta->space, ri), UNIT_REF);
	if (tu->units[ta->ref_unit].state == U_NEW) { /* the default exceeds the device: its text serves */
		tu->units[ta->ref_unit].state = U_COMPILING;
		tu_id_add(fresh, ta->ref_unit);
	}
	kt_val env[KT_MAX_SLOTS];
	kt_err e = {0};
	kt_tmpl_env(ta->t, ta->shape, kt_space_cfg(ta->space, ri), env);
	kt_tmpl_launch(ta->t, env, &ta->ref_l, &e);
}

int tu_task_start(tuner *tu, task *ta)
{
	kt_buf cmd = {0}, shape = {0};
	kt_err e = {0};
	const char *reply = NULL;
	kt_tmpl_format_shape(ta->t, ta->shape, &shape);
	kt_buf_printf(&cmd, "problem\t%s\t%s\t%s\t", ta->id, ta->t->path, kt_buf_str(&shape));
	kt_tmpl_format_choices(ta->t, '\t', &cmd);
	kt_measure_fields(&ta->tt->p.measure, '\t', &cmd);
	if (cmd.data[cmd.len - 1] == '\t')
		cmd.data[--cmd.len] = 0;
	int rc = kt_pool_setup(tu->pool, kt_buf_str(&cmd), NULL, &e);
	const unitrec *ur = &tu->units[ta->ref_unit];
	long d = ta->def_idx >= 0 ? ta->ev_of[ta->def_idx] : -1;
	if (rc == 0 && !ta->t->reference && d >= 0 && ta->r->evals[d].status == KT_OVER_LIMITS)
		rc = kt_fail(&e, "the default configuration, the reference, exceeds the device: %s (the template names no reference kernel)",
			     ta->r->evals[d].msg ? ta->r->evals[d].msg : "");
	else if (rc == 0 && !ur->u.ok)
		rc = kt_fail(&e, "the reference variant did not compile:\n%s", ur->u.msg ? ur->u.msg : "");
	if (rc == 0) {
		kt_buf_reset(&cmd);
		if (ta->t->reference) {
			kt_buf_printf(&cmd, "ref\t%s\t%s\t%s_reference\t-", ta->id, ur->u.cubin, ur->sym);
		} else {
			kt_buf_printf(&cmd, "ref\t%s\t%s\t%s\t", ta->id, ur->u.cubin, ur->u.entry);
			kt_tmpl_format_config(ta->t, kt_space_cfg(ta->space, (size_t)ta->def_idx), &cmd);
		}
		/* The reference's time is only reported, against the tuned one (the default's, when it
		 * is the reference, is measured again as an evaluation): a slow one is timed by its
		 * estimate, and a restarted worker runs it without timing it again. */
		kt_buf replay = {0};
		kt_buf_printf(&replay, "%s\tuntimed", kt_buf_str(&cmd));
		if (ta->t->reference)
			kt_buf_printf(&cmd, "\t%d", REF_RACE_US);
		else
			kt_buf_printf(&cmd, "\tuntimed");
		rc = kt_pool_setup_replay(tu->pool, kt_buf_str(&cmd), kt_buf_str(&replay), &reply, &e);
		kt_buf_free(&replay);
		if (rc) {
			kt_err why = e;
			kt_fail_internal(&e, "the reference (%s) failed: %s",
					 ta->t->reference ? ta->t->reference : "the default configuration", why.msg);
		}
	}
	if (rc == 0 && ta->t->reference)
		ta->r->reference_us = atof(reply);
	if (rc)
		tu_fail_task(ta, &e);
	kt_buf_free(&cmd);
	kt_buf_free(&shape);
	return rc;
}

/* ---- ceilings and floors --------------------------------------------------------------------- */

/* The arithmetic ceilings, by kt_flops_unit: the worker's command that measures each. */
static const char *const rate_cmds[KT_NFLOPS_UNITS] = {[KT_FLOPS_FMA] = "rate", [KT_FLOPS_TENSOR] = "rate\ttensor"};

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

static double *ceiling_of(kt_ceilings *c, int unit) { return unit == KT_FLOPS_TENSOR ? &c->tensor_gflops : &c->gflops; }

int tu_measure_ceilings(tuner *tu, kt_err *err)
{
	int want_bw = 0, want_rate[KT_NFLOPS_UNITS] = {0};
	for (size_t k = 0; k < tu->ntasks; k++) {
		const task *ta = &tu->tasks[k];
		if (ta->state == T_FAILED)
			continue;
		want_bw |= ta->ref_l.bytes > 0;
		want_rate[ta->t->flops_unit] |= ta->ref_l.flops > 0;
	}
	if (want_bw && tu->ceil.bw_gbs <= 0) {
		char cmd[64];
		int64_t mem = tu->info.lim.mem_bytes, bytes = mem / 8 < BW_BYTES ? mem / 8 : BW_BYTES;
		snprintf(cmd, sizeof cmd, "bw\t%lld", (long long)bytes);
		tu->ceil.bw_gbs = measure(tu, cmd, err);
	}
	for (int u = 0; u < KT_NFLOPS_UNITS; u++)
		if (want_rate[u] && *ceiling_of(&tu->ceil, u) <= 0)
			*ceiling_of(&tu->ceil, u) = measure(tu, rate_cmds[u], err);
	return 0;
}

void tu_set_floor(tuner *tu, task *ta)
{
	kt_tune_result *r = ta->r;
	const kt_launch *l = &ta->ref_l;
	if (l->bytes > 0)
		r->bw_gbs = tu->ceil.bw_gbs;
	if (l->flops > 0)
		r->flops_rate = *ceiling_of(&tu->ceil, ta->t->flops_unit);
	double tb, tf;
	tu_floor_terms(ta, &tb, &tf);
	r->floor_us = tb > tf ? tb : tf;
}

void tu_floor_terms(const task *ta, double *tb, double *tf)
{
	const kt_tune_result *r = ta->r;
	*tb = r->bw_gbs > 0 ? ta->ref_l.bytes / (r->bw_gbs * 1e3) : 0;
	*tf = r->flops_rate > 0 ? ta->ref_l.flops / (r->flops_rate * 1e3) : 0;
}

static int open_pool(tuner *tu, const int *gpus, int ngpus, kt_err *err)
{
	const kt_tune_opts *o = tu->o;
	if (!tu->exe[0])
		return kt_fail_internal(err, "cannot find the kt executable for the workers");
	char *log = kt_path_join(tu->workdir, "worker.log");
	kt_worker_opts wo = {tu->exe, o->backend, o->seed, o->timeout_s, 0, log};
	tu->pool = kt_pool_new(&wo, gpus, ngpus, err);
	free(log);
	return tu->pool ? 0 : -1;
}

/* How long one unit of the first batch (the check kernels, the references) took nvcc: the
 * slowest reference's, from ninja's log; else the batch's wall time. */
static double unit_seconds(const tuner *tu, const idlist *l, long check, double wall)
{
	double s = 0;
	for (size_t i = 0; i < l->n; i++)
		if (l->v[i] != check && tu->units[l->v[i]].u.seconds > s)
			s = tu->units[l->v[i]].u.seconds;
	return s > 0 ? s : wall;
}

/* The size of the searches' first batch: what every compile job gets through in about
 * FIRST_BATCH_S at unit_s a variant (the references' units cost one variant and nvcc's fixed
 * cost: an upper bound of a variant's share of a packed unit), with the next batch sharing the
 * cores; at least one variant a job, at most a quarter batch (the size before it was measured). */
static size_t first_size(const tuner *tu, double unit_s)
{
	size_t jobs = (size_t)kt_compile_jobs(&tu->batchcc), quarter = (size_t)tu_batch_size(tu) / 4;
	double each = unit_s > 0 ? FIRST_BATCH_S / (SLOTS * unit_s) : (double)quarter;
	size_t n = jobs * (each < 1 ? 1 : (size_t)each);
	return n < quarter ? n : quarter > 0 ? quarter : 1;
}

/* The searches' first batch, n configurations shared by the tasks (at least a few each), in
 * the next slot. */
static int ask_first(tuner *tu, size_t n, kt_err *err)
{
	idlist fresh = {0};
	size_t each = n / tu->ntasks, asked = 0;
	each = each < MIN_ASK ? MIN_ASK : each;
	for (size_t k = 0; k < tu->ntasks; k++)
		if (tu->tasks[k].state == T_ASKING)
			asked += tu_ask_task(tu, (int)k, each, &fresh);
	tu->st.first_batch = (int)asked;
	int rc = fresh.n ? tu_compile_start(tu, &fresh, err) : 0;
	free(fresh.v);
	return rc;
}

int tu_first_batch(tuner *tu, const int *gpus, int ngpus, kt_err *err)
{
	idlist fresh = {0};
	long check = tu_unit_add(tu);
	unitrec *cu = &tu->units[check];
	snprintf(cu->u.name, sizeof cu->u.name, "kt_check");
	kt_check_source(&cu->u.src);
	cu->state = U_COMPILING;
	tu_index_put(tu, check);
	tu_id_add(&fresh, check);
	for (size_t k = 0; k < tu->ntasks; k++)
		if (tu->tasks[k].state == T_SETUP) {
			tu_task_reference(tu, (int)k, &fresh);
			tu->tasks[k].state = T_ASKING;
		}
	double t0 = kt_now();
	int rc = tu_compile_start(tu, &fresh, err);
	if (rc == 0)
		rc = open_pool(tu, gpus, ngpus, err);
	if (tu->busy[0]) {
		kt_err e = {0};
		int crc = tu_compile_finish(tu, 0, &e);
		if (rc == 0 && crc)
			rc = -1, *err = e;
	}
	tu->st.unit_s = unit_seconds(tu, &fresh, check, kt_now() - t0);
	free(fresh.v);
	if (rc == 0)
		rc = ask_first(tu, first_size(tu, tu->st.unit_s), err);
	if (rc)
		return -1;
	cu = &tu->units[check];
	if (!cu->u.ok)
		return kt_fail_internal(err, "the check kernels did not compile:\n%s", cu->u.msg);
	kt_buf cmd = {0};
	kt_buf_printf(&cmd, "check\t%s", cu->u.cubin);
	rc = kt_pool_setup(tu->pool, kt_buf_str(&cmd), NULL, err);
	kt_buf_free(&cmd);
	for (size_t k = 0; rc == 0 && k < tu->ntasks; k++)
		if (tu_is_active(&tu->tasks[k]))
			tu_task_start(tu, &tu->tasks[k]);
	if (rc == 0)
		rc = tu_measure_ceilings(tu, err);
	for (size_t k = 0; rc == 0 && k < tu->ntasks; k++)
		tu_set_floor(tu, &tu->tasks[k]);
	return rc;
}
