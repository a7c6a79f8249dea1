/* test_key.c - cache keys: stable for the same inputs (a golden value pinned here, so keys agree
 * across machines and runs), different when any one field changes, independent of paths. */
#define _XOPEN_SOURCE 700
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "key.h"

static const char base_src[] =
	"// @kt kernel    scale\n"
	"// @kt shape     n\n"
	"// @kt type      T in float, half\n"
	"// @kt param     BLOCK in 64, 128, 256 default 128\n"
	"// @kt param     VEC in 1, 2, 4 default 2\n"
	"// @kt param     ALGO in plain, unrolled default plain\n"
	"// @kt param     FAST bool default false\n"
	"// @kt require   n % VEC == 0\n"
	"// @kt arg       out T[n] out\n"
	"// @kt arg       x   T[n] in\n"
	"// @kt arg       n   int = n\n"
	"// @kt grid      cdiv(n, BLOCK * VEC)\n"
	"// @kt block     BLOCK\n"
	"// @kt bytes     8 * n\n"
	"#include \"helper.cuh\"\n"
	"extern \"C\" __global__ void scale(T* out, const T* x, int n) { out[0] = x[0] * HELPER; }\n";

static char *tmpdir; /* under TMPDIR (tests/tmp checks it) */

static void write_text(const char *dir, const char *name, const char *text)
{
	char *p = kt_path_join(dir, name);
	kt_err err = {0};
	CHECK(kt_write_atomic(p, text, strlen(text), &err) == 0);
	free(p);
}

/* The inputs of one key; each test changes one thing. */
struct input {
	const char *dir;     /* where the template and helper.cuh are written */
	const char *src;
	const char *helper;  /* helper.cuh's text */
	const char *type;    /* "T=half" or NULL */
	int64_t n;
	kt_gpu_id gpu;
	const char *compiler, *arch, *flags;
	kt_measure measure;  /* zero: the defaults */
};

static struct input base(void)
{
	struct input in = {
		.dir = tmpdir, .src = base_src, .helper = "#define HELPER 2.0f\n", .n = 4096,
		.gpu = {"NVIDIA H200", 9, 0, 132, 52428800, 232448},
		.compiler = "Cuda compilation tools, release 13.0, V13.0.88", .arch = "90", .flags = "-O3",
	};
	return in;
}

/* Fills hex with the key of in; the field text goes to fields when not NULL. */
static int key_of(const struct input *in, char hex[KT_KEY_HEX], kt_buf *fields)
{
	char sub[512];
	snprintf(sub, sizeof sub, "%s/%s", tmpdir, in->dir);
	kt_err err = {0};
	kt_mkdirs(sub, &err);
	write_text(sub, "scale.cu.tmpl", in->src);
	write_text(sub, "helper.cuh", in->helper);
	char *path = kt_path_join(sub, "scale.cu.tmpl");
	const char *types[] = {in->type};
	kt_tmpl_opts to = {.types = in->type ? types : NULL, .ntypes = in->type ? 1 : 0};
	kt_buf diags = {0};
	kt_tmpl *t = kt_tmpl_parse(path, &to, &diags, &err);
	free(path);
	if (!t) {
		fprintf(stderr, "%s%s\n", kt_buf_str(&diags), err.msg);
		kt_buf_free(&diags);
		return -1;
	}
	kt_key k = {0};
	kt_target target = {.id = in->gpu};
	kt_toolchain tc = {NULL, in->compiler, in->arch, in->flags};
	kt_problem p = {.tmpl = t, .shape = &in->n, .target = &target, .tc = &tc, .measure = in->measure};
	int rc = kt_key_make(&p, &k, &err);
	if (rc == 0) {
		memcpy(hex, k.hex, KT_KEY_HEX);
		if (fields)
			kt_buf_puts(fields, kt_buf_str(&k.fields));
	}
	kt_key_free(&k);
	kt_tmpl_free(t);
	kt_buf_free(&diags);
	return rc;
}

