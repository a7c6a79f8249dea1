/* test_nvrtc.c - nvcc's flags as NVRTC options, cubins compared by their machine code, and which
 * compilers may use NVRTC (with the real toolkit when nvcc was found at configure time). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "nvrtc.h"

/* nvcc's arguments (a NULL-terminated list) as NVRTC's options joined by blanks, or "-1". */
static void options_of(const char *const *args, char *out, size_t outsz)
{
	int n = 0;
	while (args[n])
		n++;
	kt_arena *a = kt_arena_new();
	const char **opts, *in, *o;
	int k = kt_nvrtc_options(a, (char *const *)args, n, &opts, &in, &o);
	kt_buf b = {0};
	if (k < 0)
		kt_buf_puts(&b, "-1");
	for (int i = 0; i < k; i++)
		kt_buf_printf(&b, "%s%s", i ? " " : "", opts[i]);
	if (k >= 0)
		kt_buf_printf(&b, " <%s >%s", in, o);
	snprintf(out, outsz, "%s", kt_buf_str(&b));
	kt_buf_free(&b);
	kt_arena_free(a);
}

static void test_options(void)
{
	static const struct {
		const char *args[16];
		const char *want;
	} cases[] = {
		{{"-cubin", "-arch=sm_90", "-Xptxas", "-v", "-o", "a.cubin", "a.cu"}, "-arch=sm_90 -Xptxas=-v <a.cu >a.cubin"},
		{{"-cubin", "-gencode=arch=compute_90a,code=sm_90a", "-o", "a.cubin", "a.cu"}, "-arch=sm_90a <a.cu >a.cubin"},
		{{"-cubin", "-arch=sm_80", "-DX=1", "-D", "Y", "-UZ", "-I", "inc", "-Ib", "-o", "o", "i.cu"},
		 "-arch=sm_80 -DX=1 -DY -UZ -Iinc -Ib <i.cu >o"},
		{{"-cubin", "-arch=sm_90", "-use_fast_math", "--ftz=true", "-prec-div=false", "--fmad=false", "-lineinfo", "-o",
		  "o", "i"},
		 "-arch=sm_90 --use_fast_math --ftz=true --prec-div=false --fmad=false -lineinfo <i >o"},
		{{"-cubin", "-arch=sm_90", "--expt-relaxed-constexpr", "--expt-extended-lambda", "-std=c++17", "-maxrregcount",
		  "64", "-o", "o", "i"},
		 "-arch=sm_90 --expt-relaxed-constexpr --extended-lambda -std=c++17 -maxrregcount=64 <i >o"},
		/* What NVRTC cannot be given: nvcc compiles. */
		{{"-cubin", "-arch=sm_90", "-Xcompiler", "-O3", "-o", "o", "i"}, "-1"},
		{{"-cubin", "-arch=sm_90", "--weird", "-o", "o", "i"}, "-1"},
		{{"-arch=sm_90", "-o", "o", "i"}, "-1"},                                  /* not a cubin */
		{{"-cubin", "-o", "o", "i"}, "-1"},                                       /* no target */
		{{"-cubin", "-arch=sm_90", "-arch=sm_80", "-o", "o", "i"}, "-1"},          /* two targets */
		{{"-cubin", "-arch=compute_90", "-o", "o", "i"}, "-1"},                   /* a virtual one */
		{{"-cubin", "-gencode=arch=compute_90,code=sm_90a", "-o", "o", "i"}, "-1"}, /* another real one */
		{{"-cubin", "-arch=sm_90", "-o", "o", "i", "j"}, "-1"},                   /* two inputs */
		{{"-cubin", "-arch=sm_90", "-o", "o"}, "-1"},                             /* none */
		{{"-cubin", "-arch=sm_90", "i", "-D"}, "-1"},                             /* a flag without its value */
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		char got[512];
		options_of(cases[i].args, got, sizeof got);
		CHECK_STR(got, cases[i].want);
	}
}

/* ---- cubins -------------------------------------------------------------------------------------- */

typedef struct fake_section {
	const char *name;
	uint32_t type;
	const char *bytes;
} fake_section;

static void put(unsigned char *p, uint64_t v, int n)
{
	for (int i = 0; i < n; i++)
		p[i] = (unsigned char)(v >> 8 * i);
}

/* A little-endian ELF64 image of the sections (after a null section and before .shstrtab). */
static size_t elf(const fake_section *s, int n, uint32_t flags, unsigned char *out, size_t outsz)
{
	char names[256] = "";
	size_t nlen = 1, at[16], data = 64, off[16];
	for (int i = 0; i < n; i++) {
		at[i] = nlen;
		strcpy(names + nlen, s[i].name);
		nlen += strlen(s[i].name) + 1;
	}
	size_t shstr = nlen;
	strcpy(names + nlen, ".shstrtab");
	nlen += 10;
	memset(out, 0, outsz);
	memcpy(out, "\177ELF\2\1\1", 7);
	for (int i = 0; i < n; i++) {
		off[i] = data;
		size_t len = s[i].type == 8 ? 0 : strlen(s[i].bytes);
		memcpy(out + data, s[i].bytes, len);
		data += len;
	}
	size_t stroff = data;
	memcpy(out + data, names, nlen);
	data += nlen;
	size_t shoff = (data + 7) & ~(size_t)7;
	int shnum = n + 2;
	put(out + 0x28, shoff, 8);
	put(out + 0x30, flags, 4);
	put(out + 0x3a, 64, 2);
	put(out + 0x3c, (uint64_t)shnum, 2);
	put(out + 0x3e, (uint64_t)(n + 1), 2);
	for (int i = 0; i < n; i++) {
		unsigned char *h = out + shoff + 64 * (size_t)(i + 1);
		put(h, at[i], 4);
		put(h + 4, s[i].type, 4);
		put(h + 0x18, off[i], 8);
		put(h + 0x20, strlen(s[i].bytes), 8);
	}
	unsigned char *h = out + shoff + 64 * (size_t)(n + 1);
	put(h, shstr, 4);
	put(h + 4, 3, 4);
	put(h + 0x18, stroff, 8);
	put(h + 0x20, nlen, 8);
	return shoff + 64 * (size_t)shnum;
}

