/* generate.c - `kt generate` as a library call (see generate.h).
 *
 * One run holds a `gen` per kernel: the parsed template, the shapes, and per shape the chosen
 * configuration and where it came from.  The run goes in phases over all kernels: read (parse
 * and validate everything), look up (a hit decides a shape), tune (every miss of every kernel
 * in one batch), decide (the rest get the defaults), and only then write.
 */
#include "generate_int.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "emit.h"
#include "report.h"
#include "search.h"
#include "transfer.h"

/* Passes a note to the caller (the command prints it), unless quiet. */
void gen_note(const kt_generate_opts *o, const char *fmt, ...)
{
	if (o->quiet)
		return;
	va_list ap;
	va_start(ap, fmt);
	kt_vsay(o->note, o->note_ctx, fmt, ap);
	va_end(ap);
}

int kt_generate_parse_force(const char *spec, int nshapes, int *index, const char **cfgtext, kt_err *err)
{
	const char *colon = strchr(spec, ':');
	int64_t i;
	if (!colon || kt_parse_i64(spec, (size_t)(colon - spec), &i) != 0)
		return kt_fail(err, "--config '%s': expected SHAPE_INDEX:PARAM=VALUE,...", spec);
	if (i < 0 || i >= nshapes)
		return kt_fail(err, "--config '%s': shape index %lld is out of range (%d shape%s given)", spec,
			       (long long)i, nshapes, nshapes == 1 ? "" : "s");
	*index = (int)i;
	*cfgtext = colon + 1;
	return 0;
}

/* ---- reading ---------------------------------------------------------------------------------- */

static int check_kernel(const kt_generate_kernel *k, const kt_generate_opts *o, kt_err *err)
{
	if (!k->template_path || !k->template_path[0])
		return kt_fail(err, "no template given (--template FILE)");
	if (!k->name || !k->name[0])
		return kt_fail(err, "no kernel name given (--name NAME)");
	if (!kt_is_ident(k->name, strlen(k->name)))
		return kt_fail(err, "--name '%s': not a C identifier (letters, digits and '_', not starting with a digit)",
			       k->name);
	if (!k->outdir || !k->outdir[0])
		return kt_fail(err, "no output directory given (--out DIR)");
	kt_buf bad = {0};
	for (const char *a = k->arch ? k->arch : ""; *a;) {
		size_t n = strcspn(a, ";, ");
		char one[16];
		int sm, spec;
		snprintf(one, sizeof one, "%.*s", (int)(n < sizeof one ? n : sizeof one - 1), a);
		if (n && (n >= sizeof one || kt_arch_parse(one, &sm, &spec) != 0))
			kt_buf_printf(&bad, "%s'%.*s'", bad.len ? ", " : "", (int)n, a);
		a += n + (a[n] != 0);
	}
	if (bad.len) {
		int list = strcspn(k->arch, ";, ") < strlen(k->arch);
		kt_fail(err, "--arch '%s': %s%snot a compute capability (expected digits such as 90, or 90a for the "
			     "architecture-specific target%s)", k->arch, list ? kt_buf_str(&bad) : "", list ? " is " : "",
			list ? "; a list is separated by ';' or ','" : "");
		kt_buf_free(&bad);
		return -1;
	}
	for (int s = 0; s < KT_NMEASURE; s++) {
		kt_measure m;
		kt_err e = {0};
		if (k->measure[s] && kt_measure_set(&m, (kt_measure_setting)s, k->measure[s], &e))
			return kt_fail(err, "--%s: %s", kt_measure_infos[s].name, e.msg);
	}
	for (int i = 0; o->strategy && o->strategy[0] && strcmp(o->strategy, "auto"); i++) {
		const char *name = kt_search_strategy_name(i);
		if (!name)
			return kt_fail(err, "--strategy '%s': not a search strategy (kt tune --help lists them)", o->strategy);
		if (!strcmp(name, o->strategy))
			break;
	}
	return 0;
}

