/* cache_driver.c - drives the cache module from test scripts, standing in for the tuner (which
 * needs a GPU): it stores a chosen configuration as if tuning had found it, and looks keys up.
 *
 *   cache_driver store  TEMPLATE SHAPE CONFIG   store CONFIG ("BLOCK=128,VEC=4", or "default")
 *   cache_driver lookup TEMPLATE SHAPE          prints "hit <tier> <config>" or "miss"
 *   cache_driver key    TEMPLATE SHAPE          prints the key
 *
 * The user cache and the remote come from KT_CACHE_DIR and KT_REMOTE_CACHE; KT_PROJECT_CACHE
 * names the project tier.  The key is made exactly as `kt generate` makes it, from
 * KT_DRIVER_GPU (the GPU name; the rest of the identity is an H200's), KT_DRIVER_NVCC,
 * KT_DRIVER_ARCH and KT_DRIVER_FLAGS.  Warnings go to stderr as "kt: warning: ...". */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cache.h"
#include "cmd_env.h"

static const char *env(const char *name, const char *dflt)
{
	const char *v = getenv(name);
	return v && *v ? v : dflt;
}

static void print_warning(void *ctx, const char *msg)
{
	(void)ctx;
	fprintf(stderr, "kt: warning: %s\n", msg);
}

static int run(const char *verb, const char *path, const char *shape_spec, const char *config, kt_err *err)
{
	kt_buf diags = {0}, compiler = {0};
	const char *arch = env("KT_DRIVER_ARCH", "");
	kt_tmpl_opts to = {.arch = arch[0] ? arch : NULL}; /* as kt generate --arch reads the template */
	kt_tmpl *t = kt_tmpl_parse(path, &to, &diags, err);
	fputs(kt_buf_str(&diags), stderr);
	kt_buf_free(&diags);
	if (!t)
		return -1;
	kt_gpu_id gpu = {"", 9, 0, 132, 52428800, 232448};
	snprintf(gpu.name, sizeof gpu.name, "%s", env("KT_DRIVER_GPU", "NVIDIA H200"));
	char *user = kt_env_cache_dir(err);
	long long pause = 0;
	if (!user || kt_env_long("KT_TEST_STORE_PAUSE_MS", &pause, err))
		return -1;
	kt_cache_opts co = {.user_dir = user, .project_dir = getenv("KT_PROJECT_CACHE"), .remote = kt_env("KT_REMOTE_CACHE"),
			    .store_pause_ms = (long)pause, .warn = print_warning};
	int64_t shape[KT_MAX_SLOTS];
	uint16_t cfg[KT_MAX_SLOTS];
	kt_key key = {0};
	kt_target target = {.id = gpu};
	kt_toolchain tc = {0};
	kt_problem p = {.tmpl = t, .shape = shape, .target = &target, .tc = &tc};
	kt_cache *c = kt_cache_open(&co, err);
	int rc = -1;
	if (c && kt_tmpl_parse_shape(t, shape_spec, shape, err) == 0 &&
	    kt_key_compiler(env("KT_DRIVER_NVCC", "nvcc"), kt_cache_dir(c, KT_TIER_USER), 1, &compiler, err) == 0) {
		tc = (kt_toolchain){NULL, kt_buf_str(&compiler), arch, env("KT_DRIVER_FLAGS", "")};
		rc = kt_key_make(&p, &key, err);
	}
	if (rc == 0 && !strcmp(verb, "key")) {
		printf("%s\n", key.hex);
	} else if (rc == 0 && !strcmp(verb, "lookup")) {
		kt_tier tier;
		if (kt_cache_lookup(c, &key, &p, cfg, &tier, NULL)) {
			kt_buf text = {0};
			kt_tmpl_format_config(t, cfg, &text);
			printf("hit %s %s\n", kt_tier_names[tier], kt_buf_str(&text));
			kt_buf_free(&text);
		} else {
			printf("miss\n");
		}
	} else if (rc == 0 && !strcmp(verb, "store") && config) {
		kt_eval e = {.cfg = cfg, .status = KT_OK, .median_us = 10.0, .spread_us = 0.1, .regs = -1,
			     .smem_static = -1, .local_bytes = -1};
		kt_tune_result r = {.nparams = t->nparams, .nevals = 1, .evals = &e, .best = 0, .strategy = "driver"};
		if (!strcmp(config, "default"))
			kt_tmpl_default_config(t, cfg);
		else
			rc = kt_tmpl_parse_config(t, config, cfg, err);
		if (rc == 0)
			rc = kt_cache_store(c, &key, &p, &r, NULL, err);
		if (rc == 0)
			printf("stored %s\n", key.hex);
	} else if (rc == 0) {
		rc = kt_fail(err, "usage: cache_driver store|lookup|key TEMPLATE SHAPE [CONFIG]");
	}
	kt_err cerr = {0};
	if (c && kt_cache_close(c, &cerr) != 0 && rc == 0)
		rc = -1, *err = cerr;
	kt_key_free(&key);
	kt_buf_free(&compiler);
	kt_tmpl_free(t);
	free(user);
	return rc;
}

int main(int argc, char **argv)
{
	kt_err err = {0};
	if (argc < 4) {
		fputs("usage: cache_driver store|lookup|key TEMPLATE SHAPE [CONFIG]\n", stderr);
		return 1;
	}
	if (run(argv[1], argv[2], argv[3], argc > 4 ? argv[4] : NULL, &err) != 0) {
		fprintf(stderr, "cache_driver: %s\n", err.msg);
		return err.cls == KT_E_INTERNAL ? 2 : 1;
	}
	return 0;
}
