/* test_tmpl.c - the template parser: a full template (directives in an unusual order) parses to
 * the right structure; shapes and configurations as text; local includes; launch geometry;
 * the C argument list; the environment and constraints; diagnostics of a broken template. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "tmpl.h"
#include "util.h"

static const char full[] =
	"// a test kernel: directives in no particular order\n"
	"// @kt tolerance 1e-2 5e-3\n"
	"// @kt grid      cdiv(rows, RPB), 2\n"
	"// @kt block     BLOCK\n"
	"// @kt kernel    k\n"
	"// @kt reference k_naive grid rows, 1 block 256 smem hidden * 4\n"
	"// @kt shape     rows, hidden\n"
	"// @kt type      T in half, bfloat16, float default bfloat16\n"
	"// @kt param     BLOCK in 64..1024 pow2 default 256\n"
	"// @kt param     VEC in 1, 2, 4, 8 default 8\n"
	"// @kt param     RPB in 1..4\n"
	"// @kt param     STEP in 0..12 step 4 default 8\n"
	"// @kt param     ALGO in twopass, onepass default onepass\n"
	"// @kt param     FAST bool default true\n"
	"// @kt require   hidden % (VEC * 2) == 0\n"
	"\t//   @kt   require ALGO == \"onepass\" || BLOCK <= 512\n"
	"// @kt arg       out T[rows*hidden] out\n"
	"// @kt arg       x   T[rows*hidden] in fill normal(0, 2) neginf 0.25\n"
	"// @kt arg       w   float[hidden] inout fill const(1.5)\n"
	"// @kt arg       ids int[rows] in fill int(0, 9)\n"
	"// @kt arg       rows int = rows\n"
	"// @kt arg       hidden int64 = hidden\n"
	"// @kt arg       eps float = 1e-6\n"
	"// @kt smem      ALGO == \"twopass\" ? BLOCK * 4 : 0\n"
	"// @kt bytes     2 * (2 * rows * hidden + hidden)\n"
	"// @kt flops     4.5 * rows * hidden\n"
	"// not a directive: @kt kernel other\n"
	"/* __global__ void not_this(int); */\n"
	"#include \"kt_test_a.cuh\"\n"
	"template <int N> __global__ void __launch_bounds__(BLOCK, 2) k(T *out, const T *x, float *w, const int *ids,\n"
	"\tint rows, int64_t hidden, float eps) {}\n"
	"__global__ void k_naive(T *out, const T *x, float *w, const int *ids, int rows, int64_t hidden, float eps) {}\n";

static char *canon(const kt_tmpl *t, const kt_expr *e)
{
	static char buf[4][256];
	static int k;
	kt_buf b = {0};
	if (e)
		kt_expr_canon(e, &t->scope, &b);
	char *out = buf[k++ % 4];
	snprintf(out, 256, "%s", e ? b.data : "(null)");
	kt_buf_free(&b);
	return out;
}

/* The names of the parameters that only the launch reads, separated by blanks. */
static const char *launch_only(const kt_tmpl *t)
{
	static char out[256];
	out[0] = 0;
	for (int i = 0; i < t->nparams; i++)
		if (t->launch_only[i])
			snprintf(out + strlen(out), sizeof out - strlen(out), "%s%s", out[0] ? " " : "", t->params[i].name);
	return out;
}

static kt_tmpl *parse_full(const kt_tmpl_opts *opts)
{
	kt_buf diags = {0};
	kt_err err = {0};
	kt_tmpl *t = kt_tmpl_parse_text("dir/full.cu.tmpl", full, strlen(full), opts, &diags, &err);
	if (!t)
		fprintf(stderr, "%s%s\n", kt_buf_str(&diags), err.msg);
	CHECK(t != NULL);
	CHECK_STR(kt_buf_str(&diags), "");
	kt_buf_free(&diags);
	return t;
}

