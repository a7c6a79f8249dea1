/* test_emit.c - the generated files of one kernel: the file set, the manifest, the variant text,
 * re-runs that leave mtimes alone, removal of stale variants, validation before any write, and
 * the macros, symbols and manifest entry of an option, the CUDA headers a variant includes, and
 * the tuner's copy of a template without its reference. */
#define _XOPEN_SOURCE 700 /* realpath */
#include <cjson/cJSON.h>
#include <dirent.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "emit.h"
#include "space.h"
#include "tmpl.h"

#ifndef KT_FIXTURES_DIR
#error "KT_FIXTURES_DIR must name tests/fixtures"
#endif

static char *tmpdir; /* under TMPDIR (tests/tmp checks it) */

static char *path_in(const char *dir, const char *name) { return kt_path_join(dir, name); }

static int exists(const char *dir, const char *name)
{
	char *p = path_in(dir, name);
	struct stat st;
	int ok = stat(p, &st) == 0;
	free(p);
	return ok;
}

static char *slurp(const char *dir, const char *name)
{
	char *p = path_in(dir, name);
	kt_buf b = {0};
	kt_err err = {0};
	char *s = kt_read_file(p, &b, &err) == 0 ? kt_buf_detach(&b) : NULL;
	kt_buf_free(&b);
	free(p);
	return s;
}

static int count_files(const char *dir)
{
	DIR *d = opendir(dir);
	int n = 0;
	struct dirent *e;
	while (d && (e = readdir(d)) != NULL)
		n += e->d_name[0] != '.';
	if (d)
		closedir(d);
	return n;
}

/* Sets every file's mtime to the epoch + 1000 s so that a rewrite would show. */
static void age_files(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	while (d && (e = readdir(d)) != NULL) {
		if (e->d_name[0] == '.')
			continue;
		char *p = path_in(dir, e->d_name);
		struct timespec ts[2] = {{1000, 0}, {1000, 0}};
		utimensat(AT_FDCWD, p, ts, 0);
		free(p);
	}
	if (d)
		closedir(d);
}

static int all_aged(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	int ok = 1;
	while (d && (e = readdir(d)) != NULL) {
		if (e->d_name[0] == '.')
			continue;
		char *p = path_in(dir, e->d_name);
		struct stat st;
		if (stat(p, &st) != 0 || st.st_mtime != 1000) {
			fprintf(stderr, "rewritten: %s\n", e->d_name);
			ok = 0;
		}
		free(p);
	}
	if (d)
		closedir(d);
	return ok;
}

static kt_tmpl *load(void)
{
	kt_buf diags = {0};
	kt_err err = {0};
	kt_tmpl *t = kt_tmpl_parse(KT_FIXTURES_DIR "/mini_rmsnorm.cu.tmpl", NULL, &diags, &err);
	if (!t)
		fprintf(stderr, "%s%s\n", kt_buf_str(&diags), err.msg);
	kt_buf_free(&diags);
	return t;
}

static void cfg_of(const kt_tmpl *t, const char *text, uint16_t *cfg)
{
	kt_err err = {0};
	if (kt_tmpl_parse_config(t, text, cfg, &err) != 0)
		fprintf(stderr, "%s: %s\n", text, err.msg);
}

static char *variant_name(const kt_tmpl *t, const uint16_t *cfg)
{
	char sym[160];
	kt_emit_symbol(t, "mini", cfg, sym, sizeof sym);
	kt_buf b = {0};
	kt_buf_printf(&b, "%s.cu", sym);
	return kt_buf_detach(&b);
}

