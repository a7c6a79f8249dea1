/* kt_ops.h: the ops as a C API, for ctypes or any C caller (libkt_ops_c.so, the build without
 * Torch).  Tensors are device pointers to contiguous bfloat16 (2 bytes each, row-major); stream is
 * a cudaStream_t (NULL: the legacy default stream).  Each call launches the kernel configuration
 * kt chose for the shape nearest the given one and returns a cudaError_t: 0 on success; see
 * kt_ops_error_string(). */
#ifndef KT_OPS_H
#define KT_OPS_H

#ifdef __cplusplus
extern "C" {
#endif

/* out[r, :] = x[r, :] / sqrt(mean(x[r, :]^2) + eps) * w; out and x rows x hidden, w hidden. */
int kt_ops_rmsnorm(void *out, const void *x, const void *w, int rows, int hidden, float eps, void *stream);

/* out[t, i] = silu(x[t, i]) * x[t, d + i]; x tokens x 2d, out tokens x d. */
int kt_ops_silu_and_mul(void *out, const void *x, int tokens, int d, void *stream);

/* The CUDA runtime's message for a code that the functions above returned. */
const char *kt_ops_error_string(int code);

#ifdef __cplusplus
}
#endif

#endif
