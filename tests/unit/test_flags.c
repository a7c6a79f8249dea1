/* test_flags.c - the build's nvcc flags by class: what kt drops (architectures, which it reads),
 * what reaches the build only, what reaches everything and the key; the table stays sorted. */
#include <string.h>

#include "check.h"
#include "flags.h"

static void check_split(const char *flags, const char *keyed, const char *build, const char *dropped, const char *archs)
{
	kt_flags f;
	kt_flags_split(flags, &f);
	CHECK_STR(kt_buf_str(&f.keyed), keyed);
	CHECK_STR(kt_buf_str(&f.build), build);
	CHECK_STR(kt_buf_str(&f.dropped), dropped);
	CHECK_STR(kt_buf_str(&f.archs), archs);
	kt_flags_free(&f);
}

static void test_split(void)
{
	check_split("", "", "", "", "");
	check_split(NULL, "", "", "", "");
	/* what find_package(Torch) adds for TORCH_CUDA_ARCH_LIST="8.0;9.0a" */
	check_split(" -gencode arch=compute_80,code=sm_80 -gencode arch=compute_90a,code=sm_90a", "", "",
		    "-gencode arch=compute_80,code=sm_80 -gencode arch=compute_90a,code=sm_90a", "80;90a");
	/* as a CMake list, and every spelling of the others */
	check_split("-gencode;arch=compute_90a,code=sm_90a;-arch=sm_89 --gpu-architecture compute_75 -code=sm_86,compute_86 "
		    "--generate-code=arch=compute_100,code=[compute_100,sm_100] --gpu-code sm_90",
		    "", "",
		    "-gencode arch=compute_90a,code=sm_90a -arch=sm_89 --gpu-architecture compute_75 -code=sm_86,compute_86 "
		    "--generate-code=arch=compute_100,code=[compute_100,sm_100] --gpu-code sm_90",
		    "90a;89;75;86;100;90");
	/* -arch=native names no architecture that kt can know */
	check_split("-arch=native -DX", "-DX", "", "-arch=native", "");
	/* what changes the code: every compile and the key; a flag and its value stay together */
	check_split("-D__CUDA_NO_HALF_OPERATORS__ --use_fast_math -I /opt/inc -Xptxas -v -std=c++17 --expt-relaxed-constexpr",
		    "-D__CUDA_NO_HALF_OPERATORS__ --use_fast_math -I /opt/inc -Xptxas -v -std=c++17 --expt-relaxed-constexpr",
		    "", "", "");
	/* packaging, the host compiler and warnings: the build only */
	check_split("-Xfatbin -compress-all -Xcompiler=-fPIC -Xcompiler -Wall --Werror all-warnings -Wno-deprecated-gpu-targets -w "
		    "-DKEEP -ccbin /usr/bin/g++-12 -Xcudafe --diag_suppress=177 --threads 4",
		    "-DKEEP",
		    "-Xfatbin -compress-all -Xcompiler=-fPIC -Xcompiler -Wall --Werror all-warnings -Wno-deprecated-gpu-targets -w "
		    "-ccbin /usr/bin/g++-12 -Xcudafe --diag_suppress=177 --threads 4",
		    "", "");
	/* a value-taking flag at the end, without its value */
	check_split("-DX -gencode", "-DX", "", "-gencode", "");
	/* tabs, newlines and runs of blanks are one separator */
	check_split("-DA\t -DB\n-DC", "-DA -DB -DC", "", "", "");
}

static void test_archs(void)
{
	kt_buf l = {0};
	kt_flags_add_archs("80;90a-real;75-virtual;native;all;OFF;90a", &l);
	CHECK_STR(kt_buf_str(&l), "80;90a;75");
	kt_flags_add_archs("arch=compute_90,code=sm_90 sm_100f x9 9", &l);
	CHECK_STR(kt_buf_str(&l), "80;90a;75;90;100f");
	kt_buf_free(&l);
}

/* The table is sorted by name, so that a reader finds a flag in it (and docs/cache.md in order). */
static void test_table_sorted(void)
{
	size_t n;
	const kt_flag_rule *r = kt_flag_rules(&n);
	CHECK(n > 10);
	for (size_t i = 1; i < n; i++)
		CHECK(strcmp(r[i - 1].name, r[i].name) < 0);
}

int main(void)
{
	test_split();
	test_archs();
	test_table_sorted();
	return check_done();
}
