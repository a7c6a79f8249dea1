// stub_cudart.cpp - the four CUDA runtime calls a generated launcher makes to find its table, over
// devices described by KT_STUB_GPUS ("name|major|minor|SMs|memory clock kHz|bus bits;..."; a
// device whose name is "!" fails to be queried).  Linked instead of the CUDA runtime
// (nvcc -cudart none), so that the choice of table is tested without a GPU.
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include <cuda_runtime.h>

extern "C" int stub_device; // the current device, set by the test
int stub_device = 0;
static cudaError_t stub_last = cudaSuccess;

struct stub_gpu {
	char name[256];
	int major, minor, sms, clock_khz, bus_bits;
};

static bool stub_gpu_of(int dev, stub_gpu *g)
{
	const char *p = std::getenv("KT_STUB_GPUS");
	for (int i = 0; p && *p; i++) {
		const char *end = std::strchr(p, ';');
		std::size_t n = end ? static_cast<std::size_t>(end - p) : std::strlen(p);
		if (i == dev) {
			char line[512];
			std::snprintf(line, sizeof line, "%.*s", static_cast<int>(n), p);
			std::memset(g, 0, sizeof *g);
			char *bar = std::strchr(line, '|');
			if (bar)
				*bar = 0;
			std::snprintf(g->name, sizeof g->name, "%s", line);
			if (bar)
				std::sscanf(bar + 1, "%d|%d|%d|%d|%d", &g->major, &g->minor, &g->sms, &g->clock_khz, &g->bus_bits);
			return std::strcmp(g->name, "!") != 0;
		}
		p = end ? end + 1 : p + n;
	}
	return false;
}

extern "C" cudaError_t cudaGetDevice(int *dev)
{
	*dev = stub_device;
	return cudaSuccess;
}

extern "C" cudaError_t cudaGetDeviceProperties(cudaDeviceProp *prop, int dev)
{
	stub_gpu g;
	if (!stub_gpu_of(dev, &g))
		return stub_last = cudaErrorInvalidDevice;
	std::memset(prop, 0, sizeof *prop);
	std::snprintf(prop->name, sizeof prop->name, "%s", g.name);
	prop->major = g.major;
	prop->minor = g.minor;
	prop->multiProcessorCount = g.sms;
	return cudaSuccess;
}

extern "C" cudaError_t cudaDeviceGetAttribute(int *value, cudaDeviceAttr attr, int dev)
{
	stub_gpu g;
	if (!stub_gpu_of(dev, &g))
		return stub_last = cudaErrorInvalidDevice;
	*value = attr == cudaDevAttrMemoryClockRate ? g.clock_khz : attr == cudaDevAttrGlobalMemoryBusWidth ? g.bus_bits : 0;
	return cudaSuccess;
}

extern "C" cudaError_t cudaGetLastError(void)
{
	cudaError_t e = stub_last;
	stub_last = cudaSuccess;
	return e;
}
