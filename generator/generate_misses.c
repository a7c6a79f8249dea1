/* generate_misses.c - `kt generate`'s misses (generate.h): tuned here in one batch of every
 * table's misses, in rounds with the planner, or farmed out to Slurm (farm.h) while the closest
 * records' choices stand in.  Part of the generate module (generate_int.h). */
#include <stdlib.h>
#include <string.h>

#include "compile.h"
#include "farm.h"
#include "generate_int.h"
#include "proc.h"
#include "provenance.h"
#include "rounds.h"
#include "trace.h"
#include "transfer.h"

/* ---- tuning the misses ------------------------------------------------------------------ */

/* A GPU on this machine: its identity is the keys' whatever the options say.  Tuning a miss is
 * allowed unless --no-tune or --require-hit (CI must not tune); read-only tunes but stores nothing. */
void gen_local_gpu(run *rn)
{
	char why[256];
	kt_err e = {0};
	const char *backend = rn->o->backend;
	if (kt_tune_gpus(backend, why, sizeof why) <= 0 || kt_tune_gpu_info(backend, 0, &rn->info, &e) != 0)
		return;
	rn->here = 1;
	rn->tune = !rn->o->no_tune && !rn->o->require_hit;
}

/* The "refactor" history of the records of a template that kt refactor wrote (provenance.h),
 * read at the first store; NULL for any other template.  The key secret is never embedded. */
static const char *refactor_history(gen *g)
{
	if (!g->refactor_read)
		kt_provenance_json(g->t->path, g->t->src, g->t->srclen, g->o->secret, &g->refactor);
	g->refactor_read = 1;
	return g->refactor.len ? kt_buf_str(&g->refactor) : NULL;
}

/* The planner of the rounds, as the options choose; NULL: one round. */
static const kt_planner *planner(const kt_generate_opts *o, kt_agent_planner *ap, kt_planner *seam, kt_err *err)
{
	if (o->planner == KT_AGENT_OFF)
		return NULL;
	if (o->planner == KT_AGENT_BUILTIN)
		return &kt_planner_builtin;
	ap->cfg = o->agent;
	ap->llm = o->llm ? kt_llm_new(o->llm, err) : NULL;
	if (!ap->llm)
		gen_note(o, "kt: warning: KT_AGENT=llm, but no model: %s; the built-in planner plans", o->llm ? err->msg : o->llm_why);
	*seam = kt_agent_planner_seam(ap);
	return seam;
}

/* Takes a tuned shape's result: stores its record, decides the shape.  The rounds' choice must
 * be one the template can express (its evaluations in the template's indices). */
static void take_tuned(gen *g, int i, kt_rounds *rs, const kt_buf *label)
{
	const kt_generate_opts *o = g->o;
	uint16_t cfg[KT_MAX_SLOTS];
	kt_buf why = {0}, history = {0};
	int k = kt_rounds_choose(rs, g->t, cfg, &why);
	kt_tune_result r;
	kt_rounds_result(rs, g->t, k, cfg, &r);
	if (rs->n > 1 || o->planner != KT_AGENT_OFF)
		kt_rounds_json(rs, &history);
	if (why.len)
		gen_note(o, "kt: %s: %s", g->who, kt_buf_str(&why));
	if (r.best < 0) {
		gen_note(o, "kt: %s: no configuration passed the check at %s; using the template defaults", g->who,
		     kt_buf_str(label));
		g->noted_default = 1;
		kt_tune_result_free(&r);
	} else {
		kt_key key = {0};
		kt_err e = {0};
		kt_problem p = problem_at(g, i);
		kt_record_history h = {refactor_history(g), history.len ? kt_buf_str(&history) : NULL};
		if (kt_key_make(&p, &key, &e) != 0 || kt_cache_store(g->cache, &key, &p, &r, &h, &e) != 0)
			gen_note(o, "kt: warning: %s: the tuned record was not stored: %s", g->who, e.msg);
		kt_key_free(&key);
		memcpy(cfg_at(g->cfgs, g, i), r.evals[r.best].cfg, (size_t)g->t->nparams * sizeof *cfg);
		g->origin[i] = "tuned";
		g->decided[i] = 1;
		g->res[i] = r; /* kept for the robust fallback */
	}
	kt_buf_free(&why);
	kt_buf_free(&history);
}

