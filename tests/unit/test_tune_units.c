/* test_tune_units.c - the tuning loop's compile side on the fake GPU with the fake compiler
 * (tests/unit/fake/): variants compiled once for two shapes, configurations that differ only in
 * their launch compiled once, the reference kernel in one unit only, the first batch sized by what
 * a variant costs nvcc, the choice made on nvcc's variants where NVRTC stood in for it (and those
 * compiled while the search goes on), and turns of the loop kept short. */
#include <dirent.h>
#include <stdlib.h>
#include <unistd.h>

#include "emit.h"
#include "proc.h"
#include "trace.h"
#include "tune_fixture.h"

/* Two shapes of one template in one batch: each variant is compiled once, for whichever shape
 * asked first, and measured at both.  Of the 21 feasible configurations (the same at both
 * shapes) 18 compile (BLOCK=2048 exceeds the device before compiling); with the check kernels,
 * 19 units. */
static void test_compiled_once(const kt_tmpl *t)
{
	int64_t s1[1] = {4096}, s2[1] = {8192};
	kt_tune_task tasks[2] = {{.p = {.tmpl = t, .shape = s1, .tc = &fake_tc}},
				 {.p = {.tmpl = t, .shape = s2, .tc = &fake_tc}}};
	kt_tune_opts o = fake_opts(NULL);
	o.strategy = "exhaustive";
	kt_tune_stats st = {0};
	o.stats = &st;
	kt_err err = {0};
	CHECK_INT(kt_tune_batch(tasks, 2, &o, &err), 0);
	for (int i = 0; i < 2; i++) {
		CHECK_INT(tasks[i].rc, 0);
		CHECK_INT(tasks[i].out.nevals, 21);
		kt_tune_result_free(&tasks[i].out);
	}
	CHECK_INT(st.compiled, 18 + 1);
	CHECK_INT(st.reused, 18);
	/* Alone, one shape compiles the same units and reuses none. */
	kt_tune_stats one = {0};
	o.stats = &one;
	CHECK_INT(kt_tune_batch(tasks, 1, &o, &err), 0);
	kt_tune_result_free(&tasks[0].out);
	CHECK_INT(one.compiled, st.compiled);
	CHECK_INT(one.reused, 0);
}

/* A template whose G only sizes the grid (the kernel strides over the rest): the code never
 * names it, so its values share a variant. */
static const char grid_src[] =
	"// @kt kernel    scale\n"
	"// @kt shape     n\n"
	"// @kt param     BLOCK in 64, 128, 256 default 128\n"
	"// @kt param     G     in 1, 2, 4 default 1\n"
	"// @kt arg       out float[n] out\n"
	"// @kt arg       x   float[n] in fill uniform(-2, 2)\n"
	"// @kt arg       n   int = n\n"
	"// @kt grid      cdiv(n, BLOCK * G)\n"
	"// @kt block     BLOCK\n"
	"// @kt bytes     8 * n\n"
	"// @kt tolerance 1e-6\n"
	"#ifndef G\n#define G 1\n#endif\n"
	"__global__ void scale(float *out, const float *x, int n)\n"
	"{\n"
	"\tfor (int i = blockIdx.x * BLOCK + threadIdx.x; i < n; i += gridDim.x * BLOCK)\n"
	"\t\tout[i] = 2.0f * x[i];\n"
	"}\n";

/* Configurations that differ only in what the launch reads are compiled once and each launched
 * its own way: 9 evaluated from 3 variants (and the check kernels' unit), each G at its grid. */
