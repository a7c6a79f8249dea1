// ref_check.cu - GPU test of one library template, without kt in the loop.
//
// Built once per template and configuration (tests/templates/CMakeLists.txt): -DKT_CASE_<name>
// selects the template, which is included with its parameter macros given by -D (none: its
// defaults) and T from -DT.  For each shape on the command line (else the case's own):
//   1. fresh random inputs, outputs poisoned with NaN;
//   2. the tuned kernel and the naive reference kernel run; every output element is compared
//      with a CPU reference computed in double precision (|out - ref| <= atol + rtol |ref|,
//      equal infinities agree, NaN never does), the same for the naive kernel;
//   3. with --time: both are timed (median and spread of cudaEvent timings over input sets
//      rotated through more memory than the L2 holds) against the copy-bandwidth floor.
// Exit status 0 when every check passed.  Usage: ref_check [--time] [shape ...], a shape being
// the case's symbols in order separated by commas, e.g. 4096,8192.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#pragma nv_diag_suppress 177 /* helpers unused by some cases (each build uses one case) */

#define REF_STR2(x) #x
#define REF_STR(x) REF_STR2(x)

#if defined(KT_CASE_rmsnorm)
#include "rmsnorm.cu.tmpl"
#elif defined(KT_CASE_fused_add_rmsnorm)
#include "fused_add_rmsnorm.cu.tmpl"
#elif defined(KT_CASE_silu_and_mul)
#include "silu_and_mul.cu.tmpl"
#elif defined(KT_CASE_gelu_and_mul)
#include "gelu_and_mul.cu.tmpl"
#elif defined(KT_CASE_merge_attn_states)
#include "merge_attn_states.cu.tmpl"
#elif defined(KT_CASE_softmax)
#include "softmax.cu.tmpl"
#elif defined(KT_CASE_transpose)
#include "transpose.cu.tmpl"
#elif defined(KT_CASE_gemm)
#include "gemm.cu.tmpl"
#else
#error "define KT_CASE_<template name>"
#endif

#ifndef KT_REF_CASE
#define KT_REF_CASE 0 /* the template's defaults, built by hand */
#endif

typedef T elem; /* the template's element type */

static int failures;

#define CK(call)                                                                                   \
	do {                                                                                       \
		cudaError_t e_ = (call);                                                           \
		if (e_ != cudaSuccess) {                                                           \
			fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #call, cudaGetErrorString(e_)); \
			exit(2);                                                                   \
		}                                                                                  \
	} while (0)

/* ---- host data -------------------------------------------------------------------------------- */

static unsigned long long rng_state = 0x9e3779b97f4a7c15ull;
static double rng_uniform() /* [0, 1) */
{
	rng_state = rng_state * 6364136223846793005ull + 1442695040888963407ull;
	return (double)(rng_state >> 11) * (1.0 / 9007199254740992.0);
}
inline double rng_normal(double mean, double sd)
{
	const double u = rng_uniform() + 1e-300, v = rng_uniform();
	return mean + sd * std::sqrt(-2.0 * std::log(u)) * std::cos(6.283185307179586 * v);
}

inline float to_f(__half h) { return __half2float(h); }
inline float to_f(__nv_bfloat16 h) { return __bfloat162float(h); }
inline float to_f(float f) { return f; }
template <typename E> static E from_f(float f);
template <> inline __half from_f<__half>(float f) { return __float2half_rn(f); }
template <> inline __nv_bfloat16 from_f<__nv_bfloat16>(float f) { return __float2bfloat16_rn(f); }
template <> inline float from_f<float>(float f) { return f; }

