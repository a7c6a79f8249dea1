// dispatch_check.cpp - which variant the dispatcher picks, and with what launch geometry.
// It is linked with the generated dispatcher and with stand-ins for the variants (written by
// gen_test.cmake from the dispatcher's own declarations) that record the call instead of launching.
#include <cstdio>

#include "kt_mini.h"

extern "C" const char *kt_called;
extern "C" unsigned kt_called_grid, kt_called_block;
extern "C" size_t kt_called_smem;

static void probe(int rows, int hidden)
{
	kt_called = "none";
	kt_called_grid = kt_called_block = 0;
	kt_called_smem = 0;
	cudaError_t e = kt_mini(nullptr, nullptr, nullptr, rows, hidden, 1e-6f, 0);
	std::printf("%dx%d -> %s grid=%u block=%u smem=%zu rc=%d\n", rows, hidden, kt_called, kt_called_grid,
		    kt_called_block, kt_called_smem, static_cast<int>(e));
}

int main()
{
	probe(64, 4096); // tuned shape 0, exact
	probe(8, 1024);  // tuned shape 1, exact
	probe(40, 2050); // nearest is shape 0, but VEC=4 does not divide 2050: shape 1
	probe(8, 1025);  // neither tuned configuration divides 1025: the fallback
	probe(64, 16384); // shape 0 again, with 64 KiB of dynamic shared memory
	probe(2, 7);     // nothing fits
	probe(0, 1024);  // no rows: an empty grid, nothing launched
	return 0;
}