static int parse_shapes(gen *g, kt_err *err)
{
	const kt_tmpl *t = g->t;
	/* A template without shape symbols has one shape, the empty one. */
	g->n = g->k->nshapes > 0 ? g->k->nshapes : (t->nshapes == 0 ? 1 : 0);
	size_t ns = (size_t)(t->nshapes ? t->nshapes : 1), np = (size_t)(t->nparams ? t->nparams : 1);
	g->shapes = kt_xcalloc((size_t)g->n + 1, ns * sizeof *g->shapes);
	g->cfgs = kt_xcalloc((size_t)g->n + 1, np * sizeof *g->cfgs);
	g->forced = kt_xcalloc((size_t)g->n + 1, np * sizeof *g->forced);
	g->is_forced = kt_xcalloc((size_t)g->n + 1, sizeof *g->is_forced);
	g->decided = kt_xcalloc((size_t)g->n + 1, sizeof *g->decided);
	g->origin = kt_xcalloc((size_t)g->n + 1, sizeof *g->origin);
	g->key = kt_xcalloc((size_t)g->n + 1, sizeof *g->key);
	g->res = kt_xcalloc((size_t)g->n + 1, sizeof *g->res);
	for (int i = 0; i < g->n; i++)
		g->res[i].best = -1;
	for (int i = 0; i < g->k->nshapes; i++) {
		kt_err e = {0};
		if (kt_tmpl_parse_shape(t, g->k->shapes[i], shape_at(g, i), &e) != 0)
			return kt_fail(err, "--shape '%s': %s", g->k->shapes[i], e.msg);
	}
	return 0;
}

static int parse_forced(gen *g, kt_err *err)
{
	for (int k = 0; k < g->k->nconfigs; k++) {
		int i = 0;
		const char *text = NULL;
		kt_err e = {0};
		if (kt_generate_parse_force(g->k->configs[k], g->n, &i, &text, err) != 0)
			return -1;
		if (kt_tmpl_parse_config(g->t, text, cfg_at(g->forced, g, i), &e) != 0)
			return kt_fail(err, "--config '%s': %s", g->k->configs[k], e.msg);
		if (!kt_space_feasible(g->t, shape_at(g, i), cfg_at(g->forced, g, i)))
			return kt_fail(err, "--config '%s': the configuration is not feasible at shape %s", g->k->configs[k],
				       g->k->shapes[i]);
		g->is_forced[i] = 1;
	}
	return 0;
}

/* The default configuration ships wherever nothing better is known: it must fit every shape. */
static int check_defaults(gen *g, kt_err *err)
{
	const kt_tmpl *t = g->t;
	uint16_t def[KT_MAX_SLOTS];
	kt_tmpl_default_config(t, def);
	for (int i = 0; i < g->n; i++) {
		kt_val env[KT_MAX_SLOTS];
		kt_tmpl_env(t, shape_at(g, i), def, env);
		int r = kt_tmpl_violated(t, env);
		if (r < 0)
			continue;
		kt_buf sh = {0}, cf = {0};
		kt_tmpl_format_shape(t, shape_at(g, i), &sh);
		kt_tmpl_format_config(t, def, &cf);
		kt_fail(err, "%s:%d:%d: the default configuration (%s) violates '%s' at shape %s; change the defaults or the shape",
			t->path, t->req_loc[r].line, t->req_loc[r].col, kt_buf_str(&cf), t->req_text[r], kt_buf_str(&sh));
		kt_buf_free(&sh);
		kt_buf_free(&cf);
		return -1;
	}
	return 0;
}

/* Parses and validates table g of its kernel for its target (g->arch; "" for the generic table,
 * which takes the first of the build's targets); -1 with err (and parser diagnostics in diags). */
static int read_kernel(gen *g, kt_buf *diags, kt_err *err)
{
	const kt_generate_kernel *k = g->k;
	char first[16] = "";
	if (!g->gpu)
		snprintf(first, sizeof first, "%.*s", (int)strcspn(kt_buf_str(&g->kn->archs), ";"), kt_buf_str(&g->kn->archs));
	const char *arch = g->gpu ? g->arch : first;
	kt_tmpl_opts to = {.types = k->types, .ntypes = k->ntypes, .arch = arch[0] ? arch : NULL, .sms = g->gpu ? g->target.id.sms : 0};
	g->t = kt_tmpl_parse(k->template_path, &to, diags, err);
	if (!g->t)
		return -1;
	kt_measure given;
	kt_measure_unset(&given);
	for (int s = 0; s < KT_NMEASURE; s++)
		if (k->measure[s]) /* checked (check_kernel) */
			kt_measure_set(&given, (kt_measure_setting)s, k->measure[s], NULL);
	kt_measure_resolve(&given, &g->t->measure, &g->measure);
	if (parse_shapes(g, err) || parse_forced(g, err) || check_defaults(g, err))
		return -1;
	for (int i = 0; i < g->n; i++)
		if (g->is_forced[i]) {
			memcpy(cfg_at(g->cfgs, g, i), cfg_at(g->forced, g, i), (size_t)g->t->nparams * sizeof *g->cfgs);
			g->origin[i] = "forced";
			g->decided[i] = 1;
		}
	return 0;
}

