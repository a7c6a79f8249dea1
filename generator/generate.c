/* generate.c - `kt generate` as a library call (see generate.h).
 *
 * One run holds a `gen`: the parsed template, the shapes, and per shape the chosen
 * configuration and where it came from.  The decision for one shape is made in choose_config()
 * alone; everything before it validates input, everything after it only writes.
 */
#include "generate.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "agent.h"
#include "cache.h"
#include "emit.h"
#include "provenance.h"
#include "rounds.h"
#include "search.h"
#include "space.h"
#include "tmpl.h"
#include "tune.h"

typedef struct gen {
	const kt_generate_opts *o;
	kt_tmpl *t;
	int n;                /* shapes */
	int64_t *shapes;      /* n * t->nshapes */
	uint16_t *cfgs;       /* n * t->nparams: the chosen configurations */
	uint16_t *forced;     /* n * t->nparams: configurations forced with --config */
	int *is_forced;       /* per shape */
	const char **origin;  /* per shape: "default", "cache:<tier>", "tuned", "forced" */
	char **key;           /* per shape: the cache key, or NULL */
	kt_tune_result *res;  /* per shape: the evaluations, tuned or from the record of a hit (else empty) */
	int noted_default;    /* the "using the template defaults" note was given */
	kt_cache *cache;      /* open when a GPU identity is known (keys can be made); else NULL */
	kt_target target;     /* the target GPU: the one here, else the one --gpu names (its identity from a record) */
	kt_toolchain tc;      /* the compiler (its identity a key field), the arch and flags as given */
	kt_llm *llm;          /* KT_AGENT=llm: the model, made at the first miss; NULL when it cannot be */
	int llm_tried;
	int tune;             /* a GPU is here and tuning is allowed: a miss is tuned (tune.h) */
	kt_buf compiler;      /* the compiler's identity, a key field */
	kt_buf missing;       /* --require-hit: one line per shape that missed */
	int nmissing;
	kt_buf refactor;      /* the template's kt refactor provenance for its records (empty: none) */
	int refactor_read;
} gen;

static int64_t *shape_at(const gen *g, int i) { return g->shapes + (size_t)i * (size_t)g->t->nshapes; }
static uint16_t *cfg_at(uint16_t *base, const gen *g, int i) { return base + (size_t)i * (size_t)g->t->nparams; }
static kt_problem problem_at(const gen *g, int i) { return (kt_problem){g->t, shape_at(g, i), &g->target, &g->tc}; }