static void check_manifest(const char *dir)
{
	char *text = slurp(dir, "kt_mini.json");
	CHECK(text != NULL);
	cJSON *m = text ? cJSON_Parse(text) : NULL;
	CHECK(m != NULL);
	if (!m) {
		free(text);
		return;
	}
	CHECK_STR(cJSON_GetStringValue(cJSON_GetObjectItem(m, "name")), "mini");
	CHECK_STR(cJSON_GetStringValue(cJSON_GetObjectItem(m, "kernel")), "mini_rmsnorm");
	const char *tp = cJSON_GetStringValue(cJSON_GetObjectItem(m, "template"));
	CHECK(tp && tp[0] == '/' && strstr(tp, "mini_rmsnorm.cu.tmpl"));
	CHECK_STR(cJSON_GetStringValue(cJSON_GetObjectItem(cJSON_GetObjectItem(m, "types"), "T")), "half");
	CHECK_INT(cJSON_GetArraySize(cJSON_GetObjectItem(m, "options")), 0); /* the template has none */
	cJSON *shapes = cJSON_GetObjectItem(m, "shapes");
	CHECK_INT(cJSON_GetArraySize(shapes), 3);
	cJSON *s0 = cJSON_GetArrayItem(shapes, 0), *s1 = cJSON_GetArrayItem(shapes, 1);
	CHECK_INT(cJSON_GetNumberValue(cJSON_GetObjectItem(cJSON_GetObjectItem(s0, "shape"), "hidden")), 4096);
	cJSON *c0 = cJSON_GetObjectItem(s0, "config");
	CHECK_INT(cJSON_GetNumberValue(cJSON_GetObjectItem(c0, "BLOCK")), 256);
	CHECK_STR(cJSON_GetStringValue(cJSON_GetObjectItem(c0, "ALGO")), "atomic");
	CHECK(cJSON_IsTrue(cJSON_GetObjectItem(c0, "CACHE")));
	CHECK_STR(cJSON_GetStringValue(cJSON_GetObjectItem(s0, "origin")), "tuned");
	CHECK_STR(cJSON_GetStringValue(cJSON_GetObjectItem(s0, "key")), "0123456789abcdef0123456789abcdef");
	CHECK_STR(cJSON_GetStringValue(cJSON_GetObjectItem(s1, "origin")), "cache:project");
	CHECK(cJSON_GetObjectItem(cJSON_GetArrayItem(shapes, 2), "key") == NULL);
	cJSON *fb = cJSON_GetObjectItem(m, "fallback");
	CHECK_INT(cJSON_GetNumberValue(cJSON_GetObjectItem(cJSON_GetObjectItem(fb, "config"), "BLOCK")), 128);
	CHECK_STR(cJSON_GetStringValue(cJSON_GetObjectItem(fb, "origin")), "default");
	CHECK_INT(cJSON_GetArraySize(cJSON_GetObjectItem(m, "files")), 7);
	cJSON_Delete(m);
	free(text);
}

static void check_texts(const kt_tmpl *t, const char *dir, const uint16_t *a)
{
	char *vname = variant_name(t, a);
	char *v = slurp(dir, vname);
	CHECK(v != NULL);
	if (v) {
		CHECK(strncmp(v, "// generated by kt " KT_VERSION " from /", 21 + strlen(KT_VERSION)) == 0);
		CHECK(strstr(v, "#define BLOCK 256\n") != NULL);
		CHECK(strstr(v, "#define ALGO atomic\n#define ALGO_IS_tree 0\n#define ALGO_IS_atomic 1\n") != NULL);
		CHECK(strstr(v, "#define CACHE 1\n") != NULL);
		CHECK(strstr(v, "#define T __half\n") != NULL);
		CHECK(strstr(v, "_kernel\n#include \"/") != NULL);
		CHECK(strstr(v, "cudaFuncAttributeMaxDynamicSharedMemorySize") != NULL);
		CHECK(strstr(v, "return cudaGetLastError();") != NULL);
	}
	char *d = slurp(dir, "kt_mini.cu");
	CHECK(d != NULL);
	if (d) {
		CHECK(strstr(d, "extern \"C\" cudaError_t kt_mini(__half* out") != NULL ||
		      strstr(d, "extern \"C\" cudaError_t kt_mini(__half *out") != NULL);
		CHECK(strstr(d, "cudaStream_t stream)") != NULL);
		CHECK(strstr(d, "static const struct kt_entry kt_entries_generic[] = {") != NULL);
		CHECK(strstr(d, "#define KT_NTABLES 0\n") != NULL); /* no GPU table: the generic one serves */
		CHECK(strstr(d, "{{4096LL, 4096LL}, {256LL, 4LL, 1LL, 1LL}, kt_mini_") != NULL);
		CHECK(strstr(d, "return cudaErrorInvalidValue;") != NULL);
	}
	char *h = slurp(dir, "kt_mini.h");
	CHECK(h != NULL);
	if (h) {
		CHECK(strstr(h, "#ifndef KT_GENERATED_mini_H") != NULL);
		CHECK(strstr(h, "extern \"C\" {") != NULL);
		CHECK(strstr(h, "#include <cuda_fp16.h>") != NULL);
		CHECK(strstr(h, "__half_raw") != NULL); /* the C spelling for C callers */
	}
	char *c = slurp(dir, "kt_mini.cmake");
	CHECK(c != NULL);
	if (c) {
		CHECK(strstr(c, "set(KT_GENERATED_SOURCES \"/") != NULL);
		CHECK(strstr(c, "kt_mini.cu;") != NULL);
		CHECK(strstr(c, "set(KT_GENERATED_DEPENDS \"/") != NULL);
		CHECK(strstr(c, "mini_rmsnorm.cu.tmpl") != NULL);
	}
	free(vname);
	free(v);
	free(d);
	free(h);
	free(c);
}

