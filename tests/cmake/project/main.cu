// The fixture application: runs the tuned kernel `scale` (out = 2 * x) from CUDA and from C++
// and checks the results.
#include <cmath>
#include <cstdio>
#include <vector>

#include <cuda_runtime.h>

#include "kt_scale.h"

cudaError_t scale_from_cxx(float *out, const float *x, int n); // scale_from_cxx.cpp

int main()
{
	int count = 0;
	cudaError_t e = cudaGetDeviceCount(&count);
	if (e != cudaSuccess || count == 0) {
		std::printf("fixture_app: no CUDA GPU (%s)\n", cudaGetErrorString(e));
		return 0;
	}
	const int n = 3000; // not a tuned shape: the launcher picks the nearest
	std::vector<float> x(n), out(n);
	for (int i = 0; i < n; i++)
		x[i] = 0.5f * (float)(i % 97) - 7.0f;
	float *dx = nullptr, *dout = nullptr;
	cudaMalloc(&dx, n * sizeof(float));
	cudaMalloc(&dout, n * sizeof(float));
	cudaMemcpy(dx, x.data(), n * sizeof(float), cudaMemcpyHostToDevice);
	e = kt_scale(dout, dx, n, 0);
	if (e == cudaSuccess)
		e = cudaMemset(dout, 0, n * sizeof(float));
	if (e == cudaSuccess)
		e = scale_from_cxx(dout, dx, n);
	if (e == cudaSuccess)
		e = cudaMemcpy(out.data(), dout, n * sizeof(float), cudaMemcpyDeviceToHost);
	cudaFree(dx);
	cudaFree(dout);
	if (e != cudaSuccess) {
		std::printf("fixture_app: CUDA error: %s\n", cudaGetErrorString(e));
		return 1;
	}
	for (int i = 0; i < n; i++) {
		if (std::fabs(out[i] - 2.0f * x[i]) > 1e-6f) {
			std::printf("fixture_app: wrong result at %d: %g, expected %g\n", i, out[i], 2.0f * x[i]);
			return 1;
		}
	}
	std::printf("fixture_app: ok\n");
	return 0;
}
