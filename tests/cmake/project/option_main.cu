// The option fixture (cases/Option.cmake): the library's merge_attn_states generated twice by
// kt_add_tuned_kernel, with its option LSE at the default (natural log: kt_mas_e) and fixed to
// base 2 through TYPES (kt_mas_2).  Both launchers run on the same inputs; each result is checked
// against a CPU reference in double precision in its own base, at the shape the kernels were
// generated for and at one they were not (the launcher's fallback).
#include <cmath>
#include <cstdio>
#include <cstring>
#include <vector>

#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include "kt_mas_2.h"
#include "kt_mas_e.h"

typedef cudaError_t (*mas_fn)(__nv_bfloat16 *, float *, const __nv_bfloat16 *, const float *, const __nv_bfloat16 *,
			      const float *, int, int, int, cudaStream_t);

static unsigned long long rng = 0x2545f4914f6cdd1dull;

static double uniform() // [0, 1)
{
	rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
	return (double)(rng >> 11) * (1.0 / 9007199254740992.0);
}

static double normal(double sd) { return sd * std::sqrt(-2.0 * std::log(uniform() + 1e-300)) * std::cos(6.283185307179586 * uniform()); }

static float bf16_to_float(__nv_bfloat16 h)
{
	unsigned short b;
	std::memcpy(&b, &h, sizeof b);
	unsigned int u = (unsigned int)b << 16;
	float f;
	std::memcpy(&f, &u, sizeof f);
	return f;
}

// Runs one launcher at one shape and compares with the reference in base 2 (base2) or e.
static bool check(const char *what, mas_fn fn, bool base2, int tokens, int heads, int dim)
{
	const size_t np = (size_t)tokens * heads, n = np * dim;
	std::vector<__nv_bfloat16> va(n), vb(n), v(n);
	std::vector<float> sa(np), sb(np), s(np);
	for (size_t i = 0; i < n; i++) {
		va[i] = __float2bfloat16((float)normal(1));
		vb[i] = __float2bfloat16((float)normal(1));
	}
	for (size_t p = 0; p < np; p++) { // about one in ten states saw no key (-inf)
		sa[p] = uniform() < 0.1 ? -INFINITY : (float)normal(3);
		sb[p] = uniform() < 0.1 ? -INFINITY : (float)normal(3);
	}
	__nv_bfloat16 *dva, *dvb, *dv;
	float *dsa, *dsb, *ds;
	cudaMalloc(&dva, n * sizeof *dva);
	cudaMalloc(&dvb, n * sizeof *dvb);
	cudaMalloc(&dv, n * sizeof *dv);
	cudaMalloc(&dsa, np * sizeof *dsa);
	cudaMalloc(&dsb, np * sizeof *dsb);
	cudaMalloc(&ds, np * sizeof *ds);
	cudaMemcpy(dva, va.data(), n * sizeof *dva, cudaMemcpyHostToDevice);
	cudaMemcpy(dvb, vb.data(), n * sizeof *dvb, cudaMemcpyHostToDevice);
	cudaMemcpy(dsa, sa.data(), np * sizeof *dsa, cudaMemcpyHostToDevice);
	cudaMemcpy(dsb, sb.data(), np * sizeof *dsb, cudaMemcpyHostToDevice);
	cudaError_t e = fn(dv, ds, dva, dsa, dvb, dsb, tokens, heads, dim, 0);
	if (e == cudaSuccess)
		e = cudaMemcpy(v.data(), dv, n * sizeof *dv, cudaMemcpyDeviceToHost);
	if (e == cudaSuccess)
		e = cudaMemcpy(s.data(), ds, np * sizeof *ds, cudaMemcpyDeviceToHost);
	cudaFree(dva), cudaFree(dvb), cudaFree(dv), cudaFree(dsa), cudaFree(dsb), cudaFree(ds);
	if (e != cudaSuccess) {
		std::printf("option_app: %s: CUDA error: %s\n", what, cudaGetErrorString(e));
		return false;
	}
	for (size_t p = 0; p < np; p++) {
		const double a = sa[p], b = sb[p], m = a > b ? a : b;
		double wa = 0, wb = 0, lse = -INFINITY;
		if (m != -INFINITY) {
			const double ea = base2 ? std::exp2(a - m) : std::exp(a - m), eb = base2 ? std::exp2(b - m) : std::exp(b - m);
			wa = ea / (ea + eb);
			wb = eb / (ea + eb);
			lse = m + (base2 ? std::log2(ea + eb) : std::log(ea + eb));
		}
		const bool s_ok = std::isinf(lse) ? s[p] == lse : std::fabs(s[p] - lse) <= 1e-4 + 1e-5 * std::fabs(lse);
		if (!s_ok) {
			std::printf("option_app: %s: s[%zu] = %.9g, expected %.9g (base %s)\n", what, p, s[p], lse, base2 ? "2" : "e");
			return false;
		}
		for (int i = 0; i < dim; i++) {
			const size_t k = p * dim + i;
			const double want = wa * bf16_to_float(va[k]) + wb * bf16_to_float(vb[k]), got = bf16_to_float(v[k]);
			if (!(std::fabs(got - want) <= 1e-2 + 1e-2 * std::fabs(want))) {
				std::printf("option_app: %s: v[%zu] = %.6g, expected %.6g (base %s)\n", what, k, got, want, base2 ? "2" : "e");
				return false;
			}
		}
	}
	std::printf("option_app: %s at %d,%d,%d: ok\n", what, tokens, heads, dim);
	return true;
}

int main()
{
	int count = 0;
	cudaError_t e = cudaGetDeviceCount(&count);
	if (e != cudaSuccess || count == 0) {
		std::printf("option_app: no CUDA GPU (%s)\n", cudaGetErrorString(e));
		return 0;
	}
	bool ok = true;
	ok &= check("natural log (default)", kt_mas_e, false, 64, 8, 128);
	ok &= check("base 2 (LSE=base2)", kt_mas_2, true, 64, 8, 128);
	ok &= check("natural log (default)", kt_mas_e, false, 5, 32, 64);
	ok &= check("base 2 (LSE=base2)", kt_mas_2, true, 5, 32, 64);
	std::printf("option_app: %s\n", ok ? "ok" : "FAILED");
	return ok ? 0 : 1;
}
