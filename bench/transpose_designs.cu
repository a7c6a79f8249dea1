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
//   bulk[st] R x C sS tN    persistent blocks, tiles loaded by the bulk copy engine (cp.async.bulk)
//                           S stages ahead; bulkst: stored by it too (./transpose_designs --bulk-only)
//   colorder, group         smem128x16 with other tile orders (--diag-only, --group-only); the
//                           diagnostics also time a flat copy and the tiles copied untransposed,
//                           through vector (tilecopy) or element-wise (scalarcopy) shared accesses
#include <algorithm>
#include <cstring>
#include <vector>

#include "bench.cuh"

typedef unsigned short u16;
__global__ void fill(u16 *p, size_t n) { for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) p[i] = (u16)(i * 2654435761u >> 7); }
// Rows [r0, r0 + ROWS) of x, 4 columns from c per thread, into tile (LD elements a row), element
// by element, then a barrier: the load phase of smem_tile and trect.
template <int ROWS, int TY> static __device__ __forceinline__ void load_rows(u16 *tile, int LD, const u16 *x, int cols, int r0, int c)
{
	const int tx = threadIdx.x;
#pragma unroll
	for (int y = threadIdx.y; y < ROWS; y += TY) {
		uint2 v = __ldg(reinterpret_cast<const uint2 *>(x + (size_t)(r0 + y) * cols + c));
		const u16 *e = reinterpret_cast<const u16 *>(&v);
#pragma unroll
		for (int j = 0; j < 4; j++) tile[y * LD + tx * 4 + j] = e[j];
	}
	__syncthreads();
}
// A: smem tile TILE, VEC 4 (8B), block (TILE/4, TY), PAD 1, diag: diagonal tile order.  smem_tile
// moves the tile at (r0, c0); the tile-order designs below (colorder, group) call it too.
// (TR false: the tile goes back untransposed, the diagnostic scalarcopy below.)
template <int TILE, int TY, bool TR = true> static __device__ __forceinline__ void smem_tile(u16 *out, const u16 *x, int rows, int cols, int r0, int c0)
{
	__shared__ __align__(16) u16 tile[TILE * (TILE + 1)];
	const int LD = TILE + 1, tx = threadIdx.x, ty = threadIdx.y, c = c0 + tx * 4;
	load_rows<TILE, TY>(tile, LD, x, cols, r0, c);
#pragma unroll
	for (int y = ty; y < TILE; y += TY) {
		u16 e[4];
#pragma unroll
		for (int j = 0; j < 4; j++) e[j] = TR ? tile[(tx * 4 + j) * LD + y] : tile[y * LD + tx * 4 + j];
		*reinterpret_cast<uint2 *>(TR ? out + (size_t)(c0 + y) * rows + r0 + tx * 4 : out + (size_t)(r0 + y) * cols + c) = *reinterpret_cast<uint2 *>(e);
	}
}
template <int TILE, int TY, bool DIAG> __global__ void __launch_bounds__(TILE / 4 * TY) tsmem(u16 *out, const u16 *x, int rows, int cols)
{
	const int bx = DIAG ? (blockIdx.x + blockIdx.y) % gridDim.x : blockIdx.x;
	smem_tile<TILE, TY>(out, x, rows, cols, blockIdx.y * TILE, bx * TILE);
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
	load_rows<TR, TY>(tile, LD, x, cols, r0, c);
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
// F: persistent blocks; each TR x TC tile arrives in shared memory through the bulk copy engine
// (cp.async.bulk, one copy per tile row, STAGES tiles ahead, completing on an mbarrier).  Row r of
// a stage sits at r*TC + (r/8)*8 elements (16 bytes more every 8 rows: bulk copies need 16-byte
// aligned rows, and the shift spreads the column reads over the banks).  A thread gathers two
// columns of 8 rows as 8 words and writes two 16-byte pieces of two output rows; a warp covers 8
// row groups x 4 column pairs, so each store writes 128 contiguous bytes of 4 output rows.
// BULKST: the transposed tile goes to a second shared buffer and out by bulk stores, one per
// output row (cp.async.bulk.global.shared::cta), instead of the threads' own stores.
static __device__ __forceinline__ unsigned smem_addr(const void *p) { return (unsigned)__cvta_generic_to_shared(p); }
template <int TR, int TC, int STAGES, int NT, bool BULKST> __global__ void __launch_bounds__(NT) tbulk(u16 *out, const u16 *x, int rows, int cols)
{
	constexpr int SZ = TR * TC + TR;   /* elements per stage */
	constexpr int OLD = TR + 8;        /* BULKST: elements per output row in shared memory */
	extern __shared__ __align__(128) u16 sm[];
	u16 *ob = sm + STAGES * SZ;        /* BULKST: the transposed tile, TC rows of OLD */
	__shared__ __align__(8) unsigned long long bar[STAGES];
	const int tilesx = cols / TC, ntiles = tilesx * (rows / TR), t = threadIdx.x, lane = t & 31;
	if (t == 0) {
		for (int s = 0; s < STAGES; s++)
			asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" ::"r"(smem_addr(&bar[s])));
		asm volatile("fence.mbarrier_init.release.cluster;\n\tfence.proxy.async.shared::cta;" ::: "memory");
	}
	__syncthreads();
	auto issue = [&](int tile, int s) { /* warp 0 */
		const int r0 = tile / tilesx * TR, c0 = tile % tilesx * TC;
		const unsigned b = smem_addr(&bar[s]);
		if (lane == 0)
			asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(b), "r"(TR * TC * 2) : "memory");
		__syncwarp();
		for (int r = lane; r < TR; r += 32)
			asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];" ::"r"(smem_addr(sm + s * SZ + r * TC + (r / 8) * 8)),
				     "l"(x + (size_t)(r0 + r) * cols + c0), "r"(TC * 2), "r"(b)
				     : "memory");
	};
	if (t < 32)
		for (int s = 0; s < STAGES; s++)
			if (blockIdx.x + s * gridDim.x < ntiles)
				issue(blockIdx.x + s * gridDim.x, s);
	int i = 0;
	for (int tile = blockIdx.x; tile < ntiles; tile += gridDim.x, i++) {
		const int s = i % STAGES, r0 = tile / tilesx * TR, c0 = tile % tilesx * TC;
		const unsigned b = smem_addr(&bar[s]), ph = (i / STAGES) & 1;
		unsigned done;
		do
			asm volatile("{ .reg .pred p; mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2; selp.u32 %0, 1, 0, p; }" : "=r"(done) : "r"(b), "r"(ph) : "memory");
		while (!done);
		if (BULKST) { /* the previous tile's stores (each lane of warp 0 waits for its own) have read ob */
			if (t < 32)
				asm volatile("cp.async.bulk.wait_group.read 0;" ::: "memory");
			__syncthreads();
		}
		const unsigned *w = reinterpret_cast<const unsigned *>(sm + s * SZ);
#pragma unroll 4
		for (int idx = t; idx < (TR / 8) * (TC / 2); idx += NT) {
			const int ql = idx % 8, yp = idx / 8 % (TC / 2), q = idx / 8 / (TC / 2) * 8 + ql;
			unsigned v[8];
#pragma unroll
			for (int j = 0; j < 8; j++)
				v[j] = w[((8 * q + j) * TC + q * 8) / 2 + yp];
			uint4 lo, hi;
			lo.x = __byte_perm(v[0], v[1], 0x5410); lo.y = __byte_perm(v[2], v[3], 0x5410);
			lo.z = __byte_perm(v[4], v[5], 0x5410); lo.w = __byte_perm(v[6], v[7], 0x5410);
			hi.x = __byte_perm(v[0], v[1], 0x7632); hi.y = __byte_perm(v[2], v[3], 0x7632);
			hi.z = __byte_perm(v[4], v[5], 0x7632); hi.w = __byte_perm(v[6], v[7], 0x7632);
			if (BULKST) {
				*reinterpret_cast<uint4 *>(ob + (2 * yp) * OLD + 8 * q) = lo;
				*reinterpret_cast<uint4 *>(ob + (2 * yp + 1) * OLD + 8 * q) = hi;
			} else {
				*reinterpret_cast<uint4 *>(out + (size_t)(c0 + 2 * yp) * rows + r0 + 8 * q) = lo;
				*reinterpret_cast<uint4 *>(out + (size_t)(c0 + 2 * yp + 1) * rows + r0 + 8 * q) = hi;
			}
		}
		if (BULKST)
			asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
		__syncthreads(); /* stage s (and ob) fully read or written */
		if (t < 32) {
			if (tile + STAGES * gridDim.x < ntiles)
				issue(tile + STAGES * gridDim.x, s);
			if (BULKST) {
				for (int y = lane; y < TC; y += 32)
					asm volatile("cp.async.bulk.global.shared::cta.bulk_group [%0], [%1], %2;" ::"l"(out + (size_t)(c0 + y) * rows + r0),
						     "r"(smem_addr(ob + y * OLD)), "r"(TR * 2)
						     : "memory");
				asm volatile("cp.async.bulk.commit_group;" ::: "memory");
			}
		}
	}
	if (BULKST && t < 32)
		asm volatile("cp.async.bulk.wait_group 0;" ::: "memory");
}
// G (diagnostics, not transposes): tsmem's tiles and threads with the tile written back
// untransposed (tilecopy: reads and writes in the same 256-byte pieces of 128 rows), and tsmem
// with the tiles walked down the columns first (colorder: consecutive blocks share output rows).
__global__ void flatcopy(uint4 *out, const uint4 *x) { const size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; out[i] = x[i]; }
template <int TILE, int TY> __global__ void __launch_bounds__(TILE / 4 * TY) ttilecopy(u16 *out, const u16 *x, int rows, int cols)
{
	__shared__ __align__(16) u16 tile[TILE * (TILE + 4)];
	const int LD = TILE + 4, tx = threadIdx.x, ty = threadIdx.y;
	const int r0 = blockIdx.y * TILE, c0 = blockIdx.x * TILE, c = c0 + tx * 4;
#pragma unroll
	for (int y = ty; y < TILE; y += TY)
		*reinterpret_cast<uint2 *>(&tile[y * LD + tx * 4]) = __ldg(reinterpret_cast<const uint2 *>(x + (size_t)(r0 + y) * cols + c));
	__syncthreads();
#pragma unroll
	for (int y = ty; y < TILE; y += TY)
		*reinterpret_cast<uint2 *>(out + (size_t)(r0 + y) * cols + c) = *reinterpret_cast<const uint2 *>(&tile[y * LD + tx * 4]);
}
// ... and with smem_tile's element-wise shared-memory accesses (scalarcopy: the tile's rows
// stored and read back one 2-byte element at a time, as smem_tile stores them).
template <int TILE, int TY> __global__ void __launch_bounds__(TILE / 4 * TY) tscalarcopy(u16 *out, const u16 *x, int rows, int cols)
{
	smem_tile<TILE, TY, false>(out, x, rows, cols, blockIdx.y * TILE, blockIdx.x * TILE);
}
template <int TILE, int TY> __global__ void __launch_bounds__(TILE / 4 * TY) tcolorder(u16 *out, const u16 *x, int rows, int cols)
{
	smem_tile<TILE, TY>(out, x, rows, cols, blockIdx.x * TILE, blockIdx.y * TILE);
}
// H: tsmem's tiles in groups: a 1-D grid walked down G tile rows at a time (COLS: across G tile
// columns at a time), so that the blocks in flight together cover a rectangle of tiles.
template <int G, bool COLS> __global__ void __launch_bounds__(512) tgroup(u16 *out, const u16 *x, int rows, int cols)
{
	const int n = (COLS ? rows : cols) / 128, L = blockIdx.x, i = L % (G * n), grp = L / (G * n);
	const int a = grp * G + i % G, b = i / G; /* a: the grouped dimension */
	smem_tile<128, 16>(out, x, rows, cols, (COLS ? b : a) * 128, (COLS ? a : b) * 128);
}
__global__ void naive(u16 *out, const u16 *x, int rows, int cols) { size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; if (i < (size_t)rows * cols) out[(i % cols) * rows + i / cols] = x[i]; }
int main(int argc, char **argv)
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
	if (argc > 1 && !strcmp(argv[1], "--group-only")) {
		const dim3 g(R / 128 * (C / 128)), b(32, 16);
		bench("smem128x16", [&](int s) { tsmem<128, 16, false><<<dim3(C / 128, R / 128), b>>>(o[s], x[s], R, C); });
		bench("colorder128x16", [&](int s) { tcolorder<128, 16><<<dim3(R / 128, C / 128), b>>>(o[s], x[s], R, C); });
		bench("group rows 2", [&](int s) { tgroup<2, false><<<g, b>>>(o[s], x[s], R, C); });
		bench("group rows 4", [&](int s) { tgroup<4, false><<<g, b>>>(o[s], x[s], R, C); });
		bench("group rows 8", [&](int s) { tgroup<8, false><<<g, b>>>(o[s], x[s], R, C); });
		bench("group rows 16", [&](int s) { tgroup<16, false><<<g, b>>>(o[s], x[s], R, C); });
		bench("group rows 32", [&](int s) { tgroup<32, false><<<g, b>>>(o[s], x[s], R, C); });
		bench("group cols 2", [&](int s) { tgroup<2, true><<<g, b>>>(o[s], x[s], R, C); });
		bench("group cols 4", [&](int s) { tgroup<4, true><<<g, b>>>(o[s], x[s], R, C); });
		bench("group cols 8", [&](int s) { tgroup<8, true><<<g, b>>>(o[s], x[s], R, C); });
		bench("group cols 16", [&](int s) { tgroup<16, true><<<g, b>>>(o[s], x[s], R, C); });
		bench("group cols 32", [&](int s) { tgroup<32, true><<<g, b>>>(o[s], x[s], R, C); });
		for (int per : {2, 3, 4, 5}) { /* fewer blocks in flight: dynamic shared memory that only limits occupancy */
			const int extra = 227 * 1024 / per - 128 * 129 * 2 - 1024;
			CK(cudaFuncSetAttribute(tgroup<64, true>, cudaFuncAttributeMaxDynamicSharedMemorySize, extra));
			CK(cudaFuncSetAttribute(tsmem<128, 16, false>, cudaFuncAttributeMaxDynamicSharedMemorySize, extra));
			int got = 0;
			CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&got, tsmem<128, 16, false>, 512, extra));
			char l1[64], l2[64];
			snprintf(l1, sizeof l1, "smem128x16, %d per SM", got);
			snprintf(l2, sizeof l2, "colorder (cols 64), %d per SM", got);
			bench(l1, [&](int s) { tsmem<128, 16, false><<<dim3(C / 128, R / 128), b, extra>>>(o[s], x[s], R, C); });
			bench(l2, [&](int s) { tgroup<64, true><<<g, b, extra>>>(o[s], x[s], R, C); });
		}
		return 0;
	}
	bench("flat copy (not a transpose)", [&](int s) { flatcopy<<<n * 2 / 16 / 256, 256>>>(reinterpret_cast<uint4 *>(o[s]), reinterpret_cast<const uint4 *>(x[s])); });
	bench("colorder128x16", [&](int s) { tcolorder<128, 16><<<dim3(R / 128, C / 128), dim3(32, 16)>>>(o[s], x[s], R, C); });
	bench("tilecopy128x16 (not a transpose)", [&](int s) { ttilecopy<128, 16><<<dim3(C / 128, R / 128), dim3(32, 16)>>>(o[s], x[s], R, C); });
	bench("scalarcopy128x16 (not a transpose)", [&](int s) { tscalarcopy<128, 16><<<dim3(C / 128, R / 128), dim3(32, 16)>>>(o[s], x[s], R, C); });
	bench("smem128x16", [&](int s) { tsmem<128, 16, false><<<dim3(C / 128, R / 128), dim3(32, 16)>>>(o[s], x[s], R, C); });
	if (argc > 1 && !strcmp(argv[1], "--diag-only"))
		return 0;
	int sms = 0;
	CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
	auto bulk = [&](const char *name, auto kern, int tr, int tc, int stages, int nt, bool bst) {
		const int smem = stages * (tr * tc + tr) * 2 + (bst ? tc * (tr + 8) * 2 : 0);
		CK(cudaFuncSetAttribute(kern, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
		int per = 0;
		CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per, kern, nt, smem));
		char label[96];
		snprintf(label, sizeof label, "%s (%d per SM)", name, per);
		bench(label, [&](int s) { kern<<<sms * per, nt, smem>>>(o[s], x[s], R, C); });
	};
	bulk("bulk128x128 s2 t256", tbulk<128, 128, 2, 256, false>, 128, 128, 2, 256, false);
	bulk("bulk128x128 s3 t256", tbulk<128, 128, 3, 256, false>, 128, 128, 3, 256, false);
	bulk("bulk128x128 s2 t512", tbulk<128, 128, 2, 512, false>, 128, 128, 2, 512, false);
	bulk("bulk128x128 s1 t256", tbulk<128, 128, 1, 256, false>, 128, 128, 1, 256, false);
	bulk("bulk64x128 s4 t256", tbulk<64, 128, 4, 256, false>, 64, 128, 4, 256, false);
	bulk("bulk128x64 s4 t256", tbulk<128, 64, 4, 256, false>, 128, 64, 4, 256, false);
	bulk("bulk64x64 s4 t128", tbulk<64, 64, 4, 128, false>, 64, 64, 4, 128, false);
	bulk("bulk128x256 s2 t512", tbulk<128, 256, 2, 512, false>, 128, 256, 2, 512, false);
	bulk("bulkst128x128 s2 t256", tbulk<128, 128, 2, 256, true>, 128, 128, 2, 256, true);
	bulk("bulkst128x128 s3 t256", tbulk<128, 128, 3, 256, true>, 128, 128, 3, 256, true);
	bulk("bulkst64x128 s4 t256", tbulk<64, 128, 4, 256, true>, 64, 128, 4, 256, true);
	bulk("bulkst128x64 s4 t256", tbulk<128, 64, 4, 256, true>, 128, 64, 4, 256, true);
	if (argc > 1 && !strcmp(argv[1], "--bulk-only"))
		return 0;
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
