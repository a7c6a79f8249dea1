// cublas_ways.cuh - what cublas_gemm.cu and gemm_side.cu share: the argument sets of a row-major
// C = A * B (fp16 or bf16 in and out, fp32 accumulation), rotated among enough copies to exceed
// the L2, their inputs uniform in [-1, 1) (never zeros); the ways cuBLAS offers to compute it,
// cublasGemmEx ("gemmex") and the algorithms cuBLASLt's heuristic proposes for the shape with a
// 32 MiB workspace, up to 8 of them ("lt1" for its first choice, "lt2" for its second, ...),
// each called with the index of the argument set it multiplies; and how one way is timed.
#ifndef KT_CUBLAS_WAYS_CUH
#define KT_CUBLAS_WAYS_CUH

#include <cublasLt.h>
#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <string>
#include <utility>
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

static __global__ void fill_uniform(unsigned short *p, size_t n, unsigned seed, bool bf16)
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

// The argument sets of an M x N x K product: at least min_copies, and enough to hold 240 MB.
struct gemm_sets {
	std::vector<unsigned short *> A, B, C;
	int copies;
	gemm_sets(long long M, long long N, long long K, bool bf16, int min_copies)
	{
		const size_t elems = (size_t)(M * K + K * N + M * N);
		copies = std::max(min_copies, (int)std::ceil(240e6 / (2.0 * elems)));
		A.resize(copies), B.resize(copies), C.resize(copies);
		for (int c = 0; c < copies; c++) {
			CK(cudaMalloc(&A[c], (size_t)(M * K) * 2));
			CK(cudaMalloc(&B[c], (size_t)(K * N) * 2));
			CK(cudaMalloc(&C[c], (size_t)(M * N) * 2));
			fill_uniform<<<1024, 256>>>(A[c], (size_t)(M * K), 1u + c, bf16);
			fill_uniform<<<1024, 256>>>(B[c], (size_t)(K * N), 1001u + c, bf16);
		}
		CK(cudaGetLastError());
	}
	~gemm_sets()
	{
		for (int c = 0; c < copies; c++) {
			cudaFree(A[c]);
			cudaFree(B[c]);
			cudaFree(C[c]);
		}
	}
	gemm_sets(const gemm_sets &) = delete;
	gemm_sets &operator=(const gemm_sets &) = delete;
};

// Times a call of a way on each set in turn: 20 warm-up calls, then reps timed ones, each between
// its own pair of events (ev holds at least 2 * reps).  Their times in microseconds, sorted.
static std::vector<double> time_way(const std::function<void(int)> &call, int copies, int reps,
				    const std::vector<cudaEvent_t> &ev)
{
	for (int i = 0; i < 20; i++)
		call(i % copies);
	CK(cudaDeviceSynchronize());
	for (int i = 0; i < reps; i++) {
		CK(cudaEventRecord(ev[2 * i]));
		call(i % copies);
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
	return t;
}

// The handles live as long as the program; the ways of one shape as long as its object.
struct cublas_ways {
	typedef std::pair<std::string, std::function<void(int)>> way;
	std::vector<way> ways;

	cublas_ways(long long M, long long N, long long K, bool bf16, const std::vector<unsigned short *> &A,
		    const std::vector<unsigned short *> &B, const std::vector<unsigned short *> &C)
	{
		static cublasHandle_t h;
		static cublasLtHandle_t lt;
		static void *ws;
		if (!h) {
			CB(cublasCreate(&h));
			CB(cublasLtCreate(&lt));
			CK(cudaMalloc(&ws, wsbytes));
		}
		const cudaDataType_t dt = bf16 ? CUDA_R_16BF : CUDA_R_16F;
		/* row-major C = A B is column-major C^T = B^T A^T */
		ways.push_back({"gemmex", [=, &A, &B, &C](int c) {
					CB(cublasGemmEx(h, CUBLAS_OP_N, CUBLAS_OP_N, (int)N, (int)M, (int)K, &one, B[c], dt, (int)N, A[c], dt,
							(int)K, &zero, C[c], dt, (int)N, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
				}});
		CB(cublasLtMatmulDescCreate(&op, CUBLAS_COMPUTE_32F, CUDA_R_32F));
		CB(cublasLtMatrixLayoutCreate(&lb, dt, N, K, N));
		CB(cublasLtMatrixLayoutCreate(&la, dt, K, M, K));
		CB(cublasLtMatrixLayoutCreate(&lc, dt, N, M, N));
		CB(cublasLtMatmulPreferenceCreate(&pref));
		CB(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &wsbytes, sizeof wsbytes));
		int nheur = 0;
		CB(cublasLtMatmulAlgoGetHeuristic(lt, op, lb, la, lc, lc, pref, 8, heur, &nheur));
		for (int a = 0; a < nheur; a++)
			if (heur[a].state == CUBLAS_STATUS_SUCCESS)
				ways.push_back({"lt" + std::to_string(a + 1), [=, &A, &B, &C](int c) {
							CB(cublasLtMatmul(lt, op, &one, B[c], lb, A[c], la, &zero, C[c], lc, C[c], lc, &heur[a].algo,
									  ws, wsbytes, 0));
						}});
	}
	~cublas_ways()
	{
		cublasLtMatmulPreferenceDestroy(pref);
		cublasLtMatrixLayoutDestroy(lb);
		cublasLtMatrixLayoutDestroy(la);
		cublasLtMatrixLayoutDestroy(lc);
		cublasLtMatmulDescDestroy(op);
	}
	cublas_ways(const cublas_ways &) = delete;
	cublas_ways &operator=(const cublas_ways &) = delete;

  private:
	static constexpr size_t wsbytes = 32u << 20;
	static constexpr float one = 1.f, zero = 0.f;
	cublasLtMatmulDesc_t op;
	cublasLtMatrixLayout_t lb, la, lc;
	cublasLtMatmulPreference_t pref;
	cublasLtMatmulHeuristicResult_t heur[8];
};

#endif
