/* gpu_fake.c - a deterministic GPU on the host, for tests of the worker and the tuning loop
 * (test builds only: see gpu_fake.h).
 *
 * Device memory is host memory; a device address is a host address.  A module is the text it was
 * loaded from (tests compile variants with a fake compiler that copies the .cu source), and a
 * kernel is any function defined in it (`name(` occurs in the text).  What a kernel does is chosen
 * by its name and by `fake-` lines in the text:
 *
 *   kt_fill_<etype>    the worker's test inputs, made on the host with kt_fill_value
 *   kt_check_<etype>   the worker's output check, done on the host with kt_elem_close
 *   kt_fma             the arithmetic-rate probe: takes iters * threads * 2 / FAKE_GFLOPS time
 *   kt_spin            holds the stream: advances the clock by its argument (nanoseconds)
 *   kt_l2_flush        reads its buffer (n 16-byte words) at normal priority: leaves the fake's L2 cold
 *   kt_mma             the tensor-core probe: iters * warps * 4096 / FAKE_TENSOR_GFLOPS time
 *   anything else      "scale": params (float *out, const float *x, int n), out[i] = 2 * x[i]
 *
 *   fake-mode: M            M for every kernel: ok, wrong (one element off), noop (writes nothing),
 *                           fault (an illegal address at the next sync), hang (the sync never returns)
 *   fake-rule: P=V M        mode M when the text also holds `#define P V` (a variant's parameter)
 *   fake-time-us: T         a launch takes T microseconds of the fake clock (default 100)
 *   fake-rule-us: P=V T     T microseconds instead when the text also holds `#define P V`
 *   fake-best: P=V          each such line whose `#define P V` is missing adds 25% to the time
 *   fake-drift: F           the time wanders with the fake clock, by up to the fraction F either
 *                           way (a sine of the clock over FAKE_DRIFT_US), as a real GPU's clocks do
 *   fake-drift-phase: P=V X that sine X radians ahead when the text also holds `#define P V`
 *   fake-stream             the kernel touches its buffers evict-first (see below)
 *   fake-boost-us: B        a launch takes FAKE_BOOST of its time until the fake GPU has been busy
 *                           B microseconds with such kernels: a boost clock that sustained load
 *                           ends, as a power limit does
 *   fake-launched: P=V PATH when the text also holds `#define P V`, a launch creates the file PATH
 *                           (so that a test can hold another variant's compile until this one ran)
 *
 * Time is a fake clock that launches and copies advance, so events measure it exactly.  So that
 * tests can tell how the worker timed, a variant's launch takes less when its input x was touched
 * (by a launch, a copy, a memset) within the last L2 size of bytes touched (FAKE_WARM: the fake's
 * L2), and less as a node of a replayed graph (FAKE_GRAPH: no launch overhead).  Graphs capture
 * launches only: any other call while capturing fails, as the worker must not make one.
 * KT_FAKE_GPUS sets the number of devices (default 1); KT_FAKE_LOG a file that logs the launches.
 */
#include "gpu_fake.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "target.h"

enum { FAKE_DEFAULT_TIME_US = 100 };
static const double FAKE_COPY_GBS = 2000.0; /* bytes read + written per ns */
static const double FAKE_GFLOPS = 50000.0;
static const double FAKE_TENSOR_GFLOPS = 400000.0;
static const double FAKE_WARM = 0.8;  /* a variant's time when its input is in the fake's L2 */
static const double FAKE_GRAPH = 0.9; /* a variant's time as a graph's node */
static const double FAKE_DRIFT_US = 5000; /* fake-drift's clock: a sine of the fake clock over this */
static const double FAKE_BOOST = 0.8; /* a fake-boost-us variant's time before the load ends its boost */
enum { FAKE_TOUCHES = 512 };          /* buffers whose last touch the fake's L2 remembers */
enum { FAKE_NODES = 4096 };           /* launches in one graph, at most */

typedef enum fake_mode { M_OK, M_WRONG, M_NOOP, M_FAULT, M_HANG } fake_mode;
static const char *const mode_names[] = {"ok", "wrong", "noop", "fault", "hang"};

typedef struct fake_fn {
	char name[192];
	fake_mode mode;
	double time_us;
	int stream;      /* fake-stream: touches evict-first */
	double boost_us; /* fake-boost-us: boosted while the GPU's busy time is under this */
	double drift;    /* fake-drift: how far its time wanders with the fake clock, a fraction */
	double phase;    /* fake-drift-phase: where in its wandering it is (radians) */
	char launched[512]; /* fake-launched: the file a launch creates; "": none */
} fake_fn;