/* ---- the cache ------------------------------------------------------------------------ */

/* Cache warnings (a corrupt record, a failing remote) are shown even with --quiet. */
static void cache_warning(void *ctx, const char *msg)
{
	const gen *g = ctx;
	kt_say(g->o->note, g->o->note_ctx, "kt: warning: %s", msg);
}

/* The identity of a GPU that is not here, from the first record that names it (memo: one walk of
 * the caches per name and run).  0 when no record names it. */
static int record_identity(run *rn, kt_cache *c, const char *name, kt_gpu_id *out)
{
	for (int i = 0; i < rn->nids; i++)
		if (!strcmp(rn->ids[i].name, name)) {
			*out = rn->ids[i].id;
			return rn->ids[i].found;
		}
	rn->ids = kt_xrealloc(rn->ids, (size_t)(rn->nids + 1) * sizeof *rn->ids);
	snprintf(rn->ids[rn->nids].name, sizeof rn->ids[rn->nids].name, "%s", name);
	rn->ids[rn->nids].found = kt_cache_find_gpu(c, name, &rn->ids[rn->nids].id);
	*out = rn->ids[rn->nids].id;
	return rn->ids[rn->nids++].found;
}

/* Opens table g's cache and finds its GPU's identity: the device's when it is here, else that of
 * the records that name it, else (except with --require-hit and KT_FARM, which need the records')
 * the one kt's table of known GPUs gives.  1 when the GPU is known, 0 when it is not (a note, or
 * under --require-hit an error), -1 on error. */
static int open_cache(run *rn, gen *g, kt_err *err)
{
	const kt_generate_opts *o = rn->o;
	const kt_generate_kernel *k = g->k;
	kt_cache_opts co = {.user_dir = k->cache_dir, .project_dir = k->project_cache, .remote = o->remote ? o->remote : "",
			    .read_only = o->read_only, .retune = g->primary ? o->retune : NULL, .warn = cache_warning,
			    .warn_ctx = g, .store_pause_ms = o->store_pause_ms};
	g->cache = kt_cache_open(&co, err);
	if (!g->cache)
		return -1;
	kt_gpu_id id;
	kt_target known;
	if (g->local) {
		kt_target_from_info(&rn->info, &g->target);
	} else if (record_identity(rn, g->cache, g->gpu, &id)) {
		kt_target_from_id(&id, &g->target);
	} else if (!o->require_hit && !(g->farm && farming(o)) && kt_target_lookup(g->gpu, &known, NULL) == 0 &&
		   record_identity(rn, g->cache, known.id.name, &id)) {
		kt_target_from_id(&id, &g->target); /* a short name ("H200") of a GPU that records name in full */
	} else if (!o->require_hit && !(g->farm && farming(o)) && kt_target_lookup(g->gpu, &known, NULL) == 0) {
		g->target = known;
		gen_note(o, "kt: %s: no cached record names the GPU '%s': its identity is kt's table's (%s, %d SMs), which "
			"its records may not share", g->who, g->gpu, known.id.name, known.id.sms);
	} else {
		kt_cache_close(g->cache, NULL);
		g->cache = NULL;
		if (o->require_hit)
			return kt_fail(err, "GPU '%s': no record in the user or project cache names this GPU, so its "
				       "identity (and every key) is unknown; tune on that GPU and commit the records "
				       "(kt cache promote)", g->gpu);
		gen_note(o, "kt: %s: no cached record names the GPU '%s': %s", g->who, g->gpu,
		     g->farm && farming(o) ? "its keys are unknown until the farm's records bring its identity"
					   : "it gets no table of its own");
		return 0;
	}
	kt_target_compile_arch(&g->target.id, kt_buf_str(&g->kn->archs), g->kn->specific, g->arch, sizeof g->arch);
	if (kt_key_compiler(k->nvcc && k->nvcc[0] ? k->nvcc : "nvcc", kt_cache_dir(g->cache, KT_TIER_USER),
			    !o->read_only, &g->compiler, err) != 0)
		return -1;
	g->tc = (kt_toolchain){k->nvcc, kt_buf_str(&g->compiler), g->arch, kt_buf_str(&g->kn->flags.keyed)};
	return 1;
}