/* A device buffer with its host copy; `copies` instances back to back for rotation. */
template <typename E> struct buf {
	std::vector<E> h; /* copy 0 */
	E *d = nullptr;
	size_t n = 0;
	int copies = 1;
	void alloc(size_t count, int ncopies)
	{
		n = count;
		copies = ncopies;
		h.assign(n, from_f<E>(0.f));
		CK(cudaMalloc(&d, std::max<size_t>(1, n * copies) * sizeof(E)));
	}
	E *at(int c) const { return d + (size_t)c * n; }
	/* normal(mean, sd), a fraction neginf of them -inf; the same values in every copy */
	void fill(double mean, double sd, double neginf = 0)
	{
		for (size_t i = 0; i < n; i++)
			h[i] = from_f<E>(rng_uniform() < neginf ? -INFINITY : (float)rng_normal(mean, sd));
		for (int c = 0; c < copies; c++)
			CK(cudaMemcpy(at(c), h.data(), n * sizeof(E), cudaMemcpyHostToDevice));
	}
	void fill_uniform(double lo, double hi)
	{
		for (size_t i = 0; i < n; i++)
			h[i] = from_f<E>((float)(lo + (hi - lo) * rng_uniform()));
		for (int c = 0; c < copies; c++)
			CK(cudaMemcpy(at(c), h.data(), n * sizeof(E), cudaMemcpyHostToDevice));
	}
	void poison(int c = 0) { CK(cudaMemset(at(c), 0xff, n * sizeof(E))); } /* NaN in every float type */
	void upload(int c = 0) { CK(cudaMemcpy(at(c), h.data(), n * sizeof(E), cudaMemcpyHostToDevice)); }
	std::vector<E> download(int c = 0) const
	{
		std::vector<E> out(n);
		CK(cudaMemcpy(out.data(), at(c), n * sizeof(E), cudaMemcpyDeviceToHost));
		return out;
	}
	double get(size_t i) const { return to_f(h[i]); }
	~buf() { cudaFree(d); }
};

/* Compares got with the double-precision reference ref; prints the worst element. */
template <typename E>
static bool agree(const char *what, const std::vector<E> &got, const std::vector<double> &ref, double atol, double rtol)
{
	size_t bad = 0, worst = 0;
	double worst_excess = -1;
	for (size_t i = 0; i < ref.size(); i++) {
		const double g = to_f(got[i]), r = ref[i];
		bool ok;
		double excess;
		if (std::isinf(r) || std::isinf(g)) {
			ok = g == r;
			excess = ok ? 0 : INFINITY;
		} else {
			excess = std::fabs(g - r) - (atol + rtol * std::fabs(r));
			ok = excess <= 0; /* false for NaN */
			if (std::isnan(excess))
				excess = INFINITY;
		}
		if (!ok)
			bad++;
		if (excess > worst_excess) {
			worst_excess = excess;
			worst = i;
		}
	}
	printf("  %-34s %s  (%zu of %zu outside; worst [%zu] got %.6g want %.6g)\n", what, bad ? "FAIL" : "ok  ", bad,
	       ref.size(), worst, ref.empty() ? 0.0 : (double)to_f(got[worst]), ref.empty() ? 0.0 : ref[worst]);
	if (bad)
		failures++;
	return bad == 0;
}

/* ---- timing ----------------------------------------------------------------------------------- */

struct timing {
	double median_us, spread_us;
};

/* Runs launch(copy) for warm-up and then reps times, rotating copies; one event pair per run. */
template <typename F> static timing time_it(F launch, int copies, int reps = 200)
{
	for (int i = 0; i < 10; i++)
		launch(i % copies);
	CK(cudaDeviceSynchronize());
	std::vector<cudaEvent_t> ev(2 * reps);
	for (auto &e : ev)
		CK(cudaEventCreate(&e));
	for (int i = 0; i < reps; i++) {
		CK(cudaEventRecord(ev[2 * i]));
		launch(i % copies);
		CK(cudaEventRecord(ev[2 * i + 1]));
	}
	CK(cudaGetLastError());
	CK(cudaDeviceSynchronize());
	std::vector<double> t(reps);
	for (int i = 0; i < reps; i++) {
		float ms;
		CK(cudaEventElapsedTime(&ms, ev[2 * i], ev[2 * i + 1]));
		t[i] = ms * 1e3;
	}
	for (auto &e : ev)
		CK(cudaEventDestroy(e));
	std::sort(t.begin(), t.end());
	return {t[reps / 2], (t[reps * 9 / 10] - t[reps / 10]) / 2};
}

static bool g_time = false;
static const double copy_gbs = 4300.0; /* measured device-to-device copy, read + written (H200) */