/* Checks that in's key differs from the base key. */
static void differs(const char *what, const struct input *in, const char *base_hex)
{
	char hex[KT_KEY_HEX] = "";
	int rc = key_of(in, hex, NULL);
	CHECK(rc == 0);
	if (rc == 0 && !strcmp(hex, base_hex)) {
		check_failed++;
		fprintf(stderr, "changing %s alone did not change the key\n", what);
	}
}

static void test_stable(char *base_hex)
{
	struct input in = base();
	in.dir = "a";
	kt_buf fields = {0};
	CHECK(key_of(&in, base_hex, &fields) == 0);
	/* Pinned: a change here changes every key in every cache; do it only with KT_KEY_FORMAT. */
	CHECK_STR(base_hex, "549fe3fb420b85bcdc2df173fa417aad");
	char again[KT_KEY_HEX];
	CHECK(key_of(&in, again, NULL) == 0);
	CHECK_STR(again, base_hex);
	/* The same template elsewhere (another checkout) has the same key. */
	in.dir = "elsewhere/deeper";
	CHECK(key_of(&in, again, NULL) == 0);
	CHECK_STR(again, base_hex);
	/* The fields are what explain prints: one per line, the source by hash, no path. */
	const char *f = kt_buf_str(&fields);
	CHECK(!strncmp(f, "format=1\nkernel=scale\nsource=xxh128:", 36));
	CHECK(strstr(f, "\ninclude.0=helper.cuh xxh128:") != NULL);
	CHECK(strstr(f, "\nparam.BLOCK=int 64,128,256 default 128\n") != NULL);
	CHECK(strstr(f, "\nparam.ALGO=choice plain,unrolled default plain\n") != NULL);
	CHECK(strstr(f, "\nparam.FAST=bool false,true default false\n") != NULL);
	CHECK(strstr(f, "\ntype.T=float\n") != NULL);
	CHECK(strstr(f, "\nshape=n=4096\n") != NULL);
	CHECK(strstr(f, "\ngpu.name=NVIDIA H200\ngpu.cc=9.0\ngpu.sms=132\ngpu.l2_bytes=52428800\ngpu.smem_optin=232448\n"));
	CHECK(strstr(f, "\narch=90\nflags=-O3\n") != NULL);
	CHECK(strstr(f, "measure.") == NULL); /* the settings at their defaults: no field (measure.h) */
	CHECK(strstr(f, tmpdir) == NULL);
	char hex[KT_KEY_HEX];
	kt_key_of_fields(fields.data, fields.len, hex);
	CHECK_STR(hex, base_hex);
	kt_buf_free(&fields);
}

static void test_sensitive(const char *b)
{
	struct input in;
	char *src = kt_xstrdup(base_src);
	kt_buf spaced = {0};
	kt_buf_puts(&spaced, base_src);
	kt_buf_puts(&spaced, "\n");
	src[strlen(src) - 3] = '\t'; /* a space in the function body becomes a tab */
#define VARY(what, stmt) (in = base(), in.dir = "v", stmt, differs(what, &in, b))
	VARY("one source byte", in.src = src);
	VARY("trailing whitespace", in.src = spaced.data);
	free(src);
	kt_buf_free(&spaced);
	VARY("the included header", in.helper = "#define HELPER 3.0f\n");
	VARY("a type symbol", in.type = "T=half");
	VARY("the shape", in.n = 8192);
	VARY("the GPU name", strcpy(in.gpu.name, "NVIDIA H100"));
	VARY("the compute capability", in.gpu.cc_minor = 1);
	VARY("the SM count", in.gpu.sms = 144);
	VARY("the L2 size", in.gpu.l2_bytes = 62914560);
	VARY("the shared memory limit", in.gpu.smem_optin = 101376);
	VARY("the compiler", in.compiler = "Cuda compilation tools, release 12.8, V12.8.93");
	VARY("the architecture", in.arch = "100");
	VARY("the flags", in.flags = "-O3 --use_fast_math");
	VARY("a warm L2", in.measure.v[KT_MEASURE_L2] = KT_L2_WARM);
	VARY("graph launches", in.measure.v[KT_MEASURE_LAUNCH] = KT_LAUNCH_GRAPH);
#undef VARY
}

/* The space, constraints and defaults change the key through the fields too, not only through
 * the source bytes: the field text itself differs. */