static void test_launch_only(const char *dir)
{
	char log[600];
	kt_err err = {0};
	kt_tmpl *t = write_template(dir, "grid.cu.tmpl", grid_src, sizeof grid_src - 1);
	if (!t)
		return;
	snprintf(log, sizeof log, "%s/grid-launches.log", dir);
	setenv("KT_FAKE_LOG", log, 1);
	int64_t shape[1] = {4096};
	kt_tune_task task = {.p = {.tmpl = t, .shape = shape, .tc = &fake_tc}};
	kt_tune_opts o = fake_opts(NULL);
	o.strategy = "exhaustive";
	kt_tune_stats st = {0};
	o.stats = &st;
	CHECK_INT(kt_tune_batch(&task, 1, &o, &err), 0);
	unsetenv("KT_FAKE_LOG");
	CHECK_INT(task.out.nevals, 9);
	for (size_t i = 0; i < task.out.nevals; i++)
		CHECK_INT(task.out.evals[i].status, KT_OK);
	CHECK_INT(st.compiled, 3 + 1);
	CHECK_INT(st.relaunched, 6);
	/* BLOCK=64's variant (the one of G=1) ran at G = 1, 2, 4: in 64, 32 and 16 blocks. */
	kt_buf text = {0};
	CHECK_INT(kt_read_file(log, &text, &err), 0);
	char sym[150], want[200];
	kt_emit_symbol(t, t->kernel, (const uint16_t[]){0, 0}, sym, sizeof sym);
	snprintf(want, sizeof want, "launch %s_kernel ", sym);
	int grids = 0; /* bit g: a launch in 64 >> g blocks */
	for (const char *p = strstr(kt_buf_str(&text), want); p; p = strstr(p + 1, want)) {
		long long blocks = 0;
		const char *gp = strstr(p, " grid=");
		if (gp && sscanf(gp, " grid=%lld", &blocks) == 1)
			grids |= blocks == 64 ? 1 : blocks == 32 ? 2 : blocks == 16 ? 4 : 8;
	}
	CHECK_INT(grids, 7);
	kt_buf_free(&text);
	kt_tune_result_free(&task.out);
	kt_tmpl_free(t);
}

/* Eighty configurations of one variant (G only sets the grid) are ready at once: one turn of the
 * loop measures MEASURE_TURN (32) of them at most, so that the compile slots are refilled between
 * (the trace's measuring spans say how many each turn took). */
static void test_measure_turns(const char *dir)
{
	char src[2048], trace[600];
	int n = snprintf(src, sizeof src, "// @kt kernel    scale\n// @kt shape     n\n// @kt param     G in 1");
	for (int g = 2; g <= 80; g++)
		n += snprintf(src + n, sizeof src - (size_t)n, ", %d", g);
	snprintf(src + n, sizeof src - (size_t)n, "%s",
		 " default 1\n"
		 "// @kt arg       out float[n] out\n"
		 "// @kt arg       x   float[n] in fill uniform(-2, 2)\n"
		 "// @kt arg       n   int = n\n"
		 "// @kt grid      cdiv(n, 64 * G)\n"
		 "// @kt block     64\n"
		 "// @kt bytes     8 * n\n"
		 "// @kt tolerance 1e-6\n"
		 "#ifndef G\n#define G 1\n#endif\n"
		 "__global__ void scale(float *out, const float *x, int n)\n"
		 "{\n"
		 "\tfor (int i = blockIdx.x * 64 + threadIdx.x; i < n; i += gridDim.x * 64)\n"
		 "\t\tout[i] = 2.0f * x[i];\n"
		 "}\n");
	kt_err err = {0};
	kt_tmpl *t = write_template(dir, "turns.cu.tmpl", src, strlen(src));
	if (!t)
		return;
	int64_t shape[1] = {1 << 20};
	kt_tune_task task = {.p = {.tmpl = t, .shape = shape, .tc = &fake_tc}};
	kt_tune_opts o = fake_opts(NULL);
	o.strategy = "exhaustive";
	o.batch = 128; /* every configuration asked at once */
	o.trace = kt_trace_new(0);
	CHECK_INT(kt_tune_batch(&task, 1, &o, &err), 0);
	CHECK_INT(task.out.nevals, 80);
	snprintf(trace, sizeof trace, "%s/turns-trace.json", dir);
	kt_buf text = {0};
	CHECK_INT(kt_trace_write(o.trace, trace, &err), 0);
	CHECK_INT(kt_read_file(trace, &text, &err), 0);
	int turns = 0, most = 0, all = 0, k;
	for (const char *p = strstr(kt_buf_str(&text), "\"candidates\":"); p; p = strstr(p + 1, "\"candidates\":"))
		if (sscanf(p, "\"candidates\":%d", &k) == 1)
			turns++, all += k, most = k > most ? k : most;
	CHECK(turns >= 2 && most <= 32 && most > 0);
	CHECK(all >= 80);
	kt_buf_free(&text);
	kt_trace_free(o.trace);
	kt_tune_result_free(&task.out);
	kt_tmpl_free(t);
}

