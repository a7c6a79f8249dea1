/* test_cusrc.c - finding __global__ functions and their definitions in CUDA source (local includes are tested with
 * real files in test_tmpl). */
#include <stdio.h>
#include <string.h>

#include "check.h"
#include "cusrc.h"

static int has(const char *src, const char *name) { return kt_cusrc_has_global(src, strlen(src), name); }

/* The definition of name in src as text, or "-" when it cannot be cut out. */
static const char *def(const char *src, const char *name)
{
	static char out[512];
	size_t from, to;
	if (kt_cusrc_global_def(src, strlen(src), name, &from, &to))
		return "-";
	snprintf(out, sizeof out, "%.*s", (int)(to - from), src + from);
	return out;
}

static void test_global_def(void)
{
	CHECK_STR(def("__device__ int f(int x) { return x; }\n// the naive one\nextern \"C\" __global__ void ref(float *o)\n"
		      "{\n\to[0] = 1.f;\n}\n__global__ void k(float *o) {}\n", "ref"),
		  "\n// the naive one\nextern \"C\" __global__ void ref(float *o)\n{\n\to[0] = 1.f;\n}");
	CHECK_STR(def("#include \"x.cuh\"\n__global__ void __launch_bounds__(256) ref(float *o) { if (o) { o[0] = 0; } }", "ref"),
		  "__global__ void __launch_bounds__(256) ref(float *o) { if (o) { o[0] = 0; } }");
	CHECK_STR(def("__global__ void ref(float *o)\n{\n#pragma unroll\n\tfor (int i = 0; i < 4; i++) o[i] = 0;\n}", "ref"),
		  "__global__ void ref(float *o)\n{\n#pragma unroll\n\tfor (int i = 0; i < 4; i++) o[i] = 0;\n}");
	CHECK_STR(def("__global__ void ref(const char *s) { s = \"}\"; /* } */ }", "ref"),
		  "__global__ void ref(const char *s) { s = \"}\"; /* } */ }");
	/* Used elsewhere, declared only, or a directive inside: not cut out. */
	CHECK_STR(def("__global__ void ref(float *o) {}\n__global__ void k(float *o) { ref<<<1, 1>>>(o); }", "ref"), "-");
	CHECK_STR(def("#define NAIVE ref\n__global__ void ref(float *o) {}", "ref"), "-");
	CHECK_STR(def("__global__ void ref(float *o);", "ref"), "-");
	CHECK_STR(def("__global__ void ref(float *o)\n{\n#if X\n\to[0] = 1;\n#endif\n}", "ref"), "-");
	CHECK_STR(def("__global__ void ref(float *o) { o[0] = 1;", "ref"), "-");
	CHECK_STR(def("__global__ void k(float *o) {}", "ref"), "-");
}

static int uses(const char *src, const char *name) { return kt_cusrc_uses_macro(src, strlen(src), name); }

/* A parameter's macro is used where it can change the code: not where the template gives it a
 * default, nor in comments and literals. */
static void test_uses_macro(void)
{
	static const char defaults[] = "#ifndef GROWS\n#define GROWS 1\n#endif\n"
				       "#ifndef STORE\n#  define STORE reread\n#define STORE_IS_regs 0\n#endif\n"
				       "#if !defined(GROWS) || !defined STORE\n#undef GROWS\n#endif\n"
				       "// GROWS rows a group\n/* STORE_IS_regs */ const char *s = \"GROWS\";\n"
				       "__global__ void k(float *o) { o[0] = 1e5f + 0x10; }\n";
	CHECK(!uses(defaults, "GROWS"));
	CHECK(!uses(defaults, "STORE"));
	CHECK(uses("__global__ void k(float *o) { o[GROWS] = 1; }", "GROWS"));
	CHECK(uses("#if STORE_IS_regs\nint x;\n#endif", "STORE"));
	CHECK(uses("#define ROWS (RPB * GROWS)", "GROWS"));
	CHECK(uses("#define ROWS \\\n\t(RPB * GROWS)", "GROWS"));
	CHECK(uses("#if defined(GROWS) && GROWS > 1\n#endif", "GROWS"));
	CHECK(uses("#ifdef X\nint a = GROWS;\n#endif", "GROWS"));
	CHECK(uses("__launch_bounds__(BLOCK) __global__ void k(void);", "BLOCK"));
	CHECK(!uses("int MY_GROWS, GROWSX, STORE_ISX, STORE_IS_;", "GROWS"));
	CHECK(!uses("int STORE_ISX, STORE_I;", "STORE"));
	CHECK(uses("#define CAT(a, b) a##b\nint x = CAT(STORE_IS_, regs);", "STORE")); /* pasted */
}

int main(void)
{
	test_uses_macro();
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
	test_global_def();
	return check_done();
}