static const char *const cache_origin[KT_NTIERS] = {"cache:user", "cache:project", "cache:remote"};

/* Looks shape i up and sets g->key[i]; on a hit decides it (configuration, origin, the record's
 * evaluations in g->res[i]).  -1 on error. */
static int lookup(gen *g, int i, kt_err *err)
{
	kt_key k = {0};
	kt_problem p = problem_at(g, i);
	if (kt_key_make(&p, &k, err) != 0)
		return -1;
	g->key[i] = kt_xstrdup(k.hex);
	kt_tier tier;
	if (kt_cache_lookup(g->cache, &k, &p, cfg_at(g->cfgs, g, i), &tier, &g->res[i])) {
		g->origin[i] = cache_origin[tier];
		g->decided[i] = 1;
	}
	kt_key_free(&k);
	return 0;
}

/* --require-hit: remembers a miss; every miss is reported together after the last shape. */
static void add_missing(run *rn, gen *g, int i)
{
	kt_buf_printf(&rn->missing, "\n  %s ", g->k->name);
	kt_tmpl_format_shape(g->t, shape_at(g, i), &rn->missing);
	if (g->gpu && g->kn->ngpus > 1)
		kt_buf_printf(&rn->missing, " on %s", g->target.id.name);
	kt_buf_printf(&rn->missing, "  key %s", g->key[i] ? g->key[i] : "(none: no GPU identity)");
	kt_key k = {0};
	kt_problem p = problem_at(g, i);
	kt_buf why = {0};
	if (g->cache && kt_key_make(&p, &k, NULL) == 0 && kt_cache_closest(g->cache, &k, &why))
		kt_buf_printf(&rn->missing, "\n    a record of this shape and GPU differs in %s", kt_buf_str(&why));
	kt_buf_free(&why);
	kt_key_free(&k);
	rn->nmissing++;
}

static int report_missing(run *rn, kt_err *err)
{
	const char *gpu = rn->o->gpu && rn->o->gpu[0] ? rn->o->gpu : NULL;
	kt_buf names = {0}, gpus = {0};
	for (int j = 0; j < rn->nk; j++)
		kt_buf_printf(&names, "%s%s", j ? ", " : "", rn->kn[j].k->name);
	for (int j = rn->nk; j < rn->n; j++)
		if (!strstr(kt_buf_str(&gpus), rn->g[j].target.id.name))
			kt_buf_printf(&gpus, "%s%s", gpus.len ? "', '" : "", rn->g[j].target.id.name);
	if (gpus.len)
		gpu = kt_buf_str(&gpus);
	int rc = kt_fail(err,
			 "cache miss with --require-hit (KT_REQUIRE_CACHE_HIT): %d of %d shape%s of %s %s no cached "
			 "configuration%s%s%s:%s\ntune them on a machine with that GPU and commit the records "
			 "(kt cache promote), or compare the key fields with kt cache explain",
			 rn->nmissing, rn->nshapes, rn->nshapes == 1 ? "" : "s", kt_buf_str(&names),
			 rn->nmissing == 1 ? "has" : "have", gpu ? " for GPU '" : " (no GPU here and no --gpu/KT_GPU)",
			 gpu ? gpu : "", gpu ? "'" : "", kt_buf_str(&rn->missing));
	kt_buf_free(&names);
	kt_buf_free(&gpus);
	return rc;
}

/* ---- the decision and the output ---------------------------------------------------------- */

/* Why table g's misses were not tuned here (for a note). */
static const char *untuned_why(const gen *g)
{
	return !g->gpu ? "no GPU" : !g->local ? "the GPU is not here to tune on" : "tuning is off (--no-tune)";
}

/* The shapes nothing decided in a table whose misses were not tuned (no GPU, another GPU's table,
 * tuning off), where the problem was tuned from another version of the template (edited since):
 * what that version chose stands in for the defaults (transfer.h).  Tuned or farmed misses are
 * the search's, seeded by it; with --require-hit a miss is the error. */
