// cublas_ways.cuh - the ways cuBLAS offers to compute a row-major C = A * B (fp16 or bf16 in and
// out, fp32 accumulation), for cublas_gemm.cu and gemm_side.cu: cublasGemmEx ("gemmex") and the
// algorithms cuBLASLt's heuristic proposes for the shape with a 32 MiB workspace, up to 8 of
// them ("lt1" for its first choice, "lt2" for its second, ...).  Each way is called with the
// index of the argument set it multiplies.  Also fill_uniform, the inputs both benchmarks use:
// uniform in [-1, 1), never zeros.
#ifndef KT_CUBLAS_WAYS_CUH
#define KT_CUBLAS_WAYS_CUH

#include <cublasLt.h>
#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>

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