/* A template with a reference kernel whose default is infeasible at the shape (U=3 does not
 * divide it): the reference runs from a unit of its own, and it is the only unit that compiles
 * the reference (the others include the copy without it, kt_emit_unreferenced).  `%s` is the
 * kernel's body: one that reads U, or one that strides (U then sizes only the grid, and the
 * default's variant is compiled for BLOCK=64,U=1 and 2: the reference runs from it). */
static const char refonce_fmt[] =
	"// @kt kernel    scale\n"
	"// @kt reference scale_naive grid n block 1\n"
	"// @kt shape     n\n"
	"// @kt param     BLOCK in 32, 64, 128 default 64\n"
	"// @kt param     U     in 1, 2, 3 default 3\n"
	"// @kt require   n %% U == 0\n"
	"// @kt arg       out float[n] out\n"
	"// @kt arg       x   float[n] in fill uniform(-2, 2)\n"
	"// @kt arg       n   int = n\n"
	"// @kt grid      cdiv(n, BLOCK * U)\n"
	"// @kt block     BLOCK\n"
	"// @kt bytes     8 * n\n"
	"// @kt tolerance 1e-6\n"
	"#ifndef BLOCK\n#define BLOCK 64\n#endif\n"
	"__global__ void scale(float *out, const float *x, int n)\n"
	"{\n"
	"%s"
	"}\n"
	"extern \"C\" __global__ void scale_naive(float *out, const float *x, int n)\n"
	"{\n"
	"\tfor (int i = 0; i < n; i++)\n"
	"\t\tout[i] = 2.0f * x[i];\n"
	"}\n";

static void reference_once(const char *dir, const char *body, int own_unit)
{
	char work[600], name[64];
	kt_err err = {0};
	kt_buf src = {0};
	kt_buf_printf(&src, refonce_fmt, body);
	snprintf(name, sizeof name, "refonce%d.cu.tmpl", own_unit);
	kt_tmpl *t = write_template(dir, name, src.data, src.len);
	kt_buf_free(&src);
	snprintf(work, sizeof work, "%s/refonce%d-work", dir, own_unit);
	if (!t)
		return;
	kt_tune_opts o = fake_opts(work);
	o.strategy = "exhaustive";
	int64_t shape[1] = {4096};
	kt_tune_result r;
	CHECK_INT(tune(t, shape, &o, &r, &err), 0);
	CHECK_INT(r.nevals, 6); /* BLOCK x U=1,2 */
	CHECK(r.best >= 0 && r.reference_us > 0);
	/* The fake compiler's cubins are the compiled text: one of them defines the reference. */
	DIR *d = opendir(work);
	struct dirent *e;
	int with_ref = 0, cubins = 0, own = 0;
	while (d && (e = readdir(d)) != NULL) {
		size_t n = strlen(e->d_name);
		if (n < 6 || strcmp(e->d_name + n - 6, ".cubin"))
			continue;
		own += n > 10 && !strcmp(e->d_name + n - 10, "_ref.cubin");
		char cubin[1200];
		kt_buf text = {0};
		snprintf(cubin, sizeof cubin, "%s/%s", work, e->d_name);
		cubins++;
		if (kt_read_file(cubin, &text, &err) == 0 && strstr(kt_buf_str(&text), "_reference("))
			with_ref++;
		kt_buf_free(&text);
	}
	if (d)
		closedir(d);
	CHECK(cubins >= 2);
	CHECK_INT(with_ref, 1);
	CHECK_INT(own, own_unit);
	kt_tune_result_free(&r);
	kt_tmpl_free(t);
}

