/* test_compile.c - parallel compilation: ptxas reports, device limits, and a real nvcc batch
 * (a good variant, a broken one, the worker's check kernels) when nvcc is available. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "compile.h"

static const char ptxas_log[] =
	"ptxas info    : 0 bytes gmem\n"
	"ptxas info    : Compiling entry function '_Z2tkILi3EEvPf' for 'sm_90'\n"
	"ptxas info    : Function properties for _Z2tkILi3EEvPf\n"
	"    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads\n"
	"ptxas info    : Used 10 registers, used 0 barriers\n"
	"ptxas info    : Compiling entry function '_Z22kt_rms_0123abcd_kernelP6__halfi' for 'sm_90'\n"
	"ptxas info    : Function properties for _Z22kt_rms_0123abcd_kernelP6__halfi\n"
	"    256 bytes stack frame, 96 bytes spill stores, 96 bytes spill loads\n"
	"ptxas info    : Used 255 registers, used 1 barriers, 4096 bytes smem, 380 bytes cmem[0]\n"
	"ptxas info    : Compiling entry function 'kfoo' for 'sm_90'\n"
	"ptxas info    : Function properties for kfoo\n"
	"    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads\n"
	"ptxas info    : Used 16 registers, used 1 barriers, 1024 bytes smem\n";

static void test_ptxas(void)
{
	int regs = -1, smem = -1, local = -1, spill = -1;
	CHECK_INT(kt_ptxas_parse(ptxas_log, "kt_rms_0123abcd_kernel", &regs, &smem, &local, &spill), 0);
	CHECK_INT(regs, 255);
	CHECK_INT(smem, 4096);
	CHECK_INT(local, 256);
	CHECK_INT(spill, 96);
	CHECK_INT(kt_ptxas_parse(ptxas_log, "kfoo", &regs, &smem, &local, &spill), 0);
	CHECK_INT(regs, 16);
	CHECK_INT(smem, 1024);
	CHECK_INT(local, 0);
	CHECK_INT(kt_ptxas_parse(ptxas_log, "tk", &regs, &smem, &local, &spill), 0); /* a template's instance */
	CHECK_INT(regs, 10);
	CHECK_INT(smem, 0);
	CHECK_INT(kt_ptxas_parse(ptxas_log, "missing", &regs, &smem, &local, &spill), -1);
}

static kt_gpu_info h200(void)
{
	kt_gpu_info gi = {0};
	gi.id.smem_optin = 232448;
	gi.lim = (kt_gpu_limits){1024, {1024, 1024, 64}, {2147483647, 65535, 65535}, 65536, 65536, 49152, 1LL << 37};
	return gi;
}

static void test_limits(void)
{
	kt_gpu_info gi = h200();
	kt_launch l = {{128, 1, 1}, {256, 1, 1}, 0, 0, 0};
	char why[256] = "";
	CHECK_INT(kt_limits_launch(&gi, &l, why, sizeof why), 0);
	l.block[0] = 2048;
	CHECK_INT(kt_limits_launch(&gi, &l, why, sizeof why), 1);
	CHECK_STR(why, "2048 threads per block, the device allows 1024");
	l.block[0] = 32;
	l.block[2] = 32;
	CHECK_INT(kt_limits_launch(&gi, &l, why, sizeof why), 0);
	l.block[2] = 1;
	l.grid[1] = 70000;
	CHECK_INT(kt_limits_launch(&gi, &l, why, sizeof why), 1);
	CHECK(strstr(why, "grid dimension y is 70000") != NULL);
	l.grid[1] = 1;
	l.smem = 300000;
	CHECK_INT(kt_limits_launch(&gi, &l, why, sizeof why), 1);
	CHECK(strstr(why, "300000 bytes of dynamic shared memory") != NULL);

	/* Registers are allocated per warp in units of 256: 65 registers x 1024 threads need
	 * 32 warps x 2304 = 73728 > 65536; 64 x 1024 fit exactly. */
	kt_launch r = {{1, 1, 1}, {1024, 1, 1}, 0, 0, 0};
	kt_unit u = {0};
	u.regs = 64;
	u.smem_static = 0;
	CHECK_INT(kt_limits_resources(&gi, &r, &u, why, sizeof why), 0);
	u.regs = 65;
	CHECK_INT(kt_limits_resources(&gi, &r, &u, why, sizeof why), 1);
	CHECK_STR(why, "65 registers x 1024 threads need 73728 registers, the device has 65536 per block");
	u.regs = 32;
	u.smem_static = 48 * 1024;
	r.smem = 200 * 1024;
	CHECK_INT(kt_limits_resources(&gi, &r, &u, why, sizeof why), 1);
	CHECK(strstr(why, "(49152 static + 204800 dynamic)") != NULL);
	u.regs = -1; /* unknown: not pruned on registers */
	u.smem_static = -1;
	CHECK_INT(kt_limits_resources(&gi, &r, &u, why, sizeof why), 0);
}

