// caller.cpp - the generated header seen from C++: the launcher takes the C++ element types.
#include <cstdio>

#include "kt_mini.h"
#include "kt_mini_f32.h"

int main()
{
	__half *out = nullptr;
	const __half *in = nullptr;
	float *fout = nullptr;
	const float *fin = nullptr;
	// hidden = 7 fits no configuration: refused, GPU or not.
	cudaError_t a = kt_mini(out, in, in, 2, 7, 1e-6f, 0);
	cudaError_t b = kt_mini_f32(fout, fin, fin, 2, 7, 1e-6f, cudaStream_t{});
	std::printf("C++ caller: %d %d\n", static_cast<int>(a), static_cast<int>(b));
	return a == cudaErrorInvalidValue && b == cudaErrorInvalidValue ? 0 : 1;
}
