#!/bin/bash
# GPU check of the template library in one command (for a lent GPU machine): builds kt and the
# ref_check programs, runs the `gpu` tests of tests/templates that compare each configuration
# with a CPU double-precision reference, then times a few configurations of each template at
# the benchmark shapes with ref_check --time (kernel, naive, floor).
#   tests/templates/gpu_run.sh [BUILD_DIR] [LOG_DIR]
# Exit status: non-zero when a check failed.
set -uo pipefail
src=$(cd "$(dirname "$0")/../.." && pwd)
build=${1:-/tmp/kt-gpu-build}
logs=${2:-$build/logs}
mkdir -p "$logs"
cmake -S "$src" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release >"$logs/configure.log" 2>&1 || { tail -30 "$logs/configure.log"; exit 2; }
# kt and this suite's programs only: the rest of the tree is not needed here
targets=$(ninja -C "$build" -t targets all | sed -n 's/^\(ref_check_[A-Za-z0-9_]*\): phony$/\1/p')
cmake --build "$build" -j "$(nproc)" --target kt $targets >"$logs/build.log" 2>&1 || { grep -E "error|FAILED" "$logs/build.log" | head -30; exit 2; }
rc=0
ctest --test-dir "$build" -L gpu -R '^templates\.ref\.' -j 4 --output-on-failure >"$logs/ref.log" 2>&1 || rc=1
grep -E "tests passed|Failed|\*\*\*" "$logs/ref.log" | tail -15

# time: template, configuration number (as in tests/templates/CMakeLists.txt), shapes
bin=$build/tests/templates
timed() {
	local name=$1 n=$2
	shift 2
	echo "== $name config $n (bfloat16)"
	"$bin/ref_check_${name}_${n}_bfloat16" --time "$@" | grep -E "configuration|time|FAIL"
}
{
	timed rmsnorm 1 16384,4096 16384,8192 2048,8192 1,4096
	timed rmsnorm 2 16384,4096 16384,8192 2048,8192 1,4096
	timed rmsnorm 4 16384,4096 1,4096
	timed fused_add_rmsnorm 6 16384,4096 16384,8192
	timed fused_add_rmsnorm 7 16384,4096 16384,8192
	timed silu_and_mul 10 8192,14336 2048,11008 1,11008
	timed silu_and_mul 11 8192,14336 2048,11008 1,11008
	timed gelu_and_mul 14 8192,14336 2048,11008
	timed gelu_and_mul 15 8192,14336 2048,11008
	timed merge_attn_states 17 16384,32,128 4096,32,128
	timed merge_attn_states 18 16384,32,128 4096,32,128
	timed merge_attn_states 50 16384,32,128 4096,32,128 # 18 with LSE=base2
	timed softmax 20 4096,32768 4096,1024
	timed softmax 21 4096,32768 4096,1024
	timed softmax 35 4096,32768
	timed transpose 25 8192,8192
	timed transpose 26 8192,8192
	timed transpose 27 8192,8192
	timed transpose 33 8192,8192
	timed transpose 34 8192,8192
	timed gemm 29 4096,4096,4096
	timed gemm 30 4096,4096,4096
	timed gemm 32 4096,4096,4096
} 2>&1 | tee "$logs/time.log"
grep -q FAIL "$logs/time.log" && rc=1
exit $rc