/* How many copies of a working set of `bytes` rotate through more than the L2 (60 MB) holds. */
static int copies_for(double bytes) { return g_time ? std::max(1, (int)std::ceil(240e6 / std::max(bytes, 1.0))) : 1; }

static void report(const char *shape, double bytes, double flops, double rate_gflops, timing k, timing n)
{
	double floor_us = bytes / (copy_gbs * 1e3);
	if (flops > 0 && rate_gflops > 0)
		floor_us = std::max(floor_us, flops / (rate_gflops * 1e3));
	printf("  time %-16s kernel %9.2f us (+-%.2f)  naive %9.2f us (+-%.2f)  floor %8.2f us  %5.1f%% of floor  "
	       "x%.2f over naive\n",
	       shape, k.median_us, k.spread_us, n.median_us, n.spread_us, floor_us, 100.0 * floor_us / k.median_us,
	       n.median_us / k.median_us);
}

static dim3 d3(long long x, long long y = 1, long long z = 1) { return dim3((unsigned)x, (unsigned)y, (unsigned)z); }
static long long cdiv(long long a, long long b) { return (a + b - 1) / b; }

/* ---- one section per template: shapes, launch geometry (as in its @kt lines), CPU reference --- */

#if defined(KT_CASE_rmsnorm) || defined(KT_CASE_fused_add_rmsnorm)
static const char *default_shapes[] = {"1,4096", "37,4096", "130,8192", "64,1024", "3,2048"};
/* The template's constraints that matter for correctness (the pruning ones left out). */
static bool feasible(const std::vector<long long> &s)
{
	const long long hidden = s[1], tpr = BLOCK / RPB, need = cdiv(hidden, (long long)VEC * tpr);
	return tpr >= 32 && hidden % VEC == 0 && (!STORE_IS_regs || need <= ITEMS) &&
	       (!STORE_IS_smem || RPB * hidden * 2 <= 49152);
}
static void run_case(const std::vector<long long> &s, const char *shape)
{
	const int rows = (int)s[0], hidden = (int)s[1];
	const float eps = 1e-6f;
	const size_t n = (size_t)rows * hidden;
#if defined(KT_CASE_rmsnorm)
	const double bytes = 2.0 * (2.0 * n + hidden);
#else
	const double bytes = 2.0 * (4.0 * n + hidden);
#endif
	const int copies = copies_for(bytes);
	buf<elem> x, w, out, res;
	x.alloc(n, copies);
	w.alloc(hidden, 1);
	out.alloc(n, copies);
	res.alloc(n, copies);
	x.fill(0, 1);
	res.fill(0, 1);
	w.fill_uniform(0.5, 1.5);
	/* CPU reference */
	std::vector<double> ref(n), refres(n);
	for (int r = 0; r < rows; r++) {
		double ss = 0;
		for (int i = 0; i < hidden; i++) {
			double v = x.get((size_t)r * hidden + i);
#if defined(KT_CASE_fused_add_rmsnorm)
			v = to_f(from_f<elem>((float)(v + res.get((size_t)r * hidden + i)))); /* stored rounded */
			refres[(size_t)r * hidden + i] = v;
#endif
			ss += v * v;
		}
		const double inv = 1.0 / std::sqrt(ss / hidden + eps);
		for (int i = 0; i < hidden; i++) {
			const size_t j = (size_t)r * hidden + i;
#if defined(KT_CASE_rmsnorm)
			ref[j] = x.get(j) * inv * w.get(i);
#else
			ref[j] = refres[j] * inv * w.get(i);
#endif
		}
	}
	const int tpr = BLOCK / RPB;
	const size_t smem = STORE_IS_smem ? (size_t)RPB * hidden * 2 : 0;
	const dim3 grid = d3(cdiv(rows, RPB * GROWS)), block = d3(BLOCK);
	(void)tpr;
#if defined(KT_CASE_rmsnorm)
	auto kern = [&](int c) { rmsnorm<<<grid, block, smem>>>(out.at(c), x.at(c), w.d, rows, hidden, eps); };
	auto naive = [&](int c) { rmsnorm_naive<<<rows, 256>>>(out.at(c), x.at(c), w.d, rows, hidden, eps); };
	out.poison();
	kern(0);
	CK(cudaGetLastError());
	agree("kernel vs cpu double", out.download(), ref, 1e-2, 1e-2);
	out.poison();
	naive(0);
	CK(cudaGetLastError());
	agree("naive vs cpu double", out.download(), ref, 1e-2, 1e-2);
#else
	auto kern = [&](int c) { fused_add_rmsnorm<<<grid, block, smem>>>(x.at(c), res.at(c), w.d, rows, hidden, eps); };
	auto naive = [&](int c) { fused_add_rmsnorm_naive<<<rows, 256>>>(x.at(c), res.at(c), w.d, rows, hidden, eps); };
	kern(0);
	CK(cudaGetLastError());
	agree("x (kernel) vs cpu double", x.download(), ref, 1e-2, 1e-2);
	agree("residual (kernel) vs cpu double", res.download(), refres, 1e-2, 1e-2);
	x.upload();
	res.upload();
	naive(0);
	CK(cudaGetLastError());
	agree("x (naive) vs cpu double", x.download(), ref, 1e-2, 1e-2);
	agree("residual (naive) vs cpu double", res.download(), refres, 1e-2, 1e-2);
#endif
	if (g_time)
		report(shape, bytes, 0, 0, time_it(kern, copies), time_it(naive, copies, 50));
}
#endif