static void test_reference_once(const char *dir)
{
	static const char *const bodies[] = {
		"\tint base = (blockIdx.x * BLOCK + threadIdx.x) * U;\n"
		"\tfor (int j = 0; j < U; j++)\n"
		"\t\tif (base + j < n)\n"
		"\t\t\tout[base + j] = 2.0f * x[base + j];\n",
		"\tfor (int i = blockIdx.x * BLOCK + threadIdx.x; i < n; i += gridDim.x * BLOCK)\n"
		"\t\tout[i] = 2.0f * x[i];\n",
	};
	for (int k = 0; k < 2; k++)
		reference_once(dir, bodies[k], k == 0);
}

/* tune.c's first batch for 8 compile jobs and a batch of 128 (a quarter: 32) over a space of
 * space configurations, from the reference unit's nvcc time unit_s: what 8 jobs compile in 2 s
 * with two batches in flight, at least one variant a job. */
static int first_size_at(double unit_s, int space)
{
	double each = 2.0 / (2 * unit_s);
	int n = 8 * (each < 1 ? 1 : (int)each);
	n = n < 32 ? n : 32;
	return n < space ? n : space;
}

/* The searches' first batch follows what the template costs nvcc, measured on the reference's
 * unit: with a default that takes the fake compiler 2.5 s, a compile job gets one variant (8
 * with 8 jobs, each task asking at least 4), where a cheap template fills a quarter batch (32,
 * here the whole space of 21) when its unit takes under a third of a second.  The cheap unit's
 * time is the fake compiler's start, which a loaded machine stretches: the expected size is
 * computed from the time measured, not assumed.
 * Either way the first measurement waits for the references' units alone. */
static void test_first_batch(const char *dir)
{
	kt_buf text = {0}, diags = {0};
	kt_err err = {0};
	CHECK_INT(kt_read_file(KT_FAKE_DIR "/scale.cu.tmpl", &text, &err), 0);
	int sizes[2] = {0, 0}, light_want = 21;
	for (int heavy = 0; heavy < 2; heavy++) {
		char path[600];
		snprintf(path, sizeof path, "%s/first%d.cu.tmpl", dir, heavy);
		kt_buf src = {0};
		kt_buf_add(&src, text.data, text.len);
		if (heavy)
			kt_buf_puts(&src, "// fake-compile-ms: BLOCK=128 UNROLL=1 MODE=good 2500\n");
		CHECK_INT(kt_write_atomic(path, src.data, src.len, &err), 0);
		kt_buf_free(&src);
		kt_tmpl *t = kt_tmpl_parse(path, NULL, &diags, &err);
		CHECK(t != NULL);
		if (!t)
			continue;
		kt_tune_stats st = {0};
		kt_tune_opts o = fake_opts(NULL);
		o.strategy = "random";
		o.jobs = 8;
		o.batch = 128;
		o.stats = &st;
		int64_t shape[1] = {4096};
		kt_tune_result r;
		CHECK_INT(tune(t, shape, &o, &r, &err), 0);
		sizes[heavy] = st.first_batch;
		CHECK(heavy ? st.unit_s >= 2.5 : st.unit_s > 0);
		if (!heavy && st.unit_s > 0)
			light_want = first_size_at(st.unit_s, 21);
		CHECK(st.first_measure_s > 0 && st.first_measure_s < r.seconds + st.setup_s + 1);
		kt_tune_result_free(&r);
		kt_tmpl_free(t);
	}
	CHECK_INT(sizes[0], light_want); /* unloaded: 21, the whole space, smaller than a quarter batch */
	CHECK_INT(sizes[1], 8);
	kt_buf_free(&text);
	kt_buf_free(&diags);
}

