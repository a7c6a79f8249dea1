/* test_planner.c - the built-in planner: extend a range whose best value sits on its edge (and
 * find the better value in the next round), respect constraints and launch limits, forbid regions
 * where everything failed. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "planner.h"
#include "search.h"
#include "space.h"

static const char scale_tmpl[] =
	"// scale: a fixture for the planner.\n"
	"// @kt kernel    scale\n"
	"// @kt shape     n\n"
	"// @kt param     ITEMS in 1, 2, 4 default 1\n"
	"// @kt param     BLOCK in 64, 128, 256 default 128\n"
	"// @kt param     MODE  in plain, fancy default plain\n"
	"// @kt arg       out float[n] out\n"
	"// @kt arg       x   float[n] in\n"
	"// @kt arg       n   int = n\n"
	"// @kt grid      cdiv(n, BLOCK * ITEMS)\n"
	"// @kt block     BLOCK\n"
	"// @kt bytes     8 * n\n"
	"__global__ void scale(float *out, const float *x, int n)\n"
	"{\n"
	"\tint i = blockIdx.x * BLOCK * ITEMS + threadIdx.x;\n"
	"\tfor (int k = 0; k < ITEMS; k++, i += BLOCK)\n"
	"\t\tif (i < n)\n"
	"\t\t\tout[i] = 2 * x[i];\n"
	"}\n";

static kt_tmpl *parse(const char *text)
{
	kt_buf diags = {0};
	kt_err err = {0};
	kt_tmpl *t = kt_tmpl_parse_text("scale.cu.tmpl", text, strlen(text), NULL, &diags, &err);
	if (!t)
		fprintf(stderr, "%s\n%s\n", err.msg, kt_buf_str(&diags));
	kt_buf_free(&diags);
	return t;
}

static int64_t val(const kt_tmpl *t, const uint16_t *cfg, const char *name)
{
	for (int p = 0; p < t->nparams; p++)
		if (!strcmp(t->params[p].name, name))
			return t->params[p].type == KT_PINT ? t->params[p].vals[cfg[p]] : cfg[p];
	return -1;
}

/* A synthetic backend that knows nothing of the declared ranges: the best ITEMS is 16, the best
 * BLOCK 128; MODE=fancy fails with BLOCK=256. */
static double backend(const kt_tmpl *t, const uint16_t *cfg)
{
	int64_t items = val(t, cfg, "ITEMS"), block = val(t, cfg, "BLOCK"), mode = val(t, cfg, "MODE");
	if (mode == 1 && block == 256)
		return -1;
	return 10.0 + fabs(log2((double)items) - 4.0) + fabs(log2((double)block) - 7.0) * 0.5 + (double)mode * 0.1;
}

/* One round: every configuration through the backend (the search decides the order). */
static size_t round_evals(const kt_tmpl *t, const int64_t *shape, kt_space *sp, kt_eval **out)
{
	kt_err err = {0};
	CHECK(kt_space_enum(t, shape, sp, &err) == 0);
	kt_search *s = kt_search_new("exhaustive", t, sp, 0, 1, &err);
	kt_eval *ev = calloc(sp->count + 1, sizeof *ev);
	size_t idx[16], n, k = 0;
	while ((n = kt_search_ask(s, idx, 16)) > 0)
		for (size_t i = 0; i < n; i++, k++) {
			ev[k].cfg = (uint16_t *)kt_space_cfg(sp, idx[i]);
			double tm = backend(t, ev[k].cfg);
			ev[k].status = tm < 0 ? KT_OVER_LIMITS : KT_OK;
			ev[k].median_us = tm;
			kt_search_tell(s, idx[i], tm);
		}
	kt_search_free(s);
	*out = ev;
	return k;
}

static long best_of(const kt_eval *ev, size_t n)
{
	long b = -1;
	for (size_t i = 0; i < n; i++)
		if (ev[i].status == KT_OK && (b < 0 || ev[i].median_us < ev[b].median_us))
			b = (long)i;
	return b;
}

/* Rounds until the planner has nothing to extend: ITEMS grows 4 -> 8 -> 16 -> 32, and the best
 * configuration found is ITEMS=16 (beyond the declared range). */
