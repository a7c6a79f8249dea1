/* test_tmpl_fuzz.c - robustness of the template parser: thousands of random mutations of a valid
 * template (byte changes, deletions, insertions of tokens that parsers trip on, truncations,
 * duplicated and swapped lines).  The parser must never crash, must report an error exactly
 * when it returns NULL, and must keep its diagnostics well formed; a template that still parses
 * is pushed through the rest of the API.  Build with -DKT_SANITIZE=ON to catch memory errors.
 * Extra seed templates may be given as arguments. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "tmpl.h"
#include "util.h"

#define ITERATIONS 4000
#define MAX_MUTATIONS 4

static const char seed[] =
	"// @kt kernel    k\n"
	"// @kt reference k_ref grid rows block 128 smem 4 * hidden\n"
	"// @kt shape     rows hidden\n"
	"// @kt type      T in half, bfloat16 default half\n"
	"// @kt option    LSE in natural, base2 default base2\n"
	"// @kt param     BLOCK in 32..1024 pow2 default 256\n"
	"// @kt param     VEC in 1, 2, 4, 8 default 4\n"
	"// @kt param     STEP in 0..12 step 4\n"
	"// @kt param     ALGO in twopass, onepass default onepass\n"
	"// @kt param     FAST bool default false\n"
	"// @kt require   hidden % (VEC * 2) == 0 && (ALGO == \"onepass\" || BLOCK <= 512)\n"
	"// @kt require   min(BLOCK, 64, hidden) >= 1 ? cdiv(hidden, BLOCK) < 1e9 : !FAST\n"
	"// @kt arg       out T[rows*hidden] out\n"
	"// @kt arg       x   T[rows*hidden] in fill normal(0, 1) neginf 0.1\n"
	"// @kt arg       w   float[hidden] inout fill uniform(-2, 2)\n"
	"// @kt arg       rows int = rows\n"
	"// @kt arg       hidden int = hidden\n"
	"// @kt arg       eps float = 1e-6\n"
	"// @kt grid      cdiv(rows, 2), max(1, STEP)\n"
	"// @kt block     BLOCK, 1, 1\n"
	"// @kt smem      ALGO == \"twopass\" ? BLOCK * 4 : 0\n"
	"// @kt bytes     2 * (2 * rows * hidden + hidden)\n"
	"// @kt flops     4 * rows * hidden\n"
	"// @kt tolerance 1e-2 1e-3\n"
	"#include \"no_such_header.cuh\"\n"
	"__global__ void __launch_bounds__(BLOCK) k(T *out, const T *x, float *w, int rows, int hidden, float eps) {}\n"
	"__global__ void k_ref(T *out, const T *x, float *w, int rows, int hidden, float eps) {}\n";

static const char *const tokens[] = {
	"..", "(", ")", "\"", ",", "[", "]", "=", "==", "default", "@kt ", "// @kt ", "pow2", "step 0", "step -1",
	"9999999999999999999999", "1e999", "-", "%", "/ 0", "?", ":", "in ", "bool", "fill ", "neginf 2", "\t", "\n",
	"min(", "cdiv(1,", "\"twopass\"", "BLOCK", "rows", "T", "const(", "int(", "__global__ ", "#include \"",
	"1..65536", "0..70000 step 1", "\xc3\xa9", "\r", "\\", "/*", "*/",
};

static uint64_t rng = 0x2545F4914F6CDD1Du;
static unsigned rnd(unsigned n)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return n ? (unsigned)(rng % n) : 0;
}

/* The span [*s, *e) of a random line of b. */
static void random_line(const kt_buf *b, size_t *s, size_t *e)
{
	size_t at = rnd((unsigned)b->len + 1);
	*s = at;
	while (*s > 0 && b->data[*s - 1] != '\n')
		(*s)--;
	*e = at;
	while (*e < b->len && b->data[*e] != '\n')
		(*e)++;
	if (*e < b->len)
		(*e)++;
}

static void mutate(kt_buf *b)
{
	size_t at = rnd((unsigned)b->len + 1);
	kt_buf out = {0};
	switch (rnd(7)) {
	case 0: /* change a byte */
		if (b->len)
			b->data[rnd((unsigned)b->len)] = (char)rnd(256);
		return;
	case 1: { /* delete a few bytes */
		size_t n = rnd(8) + 1;
		if (at + n > b->len)
			n = b->len - at;
		memmove(b->data + at, b->data + at + n, b->len - at - n + 1);
		b->len -= n;
		return;
	}
	case 2: { /* insert a token */
		const char *tok = tokens[rnd(sizeof tokens / sizeof tokens[0])];
		kt_buf_add(&out, b->data, at);
		kt_buf_puts(&out, tok);
		kt_buf_add(&out, b->data + at, b->len - at);
		break;
	}
	case 3: /* truncate */
		b->len = at;
		if (b->data)
			b->data[at] = '\0';
		return;
	case 4: { /* duplicate a line */
		size_t s, e;
		random_line(b, &s, &e);
		kt_buf_add(&out, b->data, e);
		kt_buf_add(&out, b->data + s, e - s);
		kt_buf_add(&out, b->data + e, b->len - e);
		break;
	}
	case 5: { /* move a line to the front */
		size_t s, e;
		random_line(b, &s, &e);
		kt_buf_add(&out, b->data + s, e - s);
		kt_buf_add(&out, b->data, s);
		kt_buf_add(&out, b->data + e, b->len - e);
		break;
	}
	default: /* insert a random byte */
		kt_buf_add(&out, b->data, at);
		kt_buf_putc(&out, (char)rnd(256));
		kt_buf_add(&out, b->data + at, b->len - at);
		break;
	}
	kt_buf_free(b);
	*b = out;
}