/* NVRTC standing in for nvcc (nvrtc.h): a stand-in `kt nvrtc` whose comparison finds other code,
 * and whose variants run in half the time of nvcc's.  The search measures them, and every rival
 * of the choice is measured again from nvcc's variant, so the choice and its times are nvcc's. */
static const char standin_src[] = "// @kt kernel    scale\n"
				  "// @kt shape     n\n"
				  "// @kt param     BLOCK  in 64, 128, 256 default 128\n"
				  "// @kt param     UNROLL in 1, 2, 4 default 1\n"
				  "// @kt require   n % UNROLL == 0\n"
				  "// @kt arg       out float[n] out\n"
				  "// @kt arg       x   float[n] in fill uniform(-2, 2)\n"
				  "// @kt arg       n   int = n\n"
				  "// @kt grid      cdiv(n, BLOCK * UNROLL)\n"
				  "// @kt block     BLOCK\n"
				  "// @kt bytes     8 * n\n"
				  "// @kt tolerance 1e-6\n"
				  "// fake-best: BLOCK=256\n"
				  "// fake-best: UNROLL=4\n"
				  "// fake-time-us: 100\n"
				  "#ifndef BLOCK\n#define BLOCK 128\n#endif\n#ifndef UNROLL\n#define UNROLL 1\n#endif\n"
				  "__global__ void scale(float *out, const float *x, int n)\n"
				  "{\n"
				  "\tint base = (blockIdx.x * BLOCK + threadIdx.x) * UNROLL;\n"
				  "\tfor (int j = 0; j < UNROLL; j++)\n"
				  "\t\tif (base + j < n)\n"
				  "\t\t\tout[base + j] = 2.0f * x[base + j];\n"
				  "}\n";

/* With wait set, the fastest configuration's compile lasts until an nvcc variant of a rival
 * has compiled (fake-compile-wait): the rivals as they stand are compiled by nvcc while the
 * search goes on (slot CONFIRM), not after its last result. */
static void stand_in(const char *dir, int wait)
{
	char work[600], src[sizeof standin_src + 128];
	kt_err err = {0};
	snprintf(src, sizeof src, "%s%s", standin_src, wait ? "// fake-compile-wait: BLOCK=256 UNROLL=4 *_nv*.cubin\n" : "");
	kt_tmpl *t = write_template(dir, wait ? "standin_wait.cu.tmpl" : "standin.cu.tmpl", src, strlen(src));
	if (!t)
		return;
	snprintf(work, sizeof work, "%s/standin-work%d", dir, wait);
	setenv("FAKE_NVRTC_VERDICT", "differs", 1);
	setenv("FAKE_NVRTC_SED", "s/fake-time-us: 100/fake-time-us: 50/", 1);
	kt_tune_opts o = fake_opts(work);
	o.strategy = "exhaustive";
	o.batch = 2; /* packs of one: where NVRTC stands in (larger packs go to nvcc) */
	o.nvrtc_kt = KT_FAKE_DIR "/fake_kt_nvrtc.sh";
	o.nvrtc_lib = "libnvrtc.so";
	kt_tune_stats st = {0};
	o.stats = &st;
	o.trace = kt_trace_new(0);
	int64_t shape[1] = {4096};
	kt_tune_result r;
	CHECK_INT(tune(t, shape, &o, &r, &err), 0);
	CHECK_INT(r.nevals, 9);
	/* The timeline shows them in their slot (trace.h). */
	char trace[700];
	kt_buf text = {0};
	snprintf(trace, sizeof trace, "%s/trace.json", work);
	CHECK_INT(kt_trace_write(o.trace, trace, &err), 0);
	CHECK_INT(kt_read_file(trace, &text, &err), 0);
	CHECK(!wait || strstr(kt_buf_str(&text), "\"name\":\"rivals' nvcc variants\"") != NULL);
	kt_buf_free(&text);
	kt_trace_free(o.trace);
	/* The first batches compare NVRTC with nvcc (nvcc's variants); the later ones stand in.  The
	 * rivals are confirmed; the stand-ins that racing left behind are not. */
	CHECK(st.stand_in > 0);
	CHECK(st.confirmed > 0 && st.confirmed <= st.stand_in);
	CHECK(st.confirm_early <= st.compiled);
	if (wait) /* else the fake compile waits out its bound, and nothing was compiled early */
		CHECK(st.confirm_early > 0);
	for (size_t i = 0; i < r.nretimed; i++)
		CHECK_INT(r.evals[r.retimed[i].eval].stand_in, 0);
	kt_buf cfg = {0};
	if (r.best >= 0)
		kt_tmpl_format_config(t, r.evals[r.best].cfg, &cfg);
	CHECK_STR(kt_buf_str(&cfg), "BLOCK=256,UNROLL=4");
	CHECK(r.best >= 0 && r.evals[r.best].median_us > 95); /* nvcc's 100 us, not NVRTC's 50 */
	CHECK(r.nretimed > 1);
	for (size_t i = 0; i < r.nretimed; i++)
		CHECK(r.retimed[i].us > 95);
	kt_buf_free(&cfg);
	kt_tune_result_free(&r);
	unsetenv("FAKE_NVRTC_VERDICT");
	unsetenv("FAKE_NVRTC_SED");
	kt_tmpl_free(t);
}

