// table_check.cpp - which GPU table the launcher takes on each device of stub_cudart.cpp, the
// variant it launches there, and the same choice asked without a device.
#include <cstdio>
#include <cstdlib>

#include "kt_multi.h"

extern "C" int stub_device;
extern "C" const char *kt_called;

int main(int argc, char **argv)
{
	int n = argc > 1 ? std::atoi(argv[1]) : 0;
	for (int d = 0; d < n; d++) {
		for (int twice = 0; twice < 2; twice++) { // the second call finds the device's table remembered
			stub_device = d;
			kt_called = "none";
			cudaError_t e = kt_multi(nullptr, nullptr, nullptr, 64, 4096, 1e-6f, 0);
			const char *t = kt_multi_table(d);
			std::printf("device %d: %s -> %s rc=%d last=%d\n", d, t ? t : "(template defaults)", kt_called,
				    static_cast<int>(e), static_cast<int>(cudaGetLastError()));
		}
	}
	const char *l40s = kt_multi_table_for("NVIDIA L40S", 8, 9, 142, 864.0);
	const char *h100 = kt_multi_table_for("NVIDIA H100 NVL", 9, 0, 132, 3900.0);
	std::printf("L40S: %s\nH100 NVL: %s\n", l40s ? l40s : "(template defaults)", h100 ? h100 : "(template defaults)");
	return 0;
}
