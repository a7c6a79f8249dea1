/* test_compile.c - parallel compilation: ptxas reports and a real nvcc batch
 * (a good variant, a broken one, the worker's check kernels) when nvcc is available. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <poll.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "compile.h"
#include "emit.h"
#include "proc.h"
#include "space.h"

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
	/* Inside a namespace (variants compiled together) the mangled name is nested. */
	static const char nested[] = "ptxas info    : Compiling entry function '_ZN5ab_ns22kt_rms_0123abcd_kernelEPf' for 'sm_90'\n"
				     "ptxas info    : Used 12 registers, used 0 barriers\n";
	int r = -1, sm = -1, lo = -1, sp = -1;
	CHECK_INT(kt_ptxas_parse(nested, "kt_rms_0123abcd_kernel", &r, &sm, &lo, &sp), 0);
	CHECK_INT(r, 12);
	CHECK_INT(kt_ptxas_parse(nested, "ab_ns", &r, &sm, &lo, &sp), -1);
	CHECK_INT(kt_ptxas_parse(nested, "kt_rms", &r, &sm, &lo, &sp), -1);
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
	char dep[600];
	snprintf(dep, sizeof dep, "%s/dep.cuh", dir);
	kt_err err = {0};
	kt_write_atomic(dep, "// a header\n", 12, &err);
	const char *deps[1] = {dep};
	kt_compiler c = {nvcc, NULL, "90", NULL, 0, 2, dir, deps, 1, NULL, 0, NULL};
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
	CHECK(u[0].seconds > 0 && u[0].seconds < 300 && u[2].seconds > 0); /* from ninja's log */

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
	kt_compiler bad = {"/nonexistent/nvcc", NULL, "90", NULL, 0, 1, dir, NULL, 0, NULL, 0, NULL};
	unit(&u[0], "other", "k", "__global__ void k() {}\n");
	int rc = kt_compile(&bad, u, 1, &err);
	CHECK_INT(rc, 0);
	if (rc)
		fprintf(stderr, "%s\n", err.msg);
	CHECK_INT(u[0].ok, 0);
	CHECK(u[0].msg && strstr(u[0].msg, "nonexistent"));
	kt_unit_free(&u[0]);
}