static void test_structure(void)
{
	kt_tmpl *t = parse_full(NULL);
	if (!t)
		return;
	CHECK_STR(t->kernel, "k");
	CHECK_INT(t->kernel_loc.line, 5);
	CHECK_INT(t->kernel_loc.col, 18);
	CHECK_STR(t->reference, "k_naive");
	CHECK_STR(canon(t, t->ref_grid[0]), "rows");
	CHECK_STR(canon(t, t->ref_grid[1]), "1");
	CHECK(t->ref_grid[2] == NULL);
	CHECK_STR(canon(t, t->ref_block[0]), "256");
	CHECK(t->ref_block[1] == NULL);
	CHECK_STR(canon(t, t->ref_smem), "(hidden * 4)");

	CHECK_INT(t->nshapes, 2);
	CHECK_STR(t->shapes[0], "rows");
	CHECK_STR(t->shapes[1], "hidden");
	CHECK_INT(t->nparams, 6);
	const kt_param *p = t->params;
	CHECK_STR(p[0].name, "BLOCK");
	CHECK_INT(p[0].type, KT_PINT);
	CHECK_INT(p[0].nvals, 5);
	CHECK_INT(p[0].vals[0], 64);
	CHECK_INT(p[0].vals[4], 1024);
	CHECK_INT(p[0].def, 2);
	CHECK_INT(p[0].slot, 2);
	CHECK_INT(p[0].loc.line, 9);
	CHECK_INT(p[1].nvals, 4);
	CHECK_INT(p[1].def, 3);
	CHECK_INT(p[2].nvals, 4); /* RPB 1..4 */
	CHECK_INT(p[2].vals[3], 4);
	CHECK_INT(p[2].def, 0);
	CHECK_INT(p[3].nvals, 4); /* STEP 0, 4, 8, 12 */
	CHECK_INT(p[3].vals[1], 4);
	CHECK_INT(p[3].def, 2);
	CHECK_INT(p[4].type, KT_PCHOICE);
	CHECK_INT(p[4].nvals, 2);
	CHECK_STR(p[4].choices[0], "twopass");
	CHECK_STR(p[4].choices[1], "onepass");
	CHECK_INT(p[4].vals[1], 1);
	CHECK_INT(p[4].def, 1);
	CHECK_INT(p[5].type, KT_PBOOL);
	CHECK_INT(p[5].nvals, 2);
	CHECK_INT(p[5].vals[1], 1);
	CHECK_INT(p[5].def, 1);
	CHECK_INT(p[5].slot, 7);
	CHECK_INT(t->scope.n, 8);
	CHECK_STR(t->scope.names[7], "FAST");

	CHECK_INT(t->ntypes, 1);
	CHECK_STR(t->types[0].name, "T");
	CHECK_INT(t->types[0].nopts, 3);
	CHECK_INT(t->types[0].chosen, KT_BF16);

	CHECK_INT(t->nreq, 2);
	CHECK_STR(t->req_text[0], "hidden % (VEC * 2) == 0");
	CHECK_INT(t->req_loc[0].line, 15);
	CHECK_INT(t->req_loc[0].col, 18);
	CHECK_STR(t->req_text[1], "ALGO == \"onepass\" || BLOCK <= 512");
	CHECK_INT(t->req_loc[1].line, 16);
	CHECK_INT(t->req_loc[1].col, 21);

	CHECK_INT(t->nargs, 7);
	const kt_arg *a = t->args;
	CHECK_STR(a[0].name, "out");
	CHECK_INT(a[0].role, KT_OUT);
	CHECK_INT(a[0].type, KT_BF16);
	CHECK_INT(a[0].typesym, 0);
	CHECK_STR(canon(t, a[0].extent), "(rows * hidden)");
	CHECK_INT(a[1].role, KT_IN);
	CHECK_INT(a[1].fill.kind, KT_FILL_NORMAL);
	CHECK(a[1].fill.a == 0 && a[1].fill.b == 2 && a[1].fill.neginf == 0.25);
	CHECK_INT(a[2].role, KT_INOUT);
	CHECK_INT(a[2].type, KT_F32);
	CHECK_INT(a[2].typesym, -1);
	CHECK_INT(a[2].fill.kind, KT_FILL_CONST);
	CHECK(a[2].fill.a == 1.5);
	CHECK_INT(a[3].fill.kind, KT_FILL_INT);
	CHECK(a[3].fill.a == 0 && a[3].fill.b == 9);
	CHECK_INT(a[0].fill.kind, KT_FILL_UNIFORM);
	CHECK(a[0].fill.a == -1 && a[0].fill.b == 1);
	CHECK_INT(a[4].role, KT_SCALAR);
	CHECK_INT(a[4].shape_slot, 0);
	CHECK_INT(a[5].type, KT_I64);
	CHECK_INT(a[5].shape_slot, 1);
	CHECK_INT(a[6].shape_slot, -1);
	CHECK_STR(canon(t, a[6].value), "1e-06");
	CHECK_INT(a[6].loc.line, 23);

	CHECK_STR(canon(t, t->grid[0]), "cdiv(rows, RPB)");
	CHECK_STR(canon(t, t->grid[1]), "2");
	CHECK(t->grid[2] == NULL);
	CHECK_STR(canon(t, t->block[0]), "BLOCK");
	CHECK(t->block[1] == NULL);
	CHECK_STR(canon(t, t->smem), "((ALGO == \"twopass\") ? (BLOCK * 4) : 0)");
	CHECK_STR(canon(t, t->flops), "((4.5 * rows) * hidden)");
	CHECK(t->atol == 1e-2 && t->rtol == 5e-3);
	CHECK_INT(t->nincludes, 0); /* dir/kt_test_a.cuh does not exist */
	/* Only the launch reads VEC, RPB, STEP and FAST: the code names BLOCK, the shared memory
	 * ALGO.  So the configurations that differ in those share their code. */
	CHECK_STR(launch_only(t), "VEC RPB STEP FAST");
	uint16_t cfg[6] = {0, 1, 2, 0, 0, 0}, code[6];
	CHECK_INT(kt_tmpl_code_config(t, cfg, code), 1);
	CHECK(code[0] == 0 && code[1] == t->params[1].def && code[2] == t->params[2].def && code[4] == 0 &&
	      code[5] == t->params[5].def);
	kt_tmpl_default_config(t, cfg);
	cfg[0] = 1;
	CHECK_INT(kt_tmpl_code_config(t, cfg, code), 0);
	CHECK(!memcmp(cfg, code, sizeof cfg));

	kt_buf b = {0};
	kt_tmpl_arglist(t, 0, &b);
	CHECK_STR(b.data, "__nv_bfloat16* out, const __nv_bfloat16* x, float* w, const int* ids, int rows, int64_t hidden, float eps");
	kt_buf_reset(&b);
	kt_tmpl_arglist(t, 1, &b);
	CHECK_STR(b.data, "__nv_bfloat16_raw* out, const __nv_bfloat16_raw* x, float* w, const int* ids, int rows, int64_t hidden, float eps");
	kt_buf_free(&b);
	kt_tmpl_free(t);

	/* A type choice from the command line. */
	const char *types[] = {"T=half"};
	kt_tmpl_opts opts = {.types = types, .ntypes = 1};
	t = parse_full(&opts);
	if (t) {
		CHECK_INT(t->types[0].chosen, KT_HALF);
		CHECK_INT(t->args[0].type, KT_HALF);
		CHECK_INT(t->args[2].type, KT_F32);
	}
	kt_tmpl_free(t);
	const char *bad[] = {"T=double"};
	kt_tmpl_opts badopts = {.types = bad, .ntypes = 1};
	kt_buf diags = {0};
	kt_err err = {0};
	CHECK(kt_tmpl_parse_text("full.cu.tmpl", full, strlen(full), &badopts, &diags, &err) == NULL);
	CHECK_STR(diags.data, "full.cu.tmpl:8:18: error: type choice 'T=double': 'double' is not one of the types listed for 'T'\n"
			      "// @kt type      T in half, bfloat16, float default bfloat16\n"
			      "                 ^\n");
	CHECK_STR(err.msg, "full.cu.tmpl: 1 error");
	kt_buf_free(&diags);
}

