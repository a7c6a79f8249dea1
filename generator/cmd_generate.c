/* cmd_generate.c - `kt generate`: options, a batch file and the environment to kt_generate_opts
 * (see generate.h). */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd.h"
#include "cmd_env.h"
#include "farm.h"
#include "generate.h"
#include "gpu.h"
#include "opt.h"

static const char usage[] = "kt generate --template FILE --name NAME --out DIR [--shape SPEC]... [options]\n"
			    "       kt generate --batch FILE [options]";
static const char about[] =
	"Emits the variants, the launcher kt_NAME(), its header, a manifest and a CMake list for a\n"
	"kernel template, with one configuration per shape: from a cache, from tuning on this GPU,\n"
	"from the cached records of another version of the template (where the shape is not tuned),\n"
	"or the template's defaults.  With --batch, for every kernel of FILE (blocks of the kernel\n"
	"options below, one argument per line, blocks separated by a line \"--\"), and the misses of\n"
	"all of them are tuned together, in one pipeline; --arch, --nvcc, --flags, --cache-dir,\n"
	"--project-cache, --l2 and --launch on the command line are then the defaults of the blocks that\n"
	"do not set them.\n"
	"Each kernel gets a table per GPU model (--gpus, else $KT_GPUS, else the GPU here, else --gpu):\n"
	"the GPU here tunes its misses, the others take what the caches hold; the launcher picks the\n"
	"table of the GPU it runs on.\n"
	"A miss is tuned within a budget (default 400 evaluations and 90 seconds per shape and tuning\n"
	"round; a value below 0 lifts the limit).  Environment (kt env): KT_CACHE_DIR, KT_REMOTE_CACHE,\n"
	"KT_GPU, KT_RETUNE, KT_REQUIRE_CACHE_HIT, KT_TUNE_BUDGET, KT_TUNE_SECONDS, KT_TUNE_STRATEGY,\n"
	"KT_TUNE_ALL_GPUS stand in for the options of the same meaning when these are not given;\n"
	"KT_AGENT (off, builtin: the default, llm) chooses the planner between tuning rounds of a miss,\n"
	"KT_TUNE_ROUNDS their number (default 2).  With --farm or KT_FARM, the misses are farmed out to\n"
	"a Slurm cluster's GPUs instead (kt farm, docs/farm.md).";

#define NOT_GIVEN LLONG_MIN

/* One kernel's options and the lists its strings live in. */
typedef struct kernel_args {
	kt_generate_kernel k;
	kt_strlist shapes, types, configs;
} kernel_args;

/* The run's options as given on the command line. */
typedef struct run_args {
	kt_generate_opts o;
	const char *retune, *batch;
	const char *farm, *farm_dir;   /* KT_FARM (farm.h) */
	long long budget, seconds;
	char llm_why[2048]; /* why KT_AGENT=llm has no model configuration */
} run_args;

#define KERNEL_OPTS(ka)                                                                                             \
	{"template", KT_OPT_STR, &(ka)->k.template_path, "FILE", "the annotated kernel template (*.cu.tmpl)"},         \
	{"name", KT_OPT_STR, &(ka)->k.name, "NAME", "the launcher is kt_NAME (a C identifier)"},                       \
	{"out", KT_OPT_STR, &(ka)->k.outdir, "DIR", "where the generated files go"},                                   \
	{"shape", KT_OPT_LIST, &(ka)->shapes, "SPEC", "a shape to tune for, e.g. rows=4096,hidden=4096 (repeatable)"}, \
	{"type", KT_OPT_LIST, &(ka)->types, "T=x", "choose a type symbol or an option, e.g. T=bfloat16 or LSE=base2 (repeatable)"},              \
	{"arch", KT_OPT_STR, &(ka)->k.arch, "CC[;CC...]",                                                             \
	 "the build's targets, e.g. 80;90a (90a: Hopper's architecture-specific target, for templates that need it)"}, \
	{"gpus", KT_OPT_STR, &(ka)->k.gpus, "NAME[;NAME...]",                                                          \
	 "the GPU models to generate a table for (default: $KT_GPUS, else the GPU here, else --gpu)"},                 \
	{"nvcc", KT_OPT_STR, &(ka)->k.nvcc, "PATH", "the CUDA compiler (default: nvcc in PATH)"},                     \
	{"flags", KT_OPT_STR, &(ka)->k.flags, "\"...\"", "the build's nvcc flags; architecture flags are left out (docs/cache.md)"}, \
	{"cache-dir", KT_OPT_STR, &(ka)->k.cache_dir, "DIR", "the user cache (else $KT_CACHE_DIR, ~/.cache/kt)"},      \
	{"project-cache", KT_OPT_STR, &(ka)->k.project_cache, "DIR", "the project's committed cache directory"},     \
	{"l2", KT_OPT_STR, &(ka)->k.measure[KT_MEASURE_L2], "cold|warm",                                            \
	 "time a miss with its inputs in DRAM (cold) or in the L2 (warm); default: the template's, else cold"},       \
	{"launch", KT_OPT_STR, &(ka)->k.measure[KT_MEASURE_LAUNCH], "stream|graph",                                 \
	 "time a miss's stream launches or CUDA-graph replays; default: the template's, else stream"}