/* Diagnostics are groups of three lines (message, source, caret), each message starting with
 * the path, then perhaps one "more errors" line. */
static int well_formed(const char *d, const char *path)
{
	size_t plen = strlen(path);
	int line = 0;
	for (const char *p = d; *p; line++) {
		const char *nl = strchr(p, '\n');
		if (!nl)
			return 0;
		if (line % 3 == 0 && strncmp(p, path, plen) != 0)
			return 0;
		if (line % 3 == 2 && (nl == p || nl[-1] != '^'))
			return 0;
		p = nl + 1;
	}
	return line > 0;
}

/* A template that parses goes through the rest of the API at its defaults and a small shape. */
static void exercise(const kt_tmpl *t)
{
	int64_t shape[KT_MAX_SLOTS], shape2[KT_MAX_SLOTS];
	uint16_t cfg[KT_MAX_SLOTS], cfg2[KT_MAX_SLOTS];
	kt_val env[KT_MAX_SLOTS];
	kt_launch l;
	kt_err err = {0};
	kt_buf b = {0};
	for (int i = 0; i < t->nshapes; i++)
		shape[i] = 1 + rnd(5000);
	kt_tmpl_default_config(t, cfg);
	for (int i = 0; i < t->nparams; i++)
		if (rnd(2))
			cfg[i] = (uint16_t)rnd((unsigned)t->params[i].nvals);
	kt_tmpl_env(t, shape, cfg, env);
	(void)kt_tmpl_violated(t, env);
	(void)kt_tmpl_launch(t, env, &l, &err);
	kt_tmpl_format_config(t, cfg, &b);
	CHECK_INT(kt_tmpl_parse_config(t, kt_buf_str(&b), cfg2, &err), 0);
	CHECK(t->nparams == 0 || memcmp(cfg, cfg2, sizeof(uint16_t) * (size_t)t->nparams) == 0);
	kt_buf_reset(&b);
	kt_tmpl_format_shape(t, shape, &b);
	CHECK_INT(kt_tmpl_parse_shape(t, kt_buf_str(&b), shape2, &err), 0);
	CHECK(t->nshapes == 0 || memcmp(shape, shape2, sizeof(int64_t) * (size_t)t->nshapes) == 0);
	kt_buf_reset(&b);
	kt_tmpl_arglist(t, 1, &b);
	for (int i = 0; i < t->nreq; i++)
		kt_expr_canon(t->req[i], &t->scope, &b);
	kt_buf_free(&b);
}

static void fuzz(const char *name, const char *text, size_t len)
{
	int parsed = 0;
	for (int it = 0; it < ITERATIONS; it++) {
		kt_buf b = {0};
		kt_buf_add(&b, text, len);
		int n = 1 + (int)rnd(MAX_MUTATIONS);
		for (int m = 0; m < n; m++)
			mutate(&b);
		kt_buf diags = {0};
		kt_err err = {0};
		kt_tmpl *t = kt_tmpl_parse_text("fuzz.cu.tmpl", b.data ? b.data : "", b.len, NULL, &diags, &err);
		if (t) {
			parsed++;
			CHECK(diags.len == 0);
			exercise(t);
		} else {
			CHECK(err.msg[0] != '\0');
			if (!well_formed(kt_buf_str(&diags), "fuzz.cu.tmpl")) {
				CHECK(!"diagnostics not well formed");
				fprintf(stderr, "input:\n%s\ndiagnostics:\n%s\n", b.data, kt_buf_str(&diags));
			}
		}
		kt_tmpl_free(t);
		kt_buf_free(&diags);
		kt_buf_free(&b);
	}
	printf("%s: %d mutants, %d still parse\n", name, ITERATIONS, parsed);
	CHECK(parsed > 0 && parsed < ITERATIONS);
}

int main(int argc, char **argv)
{
	kt_buf diags = {0};
	kt_err err = {0};
	kt_tmpl *t = kt_tmpl_parse_text("seed.cu.tmpl", seed, strlen(seed), NULL, &diags, &err);
	CHECK(t != NULL);
	if (!t)
		fprintf(stderr, "%s%s\n", kt_buf_str(&diags), err.msg);
	kt_tmpl_free(t);
	kt_buf_free(&diags);
	fuzz("built-in seed", seed, strlen(seed));
	for (int i = 1; i < argc; i++) {
		kt_buf text = {0};
		if (kt_read_file(argv[i], &text, &err) != 0) {
			CHECK(!"cannot read a seed template");
			fprintf(stderr, "%s\n", err.msg);
		} else {
			fuzz(argv[i], text.data, text.len);
		}
		kt_buf_free(&text);
	}
	return check_done();
}