static void test_emit_files(kt_tmpl *t)
{
	char *dir = path_in(tmpdir, "out");
	uint16_t a[4], b[4], c[4];
	cfg_of(t, "BLOCK=256,VEC=4,ALGO=atomic,CACHE=true", a);
	cfg_of(t, "BLOCK=64,VEC=2,ALGO=tree,CACHE=false", b);
	cfg_of(t, "BLOCK=32,VEC=1,ALGO=tree,CACHE=false", c);
	int64_t s0[2] = {4096, 4096}, s1[2] = {8, 1024}, s2[2] = {16, 512};
	kt_choice ch[3] = {
		{s0, a, "tuned", "0123456789abcdef0123456789abcdef"},
		{s1, b, "cache:project", NULL},
		{s2, a, "default", NULL},
	};
	kt_emit_opts o = {.name = "mini", .outdir = dir, .nchoices = 3, .choices = ch};
	kt_err err = {0};
	CHECK(kt_emit(t, &o, &err) == 0);
	if (err.msg[0])
		fprintf(stderr, "%s\n", err.msg);
	/* two distinct tuned variants + the default fallback + dispatcher, header, manifest, cmake */
	CHECK_INT(count_files(dir), 7);
	CHECK(exists(dir, "kt_mini.cu") && exists(dir, "kt_mini.h") && exists(dir, "kt_mini.json") &&
	      exists(dir, "kt_mini.cmake"));
	char *va = variant_name(t, a), *vb = variant_name(t, b), *vc = variant_name(t, c);
	CHECK(exists(dir, va) && exists(dir, vb));
	CHECK(strcmp(va, vb) != 0);
	check_manifest(dir);
	check_texts(t, dir, a);

	/* The same choices again: nothing is rewritten. */
	age_files(dir);
	CHECK(kt_emit(t, &o, &err) == 0);
	CHECK(all_aged(dir));

	/* Another choice for shape 1: its old variant goes, unrelated files stay. */
	char *other = path_in(dir, "kt_mini_other_deadbeef.cu"), *stale = path_in(dir, "kt_mini_deadbeef.cu");
	kt_write_atomic(other, "x", 1, &err);
	kt_write_atomic(stale, "x", 1, &err);
	ch[1].cfg = c;
	CHECK(kt_emit(t, &o, &err) == 0);
	CHECK(exists(dir, vc));
	CHECK(!exists(dir, vb));
	CHECK(!exists(dir, "kt_mini_deadbeef.cu"));
	CHECK(exists(dir, "kt_mini_other_deadbeef.cu"));
	CHECK(exists(dir, va));
	free(other);
	free(stale);
	free(va);
	free(vb);
	free(vc);
	free(dir);
}

