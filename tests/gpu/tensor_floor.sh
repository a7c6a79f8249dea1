#!/bin/sh
# GPU test of the tensor-core ceiling: tensor_floor.sh KT SOURCE_DIR WORK_DIR
# templates/gemm.cu.tmpl declares `flops tensor`: its floor comes from the mma.sync probe (kt_mma),
# kept per GPU as tensor_gflops, printed as "tensor R GFLOP/s", and no mma.sync gemm beats it.
# Exits 77 (ctest's SKIP_RETURN_CODE) with the reason when kt finds no GPU.
set -u
kt=$1 src=$2 work=$3
. "$(dirname "$0")/common.sh"
gpu_start "$kt" "$work"

"$kt" tune "$src/templates/gemm.cu.tmpl" --type T=half --shape M=4096,N=4096,K=4096 --budget 6 --seed 3 \
	--cache-dir "$work/cache" >"$work/out.txt" 2>&1
rc=$?
cat "$work/out.txt"
[ $rc -eq 0 ] || fail "kt tune exited with $rc"
grep -Eq '^  floor: [0-9.]+ us \(copy [0-9]+ GB/s, tensor [1-9][0-9]* GFLOP/s\)$' "$work/out.txt" ||
	fail "the floor does not name a measured tensor rate"
ceilings=$(ls "$work"/cache/v*/ceilings/*.json 2>/dev/null | head -1)
[ -n "$ceilings" ] || fail "the GPU's ceilings were not kept"
grep -q '"tensor_gflops"' "$ceilings" || fail "the tensor rate was not kept"
! grep -q '"gflops"' "$ceilings" || fail "the fp32 FMA rate was measured for a tensor template"
pct=$(sed -n 's/^  chosen: .*(\([0-9]*\)% of floor)$/\1/p' "$work/out.txt")
[ -n "$pct" ] || fail "no chosen configuration with a percentage of the floor"
[ "$pct" -le 103 ] || fail "an mma.sync gemm at $pct% of the mma.sync floor: the probe is too slow"
echo PASS
