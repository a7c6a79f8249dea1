/* test_roofline.c - the arithmetic ceilings of the roofline floor.  On the fake GPU (and the fake
 * compiler in unit/fake): a template whose flops say `tensor` gets its floor from the tensor-core
 * probe (the fake's kt_mma, 400 TFLOP/s), kept per GPU as "tensor_gflops" beside, and separate
 * from, the fp32 FMA rate "gflops"; a kept rate is used instead of a measurement; `kt tune` names
 * the rate of its floor; the unit changes the cache key (through the source hash).  With the real nvcc: the probe kernels compile for sm_75 (where kt_mma
 * is empty), sm_80 and sm_90, with every mma chain kept alive. */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cache.h"
#include "check.h"
#include "compile.h"
#include "key.h"
#include "proc.h"
#include "tune.h"

static const double FAKE_BW_GBS = 2000, FAKE_GFLOPS = 50000, FAKE_TENSOR_GFLOPS = 400000; /* gpu_fake.c */
static const double FLOPS = 1073741824.0; /* the flops line below at n = 4096 */

/* Writes unit/fake/scale.cu.tmpl with a flops line of the given unit ("" for none) to dir/name,
 * only its good configurations feasible; returns the path (owned). */
static char *write_template(const char *dir, const char *name, const char *unit)
{
	kt_buf text = {0}, out = {0};
	kt_err err = {0};
	char *path = kt_path_join(dir, name);
	if (kt_read_file(KT_FAKE_DIR "/scale.cu.tmpl", &text, &err))
		return path;
	const char *at = strstr(text.data, "// @kt bytes");
	CHECK(at != NULL);
	if (at) {
		kt_buf_add(&out, text.data, (size_t)(at - text.data));
		kt_buf_printf(&out, "// @kt flops     %s%s262144 * n\n// @kt require   MODE == \"good\"\n", unit, *unit ? " " : "");
		kt_buf_puts(&out, at);
		CHECK_INT(kt_write_atomic(path, out.data, out.len, &err), 0);
	}
	kt_buf_free(&text);
	kt_buf_free(&out);
	return path;
}

static kt_tmpl *parse(const char *path)
{
	kt_buf diags = {0};
	kt_err err = {0};
	kt_tmpl *t = kt_tmpl_parse(path, NULL, &diags, &err);
	if (!t)
		fprintf(stderr, "%s\n%s\n", kt_buf_str(&diags), err.msg);
	kt_buf_free(&diags);
	return t;
}

/* The fake GPU's identity, under which the ceilings are kept. */
static kt_gpu_id fake_id(void)
{
	kt_gpu_info gi;
	kt_err err = {0};
	kt_tune_gpu_info("fake", 0, &gi, &err);
	return gi.id;
}

static kt_cache *open_cache(const char *dir)
{
	kt_cache_opts co = {.user_dir = dir};
	kt_err err = {0};
	kt_cache *c = kt_cache_open(&co, &err);
	CHECK(c != NULL);
	return c;
}

/* Tunes t with the ceilings kept in cache (as kt generate and kt tune do). */
static int tune(const kt_tmpl *t, const char *cache, kt_tune_result *r)
{
	kt_cache *c = open_cache(cache);
	kt_gpu_id id = fake_id();
	kt_ceilings ceil;
	kt_cache_ceilings(c, &id, &ceil);
	kt_tune_opts o = {0};
	o.backend = "fake";
	o.exe = KT_EXE;
	o.timeout_s = 1.0;
	o.jobs = 2;
	o.budget = 3;
	o.seed = 7;
	o.ceilings = &ceil;
	o.near_floor = -1;
	int64_t shape[1] = {4096};
	kt_toolchain tc = {KT_FAKE_DIR "/fake_nvcc.py", "", "", ""};
	kt_problem p = {.tmpl = t, .shape = shape, .target = NULL, .tc = &tc};
	kt_err err = {0};
	int rc = kt_tune(&p, &o, r, &err);
	if (rc)
		fprintf(stderr, "kt_tune: %s\n", err.msg);
	else
		kt_cache_ceilings_store(c, &id, &ceil);
	kt_cache_close(c, NULL);
	return rc;
}

/* The kept ceiling what ("bw_gbs", "gflops", "tensor_gflops") of the fake GPU; 0 when not kept. */
static double kept(const char *cache, const char *what)
{
	kt_cache *c = open_cache(cache);
	kt_gpu_id id = fake_id();
	kt_ceilings ceil;
	kt_cache_ceilings(c, &id, &ceil);
	kt_cache_close(c, NULL);
	return !strcmp(what, "bw_gbs") ? ceil.bw_gbs : !strcmp(what, "gflops") ? ceil.gflops : ceil.tensor_gflops;
}

