// scale.cu - a plain kernel for the record case of run_case.py: out = 2 * x, one element per
// thread.  On the fake GPU (generator/gpu_fake.c) every kernel of these parameters computes that.
__global__ void scale(float *out, const float *x, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n)
		out[i] = 2.0f * x[i];
}
