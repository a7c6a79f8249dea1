// bench.cuh - what the CUDA benchmarks of bench/ share: CK, a CUDA call that must succeed, and
// bench_spin, a kernel that holds the stream for ns nanoseconds so that the timed launches the
// host queues meanwhile run back to back (generator/worker.c times kernels the same way).
#ifndef KT_BENCH_CUH
#define KT_BENCH_CUH

#include <cuda_runtime.h>

#include <cstdio>
#include <cstdlib>

#define CK(call)                                                                                   \
	do {                                                                                       \
		cudaError_t e_ = (call);                                                           \
		if (e_ != cudaSuccess) {                                                           \
			fprintf(stderr, "%s:%d: %s\n", __FILE__, __LINE__, cudaGetErrorString(e_)); \
			exit(2);                                                                   \
		}                                                                                  \
	} while (0)

static __global__ void bench_spin(unsigned long long ns)
{
	unsigned long long t0, t;
	asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
	do
		asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
	while (t - t0 < ns);
}

#endif
