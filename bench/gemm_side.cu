// gemm_side.cu - kt's tuned gemm_sm90 and cuBLAS's best way, timed side by side in one process
// under one protocol, so that "% of cuBLAS" compares like with like (bench/gemm.sh).
//
//   gemm_side [--type half|bfloat16] [--warm SECONDS] M N K [M N K ...]
//
// Built with the launcher and variants that `kt generate` wrote for one element type:
//   nvcc -O2 -arch=sm_90a -o gemm_side bench/gemm_side.cu GEN/*.cu -lcublasLt -lcublas
// (every source for sm_90a).  Prints one line per shape:
//   side M N K kt_us cublas_us pct way kt_spread cublas_spread max_diff
// pct is kt's speed as a percentage of cuBLAS's (100 * cublas_us / kt_us); max_diff the largest
// difference between kt's C and cuBLAS's for one argument set, relative to cuBLAS's largest |C|.
//
// The protocol, per shape:
// 1. cuBLAS's fastest way (cublas_ways.cuh), each way timed as bench/cublas_gemm.cu times it.
// 2. A warm-up of WARM seconds (default 1) of kt and that way alternating.  A long tensor-core
//    kernel starts at the boost clock and settles, under sustained load, at the lower clock of
//    the power limit (an H200 ran 4096 x 4096 x 14336 at 1,455-1,875 MHz after 0.3 s, against
//    1,980 MHz before: bench/RESULTS.md); a prefill step keeps the GPU under that load, so both
//    are timed there.
// 3. 30 rounds of 10 launches of kt, then 10 of cuBLAS; each launch between its own pair of
//    events, on the next of enough argument sets to exceed the L2 several times, after kt's own
//    cold-L2 flush outside the events (generator/worker_time.c: a write of as many bytes as the
//    launch writes, at most an L2, then a normal-priority read of the rest of an L2), so that
//    neither kernel finds any of its data in the L2, whatever cache policy the other used.
//    The times are the medians of the 300 launches of each; a spread is half the distance
//    between their 10th and 90th percentiles.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <type_traits>
#include <vector>

#include "cublas_ways.cuh"
#include "kt_gemm_sm90.h"

// The element type the launcher was generated for.
template <typename F> struct launcher_type;
template <typename T> struct launcher_type<cudaError_t (*)(T *, const T *, const T *, int, int, int, cudaStream_t)> {
	typedef T type;
};
typedef launcher_type<decltype(&kt_gemm_sm90)>::type kt_elem;

// Reads n int4 at normal priority (the sum keeps the loads).
static __global__ void read_l2(const int4 *p, size_t n, int *sink)
{
	int s = 0;
	for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
		const int4 v = p[i];
		s += v.x ^ v.y ^ v.z ^ v.w;
	}
	if (s == 0x7fffffff)
		*sink = s;
}

struct flusher {
	char *scratch;
	size_t l2, write;
	int *sink;
	flusher(size_t out_bytes)
	{
		int dev, bytes;
		CK(cudaGetDevice(&dev));
		CK(cudaDeviceGetAttribute(&bytes, cudaDevAttrL2CacheSize, dev));
		l2 = (size_t)bytes;
		write = std::min(out_bytes, l2);
		CK(cudaMalloc(&scratch, l2));
		CK(cudaMalloc(&sink, sizeof *sink));
	}
	~flusher()
	{
		cudaFree(scratch);
		cudaFree(sink);
	}
	void operator()() const
	{
		CK(cudaMemsetAsync(scratch, 0, write));
		if (l2 > write)
			read_l2<<<528, 256>>>(reinterpret_cast<const int4 *>(scratch + write), (l2 - write) / 16, sink);
	}
};

static double pct(std::vector<double> t, int p)
{
	std::sort(t.begin(), t.end());
	return t[std::min(t.size() - 1, t.size() * p / 100)];
}

static float max_abs(const std::vector<float> &v)
{
	float m = 0;
	for (float x : v)
		m = std::max(m, std::fabs(x));
	return m;
}

static std::vector<float> to_float(const unsigned short *dev, size_t n, bool bf16)
{
	std::vector<unsigned short> h(n);
	CK(cudaMemcpy(h.data(), dev, n * 2, cudaMemcpyDeviceToHost));
	std::vector<float> f(n);
	for (size_t i = 0; i < n; i++) {
		if (bf16) {
			unsigned u = (unsigned)h[i] << 16;
			memcpy(&f[i], &u, 4);
		} else {
			__half_raw r;
			r.x = h[i];
			f[i] = __half2float(__half(r));
		}
	}
	return f;
}