static void test_shape_config(void)
{
	kt_tmpl *t = parse_full(NULL);
	if (!t)
		return;
	int64_t sh[KT_MAX_SLOTS];
	kt_err err = {0};
	kt_buf b = {0};
	CHECK_INT(kt_tmpl_parse_shape(t, "rows=4096,hidden=1024", sh, &err), 0);
	CHECK_INT(sh[0], 4096);
	CHECK_INT(sh[1], 1024);
	CHECK_INT(kt_tmpl_parse_shape(t, " hidden=7  rows=3 ", sh, &err), 0);
	kt_tmpl_format_shape(t, sh, &b);
	CHECK_STR(b.data, "rows=3,hidden=7");
	CHECK_INT(kt_tmpl_parse_shape(t, "rows=1", sh, &err), -1);
	CHECK_STR(err.msg, "shape 'rows=1' does not give 'hidden' (expected NAME=VALUE for each shape symbol)");
	CHECK_INT(kt_tmpl_parse_shape(t, "rws=1,hidden=2", sh, &err), -1);
	CHECK_STR(err.msg, "unknown shape symbol 'rws'; did you mean 'rows'?");
	CHECK_INT(kt_tmpl_parse_shape(t, "width=1,hidden=2", sh, &err), -1);
	CHECK_STR(err.msg, "unknown shape symbol 'width' (expected one of: rows, hidden)");
	CHECK_INT(kt_tmpl_parse_shape(t, "rows=1,rows=2", sh, &err), -1);
	CHECK_STR(err.msg, "shape symbol 'rows' is given twice");
	CHECK_INT(kt_tmpl_parse_shape(t, "rows=x,hidden=1", sh, &err), -1);
	CHECK_STR(err.msg, "bad value 'x' for 'rows' (expected a non-negative integer)");
	CHECK_INT(kt_tmpl_parse_shape(t, "rows,hidden=1", sh, &err), -1);
	CHECK_STR(err.msg, "'rows' is not NAME=VALUE");

	uint16_t cfg[KT_MAX_SLOTS], cfg2[KT_MAX_SLOTS];
	kt_tmpl_default_config(t, cfg);
	kt_buf_reset(&b);
	kt_tmpl_format_config(t, cfg, &b);
	CHECK_STR(b.data, "BLOCK=256,VEC=8,RPB=1,STEP=8,ALGO=onepass,FAST=true");
	CHECK_INT(kt_tmpl_parse_config(t, b.data, cfg2, &err), 0);
	CHECK(memcmp(cfg, cfg2, sizeof(uint16_t) * 6) == 0);
	CHECK_INT(kt_tmpl_parse_config(t, "FAST=false ALGO=twopass,STEP=0,RPB=4,VEC=1,BLOCK=1024", cfg2, &err), 0);
	kt_buf_reset(&b);
	kt_tmpl_format_config(t, cfg2, &b);
	CHECK_STR(b.data, "BLOCK=1024,VEC=1,RPB=4,STEP=0,ALGO=twopass,FAST=false");
	CHECK_INT(kt_tmpl_parse_config(t, "BLOCK=100,VEC=1,RPB=4,STEP=0,ALGO=twopass,FAST=false", cfg2, &err), -1);
	CHECK_STR(err.msg, "'100' is not a value of 'BLOCK' (expected one of: 64, 128, 256, 512, 1024)");
	CHECK_INT(kt_tmpl_parse_config(t, "BLOCK=64,VEC=1,RPB=4,STEP=0,ALGO=threepass,FAST=false", cfg2, &err), -1);
	CHECK_STR(err.msg, "'threepass' is not a value of 'ALGO' (expected one of: twopass, onepass)");
	CHECK_INT(kt_tmpl_parse_config(t, "BLOCK=64", cfg2, &err), -1);
	CHECK_STR(err.msg, "configuration 'BLOCK=64' does not give 'VEC' (expected a value for every parameter)");
	CHECK_INT(kt_tmpl_parse_config(t, "BLOK=64", cfg2, &err), -1);
	CHECK_STR(err.msg, "unknown parameter 'BLOK'; did you mean 'BLOCK'?");
	kt_buf_free(&b);
	kt_tmpl_free(t);
}