/* Runs argv to completion; its exit status (-1 when it could not start). */
static int run(char *const argv[])
{
	kt_proc p;
	kt_err err = {0};
	int status = 0;
	if (kt_proc_spawn(&p, argv, 0, "/dev/null", &err) || kt_proc_wait(&p, 300, &status) != 1)
		return -1;
	return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

/* The PTX body of entry `name` in text, its basic-block labels and local depots renumbered
 * from 0 (a translation unit's numbering runs across its functions).  "" when missing. */
static void ptx_entry(const char *text, const char *name, kt_buf *out)
{
	char key[256];
	snprintf(key, sizeof key, ".entry %s(", name);
	const char *p = strstr(text, key), *end = p ? strstr(p, "\n}\n") : NULL;
	for (; p && p < end; p++) {
		static const char *const counted[] = {"$L__BB", "__local_depot"};
		int hit = 0;
		for (int i = 0; i < 2 && !hit; i++)
			if (!strncmp(p, counted[i], strlen(counted[i]))) {
				kt_buf_puts(out, counted[i]);
				p += strlen(counted[i]);
				while (*p >= '0' && *p <= '9')
					p++;
				p--;
				hit = 1;
			}
		if (!hit)
			kt_buf_putc(out, *p);
	}
}

static const char pack_prelude[] = "// kt part test\n#include <cuda_runtime.h>\n";

static void part_unit(kt_unit *u, const char *name, const char *body)
{
	char entry[64];
	snprintf(entry, sizeof entry, "%s_kernel", name);
	kt_buf text = {0}; /* body with its "%s" replaced by the kernel's name */
	const char *at = strstr(body, "%s");
	kt_buf_add(&text, body, (size_t)(at - body));
	kt_buf_printf(&text, "%s%s", entry, at + 2);
	unit(u, name, entry, "");
	kt_buf_printf(&u->src, "%s%s", pack_prelude, kt_buf_str(&text));
	kt_buf_printf(&u->part, "// kt part: %s\nnamespace %s_ns {\n%s}\n", name, name, kt_buf_str(&text));
	kt_buf_free(&text);
}

/* Variants of a shipped template compiled together, as the tuner does, from its copy without the
 * reference kernel (kt_emit_unreferenced): each is found in the shared cubin with its resources,
 * its code is exactly the code of its own translation unit with the whole template (what ships),
 * and the reference is left out. */
static void test_pack_template(const char *nvcc, const char *dir)
{
	kt_err err = {0};
	kt_buf diags = {0}, prelude = {0};
	const char *types[] = {"T=bfloat16"};
	kt_tmpl_opts to = {.types = types, .ntypes = 1};
	kt_tmpl *t = kt_tmpl_parse(KT_TEMPLATES_DIR "/rmsnorm.cu.tmpl", &to, &diags, &err);
	CHECK(t != NULL);
	if (!t)
		return;
	int64_t shape[2] = {64, 4096};
	kt_space sp = {0};
	CHECK_INT(kt_space_enum(t, shape, &sp, &err), 0);
	CHECK_INT(kt_emit_prelude(t, &prelude), 0);
	char work[600], noref[700];
	snprintf(work, sizeof work, "%s/pack", dir);
	snprintf(noref, sizeof noref, "%s/rmsnorm_noref.cuh", work);
	kt_buf copy = {0};
	CHECK_INT(kt_emit_unreferenced(t, &copy), 0);
	CHECK_INT(kt_mkdirs(work, &err), 0);
	CHECK_INT(kt_write_atomic(noref, copy.data, copy.len, &err), 0);
	kt_buf_free(&copy);
	kt_compiler c = {nvcc, NULL, "90", NULL, 0, 1, work, NULL, 0, kt_buf_str(&prelude), 8, NULL};
	enum { N = 4 };
	kt_unit u[N];
	for (int i = 0; i < N; i++) {
		const uint16_t *cfg = kt_space_cfg(&sp, (size_t)i * sp.count / N);
		char sym[160];
		kt_emit_symbol(t, t->kernel, cfg, sym, sizeof sym);
		unit(&u[i], sym, "", "");
		snprintf(u[i].entry, sizeof u[i].entry, "%s_kernel", sym);
		kt_emit_variant(t, cfg, sym, &u[i].src);
		kt_emit_part_from(t, noref, cfg, sym, &u[i].part);
	}
	CHECK_INT(kt_compile(&c, u, N, &err), 0);
	char pack_src[2048];
	snprintf(pack_src, sizeof pack_src, "%s/%s_pack.cu", work, u[0].name);
	kt_buf pack_ptx = {0};
	char ptx[800];
	snprintf(ptx, sizeof ptx, "%s/pack.ptx", work);
	char *pargv[] = {(char *)nvcc, "-ptx", "-arch=sm_90", "-o", ptx, pack_src, NULL};
	CHECK_INT(run(pargv), 0);
	kt_read_file(ptx, &pack_ptx, &err);
	CHECK(pack_ptx.len > 0 && !strstr(pack_ptx.data, "_reference"));
	char *shared = u[0].cubin ? strdup(u[0].cubin) : NULL;
	for (int i = 0; i < N; i++) {
		CHECK_INT(u[i].ok, 1);
		CHECK_INT(u[i].packed, 1);
		CHECK(u[i].regs > 0);
		CHECK(shared && u[i].cubin && !strcmp(u[i].cubin, shared));
		kt_buf src = {0};
		kt_buf_printf(&src, "%s/%s.cu", work, u[i].name);
		kt_write_atomic(kt_buf_str(&src), u[i].src.data, u[i].src.len, &err);
		char *argv[] = {(char *)nvcc, "-ptx", "-arch=sm_90", "-o", ptx, src.data, NULL};
		CHECK_INT(run(argv), 0);
		kt_buf alone = {0}, a = {0}, b = {0};
		kt_read_file(ptx, &alone, &err);
		CHECK(strstr(kt_buf_str(&alone), "_reference") != NULL); /* the whole template, as it ships */
		ptx_entry(kt_buf_str(&alone), u[i].entry, &a);
		ptx_entry(kt_buf_str(&pack_ptx), u[i].entry, &b);
		CHECK(a.len > 100);
		CHECK(a.len == b.len && !memcmp(a.data, b.data, a.len));
		kt_buf_free(&src);
		kt_buf_free(&alone);
		kt_buf_free(&a);
		kt_buf_free(&b);
		kt_unit_free(&u[i]);
	}
	free(shared);
	kt_buf_free(&pack_ptx);
	kt_buf_free(&prelude);
	kt_buf_free(&diags);
	kt_space_free(&sp);
	kt_tmpl_free(t);
}

/* A pack with a broken part: its units are compiled alone, each compile error is its own, the
 * others pass.  Parts that only fail together (one C symbol defined twice): finish says 1. */
static void test_pack_failures(const char *nvcc, const char *dir)
{
	char work[600];
	snprintf(work, sizeof work, "%s/packfail", dir);
	kt_err err = {0};
	kt_compiler c = {nvcc, NULL, "90", NULL, 0, 1, work, NULL, 0, pack_prelude, 8, NULL};
	kt_unit u[3];
	part_unit(&u[0], "pa", "extern \"C\" __global__ void %s(float *o) { o[0] = 1.f; }\n");
	part_unit(&u[1], "pb", "extern \"C\" __global__ void %s(float *o) { o[0] = undefined_thing; }\n");
	part_unit(&u[2], "pc", "__global__ void %s(float *o) { o[threadIdx.x] = 2.f; }\n");
	kt_proc ninja;
	CHECK_INT(kt_compile_start(&c, u, 3, 0, &ninja, &err), 0);
	CHECK_INT(kt_compile_finish(&c, u, 3, 0, &ninja, &err), 0);
	CHECK_INT(u[0].ok, 1);
	CHECK_INT(u[0].packed, 0);
	CHECK_INT(u[1].ok, 0);
	CHECK(u[1].msg && strstr(u[1].msg, "undefined_thing"));
	CHECK_INT(u[2].ok, 1);
	CHECK(u[2].regs > 0); /* a mangled name: found in its own unit's report */
	for (int i = 0; i < 3; i++)
		kt_unit_free(&u[i]);

	/* Each alone compiles; together the C function kt_twice is defined twice. */
	const char *twice = "extern \"C\" __device__ float kt_twice(float v) { return 2.f * v; }\n"
			    "__global__ void %s(float *o) { o[0] = kt_twice(o[0]); }\n";
	part_unit(&u[0], "qa", twice);
	part_unit(&u[1], "qb", twice);
	CHECK_INT(kt_compile_start(&c, u, 2, 1, &ninja, &err), 0);
	CHECK_INT(kt_compile_finish(&c, u, 2, 1, &ninja, &err), 1);
	CHECK_INT(u[0].ok, 1);
	CHECK_INT(u[1].ok, 1);
	CHECK(strcmp(u[0].cubin, u[1].cubin) != 0);
	for (int i = 0; i < 2; i++)
		kt_unit_free(&u[i]);

	/* Packed kernels in a namespace keep their resources (mangled names are nested there). */
	part_unit(&u[0], "ra", "__global__ void %s(float *o) { o[threadIdx.x] = 3.f; }\n");
	part_unit(&u[1], "rb", "__global__ void %s(float *o) { __shared__ float s[64]; s[threadIdx.x] = 1.f; __syncthreads(); o[0] = s[63]; }\n");
	CHECK_INT(kt_compile(&c, u, 2, &err), 0);
	CHECK_INT(u[0].packed, 1);
	CHECK_INT(u[1].packed, 1);
	CHECK(u[0].regs > 0);
	CHECK_INT(u[1].smem_static, 256);
	for (int i = 0; i < 2; i++)
		kt_unit_free(&u[i]);
}

/* How batches use NVRTC, with a stand-in for `kt nvrtc` whose comparison with nvcc finds the same
 * code, other code or a failure: the first pack of a batch compares, the rest go to nvcc; then
 * NVRTC compiles where it gave code (its units stand in for nvcc's where the code differs, in
 * packs of at most two), and nvcc alone where it failed.  A batch that NVRTC compiled and that finishes after a failure is
 * compiled again by nvcc. */
static void test_nvrtc_batches(const char *nvcc, const char *dir)
{
	static const struct {
		const char *verdict;
		int state;
	} cases[] = {{"same", KT_NVRTC_SAME_CODE}, {"differs", KT_NVRTC_STANDS_IN}, {"failed", KT_NVRTC_OFF}};
	for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
		char work[600];
		snprintf(work, sizeof work, "%s/nvrtc_%s", dir, cases[k].verdict);
		setenv("FAKE_NVRTC_VERDICT", cases[k].verdict, 1);
		kt_err err = {0};
		kt_nvrtc_use use = {KT_FAKE_DIR "/fake_kt_nvrtc.sh", "libnvrtc.so", KT_NVRTC_UNKNOWN, 0};
		kt_compiler c = {nvcc, NULL, "90", NULL, 0, 2, work, NULL, 0, pack_prelude, 8, &use};
		kt_unit u[2];
		part_unit(&u[0], "na", "__global__ void %s(float *o) { o[0] = 1.f; }\n");
		part_unit(&u[1], "nb", "__global__ void %s(float *o) { o[1] = 2.f; }\n");
		CHECK_INT(kt_compile(&c, u, 2, &err), 0); /* two jobs: two packs of one */
		CHECK_INT(use.state, cases[k].state);
		CHECK_INT(u[0].ok && u[1].ok, 1);
		CHECK_INT(u[0].by_nvrtc + u[1].by_nvrtc, 0); /* the comparing one keeps nvcc's cubin; nvcc the other's */
		CHECK_INT(kt_unit_stands_in(&c, &u[0]) + kt_unit_stands_in(&c, &u[1]), 0);
		CHECK(u[1].regs > 0);
		for (int i = 0; i < 2; i++)
			kt_unit_free(&u[i]);

		/* A batch that NVRTC compiled finishes after another could not: nvcc compiles it again. */
		use.state = cases[k].state == KT_NVRTC_OFF ? KT_NVRTC_SAME_CODE : cases[k].state;
		part_unit(&u[0], "ne", "__global__ void %s(float *o) { o[4] = 5.f; }\n");
		kt_proc ninja;
		CHECK_INT(kt_compile_start(&c, u, 1, 1, &ninja, &err), 0);
		use.state = KT_NVRTC_OFF;
		CHECK_INT(kt_compile_finish(&c, u, 1, 1, &ninja, &err), 0);
		CHECK_INT(u[0].ok, 1);
		CHECK_INT(u[0].by_nvrtc, 0);
		char path[700];
		snprintf(path, sizeof path, "%s/build1n.ninja", work);
		CHECK_INT(access(path, F_OK), 0);
		kt_unit_free(&u[0]);
		use.state = cases[k].state;

		part_unit(&u[0], "nc", "__global__ void %s(float *o) { o[2] = 3.f; }\n");
		part_unit(&u[1], "nd", "__global__ void %s(float *o) { o[3] = 4.f; }\n");
		CHECK_INT(kt_compile(&c, u, 2, &err), 0);
		int nvrtc = cases[k].state != KT_NVRTC_OFF;
		CHECK_INT(u[0].by_nvrtc + u[1].by_nvrtc, nvrtc ? 2 : 0);
		CHECK_INT(kt_unit_stands_in(&c, &u[0]) + kt_unit_stands_in(&c, &u[1]), cases[k].state == KT_NVRTC_STANDS_IN ? 2 : 0);
		kt_buf text = {0};
		snprintf(path, sizeof path, "%s/build0.ninja", work);
		kt_read_file(path, &text, &err);
		CHECK_INT(strstr(kt_buf_str(&text), "--verify") == NULL, 1);
		CHECK_INT(strstr(kt_buf_str(&text), "fake_kt_nvrtc") != NULL, nvrtc);
		kt_buf_free(&text);
		for (int i = 0; i < 2; i++)
			kt_unit_free(&u[i]);

		/* The same code found on a kernel with shared memory vouches for kernels with it; found
		 * on one without, it does not (test_nvrtc_shared). */
		if (cases[k].state == KT_NVRTC_SAME_CODE)
			for (int seen = 0; seen < 2; seen++) {
				kt_nvrtc_use fresh = {use.kt, use.lib, KT_NVRTC_UNKNOWN, 0};
				kt_compiler d = c;
				d.nvrtc = &fresh;
				d.jobs = 1;
				static const char shared[] = "__global__ void %s(float *o) { __shared__ float s[32]; "
							     "s[threadIdx.x] = 1.f; __syncthreads(); o[0] = s[31]; }\n";
				part_unit(&u[0], seen ? "ni" : "nj", seen ? shared : "__global__ void %s(float *o) { o[8] = 9.f; }\n");
				CHECK_INT(kt_compile(&d, &u[0], 1, &err), 0);
				CHECK_INT(fresh.state, KT_NVRTC_SAME_CODE);
				CHECK_INT(fresh.shared_seen, seen);
				part_unit(&u[1], seen ? "nk" : "nl", shared);
				CHECK_INT(kt_compile(&d, &u[1], 1, &err), 0);
				CHECK_INT(u[1].by_nvrtc, 1);
				CHECK_INT(kt_unit_stands_in(&d, &u[1]), !seen);
				for (int i = 0; i < 2; i++)
					kt_unit_free(&u[i]);
			}

		/* One job: a pack of three, which shares nvcc's fixed cost.  NVRTC compiles it only
		 * where it gives nvcc's code; where it would stand in, nvcc does. */
		kt_unit w[3];
		kt_compiler one = c;
		one.jobs = 1;
		part_unit(&w[0], "nf", "__global__ void %s(float *o) { o[5] = 6.f; }\n");
		part_unit(&w[1], "ng", "__global__ void %s(float *o) { o[6] = 7.f; }\n");
		part_unit(&w[2], "nh", "__global__ void %s(float *o) { o[7] = 8.f; }\n");
		CHECK_INT(kt_compile(&one, w, 3, &err), 0);
		CHECK_INT(w[0].packed && w[1].packed && w[2].packed, 1);
		CHECK_INT(w[0].by_nvrtc + w[1].by_nvrtc + w[2].by_nvrtc, cases[k].state == KT_NVRTC_SAME_CODE ? 3 : 0);
		for (int i = 0; i < 3; i++)
			kt_unit_free(&w[i]);
	}
	unsetenv("FAKE_NVRTC_VERDICT");
}