static void test_rounds(void)
{
	kt_tmpl *t = parse(scale_tmpl);
	CHECK(t != NULL);
	if (!t)
		return;
	int64_t shape[1] = {1 << 20};
	double first = -1, last = -1;
	int rounds = 0;
	for (; rounds < 8; rounds++) {
		kt_space sp;
		kt_eval *ev;
		size_t n = round_evals(t, shape, &sp, &ev);
		long b = best_of(ev, n);
		CHECK(b >= 0);
		if (rounds == 0)
			first = ev[b].median_us;
		last = ev[b].median_us;
		kt_plan plan = {0};
		kt_err err = {0};
		CHECK(kt_planner_propose(t, shape, NULL, ev, n, &plan, &err) == 0);
		kt_buf text = {0}, fmt = {0};
		kt_plan_format(t, &plan, &fmt);
		if (rounds == 0) {
			CHECK_STR(kt_buf_str(&fmt),
				  "extend ITEMS with 8: the fastest configuration (12.000 us) has ITEMS=4, the top of its "
				  "values 1..4 (the fastest with 2: 13.000 us)\n"
				  "require BLOCK != 256 || MODE != \"fancy\": all 3 evaluated configurations with BLOCK=256 "
				  "with MODE=fancy failed\n");
		}
		int extends = 0;
		for (size_t i = 0; i < plan.n; i++)
			extends += plan.props[i].kind == KT_PROP_EXTEND;
		if (rounds == 3) {
			CHECK_INT(val(t, ev[b].cfg, "ITEMS"), 16);
			CHECK_INT(extends, 0);
		}
		int stop = extends == 0;
		kt_tmpl *next = NULL;
		if (!stop) {
			CHECK(kt_planner_apply(t, &plan, &text, &err) == 0);
			next = parse(kt_buf_str(&text));
			CHECK(next != NULL);
			if (rounds == 0 && next) {
				CHECK(strstr(kt_buf_str(&text), "\n// @kt param ITEMS in 1, 2, 4, 8 default 1\n") != NULL);
				CHECK(strstr(kt_buf_str(&text), "// @kt bytes     8 * n\n"
								 "// @kt require   BLOCK != 256 || MODE != \"fancy\"\n"
								 "__global__") != NULL);
			}
		}
		kt_buf_free(&text);
		kt_buf_free(&fmt);
		kt_plan_free(&plan);
		free(ev);
		kt_space_free(&sp);
		if (stop || !next)
			break;
		kt_tmpl_free(t);
		t = next;
	}
	CHECK_INT(rounds, 3);
	CHECK(first == 12.0);
	CHECK(last == 10.0);
	/* the final template: 1..32, and the failed region is gone from its space */
	const kt_param *items = &t->params[0];
	CHECK_INT(items->nvals, 6);
	CHECK_INT(items->vals[5], 32);
	kt_space sp;
	kt_err err = {0};
	CHECK(kt_space_enum(t, shape, &sp, &err) == 0);
	CHECK_INT(sp.count, 6 * 3 * 2 - 6);
	kt_space_free(&sp);
	kt_tmpl_free(t);
}

/* Evaluations of every configuration of t with time f. */
static kt_eval *all_evals(const kt_tmpl *t, const int64_t *shape, kt_space *sp, double (*f)(const kt_tmpl *, const uint16_t *))
{
	kt_err err = {0};
	CHECK(kt_space_enum(t, shape, sp, &err) == 0);
	kt_eval *ev = calloc(sp->count + 1, sizeof *ev);
	for (size_t i = 0; i < sp->count; i++) {
		ev[i].cfg = (uint16_t *)kt_space_cfg(sp, i);
		ev[i].median_us = f(t, ev[i].cfg);
		ev[i].status = ev[i].median_us < 0 ? KT_FAULTED : KT_OK;
	}
	return ev;
}

static double bigger_block_faster(const kt_tmpl *t, const uint16_t *cfg)
{
	return 1000.0 / (double)val(t, cfg, "BLOCK") + (double)val(t, cfg, "ITEMS");
}

/* The same, MODE=fancy a microsecond faster still. */
static double fancy_bigger_block_faster(const kt_tmpl *t, const uint16_t *cfg)
{
	return bigger_block_faster(t, cfg) - (double)val(t, cfg, "MODE");
}

static double smaller_items_faster_but_4_fails(const kt_tmpl *t, const uint16_t *cfg)
{
	int64_t items = val(t, cfg, "ITEMS");
	return items == 4 ? -1 : (double)items + fabs(log2((double)val(t, cfg, "BLOCK")) - 7.0) * 0.25;
}

/* BLOCK does not matter (within 0.2%, the noise); the edge wins by chance. */
static double flat_block(const kt_tmpl *t, const uint16_t *cfg)
{
	return 20.0 + (double)val(t, cfg, "ITEMS") * 0.5 - (double)val(t, cfg, "BLOCK") / 256.0 * 0.04;
}

static double nothing_passes(const kt_tmpl *t, const uint16_t *cfg)
{
	return -1;
}