static void test_env_launch(void)
{
	kt_tmpl *t = parse_full(NULL);
	if (!t)
		return;
	int64_t sh[2] = {4096, 1024};
	uint16_t cfg[KT_MAX_SLOTS];
	kt_val env[KT_MAX_SLOTS];
	kt_launch l;
	kt_err err = {0};
	kt_tmpl_default_config(t, cfg);
	kt_tmpl_env(t, sh, cfg, env);
	CHECK_INT(env[0].i, 4096);
	CHECK_INT(env[2].i, 256);  /* BLOCK */
	CHECK_INT(env[6].i, 1);    /* ALGO = onepass */
	CHECK_INT(kt_tmpl_violated(t, env), -1);
	CHECK_INT(kt_tmpl_launch(t, env, &l, &err), 0);
	CHECK_INT(l.grid[0], 4096);
	CHECK_INT(l.grid[1], 2);
	CHECK_INT(l.grid[2], 1);
	CHECK_INT(l.block[0], 256);
	CHECK_INT(l.block[1], 1);
	CHECK_INT(l.smem, 0);
	CHECK(l.bytes == 2.0 * (2.0 * 4096 * 1024 + 1024));
	CHECK(l.flops == 4.5 * 4096 * 1024);

	CHECK_INT(kt_tmpl_parse_config(t, "BLOCK=1024,VEC=8,RPB=4,STEP=0,ALGO=twopass,FAST=false", cfg, &err), 0);
	kt_tmpl_env(t, sh, cfg, env);
	CHECK_INT(kt_tmpl_violated(t, env), 1); /* twopass needs BLOCK <= 512 */
	CHECK_INT(kt_tmpl_launch(t, env, &l, &err), 0);
	CHECK_INT(l.grid[0], 1024);
	CHECK_INT(l.smem, 4096);

	sh[1] = 1020; /* not a multiple of VEC * 2 = 16 */
	kt_tmpl_default_config(t, cfg);
	kt_tmpl_env(t, sh, cfg, env);
	CHECK_INT(kt_tmpl_violated(t, env), 0);

	sh[0] = 0;
	kt_tmpl_env(t, sh, cfg, env);
	CHECK_INT(kt_tmpl_launch(t, env, &l, &err), -1);
	CHECK_STR(err.msg, "dir/full.cu.tmpl: grid dimension x = cdiv(rows, RPB) is 0 at this configuration (expected a positive integer)");
	kt_tmpl_free(t);
}

static int write_file(const char *dir, const char *name, const char *text)
{
	char *p = kt_path_join(dir, name);
	kt_err err = {0};
	int rc = kt_write_atomic(p, text, strlen(text), &err);
	free(p);
	return rc;
}

static void test_includes(void)
{
	char *dir = kt_temp_dir(getenv("TMPDIR"), "kt-test-tmpl", NULL);
	if (!dir) {
		CHECK(!"cannot create a temporary directory");
		return;
	}
	char *sub = kt_path_join(dir, "sub");
	CHECK_INT(mkdir(sub, 0777), 0);
	kt_buf text = {0};
	kt_buf_printf(&text, "%s#include \"missing.cuh\"\n  #  include \"sub/b.cuh\"\n#include <stdio.h>\n", full);
	CHECK_INT(write_file(dir, "full.cu.tmpl", text.data), 0);
	CHECK_INT(write_file(dir, "kt_test_a.cuh", "#pragma once\n#include \"kt_test_a.cuh\"\n#include \"sub/b.cuh\"\n"), 0);
	CHECK_INT(write_file(sub, "b.cuh", "#include \"../kt_test_a.cuh\"\n#include \"c.cuh\"\n"), 0);
	CHECK_INT(write_file(sub, "c.cuh", "// leaf\n#define STRIDE (STEP * VEC)\n"), 0);
	char *path = kt_path_join(dir, "full.cu.tmpl");
	kt_buf diags = {0};
	kt_err err = {0};
	kt_tmpl *t = kt_tmpl_parse(path, NULL, &diags, &err);
	CHECK(t != NULL);
	if (t) {
		CHECK_INT(t->nincludes, 3);
		char *a = kt_path_join(dir, "kt_test_a.cuh"), *b = kt_path_join(dir, "sub/b.cuh"), *c = kt_path_join(sub, "c.cuh");
		if (t->nincludes == 3) {
			CHECK_STR(t->includes[0], a);
			CHECK_STR(t->includes[1], b);
			CHECK_STR(t->includes[2], c);
		}
		CHECK_STR(launch_only(t), "RPB FAST"); /* the last header names STEP and VEC */
		free(a);
		free(b);
		free(c);
	}
	kt_tmpl_free(t);
	/* A missing template file is an input error, with no diagnostics. */
	char *none = kt_path_join(dir, "none.cu.tmpl");
	kt_buf_reset(&diags);
	CHECK(kt_tmpl_parse(none, NULL, &diags, &err) == NULL);
	CHECK_INT(err.cls, KT_E_INPUT);
	CHECK_STR(kt_buf_str(&diags), "");
	const char *names[] = {"kt_test_a.cuh", "sub/b.cuh", "sub/c.cuh", "full.cu.tmpl"};
	for (int i = 0; i < 4; i++) {
		char *p = kt_path_join(dir, names[i]);
		unlink(p);
		free(p);
	}
	rmdir(sub);
	rmdir(dir);
	free(none);
	free(path);
	free(sub);
	free(dir);
	kt_buf_free(&text);
	kt_buf_free(&diags);
}