static void other_version_rest(run *rn, gen *g)
{
	const kt_generate_opts *o = rn->o;
	if (!g->cache || o->require_hit || (farming(o) ? g->farm : rn->tune && g->local))
		return;
	kt_other_version *e = kt_xcalloc((size_t)g->n + 1, sizeof *e);
	kt_problem *p = kt_xcalloc((size_t)g->n + 1, sizeof *p);
	int *at = kt_xcalloc((size_t)g->n + 1, sizeof *at);
	size_t n = 0;
	for (int i = 0; i < g->n; i++)
		if (!g->decided[i]) {
			p[n] = problem_at(g, i);
			e[n] = (kt_other_version){.p = &p[n], .cfg = cfg_at(g->cfgs, g, i)};
			at[n++] = i;
		}
	size_t remote = 0, found = kt_transfer_other_version_in(e, n, g->cache, &remote);
	for (size_t m = 0; m < n; m++)
		if (e[m].found) {
			g->origin[at[m]] = "other-version";
			g->decided[at[m]] = 1;
		}
	char from[64] = "";
	if (remote)
		snprintf(from, sizeof from, " (%zu of them from the remote cache)", remote);
	if (found)
		gen_note(o, "kt: %s: %s, and the template has changed since %zu of its %d shapes were tuned%s: what was tuned "
			"then stands in for the template defaults there (not a hit: tune again to refresh it)",
		     g->who, untuned_why(g), found, g->n, from);
	free(e);
	free(p);
	free(at);
}

/* The shapes nothing decided: with --require-hit a miss for the error, else the template
 * default with a note once per table.  The generic table of a kernel with GPU tables holds the
 * template defaults for any other GPU: nothing is missing there. */
static void default_rest(run *rn, gen *g)
{
	int quiet = !g->gpu && g->kn->ngpus > 0, missing = 0;
	for (int i = 0; i < g->n; i++) {
		if (g->decided[i])
			continue;
		if (rn->o->require_hit && !quiet)
			add_missing(rn, g, i);
		kt_tmpl_default_config(g->t, cfg_at(g->cfgs, g, i));
		g->origin[i] = "default";
		missing++;
	}
	if (!missing || g->noted_default || rn->o->require_hit || quiet)
		return;
	const char *why = untuned_why(g);
	if (!g->gpu)
		gen_note(rn->o, "kt: %s: %s and no cached configuration: using the template defaults", g->who, why);
	else if (missing < g->n)
		gen_note(rn->o, "kt: %s: %s and no cached configuration for %d of %d shapes: the template defaults there", g->who,
		     why, missing, g->n);
	else if (g->primary)
		gen_note(rn->o, "kt: %s: %s and no cached configuration: using the template defaults", g->who, why);
	else
		gen_note(rn->o, "kt: %s: %s and no cached configuration: no table of its own (it takes the nearest table of "
			    "its compute capability, else the template defaults)", g->who, why);
	g->noted_default = 1;
}

/* The fallback of a table (runtime shapes that no tuned shape fits): the configuration with the
 * smallest worst-case slowdown over the shapes with evaluations (tuned, or the records of hits:
 * the same either way), feasible at every shape; else NULL, the template default. */
static const uint16_t *robust_fallback(gen *g, uint16_t *cfg)
{
	const kt_tune_result **rs = kt_xcalloc((size_t)g->n + 1, sizeof *rs);
	size_t n = 0;
	double worst;
	for (int i = 0; i < g->n; i++)
		if (g->res[i].nevals > 0 && g->res[i].best >= 0)
			rs[n++] = &g->res[i];
	int ok = n > 0 && kt_tune_robust(g->t, rs, n, cfg, &worst) == 0;
	for (int i = 0; ok && i < g->n; i++)
		ok = kt_space_feasible(g->t, shape_at(g, i), cfg);
	free(rs);
	return ok ? cfg : NULL;
}

/* 1 when table g is emitted: the primary GPU's always (the one here, else --gpu's: its keys are
 * in the manifest, also for a farm or a CI to read), another GPU's when it knows more than the
 * template defaults; without a table, that GPU takes the nearest table of its compute capability. */
static int table_kept(const gen *g)
{
	if (g->primary)
		return 1;
	for (int i = 0; i < g->n; i++)
		if (g->origin[i] && strcmp(g->origin[i], "default"))
			return 1;
	return 0;
}