/* Replaces the kept value of what with v (as a GPU's ceilings that were measured before). */
static void set_kept(const char *cache, const char *what, double v)
{
	kt_cache *c = open_cache(cache);
	kt_gpu_id id = fake_id();
	kt_ceilings ceil;
	CHECK_INT(kt_cache_ceilings(c, &id, &ceil), 0);
	*(!strcmp(what, "bw_gbs") ? &ceil.bw_gbs : !strcmp(what, "gflops") ? &ceil.gflops : &ceil.tensor_gflops) = v;
	kt_cache_ceilings_store(c, &id, &ceil);
	kt_cache_close(c, NULL);
}

static int near(double a, double b) { return a > b * (1 - 1e-6) && a < b * (1 + 1e-6); }

static void test_ceilings(const char *dir)
{
	char cache[600];
	snprintf(cache, sizeof cache, "%s/cache", dir);
	char *tensor_path = write_template(dir, "tensor.cu.tmpl", "tensor"), *fma_path = write_template(dir, "fma.cu.tmpl", "");
	kt_tmpl *tensor = parse(tensor_path), *fma = parse(fma_path);
	CHECK(tensor && fma);
	if (!tensor || !fma)
		goto out;
	CHECK_INT(tensor->flops_unit, KT_FLOPS_TENSOR);
	CHECK_INT(fma->flops_unit, KT_FLOPS_FMA);

	/* The unit word is in the source, whose hash is a field of the key: the keys differ there. */
	int64_t shape[1] = {4096};
	kt_gpu_id gpu = {.name = "NVIDIA H200", .cc_major = 9, .sms = 132};
	kt_target target = {.id = gpu};
	kt_toolchain tc = {NULL, "nvcc", "sm_90", ""};
	kt_problem ki = {.tmpl = tensor, .shape = shape, .target = &target, .tc = &tc}, kf = ki;
	kf.tmpl = fma;
	kt_key a = {0}, b = {0};
	kt_err err = {0};
	CHECK_INT(kt_key_make(&ki, &a, &err), 0);
	CHECK_INT(kt_key_make(&kf, &b, &err), 0);
	CHECK(strcmp(a.hex, b.hex) != 0);
	const char *sa = strstr(kt_buf_str(&a.fields), "source="), *sb = strstr(kt_buf_str(&b.fields), "source=");
	CHECK(sa && sb && strncmp(sa, sb, strcspn(sa, "\n")) != 0);
	kt_key_free(&a);
	kt_key_free(&b);

	/* Tensor-core flops: the floor is flops / the kt_mma rate, which is kept under its own name. */
	kt_tune_result r;
	CHECK_INT(tune(tensor, cache, &r), 0);
	CHECK(near(r.flops_rate, FAKE_TENSOR_GFLOPS));
	CHECK(near(r.bw_gbs, FAKE_BW_GBS));
	CHECK(near(r.floor_us, FLOPS / (FAKE_TENSOR_GFLOPS * 1e3))); /* 2.68 us, over the 0.016 us of the bytes */
	CHECK(r.best >= 0 && r.evals[r.best].median_us > r.floor_us);
	kt_tune_result_free(&r);
	CHECK(near(kept(cache, "tensor_gflops"), FAKE_TENSOR_GFLOPS));
	CHECK(kept(cache, "gflops") == 0); /* the FMA rate was not needed */

	/* fp32 flops: the FMA rate, kept beside the tensor rate, which stays. */
	CHECK_INT(tune(fma, cache, &r), 0);
	CHECK(near(r.flops_rate, FAKE_GFLOPS));
	CHECK(near(r.floor_us, FLOPS / (FAKE_GFLOPS * 1e3)));
	kt_tune_result_free(&r);
	CHECK(near(kept(cache, "gflops"), FAKE_GFLOPS));
	CHECK(near(kept(cache, "tensor_gflops"), FAKE_TENSOR_GFLOPS));

	/* A kept tensor rate is used, not measured again; the FMA rate does not stand in for it. */
	set_kept(cache, "tensor_gflops", 200000);
	CHECK_INT(tune(tensor, cache, &r), 0);
	CHECK(near(r.flops_rate, 200000));
	CHECK(near(r.floor_us, FLOPS / (200000 * 1e3)));
	kt_tune_result_free(&r);
out:
	kt_tmpl_free(tensor);
	kt_tmpl_free(fma);
	free(tensor_path);
	free(fma_path);
}

