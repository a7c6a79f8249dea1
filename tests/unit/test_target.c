/* test_target.c - the target GPU: the table of known GPUs and the one check of a launch and a
 * compiled variant's resources against its limits. */
#include <string.h>

#include "check.h"
#include "target.h"

static void test_target(void)
{
	kt_target g;
	kt_err err = {0};
	CHECK_INT(kt_target_lookup("h200", &g, &err), 0);
	CHECK_STR(g.id.name, "NVIDIA H200");
	CHECK_STR(g.arch, "sm_90");
	CHECK_INT(g.id.smem_optin, 227 * 1024);
	CHECK_INT(g.lim.max_threads_block, 1024);
	CHECK_INT(kt_target_lookup("NVIDIA H20", &g, &err), -1);
	CHECK(strstr(err.msg, "'NVIDIA H200'") != NULL);
	kt_target_lookup("NVIDIA H200", &g, &err);
	char why[128];
	kt_launch ok = {{4096, 1, 1}, {256, 1, 1}, 0, 0, 0};
	CHECK_INT(kt_target_fits(&g, &ok, NULL, why, sizeof why), 0);
	kt_launch big = {{4096, 1, 1}, {64, 32, 1}, 0, 0, 0};
	CHECK_INT(kt_target_fits(&g, &big, NULL, why, sizeof why), -1);
	CHECK_STR(why, "2048 threads per block; the device allows 1024");
	kt_launch smem = {{1, 1, 1}, {128, 1, 1}, 300000, 0, 0};
	CHECK_INT(kt_target_fits(&g, &smem, NULL, why, sizeof why), -1);
	CHECK_STR(why, "300000 bytes of dynamic shared memory per block; the device allows 232448");
	kt_launch z = {{1, 1, 1}, {1, 1, 65}, 0, 0, 0};
	CHECK_INT(kt_target_fits(&g, &z, NULL, why, sizeof why), -1);
	CHECK_STR(why, "block.z = 65; the device allows 1 to 64");
}

/* The target a GPU's table is built for: its own compute capability, and its architecture-specific
 * target only for a template that needs it and a build that lists it. */
static void test_compile_arch(void)
{
	kt_target h200, a100;
	kt_target_lookup("H200", &h200, NULL);
	kt_target_lookup("A100", &a100, NULL);
	char arch[16];
	kt_target_compile_arch(&h200.id, "80;90a", 1, arch, sizeof arch);
	CHECK_STR(arch, "90a");
	kt_target_compile_arch(&h200.id, "80;90a", 0, arch, sizeof arch);
	CHECK_STR(arch, "90");
	kt_target_compile_arch(&h200.id, "80;90", 1, arch, sizeof arch);
	CHECK_STR(arch, "90");
	kt_target_compile_arch(&h200.id, "", 1, arch, sizeof arch);
	CHECK_STR(arch, "90");
	kt_target_compile_arch(&a100.id, "90a", 1, arch, sizeof arch); /* the build need not list the GPU */
	CHECK_STR(arch, "80");
	CHECK(kt_target_name_matches("NVIDIA H100 80GB HBM3", "h100"));
	CHECK(kt_target_name_matches("NVIDIA H100 80GB HBM3", "NVIDIA H100 80GB HBM3"));
	CHECK(!kt_target_name_matches("NVIDIA H100 80GB HBM3", "H10"));
	CHECK(!kt_target_name_matches("NVIDIA H200", "H20"));
}

static void test_limits(void)
{
	kt_target gi;
	kt_target_lookup("NVIDIA H200", &gi, NULL);
	gi.id.smem_optin = 232448;
	kt_launch l = {{128, 1, 1}, {256, 1, 1}, 0, 0, 0};
	char why[256] = "";
	CHECK_INT(kt_target_fits(&gi, &l, NULL, why, sizeof why), 0);
	l.block[0] = 2048;
	CHECK_INT(kt_target_fits(&gi, &l, NULL, why, sizeof why), -1);
	CHECK_STR(why, "2048 threads per block; the device allows 1024");
	l.block[0] = 32;
	l.block[2] = 32;
	CHECK_INT(kt_target_fits(&gi, &l, NULL, why, sizeof why), 0);
	l.block[2] = 1;
	l.grid[1] = 70000;
	CHECK_INT(kt_target_fits(&gi, &l, NULL, why, sizeof why), -1);
	CHECK(strstr(why, "grid.y = 70000") != NULL);
	l.grid[1] = 1;
	l.smem = 300000;
	CHECK_INT(kt_target_fits(&gi, &l, NULL, why, sizeof why), -1);
	CHECK(strstr(why, "300000 bytes of dynamic shared memory") != NULL);

	/* Registers are allocated per warp in units of 256: 65 registers x 1024 threads need
	 * 32 warps x 2304 = 73728 > 65536; 64 x 1024 fit exactly. */
	kt_launch r = {{1, 1, 1}, {1024, 1, 1}, 0, 0, 0};
	kt_usage u = {0, 0};
	u.regs = 64;
	u.smem_static = 0;
	CHECK_INT(kt_target_fits(&gi, &r, &u, why, sizeof why), 0);
	u.regs = 65;
	CHECK_INT(kt_target_fits(&gi, &r, &u, why, sizeof why), -1);
	CHECK_STR(why, "65 registers x 1024 threads need 73728 registers; the device has 65536 per block");
	u.regs = 32;
	u.smem_static = 48 * 1024;
	r.smem = 200 * 1024;
	CHECK_INT(kt_target_fits(&gi, &r, &u, why, sizeof why), -1);
	CHECK(strstr(why, "(49152 static + 204800 dynamic)") != NULL);
	u.regs = -1; /* unknown: not pruned on registers */
	u.smem_static = -1;
	CHECK_INT(kt_target_fits(&gi, &r, &u, why, sizeof why), 0);
}

static void test_common(void)
{
	kt_target g;
	char why[128];
	kt_target_common(&g);
	kt_launch l = {{1, 1, 1}, {256, 1, 1}, 64 * 1024, 0, 0};
	CHECK_INT(kt_target_fits(&g, &l, NULL, why, sizeof why), -1); /* 48 KiB without a known GPU */
	CHECK(strstr(why, "65536 bytes of dynamic shared memory") != NULL);
	l.smem = 0;
	CHECK_INT(kt_target_fits(&g, &l, NULL, why, sizeof why), 0);
}

int main(void)
{
	test_target();
	test_compile_arch();
	test_limits();
	test_common();
	return check_done();
}
