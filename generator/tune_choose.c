/* tune_choose.c - the end of a task: its siblings' fastest configurations evaluated at its shape,
 * its rivals timed again together (decide.h), the choice, and what comes next (the next round). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "decide.h"
#include "tune_int.h"

/* How many of each sibling's fastest configurations a shape evaluates before it chooses: three
 * rather than the best alone leave a fifth fewer pairs of cold tunings more than 2% apart, replayed
 * over groups of six shapes, for 7% more evaluations (docs/search.md, "A project replayed").  Past
 * the bests, at most SIBLING_MAX in all (a group of six asks 15). */
enum { SIBLING_TOP = 3, SIBLING_MAX = 16 };

/* A choice's re-timing takes RETIME_BLOCKS blocks, and as many again for a tie it is unsure of. */
enum { MAX_BLOCKS = 2 * RETIME_BLOCKS };

/* ---- the end of a task: time its rivals again, together, and choose ---------------------------- */

/* The unit that measured eval i of task ta: nvcc's where NVRTC stood in for it (the eval was
 * confirmed, confirm_rivals). */
static const unitrec *eval_unit(tuner *tu, const task *ta, long i)
{
	int k = (int)(ta - tu->tasks);
	long u = tu_unit_of(tu, k, ta->r->evals[i].cfg);
	if (kt_unit_stands_in(&tu->batchcc, &tu->units[u].u))
		u = tu_unit_make(tu, k, ta->r->evals[i].cfg, UNIT_NVCC);
	return &tu->units[u];
}

/* One block: candidates c[0..k) of task ta timed together, interleaved (A B C, B C A, ...: the
 * worker's `retime`), for rounds rounds; each one's median goes to med.  -1 when the worker
 * could not. */
static int retime(tuner *tu, task *ta, const kt_retimed *c, size_t k, int rounds, double *med)
{
	kt_tune_result *r = ta->r;
	kt_buf cmd = {0};
	kt_buf_printf(&cmd, "retime\t%s\t%d", ta->id, rounds);
	for (size_t i = 0; i < k; i++) {
		kt_buf cfg = {0};
		const unitrec *ur = eval_unit(tu, ta, c[i].eval);
		if (ur->state != U_DONE || !ur->u.ok) { /* not compiled: the sweep's times stand */
			kt_buf_free(&cmd);
			return -1;
		}
		kt_tmpl_format_config(ta->t, r->evals[c[i].eval].cfg, &cfg);
		kt_buf_printf(&cmd, "\t%s\t%s\t%s", ur->u.cubin, ur->u.entry, kt_buf_str(&cfg));
		kt_buf_free(&cfg);
	}
	kt_job j = {cmd.data, KT_OK, NULL, MEASURE_TIMEOUT_S};
	kt_err e = {0};
	int rc = kt_pool_run(tu->pool, &j, 1, &e) == 0 && j.status == KT_OK ? 0 : -1;
	const char *p = rc == 0 ? j.reply : NULL;
	for (size_t i = 0; rc == 0 && i < k; i++) { /* "median spread" per candidate */
		char *end;
		med[i] = strtod(p, &end);
		strtod(end, &end);
		rc = med[i] > 0 ? 0 : -1;
		p = *end ? end + 1 : end;
	}
	kt_job_clear(&j);
	kt_buf_free(&cmd);
	return rc;
}

/* Times the rivals c[0..k) again in RETIME_BLOCKS blocks, one after another on the same worker
 * (one job at a time goes to the first worker); each one's time becomes the mean of its blocks'
 * medians, with its confidence interval.  When no block could be timed the sweep's times stand,
 * with no interval.
 *
 * A kernel bound by arithmetic first runs with its rivals, interleaved and untimed, for
 * RETIME_WARM_FACTOR rounds' time (at most RETIME_WARM_US).  A long tensor-core kernel starts at
 * the boost clock after the idle spells of the search (waits for the compiler) and settles,
 * under sustained load, at the lower clock of the power limit: an H200 ran gemm_sm90 at 4096 x
 * 4096 x 14336 at 1,455-1,875 MHz after 0.3 s against 1,980 MHz before, and the re-timing's
 * blocks drifted with it (+- 7% intervals, which make every rival a tie).  A step of a model's
 * prefill keeps the GPU under that load, so the choice is made there.  A kernel bound by memory
 * is not: the warm-up made no pair of the 30-shape project's choices closer, and took the
 * configure from 28-36 s to 49-51 s on an H100 (bench/RESULTS.md). */
