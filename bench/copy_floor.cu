// copy_floor.cu - what a plain copy reaches, timed the way kt times a kernel, at the byte counts
// of the library's memory-bound shapes: the best any kernel moving those bytes can hope for.
//
//   copy_floor [--bw GBS] [--best] [MB:READS ...]
// prints one table row per size and copy (--best: only one line per size, the fastest copy's
// median per launch in microseconds, for scripts such as bench/roofline.sh): MB = bytes read plus written (decimal megabytes),
// READS = how many input streams feed each output stream (1: a copy, 2: two inputs per output,
// like gelu_and_mul or merge_attn_states; 0: a read with nothing written, like a decode gemm's
// weight, whose output is a few rows).  Without arguments, the shapes of templates/shapes.txt
// whose floor is 20 us or more.  The floor is the bytes over GBS (default 4300, the copy
// bandwidth of the issue; kt measures its own, bench/roofline.sh prints it).
//
// Copies: `memcpy` (cudaMemcpyAsync, one input only), `flat` (one 16-byte vector per thread, 256
// threads, one block per 4 KB of output), `persist` (one block of 512 threads per 512 / 2048 of
// an SM, a grid-stride loop of four 16-byte vectors per thread, all loads before the stores).
// Two times for each: `per launch`, the median of 200 launches, each between its own pair of
// CUDA events, queued behind a spinning kernel so that they run back to back, rotating through
// input sets that together exceed the L2 three times (the timing of generator/worker.c); and
// `back to back`, the median of 200 samples of 20 launches between one pair of events, divided
// by 20 (how a stream or a CUDA graph of such kernels runs).  An empty kernel shows the cost of
// a launch that moves nothing.
// Build: nvcc -O2 -arch=sm_90 -o copy_floor copy_floor.cu
#include <algorithm>
#include <cstring>
#include <vector>

#include "bench.cuh"

__global__ void empty() {}

// Reads without writing: a store only where the data hold the improbable sentinel, so that the
// loads stay.
__device__ __forceinline__ bool sentinel(uint4 x) { return x.x == 0x9e3779b9u && x.y == 0x7f4a7c15u && x.z == x.w; }

__global__ void flat0(uint4 *out, const uint4 *a, size_t n)
{
	const size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n) {
		const uint4 x = __ldg(a + i);
		if (sentinel(x))
			out[i] = x;
	}
}

__global__ void flat1(uint4 *out, const uint4 *a, size_t n)
{
	const size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n)
		out[i] = __ldg(a + i);
}

__global__ void flat2(uint4 *out, const uint4 *a, const uint4 *b, size_t n)
{
	const size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n) {
		const uint4 x = __ldg(a + i), y = __ldg(b + i);
		out[i] = make_uint4(x.x ^ y.x, x.y ^ y.y, x.z ^ y.z, x.w ^ y.w);
	}
}

enum { U = 4 };

template <int R> __global__ void __launch_bounds__(512) persist(uint4 *out, const uint4 *a, const uint4 *b, size_t n)
{
	const size_t stride = (size_t)gridDim.x * blockDim.x;
	for (size_t i0 = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i0 < n; i0 += U * stride) {
		uint4 x[U], y[U];
#pragma unroll
		for (int u = 0; u < U; u++) {
			const size_t i = i0 + u * stride;
			if (i < n) {
				x[u] = __ldg(a + i);
				if (R == 2)
					y[u] = __ldg(b + i);
			}
		}
#pragma unroll
		for (int u = 0; u < U; u++) {
			const size_t i = i0 + u * stride;
			if (i < n && (R > 0 || sentinel(x[u])))
				out[i] = R == 2 ? make_uint4(x[u].x ^ y[u].x, x[u].y ^ y[u].y, x[u].z ^ y[u].z, x[u].w ^ y[u].w) : x[u];
		}
	}
}

struct Set {
	uint4 *a, *b, *out;
};

enum { REPS = 200 };

// Median and spread (half the 10th-90th percentile distance) of REPS timed samples of batch
// launches of go(set), divided by batch.
template <typename F> static void timeit(F go, int nsets, int batch, double *med, double *spread)
{
	static cudaEvent_t ev[2 * REPS];
	static bool made;
	if (!made) {
		for (int i = 0; i < 2 * REPS; i++)
			CK(cudaEventCreate(&ev[i]));
		made = true;
	}
	for (int i = 0; i < 3 * nsets; i++)
		go(i % nsets);
	CK(cudaDeviceSynchronize());
	bench_spin<<<1, 1>>>(20ull * 1000 * 1000); /* 20 ms: the host queues everything behind it */
	for (int i = 0, k = 0; i < REPS; i++) {
		CK(cudaEventRecord(ev[2 * i]));
		for (int b = 0; b < batch; b++)
			go(k++ % nsets);
		CK(cudaEventRecord(ev[2 * i + 1]));
	}
	CK(cudaGetLastError());
	CK(cudaDeviceSynchronize());
	std::vector<double> t(REPS);
	for (int i = 0; i < REPS; i++) {
		float ms;
		CK(cudaEventElapsedTime(&ms, ev[2 * i], ev[2 * i + 1]));
		t[i] = ms * 1e3 / batch;
	}
	std::sort(t.begin(), t.end());
	*med = t[REPS / 2];
	*spread = (t[REPS * 9 / 10] - t[REPS / 10]) / 2;
}

