// rmsnorm.cu - a plain RMSNorm kernel, written the obvious way, for `kt refactor` to turn into a
// template (see docs/agent.md):
//
//   kt refactor examples/plain_kernels/rmsnorm.cu --kernel rmsnorm \
//       --shape rows=4096,hidden=4096 -o rmsnorm.cu.tmpl
//
// out[r][i] = x[r][i] / sqrt(mean(x[r]^2) + eps) * w[i].  Launch: one block of 256 threads per
// row (grid rows, block 256).
#include <cuda_fp16.h>

extern "C" __global__ void rmsnorm(__half *out, const __half *x, const __half *w, int rows, int hidden, float eps)
{
	__shared__ float partial[256];
	const size_t row = blockIdx.x;
	float sum = 0.f;
	for (int i = threadIdx.x; i < hidden; i += blockDim.x) {
		const float v = __half2float(x[row * hidden + i]);
		sum += v * v;
	}
	partial[threadIdx.x] = sum;
	__syncthreads();
	for (int k = blockDim.x / 2; k > 0; k >>= 1) {
		if (threadIdx.x < k)
			partial[threadIdx.x] += partial[threadIdx.x + k];
		__syncthreads();
	}
	const float r = rsqrtf(partial[0] / hidden + eps);
	for (int i = threadIdx.x; i < hidden; i += blockDim.x)
		out[row * hidden + i] = __float2half(__half2float(x[row * hidden + i]) * r * __half2float(w[i]));
}