#define CONFIG_OPT(ka)                                                                                             \
	{"config", KT_OPT_LIST, &(ka)->configs, "I:P=V,...",                                                          \
	 "force shape I's configuration (0-based, in --shape order); for tests and hand-picking"}

#define RUN_OPTS(ra)                                                                                                 \
	{"batch", KT_OPT_STR, &(ra)->batch, "FILE", "generate every kernel of FILE (see above)"},                        \
	{"remote", KT_OPT_STR, &(ra)->o.remote, "URL", "a remote HTTP cache (else $KT_REMOTE_CACHE)"},                   \
	{"gpu", KT_OPT_STR, &(ra)->o.gpu, "NAME", "the target GPU when none is present (else $KT_GPU)"},                 \
	{"retune", KT_OPT_OPTVAL, &(ra)->retune, "PATTERN", "ignore cache hits for kernels matching PATTERN (all if none)"}, \
	{"require-hit", KT_OPT_FLAG, &(ra)->o.require_hit, NULL, "a cache miss is an error (for CI)"},                   \
	{"read-only", KT_OPT_FLAG, &(ra)->o.read_only, NULL, "never write to a cache"},                                 \
	{"no-tune", KT_OPT_FLAG, &(ra)->o.no_tune, NULL, "never tune, even with a GPU"},                                 \
	{"budget", KT_OPT_INT, &(ra)->budget, "N", "evaluations per tuned shape (default 400; < 0: the whole space)"},  \
	{"seconds", KT_OPT_INT, &(ra)->seconds, "S", "wall seconds per tuned shape (default 90; < 0: no limit)"},      \
	{"strategy", KT_OPT_STR, &(ra)->o.strategy, "NAME", "search strategy when tuning (default auto)"},              \
	{"all-gpus", KT_OPT_FLAG, &(ra)->o.all_gpus, NULL,                                                              \
	 "tune on every GPU here of the first one's model, not the first alone (else $KT_TUNE_ALL_GPUS)"},               \
	{"report", KT_OPT_STR, &(ra)->o.report, "FILE", "after a run that tuned, its records' HTML report (kt report)"}, \
	{"trace", KT_OPT_STR, &(ra)->o.trace, "FILE", "after a run that tuned, where its time went, for Perfetto (kt tune --trace)"}, \
	{"farm", KT_OPT_STR, &(ra)->farm, "SPEC", "farm the misses out to Slurm instead of tuning here (docs/farm.md; else $KT_FARM)"}, \
	{"farm-dir", KT_OPT_STR, &(ra)->farm_dir, "DIR", "where the farm's lists, job scripts and logs go (default: <cache dir>/farm)"}, \
	{"quiet", KT_OPT_FLAG, &(ra)->o.quiet, NULL, "no notes on stderr"}

static void kernel_free(kernel_args *ka)
{
	kt_strlist_free(&ka->shapes);
	kt_strlist_free(&ka->types);
	kt_strlist_free(&ka->configs);
}

/* A batch block's unset options from the command line's. */
static void batch_defaults(kt_generate_kernel *k, const kt_generate_kernel *cmdline)
{
	const char **mine[] = {&k->arch, &k->gpus, &k->nvcc, &k->flags, &k->cache_dir, &k->project_cache,
			       &k->measure[KT_MEASURE_L2], &k->measure[KT_MEASURE_LAUNCH]};
	const char *const given[] = {cmdline->arch, cmdline->gpus, cmdline->nvcc, cmdline->flags, cmdline->cache_dir,
				     cmdline->project_cache, cmdline->measure[KT_MEASURE_L2],
				     cmdline->measure[KT_MEASURE_LAUNCH]};
	for (size_t i = 0; i < sizeof mine / sizeof mine[0]; i++)
		if (!*mine[i])
			*mine[i] = given[i];
}

