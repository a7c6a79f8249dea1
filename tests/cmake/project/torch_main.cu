// The fixture application of the Torch case: says which table kt_rmsnorm takes on this machine's
// GPU, and runs it once on a tuned shape where there is a GPU.
#include <cstdio>

#include <cuda_runtime.h>

#include "kt_rmsnorm.h"

int main()
{
	int count = 0;
	if (cudaGetDeviceCount(&count) != cudaSuccess || count == 0) {
		std::printf("fixture_app: no CUDA GPU\n");
		return 0;
	}
	const int rows = 16, hidden = 4096;
	__nv_bfloat16 *x = nullptr, *w = nullptr, *out = nullptr;
	cudaMalloc(&x, rows * hidden * sizeof *x);
	cudaMalloc(&w, hidden * sizeof *w);
	cudaMalloc(&out, rows * hidden * sizeof *out);
	cudaMemset(x, 0, rows * hidden * sizeof *x);
	cudaMemset(w, 0, hidden * sizeof *w);
	cudaError_t e = kt_rmsnorm(out, x, w, rows, hidden, 1e-6f, 0);
	if (e == cudaSuccess)
		e = cudaDeviceSynchronize();
	const char *t = kt_rmsnorm_table(0);
	std::printf("fixture_app: %s (table: %s)\n", e == cudaSuccess ? "ok" : cudaGetErrorString(e), t ? t : "template defaults");
	return e == cudaSuccess ? 0 : 1;
}