static void test_cubins(void)
{
	fake_section a[] = {{".text.k", 1, "\x01\x02\x03\x04"}, {".nv.info.k", 0x70000000, "info"},
			    {".note.nv.tkinfo", 7, "nvcc -cubin"}, {".nv.shared.k", 8, "...."}};
	fake_section b[4];
	unsigned char x[2048], y[2048];
	char why[128];
	size_t nx = elf(a, 4, 0x5a, x, sizeof x), ny;

	memcpy(b, a, sizeof b);
	b[2].bytes = "NVRTC -arch=sm_90 more"; /* another tool, of another length: the same code */
	ny = elf(b, 4, 0x5a, y, sizeof y);
	CHECK_INT(kt_cubin_same_code(x, nx, y, ny, why, sizeof why), 1);

	b[2] = a[2];
	b[0].bytes = "\x01\x02\x03\x05";
	ny = elf(b, 4, 0x5a, y, sizeof y);
	CHECK_INT(kt_cubin_same_code(x, nx, y, ny, why, sizeof why), 0);
	CHECK_STR(why, "section .text.k");

	b[0] = a[0];
	b[1].bytes = "inf0";
	ny = elf(b, 4, 0x5a, y, sizeof y);
	CHECK_INT(kt_cubin_same_code(x, nx, y, ny, why, sizeof why), 0);
	CHECK_STR(why, "section .nv.info.k");

	ny = elf(a, 4, 0x5b, y, sizeof y); /* another target */
	CHECK_INT(kt_cubin_same_code(x, nx, y, ny, why, sizeof why), 0);
	CHECK_STR(why, "targets differ");

	ny = elf(a, 3, 0x5a, y, sizeof y);
	CHECK_INT(kt_cubin_same_code(x, nx, y, ny, why, sizeof why), 0);
	CHECK_STR(why, "sections differ");

	for (size_t cut = 0; cut < nx; cut += 7) { /* a torn file is never the same code, and never read past */
		CHECK_INT(kt_cubin_same_code(x, cut, x, nx, why, sizeof why), 0);
	}
	CHECK_INT(kt_cubin_same_code("not elf", 7, x, nx, why, sizeof why), 0);
	CHECK_STR(why, "not a cubin");
}

/* ---- the library --------------------------------------------------------------------------------- */

static void test_library(const char *nvcc)
{
	const char *why = NULL;
	char *dir = kt_temp_dir(getenv("TMPDIR"), "kt-test-nvrtc", NULL);
	CHECK(dir != NULL);
	if (!dir)
		return;
	char bin[600], script[700];
	snprintf(bin, sizeof bin, "%s/bin", dir);
	kt_mkdirs(bin, NULL);
	snprintf(script, sizeof script, "%s/nvcc", bin);
	const char *text = "#!/bin/sh\necho 'Cuda compilation tools, release 13.0, V13.0.88'\n";
	kt_write_atomic(script, text, strlen(text), NULL);
	CHECK_INT(chmod(script, 0755), 0);
	CHECK(kt_nvrtc_library(script, NULL, 0, &why) == NULL); /* a toolkit without NVRTC */
	CHECK_STR(why, "its toolkit has no NVRTC");
	CHECK(kt_nvrtc_library("/nonexistent/nvcc", NULL, 0, &why) == NULL);
	CHECK_STR(why, "nvcc is not found");
	const char *host[] = {"-Xcompiler", "-fPIC"};
	CHECK(kt_nvrtc_library(nvcc[0] ? nvcc : script, host, 2, &why) == NULL);
	CHECK_STR(why, "a flag has no NVRTC equivalent");
	kt_remove_tree(dir);
	free(dir);

	if (!nvcc[0]) {
		printf("skipping the toolkit's NVRTC: nvcc not found at configure time\n");
		return;
	}
	const char *fast[] = {"-use_fast_math", "-DKT_X=1"};
	char *lib = kt_nvrtc_library(nvcc, fast, 2, &why);
	if (!lib) {
		printf("skipping the toolkit's NVRTC: %s has none (%s)\n", nvcc, why);
		return;
	}
	CHECK(strstr(lib, "libnvrtc.so") != NULL);
	free(lib);
}

int main(void)
{
	test_options();
	test_cubins();
	test_library(KT_TEST_NVCC);
	return check_done();
}
