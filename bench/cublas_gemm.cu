// cublas_gemm.cu - cuBLAS's time for C = A * B (row-major, fp16 or bf16 in and out, fp32
// accumulation), the yardstick of kt's gemm templates in bench/roofline.sh and bench/gemm.sh.
//
//   cublas_gemm [--type half|bfloat16] M N K [M N K ...]
// prints one line per shape:
//   cublas M N K median_us spread_us tflops via
// the fastest of cublasGemmEx (via "gemmex") and the algorithms cuBLASLt's heuristic proposes
// for the shape with a 32 MiB workspace, up to 8 of them (via "lt1" for its first choice, "lt2"
// for its second, ...): the best cuBLAS offers at the shape, the fair peer of a tuned kernel.
// Inputs are uniform in [-1, 1) (never zeros), rotated among enough copies to exceed the L2;
// 20 warm-up calls, then 100 timed calls, each between its own pair of CUDA events; the spread
// is half the distance between the 10th and the 90th percentile.
// Build: nvcc -O2 -arch=sm_90 -o cublas_gemm cublas_gemm.cu -lcublasLt -lcublas
#include <cublasLt.h>
#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "bench.cuh"

#define CB(call)                                                                                   \
	do {                                                                                       \
		cublasStatus_t s_ = (call);                                                        \
		if (s_ != CUBLAS_STATUS_SUCCESS) {                                                 \
			fprintf(stderr, "%s:%d: cuBLAS status %d\n", __FILE__, __LINE__, (int)s_); \
			exit(2);                                                                   \
		}                                                                                  \
	} while (0)

__global__ void fill_uniform(unsigned short *p, size_t n, unsigned seed, bool bf16)
{
	for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
		unsigned h = (unsigned)i * 2654435761u ^ seed;
		h ^= h >> 15;
		h *= 2246822519u;
		h ^= h >> 13;
		const float v = (h & 0xffffff) / 8388608.0f - 1.0f;
		if (bf16) {
			__nv_bfloat16 b = __float2bfloat16_rn(v);
			p[i] = *reinterpret_cast<unsigned short *>(&b);
		} else {
			__half b = __float2half_rn(v);
			p[i] = *reinterpret_cast<unsigned short *>(&b);
		}
	}
}

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
	const cudaDataType_t dt = bf16 ? CUDA_R_16BF : CUDA_R_16F;
	cublasHandle_t h;
	CB(cublasCreate(&h));
	cublasLtHandle_t lt;
	CB(cublasLtCreate(&lt));
	const size_t wsbytes = 32u << 20;
	void *ws;
	CK(cudaMalloc(&ws, wsbytes));
	for (size_t s = 0; s < dims.size(); s += 3) {
		const long long M = dims[s], N = dims[s + 1], K = dims[s + 2];
		const size_t elems = (size_t)(M * K + K * N + M * N);
		const int copies = std::max(1, (int)std::ceil(240e6 / (2.0 * elems)));
		std::vector<unsigned short *> A(copies), B(copies), C(copies);
		for (int c = 0; c < copies; c++) {
			CK(cudaMalloc(&A[c], (size_t)M * K * 2));
			CK(cudaMalloc(&B[c], (size_t)K * N * 2));
			CK(cudaMalloc(&C[c], (size_t)M * N * 2));
			fill_uniform<<<1024, 256>>>(A[c], (size_t)M * K, 1u + c, bf16);
			fill_uniform<<<1024, 256>>>(B[c], (size_t)K * N, 1001u + c, bf16);
		}
		CK(cudaGetLastError());
		const float alpha = 1.f, beta = 0.f;
		/* row-major C = A B is column-major C^T = B^T A^T */
		std::vector<std::pair<std::string, std::function<void(int)>>> ways;
		ways.push_back({"gemmex", [&](int c) {
					CB(cublasGemmEx(h, CUBLAS_OP_N, CUBLAS_OP_N, (int)N, (int)M, (int)K, &alpha, B[c], dt, (int)N, A[c],
							dt, (int)K, &beta, C[c], dt, (int)N, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
				}});
		cublasLtMatmulDesc_t op;
		cublasLtMatrixLayout_t lb, la, lc;
		CB(cublasLtMatmulDescCreate(&op, CUBLAS_COMPUTE_32F, CUDA_R_32F));
		CB(cublasLtMatrixLayoutCreate(&lb, dt, N, K, N));
		CB(cublasLtMatrixLayoutCreate(&la, dt, K, M, K));
		CB(cublasLtMatrixLayoutCreate(&lc, dt, N, M, N));
		cublasLtMatmulPreference_t pref;
		CB(cublasLtMatmulPreferenceCreate(&pref));
		CB(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &wsbytes, sizeof wsbytes));
		cublasLtMatmulHeuristicResult_t heur[8];
		int nheur = 0;
		CB(cublasLtMatmulAlgoGetHeuristic(lt, op, lb, la, lc, lc, pref, 8, heur, &nheur));
		for (int a = 0; a < nheur; a++) {
			if (heur[a].state != CUBLAS_STATUS_SUCCESS)
				continue;
			ways.push_back({"lt" + std::to_string(a + 1), [&, a](int c) {
						CB(cublasLtMatmul(lt, op, &alpha, B[c], lb, A[c], la, &beta, C[c], lc, C[c], lc, &heur[a].algo,
								  ws, wsbytes, 0));
					}});
		}
		const int reps = 100;
		std::vector<cudaEvent_t> ev(2 * reps);
		for (auto &e : ev)
			CK(cudaEventCreate(&e));
		double best = 1e30, best_spread = 0;
		std::string via;
		for (auto &way : ways) {
			for (int i = 0; i < 20; i++)
				way.second(i % copies);
			CK(cudaDeviceSynchronize());
			for (int i = 0; i < reps; i++) {
				CK(cudaEventRecord(ev[2 * i]));
				way.second(i % copies);
				CK(cudaEventRecord(ev[2 * i + 1]));
			}
			CK(cudaDeviceSynchronize());
			std::vector<double> t(reps);
			for (int i = 0; i < reps; i++) {
				float ms;
				CK(cudaEventElapsedTime(&ms, ev[2 * i], ev[2 * i + 1]));
				t[i] = ms * 1e3;
			}
			std::sort(t.begin(), t.end());
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
		CB(cublasLtMatmulPreferenceDestroy(pref));
		CB(cublasLtMatrixLayoutDestroy(lb));
		CB(cublasLtMatrixLayoutDestroy(la));
		CB(cublasLtMatrixLayoutDestroy(lc));
		CB(cublasLtMatmulDescDestroy(op));
		for (int c = 0; c < copies; c++) {
			CK(cudaFree(A[c]));
			CK(cudaFree(B[c]));
			CK(cudaFree(C[c]));
		}
	}
	CK(cudaFree(ws));
	CB(cublasLtDestroy(lt));
	CB(cublasDestroy(h));
	return 0;
}