static size_t propose(const char *text, double (*f)(const kt_tmpl *, const uint16_t *), const kt_target *gpu,
		      kt_buf *fmt)
{
	kt_tmpl *t = parse(text);
	if (!t)
		return 99;
	int64_t shape[1] = {1 << 20};
	kt_space sp;
	kt_eval *ev = all_evals(t, shape, &sp, f);
	kt_plan plan = {0};
	kt_err err = {0};
	CHECK(kt_planner_propose(t, shape, gpu, ev, sp.count, &plan, &err) == 0);
	kt_buf_reset(fmt);
	kt_plan_format(t, &plan, fmt);
	size_t n = plan.n;
	kt_plan_free(&plan);
	free(ev);
	kt_space_free(&sp);
	kt_tmpl_free(t);
	return n;
}

static char *replace(const char *text, const char *from, const char *to)
{
	const char *at = strstr(text, from);
	if (!at)
		return NULL;
	kt_buf b = {0};
	kt_buf_add(&b, text, (size_t)(at - text));
	kt_buf_puts(&b, to);
	kt_buf_puts(&b, at + strlen(from));
	return kt_buf_detach(&b);
}

static void test_limits(void)
{
	kt_buf fmt = {0};
	/* BLOCK at 1024 is the best, but 2048 threads per block cannot launch */
	char *t1 = replace(scale_tmpl, "BLOCK in 64, 128, 256 default 128", "BLOCK in 256, 512, 1024 default 256");
	/* nor can ITEMS go below 1 (ITEMS=1 is the best, at the bottom of its values) */
	CHECK_INT(propose(t1, bigger_block_faster, NULL, &fmt), 0);
	/* from 512 it may grow to 1024 */
	char *t2 = replace(scale_tmpl, "BLOCK in 64, 128, 256 default 128", "BLOCK in 128, 256, 512 default 256");
	propose(t2, bigger_block_faster, NULL, &fmt);
	CHECK(strstr(kt_buf_str(&fmt), "extend BLOCK with 1024:") != NULL);
	/* a constraint of the template bounds the extension */
	char *t3 = replace(t2, "// @kt bytes", "// @kt require   BLOCK <= 512\n// @kt bytes");
	propose(t3, bigger_block_faster, NULL, &fmt);
	CHECK(strstr(kt_buf_str(&fmt), "extend BLOCK") == NULL);
	/* the fastest (MODE=fancy) is pinned at BLOCK=512 by a constraint: its edge is no trend, though
	 * MODE=plain could take 1024 */
	char *t6 = replace(t2, "// @kt bytes", "// @kt require   MODE == \"plain\" || BLOCK == 512\n// @kt bytes");
	propose(t6, fancy_bigger_block_faster, NULL, &fmt);
	CHECK(strstr(kt_buf_str(&fmt), "extend BLOCK") == NULL);
	propose(t6, bigger_block_faster, NULL, &fmt); /* plain the fastest: it may grow */
	CHECK(strstr(kt_buf_str(&fmt), "extend BLOCK with 1024") != NULL);
	free(t6);
	/* downwards, and with an arithmetic step */
	char *t4 = replace(scale_tmpl, "ITEMS in 1, 2, 4 default 1", "ITEMS in 3, 5, 7 default 3");
	propose(t4, smaller_items_faster_but_4_fails, NULL, &fmt);
	CHECK(strstr(kt_buf_str(&fmt), "extend ITEMS with 1: the fastest configuration (3.000 us) has ITEMS=3, the "
				       "bottom of its values 3..7 (the fastest with 5: 5.000 us)\n") != NULL);
	/* an edge that wins only within the noise is no trend */
	CHECK_INT(propose(scale_tmpl, flat_block, NULL, &fmt), 0);
	/* shared memory beyond the GPU's opt-in limit */
	char *t5 = replace(t2, "// @kt bytes", "// @kt smem      BLOCK * 64\n// @kt bytes");
	kt_target small, big;
	kt_target_common(&small);
	kt_target_common(&big);
	small.id.smem_optin = 48 * 1024;
	big.id.smem_optin = 232448;
	propose(t5, bigger_block_faster, &small, &fmt);
	CHECK(strstr(kt_buf_str(&fmt), "extend BLOCK") == NULL);
	propose(t5, bigger_block_faster, &big, &fmt);
	CHECK(strstr(kt_buf_str(&fmt), "extend BLOCK with 1024") != NULL);
	free(t1);
	free(t2);
	free(t3);
	free(t4);
	free(t5);
	kt_buf_free(&fmt);
}

/* gemm_sm90 states its hardware's limits, so that a round never extends a parameter to values
 * that cannot compile: its decode configurations are at the bottom of BM, BN and WGM and the top
 * of SWAP, its prefill ones at the top of PERSIST, and none of those is extended. */