typedef struct fake_mod {
	char *text;
	size_t nfns;
	fake_fn *fns[64];
} fake_mod;

/* A launch, as a graph holds it.  The fake keeps the caller's params array rather than copies of
 * the values (it does not know their sizes): the worker's argument sets outlive its graphs. */
typedef struct fake_node {
	struct fake_fn *f;
	int64_t grid[3], block[3];
	void **params;
} fake_node;

typedef struct fake_graph {
	fake_node *nodes;
	size_t n;
} fake_graph;

/* The fake's L2: when each buffer (by its address) was last touched, as the running totals of
 * bytes touched then, all and at normal priority.  As on the GPU, a buffer touched at normal
 * priority leaves the L2 only after an L2 of normal traffic: evict-first traffic (a fake-stream
 * kernel's) passes it by. */
typedef struct fake_touch {
	uintptr_t addr;
	double at, at_normal;
	int stream;
} fake_touch;

typedef struct fake_gpu {
	kt_gpu base;
	double clock_us;
	int broken; /* a fault happened: everything fails from now on */
	int pending_hang, pending_fault;
	int64_t l2_bytes;
	fake_touch touched[FAKE_TOUCHES];
	size_t ntouched;
	double traffic;         /* bytes touched so far */
	double traffic_normal;  /* of which at normal priority */
	double busy_us;         /* time the "scale" kernels ran, for fake-boost-us */
	long records;           /* events recorded: odd while a timed sample's first event is open */
	fake_graph *capturing;  /* the graph that launches go to, or NULL */
} fake_gpu;

static int fake_count(int *n, char *why, size_t whysz)
{
	const char *e = getenv("KT_FAKE_GPUS");
	*n = e ? atoi(e) : 1;
	if (*n <= 0)
		snprintf(why, whysz, "KT_FAKE_GPUS=%s", e);
	return 0;
}

static int fake_info(int ordinal, kt_gpu_info *out, kt_err *err)
{
	memset(out, 0, sizeof *out);
	snprintf(out->id.name, sizeof out->id.name, "kt fake GPU");
	out->id.cc_major = 9;
	out->id.sms = 4;
	out->id.l2_bytes = 256 << 10;
	out->id.smem_optin = 232448;
	out->lim = (kt_gpu_limits){1024, {1024, 1024, 64}, {2147483647, 65535, 65535}, 65536, 65536, 49152, 256LL << 20};
	snprintf(out->driver, sizeof out->driver, "fake");
	/* KT_FAKE_GPU_NAME: the fake is that GPU of kt's table, as far as its identity goes */
	const char *as = getenv("KT_FAKE_GPU_NAME");
	kt_target t;
	if (as && *as && kt_target_lookup(as, &t, err) != 0)
		return -1;
	if (as && *as)
		out->id = t.id;
	(void)ordinal;
	return 0;
}

static kt_gpu *fake_open(int ordinal, kt_err *err)
{
	int n = 0;
	char why[64];
	fake_count(&n, why, sizeof why);
	if (ordinal < 0 || ordinal >= n) {
		kt_fail_internal(err, "fake GPU %d does not exist (KT_FAKE_GPUS=%d)", ordinal, n);
		return NULL;
	}
	kt_gpu_info info;
	if (fake_info(ordinal, &info, err))
		return NULL;
	fake_gpu *g = kt_xcalloc(1, sizeof *g);
	g->base.ops = kt_gpu_fake();
	g->l2_bytes = info.id.l2_bytes;
	return &g->base;
}

static void fake_graph_free(kt_gpu *g, void *graph)
{
	fake_graph *gr = graph;
	if (gr)
		free(gr->nodes);
	free(gr);
}

static void fake_close(kt_gpu *base)
{
	fake_gpu *g = (fake_gpu *)base;
	if (g)
		fake_graph_free(base, g->capturing);
	free(g);
}