#if defined(KT_CASE_silu_and_mul) || defined(KT_CASE_gelu_and_mul)
static const char *default_shapes[] = {"1,11008", "7,14336", "64,1024", "3,8"};
static bool feasible(const std::vector<long long> &s) { return s[1] % VEC == 0 && (!LAYOUT_IS_row || s[0] <= 65535); }
static double act(double a)
{
#if defined(KT_CASE_silu_and_mul)
	return a / (1.0 + std::exp(-a));
#else
	return 0.5 * a * (1.0 + std::erf(a / std::sqrt(2.0)));
#endif
}
static void run_case(const std::vector<long long> &s, const char *shape)
{
	const int tokens = (int)s[0], d = (int)s[1];
	const size_t n = (size_t)tokens * d;
	const double bytes = 2.0 * 3.0 * n;
	const int copies = copies_for(bytes);
	buf<elem> x, out;
	x.alloc(2 * n, copies);
	out.alloc(n, copies);
	x.fill(0, 2);
	std::vector<double> ref(n);
	for (int t = 0; t < tokens; t++)
		for (int i = 0; i < d; i++)
			ref[(size_t)t * d + i] = act(x.get((size_t)t * 2 * d + i)) * x.get((size_t)t * 2 * d + d + i);
	const long long per = (long long)VEC * BLOCK * ITEMS;
	const dim3 grid = LAYOUT_IS_row ? d3(cdiv(d, per), tokens) : LAYOUT_IS_flat ? d3(cdiv((long long)n, per)) : d3(tokens);
#if defined(KT_CASE_silu_and_mul)
	auto kern = [&](int c) { silu_and_mul<<<grid, BLOCK>>>(out.at(c), x.at(c), tokens, d); };
	auto naive = [&](int c) { silu_and_mul_naive<<<tokens, 256>>>(out.at(c), x.at(c), tokens, d); };
#else
	auto kern = [&](int c) { gelu_and_mul<<<grid, BLOCK>>>(out.at(c), x.at(c), tokens, d); };
	auto naive = [&](int c) { gelu_and_mul_naive<<<tokens, 256>>>(out.at(c), x.at(c), tokens, d); };
#endif
	out.poison();
	kern(0);
	CK(cudaGetLastError());
	agree("kernel vs cpu double", out.download(), ref, 1e-2, 1e-2);
	out.poison();
	naive(0);
	CK(cudaGetLastError());
	agree("naive vs cpu double", out.download(), ref, 1e-2, 1e-2);
	if (g_time)
		report(shape, bytes, 0, 0, time_it(kern, copies), time_it(naive, copies, 50));
}
#endif