static int compute_bound(const task *ta)
{
	double tb, tf;
	tu_floor_terms(ta, &tb, &tf);
	return tf > tb;
}

/* Each of task ta's rivals' times from the first nb blocks' medians med (block-major, k a
 * block), with its interval, and the interval of its difference from the fastest's, block by
 * block. */
static void intervals(const task *ta, kt_retimed *c, size_t k, const double *med, size_t nb)
{
	double v[MAX_BLOCKS], gap;
	if (!nb)
		return;
	for (size_t i = 0; i < k; i++) {
		for (size_t b = 0; b < nb; b++)
			v[b] = med[b * k + i];
		kt_decide_interval(v, nb, &c[i].us, &c[i].ci_us);
	}
	size_t f = kt_decide_fastest(ta->t, ta->r, c, k);
	for (size_t i = 0; i < k; i++) {
		for (size_t b = 0; b < nb; b++)
			v[b] = med[b * k + i] - med[b * k + f];
		kt_decide_interval(v, nb, &gap, &c[i].gap_ci_us);
		c[i].paired = nb > 1;
	}
}

static void retime_rivals(tuner *tu, task *ta, kt_retimed *c, size_t k)
{
	double sum = 0;
	for (size_t i = 0; i < k; i++)
		sum += c[i].us + RETIME_LAUNCH_US;
	double want = RETIME_BLOCK_US / (sum > 0 ? sum : 1);
	int rounds = want < RETIME_MIN_ROUNDS ? RETIME_MIN_ROUNDS : want > RETIME_MAX_ROUNDS ? RETIME_MAX_ROUNDS : (int)want;
	double *med = kt_xcalloc(MAX_BLOCKS * k, sizeof *med);
	double warm = fmin(RETIME_WARM_FACTOR * sum, RETIME_WARM_US);
	if (compute_bound(ta) && sum > 0 && warm >= sum)
		(void)retime(tu, ta, c, k, (int)(warm / sum), med); /* the results are dropped */
	size_t nb = 0;
	for (int b = 0; b < RETIME_BLOCKS; b++)
		nb += retime(tu, ta, c, k, rounds, med + nb * k) == 0;
	intervals(ta, c, k, med, nb);
	/* A tie that the rule would take on an interval alone (a rival slower than the fastest by
	 * more than KT_TIE_FLOOR) is looked at again with twice the blocks (decide.h). */
	if (nb && kt_decide_unsure(c, k, kt_decide_pick(ta->t, ta->r, c, k))) {
		for (int b = 0; b < RETIME_BLOCKS; b++)
			nb += retime(tu, ta, c, k, rounds, med + nb * k) == 0;
		intervals(ta, c, k, med, nb);
		tu->st.retime_more++;
	}
	free(med);
}

/* The rivals of task ta's choice (decide.h) into rival[]; how many.  A user's --config list is
 * compared whole; with re-timing off, the fastest alone. */
size_t tu_rivals(const tuner *tu, const task *ta, long *rival)
{
	int top = tu->o->retime_top == 0 ? DEFAULT_RETIME_TOP : tu->o->retime_top;
	return kt_decide_rivals(ta->t, ta->r, top > 0 ? (size_t)top : 1, ta->tt->nonly > 0, rival,
				top < 0 ? 1 : KT_DECIDE_MAX);
}

