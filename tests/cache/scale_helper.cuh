// scale_helper.cuh: a local header of scale.cu.tmpl (its bytes are part of the cache key).
#pragma once
__device__ __forceinline__ float kt_scale_mul(float a, float b) { return a * b; }
