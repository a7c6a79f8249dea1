/* cmd_env.c - every environment variable kt reads, in one table, read by the commands only
 * (see cmd_env.h). */
#include "cmd_env.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "cmd.h"
#include "opt.h"

typedef struct env_var {
	const char *name, *meaning;
} env_var;

/* Sorted by name (lint.environment keeps it so). */
static const env_var vars[] = {
	{"CI", "set on CI machines: the CMake module's KT_READ_ONLY defaults to ON"},
	{"HOME", "the user cache defaults to ~/.cache/kt"},
	{"KT_AGENT", "the planner between tuning rounds: off, builtin (default) or llm"},
	{"KT_AGENT_REPLIES", "model replies per agent task (kt refactor; default 4)"},
	{"KT_AGENT_TOKENS", "tokens per agent task, prompt and completion (default 400000; 0: no limit)"},
	{"KT_CACHE_DIR", "the user's tuning cache (else $XDG_CACHE_HOME/kt, else ~/.cache/kt)"},
	{"KT_DOC_DIR", "where kt refactor finds docs/template-language.md (else the installed or source copy)"},
	{"KT_FAKE_GPUS", "tests: the number of devices of the fake GPU backend (test builds only: kt-fake)"},
	{"KT_FAKE_GPU_NAME", "tests: the GPU model the fake GPU backend is, from kt's table of known GPUs (test builds only: kt-fake)"},
	{"KT_FAKE_LOG", "tests: a file where the fake GPU backend logs its launches (test builds only: kt-fake)"},
	{"KT_FARM", "farm the misses out to a Slurm cluster's GPUs instead of tuning here: ON or KEY=VALUE settings (docs/farm.md)"},
	{"KT_GPU", "the GPU to generate for when none is present, e.g. NVIDIA H200"},
	{"KT_GPUS", "the GPU models to generate a table for, ';'-separated (default: the GPU here, else KT_GPU)"},
	{"KT_LLM_API_KEY", "the model's API key (else OPENAI_API_KEY); never written anywhere"},
	{"KT_LLM_BASE_URL", "the model's OpenAI-compatible endpoint (else OPENAI_BASE_URL)"},
	{"KT_LLM_CONNECT_TIMEOUT", "seconds to connect to the model's endpoint"},
	{"KT_LLM_MAX_WAIT", "seconds all retries of one model call may wait in all"},
	{"KT_LLM_MODEL", "the model's name"},
	{"KT_LLM_RETRIES", "retries of a failed model call (0 to 100)"},
	{"KT_LLM_TIMEOUT", "seconds one model call may take"},
	{"KT_NVCC", "the CUDA compiler of kt refactor (else nvcc in PATH)"},
	{"KT_NVRTC", "0: tuning compiles every variant with nvcc, never with its toolkit's NVRTC (docs/search.md)"},
	{"KT_REMOTE_CACHE", "URL of a remote HTTP tuning cache (bazel-remote, nginx WebDAV)"},
	{"KT_REQUIRE_CACHE_HIT", "a cache miss is an error (CI)"},
	{"KT_RETUNE", "re-tune: ON (every kernel), OFF, or a kernel-name pattern"},
	{"KT_TEST_GPU_BACKEND", "tests: the GPU backend of kt generate: fake, in test builds only (kt-fake)"},
	{"KT_TEST_STORE_PAUSE_MS", "tests: a cache store waits this long before its rename (a crash window)"},
	{"KT_TUNE_ALL_GPUS", "ON: kt generate tunes on every GPU here of the first one's model, not the first alone"},
	{"KT_TUNE_BUDGET", "evaluations per shape when a miss is tuned (default 400; < 0: the whole space)"},
	{"KT_TUNE_ROUNDS", "tuning rounds per shape with a planner (default 2)"},
	{"KT_TUNE_SECONDS", "seconds per shape when a miss is tuned (default 90; < 0: no limit)"},
	{"KT_TUNE_STRATEGY", "the search strategy of kt generate (default auto)"},
	{"OPENAI_API_KEY", "the model's API key when KT_LLM_API_KEY is not set"},
	{"OPENAI_BASE_URL", "the model's endpoint when KT_LLM_BASE_URL is not set"},
	{"TMPDIR", "where temporary work directories are made (else /tmp)"},
	{"XDG_CACHE_HOME", "the user cache defaults to $XDG_CACHE_HOME/kt"},
};

/* Variables that were read once and what replaced them. */
static const env_var retired[] = {
	{"KT_AGENT_ROUNDS", "it meant two things and is split: KT_TUNE_ROUNDS (tuning rounds per shape) and "
			    "KT_AGENT_REPLIES (model replies per agent task)"},
};

static const env_var *find(const char *name)
{
	for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++)
		if (!strcmp(vars[i].name, name))
			return &vars[i];
	return NULL;
}

const char *kt_env(const char *name)
{
	if (!find(name)) { /* a broken invariant: every variable is documented in the table */
		fprintf(stderr, "kt: internal error: the environment variable %s is not in cmd_env.c's table\n", name);
		abort();
	}
	const char *v = getenv(name);
	return v && *v ? v : NULL;
}

const char *kt_env_or(const char *given, const char *name) { return given ? given : kt_env(name); }

int kt_env_true(const char *name)
{
	static const char *const yes[] = {"1", "on", "yes", "true", "y"};
	const char *v = kt_env(name);
	for (size_t i = 0; v && i < sizeof yes / sizeof yes[0]; i++)
		if (!strcasecmp(v, yes[i]))
			return 1;
	return 0;
}

