// example_app: runs the tuned rmsnorm and silu_and_mul launchers at the shapes they were tuned
// for (and one they were not), checks every result against a CPU reference and prints the
// median time of each.  Exit status: 0 when all results are within tolerance, or when there is
// no GPU to run on (the build itself is then what was tested); 1 otherwise.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdint>
#include <vector>

#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include "kt_rmsnorm.h"
#include "kt_silu_and_mul.h"

namespace {

constexpr int kWarmup = 3;
constexpr int kReps = 50;
constexpr double kAtol = 1e-2, kRtol = 1e-2; // the templates' own tolerance

#define CHECK_CUDA(call)                                                                          \
	do {                                                                                      \
		cudaError_t e_ = (call);                                                          \
		if (e_ != cudaSuccess) {                                                          \
			std::fprintf(stderr, "example_app: %s: %s\n", #call, cudaGetErrorString(e_)); \
			return false;                                                             \
		}                                                                                 \
	} while (0)

// Inputs rounded to half, and their float values for the reference.
struct HalfData {
	std::vector<__half> h;
	std::vector<float> f;
};

// About normal(mean, stddev): the sum of four uniform 16-bit draws (one splitmix64 step),
// centred and scaled.  Some 10^8 inputs are drawn; std::normal_distribution took seconds.
struct Normalish {
	uint64_t state;
	float mean, stddev;
	float operator()()
	{
		uint64_t z = (state += 0x9e3779b97f4a7c15ull);
		z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
		z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
		z ^= z >> 31;
		const float sum = (float)(z & 0xffff) + (float)((z >> 16) & 0xffff) + (float)((z >> 32) & 0xffff) +
				  (float)(z >> 48);                       // mean 2 * 65535, variance 4/12 * 65536^2
		return mean + stddev * (sum - 131070.f) * (1.7320508f / 65536.f);
	}
};

HalfData random_half(size_t n, float mean, float stddev, float lo_clip, unsigned seed)
{
	Normalish dist{seed, mean, stddev};
	HalfData d;
	d.h.resize(n);
	d.f.resize(n);
	for (size_t i = 0; i < n; i++) {
		d.h[i] = __float2half(std::max(lo_clip, dist()));
		d.f[i] = __half2float(d.h[i]);
	}
	return d;
}

// Largest |out - ref| and whether every element is within atol + rtol * |ref|.
struct Error {
	double max_abs = 0;
	bool ok = true;
};

Error compare(const std::vector<__half> &out, const std::vector<float> &ref)
{
	Error e;
	for (size_t i = 0; i < ref.size(); i++) {
		const double o = __half2float(out[i]), r = ref[i], d = std::fabs(o - r);
		if (!(d <= kAtol + kRtol * std::fabs(r))) // also catches NaN
			e.ok = false;
		if (!(d <= e.max_abs))
			e.max_abs = std::isnan(d) ? INFINITY : d;
	}
	return e;
}

// Median time of launch() in microseconds, measured with CUDA events.
template <class Launch>
bool median_us(Launch launch, double *us)
{
	cudaEvent_t start, stop;
	CHECK_CUDA(cudaEventCreate(&start));
	CHECK_CUDA(cudaEventCreate(&stop));
	for (int i = 0; i < kWarmup; i++)
		CHECK_CUDA(launch());
	std::vector<float> ms(kReps);
	for (int i = 0; i < kReps; i++) {
		CHECK_CUDA(cudaEventRecord(start));
		CHECK_CUDA(launch());
		CHECK_CUDA(cudaEventRecord(stop));
		CHECK_CUDA(cudaEventSynchronize(stop));
		CHECK_CUDA(cudaEventElapsedTime(&ms[i], start, stop));
	}
	cudaEventDestroy(start);
	cudaEventDestroy(stop);
	std::nth_element(ms.begin(), ms.begin() + kReps / 2, ms.end());
	*us = 1e3 * ms[kReps / 2];
	return true;
}

void report(const char *what, const Error &e, double us, double bytes)
{
	std::printf("%-36s max error %.3g  %s  median %8.2f us  %7.1f GB/s\n", what, e.max_abs,
		    e.ok ? "ok  " : "FAIL", us, bytes / (us * 1e3));
}

bool run_rmsnorm(int rows, int hidden, bool *all_ok)
{
	const size_t n = (size_t)rows * hidden;
	const float eps = 1e-6f;
	HalfData x = random_half(n, 0.f, 1.f, -INFINITY, 1), w = random_half(hidden, 1.f, 0.25f, 0.f, 2);
	std::vector<float> ref(n);
	for (int r = 0; r < rows; r++) {
		double ss = 0;
		for (int i = 0; i < hidden; i++)
			ss += (double)x.f[(size_t)r * hidden + i] * x.f[(size_t)r * hidden + i];
		const double scale = 1.0 / std::sqrt(ss / hidden + eps);
		for (int i = 0; i < hidden; i++)
			ref[(size_t)r * hidden + i] = (float)(x.f[(size_t)r * hidden + i] * scale * w.f[i]);
	}
	__half *dx, *dw, *dout;
	CHECK_CUDA(cudaMalloc(&dx, n * sizeof(__half)));
	CHECK_CUDA(cudaMalloc(&dw, hidden * sizeof(__half)));
	CHECK_CUDA(cudaMalloc(&dout, n * sizeof(__half)));
	CHECK_CUDA(cudaMemcpy(dx, x.h.data(), n * sizeof(__half), cudaMemcpyHostToDevice));
	CHECK_CUDA(cudaMemcpy(dw, w.h.data(), hidden * sizeof(__half), cudaMemcpyHostToDevice));
	CHECK_CUDA(cudaMemset(dout, 0xff, n * sizeof(__half))); // NaN: an unwritten output shows
	auto launch = [&] { return kt_rmsnorm(dout, dx, dw, rows, hidden, eps, 0); };
	CHECK_CUDA(launch());
	std::vector<__half> out(n);
	CHECK_CUDA(cudaMemcpy(out.data(), dout, n * sizeof(__half), cudaMemcpyDeviceToHost));
	const Error e = compare(out, ref);
	double us = 0;
	if (!median_us(launch, &us))
		return false;
	char what[64];
	std::snprintf(what, sizeof what, "rmsnorm rows=%d hidden=%d", rows, hidden);
	report(what, e, us, 2.0 * (2.0 * n + hidden));
	*all_ok = *all_ok && e.ok;
	cudaFree(dx);
	cudaFree(dw);
	cudaFree(dout);
	return true;
}

bool run_silu_and_mul(int tokens, int d, bool *all_ok)
{
	const size_t n = (size_t)tokens * d;
	HalfData x = random_half(2 * n, 0.f, 2.f, -INFINITY, 3);
	std::vector<float> ref(n);
	for (int t = 0; t < tokens; t++)
		for (int i = 0; i < d; i++) {
			const double a = x.f[(size_t)t * 2 * d + i], b = x.f[(size_t)t * 2 * d + d + i];
			ref[(size_t)t * d + i] = (float)(a / (1.0 + std::exp(-a)) * b);
		}
	__half *dx, *dout;
	CHECK_CUDA(cudaMalloc(&dx, 2 * n * sizeof(__half)));
	CHECK_CUDA(cudaMalloc(&dout, n * sizeof(__half)));
	CHECK_CUDA(cudaMemcpy(dx, x.h.data(), 2 * n * sizeof(__half), cudaMemcpyHostToDevice));
	CHECK_CUDA(cudaMemset(dout, 0xff, n * sizeof(__half)));
	auto launch = [&] { return kt_silu_and_mul(dout, dx, tokens, d, 0); };
	CHECK_CUDA(launch());
	std::vector<__half> out(n);
	CHECK_CUDA(cudaMemcpy(out.data(), dout, n * sizeof(__half), cudaMemcpyDeviceToHost));
	const Error e = compare(out, ref);
	double us = 0;
	if (!median_us(launch, &us))
		return false;
	char what[64];
	std::snprintf(what, sizeof what, "silu_and_mul tokens=%d d=%d", tokens, d);
	report(what, e, us, 2.0 * 3.0 * n);
	*all_ok = *all_ok && e.ok;
	cudaFree(dx);
	cudaFree(dout);
	return true;
}

} // namespace

int main()
{
	int count = 0;
	const cudaError_t e = cudaGetDeviceCount(&count);
	if (e != cudaSuccess || count == 0) {
		std::printf("example_app: no CUDA GPU found (%s); the tuned kernels were built, nothing to run\n",
			    e != cudaSuccess ? cudaGetErrorString(e) : "no devices");
		return 0;
	}
	cudaDeviceProp prop;
	if (cudaGetDeviceProperties(&prop, 0) == cudaSuccess)
		std::printf("example_app: running on %s (sm_%d%d)\n", prop.name, prop.major, prop.minor);
	// Each launcher has a table per GPU model the build was tuned for (KT_GPUS); which serves here:
	const char *rt = kt_rmsnorm_table(0), *st = kt_silu_and_mul_table(0);
	std::printf("example_app: tables: rmsnorm %s, silu_and_mul %s\n", rt ? rt : "(template defaults)",
		    st ? st : "(template defaults)");

	bool ok = true;
	// The tuned shapes (see CMakeLists.txt), then shapes that the launcher must serve with the
	// configuration of a near tuned shape.
	const int rms[][2] = {{4096, 4096}, {16, 4096}, {2048, 8192}, {1000, 4096}};
	for (const auto &s : rms)
		if (!run_rmsnorm(s[0], s[1], &ok))
			return 1;
	const int silu[][2] = {{4096, 11008}, {16, 11008}, {100, 11008}};
	for (const auto &s : silu)
		if (!run_silu_and_mul(s[0], s[1], &ok))
			return 1;
	if (!ok) {
		std::printf("example_app: some results are beyond the tolerance (atol %g, rtol %g)\n", kAtol, kRtol);
		return 1;
	}
	std::printf("example_app: all results within tolerance (atol %g, rtol %g)\n", kAtol, kRtol);
	return 0;
}