/* All errors of a template in one run, in line order, with carets under the right column. */
static void test_diagnostics(void)
{
	static const char src[] =
		"// @kt kernel k\n"
		"// @kt shape rows\n"
		"// @kt param BLOCK in 64, 128 default 96\n"
		"// @kt grid rows\n"
		"//\t@kt block BLOK\n"
		"// @kt arg rows int = rows\n"
		"// @kt arg out float[rows * BLOCK] out\n"
		"__global__ void k(int rows, float *out) {}\n";
	kt_buf diags = {0};
	kt_err err = {0};
	CHECK(kt_tmpl_parse_text("t.cu.tmpl", src, strlen(src), NULL, &diags, &err) == NULL);
	CHECK_STR(diags.data,
		  "t.cu.tmpl:3:39: error: the default is not one of the values of 'BLOCK' (expected one of: 64, 128)\n"
		  "// @kt param BLOCK in 64, 128 default 96\n"
		  "                                      ^\n"
		  "t.cu.tmpl:5:14: error: unknown name 'BLOK'; did you mean 'BLOCK'?\n"
		  "//\t@kt block BLOK\n"
		  "  \t          ^\n"
		  "t.cu.tmpl:7:29: error: 'BLOCK' is a tuning parameter, but the extent of an argument may use only shape symbols (rows)\n"
		  "// @kt arg out float[rows * BLOCK] out\n"
		  "                            ^\n");
	CHECK_STR(err.msg, "t.cu.tmpl: 3 errors");
	kt_buf_free(&diags);
}

/* Parses a small template whose flops line is given; NULL with diags filled on errors. */
static kt_tmpl *with_flops(const char *flops, kt_buf *diags)
{
	kt_buf src = {0};
	kt_err err = {0};
	kt_buf_printf(&src,
		      "// @kt kernel k\n// @kt shape M N tensor\n// @kt param BLOCK in 64, 128\n// @kt grid M\n"
		      "// @kt block BLOCK\n// @kt arg out float[M * N] out\n// @kt flops %s\n"
		      "// @kt arg M int = M\n// @kt arg N int = N\n// @kt arg tensor int = tensor\n"
		      "__global__ void k(float *out, int M, int N, int tensor) {}\n",
		      flops);
	kt_tmpl *t = kt_tmpl_parse_text("f.cu.tmpl", src.data, src.len, NULL, diags, &err);
	kt_buf_free(&src);
	return t;
}

/* `flops [fma|tensor] EXPR`: the unit word, its default, a name spelt like a unit, and errors. */
static void test_flops_unit(void)
{
	static const struct {
		const char *line;
		int unit;          /* -1: an error */
		const char *canon; /* the expression, or the diagnostic */
	} cases[] = {
		{"2 * M * N", KT_FLOPS_FMA, "((2 * M) * N)"},
		{"fma 2 * M * N", KT_FLOPS_FMA, "((2 * M) * N)"},
		{"tensor 2 * M * N", KT_FLOPS_TENSOR, "((2 * M) * N)"},
		{"\ttensor\t(M + N) * 2", KT_FLOPS_TENSOR, "((M + N) * 2)"},
		{"(tensor) * M", KT_FLOPS_FMA, "(tensor * M)"},          /* the shape symbol, in parentheses */
		{"tensor tensor * M", KT_FLOPS_TENSOR, "(tensor * M)"},  /* the unit, then the shape symbol */
		{"M * N", KT_FLOPS_FMA, "(M * N)"},
		{"max (M, N)", KT_FLOPS_FMA, "max(M, N)"},
		{"tensr 2 * M * N", -1,
		 "f.cu.tmpl:7:14: error: unknown arithmetic 'tensr' after 'flops'; did you mean 'tensor'?\n"
		 "// @kt flops tensr 2 * M * N\n             ^\n"},
		{"wgmma 2 * M * N", -1,
		 "f.cu.tmpl:7:14: error: unknown arithmetic 'wgmma' after 'flops' (expected fma or tensor before the expression)\n"
		 "// @kt flops wgmma 2 * M * N\n             ^\n"},
		{"tensor", -1,
		 "f.cu.tmpl:7:20: error: expected the number of floating-point operations after 'flops tensor' but found the end of the line\n"
		 "// @kt flops tensor\n                   ^\n"},
		{"M N", -1, NULL}, /* a declared name is not taken for a unit: the expression is wrong */
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		kt_buf diags = {0};
		kt_tmpl *t = with_flops(cases[i].line, &diags);
		CHECK(!t == (cases[i].unit < 0));
		if (t) {
			CHECK_INT(t->flops_unit, cases[i].unit);
			CHECK_STR(canon(t, t->flops), cases[i].canon);
		} else if (cases[i].canon) {
			CHECK_STR(kt_buf_str(&diags), cases[i].canon);
		} else {
			CHECK(strstr(kt_buf_str(&diags), "unknown arithmetic") == NULL);
		}
		kt_tmpl_free(t);
		kt_buf_free(&diags);
	}
	/* The words, as messages and `kt tune` print them. */
	CHECK_STR(kt_flops_units[KT_FLOPS_FMA], "fma");
	CHECK_STR(kt_flops_units[KT_FLOPS_TENSOR], "tensor");
}