/* The fake's L2: n bytes at p touched now, evict-first when stream. */
static void touch_as(fake_gpu *g, const void *p, size_t n, int stream)
{
	uintptr_t a = (uintptr_t)p;
	size_t slot = 0;
	g->traffic += (double)n;
	if (!stream)
		g->traffic_normal += (double)n;
	fake_touch t = {a, g->traffic, g->traffic_normal, stream};
	for (size_t i = 0; i < g->ntouched; i++) {
		if (g->touched[i].addr == a) {
			g->touched[i] = t;
			return;
		}
		if (g->touched[i].at < g->touched[slot].at)
			slot = i;
	}
	if (g->ntouched < FAKE_TOUCHES)
		slot = g->ntouched++;
	g->touched[slot] = t;
}

static void touch(fake_gpu *g, const void *p, size_t n) { touch_as(g, p, n, 0); }

/* True when the n bytes at p are in the fake's L2: touched, and less than an L2 since (of normal
 * traffic, when they were touched at normal priority). */
static int in_l2(const fake_gpu *g, const void *p, size_t n)
{
	for (size_t i = 0; i < g->ntouched; i++) {
		const fake_touch *t = &g->touched[i];
		if (t->addr == (uintptr_t)p)
			return (t->stream ? g->traffic - t->at : g->traffic_normal - t->at_normal) + (double)n <= (double)g->l2_bytes;
	}
	return 0;
}

/* Every call but a launch fails while a graph is captured. */
static int capturing(fake_gpu *g, kt_err *err)
{
	if (!g->capturing)
		return 0;
	return kt_fail_internal(err, "CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED (not a launch, while capturing a graph)");
}

static int broken(fake_gpu *g, kt_err *err)
{
	if (!g->broken)
		return 0;
	return kt_fail_internal(err, "CUDA_ERROR_ILLEGAL_ADDRESS (an illegal memory access was encountered)");
}

/* Broken, or capturing a graph: what every call but a launch checks. */
static int unusable(fake_gpu *g, kt_err *err) { return broken(g, err) || capturing(g, err); }

static int fake_load(kt_gpu *base, const void *image, size_t len, void **mod, kt_err *err)
{
	if (unusable((fake_gpu *)base, err))
		return -1;
	fake_mod *m = kt_xcalloc(1, sizeof *m);
	m->text = kt_xmalloc(len + 1);
	memcpy(m->text, image, len);
	m->text[len] = 0;
	*mod = m;
	return 0;
}

static void fake_unload(kt_gpu *g, void *mod)
{
	fake_mod *m = mod;
	for (size_t i = 0; i < m->nfns; i++)
		free(m->fns[i]);
	free(m->text);
	free(m);
}

/* Value of `#define name V` in text, copied to val; 0 when found. */
static int define_of(const char *text, const char *name, char *val, size_t valsz)
{
	size_t nl = strlen(name);
	for (const char *p = strstr(text, "#define "); p; p = strstr(p + 1, "#define ")) {
		const char *q = p + 8;
		if (!strncmp(q, name, nl) && q[nl] == ' ') {
			q += nl + 1;
			size_t n = strcspn(q, " \t\r\n");
			snprintf(val, valsz, "%.*s", (int)(n < valsz ? n : valsz - 1), q);
			return 0;
		}
	}
	return -1;
}

/* True when the text defines P as V, for "P=V". */
static int has_setting(const char *text, const char *pv, size_t n)
{
	char name[64], want[64], got[64];
	const char *eq = memchr(pv, '=', n);
	if (!eq || (size_t)(eq - pv) >= sizeof name)
		return 0;
	snprintf(name, sizeof name, "%.*s", (int)(eq - pv), pv);
	snprintf(want, sizeof want, "%.*s", (int)(n - (size_t)(eq - pv) - 1), eq + 1);
	return define_of(text, name, got, sizeof got) == 0 && !strcmp(got, want);
}

static fake_mode parse_mode(const char *s, size_t n)
{
	for (int i = 0; i < (int)(sizeof mode_names / sizeof mode_names[0]); i++)
		if (strlen(mode_names[i]) == n && !strncmp(s, mode_names[i], n))
			return (fake_mode)i;
	return M_OK;
}

/* The value of the last `KEY P=V VALUE` line in text whose setting P=V the text holds too (a
 * variant's parameter), its leading blanks skipped; NULL when none holds. */
static const char *held_rule(const char *text, const char *key)
{
	const char *v = NULL;
	size_t k = strlen(key);
	for (const char *p = strstr(text, key); p; p = strstr(p + 1, key)) {
		const char *pv = p + k;
		size_t n = strcspn(pv, " \t\r\n");
		if (has_setting(text, pv, n))
			v = pv + n + strspn(pv + n, " \t");
	}
	return v;
}