/* `kt tune` prints the floor with the name and value of the rate it used. */
static void test_cli(const char *dir)
{
	char cache[600], log[600], *path = kt_path_join(dir, "tensor.cu.tmpl");
	snprintf(cache, sizeof cache, "%s/cli-cache", dir);
	snprintf(log, sizeof log, "%s/tune.log", dir);
	char *argv[] = {KT_EXE, "tune", path, "--shape", "n=4096", "--backend", "fake", "--nvcc", KT_FAKE_DIR "/fake_nvcc.py",
			"--budget", "2", "--timeout", "1", "--cache-dir", cache, "--quiet", NULL};
	kt_proc p = {0};
	kt_err err = {0};
	int status = -1;
	CHECK_INT(kt_proc_spawn(&p, argv, 0, log, &err), 0);
	CHECK_INT(kt_proc_wait(&p, 120, &status), 1);
	CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	kt_buf out = {0};
	CHECK_INT(kt_read_file(log, &out, &err), 0);
	const char *want = "  floor: 2.68 us (copy 2000 GB/s, tensor 400000 GFLOP/s)\n";
	CHECK(strstr(kt_buf_str(&out), want) != NULL);
	if (!strstr(kt_buf_str(&out), want))
		fprintf(stderr, "kt tune said:\n%s\n", kt_buf_str(&out));
	kt_buf_free(&out);
	free(path);
}

/* The check module with the real nvcc: kt_mma holds its 8 chains of 4 accumulators in registers
 * where mma.sync exists (sm_80, sm_90, sm_90a) and is empty below (sm_75); nothing spills. */
static void test_probe_nvcc(const char *nvcc, const char *dir)
{
	static const char *const archs[] = {"75", "80", "90", "90a"}; /* 90a: nvcc's -gencode form */
	for (size_t i = 0; i < sizeof archs / sizeof archs[0]; i++) {
		char work[600];
		snprintf(work, sizeof work, "%s/sm_%s", dir, archs[i]);
		kt_compiler c = {nvcc, NULL, archs[i], NULL, 0, 1, work, NULL, 0, NULL, 0, NULL};
		kt_unit u = {0};
		snprintf(u.name, sizeof u.name, "kt_check");
		snprintf(u.entry, sizeof u.entry, "kt_mma");
		kt_check_source(&u.src);
		kt_err err = {0};
		CHECK_INT(kt_compile(&c, &u, 1, &err), 0);
		CHECK_INT(u.ok, 1);
		if (!u.ok)
			fprintf(stderr, "sm_%s: %s\n", archs[i], u.msg ? u.msg : err.msg);
		CHECK_INT(u.local_bytes, 0);
		CHECK_INT(u.spill_bytes, 0);
		{ /* the target reaches nvcc: -arch=sm_NN, or the -gencode form for 90a */
			char ninja[700], want[96];
			snprintf(ninja, sizeof ninja, "%s/build0.ninja", work); /* kt_compile: slot 0 */
			if (strchr(archs[i], 'a'))
				snprintf(want, sizeof want, " -gencode=arch=compute_%s,code=sm_%s ", archs[i], archs[i]);
			else
				snprintf(want, sizeof want, " -arch=sm_%s ", archs[i]);
			kt_buf text = {0};
			kt_err rerr = {0};
			CHECK_INT(kt_read_file(ninja, &text, &rerr), 0);
			CHECK(strstr(kt_buf_str(&text), want) != NULL);
			kt_buf_free(&text);
		}
		if (atoi(archs[i]) >= 80)
			CHECK(u.regs >= 8 * 4 + 6); /* accumulators + the A and B fragments */
		else
			CHECK(u.regs >= 0 && u.regs < 16);
		kt_unit_free(&u);
	}
}

int main(void)
{
	char *dir = kt_temp_dir(getenv("TMPDIR"), "kt-test-roofline", NULL);
	if (!dir)
		return 1;
	test_ceilings(dir);
	test_cli(dir);
	const char *nvcc = KT_TEST_NVCC;
	if (nvcc[0])
		test_probe_nvcc(nvcc, dir);
	else
		printf("skipping the probe compile: nvcc not found at configure time\n");
	kt_remove_tree(dir);
	free(dir);
	return check_done();
}