/* The lists into the kernel, and the user cache's default. */
static int kernel_finish(kernel_args *ka, char **cache_dir, kt_err *err)
{
	ka->k.shapes = ka->shapes.v;
	ka->k.nshapes = ka->shapes.n;
	ka->k.types = ka->types.v;
	ka->k.ntypes = ka->types.n;
	ka->k.configs = ka->configs.v;
	ka->k.nconfigs = ka->configs.n;
	if (!ka->k.cache_dir && !*cache_dir && !(*cache_dir = kt_env_cache_dir(err)))
		return -1;
	if (!ka->k.cache_dir)
		ka->k.cache_dir = *cache_dir;
	return 0;
}

/* --batch FILE: splits it into argument vectors (blocks of lines; "--" ends a block) in *text
 * (the bytes, NULs for the newlines) and parses each block as one kernel's options. */
static int read_batch(const char *path, kt_buf *text, kernel_args **kas, int *n, kt_err *err)
{
	if (kt_read_file(path, text, err) != 0)
		return kt_fail(err, "--batch %s: %s", path, err->msg);
	*kas = NULL;
	*n = 0;
	char **argv = kt_xcalloc(text->len + 2, sizeof *argv);
	int argc = 1, rc = 0, line = 0;
	argv[0] = "generate";
	for (char *p = text->data, *end = text->data + text->len; rc == 0 && p < end;) {
		char *nl = memchr(p, '\n', (size_t)(end - p));
		if (nl)
			*nl = 0;
		line++;
		int last = !nl || nl + 1 >= end;
		if (strcmp(p, "--"))
			argv[argc++] = p;
		if (!strcmp(p, "--") || last) {
			if (argc > 1) {
				*kas = kt_xrealloc(*kas, (size_t)(*n + 1) * sizeof **kas);
				kernel_args *ka = &(*kas)[(*n)++];
				memset(ka, 0, sizeof *ka);
				const kt_opt opts[] = {KERNEL_OPTS(ka), CONFIG_OPT(ka), {0}};
				int npos;
				kt_err e = {0};
				if (kt_opt_parse(opts, argc, argv, NULL, 0, &npos, &e) != 0)
					rc = kt_fail(err, "--batch %s:%d: kernel %d: %s", path, line, *n, e.msg[0] ? e.msg : "--help is no kernel option");
			}
			argc = 1;
		}
		p = nl ? nl + 1 : end;
	}
	free(argv);
	if (rc == 0 && *n == 0)
		rc = kt_fail(err, "--batch %s: no kernel in it", path);
	return rc;
}

/* Options not given on the command line come from the environment. */
static int apply_environment(run_args *ra, kt_agent_cfg *agent, kt_llm_config *llm, kt_err *err)
{
	kt_generate_opts *o = &ra->o;
	o->remote = kt_env_or(o->remote, "KT_REMOTE_CACHE");
	o->gpu = kt_env_or(o->gpu, "KT_GPU");
	o->gpus = kt_env("KT_GPUS");
	if (ra->retune) { /* --retune with no value, or KT_RETUNE set true, means every kernel ("*") */
		o->retune = ra->retune[0] ? ra->retune : "*";
	} else {
		const char *v = kt_env("KT_RETUNE");
		o->retune = !v || kt_env_false_value(v) ? NULL : kt_env_true("KT_RETUNE") ? "*" : v;
	}
	o->require_hit = o->require_hit || kt_env_true("KT_REQUIRE_CACHE_HIT");
	o->all_gpus = o->all_gpus || kt_env_true("KT_TUNE_ALL_GPUS");
	o->backend = kt_env("KT_TEST_GPU_BACKEND"); /* tests: "fake" (test builds only) */
	o->no_nvrtc = kt_env("KT_NVRTC") && kt_env_false_value(kt_env("KT_NVRTC"));
	kt_err be = {0};
	if (o->backend && kt_gpu_backend_check(o->backend, &be))
		return kt_fail(err, "KT_TEST_GPU_BACKEND=%s: %s", o->backend, be.msg);
	o->strategy = kt_env_or(o->strategy, "KT_TUNE_STRATEGY");
	o->tmpdir = kt_env_tmpdir();
	long long pause = 0;
	if (kt_env_long("KT_TEST_STORE_PAUSE_MS", &pause, err)) /* tests: a crash window in a store */
		return -1;
	o->store_pause_ms = (long)pause;
	o->secret = kt_env_llm_key();
	if ((ra->budget == NOT_GIVEN && (ra->budget = 0, kt_env_long("KT_TUNE_BUDGET", &ra->budget, err))) ||
	    (ra->seconds == NOT_GIVEN && (ra->seconds = 0, kt_env_long("KT_TUNE_SECONDS", &ra->seconds, err))) ||
	    kt_env_agent(agent, err) || kt_env_tune_rounds(&o->rounds, err))
		return -1;
	o->budget = (long)ra->budget;
	o->seconds = (double)ra->seconds;
	o->planner = agent->mode;
	o->agent = *agent;
	kt_err le = {0};
	if (agent->mode == KT_AGENT_LLM && kt_env_llm(llm, &le) == 0) {
		o->llm = llm;
	} else if (agent->mode == KT_AGENT_LLM) { /* a note at the first miss: the built-in planner plans */
		snprintf(ra->llm_why, sizeof ra->llm_why, "%s", le.msg);
		o->llm_why = ra->llm_why;
	}
	return 0;
}