/* Reads the fake- lines of a module into f. */
static void configure(const char *text, fake_fn *f)
{
	f->mode = M_OK;
	f->time_us = FAKE_DEFAULT_TIME_US;
	const char *p;
	if ((p = strstr(text, "fake-time-us: ")))
		f->time_us = atof(p + 14);
	if ((p = held_rule(text, "fake-rule-us: ")))
		f->time_us = atof(p);
	double base = f->time_us;
	if ((p = strstr(text, "fake-mode: ")))
		f->mode = parse_mode(p + 11, strcspn(p + 11, " \t\r\n"));
	if ((p = held_rule(text, "fake-rule: ")))
		f->mode = parse_mode(p, strcspn(p, " \t\r\n"));
	f->stream = strstr(text, "fake-stream") != NULL;
	f->boost_us = (p = strstr(text, "fake-boost-us: ")) ? atof(p + 15) : 0;
	f->drift = (p = strstr(text, "fake-drift: ")) ? atof(p + 12) : 0;
	f->phase = (p = held_rule(text, "fake-drift-phase: ")) ? atof(p) : 0;
	if ((p = held_rule(text, "fake-launched: ")))
		snprintf(f->launched, sizeof f->launched, "%.*s", (int)strcspn(p, " \t\r\n"), p);
	for (p = strstr(text, "fake-best: "); p; p = strstr(p + 1, "fake-best: "))
		if (!has_setting(text, p + 11, strcspn(p + 11, " \t\r\n")))
			f->time_us += 0.25 * base;
}

static int fake_function(kt_gpu *g, void *mod, const char *name, void **fn)
{
	fake_mod *m = mod;
	char pat[160];
	snprintf(pat, sizeof pat, " %s(", name);
	if (!strstr(m->text, pat) || m->nfns == sizeof m->fns / sizeof m->fns[0])
		return -1;
	fake_fn *f = kt_xcalloc(1, sizeof *f);
	snprintf(f->name, sizeof f->name, "%s", name);
	/* In a module of several variants (kt_emit_part), only the kernel's own part configures it:
	 * the text from the last part mark before the kernel to the next one. */
	static const char mark[] = "// kt part: ";
	const char *at = strstr(m->text, pat), *from = m->text, *p;
	for (p = strstr(m->text, mark); p && p < at; p = strstr(p + 1, mark))
		from = p;
	const char *to = strstr(at, mark);
	size_t n = to ? (size_t)(to - from) : strlen(from);
	char *part = kt_xmalloc(n + 1);
	memcpy(part, from, n);
	part[n] = 0;
	configure(part, f);
	free(part);
	m->fns[m->nfns++] = f;
	*fn = f;
	return 0;
}

/* Lists `__global__ void NAME(` definitions: in the fake, every kernel is "mangled" as _Z<len>NAME. */
static int fake_functions(kt_gpu *g, void *mod, const char ***names, void ***fns, size_t *n, kt_err *err)
{
	fake_mod *m = mod;
	static const char key[] = "__global__ void ";
	size_t cap = 8;
	*names = kt_xcalloc(cap, sizeof **names);
	*fns = kt_xcalloc(cap, sizeof **fns);
	*n = 0;
	for (const char *p = strstr(m->text, key); p; p = strstr(p + 1, key)) {
		const char *q = p + sizeof key - 1;
		size_t len = strcspn(q, "( \t");
		char name[128], mangled[160];
		snprintf(name, sizeof name, "%.*s", (int)len, q);
		snprintf(mangled, sizeof mangled, "_Z%zu%sPfPKfi", len, name);
		void *fn;
		if (fake_function(g, mod, name, &fn))
			continue;
		fake_fn *f = fn;
		snprintf(f->name, sizeof f->name, "%s", mangled);
		if (*n + 1 >= cap) {
			cap *= 2;
			*names = kt_xrealloc(*names, cap * sizeof **names);
			*fns = kt_xrealloc(*fns, cap * sizeof **fns);
		}
		(*names)[*n] = f->name;
		(*fns)[(*n)++] = f;
	}
	return 0;
}

static int fake_set_dyn_smem(kt_gpu *g, void *fn, int64_t bytes, kt_err *err)
{
	if (bytes > 232448)
		return kt_fail_internal(err, "CUDA_ERROR_INVALID_VALUE (dynamic shared memory %lld too large)", (long long)bytes);
	return unusable((fake_gpu *)g, err);
}

