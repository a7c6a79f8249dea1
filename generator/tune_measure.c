/* tune_measure.c - the measuring of a pipeline (tune.c): the candidates whose units compiled,
 * checked and timed on the workers in the order their searches asked for them, except those that
 * hold what made others at their shape hang (hangs.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tune_int.h"

static int by_task(const void *a, const void *b)
{
	const cand *x = a, *y = b;
	int c = (x->task > y->task) - (x->task < y->task);
	return c ? c : (x->seq > y->seq) - (x->seq < y->seq);
}

static int by_seq(const void *a, const void *b)
{
	const cand *x = a, *y = b;
	return (x->seq > y->seq) - (x->seq < y->seq);
}

/* Whether a ready candidate may be measured now: its task is searching.  A candidate of a search
 * steered by its results is measured as soon as its unit compiled, but told only when nothing
 * its search asked before it is still to be measured (tu_tell_due), so that the search hears its
 * results in the order it asked, however the compiles end, and the GPU measures while a slow
 * unit still compiles.  (Random and exhaustive orders do not depend on what they are told:
 * theirs are told as they come.) */
static int may_measure(const tuner *tu, const cand *c)
{
	return tu_is_active(&tu->tasks[c->task]);
}

/* Whether candidate c's result may be told: nothing its search asked before it is on its way. */
static int tell_due(const tuner *tu, const cand *c)
{
	const candlist *ahead[] = {&tu->waiting, &tu->ready, &tu->untold};
	for (size_t l = 0; l < 3; l++)
		for (size_t i = 0; i < ahead[l]->n; i++)
			if (ahead[l]->v[i].task == c->task && ahead[l]->v[i].seq < c->seq)
				return 0;
	return 1;
}

void tu_tell_due(tuner *tu)
{
	candlist *u = &tu->untold;
	qsort(u->v, u->n, sizeof *u->v, by_seq);
	size_t keep = 0;
	for (size_t i = 0; i < u->n; i++) { /* in the order asked: one told lets the next go */
		cand c = u->v[i];
		u->v[i].task = -1; /* told or moved: no longer ahead of the others */
		if (!tu_is_active(&tu->tasks[c.task]))
			continue; /* its search ended without it (a failed task) */
		if (tell_due(tu, &c))
			tu_tell(&tu->tasks[c.task], c.idx);
		else
			u->v[keep++] = c;
	}
	u->n = keep;
}

/* The candidates of a measuring batch, to its pool's gate: one whose task saw others hang for
 * what it holds is not run (hangs.h). */
typedef struct gating {
	tuner *tu;
	const cand *cs;
} gating;

static const uint16_t *cand_cfg(const gating *g, size_t i)
{
	const task *ta = &g->tu->tasks[g->cs[i].task];
	return kt_space_cfg(ta->space, g->cs[i].idx);
}

static int gate_hold(void *ctx, size_t i, char *why, size_t whysz)
{
	const gating *g = ctx;
	return !g->cs[i].confirm && kt_hangs_hold(g->tu->tasks[g->cs[i].task].hangs, cand_cfg(g, i), why, whysz);
}

static void gate_done(void *ctx, size_t i, const kt_job *j)
{
	const gating *g = ctx;
	kt_hangs_saw(g->tu->tasks[g->cs[i].task].hangs, cand_cfg(g, i), j->status);
}

/* Checks and times the ready candidates on the workers, grouped by problem: the oldest
 * MEASURE_TURN of them, so that the loop's turns (which refill the compile slots) stay short. */
int tu_measure_ready(tuner *tu, kt_err *err)
{
	candlist keep = {0}, go = {0}; /* the others are kept for later */
	qsort(tu->ready.v, tu->ready.n, sizeof *tu->ready.v, by_seq);
	for (size_t i = 0; i < tu->ready.n; i++)
		tu_list_add(go.n < MEASURE_TURN && may_measure(tu, &tu->ready.v[i]) ? &go : &keep, &tu->ready.v[i]);
	free(tu->ready.v);
	tu->ready = keep;
	size_t n = go.n;
	cand *cs = go.v;
	if (!n) {
		free(cs);
		return 0;
	}
	qsort(cs, n, sizeof *cs, by_task);
	double race = tu->o->race == 0 ? KT_TUNE_RACE : tu->o->race;
	kt_job *jobs = kt_xcalloc(n + 1, sizeof *jobs);
	for (size_t i = 0; i < n; i++) {
		const task *ta = &tu->tasks[cs[i].task];
		const unitrec *ur = &tu->units[cs[i].unit];
		kt_buf cmd = {0};
		kt_buf_printf(&cmd, "eval\t%s\t%s\t%s\t%s", ta->id, ur->u.cubin, ur->u.entry, cs[i].config);
		if (race > 0 && ta->best_us > 0 && !cs[i].confirm) /* a rival of the choice is timed whole */
			kt_buf_printf(&cmd, "\t%.4f", ta->best_us * (1 + race));
		jobs[i].cmd = kt_buf_detach(&cmd);
	}
	double t0 = kt_now();
	if (tu->st.first_measure_s <= 0)
		tu->st.first_measure_s = t0 - tu->start;
	gating g = {tu, cs};
	int rc = kt_pool_run_gated(tu->pool, jobs, n, &(kt_pool_gate){&g, gate_hold, gate_done}, err);
	tu->st.measure_s += kt_now() - t0;
	if (tu->o->trace) {
		size_t nconfirm = 0;
		for (size_t i = 0; i < n; i++)
			nconfirm += cs[i].confirm != 0;
		char name[48], args[64];
		snprintf(name, sizeof name, "measure %zu", n);
		snprintf(args, sizeof args, "\"candidates\":%zu,\"confirmations\":%zu", n, nconfirm);
		kt_trace_span(tu->o->trace, LANE_MEASURE, name, t0, kt_now(), args);
	}
	for (size_t i = 0; rc == 0 && i < n; i++) {
		task *ta = &tu->tasks[cs[i].task];
		unitrec *ur = &tu->units[cs[i].unit];
		int ok = jobs[i].status == KT_OK;
		kt_eval *e = tu_put_eval(tu, &cs[i], jobs[i].status, ok ? NULL : jobs[i].reply, &ur->u);
		char word[16] = "";
		if (ok && sscanf(jobs[i].reply, "%lf\t%lf\t%15s", &e->median_us, &e->spread_us, word) < 2) {
			e->status = KT_FAULTED;
			e->msg = kt_xstrdup("the worker's answer had no times");
			ta->counts[KT_OK]--, ta->counts[KT_FAULTED]++;
			tu->counts[KT_OK]--, tu->counts[KT_FAULTED]++;
		}
		e->raced = e->status == KT_OK && !strcmp(word, "raced");
		tu->st.raced += e->raced;
		ta->inflight--;
		if (cs[i].confirm)
			continue;
		if (ta->search && kt_search_steered(ta->search)) /* told in the order asked: tu_tell_due */
			tu_list_add(&tu->untold, &(cand){.task = cs[i].task, .seq = cs[i].seq, .idx = cs[i].idx});
		else
			tu_tell(ta, cs[i].idx);
	}
	for (size_t i = 0; i < n; i++) {
		free(jobs[i].cmd);
		kt_job_clear(&jobs[i]);
		tu_cand_free(&cs[i]);
	}
	free(jobs);
	free(cs);
	return rc;
}

/* Something ready can be measured now. */
int tu_measurable(const tuner *tu)
{
	for (size_t i = 0; i < tu->ready.n; i++)
		if (may_measure(tu, &tu->ready.v[i]))
			return 1;
	return 0;
}
