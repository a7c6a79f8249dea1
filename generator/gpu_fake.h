/* gpu_fake.h - the fake GPU (gpu_fake.c): a deterministic GPU on the host, for tests of the worker
 * and the tuning loop without a GPU.  Linked into test builds only: the unit tests and kt-fake
 * have it through the tests' backend table (gpu_backends_test.c); the product kt does not. */
#ifndef KT_GPU_FAKE_H
#define KT_GPU_FAKE_H

#include "gpu.h"

const kt_gpu_ops *kt_gpu_fake(void);

#endif