static double gemm_edges(const kt_tmpl *t, const uint16_t *cfg)
{
	return 10.0 + log2((double)val(t, cfg, "BM")) + log2((double)val(t, cfg, "BN")) + (double)val(t, cfg, "WGM") / 64.0 +
	       3.0 * (double)(1 - val(t, cfg, "SWAP")) + 3.0 * (double)(1 - val(t, cfg, "PERSIST"));
}

static void test_gemm_sm90_limits(void)
{
	const char *names[1] = {"T=half"};
	kt_tmpl_opts opts = {.types = names, .ntypes = 1, .arch = "90a", .sms = 132};
	kt_target hopper; /* the opt-in shared memory its stages need */
	kt_target_common(&hopper);
	hopper.id.smem_optin = 232448;
	kt_buf diags = {0}, fmt = {0};
	kt_err err = {0};
	kt_tmpl *t = kt_tmpl_parse(KT_TEMPLATES_DIR "/gemm_sm90.cu.tmpl", &opts, &diags, &err);
	CHECK(t != NULL);
	if (!t) {
		fprintf(stderr, "%s\n%s\n", err.msg, kt_buf_str(&diags));
		kt_buf_free(&diags);
		return;
	}
	const int64_t shapes[2][3] = {{16, 4096, 4096}, {4096, 4096, 4096}};
	for (int k = 0; k < 2; k++) {
		kt_space sp;
		kt_eval *ev = all_evals(t, shapes[k], &sp, gemm_edges);
		kt_plan plan = {0};
		CHECK(sp.count > 0);
		CHECK(kt_planner_propose(t, shapes[k], &hopper, ev, sp.count, &plan, &err) == 0);
		kt_buf_reset(&fmt);
		kt_plan_format(t, &plan, &fmt);
		const char *no[5] = {"extend BM ", "extend BN ", "extend WGM ", "extend SWAP ", "extend PERSIST "};
		int extended = 0;
		for (int i = 0; i < 5; i++)
			extended += strstr(kt_buf_str(&fmt), no[i]) != NULL;
		CHECK_INT(extended, 0);
		if (extended)
			fprintf(stderr, "shape %d: %s", k, kt_buf_str(&fmt));
		kt_plan_free(&plan);
		free(ev);
		kt_space_free(&sp);
	}
	kt_buf_free(&fmt);
	kt_buf_free(&diags);
	kt_tmpl_free(t);
}

static void test_forbid(void)
{
	kt_buf fmt = {0};
	/* every configuration with ITEMS=4 failed: a single-value region (not the pairs inside it) */
	CHECK_INT(propose(scale_tmpl, smaller_items_faster_but_4_fails, NULL, &fmt), 1);
	CHECK_STR(kt_buf_str(&fmt), "require ITEMS != 4: all 6 evaluated configurations with ITEMS=4 failed\n");
	/* nothing passed: the template is broken, not a region of it */
	CHECK_INT(propose(scale_tmpl, nothing_passes, NULL, &fmt), 0);
	kt_buf_free(&fmt);
}

/* Plans built by hand (as the LLM planner builds them): duplicates merge, bad ones are refused. */
static void test_apply(void)
{
	kt_tmpl *t = parse(scale_tmpl);
	if (!t)
		return;
	kt_proposal props[3] = {
		{KT_PROP_EXTEND, 0, 2, -1, 0, NULL, "already there"},
		{KT_PROP_EXTEND, 0, 64, -1, 0, NULL, "far"},
		{KT_PROP_FORBID, -1, 0, -1, 0, "ITEMS * BLOCK <= 8192", "a constraint"},
	};
	kt_plan plan = {3, props};
	kt_buf text = {0};
	kt_err err = {0};
	CHECK(kt_planner_apply(t, &plan, &text, &err) == 0);
	CHECK(strstr(kt_buf_str(&text), "\n// @kt param ITEMS in 1, 2, 4, 64 default 1\n") != NULL);
	CHECK(strstr(kt_buf_str(&text), "\n// @kt require   ITEMS * BLOCK <= 8192\n__global__") != NULL);
	kt_tmpl *u = parse(kt_buf_str(&text));
	CHECK(u != NULL);
	kt_tmpl_free(u);

	props[0].param = 2; /* MODE is a choice */
	CHECK(kt_planner_apply(t, &plan, &text, &err) == -1);
	CHECK_STR(err.msg, "only an integer parameter can be extended with a value");
	props[0].param = 0;
	props[2].require = "ITEMS > 1\n// @kt param EVIL in 1";
	CHECK(kt_planner_apply(t, &plan, &text, &err) == -1);
	CHECK_STR(err.msg, "a constraint to add must be one line");
	kt_buf_free(&text);
	kt_tmpl_free(t);
}

int main(void)
{
	test_apply();
	test_rounds();
	test_limits();
	test_forbid();
	test_gemm_sm90_limits();
	return check_done();
}
