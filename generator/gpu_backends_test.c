/* gpu_backends_test.c - the GPU backends of test builds (the unit tests and kt-fake): the CUDA
 * driver and the fake GPU (gpu_fake.h).  The product kt links gpu_backends.c instead. */
#include "gpu.h"
#include "gpu_fake.h"

static const kt_gpu_ops *(*const backends[])(void) = {kt_gpu_cuda, kt_gpu_fake};

const kt_gpu_ops *kt_gpu_backend_at(size_t i) { return i < sizeof backends / sizeof backends[0] ? backends[i]() : NULL; }
