// The ops as PyTorch operators, torch.ops.kt_ops.rmsnorm and torch.ops.kt_ops.silu_and_mul, over
// kt's generated launchers.  Each checks its inputs, allocates its output and launches on the
// current stream of the inputs' device; a Meta kernel gives the output's shape and type without
// running (torch.compile traces through the ops with it).
#include <climits>
#include <string>
#include <vector>

#include <ATen/ATen.h>
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAGuard.h>
#include <torch/library.h>

#include "kt_rmsnorm.h"
#include "kt_silu_and_mul.h"

namespace {

// Numbers and devices in the messages are formatted as strings first: a toolchain that links its
// C++ library statically into shared libraries (as the GPU machine's /opt/gcc does) gives this
// library a second copy whose iostreams crash when they format a number (their locale is not
// set up), while strings pass through.
std::string text(int64_t n)
{
	return std::to_string(n);
}

std::string text(at::IntArrayRef dims)
{
	std::string s = "[";
	for (size_t i = 0; i < dims.size(); i++)
		s += (i ? ", " : "") + std::to_string(dims[i]);
	return s + "]";
}

void check_input(const at::Tensor &t, const char *name)
{
	TORCH_CHECK(t.is_cuda(), "kt_ops: ", name, " must be a CUDA tensor, not on ", t.device().str());
	TORCH_CHECK(t.scalar_type() == at::kBFloat16, "kt_ops: ", name, " must be bfloat16, not ",
		    t.scalar_type());
	TORCH_CHECK(t.is_contiguous(), "kt_ops: ", name, " must be contiguous");
}

// The launchers take int extents.
int as_int(int64_t n, const char *what)
{
	TORCH_CHECK(n <= INT_MAX, "kt_ops: ", what, " is ", text(n), ", more than the kernels take (", text(INT_MAX), ")");
	return static_cast<int>(n);
}

void check_launch(cudaError_t e, const char *op)
{
	TORCH_CHECK(e == cudaSuccess, "kt_ops.", op, ": ", cudaGetErrorString(e));
}

const __nv_bfloat16 *bf16(const at::Tensor &t)
{
	return reinterpret_cast<const __nv_bfloat16 *>(t.data_ptr());
}

__nv_bfloat16 *bf16_out(at::Tensor &t)
{
	return reinterpret_cast<__nv_bfloat16 *>(t.data_ptr());
}

// x [..., hidden], weight [hidden]: the shapes of rmsnorm's operands, checked.
int64_t rmsnorm_hidden(const at::Tensor &x, const at::Tensor &weight)
{
	TORCH_CHECK(x.dim() >= 1, "kt_ops.rmsnorm: x must have at least one dimension");
	const int64_t hidden = x.size(-1);
	TORCH_CHECK(hidden > 0, "kt_ops.rmsnorm: x's last dimension is empty");
	TORCH_CHECK(weight.dim() == 1 && weight.size(0) == hidden, "kt_ops.rmsnorm: weight must be [", text(hidden),
		    "] (x's last dimension), not ", text(weight.sizes()));
	return hidden;
}

at::Tensor rmsnorm(const at::Tensor &x, const at::Tensor &weight, double eps)
{
	check_input(x, "x");
	check_input(weight, "weight");
	TORCH_CHECK(weight.device() == x.device(), "kt_ops.rmsnorm: weight is on ", weight.device().str(), ", x on ",
		    x.device().str());
	const int64_t hidden = rmsnorm_hidden(x, weight);
	const int rows = as_int(x.numel() / hidden, "rmsnorm's row count");
	const c10::cuda::CUDAGuard guard(x.device());
	at::Tensor out = at::empty_like(x);
	check_launch(kt_rmsnorm(bf16_out(out), bf16(x), bf16(weight), rows, as_int(hidden, "hidden"),
				static_cast<float>(eps), at::cuda::getCurrentCUDAStream()),
		     "rmsnorm");
	return out;
}

// x [..., 2d]: the shape of silu_and_mul's output, [..., d].
std::vector<int64_t> silu_and_mul_shape(const at::Tensor &x)
{
	TORCH_CHECK(x.dim() >= 1, "kt_ops.silu_and_mul: x must have at least one dimension");
	const int64_t two_d = x.size(-1);
	TORCH_CHECK(two_d > 0 && two_d % 2 == 0, "kt_ops.silu_and_mul: x's last dimension (", text(two_d),
		    ") must be even and not 0: [..., 2d]");
	std::vector<int64_t> shape(x.sizes().begin(), x.sizes().end());
	shape.back() = two_d / 2;
	return shape;
}

at::Tensor silu_and_mul(const at::Tensor &x)
{
	check_input(x, "x");
	const std::vector<int64_t> shape = silu_and_mul_shape(x);
	const int64_t d = shape.back();
	const int tokens = as_int(x.numel() / (2 * d), "silu_and_mul's token count");
	const c10::cuda::CUDAGuard guard(x.device());
	at::Tensor out = at::empty(shape, x.options());
	check_launch(kt_silu_and_mul(bf16_out(out), bf16(x), tokens, as_int(d, "d"),
				     at::cuda::getCurrentCUDAStream()),
		     "silu_and_mul");
	return out;
}

at::Tensor rmsnorm_meta(const at::Tensor &x, const at::Tensor &weight, double)
{
	rmsnorm_hidden(x, weight);
	return at::empty_like(x);
}

at::Tensor silu_and_mul_meta(const at::Tensor &x)
{
	return at::empty(silu_and_mul_shape(x), x.options());
}

} // namespace

TORCH_LIBRARY(kt_ops, m)
{
	m.def("rmsnorm(Tensor x, Tensor weight, float eps=1e-6) -> Tensor");
	m.def("silu_and_mul(Tensor x) -> Tensor");
}

TORCH_LIBRARY_IMPL(kt_ops, CUDA, m)
{
	m.impl("rmsnorm", &rmsnorm);
	m.impl("silu_and_mul", &silu_and_mul);
}

TORCH_LIBRARY_IMPL(kt_ops, Meta, m)
{
	m.impl("rmsnorm", &rmsnorm_meta);
	m.impl("silu_and_mul", &silu_and_mul_meta);
}