static void test_validation(kt_tmpl *t)
{
	char *dir = path_in(tmpdir, "never");
	uint16_t ok[4], alt[4], bad[4], range[4] = {9, 0, 0, 0};
	cfg_of(t, "BLOCK=128,VEC=1,ALGO=tree,CACHE=false", ok);
	cfg_of(t, "BLOCK=64,VEC=1,ALGO=tree,CACHE=false", alt);
	cfg_of(t, "BLOCK=128,VEC=4,ALGO=tree,CACHE=false", bad); /* BLOCK * VEC > 4 * hidden at hidden=64 */
	int64_t s[2] = {4, 64}, s2[2] = {4, 128};
	kt_choice ch[2] = {{s, bad, "tuned", NULL}, {s2, ok, "tuned", NULL}};
	kt_emit_opts o = {.name = "mini", .outdir = dir, .nchoices = 2, .choices = ch};
	kt_err err = {0};

	CHECK(kt_emit(t, &o, &err) == -1);
	CHECK(strstr(err.msg, "not feasible") != NULL && strstr(err.msg, "rows=4,hidden=64") != NULL);
	CHECK(err.cls == KT_E_INPUT);

	ch[0].cfg = ok;
	o.name = "9lives";
	CHECK(kt_emit(t, &o, &err) == -1);
	CHECK(strstr(err.msg, "'9lives' is not a C identifier") != NULL);

	o.name = "mini";
	ch[1] = (kt_choice){s, range, "tuned", NULL};
	CHECK(kt_emit(t, &o, &err) == -1);
	CHECK(strstr(err.msg, "out of range") != NULL);

	ch[1] = (kt_choice){s, alt, "tuned", NULL}; /* the same shape twice, different configurations */
	CHECK(kt_emit(t, &o, &err) == -1);
	CHECK(strstr(err.msg, "given twice") != NULL);

	CHECK(!exists(tmpdir, "never")); /* nothing was written */
	free(dir);
}

/* No shapes: the fallback alone, and no array of entries (C++ has no empty arrays). */
static void test_no_shapes(kt_tmpl *t)
{
	char *dir = path_in(tmpdir, "noshapes");
	kt_emit_opts o = {.name = "mini", .outdir = dir};
	kt_err err = {0};
	CHECK(kt_emit(t, &o, &err) == 0);
	CHECK_INT(count_files(dir), 5);
	char *d = slurp(dir, "kt_mini.cu");
	CHECK(d && strstr(d, "kt_generic = {NULL, 0, 0, 0, 0.0, NULL, 0, {{0}, {128LL, 1LL, 0LL, 0LL}, kt_mini_") != NULL);
	free(d);
	kt_remove_tree(dir);
	free(dir);
}

/* GPU tables: a variant per configuration and target, shared by the GPUs of one target; the
 * generic table alone is the target's source; kt's rule builds the others (the listing); the
 * manifest lists the tables; a variant no longer chosen for a target goes. */