/* Why tuning failed, on one line: the message's first line, and where it goes on with a
 * compiler's log (a variant that did not compile), the log's error line. */
static void why_failed(const char *msg, kt_buf *out)
{
	size_t n = strcspn(msg, "\n");
	kt_buf_add(out, msg, n);
	if (!msg[n])
		return;
	while (out->len && (out->data[out->len - 1] == ':' || out->data[out->len - 1] == ' '))
		out->data[--out->len] = 0;
	kt_buf_puts(out, ": ");
	kt_compile_first_error(msg + n + 1, out);
}

/* Tunes every miss of every kernel in one batch (each warm-started from its template's records)
 * and takes the results. */
int gen_tune_misses(run *rn, kt_err *err)
{
	const kt_generate_opts *o = rn->o;
	kt_rounds_task *tasks = kt_xcalloc((size_t)rn->nshapes + 1, sizeof *tasks);
	int *tg = kt_xcalloc((size_t)rn->nshapes + 1, sizeof *tg), *ts = kt_xcalloc((size_t)rn->nshapes + 1, sizeof *ts);
	kt_progress *pr = kt_xcalloc((size_t)rn->nshapes + 1, sizeof *pr);
	kt_buf *labels = kt_xcalloc((size_t)rn->nshapes + 1, sizeof *labels);
	uint16_t **seeds = kt_xcalloc((size_t)rn->nshapes + 1, sizeof *seeds);
	kt_problem *probs = kt_xcalloc((size_t)rn->nshapes + 1, sizeof *probs);
	size_t *nseeds = kt_xcalloc((size_t)rn->nshapes + 1, sizeof *nseeds);
	kt_buf *why = kt_xcalloc((size_t)rn->nshapes + 1, sizeof *why);
	size_t n = 0;
	for (int j = 0; j < rn->n; j++) {
		gen *g = &rn->g[j];
		if (!g->cache || !g->local)
			continue;
		const char *dirs[2] = {kt_cache_dir(g->cache, KT_TIER_USER), kt_cache_dir(g->cache, KT_TIER_PROJECT)};
		size_t first = n;
		for (int i = 0; i < g->n; i++) {
			if (g->decided[i])
				continue;
			kt_buf_printf(&labels[n], "%s ", g->k->name);
			kt_tmpl_format_shape(g->t, shape_at(g, i), &labels[n]);
			kt_progress_init(&pr[n], o->quiet ? NULL : stderr, kt_buf_str(&labels[n]));
			probs[n] = problem_at(g, i);
			tasks[n] = (kt_rounds_task){.p = probs[n], .label = kt_buf_str(&labels[n]), .progress = &pr[n]};
			tg[n] = j;
			ts[n++] = i;
		}
		/* The table's misses seeded from one pass over its caches' records. */
		kt_transfer_seeds_all(probs + first, n - first, dirs, 2, g->cache, seeds + first, nseeds + first, why + first);
		for (size_t m = first; m < n; m++) {
			tasks[m].seeds = seeds[m];
			tasks[m].nseeds = nseeds[m];
			if (nseeds[m])
				gen_note(o, "kt: %s: warm start from %zu configuration%s of %s", kt_buf_str(&labels[m]), nseeds[m],
				     nseeds[m] == 1 ? "" : "s", kt_buf_str(&why[m]));
			kt_buf_free(&why[m]);
		}
	}
	free(probs);
	free(nseeds);
	free(why);
	int alike = n && !o->all_gpus ? kt_tune_gpus_alike(o->backend) : 0;
	if (alike > 1)
		gen_note(o, "kt: %d GPUs here are %ss; the misses are measured on the first alone (KT_TUNE_ALL_GPUS=ON: on all "
			    "%d)", alike, rn->info.id.name, alike);
	kt_progress batch;
	kt_buf blabel = {0};
	kt_buf_printf(&blabel, "%s", n == 1 ? kt_buf_str(&labels[0]) : "");
	if (n > 1)
		kt_buf_printf(&blabel, "%zu shapes", n);
	kt_progress_init(&batch, o->quiet ? NULL : stderr, kt_buf_str(&blabel));
	kt_ceilings ceil = {0};
	kt_cache *c0 = n ? rn->g[tg[0]].cache : NULL; /* the GPU's measured ceilings, kept in the user cache */
	if (c0)
		kt_cache_ceilings(c0, &rn->g[tg[0]].target.id, &ceil);
	kt_tune_opts to = {.backend = o->backend, .seed = 1, .strategy = o->strategy, .tmpdir = o->tmpdir,
			   .budget = o->budget == 0 ? KT_GENERATE_BUDGET : o->budget,
			   .seconds = o->seconds == 0 ? KT_GENERATE_SECONDS : o->seconds, .progress = &batch,
			   .ceilings = &ceil, .no_nvrtc = o->no_nvrtc, .gpu = o->all_gpus ? -1 : 0};
	kt_agent_planner ap = {0};
	kt_planner seam;
	kt_err pe = {0};
	const kt_planner *pl = n ? planner(o, &ap, &seam, &pe) : NULL;
	int rounds = o->rounds > 0 ? o->rounds : KT_GENERATE_ROUNDS;
	kt_err te = {0};
	kt_tune_stats st = {0};
	to.stats = &st;
	double t0 = kt_now();
	to.trace = n && o->trace ? kt_trace_new(t0) : NULL;
	int rc = n ? kt_rounds_run(tasks, n, &to, pl, pl ? rounds : 1, &te) : 0;
	double secs = kt_now() - t0;
	kt_err we = {0};
	if (to.trace && kt_trace_write(to.trace, o->trace, &we) == 0)
		gen_note(o, "kt: where the tuning's time went (Perfetto, about:tracing): %s", o->trace);
	else if (to.trace)
		gen_note(o, "kt: warning: no timeline: %s", we.msg);
	kt_trace_free(to.trace);
	size_t evals = 0;
	for (size_t m = 0; m < n; m++)
		for (int k = 0; k < tasks[m].out.n; k++)
			evals += tasks[m].out.v[k].result.nevals;
	kt_buf gpus = {0}; /* where the jobs went, when more than one GPU measured */
	if (st.ngpus > 1) {
		kt_buf_printf(&gpus, "; GPUs:");
		kt_tune_stats_gpus(&st, &gpus);
	}
	if (n && rc == 0)
		gen_note(o, "kt: tuned %zu shape%s in %.1f s: %zu evaluations (%.0f/s), %d variants compiled (%d reused at "
			"another shape), %d raced; measuring %.1f s, waiting for nvcc %.1f s, setup %.1f s, the first "
			"measurement after %.1f s%s",
		     n, n == 1 ? "" : "s", secs, evals, secs > 0 ? (double)evals / secs : 0.0, st.compiled, st.reused,
		     st.raced, st.measure_s, st.compile_wait_s, st.setup_s, st.first_measure_s, kt_buf_str(&gpus));
	kt_buf_free(&gpus);
	if (n && rc == 0 && c0)
		kt_cache_ceilings_store(c0, &rn->g[tg[0]].target.id, &ceil);
	for (size_t m = 0; m < n; m++) {
		gen *g = &rn->g[tg[m]];
		if (rc != 0 || tasks[m].rc != 0) {
			kt_buf first = {0};
			why_failed(rc ? te.msg : tasks[m].err.msg, &first);
			gen_note(o, "kt: %s: tuning %s failed: %s; using the template defaults", g->who, kt_buf_str(&labels[m]),
			     kt_buf_str(&first));
			kt_buf_free(&first);
			g->noted_default = 1;
		} else {
			take_tuned(g, ts[m], &tasks[m].out, &labels[m]);
		}
		kt_rounds_free(&tasks[m].out);
		kt_buf_free(&labels[m]);
		free(seeds[m]);
	}
	kt_llm_free(ap.llm);
	kt_buf_free(&blabel);
	free(tasks);
	free(tg);
	free(ts);
	free(pr);
	free(labels);
	free(seeds);
	(void)err;
	return 0;
}