int main(int argc, char **argv)
{
	bool bf16 = false;
	double warm_s = 1.0;
	std::vector<long long> dims;
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--type") && i + 1 < argc)
			bf16 = !strcmp(argv[++i], "bfloat16");
		else if (!strcmp(argv[i], "--warm") && i + 1 < argc)
			warm_s = atof(argv[++i]);
		else
			dims.push_back(atoll(argv[i]));
	}
	if (dims.empty() || dims.size() % 3) {
		fprintf(stderr, "usage: gemm_side [--type half|bfloat16] [--warm SECONDS] M N K [M N K ...]\n");
		return 1;
	}
	if (bf16 != std::is_same<kt_elem, __nv_bfloat16>::value) {
		fprintf(stderr, "gemm_side: --type %s, but the launcher it was built with is for the other type\n",
			bf16 ? "bfloat16" : "half");
		return 1;
	}
	for (size_t s = 0; s < dims.size(); s += 3) {
		const long long M = dims[s], N = dims[s + 1], K = dims[s + 2];
		const gemm_sets sets(M, N, K, bf16, 2);
		const int copies = sets.copies;
		const std::vector<unsigned short *> &A = sets.A, &B = sets.B, &C = sets.C;
		auto kt = [&](int c) {
			cudaError_t e = kt_gemm_sm90(reinterpret_cast<kt_elem *>(C[c]), reinterpret_cast<const kt_elem *>(A[c]),
						     reinterpret_cast<const kt_elem *>(B[c]), (int)M, (int)N, (int)K, 0);
			if (e != cudaSuccess) {
				fprintf(stderr, "gemm_side: kt_gemm_sm90 at %lld x %lld x %lld: %s\n", M, N, K, cudaGetErrorString(e));
				exit(2);
			}
		};
		cublas_ways cw(M, N, K, bf16, A, B, C);
		const flusher flush((size_t)(M * N * 2));

		// 1. cuBLAS's fastest way.
		const int reps = 100;
		std::vector<cudaEvent_t> ev(2 * 300 * 2);
		for (auto &e : ev)
			CK(cudaEventCreate(&e));
		size_t best_way = 0;
		double best = 1e30;
		for (size_t w = 0; w < cw.ways.size(); w++) {
			const double med = pct(time_way(cw.ways[w].second, copies, reps, ev), 50);
			if (med < best)
				best = med, best_way = w;
		}
		auto &cub = cw.ways[best_way].second;

		// Both results at set 0, compared.
		kt(0);
		CK(cudaDeviceSynchronize());
		const std::vector<float> ck = to_float(C[0], (size_t)(M * N), bf16);
		cub(0);
		CK(cudaDeviceSynchronize());
		const std::vector<float> cc = to_float(C[0], (size_t)(M * N), bf16);
		float diff = 0;
		for (size_t i = 0; i < ck.size(); i++)
			diff = std::max(diff, std::fabs(ck[i] - cc[i]));
		const float rel = diff / std::max(max_abs(cc), 1e-30f);

		// 2. The warm-up, both alternating.
		int c = 0;
		const auto t0 = std::chrono::steady_clock::now();
		while (std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() < warm_s) {
			for (int i = 0; i < 16; i++) {
				flush();
				kt(c = (c + 1) % copies);
				flush();
				cub(c = (c + 1) % copies);
			}
			CK(cudaDeviceSynchronize());
		}

		// 3. Rounds of 10 and 10.
		const int rounds = 30, each = 10;
		bench_spin<<<1, 1>>>(200000);
		for (int r = 0; r < rounds; r++)
			for (int who = 0; who < 2; who++)
				for (int i = 0; i < each; i++) {
					const size_t k = (size_t)(who * rounds + r) * each + i;
					flush();
					c = (c + 1) % copies;
					CK(cudaEventRecord(ev[2 * k]));
					if (who == 0)
						kt(c);
					else
						cub(c);
					CK(cudaEventRecord(ev[2 * k + 1]));
				}
		CK(cudaDeviceSynchronize());
		std::vector<double> t[2];
		for (int who = 0; who < 2; who++)
			for (int k = 0; k < rounds * each; k++) {
				float ms;
				const size_t e = (size_t)who * rounds * each + k;
				CK(cudaEventElapsedTime(&ms, ev[2 * e], ev[2 * e + 1]));
				t[who].push_back(ms * 1e3);
			}
		const double kt_us = pct(t[0], 50), cub_us = pct(t[1], 50);
		printf("side %lld %lld %lld %.2f %.2f %.1f %s %.2f %.2f %.2g\n", M, N, K, kt_us, cub_us, 100 * cub_us / kt_us,
		       cw.ways[best_way].first.c_str(), (pct(t[0], 90) - pct(t[0], 10)) / 2, (pct(t[1], 90) - pct(t[1], 10)) / 2,
		       rel);
		fflush(stdout);
		for (auto &e : ev)
			CK(cudaEventDestroy(e));
	}
	return 0;
}