/* Options: declared with their choices and default; the caller's choice (through the same list as
 * type choices) picks one; a wrong choice, a name that is neither a type symbol nor an option, an
 * option in an expression and a second declaration of its name are errors at the right place. */
static void test_options(void)
{
	static const char src[] =
		"// @kt kernel k\n// @kt shape rows\n// @kt type T in half, float\n"
		"// @kt option LSE in natural, base2\n"
		"// @kt option  MODE in a, b, c default b\n"
		"// @kt param BLOCK in 64, 128\n// @kt grid rows\n// @kt block BLOCK\n"
		"// @kt arg x T[rows] in\n// @kt arg rows int = rows\n__global__ void k(const T *x, int rows) {}\n";
	kt_buf diags = {0};
	kt_err err = {0};
	kt_tmpl *t = kt_tmpl_parse_text("o.cu.tmpl", src, strlen(src), NULL, &diags, &err);
	CHECK(t != NULL);
	CHECK_STR(kt_buf_str(&diags), "");
	if (t) {
		CHECK_INT(t->noptions, 2);
		CHECK_STR(t->options[0].name, "LSE");
		CHECK_INT(t->options[0].nchoices, 2);
		CHECK_STR(t->options[0].choices[0], "natural");
		CHECK_STR(t->options[0].choices[1], "base2");
		CHECK_INT(t->options[0].chosen, 0); /* the first, without a default */
		CHECK_INT(t->options[0].loc.line, 4);
		CHECK_INT(t->options[0].loc.col, 15);
		CHECK_INT(t->options[1].nchoices, 3);
		CHECK_INT(t->options[1].chosen, 1);
		CHECK_INT(t->nparams, 1); /* not tuned: no parameter, no slot */
		CHECK_INT(t->scope.n, 2);
	}
	kt_tmpl_free(t);

	const char *choices[] = {"LSE=base2", "T=float", "MODE=c"};
	kt_tmpl_opts opts = {.types = choices, .ntypes = 3};
	t = kt_tmpl_parse_text("o.cu.tmpl", src, strlen(src), &opts, &diags, &err);
	CHECK(t != NULL);
	if (t) {
		CHECK_INT(t->options[0].chosen, 1);
		CHECK_INT(t->options[1].chosen, 2);
		CHECK_INT(t->types[0].chosen, KT_F32);
		CHECK_INT(t->args[0].type, KT_F32);
	}
	kt_tmpl_free(t);

	static const struct {
		const char *choice, *diag;
	} bad[] = {
		{"LSE=base10", "o.cu.tmpl:4:15: error: option choice 'LSE=base10': 'base10' is not one of the choices listed for 'LSE'; did you mean 'base2'?\n"
			       "// @kt option LSE in natural, base2\n"
			       "              ^\n"},
		{"MODE=zzzz", "o.cu.tmpl:5:16: error: option choice 'MODE=zzzz': 'zzzz' is not one of the choices listed for 'MODE' (expected one of: a, b, c)\n"
			      "// @kt option  MODE in a, b, c default b\n"
			      "               ^\n"},
		{"LES=base2", "o.cu.tmpl:1:1: error: choice 'LES=base2' names no type symbol or option of this template (expected NAME=VALUE with NAME one of: T, LSE, MODE)\n"
			      "// @kt kernel k\n"
			      "^\n"},
		{"BLOCK=64", "o.cu.tmpl:1:1: error: choice 'BLOCK=64' names no type symbol or option of this template (expected NAME=VALUE with NAME one of: T, LSE, MODE)\n"
			     "// @kt kernel k\n"
			     "^\n"},
	};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		kt_tmpl_opts o = {.types = &bad[i].choice, .ntypes = 1};
		kt_buf_reset(&diags);
		CHECK(kt_tmpl_parse_text("o.cu.tmpl", src, strlen(src), &o, &diags, &err) == NULL);
		CHECK_STR(kt_buf_str(&diags), bad[i].diag);
	}

	/* In a constraint (where the compile target is a constant) as anywhere else: an error. */
	static const char in_req[] =
		"// @kt kernel k\n// @kt shape rows\n// @kt option LSE in natural, base2\n// @kt param BLOCK in 64, 128\n"
		"// @kt require LSE == \"base2\" || BLOCK == 64\n// @kt grid rows\n// @kt block BLOCK\n"
		"// @kt arg rows int = rows\n// @kt option BLOCK in x, y\n__global__ void k(int rows) {}\n";
	kt_buf_reset(&diags);
	CHECK(kt_tmpl_parse_text("r.cu.tmpl", in_req, strlen(in_req), NULL, &diags, &err) == NULL);
	CHECK_STR(kt_buf_str(&diags),
		  "r.cu.tmpl:5:16: error: 'LSE' is an option, fixed by the caller: the code sees it as macros (#if NAME_IS_<choice>), "
		  "expressions cannot use it\n"
		  "// @kt require LSE == \"base2\" || BLOCK == 64\n"
		  "               ^\n"
		  "r.cu.tmpl:9:15: error: 'BLOCK' is already declared (first declared at line 4)\n"
		  "// @kt option BLOCK in x, y\n"
		  "              ^\n");
	CHECK_STR(err.msg, "r.cu.tmpl: 2 errors");
	kt_buf_free(&diags);
}