/* ---- farming the misses out (farm.h) ---------------------------------------------------------- */

/* Until the farm's records come: for each of table g's misses at[0..n) (shapes[] their labels),
 * the configuration of the closest record of its template (the first seed of the warm start),
 * else the template's default (default_rest). */
static void farm_meanwhile(gen *g, const int *at, const kt_buf *shapes, size_t n)
{
	const char *dirs[2] = {g->k->cache_dir, g->k->project_cache};
	kt_problem *p = kt_xcalloc(n + 1, sizeof *p);
	uint16_t **seeds = kt_xcalloc(n + 1, sizeof *seeds);
	size_t *ns = kt_xcalloc(n + 1, sizeof *ns);
	kt_buf *why = kt_xcalloc(n + 1, sizeof *why);
	for (size_t x = 0; x < n; x++)
		p[x] = problem_at(g, at[x]);
	kt_transfer_seeds_all(p, n, dirs, 2, g->cache, seeds, ns, why);
	for (size_t x = 0; x < n; x++) {
		size_t first = strcspn(kt_buf_str(&why[x]), ";"); /* the record of the first seed: the closest one */
		if (first < why[x].len)
			why[x].data[first] = 0;
		if (ns[x]) {
			memcpy(cfg_at(g->cfgs, g, at[x]), seeds[x], (size_t)g->t->nparams * sizeof *seeds[x]);
			g->origin[at[x]] = "transfer";
			g->decided[at[x]] = 1;
		}
		gen_note(g->o, "kt: %s %s: meanwhile %s%s", g->k->name, kt_buf_str(&shapes[x]),
		     ns[x] ? "the configuration of the closest record: " : "the template defaults", kt_buf_str(&why[x]));
		free(seeds[x]);
		kt_buf_free(&why[x]);
	}
	g->noted_default = 1;
	free(p);
	free(seeds);
	free(ns);
	free(why);
}