static void unit(kt_unit *u, const char *name, const char *entry, const char *src)
{
	memset(u, 0, sizeof *u);
	snprintf(u->name, sizeof u->name, "%s", name);
	snprintf(u->entry, sizeof u->entry, "%s", entry);
	kt_buf_puts(&u->src, src);
}

static const char good_src[] =
	"template <int B> __global__ void kt_good_kernel(float *o, const float *x, int n)\n"
	"{\n\t__shared__ float s[B];\n\tint i = blockIdx.x * B + threadIdx.x;\n"
	"\ts[threadIdx.x] = i < n ? x[i] : 0.f;\n\t__syncthreads();\n"
	"\tif (i < n) o[i] = 2.f * s[B - 1 - threadIdx.x];\n}\n"
	"template __global__ void kt_good_kernel<256>(float *, const float *, int);\n";

static void test_nvcc(const char *nvcc, const char *dir)
{
	char dep[256];
	snprintf(dep, sizeof dep, "%s/dep.cuh", dir);
	kt_err err = {0};
	kt_write_atomic(dep, "// a header\n", 12, &err);
	const char *deps[1] = {dep};
	kt_compiler c = {nvcc, NULL, 90, NULL, 0, 2, dir, deps, 1};
	kt_unit u[3];
	/* An instantiated template's mangled name carries template arguments: matched by prefix. */
	unit(&u[0], "good", "kt_good_kernel", good_src);
	unit(&u[1], "broken", "kt_broken_kernel", "__global__ void kt_broken_kernel(float *o) { o[0] = undefined_thing; }\n");
	unit(&u[2], "kt_check", "", "");
	kt_check_source(&u[2].src);
	CHECK_INT(kt_compile(&c, u, 3, &err), 0);
	CHECK_INT(u[0].ok, 1);
	CHECK_INT(u[0].smem_static, 1024);
	CHECK(u[0].regs > 0 && u[0].regs < 64);
	CHECK_INT(u[0].local_bytes, 0);
	CHECK_INT(u[1].ok, 0);
	CHECK(u[1].msg && strstr(u[1].msg, "undefined_thing") && strstr(u[1].msg, "error"));
	CHECK_INT(u[2].ok, 1); /* the worker's check kernels compile */
	if (!u[2].ok && u[2].msg)
		fprintf(stderr, "%s\n", u[2].msg);

	/* The same text again: ninja has nothing to do and the results are the same. */
	struct stat before, after;
	stat(u[0].cubin, &before);
	CHECK_INT(kt_compile(&c, u, 2, &err), 0);
	stat(u[0].cubin, &after);
	CHECK_INT(u[0].ok, 1);
	CHECK_INT(u[0].smem_static, 1024);
	CHECK(before.st_mtim.tv_sec == after.st_mtim.tv_sec && before.st_mtim.tv_nsec == after.st_mtim.tv_nsec);
	CHECK_INT(u[1].ok, 0);

	/* A declared dependency that changed (the template, a header) rebuilds. */
	struct timespec later[2] = {{0, UTIME_NOW}, {0, 0}};
	clock_gettime(CLOCK_REALTIME, &later[1]);
	later[1].tv_sec += 5;
	utimensat(AT_FDCWD, dep, later, 0);
	CHECK_INT(kt_compile(&c, u, 1, &err), 0);
	stat(u[0].cubin, &after);
	CHECK(before.st_mtim.tv_sec != after.st_mtim.tv_sec || before.st_mtim.tv_nsec != after.st_mtim.tv_nsec);
	CHECK_INT(u[0].ok, 1);

	/* Fixing the broken unit compiles it. */
	kt_buf_reset(&u[1].src);
	kt_buf_puts(&u[1].src, "__global__ void kt_broken_kernel(float *o) { o[0] = 1.f; }\n");
	CHECK_INT(kt_compile(&c, u, 2, &err), 0);
	CHECK_INT(u[1].ok, 1);
	CHECK(u[1].msg == NULL);
	for (int i = 0; i < 3; i++)
		kt_unit_free(&u[i]);

	/* A compiler that cannot run: every unit fails with ninja's message, and the loop goes on. */
	kt_compiler bad = {"/nonexistent/nvcc", NULL, 90, NULL, 0, 1, dir, NULL, 0};
	unit(&u[0], "other", "k", "__global__ void k() {}\n");
	int rc = kt_compile(&bad, u, 1, &err);
	CHECK_INT(rc, 0);
	if (rc)
		fprintf(stderr, "%s\n", err.msg);
	CHECK_INT(u[0].ok, 0);
	CHECK(u[0].msg && strstr(u[0].msg, "nonexistent"));
	kt_unit_free(&u[0]);
}

int main(void)
{
	test_ptxas();
	test_limits();
	const char *nvcc = KT_TEST_NVCC;
	if (nvcc[0]) {
		char dir[] = "/tmp/kt-test-compile-XXXXXX";
		if (!mkdtemp(dir))
			return 1;
		test_nvcc(nvcc, dir);
		char cmd[128];
		snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
		if (system(cmd))
			fprintf(stderr, "could not remove %s\n", dir);
	} else {
		printf("skipping the nvcc tests: nvcc not found at configure time\n");
	}
	return check_done();
}