static int fake_alloc(kt_gpu *g, size_t n, kt_dptr *p, kt_err *err)
{
	if (unusable((fake_gpu *)g, err))
		return -1;
	*p = (kt_dptr)(uintptr_t)kt_xmalloc(n ? n : 1);
	return 0;
}

static void fake_free(kt_gpu *g, kt_dptr p) { free((void *)(uintptr_t)p); }

static void *host(kt_dptr p) { return (void *)(uintptr_t)p; }

static void advance_copy(fake_gpu *g, size_t n) { g->clock_us += 2.0 * (double)n / (FAKE_COPY_GBS * 1e3); }

static int fake_htod(kt_gpu *g, kt_dptr dst, const void *src, size_t n, kt_err *err)
{
	if (unusable((fake_gpu *)g, err))
		return -1;
	memcpy(host(dst), src, n);
	return 0;
}

static int fake_dtoh(kt_gpu *g, void *dst, kt_dptr src, size_t n, kt_err *err)
{
	if (unusable((fake_gpu *)g, err))
		return -1;
	memcpy(dst, host(src), n);
	return 0;
}

static int fake_dtod(kt_gpu *g, kt_dptr dst, kt_dptr src, size_t n, kt_err *err)
{
	if (unusable((fake_gpu *)g, err))
		return -1;
	memmove(host(dst), host(src), n);
	advance_copy((fake_gpu *)g, n);
	touch((fake_gpu *)g, host(src), n);
	touch((fake_gpu *)g, host(dst), n);
	return 0;
}

static int fake_memset8(kt_gpu *g, kt_dptr dst, unsigned char v, size_t n, kt_err *err)
{
	if (unusable((fake_gpu *)g, err))
		return -1;
	memset(host(dst), v, n);
	advance_copy((fake_gpu *)g, n / 2);
	touch((fake_gpu *)g, host(dst), n);
	return 0;
}

/* kt_check_<etype>(const T *out, const T *ref, u64 n, double atol, double rtol, u64 *res):
 * res[0] += elements that differ, res[1] = min(res[1], first index that differs). */
static int run_check(const char *etype, void **params, kt_err *err)
{
	int t = -1;
	for (int i = 0; i < KT_NETYPES; i++)
		if (!strcmp(kt_etypes[i].name, etype))
			t = i;
	if (t < 0)
		return kt_fail_internal(err, "fake: no check kernel for '%s'", etype);
	const void *out = host(*(kt_dptr *)params[0]), *ref = host(*(kt_dptr *)params[1]);
	uint64_t n = *(uint64_t *)params[2];
	double atol = *(double *)params[3], rtol = *(double *)params[4];
	uint64_t *res = host(*(kt_dptr *)params[5]);
	for (uint64_t i = 0; i < n; i++)
		if (!kt_elem_close(kt_elem_get((kt_etype)t, out, i), kt_elem_get((kt_etype)t, ref, i), atol, rtol)) {
			res[0]++;
			if (i < res[1])
				res[1] = i;
		}
	return 0;
}

/* kt_fill_<etype>(T *p, u64 n, u64 seed, int kind, double a, double b, double neginf, int is_float) */
static int run_fill(const char *etype, void **params, kt_err *err)
{
	int t = -1;
	for (int i = 0; i < KT_NETYPES; i++)
		if (!strcmp(kt_etypes[i].name, etype))
			t = i;
	if (t < 0)
		return kt_fail_internal(err, "fake: no fill kernel for '%s'", etype);
	void *p = host(*(kt_dptr *)params[0]);
	uint64_t n = *(uint64_t *)params[1], seed = *(uint64_t *)params[2];
	kt_fill f = {(kt_fillkind) * (int *)params[3], *(double *)params[4], *(double *)params[5], *(double *)params[6]};
	int is_float = *(int *)params[7];
	for (uint64_t i = 0; i < n; i++)
		kt_elem_set((kt_etype)t, p, i, kt_fill_value(&f, seed, i, is_float));
	return 0;
}

static void run_scale(fake_fn *f, void **params)
{
	float *out = host(*(kt_dptr *)params[0]);
	const float *x = host(*(kt_dptr *)params[1]);
	int n = *(int *)params[2];
	if (f->mode == M_NOOP)
		return;
	for (int i = 0; i < n; i++)
		out[i] = 2.0f * x[i];
	if (f->mode == M_WRONG && n > 0)
		out[n / 2] += 1.0f;
}

