"""Checks the installed kt_ops of the wheel built without torch (wheel.sh): it is the C API, whose
library ctypes loads with its three functions, and its manifests give every shape the NVIDIA
H200's committed record (cache:project).  Exit status 1 on the first failed check."""
import sys

import kt_ops


def check(ok, what):
    print(f"check_wheel: {'ok' if ok else 'FAIL'}: {what}")
    if not ok:
        sys.exit(1)


check(kt_ops.BACKEND == "c", f"the backend is the C API (it is {kt_ops.BACKEND})")
lib = kt_ops.c_api()
for name in ("kt_ops_rmsnorm", "kt_ops_silu_and_mul", "kt_ops_error_string"):
    check(hasattr(lib, name), f"{name} is in {lib._name}")
check(lib.kt_ops_error_string(0) == b"no error", "kt_ops_error_string(0) is the CUDA runtime's")
origins = kt_ops.origins()
for op, count in (("rmsnorm", 8), ("silu_and_mul", 6)):
    check(len(kt_ops.shapes(op)) == count, f"{op}: {count} shapes in the manifest ({kt_ops.shapes(op)})")
others = [o for o in origins if o[2] != "cache:project"]
check(not others, f"every shape's configuration is a committed record (cache:project), not: {others}")