static void test_gpu_tables(kt_tmpl *t)
{
	char *dir = path_in(tmpdir, "gpus");
	uint16_t a[4], b[4];
	cfg_of(t, "BLOCK=256,VEC=4,ALGO=atomic,CACHE=true", a);
	cfg_of(t, "BLOCK=64,VEC=2,ALGO=tree,CACHE=false", b);
	int64_t s0[2] = {4096, 4096}, s1[2] = {8, 1024};
	kt_choice h200[2] = {{s0, a, "cache:project", NULL}, {s1, b, "cache:project", NULL}};
	kt_choice h100[2] = {{s0, a, "tuned", NULL}, {s1, a, "tuned", NULL}};
	kt_choice a100[1] = {{s0, b, "cache:user", NULL}};
	kt_gpu_id ids[3] = {{"NVIDIA H200", 9, 0, 132, 60 << 20, 232448},
			    {"NVIDIA H100 80GB HBM3", 9, 0, 132, 50 << 20, 232448},
			    {"NVIDIA A100-SXM4-80GB", 8, 0, 108, 40 << 20, 166912}};
	kt_emit_table tables[3] = {{NULL, &ids[0], 4800, "90", 2, h200, NULL, NULL},
				   {NULL, &ids[1], 3350, "90", 2, h100, a, "robust"},
				   {NULL, &ids[2], 2039, "80", 1, a100, NULL, NULL}};
	kt_emit_opts o = {.name = "mini", .outdir = dir, .ntables = 3, .tables = tables, .nvcc_flags = "-DX=1 -Xptxas -v"};
	kt_err err = {0};
	CHECK(kt_emit(t, &o, &err) == 0);
	if (err.msg[0])
		fprintf(stderr, "%s\n", err.msg);
	uint16_t def[4];
	kt_tmpl_default_config(t, def);
	char *va = variant_name(t, a), *vb = variant_name(t, b), *vd = variant_name(t, def);
	char ga[200], gb[200], gd[200], ab[200], ad[200];
	snprintf(ga, sizeof ga, "%.*s_sm90.cu", (int)strlen(va) - 3, va);
	snprintf(gb, sizeof gb, "%.*s_sm90.cu", (int)strlen(vb) - 3, vb);
	snprintf(gd, sizeof gd, "%.*s_sm90.cu", (int)strlen(vd) - 3, vd);
	snprintf(ab, sizeof ab, "%.*s_sm80.cu", (int)strlen(vb) - 3, vb);
	snprintf(ad, sizeof ad, "%.*s_sm80.cu", (int)strlen(vd) - 3, vd);
	/* sm_90: a, b, the H200's default fallback; sm_80: b and its fallback; the generic default */
	CHECK(exists(dir, ga) && exists(dir, gb) && exists(dir, gd) && exists(dir, ab) && exists(dir, ad) && exists(dir, vd));
	CHECK(!exists(dir, va) && !exists(dir, vb));
	CHECK_INT(count_files(dir), 6 + 4);
	char *c = slurp(dir, "kt_mini.cmake");
	CHECK(c && strstr(c, "set(KT_GENERATED_NVCC_FLAGS \"-DX=1;-Xptxas;-v\")") != NULL);
	CHECK(c && strstr(c, "-gencode=arch=compute_80,code=sm_80") != NULL && strstr(c, "-gencode=arch=compute_90,code=sm_90") != NULL);
	char *srcs = c ? strstr(c, "set(KT_GENERATED_SOURCES") : NULL;
	CHECK(srcs && !strstr(strchr(srcs, ')') ? srcs : "", "_sm90.cu\")") && strstr(srcs, vd));
	char *d = slurp(dir, "kt_mini.cu");
	CHECK(d && strstr(d, "#define KT_NTABLES 3\n") != NULL);
	CHECK(d && strstr(d, "{\"NVIDIA H100 80GB HBM3\", 9, 0, 132, 3350.0, kt_entries_1, 2, {{0}, {256LL, 4LL, 1LL, 1LL}, ") != NULL);
	CHECK(d && strstr(d, "{\"NVIDIA A100-SXM4-80GB\", 8, 0, 108, 2039.0, kt_entries_2, 1, ") != NULL);
	CHECK(d && strstr(d, "kt_generic = {NULL, 0, 0, 0, 0.0, NULL, 0, ") != NULL);
	char *h = slurp(dir, "kt_mini.h");
	CHECK(h && strstr(h, "const char *kt_mini_table(int device);") && strstr(h, "const char *kt_mini_table_for("));
	char *text = slurp(dir, "kt_mini.json");
	cJSON *m = text ? cJSON_Parse(text) : NULL;
	cJSON *jt = cJSON_GetObjectItem(m, "tables"), *shapes = cJSON_GetObjectItem(m, "shapes");
	CHECK_INT(cJSON_GetArraySize(jt), 3);
	CHECK_INT(cJSON_GetArraySize(shapes), 5);
	CHECK_STR(cJSON_GetStringValue(cJSON_GetObjectItem(cJSON_GetArrayItem(jt, 2), "arch")), "80");
	CHECK_STR(cJSON_GetStringValue(cJSON_GetObjectItem(cJSON_GetObjectItem(cJSON_GetArrayItem(jt, 1), "fallback"), "origin")),
		  "robust");
	CHECK_STR(cJSON_GetStringValue(cJSON_GetObjectItem(cJSON_GetArrayItem(shapes, 4), "gpu")), "NVIDIA A100-SXM4-80GB");
	cJSON_Delete(m);
	/* The A100 goes: its variants go with it, the others stay. */
	o.ntables = 2;
	CHECK(kt_emit(t, &o, &err) == 0);
	CHECK(!exists(dir, ab) && !exists(dir, ad) && exists(dir, ga) && exists(dir, gd));
	/* A GPU table without a target is refused before anything is written. */
	tables[0].arch = NULL;
	CHECK(kt_emit(t, &o, &err) == -1);
	free(text);
	free(h);
	free(d);
	free(c);
	free(va);
	free(vb);
	free(vd);
	kt_remove_tree(dir);
	free(dir);
}