static void note(gen *g, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Passes a note to the caller (the command prints it), unless quiet. */
static void note(gen *g, const char *fmt, ...)
{
	if (g->o->quiet || !g->o->note)
		return;
	kt_buf b = {0};
	va_list ap;
	va_start(ap, fmt);
	kt_buf_vprintf(&b, fmt, ap);
	va_end(ap);
	g->o->note(g->o->note_ctx, b.data);
	kt_buf_free(&b);
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

/* ---- input ---------------------------------------------------------------------------- */

static int parse_shapes(gen *g, kt_err *err)
{
	const kt_tmpl *t = g->t;
	/* A template without shape symbols has one shape, the empty one. */
	g->n = g->o->nshapes > 0 ? g->o->nshapes : (t->nshapes == 0 ? 1 : 0);
	size_t ns = (size_t)(t->nshapes ? t->nshapes : 1), np = (size_t)(t->nparams ? t->nparams : 1);
	g->shapes = kt_xcalloc((size_t)g->n + 1, ns * sizeof *g->shapes);
	g->cfgs = kt_xcalloc((size_t)g->n + 1, np * sizeof *g->cfgs);
	g->forced = kt_xcalloc((size_t)g->n + 1, np * sizeof *g->forced);
	g->is_forced = kt_xcalloc((size_t)g->n + 1, sizeof *g->is_forced);
	g->origin = kt_xcalloc((size_t)g->n + 1, sizeof *g->origin);
	g->key = kt_xcalloc((size_t)g->n + 1, sizeof *g->key);
	g->res = kt_xcalloc((size_t)g->n + 1, sizeof *g->res);
	for (int i = 0; i < g->n; i++)
		g->res[i].best = -1;
	for (int i = 0; i < g->o->nshapes; i++) {
		kt_err e = {0};
		if (kt_tmpl_parse_shape(t, g->o->shapes[i], shape_at(g, i), &e) != 0)
			return kt_fail(err, "--shape '%s': %s", g->o->shapes[i], e.msg);
	}
	return 0;
}

static int parse_forced(gen *g, kt_err *err)
{
	for (int k = 0; k < g->o->nconfigs; k++) {
		int i = 0;
		const char *text = NULL;
		kt_err e = {0};
		if (kt_generate_parse_force(g->o->configs[k], g->n, &i, &text, err) != 0)
			return -1;
		if (kt_tmpl_parse_config(g->t, text, cfg_at(g->forced, g, i), &e) != 0)
			return kt_fail(err, "--config '%s': %s", g->o->configs[k], e.msg);
		if (!kt_space_feasible(g->t, shape_at(g, i), cfg_at(g->forced, g, i)))
			return kt_fail(err, "--config '%s': the configuration is not feasible at shape %s", g->o->configs[k],
				       g->o->shapes[i]);
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

/* ---- the cache ------------------------------------------------------------------------ */

/* Cache warnings (a corrupt record, a failing remote) are shown even with --quiet. */
static void cache_warning(void *ctx, const char *msg)
{
	const gen *g = ctx;
	if (!g->o->note)
		return;
	kt_buf b = {0};
	kt_buf_printf(&b, "kt: warning: %s", msg);
	g->o->note(g->o->note_ctx, b.data);
	kt_buf_free(&b);
}

/* A GPU on this machine: its identity is the keys' whatever the options say.  Tuning a miss is
 * allowed unless --no-tune or --require-hit (CI must not tune); read-only tunes but stores nothing. */
static int local_gpu(gen *g)
{
	char why[256];
	kt_gpu_info info;
	kt_err e = {0};
	if (kt_tune_gpus(g->o->backend, why, sizeof why) <= 0 || kt_tune_gpu_info(g->o->backend, 0, &info, &e) != 0)
		return 0;
	kt_target_from_info(&info, &g->target);
	g->tune = !g->o->no_tune && !g->o->require_hit;
	return 1;
}

/* Opens the cache when keys can be made: with a GPU here, or with the target GPU named by --gpu /
 * KT_GPU, whose identity comes from its records (a machine without a GPU, e.g. CI).  Neither:
 * nothing to look up. */
static int open_cache(gen *g, kt_err *err)
{
	const kt_generate_opts *o = g->o;
	int here = local_gpu(g);
	if (!here && (!o->gpu || !o->gpu[0]))
		return 0;
	kt_cache_opts co = {.user_dir = o->cache_dir, .project_dir = o->project_cache, .remote = o->remote,
			    .read_only = o->read_only, .retune = o->retune, .warn = cache_warning, .warn_ctx = g};
	g->cache = kt_cache_open(&co, err);
	if (!g->cache)
		return -1;
	kt_gpu_id id;
	if (!here && !kt_cache_find_gpu(g->cache, o->gpu, &id)) {
		kt_cache_close(g->cache, NULL);
		g->cache = NULL;
		if (o->require_hit)
			return kt_fail(err, "--gpu '%s': no record in the user or project cache names this GPU, so its "
				       "identity (and every key) is unknown; tune on that GPU and commit the records "
				       "(kt cache promote)", o->gpu);
		note(g, "kt: %s: no cached record names the GPU '%s': using the template defaults", o->name, o->gpu);
		g->noted_default = 1;
		return 0;
	}
	if (!here)
		kt_target_from_id(&id, &g->target);
	if (kt_key_compiler(o->nvcc && o->nvcc[0] ? o->nvcc : "nvcc", kt_cache_dir(g->cache, KT_TIER_USER),
			    !o->read_only, &g->compiler, err) != 0)
		return -1;
	g->tc = (kt_toolchain){o->nvcc, kt_buf_str(&g->compiler), o->arch ? o->arch : "", o->flags ? o->flags : ""};
	return 0;
}

static const char *const cache_origin[KT_NTIERS] = {"cache:user", "cache:project", "cache:remote"};

static int make_key(gen *g, int i, kt_key *k, kt_err *err)
{
	kt_problem p = problem_at(g, i);
	return kt_key_make(&p, k, err);
}

/* Looks shape i up and sets g->key[i].  1 on a hit (cfg, g->origin[i] and the record's evaluations
 * in g->res[i] filled), 0 on a miss. */
static int cached_config(gen *g, int i, uint16_t *cfg, kt_err *err)
{
	kt_key k = {0};
	if (make_key(g, i, &k, err) != 0)
		return -1;
	g->key[i] = kt_xstrdup(k.hex);
	kt_tier tier;
	kt_problem p = problem_at(g, i);
	int hit = kt_cache_lookup(g->cache, &k, &p, cfg, &tier, &g->res[i]);
	if (hit)
		g->origin[i] = cache_origin[tier];
	kt_key_free(&k);
	return hit;
}

/* --require-hit: remembers a miss; every miss is reported together after the last shape. */
static void add_missing(gen *g, int i)
{
	kt_buf_printf(&g->missing, "\n  %s ", g->o->name);
	kt_tmpl_format_shape(g->t, shape_at(g, i), &g->missing);
	kt_buf_printf(&g->missing, "  key %s", g->key[i] ? g->key[i] : "(none: no GPU identity)");
	g->nmissing++;
}

static int report_missing(gen *g, kt_err *err)
{
	const char *gpu = g->o->gpu && g->o->gpu[0] ? g->o->gpu : NULL;
	return kt_fail(err,
		       "cache miss with --require-hit (KT_REQUIRE_CACHE_HIT): %d of %d shape%s of %s %s no cached "
		       "configuration%s%s%s:%s\ntune them on a machine with that GPU and commit the records "
		       "(kt cache promote), or compare the key fields with kt cache explain",
		       g->nmissing, g->n, g->n == 1 ? "" : "s", g->o->name, g->nmissing == 1 ? "has" : "have",
		       gpu ? " for GPU '" : " (no GPU here and no --gpu/KT_GPU)", gpu ? gpu : "", gpu ? "'" : "",
		       kt_buf_str(&g->missing));
}

/* ---- tuning on a miss ------------------------------------------------------------------ */

/* The model of KT_AGENT=llm, made once; without one (no endpoint) the rounds use the built-in
 * planner and say so in their notes. */
static kt_llm *model(gen *g)
{
	kt_llm_config lc;
	kt_err e = {0};
	if (!g->llm_tried && (kt_llm_config_from_env(&lc, &e) != 0 || !(g->llm = kt_llm_new(&lc, &e))))
		note(g, "kt: warning: %s: KT_AGENT=llm, but no model: %s; the built-in planner plans", g->o->name, e.msg);
	g->llm_tried = 1;
	return g->llm;
}

/* Tunes shape i into r: one kt_tune with KT_AGENT=off, else bounded rounds of tune -> plan ->
 * apply -> re-tune (rounds.h), whose choice must be one the template g->t can express (its
 * evaluations in g->t's indices, kt_rounds_result) and whose history is appended to history.
 * 0 with r filled (r->best -1 when nothing passed); -1 with err when tuning could not run. */
static int tune_shape(gen *g, int i, const kt_tune_opts *to, kt_tune_result *r, kt_buf *history, kt_err *err)
{
	const kt_agent_cfg *ac = g->o->agent;
	if (!ac || ac->mode == KT_AGENT_OFF)
		return kt_tune(g->t, shape_at(g, i), to, r, err);
	kt_llm *llm = ac->mode == KT_AGENT_LLM ? model(g) : NULL;
	kt_rounds rs;
	int n = g->o->agent_rounds > 0 ? g->o->agent_rounds : KT_GENERATE_ROUNDS;
	if (kt_rounds_run(g->t, shape_at(g, i), to, ac, llm, &g->target, n, &rs, err) != 0) {
		kt_rounds_free(&rs);
		return -1;
	}
	uint16_t cfg[KT_MAX_SLOTS];
	kt_buf why = {0};
	int k = kt_rounds_choose(&rs, g->t, cfg, &why);
	kt_rounds_result(&rs, g->t, k, cfg, r);
	kt_rounds_json(&rs, history);
	if (why.len)
		note(g, "kt: %s: %s", g->o->name, kt_buf_str(&why));
	kt_buf_free(&why);
	kt_rounds_free(&rs);
	return 0;
}

/* The "refactor" history of the records of a template that kt refactor wrote (provenance.h),
 * read at the first store; NULL for any other template.  The environment's API key is never
 * embedded. */
static const char *refactor_history(gen *g)
{
	if (!g->refactor_read)
		kt_provenance_json(g->t->path, g->t->src, g->t->srclen, kt_llm_env_key(), &g->refactor);
	g->refactor_read = 1;
	return g->refactor.len ? kt_buf_str(&g->refactor) : NULL;
}

/* Tunes shape i on this machine's GPU, stores the record and takes its choice.  1 when tuned;
 * 0 when tuning could not run or nothing passed (a note; the default is used); -1 on error. */
static int tuned_config(gen *g, int i, uint16_t *cfg, kt_err *err)
{
	const kt_generate_opts *o = g->o;
	char *words = kt_xstrdup(o->flags ? o->flags : "");
	const char **flags = kt_xcalloc(strlen(words) + 1, sizeof *flags);
	int nflags = 0;
	for (char *w = strtok(words, " \t"); w; w = strtok(NULL, " \t"))
		flags[nflags++] = w;
	kt_buf label = {0};
	kt_buf_printf(&label, "%s ", o->name);
	kt_tmpl_format_shape(g->t, shape_at(g, i), &label);
	kt_progress pr;
	kt_progress_init(&pr, o->quiet ? NULL : stderr, kt_buf_str(&label));
	kt_tune_opts to = {.nvcc = o->nvcc, .arch = o->arch && o->arch[0] ? o->arch : NULL, .flags = flags, .nflags = nflags,
			   .types = o->types, .ntypes = o->ntypes, .cache_dir = kt_cache_dir(g->cache, KT_TIER_USER),
			   .seed = 1, .backend = o->backend, .progress = &pr, .strategy = o->strategy,
			   .budget = o->budget == 0 ? KT_GENERATE_BUDGET : o->budget,
			   .seconds = o->seconds == 0 ? KT_GENERATE_SECONDS : o->seconds};
	kt_tune_result r;
	kt_err te = {0};
	kt_buf history = {0};
	int rc = 0;
	if (tune_shape(g, i, &to, &r, &history, &te) != 0) {
		note(g, "kt: %s: tuning %s failed: %s; using the template defaults", o->name, kt_buf_str(&label), te.msg);
		g->noted_default = 1;
	} else if (r.best < 0) {
		note(g, "kt: %s: no configuration passed the check at %s; using the template defaults", o->name,
		     kt_buf_str(&label));
		g->noted_default = 1;
	} else {
		kt_key k = {0};
		rc = make_key(g, i, &k, err);
		kt_record_history h = {refactor_history(g), history.len ? kt_buf_str(&history) : NULL};
		kt_problem p = problem_at(g, i);
		if (rc == 0 && kt_cache_store(g->cache, &k, &p, &r, &h, &te) != 0)
			note(g, "kt: warning: %s: the tuned record was not stored: %s", o->name, te.msg);
		if (rc == 0) {
			memcpy(cfg, r.evals[r.best].cfg, (size_t)g->t->nparams * sizeof *cfg);
			g->origin[i] = "tuned";
			g->res[i] = r; /* kept for the robust fallback */
			memset(&r, 0, sizeof r);
			rc = 1;
		}
		kt_key_free(&k);
	}
	kt_tune_result_free(&r);
	kt_buf_free(&history);
	kt_buf_free(&label);
	free(flags);
	free(words);
	return rc;
}

/* ---- the decision --------------------------------------------------------------------- */

/* Chooses the configuration of shape i: fills cfg, g->origin[i] and g->key[i].
 * Order: forced by --config; else a cache hit; else (a miss) tuned when a GPU is here and tuning
 * is allowed (stored in the cache); else the template default, with a note
 * once per kernel, or with --require-hit a miss remembered for the error after the last shape. */
static int choose_config(gen *g, int i, uint16_t *cfg, kt_err *err)
{
	const kt_tmpl *t = g->t;
	if (g->is_forced[i]) {
		memcpy(cfg, cfg_at(g->forced, g, i), (size_t)t->nparams * sizeof *cfg);
		g->origin[i] = "forced";
		return 0;
	}
	int hit = g->cache ? cached_config(g, i, cfg, err) : 0;
	if (hit != 0)
		return hit < 0 ? -1 : 0;
	int tuned = g->tune && g->cache ? tuned_config(g, i, cfg, err) : 0;
	if (tuned != 0)
		return tuned < 0 ? -1 : 0;
	if (g->o->require_hit)
		add_missing(g, i);
	kt_tmpl_default_config(t, cfg);
	g->origin[i] = "default";
	if (!g->noted_default && !g->o->require_hit) {
		note(g, "kt: %s: %s and no cached configuration: using the template defaults", g->o->name,
		     g->cache ? "tuning is off (--no-tune)" : "no GPU");
		g->noted_default = 1;
	}
	return 0;
}

/* ---- the run -------------------------------------------------------------------------- */

static int check_opts(const kt_generate_opts *o, kt_err *err)
{
	if (!o->template_path || !o->template_path[0])
		return kt_fail(err, "no template given (--template FILE)");
	if (!o->name || !o->name[0])
		return kt_fail(err, "no kernel name given (--name NAME)");
	if (!kt_is_ident(o->name, strlen(o->name)))
		return kt_fail(err, "--name '%s': not a C identifier (letters, digits and '_', not starting with a digit)",
			       o->name);
	if (!o->outdir || !o->outdir[0])
		return kt_fail(err, "no output directory given (--out DIR)");
	if (o->arch && o->arch[0] && kt_arch_check(o->arch, err) != 0)
		return -1;
	for (int i = 0; o->strategy && o->strategy[0] && strcmp(o->strategy, "auto"); i++) {
		const char *name = kt_search_strategy_name(i);
		if (!name)
			return kt_fail(err, "--strategy '%s': not a search strategy (kt tune --help lists them)", o->strategy);
		if (!strcmp(name, o->strategy))
			break;
	}
	return 0;
}

/* The fallback of the launcher (runtime shapes that no tuned shape fits): the configuration with
 * the smallest worst-case slowdown over the shapes with evaluations (tuned, or the records of
 * hits: the same either way), feasible at every shape; else NULL, the template default. */
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

static int emit_all(gen *g, kt_err *err)
{
	kt_choice *ch = kt_xcalloc((size_t)g->n + 1, sizeof *ch);
	for (int i = 0; i < g->n; i++)
		ch[i] = (kt_choice){shape_at(g, i), cfg_at(g->cfgs, g, i), g->origin[i], g->key[i]};
	uint16_t robust[KT_MAX_SLOTS];
	const uint16_t *fb = robust_fallback(g, robust);
	kt_emit_opts eo = {.name = g->o->name, .outdir = g->o->outdir, .nchoices = g->n, .choices = ch,
			   .fallback = fb, .fallback_origin = fb ? "robust" : "default"};
	int rc = kt_emit(g->t, &eo, err);
	free(ch);
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
	free(g->is_forced);
	free(g->forced);
	free(g->cfgs);
	free(g->shapes);
	kt_tmpl_free(g->t);
	kt_llm_free(g->llm);
	kt_cache_close(g->cache, NULL); /* statistics are best effort: a failure to count fails nothing */
	kt_buf_free(&g->compiler);
	kt_buf_free(&g->missing);
	kt_buf_free(&g->refactor);
}

int kt_generate(const kt_generate_opts *o, kt_buf *diags, kt_err *err)
{
	if (check_opts(o, err) != 0)
		return -1;
	kt_tmpl_opts to = {.types = o->types, .ntypes = o->ntypes, .arch = o->arch && o->arch[0] ? o->arch : NULL};
	gen g = {.o = o};
	g.t = kt_tmpl_parse(o->template_path, &to, diags, err);
	if (!g.t)
		return -1;
	int rc = parse_shapes(&g, err);
	if (rc == 0)
		rc = parse_forced(&g, err);
	if (rc == 0)
		rc = check_defaults(&g, err);
	if (rc == 0)
		rc = open_cache(&g, err);
	for (int i = 0; rc == 0 && i < g.n; i++)
		rc = choose_config(&g, i, cfg_at(g.cfgs, &g, i), err);
	if (rc == 0 && g.nmissing)
		rc = report_missing(&g, err);
	if (rc == 0)
		rc = emit_all(&g, err);
	gen_free(&g);
	return rc;
}