static void test_space_fields(void)
{
	static const struct {
		const char *from, *to, *field;
	} cases[] = {
		{"in 64, 128, 256 default 128", "in 64, 128, 256, 512 default 128", "param.BLOCK=int 64,128,256,512 default 128"},
		{"VEC in 1, 2, 4 default 2", "VEC in 1, 2, 4 default 4", "param.VEC=int 1,2,4 default 4"},
		{"n % VEC == 0", "n % (2 * VEC) == 0", "require.0="},
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		struct input in = base();
		in.dir = "s";
		kt_buf src = {0}, f0 = {0}, f1 = {0};
		const char *at = strstr(base_src, cases[i].from);
		kt_buf_add(&src, base_src, (size_t)(at - base_src));
		kt_buf_puts(&src, cases[i].to);
		kt_buf_puts(&src, at + strlen(cases[i].from));
		char h0[KT_KEY_HEX], h1[KT_KEY_HEX];
		CHECK(key_of(&in, h0, &f0) == 0);
		in.src = src.data;
		CHECK(key_of(&in, h1, &f1) == 0);
		CHECK(strcmp(h0, h1) != 0);
		CHECK(strstr(kt_buf_str(&f1), cases[i].field) != NULL);
		/* Apart from the source hash, the field texts differ in the changed field. */
		const char *a = strstr(kt_buf_str(&f0), "\nparam."), *c = strstr(kt_buf_str(&f1), "\nparam.");
		CHECK(a && c && strcmp(a, c) != 0);
		kt_buf_free(&src);
		kt_buf_free(&f0);
		kt_buf_free(&f1);
	}
}

/* An option is a field after the type symbols: the caller's choice alone changes the key; a
 * template without options has no such field (its keys are as they were before options). */
static void test_option_field(const char *base_hex)
{
	kt_buf src = {0}, f0 = {0}, f1 = {0}, fb = {0};
	kt_buf_puts(&src, "// @kt option    LSE in natural, base2\n");
	kt_buf_puts(&src, base_src);
	struct input in = base();
	in.dir = "o";
	in.src = src.data;
	char h0[KT_KEY_HEX], h1[KT_KEY_HEX], hb[KT_KEY_HEX];
	CHECK(key_of(&in, h0, &f0) == 0);
	CHECK(strstr(kt_buf_str(&f0), "\ntype.T=float\noption.LSE=natural\nshape=n=4096\n") != NULL);
	in.type = "LSE=base2";
	CHECK(key_of(&in, h1, &f1) == 0);
	CHECK(strstr(kt_buf_str(&f1), "\noption.LSE=base2\n") != NULL);
	CHECK(strcmp(h0, h1) != 0);
	in = base();
	in.dir = "o";
	CHECK(key_of(&in, hb, &fb) == 0);
	CHECK_STR(hb, base_hex);
	CHECK(strstr(kt_buf_str(&fb), "option.") == NULL);
	kt_buf_free(&src);
	kt_buf_free(&f0);
	kt_buf_free(&f1);
	kt_buf_free(&fb);
}

/* The measurement settings: a setting away from its default is a field at the end of the text;
 * at the defaults there is none, so the keys of the records measured before the settings existed
 * (the committed cache/, which CI requires to hit) are the keys of cold, stream timing. */
static void test_measure_fields(const char *base_hex)
{
	struct input in = base();
	in.dir = "m";
	char h[KT_KEY_HEX], hw[KT_KEY_HEX], hg[KT_KEY_HEX];
	kt_buf f = {0};
	in.measure.v[KT_MEASURE_L2] = KT_L2_COLD; /* the defaults given explicitly */
	in.measure.v[KT_MEASURE_LAUNCH] = KT_LAUNCH_STREAM;
	CHECK(key_of(&in, h, NULL) == 0);
	CHECK_STR(h, base_hex);
	in.measure.v[KT_MEASURE_L2] = KT_L2_WARM;
	CHECK(key_of(&in, hw, &f) == 0);
	const char *end = kt_buf_str(&f) + f.len - strlen("\nflags=-O3\nmeasure.l2=warm\n");
	CHECK(f.len > 40 && !strcmp(end, "\nflags=-O3\nmeasure.l2=warm\n"));
	kt_buf_reset(&f);
	in.measure.v[KT_MEASURE_LAUNCH] = KT_LAUNCH_GRAPH;
	CHECK(key_of(&in, hg, &f) == 0);
	CHECK(strstr(kt_buf_str(&f), "\nflags=-O3\nmeasure.l2=warm\nmeasure.launch=graph\n") != NULL);
	CHECK(strcmp(hw, base_hex) != 0 && strcmp(hg, base_hex) != 0 && strcmp(hw, hg) != 0);
	kt_buf_free(&f);
}