/* The NVRTC of nvcc's toolkit (owned by the caller), else NULL, saying why the tests on `what`
 * are skipped. */
static char *real_nvrtc(const char *nvcc, const char *what)
{
	const char *why = NULL;
	char *lib = kt_nvrtc_library(nvcc, NULL, 0, &why);
	if (!lib)
		printf("skipping NVRTC on %s: %s\n", what, why);
	return lib;
}

/* "The same code" found on a kernel without shared memory does not vouch for one with it: NVRTC
 * 13 addresses shared memory otherwise than nvcc, so such a kernel that NVRTC compiles stands in
 * for nvcc's (its code does differ, here seen), as does one whose launch gives it dynamic shared
 * memory; a kernel without either does not. */
static void test_nvrtc_shared(const char *nvcc, const char *dir)
{
	char *lib = real_nvrtc(nvcc, "shared memory");
	if (!lib)
		return;
	static const char plain[] = "__global__ void %s(float *o) { o[threadIdx.x] *= 2.f; }\n",
			  shared[] = "__global__ void %s(float *o) { __shared__ float s[64]; s[threadIdx.x] = o[threadIdx.x];"
				     " __syncthreads(); o[threadIdx.x] = s[63 - threadIdx.x]; }\n",
			  dynamic[] = "__global__ void %s(float *o) { extern __shared__ float d[]; d[threadIdx.x] = o[threadIdx.x];"
				      " __syncthreads(); o[threadIdx.x] = d[63 - threadIdx.x]; }\n";
	kt_err err = {0};
	char work[600], work_nvcc[600];
	snprintf(work, sizeof work, "%s/rtc_shared", dir);
	snprintf(work_nvcc, sizeof work_nvcc, "%s/rtc_shared_nvcc", dir);
	kt_nvrtc_use use = {KT_EXE, lib, KT_NVRTC_UNKNOWN, 0};
	kt_compiler c = {nvcc, NULL, "90", NULL, 0, 1, work, NULL, 0, pack_prelude, 8, &use};
	kt_compiler by_nvcc = c;
	by_nvcc.nvrtc = NULL;
	by_nvcc.workdir = work_nvcc;
	kt_unit u[4], theirs;
	part_unit(&u[0], "sa", plain); /* the comparison */
	CHECK_INT(kt_compile(&c, &u[0], 1, &err), 0);
	CHECK_INT(use.state, KT_NVRTC_SAME_CODE);
	CHECK_INT(use.shared_seen, 0);
	part_unit(&u[1], "sb", shared);
	part_unit(&u[2], "sc", plain);
	part_unit(&u[3], "sd", dynamic);
	u[3].dyn_smem = 256;
	for (int i = 1; i < 4; i++) {
		CHECK_INT(kt_compile(&c, &u[i], 1, &err), 0);
		CHECK_INT(u[i].by_nvrtc, 1);
		CHECK_INT(kt_unit_stands_in(&c, &u[i]), i != 2);
	}
	CHECK_INT(u[1].smem_static, 256);
	part_unit(&theirs, "sb", shared);
	CHECK_INT(kt_compile(&by_nvcc, &theirs, 1, &err), 0);
	kt_buf x = {0}, y = {0};
	char what[128] = "";
	kt_read_file(u[1].cubin, &x, &err);
	kt_read_file(theirs.cubin, &y, &err);
	CHECK_INT(kt_cubin_same_code(x.data, x.len, y.data, y.len, what, sizeof what), 0);
	kt_buf_free(&x);
	kt_buf_free(&y);
	kt_unit_free(&theirs);
	for (int i = 0; i < 4; i++)
		kt_unit_free(&u[i]);

	free(lib);
}

