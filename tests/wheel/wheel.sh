#!/bin/sh
# wheel.sh EXAMPLE WORK NVCC: builds the wheel of the PyTorch extension example EXAMPLE without
# torch and without a GPU, as CI would, and checks it (see CMakeLists.txt).  Everything it makes
# is in WORK: the venv, pip's cache, the build directory, the wheel.  Prints "wheel-test:
# skipped: <why>" when this machine cannot build it.
set -u
example=$1 work=$2 nvcc=$3
here=$(cd "$(dirname "$0")" && pwd)
say() { echo "wheel-test: $*"; }
skip() { say "skipped: $*"; exit 0; }
fail() { say "FAIL: $*"; exit 1; }
# show LOG: a step's whole output, when it failed.
show() { echo "---- $1 ----"; cat "$1"; echo "----"; }

[ -n "$nvcc" ] && [ -x "$nvcc" ] || skip "no CUDA compiler (nvcc) was found when kt was configured"
export PYTHONUNBUFFERED=1 PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_CACHE_DIR="$work/pip-cache"
rm -rf "$work" && mkdir -p "$work" || fail "cannot make $work"

say "python3 -m venv $work/venv"
python3 -m venv "$work/venv" >"$work/venv.log" 2>&1 || { show "$work/venv.log"; skip "python3 -m venv failed (Debian: python3-venv)"; }
pip="$work/venv/bin/pip" py="$work/venv/bin/python"
say "pip install scikit-build-core"
"$pip" install --retries 2 --timeout 30 'scikit-build-core>=0.10' >"$work/pip-install.log" 2>&1 ||
	{ show "$work/pip-install.log"; skip "pip could not install scikit-build-core from PyPI (no network?)"; }

# The wheel, for the GPU of kt's committed records: every shape must be a hit there.  A user
# cache of its own, so that the hits are the project's records.
say "pip wheel --no-build-isolation $example (KT_GPU=NVIDIA H200, KT_REQUIRE_CACHE_HIT=ON)"
CUDACXX="$nvcc" KT_CACHE_DIR="$work/user-cache" "$pip" wheel --no-build-isolation --no-deps -v \
	-w "$work/dist" --config-settings=build-dir="$work/build" \
	--config-settings=cmake.define.KT_GPU="NVIDIA H200" --config-settings=cmake.define.KT_REQUIRE_CACHE_HIT=ON \
	"$example" >"$work/wheel.log" 2>&1 || { show "$work/wheel.log"; fail "pip wheel failed"; }
grep -E '(-- )?kt(_ops)?: ' "$work/wheel.log"
grep -q 'kt_ops: Torch not found.*building the C API only' "$work/wheel.log" ||
	{ show "$work/wheel.log"; fail "the configure did not say that it builds the C API without Torch"; }

set -- "$work"/dist/kt_ops-*.whl
[ $# -eq 1 ] && [ -f "$1" ] || fail "expected one wheel kt_ops-*.whl in $work/dist: $*"
whl=$1
"$py" -m zipfile -l "$whl" >"$work/contents.txt" || fail "cannot list $whl"
cat "$work/contents.txt"
for f in kt_ops/__init__.py kt_ops/libkt_ops_c.so kt_ops/kt_rmsnorm.json kt_ops/kt_silu_and_mul.json; do
	grep -q "^$f " "$work/contents.txt" || fail "the wheel holds no $f"
done
! grep -q "libkt_ops_torch" "$work/contents.txt" || fail "the wheel built without torch holds the torch library"

# Installed, the package loads the C API with ctypes and reads its manifests.
"$pip" install --no-deps --no-index --target "$work/site" "$whl" >"$work/install.log" 2>&1 ||
	{ show "$work/install.log"; fail "pip install of the wheel failed"; }
PYTHONPATH="$work/site" "$py" "$here/check_wheel.py" || fail "check_wheel.py"
say "passed"
