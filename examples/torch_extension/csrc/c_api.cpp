// The C API of kt_ops.h over kt's generated launchers (the build without Torch).
#include "kt_ops.h"

#include "kt_rmsnorm.h"
#include "kt_silu_and_mul.h"

extern "C" int kt_ops_rmsnorm(void *out, const void *x, const void *w, int rows, int hidden, float eps,
			      void *stream)
{
	return kt_rmsnorm(static_cast<__nv_bfloat16 *>(out), static_cast<const __nv_bfloat16 *>(x),
			  static_cast<const __nv_bfloat16 *>(w), rows, hidden, eps, static_cast<cudaStream_t>(stream));
}

extern "C" int kt_ops_silu_and_mul(void *out, const void *x, int tokens, int d, void *stream)
{
	return kt_silu_and_mul(static_cast<__nv_bfloat16 *>(out), static_cast<const __nv_bfloat16 *>(x), tokens,
			       d, static_cast<cudaStream_t>(stream));
}

extern "C" const char *kt_ops_error_string(int code)
{
	return cudaGetErrorString(static_cast<cudaError_t>(code));
}