static void test_escape(void)
{
	kt_buf b = {0};
	kt_key_escape("a\nb\\c\td", &b);
	CHECK_STR(kt_buf_str(&b), "a\\nb\\\\c\\x09d");
	kt_buf_free(&b);
	CHECK(kt_key_is_hex("0123456789abcdef0123456789abcdef"));
	CHECK(!kt_key_is_hex("0123456789abcdef0123456789abcdeF"));
	CHECK(!kt_key_is_hex("0123456789abcdef0123456789abcde"));
	CHECK(!kt_key_is_hex("../../../../etc/passwd"));
	/* A flag with a newline cannot forge a field. */
	struct input in = base();
	in.dir = "e";
	in.flags = "-O3\ngpu.name=other";
	kt_buf f = {0};
	char hex[KT_KEY_HEX];
	CHECK(key_of(&in, hex, &f) == 0);
	CHECK(strstr(kt_buf_str(&f), "\nflags=-O3\\ngpu.name=other\n") != NULL);
	kt_buf_free(&f);
}

/* kt_key_compiler runs the compiler once and remembers the answer by path, size and mtime. */
static void test_compiler(void)
{
	char dir[300], prog[320], count[320], memo[320];
	snprintf(dir, sizeof dir, "%s/fake-cuda", tmpdir);
	snprintf(prog, sizeof prog, "%s/nvcc", dir);
	snprintf(count, sizeof count, "%s/runs", dir);
	snprintf(memo, sizeof memo, "%s/memo", tmpdir);
	kt_err err = {0};
	CHECK(kt_mkdirs(dir, &err) == 0);
	kt_buf script = {0};
	kt_buf_printf(&script,
		      "#!/bin/sh\necho x >> '%s'\necho 'nvcc: NVIDIA (R) Cuda compiler driver'\n"
		      "echo 'Copyright (c) 2005-2025 NVIDIA Corporation'\necho 'Built on Wed_Aug_20_01:58:59_PM_PDT_2025'\n"
		      "echo 'Cuda compilation tools, release 13.0, V13.0.88'\necho 'Build cuda_13.0.r13.0/compiler.36424714_0'\n",
		      count);
	CHECK(kt_write_atomic(prog, script.data, script.len, &err) == 0);
	chmod(prog, 0755);
	kt_buf id = {0}, runs = {0};
	CHECK(kt_key_compiler(prog, memo, 1, &id, &err) == 0);
	CHECK_STR(kt_buf_str(&id), "Cuda compilation tools, release 13.0, V13.0.88; Build cuda_13.0.r13.0/compiler.36424714_0");
	kt_buf_reset(&id);
	CHECK(kt_key_compiler(prog, memo, 1, &id, &err) == 0);
	CHECK_STR(kt_buf_str(&id), "Cuda compilation tools, release 13.0, V13.0.88; Build cuda_13.0.r13.0/compiler.36424714_0");
	CHECK(kt_read_file(count, &runs, &err) == 0);
	CHECK_STR(kt_buf_str(&runs), "x\n");
	/* Without a writable memo it runs every time. */
	kt_buf_reset(&id);
	char memo2[330];
	snprintf(memo2, sizeof memo2, "%s/memo2", tmpdir);
	CHECK(kt_key_compiler(prog, memo2, 0, &id, &err) == 0);
	CHECK(kt_read_file(count, &runs, &err) == 0);
	CHECK_STR(kt_buf_str(&runs), "x\nx\n");
	/* A new compiler at the same path (another size and mtime) is asked again. */
	kt_buf_puts(&script, "echo 'Build cuda_13.0.r13.0/compiler.1_0' > /dev/null\n");
	struct timespec ts = {0, 20000000};
	nanosleep(&ts, NULL);
	CHECK(kt_write_atomic(prog, script.data, script.len, &err) == 0);
	chmod(prog, 0755);
	kt_buf_reset(&id);
	CHECK(kt_key_compiler(prog, memo, 1, &id, &err) == 0);
	CHECK(kt_read_file(count, &runs, &err) == 0);
	CHECK_STR(kt_buf_str(&runs), "x\nx\nx\n");
	CHECK(kt_key_compiler("kt-no-such-compiler", memo, 1, &id, &err) == -1);
	CHECK(strstr(err.msg, "kt-no-such-compiler") != NULL);
	kt_buf_free(&script);
	kt_buf_free(&id);
	kt_buf_free(&runs);
}