static kt_choice *choices_of(gen *g)
{
	kt_choice *ch = kt_xcalloc((size_t)g->n + 1, sizeof *ch);
	for (int i = 0; i < g->n; i++)
		ch[i] = (kt_choice){shape_at(g, i), cfg_at(g->cfgs, g, i), g->origin[i], g->key[i]};
	return ch;
}

/* Emits kernel j: its GPU tables that know something, and its generic table, which holds the
 * shapes' choices itself when no GPU table is left. */
static int emit_kernel(run *rn, int j, kt_err *err)
{
	gen *generic = &rn->g[j];
	kt_emit_table *tables = kt_xcalloc((size_t)rn->n + 1, sizeof *tables);
	kt_choice **chs = kt_xcalloc((size_t)rn->n + 1, sizeof *chs);
	uint16_t (*robust)[KT_MAX_SLOTS] = kt_xcalloc((size_t)rn->n + 1, sizeof *robust);
	int nt = 0;
	for (int u = rn->nk; u < rn->n; u++) {
		gen *g = &rn->g[u];
		if (g->kn != generic->kn)
			continue;
		if (!table_kept(g))
			continue; /* default_rest said why */
		const uint16_t *fb = robust_fallback(g, robust[nt]);
		chs[nt] = choices_of(g);
		tables[nt] = (kt_emit_table){g->t, &g->target.id, g->target.mem_gbs, g->arch, g->n, chs[nt], fb,
					     fb ? "robust" : "default"};
		nt++;
	}
	kt_choice *gch = nt ? NULL : choices_of(generic);
	uint16_t grobust[KT_MAX_SLOTS];
	const uint16_t *gfb = nt ? NULL : robust_fallback(generic, grobust);
	kt_buf nvcc = {0};
	kt_buf_printf(&nvcc, "%s %s", kt_buf_str(&generic->kn->flags.keyed), kt_buf_str(&generic->kn->flags.build));
	kt_emit_opts eo = {.name = generic->k->name, .outdir = generic->k->outdir, .nchoices = nt ? 0 : generic->n,
			   .choices = gch, .fallback = gfb, .fallback_origin = gfb ? "robust" : "default",
			   .ntables = nt, .tables = tables, .nvcc_flags = kt_buf_str(&nvcc)};
	int rc = kt_emit(generic->t, &eo, err);
	for (int i = 0; i < nt; i++)
		free(chs[i]);
	free(chs);
	free(gch);
	free(tables);
	free(robust);
	kt_buf_free(&nvcc);
	return rc;
}

static void gen_free(gen *g)
{
	for (int i = 0; i < g->n; i++) {
		free(g->key[i]);
		kt_tune_result_free(&g->res[i]);
	}
	free(g->key);
	free(g->res);
	free(g->origin);
	free(g->decided);
	free(g->is_forced);
	free(g->forced);
	free(g->cfgs);
	free(g->shapes);
	kt_tmpl_free(g->t);
	kt_cache_close(g->cache, NULL); /* statistics are best effort: a failure to count fails nothing */
	kt_buf_free(&g->compiler);
	kt_buf_free(&g->refactor);
}

/* After a run that tuned (and stored): the report of every shape with a record, and a link. */
static void write_report(run *rn)
{
	const kt_generate_opts *o = rn->o;
	int tuned = 0, nkeys = 0;
	const char **keys = kt_xcalloc((size_t)rn->nshapes + 1, sizeof *keys);
	kt_report_dir dirs[2] = {{NULL, "the user cache"}, {NULL, "the project cache"}};
	int ndirs = 0;
	for (int j = 0; j < rn->n; j++) {
		gen *g = &rn->g[j];
		for (int i = 0; i < g->n; i++) {
			tuned |= g->origin[i] && !strcmp(g->origin[i], "tuned");
			if (g->key[i] && g->origin[i] && (!strcmp(g->origin[i], "tuned") || !strncmp(g->origin[i], "cache:", 6)) &&
			    strcmp(g->origin[i], "cache:remote"))
				keys[nkeys++] = g->key[i];
		}
		if (g->cache && !ndirs) {
			dirs[ndirs++].path = kt_cache_dir(g->cache, KT_TIER_USER);
			if (kt_cache_dir(g->cache, KT_TIER_PROJECT))
				dirs[ndirs++].path = kt_cache_dir(g->cache, KT_TIER_PROJECT);
		}
	}
	if (tuned && nkeys && ndirs && !o->read_only) {
		kt_report_opts ro = {dirs, ndirs, NULL, NULL, keys, nkeys, NULL, o->report, NULL, NULL};
		kt_err e = {0};
		if (kt_report_write(&ro, NULL, &e) == 0)
			gen_note(o, "kt: the report of what was tuned: file://%s", o->report);
		else
			gen_note(o, "kt: warning: no report: %s", e.msg);
	}
	free(keys);
}