/* The complete example of docs/template-language.md parses (the reference stays true). */
static void test_doc_example(void)
{
#ifdef KT_DOC
	kt_buf doc = {0}, diags = {0};
	kt_err err = {0};
	CHECK_INT(kt_read_file(KT_DOC, &doc, &err), 0);
	const char *h = strstr(kt_buf_str(&doc), "## A complete example");
	const char *start = h ? strstr(h, "```\n") : NULL;
	const char *end = start ? strstr(start + 4, "\n```") : NULL;
	CHECK(end != NULL);
	if (end) {
		start += 4;
		kt_tmpl *t = kt_tmpl_parse_text("example.cu.tmpl", start, (size_t)(end - start) + 1, NULL, &diags, &err);
		CHECK_STR(kt_buf_str(&diags), "");
		CHECK(t && !strcmp(t->kernel, "rmsnorm") && t->nparams == 4 && t->nargs == 6);
		kt_tmpl_free(t);
	}
	kt_buf_free(&doc);
	kt_buf_free(&diags);
#else
	printf("doc example skipped: KT_DOC (the path of docs/template-language.md) is not defined\n");
#endif
}


/* The compile target in constraints: sm and sm_a are constants from the options (0 unknown), the
 * same template keeps or drops a configuration by target, and a bad target fails the parse. */
static void test_target(void)
{
	static const char src[] =
		"// @kt kernel k\n// @kt shape rows\n// @kt param MMA in sync, wgmma default sync\n"
		"// @kt require MMA == \"sync\" || (sm == 90 && sm_a)\n// @kt grid rows\n// @kt block 128\n"
		"// @kt arg rows int = rows\n__global__ void k(int rows) {}\n";
	static const char values[] =
		"// @kt kernel k\n// @kt shape rows\n// @kt param X in 0, 900, 901, 1000, 1001\n// @kt require X == sm * 10 + sm_a\n"
		"// @kt grid rows\n// @kt block 128\n// @kt arg rows int = rows\n__global__ void k(int rows) {}\n";
	static const struct {
		const char *arch;
		int sm, sm_a, wgmma_ok;
	} cases[] = {{NULL, 0, 0, 0}, {"90", 90, 0, 0}, {"90a", 90, 1, 1}, {"100a", 100, 1, 0}, {"100f", 100, 0, 0}};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		kt_tmpl_opts o = {.arch = cases[i].arch};
		kt_buf diags = {0};
		kt_err err = {0};
		kt_tmpl *t = kt_tmpl_parse_text("t.cu.tmpl", src, strlen(src), &o, &diags, &err);
		CHECK(t != NULL);
		if (!t)
			continue;
		CHECK_STR(t->arch, cases[i].arch ? cases[i].arch : "");
		const int64_t shape[1] = {16};
		const uint16_t sync[1] = {0}, wgmma[1] = {1};
		kt_val env[KT_MAX_SLOTS];
		kt_tmpl_env(t, shape, sync, env);
		CHECK_INT(kt_tmpl_violated(t, env), -1);
		kt_tmpl_env(t, shape, wgmma, env);
		CHECK_INT(kt_tmpl_violated(t, env), cases[i].wgmma_ok ? -1 : 0);
		kt_tmpl_free(t);
		/* the values themselves: the one X that equals sm * 10 + sm_a is feasible */
		t = kt_tmpl_parse_text("v.cu.tmpl", values, strlen(values), &o, &diags, &err);
		CHECK(t != NULL);
		for (uint16_t x = 0; t && x < 5; x++) {
			kt_tmpl_env(t, shape, &x, env);
			CHECK_INT(kt_tmpl_violated(t, env) < 0, t->params[0].vals[x] == cases[i].sm * 10 + cases[i].sm_a);
		}
		kt_tmpl_free(t);
		kt_buf_free(&diags);
	}
	static const char *const bad[] = {"9", "sm_90", "90b", "90aa", "", "1000"};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		kt_tmpl_opts o = {.arch = bad[i]};
		kt_buf diags = {0};
		kt_err err = {0};
		CHECK(kt_tmpl_parse_text("t.cu.tmpl", src, strlen(src), &o, &diags, &err) == NULL);
		CHECK(strstr(err.msg, "not a compute capability") != NULL);
		kt_buf_free(&diags);
	}
}

