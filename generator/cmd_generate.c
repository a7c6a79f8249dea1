/* cmd_generate.c - `kt generate`: options and environment to kt_generate_opts (see generate.h). */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "agent.h"
#include "cmd.h"
#include "generate.h"
#include "opt.h"

static const char usage[] = "kt generate --template FILE --name NAME --out DIR [--shape SPEC]... [options]";
static const char about[] =
	"Emits the variants, the launcher kt_NAME(), its header, a manifest and a CMake list for a\n"
	"kernel template, with one configuration per shape: from a cache, from tuning on this GPU,\n"
	"or the template's defaults.\n"
	"A miss is tuned within a budget (default 400 evaluations and 90 seconds per shape and tuning\n"
	"round; a value below 0 lifts the limit).\n"
	"Environment: KT_CACHE_DIR, KT_REMOTE_CACHE, KT_GPU, KT_RETUNE, KT_REQUIRE_CACHE_HIT,\n"
	"KT_TUNE_BUDGET, KT_TUNE_SECONDS, KT_TUNE_STRATEGY stand in for the options of the same\n"
	"meaning when these are not given.  KT_AGENT (off, builtin: the default, llm) chooses the\n"
	"planner between tuning rounds of a miss, KT_AGENT_ROUNDS their number (default 2).";

/* Truthy values of boolean environment variables (as CMake spells them, too). */
static int env_true(const char *v)
{
	static const char *const yes[] = {"1", "on", "yes", "true", "y"};
	for (size_t i = 0; v && i < sizeof yes / sizeof yes[0]; i++)
		if (!strcasecmp(v, yes[i]))
			return 1;
	return 0;
}

static int env_false(const char *v)
{
	static const char *const no[] = {"", "0", "off", "no", "false", "n"};
	for (size_t i = 0; v && i < sizeof no / sizeof no[0]; i++)
		if (!strcasecmp(v, no[i]))
			return 1;
	return 0;
}

static const char *env_or(const char *given, const char *var)
{
	const char *v = getenv(var);
	return given ? given : (v && v[0] ? v : NULL);
}

/* --retune with no value, or KT_RETUNE set to a true value, means every kernel ("*"). */
static const char *retune_pattern(const char *given)
{
	if (given)
		return given[0] ? given : "*";
	const char *v = getenv("KT_RETUNE");
	if (!v || env_false(v))
		return NULL;
	return env_true(v) ? "*" : v;
}

#define NOT_GIVEN LLONG_MIN

/* A number option not given on the command line (NOT_GIVEN) from variable var, else 0 (the
 * default); -1 naming the variable when its value is not an integer. */
static int env_number(long long *v, const char *var, kt_err *err)
{
	const char *s = getenv(var);
	int64_t n;
	if (*v != NOT_GIVEN)
		return 0;
	*v = 0;
	if (!s || !s[0])
		return 0;
	if (kt_parse_i64(s, strlen(s), &n) != 0)
		return kt_fail(err, "%s='%s': expected an integer", var, s);
	*v = n;
	return 0;
}

/* Options not given on the command line come from the environment. */
static void apply_environment(kt_generate_opts *o, const char *retune)
{
	o->cache_dir = env_or(o->cache_dir, "KT_CACHE_DIR");
	o->remote = env_or(o->remote, "KT_REMOTE_CACHE");
	o->gpu = env_or(o->gpu, "KT_GPU");
	o->retune = retune_pattern(retune);
	o->require_hit = o->require_hit || env_true(getenv("KT_REQUIRE_CACHE_HIT"));
	o->backend = env_or(NULL, "KT_TEST_GPU_BACKEND"); /* tests only: "fake" (tests/generate) */
	o->strategy = env_or(o->strategy, "KT_TUNE_STRATEGY");
}

static void print_note(void *ctx, const char *msg)
{
	(void)ctx;
	fprintf(stderr, "%s\n", msg);
}