static void test_variant_text(kt_tmpl *t)
{
	uint16_t cfg[4];
	kt_tmpl_default_config(t, cfg);
	kt_buf b = {0};
	kt_emit_variant(t, cfg, "kt_probe_0", &b);
	CHECK(strstr(b.data, "#define mini_rmsnorm kt_probe_0_kernel\n") != NULL);
	CHECK(strstr(b.data, "extern \"C\" cudaError_t kt_probe_0(dim3 kt_grid, dim3 kt_block, size_t kt_smem, "
			     "cudaStream_t kt_stream, ") != NULL);
	CHECK(strstr(b.data, "kt_probe_0_kernel<<<kt_grid, kt_block, kt_smem, kt_stream>>>(out, x, w, rows, hidden, eps);") !=
	      NULL);
	/* cuda headers before the parameter macros, and the macros are gone after the template */
	CHECK(strstr(b.data, "#include <cuda_fp16.h>") < strstr(b.data, "#define T "));
	CHECK(strstr(b.data, "#undef T\n") != NULL);
	kt_buf_free(&b);
}

/* An option reaches the code as a choice parameter does (NAME, NAME_IS_<choice>), undefined
 * after the template; the manifest names the choice; each choice is another variant symbol. */
static void test_options(void)
{
	static const char src[] =
		"// @kt kernel k\n// @kt shape n\n// @kt option LSE in natural, base2\n// @kt param BLOCK in 64, 128\n"
		"// @kt grid n\n// @kt block BLOCK\n// @kt arg out float[n] out\n// @kt arg n int = n\n"
		"__global__ void k(float *out, int n) {}\n";
	const char *base2[] = {"LSE=base2"};
	kt_tmpl_opts o2 = {.types = base2, .ntypes = 1};
	kt_buf diags = {0};
	kt_err err = {0};
	kt_tmpl *te = kt_tmpl_parse_text("opt.cu.tmpl", src, sizeof src - 1, NULL, &diags, &err);
	kt_tmpl *t2 = kt_tmpl_parse_text("opt.cu.tmpl", src, sizeof src - 1, &o2, &diags, &err);
	CHECK_STR(kt_buf_str(&diags), "");
	CHECK(te && t2);
	if (!te || !t2) {
		kt_tmpl_free(te);
		kt_tmpl_free(t2);
		kt_buf_free(&diags);
		return;
	}
	const uint16_t cfg[1] = {1};
	kt_buf b = {0};
	kt_emit_variant(t2, cfg, "kt_probe_1", &b);
	CHECK(strstr(b.data, "#define BLOCK 128\n#define LSE base2\n#define LSE_IS_natural 0\n#define LSE_IS_base2 1\n") != NULL);
	CHECK(strstr(b.data, "#undef LSE\n#undef LSE_IS_natural\n#undef LSE_IS_base2\n") != NULL);
	kt_buf_reset(&b);
	kt_emit_variant(te, cfg, "kt_probe_1", &b);
	CHECK(strstr(b.data, "#define LSE natural\n#define LSE_IS_natural 1\n#define LSE_IS_base2 0\n") != NULL);
	kt_buf_reset(&b);
	kt_emit_part(t2, cfg, "kt_probe_1", &b); /* variants compiled together: nothing leaks to the next */
	CHECK(strstr(b.data, "#define LSE_IS_base2 1\n") != NULL);
	CHECK(strstr(b.data, "#undef LSE\n") != NULL && strstr(b.data, "#undef LSE_IS_natural\n") != NULL &&
	      strstr(b.data, "#undef LSE_IS_base2\n") != NULL);
	kt_buf_free(&b);

	char se[160], s2[160];
	kt_emit_symbol(te, "m", cfg, se, sizeof se);
	kt_emit_symbol(t2, "m", cfg, s2, sizeof s2);
	CHECK(strcmp(se, s2) != 0);

	char *dir = path_in(tmpdir, "options");
	kt_emit_opts eo = {.name = "opt", .outdir = dir};
	CHECK(kt_emit(t2, &eo, &err) == 0);
	char *text = slurp(dir, "kt_opt.json");
	cJSON *m = text ? cJSON_Parse(text) : NULL;
	CHECK(m != NULL);
	CHECK_STR(cJSON_GetStringValue(cJSON_GetObjectItem(cJSON_GetObjectItem(m, "options"), "LSE")), "base2");
	cJSON_Delete(m);
	free(text);
	kt_remove_tree(dir);
	free(dir);
	kt_tmpl_free(te);
	kt_tmpl_free(t2);
	kt_buf_free(&diags);
}

