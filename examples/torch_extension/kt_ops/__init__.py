"""kt_ops: rmsnorm and silu_and_mul in bfloat16 for LLM serving, with CUDA kernels that kt tuned
for the building machine's GPU (or took from kt's committed records) when the package was built.

The build with torch holds the PyTorch ops (libkt_ops_torch.so, torch.ops.kt_ops):

    import torch, kt_ops
    y = kt_ops.rmsnorm(x, weight, 1e-6)    # x [..., hidden], weight [hidden]: bf16, CUDA, contiguous
    h = kt_ops.silu_and_mul(gate_up)       # [..., 2d] -> [..., d]

The build without torch holds the same kernels behind a C API (libkt_ops_c.so, csrc/kt_ops.h),
which c_api() loads with ctypes.  Either way the manifests that kt wrote are installed beside the
library: manifests(), shapes(), origins() and untuned() read them.
"""
import ctypes
import json
import pathlib

__all__ = ["BACKEND", "OPS", "c_api", "manifests", "origins", "shapes", "untuned"]

_HERE = pathlib.Path(__file__).resolve().parent
_TORCH_LIBRARY = _HERE / "libkt_ops_torch.so"
_C_LIBRARY = _HERE / "libkt_ops_c.so"

OPS = ("rmsnorm", "silu_and_mul")
BACKEND = "torch" if _TORCH_LIBRARY.exists() else "c"

if BACKEND == "torch":
    import torch

    torch.ops.load_library(str(_TORCH_LIBRARY))
    rmsnorm = torch.ops.kt_ops.rmsnorm
    silu_and_mul = torch.ops.kt_ops.silu_and_mul
    __all__ += ["rmsnorm", "silu_and_mul"]

_c_api = None


def c_api():
    """The C API of the build without torch, loaded with ctypes, its argument types declared:
    kt_ops_rmsnorm(out, x, w, rows, hidden, eps, stream) and kt_ops_silu_and_mul(out, x, tokens,
    d, stream) take device pointers (ints) and return a cudaError_t (0: success), whose message
    kt_ops_error_string(code) gives."""
    global _c_api
    if _c_api is None:
        if not _C_LIBRARY.exists():
            raise OSError(f"kt_ops: no C API in this build ({BACKEND}): {_C_LIBRARY} does not exist")
        lib = ctypes.CDLL(str(_C_LIBRARY))
        ptr, i32 = ctypes.c_void_p, ctypes.c_int
        lib.kt_ops_rmsnorm.argtypes = [ptr, ptr, ptr, i32, i32, ctypes.c_float, ptr]
        lib.kt_ops_rmsnorm.restype = i32
        lib.kt_ops_silu_and_mul.argtypes = [ptr, ptr, i32, i32, ptr]
        lib.kt_ops_silu_and_mul.restype = i32
        lib.kt_ops_error_string.argtypes = [i32]
        lib.kt_ops_error_string.restype = ctypes.c_char_p
        _c_api = lib
    return _c_api


def manifests():
    """Each op's manifest (kt_<op>.json, written by kt when the package was built) as a dict."""
    return {op: json.loads((_HERE / f"kt_{op}.json").read_text()) for op in OPS}


def _entries(node):
    """The entries of a manifest that give a shape and where its configuration came from."""
    if isinstance(node, dict):
        if "shape" in node and "origin" in node:
            yield node
        for value in node.values():
            yield from _entries(value)
    elif isinstance(node, list):
        for value in node:
            yield from _entries(value)


def origins():
    """(op, shape, origin) for every shape the build generated: origin "tuned" (measured on this
    build's GPU), "cache:user", "cache:project" or "cache:remote" (a record), "default" (the
    template's defaults: no GPU to tune on and no record)."""
    return [(op, entry["shape"], entry["origin"]) for op, m in manifests().items() for entry in _entries(m)]


def shapes(op):
    """The shapes op was generated for, as dicts such as {"rows": 16, "hidden": 4096}."""
    found = []
    for name, shape, _ in origins():
        if name == op and shape not in found:
            found.append(shape)
    return found


def untuned():
    """The (op, shape, origin) of origins() whose configuration was neither tuned nor a record."""
    return [o for o in origins() if not (o[2] == "tuned" or o[2].startswith("cache:"))]