/* The choice is made on what nvcc compiles: the rivals that a variant NVRTC compiled standing in
 * for nvcc measured (nvrtc.h) are measured again from nvcc's variants, which replace them.  A
 * rival that then falls behind brings in others, confirmed in turn, so the rivals the choice
 * takes are nvcc's.  Returns how many were asked (0: the rivals are confirmed). */
static size_t confirm_rivals(tuner *tu, task *ta)
{
	long rival[KT_DECIDE_MAX];
	size_t k = tu_rivals(tu, ta, rival), n = 0;
	for (size_t i = 0; i < k; i++) {
		const kt_eval *e = &ta->r->evals[rival[i]];
		long idx = e->stand_in ? kt_space_find(ta->space, e->cfg) : -1;
		if (idx >= 0) {
			tu_enqueue_confirm(tu, (int)(ta - tu->tasks), (size_t)idx, &tu->later);
			n++;
		}
	}
	return n;
}

/* The choice (decide.h): the rivals of the fastest are timed again together, and the rule picks
 * from their tie set.  The evals keep their sweep times; the rivals and their new times go to
 * r->retimed. */
static void choose(tuner *tu, task *ta)
{
	kt_tune_result *r = ta->r;
	long rival[KT_DECIDE_MAX];
	size_t k = tu_rivals(tu, ta, rival);
	r->best = -1;
	if (!k)
		return;
	kt_retimed *c = kt_xcalloc(k, sizeof *c);
	for (size_t i = 0; i < k; i++)
		c[i] = (kt_retimed){.eval = rival[i], .us = r->evals[rival[i]].median_us};
	if (k > 1)
		retime_rivals(tu, ta, c, k);
	r->best = c[kt_decide_pick(ta->t, r, c, k)].eval;
	if (k > 1)
		r->retimed = c, r->nretimed = k;
	else
		free(c);
}

void tu_finish_task(tuner *tu, task *ta)
{
	double t0 = kt_now();
	choose(tu, ta);
	tu->st.retime_s += kt_now() - t0;
	if (tu->o->trace) {
		char args[48];
		snprintf(args, sizeof args, "\"rivals\":%zu", ta->r->nretimed);
		kt_trace_span(tu->o->trace, LANE_RETIME, ta->tt->label ? ta->tt->label : ta->id, t0, kt_now(), args);
	}
	kt_tune_result *r = ta->r;
	long d = ta->def_idx >= 0 ? ta->ev_of[ta->def_idx] : -1;
	if (d >= 0 && r->evals[d].status == KT_OK && !r->evals[d].raced)
		r->default_us = r->evals[d].median_us;
	r->seconds = ta->charged;
	ta->state = T_DONE;
	kt_progress *p = ta->tt->progress;
	if (p && ta->tt->label) /* a later round shares the progress of the first, under its own name */
		snprintf(p->label, sizeof p->label, "%s", ta->tt->label);
	if (p) {
		kt_progress_clear(tu->o->progress);
		kt_progress_done(p, r->nevals, ta->counts, kt_result_chosen_us(r), r->floor_us,
				 r->stop);
	}
	kt_tune_task *next = tu->o->next && !tu->closing ? tu->o->next(tu->o->next_ctx, ta->tt) : NULL;
	if (next) { /* the next round of this problem: added at the top of the loop's next turn */
		tu->pending = kt_xrealloc(tu->pending, (tu->npending + 1) * sizeof *tu->pending);
		tu->pending[tu->npending++] = next;
	}
}


/* The fastest configurations task ta has so far, at most SIBLING_TOP, fastest first, as indices of
 * its evaluations in top: its choice once made, then its fastest fully timed evaluations that
 * passed.  Returns how many. */
static size_t fastest_so_far(const task *ta, long *top)
{
	const kt_tune_result *r = ta->r;
	size_t n = 0;
	if (ta->state == T_DONE && r->best >= 0)
		top[n++] = r->best;
	while (n < SIBLING_TOP) {
		long b = -1;
		for (size_t i = 0; i < r->nevals; i++) {
			const kt_eval *e = &r->evals[i];
			int taken = 0;
			for (size_t j = 0; j < n; j++)
				taken |= top[j] == (long)i;
			if (e->status == KT_OK && !e->raced && !taken && (b < 0 || e->median_us < r->evals[b].median_us))
				b = (long)i;
		}
		if (b < 0)
			break;
		top[n++] = b;
	}
	return n;
}