int main(int argc, char **argv)
{
	double gbs = 4300;
	bool best = false;
	std::vector<std::pair<double, int>> sizes;
	for (int i = 1; i < argc; i++) {
		double mb;
		int r;
		if (!strcmp(argv[i], "--bw") && i + 1 < argc)
			gbs = atof(argv[++i]);
		else if (!strcmp(argv[i], "--best"))
			best = true;
		else if (sscanf(argv[i], "%lf:%d", &mb, &r) == 2 && mb > 0 && r >= 0 && r <= 2)
			sizes.push_back({mb, r});
		else {
			fprintf(stderr, "copy_floor: bad argument '%s' (expected --bw GBS, --best or MB:READS, READS 0, 1 or 2)\n", argv[i]);
			return 1;
		}
	}
	if (sizes.empty()) /* merge 4096, gelu/silu 2048 x 11008, transpose, softmax 4096 x 32768, merge 16384 */
		sizes = {{100.7, 2}, {135.3, 2}, {268.4, 1}, {536.9, 1}, {402.7, 2}};
	cudaDeviceProp p;
	CK(cudaGetDeviceProperties(&p, 0));
	int per_sm = 0;
	CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, persist<2>, 512, 0));
	if (!best)
		printf("%s, %d SMs, L2 %d MB, floor at %.0f GB/s\n\n", p.name, p.multiProcessorCount, p.l2CacheSize >> 20, gbs);
	double fastest = 0;
	// One row: go timed per launch and back to back (--best: per launch only, the fastest kept).
	auto row = [&](const char *size, int reads, const char *name, double floor_us, auto go, int nsets) {
		double m1, s1, m20, s20;
		timeit(go, nsets, 1, &m1, &s1);
		if (best) {
			fastest = fastest == 0 || m1 < fastest ? m1 : fastest;
			return;
		}
		timeit(go, nsets, 20, &m20, &s20);
		printf("| %s | %d | %s | %.2f | %.2f (%.2f) | %.1f | %.2f (%.2f) | %.1f |\n", size, reads, name, floor_us, m1, s1,
		       100 * floor_us / m1, m20, s20, 100 * floor_us / m20);
		fflush(stdout);
	};
	if (!best) {
		printf("| size | reads | copy | floor us | per launch us (spread) | %% of floor | back to back us (spread) | %% of floor |\n"
	       "|---|---:|---|---:|---:|---:|---:|---:|\n");
		row("0", 0, "empty kernel", 0.0, [](int) { empty<<<1, 32>>>(); }, 1);
	}
	for (const auto &sz : sizes) {
		const double mb = sz.first;
		const int reads = sz.second;
		const double bytes = mb * 1e6;
		const size_t n = (size_t)(bytes / (16.0 * (reads + 1))); /* 16-byte vectors per stream */
		const double moved = 16.0 * (double)n * (reads + 1);
		const double floor_us = moved / (gbs * 1e9) * 1e6;
		const int nsets = std::max(2, (int)(3.0 * p.l2CacheSize / moved) + 1);
		std::vector<Set> sets(nsets);
		for (auto &s : sets) {
			CK(cudaMalloc(&s.a, n * 16));
			CK(cudaMalloc(&s.b, reads == 2 ? n * 16 : 16));
			CK(cudaMalloc(&s.out, n * 16));
			CK(cudaMemset(s.a, 0x5a, n * 16));
			CK(cudaMemset(s.b, 0x3c, reads == 2 ? n * 16 : 16));
		}
		char size[32];
		snprintf(size, sizeof size, "%.1f MB", moved / 1e6);
		if (reads == 1)
			row(size, reads, "memcpy", floor_us, [&](int s) { CK(cudaMemcpyAsync(sets[s].out, sets[s].a, n * 16, cudaMemcpyDeviceToDevice)); }, nsets);
		const unsigned blocks = (unsigned)((n + 255) / 256);
		row(size, reads, "flat", floor_us, [&](int s) {
			if (reads == 0)
				flat0<<<blocks, 256>>>(sets[s].out, sets[s].a, n);
			else if (reads == 1)
				flat1<<<blocks, 256>>>(sets[s].out, sets[s].a, n);
			else
				flat2<<<blocks, 256>>>(sets[s].out, sets[s].a, sets[s].b, n);
		}, nsets);
		const unsigned pb = (unsigned)(p.multiProcessorCount * per_sm);
		row(size, reads, "persist", floor_us, [&](int s) {
			if (reads == 0)
				persist<0><<<pb, 512>>>(sets[s].out, sets[s].a, sets[s].b, n);
			else if (reads == 1)
				persist<1><<<pb, 512>>>(sets[s].out, sets[s].a, sets[s].b, n);
			else
				persist<2><<<pb, 512>>>(sets[s].out, sets[s].a, sets[s].b, n);
		}, nsets);
		if (best) {
			printf("%.2f\n", fastest);
			fastest = 0;
		}
		for (auto &s : sets) {
			CK(cudaFree(s.a));
			CK(cudaFree(s.b));
			CK(cudaFree(s.out));
		}
	}
	return 0;
}