/* KT_FAKE_LOG names a file that gets a line per launch of a variant, "launch NAME n=N x=ADDR
 * grid=X", and " timed" when it comes between a sample's two events, so that tests can see which
 * problem the GPU worked on when, on which inputs, and in how many blocks. */
static void log_launch(const fake_gpu *g, const fake_fn *f, const int64_t grid[3], void **params)
{
	const char *path = getenv("KT_FAKE_LOG");
	FILE *log = path && *path ? fopen(path, "a") : NULL;
	if (!log)
		return;
	fprintf(log, "launch %s n=%d x=%llx grid=%lld%s\n", f->name, *(int *)params[2],
		(unsigned long long)*(kt_dptr *)params[1], (long long)grid[0], g->records % 2 ? " timed" : "");
	fclose(log);
}

/* Runs a launch of f now: as a graph's node (in_graph) or from the stream. */
static int run_launch(fake_gpu *g, fake_fn *f, const int64_t grid[3], const int64_t block[3], void **params,
		      int in_graph, kt_err *err)
{
	if (broken(g, err))
		return -1;
	if (block[0] * block[1] * block[2] > 1024)
		return kt_fail_internal(err, "CUDA_ERROR_INVALID_VALUE (too many threads per block)");
	if (!strncmp(f->name, "kt_check_", 9))
		return run_check(f->name + 9, params, err);
	if (!strncmp(f->name, "kt_fill_", 8))
		return run_fill(f->name + 8, params, err);
	if (!strcmp(f->name, "kt_spin")) {
		g->clock_us += (double)*(unsigned long long *)params[0] / 1e3;
		return 0;
	}
	if (!strcmp(f->name, "kt_l2_flush")) {
		size_t bytes = (size_t)*(unsigned long long *)params[1] * 16;
		touch(g, host(*(kt_dptr *)params[0]), bytes);
		g->clock_us += (double)bytes / (FAKE_COPY_GBS * 1e3);
		return 0;
	}
	if (!strcmp(f->name, "kt_fma")) {
		int64_t threads = grid[0] * grid[1] * grid[2] * block[0] * block[1] * block[2];
		g->clock_us += 2.0 * (double)threads * *(int *)params[1] / (FAKE_GFLOPS * 1e3);
		return 0;
	}
	if (!strcmp(f->name, "kt_mma")) { /* 2 * 16 * 8 * 16 flops per m16n8k16 of a 32-thread warp */
		int64_t warps = grid[0] * grid[1] * grid[2] * (block[0] * block[1] * block[2] / 32);
		g->clock_us += 4096.0 * (double)warps * *(int *)params[1] / (FAKE_TENSOR_GFLOPS * 1e3);
		return 0;
	}
	switch (f->mode) {
	case M_FAULT: g->pending_fault = 1; return 0;
	case M_HANG: g->pending_hang = 1; return 0;
	default: break;
	}
	/* "scale": out = params[0], x = params[1], n floats each */
	void *out = host(*(kt_dptr *)params[0]), *x = host(*(kt_dptr *)params[1]);
	size_t bytes = (size_t)(*(int *)params[2] > 0 ? *(int *)params[2] : 0) * sizeof(float);
	double t = f->time_us * (in_l2(g, x, bytes) ? FAKE_WARM : 1.0) * (in_graph ? FAKE_GRAPH : 1.0) *
		   (g->busy_us < f->boost_us ? FAKE_BOOST : 1.0) * (1 + f->drift * sin(g->clock_us / FAKE_DRIFT_US + f->phase));
	g->busy_us += t;
	run_scale(f, params);
	touch_as(g, x, bytes, f->stream);
	touch_as(g, out, bytes, f->stream);
	g->clock_us += t;
	log_launch(g, f, grid, params);
	FILE *mark = f->launched[0] ? fopen(f->launched, "w") : NULL;
	if (mark)
		fclose(mark);
	return 0;
}