/* Two shapes whose choices differ only in G, which only the grid reads: one variant file, which
 * the dispatcher launches with each shape's own configuration. */
static void test_launch_only(void)
{
	static const char src[] = "// @kt kernel k\n// @kt shape n\n// @kt param B in 64, 128\n// @kt param G in 1, 4\n"
				  "// @kt grid cdiv(n, B * G)\n// @kt block B\n// @kt arg out float[n] out\n// @kt arg n int = n\n"
				  "__global__ void k(float *out, int n)\n{\n"
				  "\tfor (int i = blockIdx.x * B + threadIdx.x; i < n; i += gridDim.x * B)\n\t\tout[i] = 1.f;\n}\n";
	kt_buf diags = {0};
	kt_err err = {0};
	kt_tmpl *t = kt_tmpl_parse_text("grid.cu.tmpl", src, sizeof src - 1, NULL, &diags, &err);
	CHECK(t != NULL);
	if (!t)
		return;
	const int64_t s1[1] = {4096}, s2[1] = {65536};
	const uint16_t c1[2] = {1, 0}, c2[2] = {1, 1};
	const kt_choice ch[2] = {{s1, c1, "tuned", NULL}, {s2, c2, "tuned", NULL}};
	char *dir = path_in(tmpdir, "launch_only");
	kt_emit_opts eo = {.name = "lo", .outdir = dir, .nchoices = 2, .choices = ch};
	CHECK_INT(kt_emit(t, &eo, &err), 0);
	char sym[160];
	kt_emit_symbol(t, "lo", c1, sym, sizeof sym);
	int files = 0;
	DIR *d = opendir(dir);
	for (struct dirent *e; d && (e = readdir(d)) != NULL;)
		files += !strncmp(e->d_name, "kt_lo_", 6);
	if (d)
		closedir(d);
	CHECK_INT(files, 2); /* B=128's, for both G, and the fallback's (the default, B=64) */
	char *disp = slurp(dir, "kt_lo.cu");
	kt_buf want1 = {0}, want2 = {0};
	kt_buf_printf(&want1, "{{4096LL}, {128LL, 1LL}, %s}", sym);
	kt_buf_printf(&want2, "{{65536LL}, {128LL, 4LL}, %s}", sym);
	CHECK(disp && strstr(disp, want1.data) && strstr(disp, want2.data));
	free(disp);
	kt_buf_free(&want1);
	kt_buf_free(&want2);
	kt_remove_tree(dir);
	free(dir);
	kt_tmpl_free(t);
	kt_buf_free(&diags);
}

/* The headers: only those the types need, and <atomic> for a variant's launcher, never in the
 * prelude of parts.  The tuner's copy of a template without its reference: the reference's
 * lines kept empty after a #line naming the template, its local includes absolute. */
