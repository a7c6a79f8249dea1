// transpose_designs.cu - other ways to write templates/transpose.cu.tmpl's kernel, timed on one
// shape: the experiments behind bench/README.md's account of the transpose (why its template
// keeps square tiles through shared memory).
//
//   nvcc -O2 -std=c++17 -arch=sm_90 -o transpose_designs bench/transpose_designs.cu && ./transpose_designs
//
// A 2-byte 8192 x 8192 matrix, every design checked element for element against the naive
// kernel ("bad" counts the elements that differ) and timed like kt times a kernel: the median of
// 200 launches, each between its own pair of CUDA events, queued behind a spinning kernel,
// rotating over 3 input sets (805 MB, past the L2).  % of floor: against 63.02 us, 268 MB over
// the 4.26 TB/s copy bandwidth kt measured on the H200.
//   smem TILE x TY [diag]   TILE x TILE tiles, 8-byte accesses, padded rows, (diagonal order)
//   rect R x C tyN          R x C tiles (dynamic shared memory), 8-byte accesses
//   regsN BX x BY           no shared memory: N x 8 blocks transposed in registers
//   pair TILE tyN           shared memory holding pairs of rows in 32-bit words, 16-byte stores
#include <algorithm>
#include <vector>

#include "bench.cuh"

typedef unsigned short u16;
__global__ void fill(u16 *p, size_t n) { for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) p[i] = (u16)(i * 2654435761u >> 7); }
// A: smem tile TILE, VEC 4 (8B), block (TILE/4, TY), PAD 1, diag: diagonal tile order
template <int TILE, int TY, bool DIAG> __global__ void __launch_bounds__(TILE / 4 * TY) tsmem(u16 *out, const u16 *x, int rows, int cols)
{
	__shared__ __align__(16) u16 tile[TILE * (TILE + 1)];
	const int LD = TILE + 1, tx = threadIdx.x, ty = threadIdx.y;
	int bx = blockIdx.x, by = blockIdx.y;
	if (DIAG) bx = (blockIdx.x + blockIdx.y) % gridDim.x;
	const int r0 = by * TILE, c0 = bx * TILE, c = c0 + tx * 4;
#pragma unroll
	for (int y = ty; y < TILE; y += TY) {
		uint2 v = __ldg(reinterpret_cast<const uint2 *>(x + (size_t)(r0 + y) * cols + c));
		const u16 *e = reinterpret_cast<const u16 *>(&v);
#pragma unroll
		for (int j = 0; j < 4; j++) tile[y * LD + tx * 4 + j] = e[j];
	}
	__syncthreads();
#pragma unroll
	for (int y = ty; y < TILE; y += TY) {
		u16 e[4];
#pragma unroll
		for (int j = 0; j < 4; j++) e[j] = tile[(tx * 4 + j) * LD + y];
		*reinterpret_cast<uint2 *>(out + (size_t)(c0 + y) * rows + r0 + tx * 4) = *reinterpret_cast<uint2 *>(e);
	}
}
// C: registers, each thread RW rows (8 or 16) x 8 columns; block (BX, BY) threads; a thread's output rows get RW*2 bytes each.
template <int RW, int BX, int BY> __global__ void __launch_bounds__(BX * BY) tregs(u16 *out, const u16 *x, int rows, int cols)
{
	const int c = (blockIdx.x * BX + threadIdx.x) * 8, r = (blockIdx.y * BY + threadIdx.y) * RW;
	unsigned a[RW][4];
#pragma unroll
	for (int i = 0; i < RW; i++) {
		uint4 v = __ldg(reinterpret_cast<const uint4 *>(x + (size_t)(r + i) * cols + c));
		a[i][0] = v.x; a[i][1] = v.y; a[i][2] = v.z; a[i][3] = v.w;
	}
#pragma unroll
	for (int j = 0; j < 8; j++) {
		const unsigned sel = (j & 1) ? 0x7632u : 0x5410u;
#pragma unroll
		for (int h = 0; h < RW / 8; h++) {
			uint4 o;
			o.x = __byte_perm(a[8 * h + 0][j / 2], a[8 * h + 1][j / 2], sel);
			o.y = __byte_perm(a[8 * h + 2][j / 2], a[8 * h + 3][j / 2], sel);
			o.z = __byte_perm(a[8 * h + 4][j / 2], a[8 * h + 5][j / 2], sel);
			o.w = __byte_perm(a[8 * h + 6][j / 2], a[8 * h + 7][j / 2], sel);
			*reinterpret_cast<uint4 *>(out + (size_t)(c + j) * rows + r + 8 * h) = o;
		}
	}
}
// E: smem tile of word pairs: word (r/2, c) = {x[r][c], x[r+1][c]}; TILE x TILE, block (TILE/8, TY2): loads 2 rows x 16B per step
// write phase: thread (tx, y) gathers 4 words (rows 8tx..8tx+7) of column y -> one 16B store.
template <int TILE, int TY> __global__ void __launch_bounds__(TILE / 8 * TY) tpair(u16 *out, const u16 *x, int rows, int cols)
{
	constexpr int LDW = TILE + 1; /* words per pair-row */
	__shared__ unsigned w[(TILE / 2) * LDW];
	const int tx = threadIdx.x, ty = threadIdx.y;
	const int r0 = blockIdx.y * TILE, c0 = blockIdx.x * TILE, c = c0 + tx * 8;
#pragma unroll
	for (int p = ty; p < TILE / 2; p += TY) {
		uint4 a = __ldg(reinterpret_cast<const uint4 *>(x + (size_t)(r0 + 2 * p) * cols + c));
		uint4 b = __ldg(reinterpret_cast<const uint4 *>(x + (size_t)(r0 + 2 * p + 1) * cols + c));
		const unsigned *ua = &a.x, *ub = &b.x;
#pragma unroll
		for (int k = 0; k < 4; k++) {
			w[p * LDW + tx * 8 + 2 * k] = __byte_perm(ua[k], ub[k], 0x5410);
			w[p * LDW + tx * 8 + 2 * k + 1] = __byte_perm(ua[k], ub[k], 0x7632);
		}
	}
	__syncthreads();
	/* out row c0 + y, elements r0 + 8*q .. : words (4q .. 4q+3, y) */
	const int nthr = TILE / 8 * TY, t = ty * (TILE / 8) + tx;
#pragma unroll
	for (int idx = t; idx < TILE * (TILE / 8); idx += nthr) {
		const int q = idx % (TILE / 8), y = idx / (TILE / 8);
		uint4 o;
		o.x = w[(4 * q + 0) * LDW + y]; o.y = w[(4 * q + 1) * LDW + y]; o.z = w[(4 * q + 2) * LDW + y]; o.w = w[(4 * q + 3) * LDW + y];
		*reinterpret_cast<uint4 *>(out + (size_t)(c0 + y) * rows + r0 + 8 * q) = o;
	}
}
// rectangular smem tile: TR rows x TC cols, block (TC/4, TY); write phase: flat over (TR/4) x TC groups of 4 outputs
template <int TR, int TC, int TY> __global__ void __launch_bounds__(TC / 4 * TY) trect(u16 *out, const u16 *x, int rows, int cols)
{
	constexpr int LD = TC + 1;
	extern __shared__ __align__(16) u16 tile[];
	const int tx = threadIdx.x, ty = threadIdx.y;
	const int r0 = blockIdx.y * TR, c0 = blockIdx.x * TC, c = c0 + tx * 4;
#pragma unroll
	for (int y = ty; y < TR; y += TY) {
		uint2 v = __ldg(reinterpret_cast<const uint2 *>(x + (size_t)(r0 + y) * cols + c));
		const u16 *e = reinterpret_cast<const u16 *>(&v);
#pragma unroll
		for (int j = 0; j < 4; j++) tile[y * LD + tx * 4 + j] = e[j];
	}
	__syncthreads();
	constexpr int NT = TC / 4 * TY;
	const int t = ty * (TC / 4) + tx;
#pragma unroll
	for (int idx = t; idx < (TR / 4) * TC; idx += NT) {
		const int q = idx % (TR / 4), y = idx / (TR / 4);
		u16 e[4];
#pragma unroll
		for (int j = 0; j < 4; j++) e[j] = tile[(4 * q + j) * LD + y];
		*reinterpret_cast<uint2 *>(out + (size_t)(c0 + y) * rows + r0 + 4 * q) = *reinterpret_cast<uint2 *>(e);
	}
}
__global__ void naive(u16 *out, const u16 *x, int rows, int cols) { size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; if (i < (size_t)rows * cols) out[(i % cols) * rows + i / cols] = x[i]; }
int main()
{
	const int R = 8192, C = 8192; const size_t n = (size_t)R * C; const int NS = 3;
	u16 *x[NS], *o[NS], *ref;
	for (int s = 0; s < NS; s++) {
		CK(cudaMalloc(&x[s], n * 2));
		CK(cudaMalloc(&o[s], n * 2));
		fill<<<2048, 256>>>(x[s], n);
	}
	CK(cudaMalloc(&ref, n * 2));
	std::vector<u16> h(n), g(n);
	cudaEvent_t ev[400];
	for (auto &e : ev)
		CK(cudaEventCreate(&e));
	naive<<<(n + 255) / 256, 256>>>(ref, x[0], R, C);
	CK(cudaMemcpy(h.data(), ref, n * 2, cudaMemcpyDeviceToHost));
	printf("| design | median us | p10 | p90 | %% of floor | bad |\n|---|---:|---:|---:|---:|---:|\n");
	auto bench = [&](const char *name, auto go) {
		CK(cudaMemset(o[0], 0xff, n * 2));
		go(0);
		CK(cudaGetLastError());
		CK(cudaDeviceSynchronize());
		CK(cudaMemcpy(g.data(), o[0], n * 2, cudaMemcpyDeviceToHost));
		size_t bad = 0;
		for (size_t i = 0; i < n; i++)
			bad += h[i] != g[i];
		for (int i = 0; i < 6; i++)
			go(i % NS);
		CK(cudaDeviceSynchronize());
		bench_spin<<<1, 1>>>(20000000ull);
		for (int i = 0; i < 200; i++) {
			CK(cudaEventRecord(ev[2 * i]));
			go(i % NS);
			CK(cudaEventRecord(ev[2 * i + 1]));
		}
		CK(cudaDeviceSynchronize());
		std::vector<float> t(200);
		for (int i = 0; i < 200; i++) {
			CK(cudaEventElapsedTime(&t[i], ev[2 * i], ev[2 * i + 1]));
			t[i] *= 1e3f;
		}
		std::sort(t.begin(), t.end());
		printf("| %s | %.2f | %.2f | %.2f | %.1f | %zu |\n", name, t[100], t[20], t[180], 100 * 63.02 / t[100], bad);
		fflush(stdout);
	};
	CK(cudaFuncSetAttribute(trect<256, 256, 4>, cudaFuncAttributeMaxDynamicSharedMemorySize, 256 * 257 * 2));
	CK(cudaFuncSetAttribute(trect<256, 256, 8>, cudaFuncAttributeMaxDynamicSharedMemorySize, 256 * 257 * 2));
	CK(cudaFuncSetAttribute(trect<256, 256, 16>, cudaFuncAttributeMaxDynamicSharedMemorySize, 256 * 257 * 2));
	CK(cudaFuncSetAttribute(trect<128, 256, 8>, cudaFuncAttributeMaxDynamicSharedMemorySize, 128 * 257 * 2));
	CK(cudaFuncSetAttribute(trect<128, 256, 16>, cudaFuncAttributeMaxDynamicSharedMemorySize, 128 * 257 * 2));
	CK(cudaFuncSetAttribute(trect<256, 128, 16>, cudaFuncAttributeMaxDynamicSharedMemorySize, 256 * 129 * 2));
	CK(cudaFuncSetAttribute(trect<256, 128, 32>, cudaFuncAttributeMaxDynamicSharedMemorySize, 256 * 129 * 2));
	bench("smem128x16", [&](int s) { tsmem<128, 16, false><<<dim3(C / 128, R / 128), dim3(32, 16)>>>(o[s], x[s], R, C); });
	bench("smem128x16 diag", [&](int s) { tsmem<128, 16, true><<<dim3(C / 128, R / 128), dim3(32, 16)>>>(o[s], x[s], R, C); });
	bench("smem128x8", [&](int s) { tsmem<128, 8, false><<<dim3(C / 128, R / 128), dim3(32, 8)>>>(o[s], x[s], R, C); });
	bench("rect128x128 ty16", [&](int s) { trect<128, 128, 16><<<dim3(C / 128, R / 128), dim3(32, 16), 33024>>>(o[s], x[s], R, C); });
	bench("rect256x256 ty4", [&](int s) { trect<256, 256, 4><<<dim3(C / 256, R / 256), dim3(64, 4), 256 * 257 * 2>>>(o[s], x[s], R, C); });
	bench("rect256x256 ty8", [&](int s) { trect<256, 256, 8><<<dim3(C / 256, R / 256), dim3(64, 8), 256 * 257 * 2>>>(o[s], x[s], R, C); });
	bench("rect256x256 ty16", [&](int s) { trect<256, 256, 16><<<dim3(C / 256, R / 256), dim3(64, 16), 256 * 257 * 2>>>(o[s], x[s], R, C); });
	bench("rect128x256 ty8", [&](int s) { trect<128, 256, 8><<<dim3(C / 256, R / 128), dim3(64, 8), 128 * 257 * 2>>>(o[s], x[s], R, C); });
	bench("rect128x256 ty16", [&](int s) { trect<128, 256, 16><<<dim3(C / 256, R / 128), dim3(64, 16), 128 * 257 * 2>>>(o[s], x[s], R, C); });
	bench("rect256x128 ty16", [&](int s) { trect<256, 128, 16><<<dim3(C / 128, R / 256), dim3(32, 16), 256 * 129 * 2>>>(o[s], x[s], R, C); });
	bench("rect256x128 ty32", [&](int s) { trect<256, 128, 32><<<dim3(C / 128, R / 256), dim3(32, 32), 256 * 129 * 2>>>(o[s], x[s], R, C); });
	bench("rect256x64 ty32", [&](int s) { trect<256, 64, 32><<<dim3(C / 64, R / 256), dim3(16, 32), 33280>>>(o[s], x[s], R, C); });
	bench("rect256x64 ty16", [&](int s) { trect<256, 64, 16><<<dim3(C / 64, R / 256), dim3(16, 16), 33280>>>(o[s], x[s], R, C); });
	bench("rect512x32 ty32", [&](int s) { trect<512, 32, 32><<<dim3(C / 32, R / 512), dim3(8, 32), 33792>>>(o[s], x[s], R, C); });
	bench("rect512x32 ty64", [&](int s) { trect<512, 32, 64><<<dim3(C / 32, R / 512), dim3(8, 64), 33792>>>(o[s], x[s], R, C); });
	bench("rect64x256 ty8", [&](int s) { trect<64, 256, 8><<<dim3(C / 256, R / 64), dim3(64, 8), 32896>>>(o[s], x[s], R, C); });
	bench("rect64x256 ty4", [&](int s) { trect<64, 256, 4><<<dim3(C / 256, R / 64), dim3(64, 4), 32896>>>(o[s], x[s], R, C); });
	bench("rect32x512 ty4", [&](int s) { trect<32, 512, 4><<<dim3(C / 512, R / 32), dim3(128, 4), 32832>>>(o[s], x[s], R, C); });
	bench("rect256x32 ty32", [&](int s) { trect<256, 32, 32><<<dim3(C / 32, R / 256), dim3(8, 32), 16896>>>(o[s], x[s], R, C); });
	bench("regs8 32x4", [&](int s) { tregs<8, 32, 4><<<dim3(C / 256, R / 32), dim3(32, 4)>>>(o[s], x[s], R, C); });
	bench("regs16 32x2", [&](int s) { tregs<16, 32, 2><<<dim3(C / 256, R / 32), dim3(32, 2)>>>(o[s], x[s], R, C); });
	bench("regs16 16x8", [&](int s) { tregs<16, 16, 8><<<dim3(C / 128, R / 128), dim3(16, 8)>>>(o[s], x[s], R, C); });
	bench("regs16 8x16", [&](int s) { tregs<16, 8, 16><<<dim3(C / 64, R / 256), dim3(8, 16)>>>(o[s], x[s], R, C); });
	bench("regs8 8x32", [&](int s) { tregs<8, 8, 32><<<dim3(C / 64, R / 256), dim3(8, 32)>>>(o[s], x[s], R, C); });
	bench("pair128 ty16", [&](int s) { tpair<128, 16><<<dim3(C / 128, R / 128), dim3(16, 16)>>>(o[s], x[s], R, C); });
	bench("pair128 ty32", [&](int s) { tpair<128, 32><<<dim3(C / 128, R / 128), dim3(16, 32)>>>(o[s], x[s], R, C); });
	bench("pair64 ty16", [&](int s) { tpair<64, 16><<<dim3(C / 64, R / 64), dim3(8, 16)>>>(o[s], x[s], R, C); });
	bench("pair64 ty32", [&](int s) { tpair<64, 32><<<dim3(C / 64, R / 64), dim3(8, 32)>>>(o[s], x[s], R, C); });
	return 0;
}