/* Writes every miss of every kernel to the farm's list and submits it (kt_farm_misses); a farm
 * that fails is a warning: the configure goes on with what it has. */
void gen_farm_misses(run *rn)
{
	const kt_generate_opts *o = rn->o;
	if (!rn->here && !(o->gpu && o->gpu[0])) {
		gen_note(o, "kt: warning: KT_FARM: no GPU here and no --gpu/KT_GPU: the farm's records would be of an unknown GPU, "
			"so nothing is farmed; KT_GPU names the GPU model that KT_FARM reaches");
		return;
	}
	size_t n = 0, cap = (size_t)rn->nshapes + 1;
	kt_farm_miss *m = kt_xcalloc(cap, sizeof *m);
	kt_buf *shapes = kt_xcalloc(cap, sizeof *shapes);
	gen **mg = kt_xcalloc(cap, sizeof *mg);
	int *mi = kt_xcalloc(cap, sizeof *mi);
	for (int j = 0; j < rn->n; j++)
		for (int i = 0; i < rn->g[j].n; i++) {
			gen *g = &rn->g[j];
			const kt_generate_kernel *k = g->k;
			if (g->decided[i] || !g->farm)
				continue;
			kt_tmpl_format_shape(g->t, shape_at(g, i), &shapes[n]);
			m[n] = (kt_farm_miss){.name = k->name, .template_path = k->template_path, .types = k->types,
					      .ntypes = k->ntypes, .arch = g->arch[0] ? g->arch : k->arch, .nvcc = k->nvcc,
					      .flags = kt_buf_str(&g->kn->flags.keyed), .project_cache = k->project_cache,
					      .shape = kt_buf_str(&shapes[n]), .key = g->key[i]};
			memcpy(m[n].measure, k->measure, sizeof m[n].measure); /* as given: the node resolves them again */
			mg[n] = g;
			mi[n++] = i;
		}
	kt_farm_list l = {.gpu = rn->here ? rn->info.id.name : o->gpu, .remote = o->remote, .farm = o->farm->spec,
			  .budget = o->budget, .seconds = o->seconds, .strategy = o->strategy, .misses = m, .n = n};
	kt_buf msg = {0};
	kt_err e = {0};
	if (n && kt_farm_misses(o->farm, &l, &msg, &e) == 0)
		gen_note(o, "kt: %s", msg.data);
	else if (n)
		gen_note(o, "kt: warning: KT_FARM: %zu miss%s could not be farmed out: %s", n, n == 1 ? "" : "es", e.msg);
	for (size_t x = 0, y; x < n; x = y) { /* the misses of one table are next to each other */
		for (y = x; y < n && mg[y] == mg[x]; y++)
			;
		farm_meanwhile(mg[x], mi + x, shapes + x, y - x);
	}
	for (size_t x = 0; x < n; x++)
		kt_buf_free(&shapes[x]);
	kt_buf_free(&msg);
	free(shapes);
	free(mg);
	free(mi);
	free(m);
}