#if defined(KT_CASE_merge_attn_states)
static const char *default_shapes[] = {"5,32,128", "64,8,64", "1,32,128"};
static bool feasible(const std::vector<long long> &s) { return s[2] % VEC == 0; }
static void run_case(const std::vector<long long> &s, const char *shape)
{
	const int tokens = (int)s[0], heads = (int)s[1], dim = (int)s[2];
	const size_t np = (size_t)tokens * heads, n = np * dim;
	const double bytes = 2.0 * 3.0 * n + 4.0 * 3.0 * np;
	const int copies = copies_for(bytes);
	buf<elem> va, vb, v;
	buf<float> sa, sb, so;
	va.alloc(n, copies);
	vb.alloc(n, copies);
	v.alloc(n, copies);
	sa.alloc(np, copies);
	sb.alloc(np, copies);
	so.alloc(np, copies);
	va.fill(0, 1);
	vb.fill(0, 1);
	sa.fill(0, 3, 0.2); /* -inf cases: one state empty (about 32%), both empty (about 4%) */
	sb.fill(0, 3, 0.2);
	std::vector<double> rv(n), rs(np);
	size_t both = 0, one = 0;
	/* the log-sum-exps' base, as the template's option LSE says: e (natural) or 2 (base2) */
	auto bexp = [](double x) { return LSE_IS_base2 ? std::exp2(x) : std::exp(x); };
	auto blog = [](double x) { return LSE_IS_base2 ? std::log2(x) : std::log(x); };
	printf("  (log-sum-exps in base %s)\n", LSE_IS_base2 ? "2" : "e");
	for (size_t p = 0; p < np; p++) {
		const double a = sa.get(p), b = sb.get(p), m = std::max(a, b);
		double wa = 0, wb = 0, lse = -INFINITY;
		if (m != -INFINITY) {
			const double ea = bexp(a - m), eb = bexp(b - m);
			wa = ea / (ea + eb);
			wb = eb / (ea + eb);
			lse = m + blog(ea + eb);
			one += std::isinf(a) || std::isinf(b);
		} else {
			both++;
		}
		rs[p] = lse;
		for (int i = 0; i < dim; i++)
			rv[p * dim + i] = wa * va.get(p * dim + i) + wb * vb.get(p * dim + i);
	}
	printf("  (%zu head states with one -inf input, %zu with both)\n", one, both);
	const dim3 grid = LAYOUT_IS_flat ? d3(cdiv((long long)n, (long long)VEC * BLOCK * ITEMS)) : d3(tokens);
	auto kern = [&](int c) {
		merge_attn_states<<<grid, BLOCK>>>(v.at(c), so.at(c), va.at(c), sa.at(c), vb.at(c), sb.at(c), tokens, heads, dim);
	};
	auto naive = [&](int c) {
		merge_attn_states_naive<<<(unsigned)np, 128>>>(v.at(c), so.at(c), va.at(c), sa.at(c), vb.at(c), sb.at(c),
								 tokens, heads, dim);
	};
	v.poison();
	so.poison();
	kern(0);
	CK(cudaGetLastError());
	agree("v (kernel) vs cpu double", v.download(), rv, 1e-2, 1e-2);
	agree("s (kernel) vs cpu double", so.download(), rs, 1e-4, 1e-5);
	v.poison();
	so.poison();
	naive(0);
	CK(cudaGetLastError());
	agree("v (naive) vs cpu double", v.download(), rv, 1e-2, 1e-2);
	agree("s (naive) vs cpu double", so.download(), rs, 1e-4, 1e-5);
	if (g_time)
		report(shape, bytes, 0, 0, time_it(kern, copies), time_it(naive, copies, 50));
}
#endif