int kt_cmd_generate(int argc, char **argv)
{
	kt_generate_opts o = {.note = print_note};
	kt_strlist shapes = {0}, types = {0}, configs = {0};
	const char *retune = NULL;
	long long budget = NOT_GIVEN, seconds = NOT_GIVEN;
	const kt_opt opts[] = {
		{"template", KT_OPT_STR, &o.template_path, "FILE", "the annotated kernel template (*.cu.tmpl)"},
		{"name", KT_OPT_STR, &o.name, "NAME", "the launcher is kt_NAME (a C identifier)"},
		{"out", KT_OPT_STR, &o.outdir, "DIR", "where the generated files go"},
		{"shape", KT_OPT_LIST, &shapes, "SPEC", "a shape to tune for, e.g. rows=4096,hidden=4096 (repeatable)"},
		{"type", KT_OPT_LIST, &types, "T=x", "choose a type symbol or an option, e.g. T=bfloat16 or LSE=base2 (repeatable)"},
		{"arch", KT_OPT_STR, &o.arch, "CC", "compute capability to compile for, e.g. 90 (90a: the architecture-specific target)"},
		{"nvcc", KT_OPT_STR, &o.nvcc, "PATH", "the CUDA compiler (default: nvcc in PATH)"},
		{"flags", KT_OPT_STR, &o.flags, "\"...\"", "extra nvcc code-generation flags, as the build uses them"},
		{"cache-dir", KT_OPT_STR, &o.cache_dir, "DIR", "the user cache (else $KT_CACHE_DIR, ~/.cache/kt)"},
		{"project-cache", KT_OPT_STR, &o.project_cache, "DIR", "the project's committed cache directory"},
		{"remote", KT_OPT_STR, &o.remote, "URL", "a remote HTTP cache (else $KT_REMOTE_CACHE)"},
		{"gpu", KT_OPT_STR, &o.gpu, "NAME", "the target GPU when none is present (else $KT_GPU)"},
		{"retune", KT_OPT_OPTVAL, &retune, "PATTERN", "ignore cache hits for kernels matching PATTERN (all if none)"},
		{"require-hit", KT_OPT_FLAG, &o.require_hit, NULL, "a cache miss is an error (for CI)"},
		{"read-only", KT_OPT_FLAG, &o.read_only, NULL, "never write to a cache"},
		{"no-tune", KT_OPT_FLAG, &o.no_tune, NULL, "never tune, even with a GPU"},
		{"budget", KT_OPT_INT, &budget, "N", "evaluations per tuned shape (default 400; < 0: the whole space)"},
		{"seconds", KT_OPT_INT, &seconds, "S", "wall seconds per tuned shape (default 90; < 0: no limit)"},
		{"strategy", KT_OPT_STR, &o.strategy, "NAME", "search strategy when tuning (default auto)"},
		{"quiet", KT_OPT_FLAG, &o.quiet, NULL, "no notes on stderr"},
		{"config", KT_OPT_LIST, &configs, "I:P=V,...",
		 "force shape I's configuration (0-based, in --shape order); for tests and hand-picking"},
		{0},
	};
	const char *pos[1];
	int npos;
	kt_err err = {0};
	kt_buf diags = {0};
	int rc = kt_opt_parse(opts, argc, argv, pos, 0, &npos, &err);
	if (rc == KT_OPT_HELP) {
		kt_opt_usage(stdout, usage, about, opts);
		rc = KT_EXIT_OK;
		goto out;
	}
	if (rc != 0) {
		rc = kt_opt_fail("generate", NULL, &err);
		goto out;
	}
	o.shapes = shapes.v;
	o.nshapes = shapes.n;
	o.types = types.v;
	o.ntypes = types.n;
	o.configs = configs.v;
	o.nconfigs = configs.n;
	apply_environment(&o, retune);
	if (env_number(&budget, "KT_TUNE_BUDGET", &err) != 0 || env_number(&seconds, "KT_TUNE_SECONDS", &err) != 0) {
		rc = kt_opt_fail("generate", NULL, &err);
		goto out;
	}
	kt_agent_cfg agent;
	if (kt_agent_cfg_from_env(&agent, &err) != 0) {
		rc = kt_opt_fail("generate", NULL, &err);
		goto out;
	}
	const char *rounds = getenv("KT_AGENT_ROUNDS");
	o.agent = &agent;
	o.agent_rounds = rounds && rounds[0] ? agent.rounds : 0; /* 0: generate's default */
	o.budget = (long)budget;
	o.seconds = (double)seconds;
	rc = kt_generate(&o, &diags, &err) == 0 ? KT_EXIT_OK : kt_opt_fail("generate", &diags, &err);
out:
	kt_buf_free(&diags);
	kt_strlist_free(&shapes);
	kt_strlist_free(&types);
	kt_strlist_free(&configs);
	return rc;
}