/* One problem whatever the template's version: only the template's own fields may differ. */
static void test_same_problem(void)
{
	const char *a = "format=1\nkernel=k\nsource=xxh128:aa\ninclude.0=h.cuh xxh128:01\nparam.B=int 1,2 default 1\n"
			"require.0=(B > 0)\nshape=n=8\ngpu.name=NVIDIA H200\narch=90\n";
	const char *b = "format=1\nkernel=k\nsource=xxh128:bb\nparam.B=int 1,2,4 default 2\nparam.C=int 1 default 1\n"
			"shape=n=8\ngpu.name=NVIDIA H200\narch=90\n";
	CHECK(kt_key_same_problem(a, b) && kt_key_same_problem(b, a) && kt_key_same_problem(a, a));
	CHECK(!kt_key_same_problem(a, "format=1\nkernel=k\nsource=xxh128:aa\nshape=n=16\ngpu.name=NVIDIA H200\narch=90\n"));
	CHECK(!kt_key_same_problem(a, "format=1\nkernel=k\nshape=n=8\ngpu.name=NVIDIA H100 80GB HBM3\narch=90\n"));
	CHECK(!kt_key_same_problem(a, "format=1\nkernel=k\nshape=n=8\ngpu.name=NVIDIA H200\narch=90\nflags=-O3\n"));
	CHECK(!kt_key_same_problem(a, "format=1\nkernel=k\nshape=n=8\ngpu.name=NVIDIA H200\n"));
	CHECK(!kt_key_same_problem("kernel=k\nsourcery=1\n", "kernel=k\n")); /* a prefix of a name is not the name */
	/* The problem's hash: one for both versions, another for another shape or GPU. */
	char ha[KT_KEY_HEX], hb[KT_KEY_HEX], hc[KT_KEY_HEX], hd[KT_KEY_HEX];
	kt_key_problem(a, ha);
	kt_key_problem(b, hb);
	kt_key_problem("format=1\nkernel=k\nsource=xxh128:aa\nshape=n=16\ngpu.name=NVIDIA H200\narch=90\n", hc);
	kt_key_problem("format=1\nkernel=k\nshape=n=8\ngpu.name=NVIDIA H100 80GB HBM3\narch=90\n", hd);
	CHECK(kt_key_is_hex(ha) && !strcmp(ha, hb) && strcmp(ha, hc) && strcmp(ha, hd) && strcmp(hc, hd));
	char whole[KT_KEY_HEX];
	kt_key_of_fields(a, strlen(a), whole);
	CHECK(strcmp(ha, whole) != 0); /* not the key of the whole text */
}

int main(void)
{
	if (!(tmpdir = kt_temp_dir(getenv("TMPDIR"), "kt-test-key", NULL)))
		return 2;
	char base_hex[KT_KEY_HEX] = "";
	test_stable(base_hex);
	test_sensitive(base_hex);
	test_space_fields();
	test_option_field(base_hex);
	test_measure_fields(base_hex);
	test_escape();
	test_compiler();
	test_same_problem();
	if (check_failed == 0) /* else kept, to look at */
		kt_remove_tree(tmpdir);
	free(tmpdir);
	return check_done();
}