/* The flags and the build's targets of kernel kn: --arch's, and those the flags' arch flags name. */
static void read_flags(kern *kn)
{
	kt_flags_split(kn->k->flags, &kn->flags);
	kt_flags_add_archs(kn->k->arch ? kn->k->arch : "", &kn->archs);
	kt_flags_add_archs(kt_buf_str(&kn->flags.archs), &kn->archs);
}

/* Reads every kernel (its generic table); with several, each error names its kernel and all are
 * reported. */
static int read_all(run *rn, kt_buf *diags, kt_err *err)
{
	int bad = 0;
	kt_buf all = {0};
	for (int j = 0; j < rn->nk; j++) {
		gen *g = &rn->g[j];
		kt_err e = {0};
		read_flags(g->kn);
		if (check_kernel(g->k, rn->o, &e) == 0 && read_kernel(g, diags, &e) == 0) {
			g->kn->specific = kt_tmpl_arch_specific(g->t);
			continue;
		}
		if (!bad++)
			*err = e;
		kt_buf_printf(&all, "%s%s: %s", all.len ? "\n" : "", g->k->name ? g->k->name : "(no name)", e.msg);
	}
	if (bad > 1)
		kt_fail(err, "%d of %d kernels have errors:\n%s", bad, rn->nk, kt_buf_str(&all));
	else if (bad && rn->nk > 1) /* which kernel of the batch */
		kt_fail(err, "%s", kt_buf_str(&all));
	kt_buf_free(&all);
	return bad ? -1 : 0;
}

/* ---- the tables: which GPUs ------------------------------------------------------------------ */

/* The GPU models kernel k is generated for, into names (a copy of the text, split): --gpus (the
 * kernel's, else the run's), else the GPU here, else --gpu; none: the generic table alone. */
static int gpu_names(run *rn, const kt_generate_kernel *k, char **text, const char ***names)
{
	const char *list = k->gpus && k->gpus[0] ? k->gpus : rn->o->gpus && rn->o->gpus[0] ? rn->o->gpus : NULL;
	if (!list)
		list = rn->here ? rn->info.id.name : rn->o->gpu && rn->o->gpu[0] ? rn->o->gpu : "";
	*text = kt_xstrdup(list);
	*names = kt_xcalloc(strlen(list) / 2 + 2, sizeof **names);
	int n = 0;
	char *save = NULL;
	for (char *w = strtok_r(*text, ";,", &save); w; w = strtok_r(NULL, ";,", &save)) {
		while (*w == ' ')
			w++;
		for (char *e = w + strlen(w); e > w && e[-1] == ' '; e--)
			e[-1] = 0;
		int dup = !*w;
		for (int i = 0; i < n && !dup; i++)
			dup = !strcmp((*names)[i], w);
		if (!dup)
			(*names)[n++] = w;
	}
	return n;
}

/* The GPU that KT_RETUNE re-tunes and KT_FARM reaches: the one here, else --gpu. */
static int primary_gpu(const run *rn, const char *name)
{
	const char *target = rn->here ? rn->info.id.name : rn->o->gpu;
	return target && (kt_target_name_matches(target, name) || kt_target_name_matches(name, target));
}

/* Makes table g of kernel j for GPU name; 1 when made, 0 when its GPU is unknown (left out). */
static int make_table(run *rn, int j, gen *g, const char *name, int ngpus, kt_buf *diags, kt_err *err)
{
	gen *generic = &rn->g[j];
	*g = (gen){.k = generic->k, .o = rn->o, .kn = generic->kn, .gpu = name};
	g->local = rn->here && kt_target_name_matches(rn->info.id.name, name);
	g->primary = primary_gpu(rn, name);
	g->farm = g->primary && farming(rn->o);
	snprintf(g->who, sizeof g->who, "%s", g->k->name);
	if (ngpus > 1)
		snprintf(g->who, sizeof g->who, "%s for %s", g->k->name, g->local ? rn->info.id.name : name);
	int rc = open_cache(rn, g, err);
	if (rc == 0 && g->farm) /* the farm's GPU, of unknown identity: the generic table stands for it */
		generic->farm = 1;
	if (rc <= 0)
		return rc;
	if (read_kernel(g, diags, err) != 0)
		return -1;
	g->kn->ngpus++;
	return 1;
}