#if defined(KT_CASE_softmax)
static const char *default_shapes[] = {"1,1024", "37,4096", "9,32768", "64,1000", "5,2048"};
static bool feasible(const std::vector<long long> &s)
{
	const long long cols = s[1], tpr = BLOCK / RPB, need = cdiv(cols, (long long)VEC * tpr);
	(void)need; /* a register row longer than ITEMS vectors per thread reads its tail again */
	return tpr >= 32 && cols % VEC == 0 && (!STORE_IS_smem || RPB * cols * 2 <= 232448);
}
static void run_case(const std::vector<long long> &s, const char *shape)
{
	const int rows = (int)s[0], cols = (int)s[1];
	const size_t n = (size_t)rows * cols;
	const double bytes = 2.0 * 2.0 * n;
	const int copies = copies_for(bytes);
	buf<elem> x, out;
	x.alloc(n, copies);
	out.alloc(n, copies);
	x.fill(0, 2);
	std::vector<double> ref(n);
	for (int r = 0; r < rows; r++) {
		double m = -INFINITY, sum = 0;
		for (int i = 0; i < cols; i++)
			m = std::max(m, x.get((size_t)r * cols + i));
		for (int i = 0; i < cols; i++)
			sum += std::exp(x.get((size_t)r * cols + i) - m);
		for (int i = 0; i < cols; i++)
			ref[(size_t)r * cols + i] = std::exp(x.get((size_t)r * cols + i) - m) / sum;
	}
	const size_t smem = STORE_IS_smem ? (size_t)RPB * cols * 2 : 0;
	if (smem > 48 * 1024)
		CK(cudaFuncSetAttribute(softmax, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem));
	auto kern = [&](int c) { softmax<<<d3(cdiv(rows, RPB)), BLOCK, smem>>>(out.at(c), x.at(c), rows, cols); };
	auto naive = [&](int c) { softmax_naive<<<rows, 256>>>(out.at(c), x.at(c), rows, cols); };
	out.poison();
	kern(0);
	CK(cudaGetLastError());
	agree("kernel vs cpu double", out.download(), ref, 1e-6, 2e-2);
	out.poison();
	naive(0);
	CK(cudaGetLastError());
	agree("naive vs cpu double", out.download(), ref, 1e-6, 2e-2);
	if (g_time)
		report(shape, bytes, 0, 0, time_it(kern, copies), time_it(naive, copies, 50));
}
#endif

#if defined(KT_CASE_transpose)
static const char *default_shapes[] = {"256,512", "40,72", "8,8", "33,17", "136,200"};
static bool feasible(const std::vector<long long> &s)
{
	return s[0] % VEC == 0 && s[1] % VEC == 0;
}
static void run_case(const std::vector<long long> &s, const char *shape)
{
	const int rows = (int)s[0], cols = (int)s[1];
	const size_t n = (size_t)rows * cols;
	const double bytes = 2.0 * 2.0 * n;
	const int copies = copies_for(bytes);
	buf<elem> x, out;
	x.alloc(n, copies);
	out.alloc(n, copies);
	x.fill(0, 1);
	std::vector<double> ref(n);
	for (int r = 0; r < rows; r++)
		for (int c = 0; c < cols; c++)
			ref[(size_t)c * rows + r] = x.get((size_t)r * cols + c);
	auto kern = [&](int c) {
		const long long tx = cdiv(cols, TILE), ty = MODE_IS_regs ? cdiv(rows, VEC * TY) : cdiv(rows, TILE);
		const dim3 grid = ORDER_IS_rows ? d3(tx, ty) : d3(ty, tx);
		transpose<<<grid, d3(TILE / VEC, TY)>>>(out.at(c), x.at(c), rows, cols);
	};
	auto naive = [&](int c) { transpose_naive<<<d3(cdiv((long long)n, 256)), 256>>>(out.at(c), x.at(c), rows, cols); };
	out.poison();
	kern(0);
	CK(cudaGetLastError());
	agree("kernel vs cpu double", out.download(), ref, 0, 0);
	out.poison();
	naive(0);
	CK(cudaGetLastError());
	agree("naive vs cpu double", out.download(), ref, 0, 0);
	if (g_time)
		report(shape, bytes, 0, 0, time_it(kern, copies), time_it(naive, copies, 50));
}
#endif

