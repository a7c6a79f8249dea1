// cublas_gemm.cu - cuBLAS's time for C = A * B (row-major, fp16 or bf16 in and out, fp32
// accumulation), the yardstick of kt's gemm templates in bench/roofline.sh and bench/gemm.sh.
//
//   cublas_gemm [--type half|bfloat16] M N K [M N K ...]
// prints one line per shape:
//   cublas M N K median_us spread_us tflops via
// the fastest of cublasGemmEx (via "gemmex") and the algorithms cuBLASLt's heuristic proposes
// for the shape (cublas_ways.cuh): the best cuBLAS offers at the shape, the fair peer of a tuned kernel.
// Inputs are uniform in [-1, 1) (never zeros), rotated among enough copies to exceed the L2;
// 20 warm-up calls, then 100 timed calls, each between its own pair of CUDA events; the spread
// is half the distance between the 10th and the 90th percentile.
// Build: nvcc -O2 -arch=sm_90 -o cublas_gemm cublas_gemm.cu -lcublasLt -lcublas
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "cublas_ways.cuh"

int main(int argc, char **argv)
{
	bool bf16 = false;
	std::vector<long long> dims;
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--type") && i + 1 < argc)
			bf16 = !strcmp(argv[++i], "bfloat16");
		else
			dims.push_back(atoll(argv[i]));
	}
	if (dims.empty() || dims.size() % 3) {
		fprintf(stderr, "usage: cublas_gemm [--type half|bfloat16] M N K [M N K ...]\n");
		return 1;
	}
	for (size_t s = 0; s < dims.size(); s += 3) {
		const long long M = dims[s], N = dims[s + 1], K = dims[s + 2];
		const gemm_sets sets(M, N, K, bf16, 1);
		cublas_ways cw(M, N, K, bf16, sets.A, sets.B, sets.C);
		std::vector<cublas_ways::way> &ways = cw.ways;
		const int reps = 100;
		std::vector<cudaEvent_t> ev(2 * reps);
		for (auto &e : ev)
			CK(cudaEventCreate(&e));
		double best = 1e30, best_spread = 0;
		std::string via;
		for (auto &way : ways) {
			const std::vector<double> t = time_way(way.second, sets.copies, reps, ev);
			if (t[reps / 2] < best) {
				best = t[reps / 2];
				best_spread = (t[reps * 9 / 10] - t[reps / 10]) / 2;
				via = way.first;
			}
		}
		printf("cublas %lld %lld %lld %.2f %.2f %.1f %s\n", M, N, K, best, best_spread, 2.0 * M * N * K / (best * 1e6),
		       via.c_str());
		for (auto &e : ev)
			CK(cudaEventDestroy(e));
	}
	return 0;
}