/* The GPU tables of every kernel, after their generic tables in rn->g. */
static int make_tables(run *rn, kt_buf *diags, kt_err *err)
{
	char **texts = kt_xcalloc((size_t)rn->nk + 1, sizeof *texts);
	const char ***names = kt_xcalloc((size_t)rn->nk + 1, sizeof *names);
	int *counts = kt_xcalloc((size_t)rn->nk + 1, sizeof *counts), total = rn->nk, rc = 0;
	for (int j = 0; j < rn->nk; j++)
		total += counts[j] = gpu_names(rn, rn->g[j].k, &texts[j], &names[j]);
	/* Tables hold their place from now on (a cache's warnings point at theirs). */
	rn->g = kt_xrealloc(rn->g, (size_t)(total + 1) * sizeof *rn->g);
	for (int j = 0; j < rn->nk; j++)
		rn->g[j].kn = &rn->kn[j];
	for (int j = 0; rc == 0 && j < rn->nk; j++)
		for (int i = 0; rc == 0 && i < counts[j]; i++) {
			int made = make_table(rn, j, &rn->g[rn->n], names[j][i], counts[j], diags, err);
			if (made == 0)
				gen_free(&rn->g[rn->n]);
			else
				rn->n++; /* made, or half made: freed with the rest */
			rc = made < 0 ? -1 : 0;
		}
	for (int j = 0; j < rn->nk; j++) {
		free(texts[j]);
		free(names[j]);
		rn->nshapes += rn->kn[j].ngpus ? 0 : rn->g[j].n; /* the shapes of its GPU tables, else its own */
	}
	for (int u = rn->nk; u < rn->n; u++)
		rn->nshapes += rn->g[u].n;
	free(texts);
	free(names);
	free(counts);
	return rc;
}

int kt_generate(const kt_generate_opts *o, kt_buf *diags, kt_err *err)
{
	run rn = {.o = o, .n = o->nkernels, .nk = o->nkernels};
	rn.kn = kt_xcalloc((size_t)rn.nk + 1, sizeof *rn.kn);
	rn.g = kt_xcalloc((size_t)rn.n + 1, sizeof *rn.g);
	for (int j = 0; j < rn.nk; j++) {
		rn.kn[j] = (kern){.k = &o->kernels[j]};
		rn.g[j] = (gen){.k = &o->kernels[j], .o = o, .kn = &rn.kn[j]};
		snprintf(rn.g[j].who, sizeof rn.g[j].who, "%s", o->kernels[j].name ? o->kernels[j].name : "");
	}
	int rc = rn.n > 0 ? read_all(&rn, diags, err) : kt_fail(err, "no kernel to generate");
	if (rc == 0)
		gen_local_gpu(&rn);
	if (rc == 0)
		rc = make_tables(&rn, diags, err);
	for (int j = 0; rc == 0 && j < rn.n; j++)
		for (int i = 0; rc == 0 && rn.g[j].cache && i < rn.g[j].n; i++)
			if (!rn.g[j].decided[i])
				rc = lookup(&rn.g[j], i, err);
	if (rc == 0 && farming(o))
		gen_farm_misses(&rn);
	else if (rc == 0 && rn.tune)
		rc = gen_tune_misses(&rn, err);
	for (int j = 0; rc == 0 && j < rn.n; j++) {
		other_version_rest(&rn, &rn.g[j]);
		default_rest(&rn, &rn.g[j]);
	}
	if (rc == 0 && rn.nmissing)
		rc = report_missing(&rn, err);
	for (int j = 0; rc == 0 && j < rn.nk; j++)
		rc = emit_kernel(&rn, j, err);
	if (rc == 0 && o->report)
		write_report(&rn);
	for (int j = 0; j < rn.n; j++)
		gen_free(&rn.g[j]);
	for (int j = 0; j < rn.nk; j++) {
		kt_flags_free(&rn.kn[j].flags);
		kt_buf_free(&rn.kn[j].archs);
	}
	free(rn.g);
	free(rn.kn);
	free(rn.ids);
	kt_buf_free(&rn.missing);
	return rc;
}