#if defined(KT_CASE_gemm)
static const char *default_shapes[] = {"256,256,256", "512,256,1024"};
static bool feasible(const std::vector<long long> &s) { return s[0] % BM == 0 && s[1] % BN == 0 && s[2] % BK == 0; }
static void run_case(const std::vector<long long> &s, const char *shape)
{
	const int M = (int)s[0], N = (int)s[1], K = (int)s[2];
	const double bytes = 2.0 * ((double)M * K + (double)K * N + (double)M * N), flops = 2.0 * M * N * K;
	const int copies = copies_for(bytes);
	buf<elem> A, B, C;
	A.alloc((size_t)M * K, copies);
	B.alloc((size_t)K * N, copies);
	C.alloc((size_t)M * N, copies);
	A.fill_uniform(-1, 1);
	B.fill_uniform(-1, 1);
	std::vector<double> ref;
	const bool cpu = (double)M * N * K <= 2.5e8; /* the CPU reference only where it is quick */
	if (cpu) {
		ref.assign((size_t)M * N, 0.0);
		std::vector<double> a((size_t)M * K), b((size_t)K * N);
		for (size_t i = 0; i < a.size(); i++)
			a[i] = A.get(i);
		for (size_t i = 0; i < b.size(); i++)
			b[i] = B.get(i);
		for (int i = 0; i < M; i++)
			for (int k = 0; k < K; k++) {
				const double av = a[(size_t)i * K + k];
				for (int j = 0; j < N; j++)
					ref[(size_t)i * N + j] += av * b[(size_t)k * N + j];
			}
	}
	const size_t smem = (size_t)STAGES * (BM * BK + BK * BN) * 2 + (MMA_IS_wgmma ? 1024 : 0);
	CK(cudaFuncSetAttribute(gemm, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem));
	auto kern = [&](int c) {
		gemm<<<d3((long long)(M / BM) * (N / BN)), WM * WN * 32, smem>>>(C.at(c), A.at(c), B.at(c), M, N, K);
	};
	auto naive = [&](int c) {
		gemm_naive<<<d3(cdiv((long long)M * N, 256)), 256>>>(C.at(c), A.at(c), B.at(c), M, N, K);
	};
	C.poison();
	kern(0);
	CK(cudaGetLastError());
	std::vector<elem> got = C.download();
	C.poison();
	naive(0);
	CK(cudaGetLastError());
	std::vector<elem> nv = C.download();
	if (cpu) {
		agree("kernel vs cpu double", got, ref, 5e-2, 1e-2);
		agree("naive vs cpu double", nv, ref, 5e-2, 1e-2);
	} else { /* large shapes: the kernel against the naive kernel */
		std::vector<double> nd(nv.size());
		for (size_t i = 0; i < nv.size(); i++)
			nd[i] = to_f(nv[i]);
		agree("kernel vs naive", got, nd, 5e-2, 2e-2);
	}
	if (g_time)
		report(shape, bytes, flops, 0, time_it(kern, copies, 50), time_it(naive, 1, 3));
}
#endif

int main(int argc, char **argv)
{
	std::vector<std::string> shapes;
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--time"))
			g_time = true;
		else
			shapes.push_back(argv[i]);
	}
	if (shapes.empty())
		for (const char *s : default_shapes)
			shapes.push_back(s);
	cudaDeviceProp prop;
	int dev = 0;
	if (cudaGetDevice(&dev) != cudaSuccess || cudaGetDeviceProperties(&prop, dev) != cudaSuccess) {
		printf("no CUDA device: skipped\n");
		return 77;
	}
	printf("%s  T=%s  configuration %d of tests/templates/CMakeLists.txt\n", argv[0], REF_STR(T), KT_REF_CASE);
	for (const std::string &sh : shapes) {
		std::vector<long long> s;
		for (const char *p = sh.c_str(); *p;) {
			char *end;
			s.push_back(strtoll(p, &end, 10));
			p = *end ? end + 1 : end;
		}
		if (!feasible(s)) {
			printf(" shape %s: not feasible for this configuration, skipped\n", sh.c_str());
			continue;
		}
		printf(" shape %s\n", sh.c_str());
		run_case(s, sh.c_str());
		CK(cudaDeviceSynchronize());
	}
	printf("%s\n", failures ? "FAILED" : "PASSED");
	return failures ? 1 : 0;
}