int kt_env_false_value(const char *v)
{
	static const char *const no[] = {"", "0", "off", "no", "false", "n"};
	for (size_t i = 0; v && i < sizeof no / sizeof no[0]; i++)
		if (!strcasecmp(v, no[i]))
			return 1;
	return 0;
}

int kt_env_long(const char *name, long long *v, kt_err *err)
{
	const char *s = kt_env(name);
	int64_t n;
	if (!s)
		return 0;
	if (kt_parse_i64(s, strlen(s), &n) != 0)
		return kt_fail(err, "%s='%s': expected an integer", name, s);
	*v = n;
	return 0;
}

char *kt_env_cache_dir(kt_err *err)
{
	const char *v;
	if ((v = kt_env("KT_CACHE_DIR")))
		return kt_xstrdup(v);
	if ((v = kt_env("XDG_CACHE_HOME")))
		return kt_path_join(v, "kt");
	if ((v = kt_env("HOME")))
		return kt_path_join(v, ".cache/kt");
	return kt_fail(err, "no cache directory: set KT_CACHE_DIR (or XDG_CACHE_HOME or HOME)"), NULL;
}

const char *kt_env_tmpdir(void) { return kt_env("TMPDIR"); }

/* A count variable within [lo, hi] into *out (left alone when unset). */
static int env_count(const char *name, long lo, long hi, long *out, kt_err *err)
{
	const char *v = kt_env(name);
	int64_t x;
	if (!v)
		return 0;
	if (kt_parse_i64(v, strlen(v), &x) || x < lo || x > hi)
		return kt_fail(err, "%s='%s' is not a number from %ld to %ld", name, v, lo, hi);
	*out = (long)x;
	return 0;
}

int kt_env_agent(kt_agent_cfg *c, kt_err *err)
{
	kt_agent_cfg_defaults(c);
	const char *m = kt_env("KT_AGENT");
	if (m && kt_agent_mode_parse(m, &c->mode, err))
		return kt_fail(err, "KT_AGENT='%s': expected off, builtin or llm", m);
	long replies = c->replies;
	if (env_count("KT_AGENT_REPLIES", 1, KT_AGENT_MAX_REPLIES, &replies, err) ||
	    env_count("KT_AGENT_TOKENS", 0, 1000000000L, &c->tokens, err))
		return -1;
	c->replies = (int)replies;
	return 0;
}

int kt_env_tune_rounds(int *rounds, kt_err *err)
{
	long r = 0;
	if (env_count("KT_TUNE_ROUNDS", 1, 20, &r, err))
		return -1;
	*rounds = (int)r;
	return 0;
}

static const char *env_first(const char *a, const char *b)
{
	const char *v = kt_env(a);
	return v ? v : b ? kt_env(b) : NULL;
}

const char *kt_env_llm_key(void) { return env_first("KT_LLM_API_KEY", "OPENAI_API_KEY"); }

/* A non-negative number of seconds into milliseconds (left alone when unset). */
static int env_seconds(const char *name, long *ms, kt_err *err)
{
	const char *v = kt_env(name);
	if (!v)
		return 0;
	char *end;
	errno = 0;
	double s = strtod(v, &end);
	if (errno || *end || !(s >= 0) || s > 86400.0)
		return kt_fail(err, "%s='%s' is not a number of seconds (0 to 86400)", name, v);
	*ms = (long)llround(s * 1000.0);
	return 0;
}

int kt_env_llm(kt_llm_config *c, kt_err *err)
{
	kt_llm_config_defaults(c);
	c->base_url = env_first("KT_LLM_BASE_URL", "OPENAI_BASE_URL");
	c->model = kt_env("KT_LLM_MODEL");
	c->api_key = kt_env_llm_key();
	long retries = c->max_retries;
	if (env_seconds("KT_LLM_TIMEOUT", &c->timeout_ms, err) ||
	    env_seconds("KT_LLM_CONNECT_TIMEOUT", &c->connect_timeout_ms, err) ||
	    env_seconds("KT_LLM_MAX_WAIT", &c->max_wait_ms, err) || env_count("KT_LLM_RETRIES", 0, 100, &retries, err))
		return -1;
	c->max_retries = (int)retries;
	if (!c->base_url)
		return kt_fail(err, "no LLM endpoint: set KT_LLM_BASE_URL (or OPENAI_BASE_URL), e.g. "
				    "http://127.0.0.1:8080/v1");
	if (!c->model)
		return kt_fail(err, "no LLM model: set KT_LLM_MODEL");
	return 0;
}

void kt_env_retired(kt_buf *out)
{
	for (size_t i = 0; i < sizeof retired / sizeof retired[0]; i++) {
		const char *v = getenv(retired[i].name);
		if (v && *v)
			kt_buf_printf(out, "%s is no longer read: %s\n", retired[i].name, retired[i].meaning);
	}
}

static const char usage[] = "kt env";
static const char about[] = "Lists every environment variable kt reads, what it means, and its value here.";

int kt_cmd_env(int argc, char **argv)
{
	const kt_opt opts[] = {{0}};
	int npos = 0, rc = kt_opt_begin("env", opts, argc, argv, NULL, 0, &npos, usage, about);
	if (rc >= 0)
		return rc;
	for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++) {
		const char *v = getenv(vars[i].name);
		int secret = strstr(vars[i].name, "API_KEY") != NULL;
		printf("%-24s %s%s%s%s\n", vars[i].name, vars[i].meaning, v && *v ? " [set: " : "",
		       v && *v ? (secret ? "(hidden)" : v) : "", v && *v ? "]" : "");
	}
	return KT_EXIT_OK;
}