/* The other shapes of the same template and toolchain (the task's group) tune the same
 * parameters.  Before task k chooses, the fastest configurations each of them has so far are
 * evaluated at its shape too, where feasible and not evaluated yet (their variants are compiled
 * already): a search that stopped in one place still sees what the others found, so that two
 * tunings of one project choose alike wherever a sibling's find is the better one.  Rank by rank:
 * every sibling's fastest, then their second and third while fewer than SIBLING_MAX were asked,
 * so that a large group (gemm_sm90's 20 shapes of a type) costs no more than its bests.  Not for a
 * user's --config list.  Returns how many were asked. */
static size_t ask_siblings(tuner *tu, int k)
{
	task *ta = &tu->tasks[k];
	size_t n = 0;
	ta->siblings_asked = 1;
	if (ta->tt->nonly > 0)
		return 0;
	long(*top)[SIBLING_TOP] = kt_xcalloc(tu->ntasks, sizeof *top);
	size_t *ntop = kt_xcalloc(tu->ntasks, sizeof *ntop);
	for (size_t j = 0; j < tu->ntasks; j++) {
		const task *sb = &tu->tasks[j];
		ntop[j] = (int)j == k || sb->group != ta->group || sb->t != ta->t ? 0 : fastest_so_far(sb, top[j]);
	}
	for (size_t q = 0; q < SIBLING_TOP; q++)
		for (size_t j = 0; j < tu->ntasks && (q == 0 || n < SIBLING_MAX); j++) {
			long idx = q < ntop[j] ? kt_space_find(ta->space, tu->tasks[j].r->evals[top[j][q]].cfg) : -1;
			if (idx >= 0 && ta->ev_of[idx] == -1) {
				tu_enqueue(tu, k, (size_t)idx, &tu->later);
				n++;
			}
		}
	free(ntop);
	free(top);
	tu->st.sibling_evals += (int)n;
	return n;
}

/* The siblings of task ta (ask_siblings) have stopped searching: each is done, failed, or
 * draining with nothing of its own search in flight.  So what they found is known, whatever order
 * their compiles and measurements came in. */
static int siblings_settled(const tuner *tu, const task *ta)
{
	for (size_t j = 0; j < tu->ntasks; j++) {
		const task *sb = &tu->tasks[j];
		if (sb == ta || sb->group != ta->group || sb->t != ta->t || sb->state == T_DONE || sb->state == T_FAILED)
			continue;
		if (sb->state != T_DRAINING || (sb->inflight && !sb->siblings_asked))
			return 0;
	}
	return 1;
}

/* Moves a task that should stop to draining, and one that is draining with nothing in flight,
 * once its siblings stopped searching too, to their best configurations, then to done. */
int tu_update_state(tuner *tu, task *ta, int may_finish)
{
	char why[96];
	const char *s;
	if (ta->state == T_ASKING && (s = tu_stop_reason(tu, ta, why, sizeof why))) {
		snprintf(ta->r->stop, sizeof ta->r->stop, "%s", s);
		ta->state = T_DRAINING;
	}
	if (ta->state == T_DRAINING && ta->inflight == 0 && !ta->siblings_asked) {
		if (ta->tt->nonly == 0 && !siblings_settled(tu, ta))
			return 0;
		ask_siblings(tu, (int)(ta - tu->tasks));
	}
	if (ta->state != T_DRAINING || ta->inflight != 0 || confirm_rivals(tu, ta) || !may_finish)
		return 0;
	tu_finish_task(tu, ta);
	return 1;
}

void tu_fail_task(task *ta, const kt_err *e)
{
	ta->state = T_FAILED;
	ta->err = *e;
	if (!ta->err.cls)
		ta->err.cls = KT_E_INTERNAL;
}
