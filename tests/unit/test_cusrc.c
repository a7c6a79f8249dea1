/* test_cusrc.c - finding __global__ functions in CUDA source (local includes are tested with
 * real files in test_tmpl). */
#include <string.h>

#include "check.h"
#include "cusrc.h"

static int has(const char *src, const char *name) { return kt_cusrc_has_global(src, strlen(src), name); }

int main(void)
{
	CHECK(has("__global__ void k(int *x) {}", "k"));
	CHECK(!has("__global__ void k(int *x) {}", "x"));
	CHECK(!has("__device__ void k(int *x) {}", "k"));
	CHECK(has("template <int N>\n__global__ void\n__launch_bounds__(BLOCK, 2)\nkernel_2(float *o);", "kernel_2"));
	CHECK(has("extern \"C\" __global__ __launch_bounds__(256) void k(float *o) {}", "k"));
	CHECK(has("static __global__ void __attribute__((used)) k2(void) {}", "k2"));
	CHECK(!has("// __global__ void c(int);\n/* __global__ void d(int); */\nconst char *s = \"__global__ void e(\";", "c"));
	CHECK(!has("/* __global__ void d(int); */", "d"));
	CHECK(!has("const char *s = \"__global__ void e(\";", "e"));
	CHECK(!has("int my__global__ f(int);", "f"));
	CHECK(has("__global__ void a(int) {}\n__global__ void b(int) {}", "b"));
	CHECK(!has("__global__", "k"));
	CHECK(!has("__global__ void k", "kk"));
	CHECK(!has("", "k"));
	return check_done();
}