/* Every shipped template's default configuration through the real `kt nvrtc`: the first batch
 * compares NVRTC with nvcc, and a second batch is compiled by NVRTC alone.  Where they agree, to
 * the same code, with ptxas's report read as from nvcc's: the templates without a __shared__
 * array (merge_attn_states with the INFINITY that `kt nvrtc` gives it as nvcc's math.h does).
 * The others NVRTC compiles to other code, standing in for nvcc: NVRTC 13.0 gives 64-bit
 * shared-memory addresses where nvcc gives 32-bit ones. */
static void test_nvrtc_templates(const char *nvcc, const char *dir)
{
	char *lib = real_nvrtc(nvcc, "the templates");
	if (!lib)
		return;
	static const char *const names[] = {"fused_add_rmsnorm", "gelu_and_mul", "gemm", "merge_attn_states",
					    "rmsnorm", "silu_and_mul", "softmax", "transpose"};
	for (size_t k = 0; k < sizeof names / sizeof names[0]; k++) {
		kt_buf diags = {0}, prelude = {0}, path = {0};
		kt_err err = {0};
		kt_buf_printf(&path, "%s/%s.cu.tmpl", KT_TEMPLATES_DIR, names[k]);
		kt_tmpl_opts to = {0};
		kt_tmpl *t = kt_tmpl_parse(kt_buf_str(&path), &to, &diags, &err);
		CHECK(t != NULL);
		if (!t || kt_emit_prelude(t, &prelude)) {
			CHECK(!"a shipped template shares a translation unit");
			kt_tmpl_free(t);
			continue;
		}
		char work[600];
		snprintf(work, sizeof work, "%s/rtc_%s", dir, names[k]);
		kt_nvrtc_use use = {KT_EXE, lib, 0, 0};
		kt_compiler c = {nvcc, NULL, "90a", NULL, 0, 1, work, NULL, 0, kt_buf_str(&prelude), 8, &use};
		uint16_t cfg[64] = {0};
		for (int i = 0; i < t->nparams; i++)
			cfg[i] = (uint16_t)t->params[i].def;
		char sym[160];
		kt_emit_symbol(t, t->kernel, cfg, sym, sizeof sym);
		kt_unit u[2];
		for (int b = 0; b < 2; b++) {
			unit(&u[b], sym, "", "");
			snprintf(u[b].name, sizeof u[b].name, "%.150s_%d", sym, b); /* another stem: compiled again */
			snprintf(u[b].entry, sizeof u[b].entry, "%s_kernel", sym);
			kt_emit_variant(t, cfg, sym, &u[b].src);
			kt_emit_part(t, cfg, sym, &u[b].part);
			CHECK_INT(kt_compile(&c, &u[b], 1, &err), 0);
			CHECK_INT(u[b].ok, 1);
			CHECK(use.state != KT_NVRTC_UNKNOWN);
			CHECK_INT(u[b].by_nvrtc, b && use.state > 0);
			CHECK(u[b].regs > 0);
		}
		int same = use.state == KT_NVRTC_SAME_CODE;
		printf("%s: NVRTC %s\n", names[k], same ? "gives nvcc's code" : use.state > 0 ? "stands in for nvcc" : "cannot compile it");
		int no_shared = !strcmp(names[k], "silu_and_mul") || !strcmp(names[k], "gelu_and_mul") ||
				!strcmp(names[k], "merge_attn_states");
		CHECK_INT(use.state, no_shared ? KT_NVRTC_SAME_CODE : KT_NVRTC_STANDS_IN);
		kt_buf x = {0}, y = {0};
		char what[128] = "";
		kt_read_file(u[0].cubin, &x, &err);
		kt_read_file(u[1].cubin, &y, &err);
		CHECK_INT(kt_cubin_same_code(x.data, x.len, y.data, y.len, what, sizeof what), same);
		if (same)
			CHECK_INT(u[0].regs, u[1].regs);
		kt_buf_free(&x);
		kt_buf_free(&y);
		for (int b = 0; b < 2; b++)
			kt_unit_free(&u[b]);
		kt_buf_free(&diags);
		kt_buf_free(&prelude);
		kt_buf_free(&path);
		kt_tmpl_free(t);
	}
	free(lib);
}