static void test_stand_in(const char *dir)
{
	stand_in(dir, 0);
	stand_in(dir, 1);
}

/* A search that ends in an ask with nothing in flight moves on at once (its rivals confirmed, its
 * choice made), not after the next compile to end.  A template of one configuration is tuned
 * beside one whose variants (all but the default, compiled in the setup) compile until a file
 * exists that the first one's finish writes (the batch's next-round hook); ninja's output is held
 * to its end, so nothing else wakes the loop.  Had the loop waited for the compiler before the
 * first one's next turn, each would have waited for the other until the fake compiler's 60 s
 * bound. */
static kt_tune_task *touch_when_done(void *ctx, kt_tune_task *done)
{
	kt_err err = {0};
	(void)done;
	CHECK_INT(kt_write_atomic(ctx, "done\n", 5, &err), 0);
	return NULL;
}

static void test_ended_in_ask(const char *dir)
{
	static const char one_src[] = "// @kt kernel    scale\n"
				      "// @kt shape     n\n"
				      "// @kt param     BLOCK in 128 default 128\n" SCALE_ANNOTATIONS SCALE_CODE;
	static const char waits[] = "// fake-compile-wait: BLOCK=64 one-done\n"
				    "// fake-compile-wait: BLOCK=256 one-done\n"
				    "// fake-compile-wait: UNROLL=2 one-done\n"
				    "// fake-compile-wait: UNROLL=4 one-done\n";
	char work[600], done[700], src[sizeof standin_src + sizeof waits];
	snprintf(src, sizeof src, "%s%s", standin_src, waits);
	kt_tmpl *one = write_template(dir, "one.cu.tmpl", one_src, strlen(one_src));
	kt_tmpl *slow = write_template(dir, "slow.cu.tmpl", src, strlen(src));
	snprintf(work, sizeof work, "%s/ended-work", dir);
	snprintf(done, sizeof done, "%s/one-done", work);
	int64_t shape[1] = {4096};
	kt_tune_task tasks[2] = {{.p = {.tmpl = one, .shape = shape, .tc = &fake_tc}},
				 {.p = {.tmpl = slow, .shape = shape, .tc = &fake_tc}}};
	kt_tune_opts o = fake_opts(work);
	o.strategy = "exhaustive";
	o.ninja = KT_FAKE_DIR "/held_ninja.sh";
	o.next = touch_when_done;
	o.next_ctx = done;
	kt_err err = {0};
	double t0 = kt_now();
	if (one && slow)
		CHECK_INT(kt_tune_batch(tasks, 2, &o, &err), 0);
	CHECK(kt_now() - t0 < 30); /* not the fake's 60 s bound */
	CHECK_INT((int)tasks[0].out.nevals, 1);
	CHECK_INT((int)tasks[1].out.nevals, 9);
	CHECK_INT(status_of(slow, &tasks[1].out, "BLOCK=256,UNROLL=4"), KT_OK);
	for (int k = 0; k < 2; k++)
		kt_tune_result_free(&tasks[k].out);
	kt_tmpl_free(one);
	kt_tmpl_free(slow);
}

