// kt_common.cuh - device helpers shared by kt's templates.
//
// Template parameters here are spelled Kt* because the including variant defines its tuning
// parameters (T, VEC, N, ...) as macros before this header is read.
//
// Vector loads and stores of N elements of a 16-bit type T (N*2 bytes: 2, 4, 8 or 16 bytes per
// access), conversions between T and float, and warp reductions.  Everything is in an anonymous
// namespace and force-inlined, so many variants of one template can be linked into one binary.
#ifndef KT_COMMON_CUH
#define KT_COMMON_CUH

#include <cuda_bf16.h>
#include <cuda_fp16.h>

namespace {

// The plain integer type of a B-byte access.
template <int KtB> struct kt_raw;
template <> struct kt_raw<2> { typedef unsigned short type; };
template <> struct kt_raw<4> { typedef unsigned int type; };
template <> struct kt_raw<8> { typedef uint2 type; };
template <> struct kt_raw<16> { typedef uint4 type; };

// N elements of T, aligned to the access width so that one load moves all of them.
template <typename KtE, int KtN> struct __align__(sizeof(KtE) * KtN) kt_vec {
	KtE v[KtN];
};

static __device__ __forceinline__ float kt_to_float(__half h) { return __half2float(h); }
static __device__ __forceinline__ float kt_to_float(__nv_bfloat16 h) { return __bfloat162float(h); }
static __device__ __forceinline__ float kt_to_float(float f) { return f; }

template <typename KtE> __device__ __forceinline__ KtE kt_from_float(float f);
template <> __device__ __forceinline__ __half kt_from_float<__half>(float f) { return __float2half_rn(f); }
template <> __device__ __forceinline__ __nv_bfloat16 kt_from_float<__nv_bfloat16>(float f)
{
	return __float2bfloat16_rn(f);
}
template <> __device__ __forceinline__ float kt_from_float<float>(float f) { return f; }

// Loads N elements at p (aligned to the access).  STREAM: evict-first (ld.global.cs), for data
// read once; otherwise through the read-only path (ld.global.nc).
template <bool KtStream, typename KtE, int KtN> __device__ __forceinline__ kt_vec<KtE, KtN> kt_load(const KtE *p)
{
	typedef typename kt_raw<sizeof(KtE) * KtN>::type R;
	const R r = KtStream ? __ldcs(reinterpret_cast<const R *>(p)) : __ldg(reinterpret_cast<const R *>(p));
	kt_vec<KtE, KtN> v;
	*reinterpret_cast<R *>(&v) = r;
	return v;
}

// The same for memory that the kernel also writes (in-place kernels): a coherent load
// (ld.global, or ld.global.cs when KtStream), never the read-only path, whose cache may keep a
// line that this kernel has since overwritten.
template <bool KtStream, typename KtE, int KtN> __device__ __forceinline__ kt_vec<KtE, KtN> kt_load_rw(const KtE *p)
{
	typedef typename kt_raw<sizeof(KtE) * KtN>::type R;
	const R r = KtStream ? __ldcs(reinterpret_cast<const R *>(p)) : *reinterpret_cast<const R *>(p);
	kt_vec<KtE, KtN> v;
	*reinterpret_cast<R *>(&v) = r;
	return v;
}

// Stores N elements at p.  KtStream: evict-first (st.global.cs), for data nobody reads back soon.
template <bool KtStream, typename KtE, int KtN> __device__ __forceinline__ void kt_store(KtE *p, const kt_vec<KtE, KtN> &v)
{
	typedef typename kt_raw<sizeof(KtE) * KtN>::type R;
	const R r = *reinterpret_cast<const R *>(&v);
	if (KtStream)
		__stcs(reinterpret_cast<R *>(p), r);
	else
		*reinterpret_cast<R *>(p) = r;
}

static __device__ __forceinline__ float kt_warp_sum(float v)
{
#pragma unroll
	for (int o = 16; o > 0; o >>= 1)
		v += __shfl_xor_sync(0xffffffffu, v, o);
	return v;
}

static __device__ __forceinline__ float kt_warp_max(float v)
{
#pragma unroll
	for (int o = 16; o > 0; o >>= 1)
		v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
	return v;
}

} // namespace

#endif