/* A failed compile is said in one line: its error line, never an empty message. */
static void test_first_error(void)
{
	static const struct {
		const char *log, *want;
	} cases[] = {
		{"nvcc fatal   : Option '--cubin' is not allowed when compiling for multiple GPU code instances\n",
		 "nvcc fatal   : Option '--cubin' is not allowed when compiling for multiple GPU code instances"},
		{"In file included from x.cu:3:\n/t/k.cu.tmpl(12): error: identifier \"VEC\" is undefined\n\n1 error detected\n",
		 "/t/k.cu.tmpl(12): error: identifier \"VEC\" is undefined"},
		{"\n  \nptxas info : used 32 registers\n", "ptxas info : used 32 registers"},
		{"", "the compiler failed without a message"},
		{" \n\t\n", "the compiler failed without a message"},
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		kt_buf b = {0};
		kt_compile_first_error(cases[i].log, &b);
		CHECK_STR(kt_buf_str(&b), cases[i].want);
		kt_buf_free(&b);
	}
}

/* kt_compile_poll: a unit whose compile ended is taken while another still compiles; a failed
 * one waits for the finish.  The stand-in compiler makes "slow" wait on a FIFO that the test
 * writes only after it took "quick", so the order is the test's, not the clock's. */
static void test_poll(const char *dir)
{
	char fifo[600], cc[600];
	snprintf(fifo, sizeof fifo, "%s/go", dir);
	snprintf(cc, sizeof cc, "%s/slowcc.sh", dir);
	CHECK_INT(mkfifo(fifo, 0600), 0);
	kt_buf script = {0};
	kt_buf_printf(&script,
		      "#!/bin/sh\n"
		      "while [ $# -gt 1 ]; do [ \"$1\" = -o ] && out=$2; shift; done\n"
		      "case ${1##*/} in *broken*) echo 'error: broken' >&2; exit 1 ;; *slow*) read go < '%s' ;; esac\n"
		      "printf cubin > \"$out\"\n",
		      fifo);
	kt_err err = {0};
	CHECK_INT(kt_write_atomic(cc, script.data, script.len, &err), 0);
	chmod(cc, 0755);
	kt_buf_free(&script);
	kt_compiler c = {cc, NULL, "90", NULL, 0, 3, dir, NULL, 0, NULL, 0, NULL};
	kt_unit u[3];
	unit(&u[0], "quick", "", "// quick\n");
	unit(&u[1], "slow", "", "// slow\n");
	unit(&u[2], "broken", "", "// broken\n");
	kt_proc ninja;
	unsigned char done[3] = {0};
	CHECK_INT(kt_compile_start(&c, u, 3, 9, &ninja, &err), 0);
	int polls = 0;
	while (!done[0] && !ninja.eof && polls++ < 100) { /* each turn waits for a line of ninja's */
		struct pollfd p = {ninja.fd, POLLIN, 0};
		poll(&p, 1, -1);
		kt_compile_poll(&c, u, 3, &ninja, done);
	}
	CHECK_INT(done[0], 1);
	CHECK_INT(u[0].ok, 1);
	CHECK_INT(done[1], 0); /* still compiling: it waits for the FIFO */
	int fd = open(fifo, O_WRONLY);
	CHECK(fd >= 0 && write(fd, "go\n", 3) == 3);
	close(fd);
	CHECK_INT(kt_compile_finish(&c, u, 3, 9, &ninja, &err), 0);
	CHECK_INT(u[1].ok, 1);
	CHECK_INT(u[2].ok, 0);
	CHECK_INT(done[2], 0);
	CHECK(u[2].msg && strstr(u[2].msg, "broken"));
	CHECK(ninja.fd < 0); /* the channel is closed */
	for (int i = 0; i < 3; i++)
		kt_unit_free(&u[i]);
}

int main(void)
{
	test_ptxas();
	test_first_error();
	char *pdir = kt_temp_dir(getenv("TMPDIR"), "kt-test-poll", NULL);
	CHECK(pdir != NULL);
	if (pdir) {
		test_poll(pdir);
		kt_remove_tree(pdir);
		free(pdir);
	}
	const char *nvcc = KT_TEST_NVCC;
	if (nvcc[0]) {
		char *dir = kt_temp_dir(getenv("TMPDIR"), "kt-test-compile", NULL);
		if (!dir)
			return 1;
		test_nvcc(nvcc, dir);
		test_pack_template(nvcc, dir);
		test_pack_failures(nvcc, dir);
		test_nvrtc_batches(nvcc, dir);
		test_nvrtc_templates(nvcc, dir);
		test_nvrtc_shared(nvcc, dir);
		kt_remove_tree(dir);
		free(dir);
	} else {
		printf("skipping the nvcc tests: nvcc not found at configure time\n");
	}
	return check_done();
}