static const char unref_src[] = "// @kt kernel k\n// @kt reference k_naive grid n block 1\n// @kt shape n\n"
				"// @kt param B in 32, 64 default 32\n// @kt grid n\n// @kt block B\n"
				"// @kt arg out float[n] out\n// @kt arg n int = n\n"
				"#include \"helper.cuh\"\n"
				"__global__ void k(float *out, int n) { out[0] = one(); }\n"
				"extern \"C\" __global__ void k_naive(float *out, int n)\n{\n\tout[0] = 1.f;\n}\n";

static void test_unreferenced(void)
{
	char *dir = path_in(tmpdir, "unref"), *tpath = path_in(dir, "k.cu.tmpl"), *hpath = path_in(dir, "helper.cuh");
	kt_err err = {0};
	kt_buf diags = {0}, b = {0};
	CHECK_INT(kt_mkdirs(dir, &err), 0);
	CHECK_INT(kt_write_atomic(hpath, "__device__ float one() { return 1.f; }\n", 39, &err), 0);
	CHECK_INT(kt_write_atomic(tpath, unref_src, sizeof unref_src - 1, &err), 0);
	kt_tmpl *t = kt_tmpl_parse(tpath, NULL, &diags, &err);
	CHECK(t != NULL);
	if (!t) {
		fprintf(stderr, "%s%s\n", kt_buf_str(&diags), err.msg);
		return;
	}
	char *rt = realpath(tpath, NULL), *rh = realpath(hpath, NULL);
	CHECK_INT(kt_emit_unreferenced(t, &b), 0);
	kt_buf want = {0};
	kt_buf_printf(&want, "#line 1 \"%s\"\n", rt);
	kt_buf_add(&want, unref_src, (size_t)(strstr(unref_src, "#include") - unref_src));
	kt_buf_printf(&want, "#include \"%s\"\n__global__ void k(float *out, int n) { out[0] = one(); }\n\n\n\n\n", rh);
	CHECK_STR(kt_buf_str(&b), kt_buf_str(&want));
	kt_buf_reset(&b);
	const uint16_t cfg[1] = {1};
	kt_emit_part_from(t, hpath, cfg, "kt_probe_2", &b);
	CHECK(strstr(kt_buf_str(&b), "namespace kt_probe_2_ns {\n#include \"") && strstr(kt_buf_str(&b), "helper.cuh\"\n}\n"));
	kt_buf_reset(&b);
	kt_emit_variant(t, cfg, "kt_probe_2", &b);
	CHECK(!strstr(b.data, "cuda_fp16.h") && !strstr(b.data, "cuda_bf16.h") && strstr(b.data, "#include <atomic>"));
	kt_buf_reset(&b);
	CHECK_INT(kt_emit_prelude(t, &b), 0);
	CHECK(!strstr(b.data, "cuda_fp16.h") && !strstr(b.data, "<atomic>") && strstr(b.data, "#include <cuda_runtime.h>"));
	kt_tmpl_free(t);
	/* No reference: no copy. */
	static const char plain[] = "// @kt kernel k\n// @kt shape n\n// @kt grid n\n// @kt block 32\n"
				    "// @kt arg out float[n] out\n// @kt arg n int = n\n__global__ void k(float *out, int n) {}\n";
	t = kt_tmpl_parse_text(tpath, plain, sizeof plain - 1, NULL, &diags, &err);
	kt_buf_reset(&b);
	CHECK(t && kt_emit_unreferenced(t, &b) == 1 && b.len == 0);
	kt_tmpl_free(t);
	free(rt);
	free(rh);
	kt_buf_free(&want);
	kt_buf_free(&b);
	kt_buf_free(&diags);
	kt_remove_tree(dir);
	free(dir);
	free(tpath);
	free(hpath);
}

int main(void)
{
	if (!(tmpdir = kt_temp_dir(getenv("TMPDIR"), "kt-test-emit", NULL)))
		return 1;
	kt_tmpl *t = load();
	CHECK(t != NULL);
	if (t) {
		test_emit_files(t);
		test_validation(t);
		test_variant_text(t);
		test_no_shapes(t);
		test_gpu_tables(t);
	}
	test_options();
	test_unreferenced();
	test_launch_only();
	kt_tmpl_free(t);
	kt_remove_tree(tmpdir);
	free(tmpdir);
	return check_done();
}