static int fake_launch(kt_gpu *base, void *fn, const int64_t grid[3], const int64_t block[3], int64_t smem,
		       void **params, kt_err *err)
{
	fake_gpu *g = (fake_gpu *)base;
	fake_graph *gr = g->capturing;
	if (!gr)
		return run_launch(g, fn, grid, block, params, 0, err);
	if (gr->n == FAKE_NODES)
		return kt_fail_internal(err, "fake: more than %d launches in one graph", FAKE_NODES);
	gr->nodes = kt_xrealloc(gr->nodes, (gr->n + 1) * sizeof *gr->nodes);
	fake_node *nd = &gr->nodes[gr->n++];
	*nd = (fake_node){fn, {grid[0], grid[1], grid[2]}, {block[0], block[1], block[2]}, params};
	return 0;
}

static int fake_capture_begin(kt_gpu *base, kt_err *err)
{
	fake_gpu *g = (fake_gpu *)base;
	if (unusable(g, err))
		return -1;
	g->capturing = kt_xcalloc(1, sizeof *g->capturing);
	return 0;
}

static int fake_capture_end(kt_gpu *base, void **graph, kt_err *err)
{
	fake_gpu *g = (fake_gpu *)base;
	*graph = g->capturing;
	g->capturing = NULL;
	if (!*graph)
		return kt_fail_internal(err, "CUDA_ERROR_ILLEGAL_STATE (no capture to end)");
	return broken(g, err);
}

static int fake_graph_instantiate(kt_gpu *base, void *graph, void **exec, kt_err *err)
{
	const fake_graph *gr = graph;
	if (unusable((fake_gpu *)base, err))
		return -1;
	fake_graph *x = kt_xcalloc(1, sizeof *x);
	x->nodes = kt_xcalloc(gr->n + 1, sizeof *x->nodes);
	memcpy(x->nodes, gr->nodes, gr->n * sizeof *x->nodes);
	x->n = gr->n;
	*exec = x;
	return 0;
}

static int fake_graph_launch(kt_gpu *base, void *exec, kt_err *err)
{
	fake_gpu *g = (fake_gpu *)base;
	const fake_graph *x = exec;
	if (unusable(g, err))
		return -1;
	for (size_t i = 0; i < x->n; i++)
		if (run_launch(g, x->nodes[i].f, x->nodes[i].grid, x->nodes[i].block, x->nodes[i].params, 1, err))
			return -1;
	return 0;
}

static int fake_event_new(kt_gpu *g, void **ev, kt_err *err)
{
	*ev = kt_xcalloc(1, sizeof(double));
	return 0;
}

static void fake_event_free(kt_gpu *g, void *ev) { free(ev); }

static int fake_record(kt_gpu *g, void *ev, kt_err *err)
{
	if (unusable((fake_gpu *)g, err))
		return -1;
	*(double *)ev = ((fake_gpu *)g)->clock_us;
	((fake_gpu *)g)->records++;
	return 0;
}

static int fake_elapsed(kt_gpu *g, void *a, void *b, float *ms, kt_err *err)
{
	if (unusable((fake_gpu *)g, err))
		return -1;
	*ms = (float)((*(double *)b - *(double *)a) / 1e3);
	return 0;
}

static int fake_sync(kt_gpu *base, kt_err *err)
{
	fake_gpu *g = (fake_gpu *)base;
	if (capturing(g, err))
		return -1;
	if (g->pending_hang)
		for (;;) {
			struct timespec ts = {1, 0};
			nanosleep(&ts, NULL);
		}
	if (g->pending_fault)
		g->broken = 1;
	return broken(g, err);
}

static const kt_gpu_ops fake_ops = {
	.name = "fake",
	.count = fake_count,
	.info = fake_info,
	.open = fake_open,
	.close = fake_close,
	.load = fake_load,
	.unload = fake_unload,
	.function = fake_function,
	.functions = fake_functions,
	.set_dyn_smem = fake_set_dyn_smem,
	.alloc = fake_alloc,
	.free = fake_free,
	.htod = fake_htod,
	.dtoh = fake_dtoh,
	.dtod = fake_dtod,
	.memset8 = fake_memset8,
	.launch = fake_launch,
	.event_new = fake_event_new,
	.event_free = fake_event_free,
	.record = fake_record,
	.elapsed_ms = fake_elapsed,
	.sync = fake_sync,
	.capture_begin = fake_capture_begin,
	.capture_end = fake_capture_end,
	.graph_instantiate = fake_graph_instantiate,
	.graph_launch = fake_graph_launch,
	.graph_exec_free = fake_graph_free,
	.graph_free = fake_graph_free,
};

const kt_gpu_ops *kt_gpu_fake(void) { return &fake_ops; }
