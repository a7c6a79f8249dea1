/* gpu_backends.c - the GPU backends of the product kt: the CUDA driver only (see gpu.h).  Test
 * builds link gpu_backends_test.c instead. */
#include "gpu.h"

static const kt_gpu_ops *(*const backends[])(void) = {kt_gpu_cuda};

const kt_gpu_ops *kt_gpu_backend_at(size_t i) { return i < sizeof backends / sizeof backends[0] ? backends[i]() : NULL; }