/* KT_FARM (--farm): the farm's settings, checked now; the kt the nodes run is this one.  The
 * strings made here go to owned[0..2) for the caller to free. */
static int farm_setup(run_args *ra, const char *cache_dir, kt_farm_opts *fo, kt_slurm *slurm, char **owned, kt_err *err)
{
	const char *spec = kt_env_or(ra->farm, "KT_FARM");
	kt_farm_spec parsed;
	if (!spec || kt_env_false_value(spec))
		return 0;
	if (kt_farm_spec_parse(spec, &parsed, err) != 0)
		return -1;
	kt_farm_spec_free(&parsed);
	if (!(owned[0] = kt_farm_self(err)))
		return -1;
	if (!ra->farm_dir)
		ra->farm_dir = owned[1] = kt_path_join(cache_dir, "farm");
	*slurm = kt_slurm_commands(ra->o.tmpdir);
	*fo = (kt_farm_opts){.spec = spec, .dir = ra->farm_dir, .kt = owned[0], .slurm = slurm};
	ra->o.farm = fo;
	return 0;
}

static void print_note(void *ctx, const char *msg)
{
	(void)ctx;
	fprintf(stderr, "%s\n", msg);
}

int kt_cmd_generate(int argc, char **argv)
{
	run_args ra = {.o = {.note = print_note}, .budget = NOT_GIVEN, .seconds = NOT_GIVEN};
	kernel_args one = {0}, *kas = NULL;
	int nk = 0;
	const kt_opt opts[] = {KERNEL_OPTS(&one), RUN_OPTS(&ra), CONFIG_OPT(&one), {0}};
	kt_err err = {0};
	kt_buf diags = {0}, batch = {0}, retired = {0};
	char *cache_dir = NULL;
	kt_agent_cfg agent;
	kt_llm_config llm;
	kt_farm_opts farm;
	kt_slurm slurm;
	char *farm_owned[2] = {NULL, NULL};
	int npos, rc = kt_opt_begin("generate", opts, argc, argv, NULL, 0, &npos, usage, about);
	if (rc >= 0)
		goto out;
	rc = 0;
	if (ra.batch && (one.k.template_path || one.k.name || one.k.outdir || one.shapes.n || one.types.n || one.configs.n))
		rc = kt_fail(&err, "--batch %s: --template, --name, --out, --shape, --type and --config go into the file, "
				   "not on the command line", ra.batch);
	if (rc == 0 && ra.batch)
		rc = read_batch(ra.batch, &batch, &kas, &nk, &err);
	else if (rc == 0)
		kas = &one, nk = 1;
	for (int j = 0; rc == 0 && ra.batch && j < nk; j++)
		batch_defaults(&kas[j].k, &one.k);
	for (int j = 0; rc == 0 && j < nk; j++)
		rc = kernel_finish(&kas[j], &cache_dir, &err);
	if (rc == 0)
		rc = apply_environment(&ra, &agent, &llm, &err);
	if (rc == 0)
		rc = farm_setup(&ra, kas[0].k.cache_dir, &farm, &slurm, farm_owned, &err);
	kt_env_retired(&retired);
	if (retired.len)
		fprintf(stderr, "kt: warning: %s", kt_buf_str(&retired));
	if (rc == 0) {
		kt_generate_kernel *ks = kt_xcalloc((size_t)nk + 1, sizeof *ks);
		for (int j = 0; j < nk; j++)
			ks[j] = kas[j].k;
		ra.o.kernels = ks;
		ra.o.nkernels = nk;
		rc = kt_generate(&ra.o, &diags, &err);
		free(ks);
	}
	rc = rc == 0 ? KT_EXIT_OK : kt_opt_fail("generate", &diags, &err);
out:
	for (int j = 0; kas && kas != &one && j < nk; j++)
		kernel_free(&kas[j]);
	if (kas != &one)
		free(kas);
	kernel_free(&one);
	kt_buf_free(&diags);
	kt_buf_free(&batch);
	kt_buf_free(&retired);
	free(cache_dir);
	free(farm_owned[0]);
	free(farm_owned[1]);
	return rc;
}