/* sms, the GPU's multiprocessor count, in the launch geometry: its value comes from the options
 * (the GPU that runs the launch), a grid of a persistent kernel follows it, and without a GPU a
 * figure that needs it is an error that says why. */
static void test_sms(void)
{
	static const char src[] =
		"// @kt kernel k\n// @kt shape rows\n// @kt param P in 0, 1 default 0\n"
		"// @kt grid P ? min(cdiv(rows, 64), sms) : cdiv(rows, 64)\n// @kt block 128\n// @kt smem sms * 4\n"
		"// @kt arg rows int = rows\n__global__ void k(int rows) {}\n";
	static const struct {
		int sms;
		int64_t rows, grid[2], smem; /* grid[P]; -1: an error */
	} cases[] = {{132, 64 * 1000, {1000, 132}, 528}, {132, 64 * 100, {100, 100}, 528}, {4, 640, {10, 4}, 16},
		     {0, 640, {10, -1}, 0}};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		kt_tmpl_opts o = {.sms = cases[i].sms};
		kt_buf diags = {0};
		kt_err err = {0};
		kt_tmpl *t = kt_tmpl_parse_text("s.cu.tmpl", src, strlen(src), &o, &diags, &err);
		CHECK(t != NULL);
		if (!t)
			continue;
		CHECK_INT(t->sms, cases[i].sms);
		for (uint16_t p = 0; p < 2; p++) {
			kt_val env[KT_MAX_SLOTS];
			kt_launch l;
			kt_err e = {0};
			kt_tmpl_env(t, &cases[i].rows, &p, env);
			int rc = kt_tmpl_launch(t, env, &l, &e);
			CHECK_INT(rc == 0, cases[i].grid[p] >= 0);
			if (rc == 0) {
				CHECK_INT(l.grid[0], cases[i].grid[p]);
				CHECK_INT(l.smem, cases[i].smem);
			} else {
				CHECK(strstr(e.msg, "grid dimension x = ") != NULL);
				CHECK(strstr(e.msg, "sms, the GPU's multiprocessor count, is 0: no GPU is known") != NULL);
			}
		}
		kt_tmpl_free(t);
		kt_buf_free(&diags);
	}
}

/* `l2` and `launch`: how the tuner times the variants (measure.h); unset where not given, so that
 * a command's setting, else the template's, else the default applies. */
static void test_measure(void)
{
	static const struct {
		const char *lines;
		int l2, launch;   /* the settings; l2 -2: an error */
		const char *diag;
	} cases[] = {
		{"", KT_MEASURE_UNSET, KT_MEASURE_UNSET, NULL},
		{"// @kt l2 warm\n", KT_L2_WARM, KT_MEASURE_UNSET, NULL},
		{"// @kt l2 cold\n//  @kt  launch\tgraph  \n", KT_L2_COLD, KT_LAUNCH_GRAPH, NULL},
		{"// @kt launch stream\n", KT_MEASURE_UNSET, KT_LAUNCH_STREAM, NULL},
		{"// @kt l2 hot\n", -2, 0,
		 "m.cu.tmpl:7:11: error: unknown L2 state 'hot' after 'l2' (expected cold or warm)\n// @kt l2 hot\n          ^\n"},
		{"// @kt launch grph\n", -2, 0,
		 "m.cu.tmpl:7:15: error: unknown launch mode 'grph' after 'launch'; did you mean 'graph'?\n"
		 "// @kt launch grph\n              ^\n"},
		{"// @kt l2 warm warm\n", -2, 0,
		 "m.cu.tmpl:7:16: error: expected the end of the line after 'l2 warm' but found 'warm'\n"
		 "// @kt l2 warm warm\n               ^\n"},
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		kt_buf src = {0}, diags = {0};
		kt_err err = {0};
		kt_buf_printf(&src,
			      "// @kt kernel k\n// @kt shape n\n// @kt param BLOCK in 64, 128\n// @kt grid n\n"
			      "// @kt block BLOCK\n// @kt arg out float[n] out\n%s// @kt arg n int = n\n"
			      "__global__ void k(float *out, int n) {}\n",
			      cases[i].lines);
		kt_tmpl *t = kt_tmpl_parse_text("m.cu.tmpl", src.data, src.len, NULL, &diags, &err);
		if (cases[i].l2 == -2) {
			CHECK(t == NULL);
			CHECK_STR(kt_buf_str(&diags), cases[i].diag);
		} else {
			CHECK(t != NULL);
			if (!t)
				fprintf(stderr, "%s", kt_buf_str(&diags));
			CHECK(t && t->measure.v[KT_MEASURE_L2] == cases[i].l2 && t->measure.v[KT_MEASURE_LAUNCH] == cases[i].launch);
		}
		kt_tmpl_free(t);
		kt_buf_free(&src);
		kt_buf_free(&diags);
	}
}

int main(void)
{
	test_structure();
	test_measure();
	test_shape_config();
	test_env_launch();
	test_includes();
	test_diagnostics();
	test_flops_unit();
	test_options();
	test_doc_example();
	test_target();
	test_sms();
	return check_done();
}