/* A steered search's candidate is measured as soon as its unit compiled, though one its search
 * asked earlier still compiles (it is told in the order asked all the same).  The search's first
 * seed, A (UNROLL=1), compiles only once a variant of UNROLL=2 has run on the GPU (its compile
 * waits for the file such a launch creates); every one of those is asked after A: the second
 * seed, B, and the random start points.  Had they waited for A to be measured, A would have
 * compiled at the fake compiler's 60 s bound. */
static void test_measured_as_compiled(const char *dir)
{
	char work[600], src[sizeof standin_src + 1400];
	snprintf(work, sizeof work, "%s/as-compiled-work", dir);
	snprintf(src, sizeof src,
		 "%s// fake-compile-wait: BLOCK=64 UNROLL=1 b-ran\n// fake-launched: UNROLL=2 %s/b-ran\n",
		 standin_src, work);
	kt_tmpl *t = write_template(dir, "as_compiled.cu.tmpl", src, strlen(src));
	if (!t)
		return;
	kt_err err = {0};
	uint16_t seeds[2][2];
	CHECK_INT(kt_tmpl_parse_config(t, "BLOCK=64,UNROLL=1", seeds[0], &err), 0);
	CHECK_INT(kt_tmpl_parse_config(t, "BLOCK=256,UNROLL=2", seeds[1], &err), 0);
	int64_t shape[1] = {4096};
	kt_tune_task task = {.p = {.tmpl = t, .shape = shape, .tc = &fake_tc}, .seeds = seeds[0], .nseeds = 2};
	kt_tune_opts o = fake_opts(work);
	o.strategy = "bestfirst";
	o.budget = 6;
	o.patience = -1;
	o.pack = 1; /* each variant its own unit: A's wait holds A alone */
	double t0 = kt_now();
	CHECK_INT(kt_tune_batch(&task, 1, &o, &err), 0);
	CHECK(kt_now() - t0 < 30); /* not the fake compiler's 60 s bound */
	const kt_tune_result *r = &task.out;
	CHECK_INT(status_of(t, r, "BLOCK=64,UNROLL=1"), KT_OK);
	CHECK_INT(status_of(t, r, "BLOCK=256,UNROLL=2"), KT_OK);
	long a = -1, ran = -1; /* the evaluations, in the order measured: a variant of UNROLL=2 ran first */
	for (size_t i = 0; i < r->nevals; i++) {
		if (!memcmp(r->evals[i].cfg, seeds[0], sizeof seeds[0]))
			a = (long)i;
		if (ran < 0 && r->evals[i].cfg[1] == seeds[1][1])
			ran = (long)i;
	}
	CHECK(ran >= 0 && a > ran);
	kt_tune_result_free(&task.out);
	kt_tmpl_free(t);
}

int main(void)
{
	char *dir = kt_temp_dir(getenv("TMPDIR"), "kt-test-tune-units", NULL);
	if (!dir)
		return 1;
	kt_tmpl *t = parse();
	CHECK(t != NULL);
	if (t)
		test_compiled_once(t);
	kt_tmpl_free(t);
	test_launch_only(dir);
	test_reference_once(dir);
	test_first_batch(dir);
	test_stand_in(dir);
	test_ended_in_ask(dir);
	test_measured_as_compiled(dir);
	test_measure_turns(dir);
	kt_remove_tree(dir);
	free(dir);
	return check_done();
}
