#!/bin/sh
# GPU tests of how variants are timed (generator/measure.h): measure.sh CASE KT SOURCE_DIR WORK_DIR
#
#   l2_cold  shapes whose buffers fit in the L2 (rmsnorm and fused_add_rmsnorm, 2048 x 4096 bf16:
#            32 MB), tuned with the default cold L2: the chosen time is at or above the DRAM floor
#            (at most MAX_PCT% of it, for the noise of the copy bandwidth the floor is made of), and
#            the chosen configuration timed with --l2 warm is faster (the shape does fit in the L2:
#            the setting reached the GPU)
#   graph    decode shapes (rmsnorm 16 x 4096, silu_and_mul 16 x 4096, bf16) at their default
#            configuration, timed as CUDA-graph replays and as stream launches: both run, and the
#            time per launch of the replays is below the stream's
#
# Exits 77 (ctest's SKIP_RETURN_CODE) with the reason when kt finds no GPU.
set -u
case_=$1 kt=$2 src=$3 work=$4
MAX_PCT=102
. "$(dirname "$0")/common.sh"
gpu_start "$kt" "$work"

# tune NAME TEMPLATE SHAPE ARGS...: kt tune of bf16 TEMPLATE at SHAPE into $work/NAME.txt, shown.
tune() {
	name=$1 tmpl=$2 shape=$3
	shift 3
	"$kt" tune "$src/templates/$tmpl.cu.tmpl" --type T=bfloat16 --shape "$shape" --cache-dir "$work/cache" \
		--quiet "$@" >"$work/$name.txt" 2>&1
	rc=$?
	cat "$work/$name.txt"
	[ $rc -eq 0 ] || fail "$name: kt tune exited with $rc"
}
chosen_us() { sed -n 's/^  chosen: .*, \([0-9.]*\) us (.*$/\1/p' "$work/$1.txt"; }
chosen_cfg() { sed -n 's/^  chosen: \(.*\), [0-9.]* us (.*$/\1/p' "$work/$1.txt"; }
chosen_pct() { sed -n 's/^  chosen: .*(\([0-9]*\)% of floor)$/\1/p' "$work/$1.txt"; }
default_cfg() {
	"$kt" check "$src/templates/$1.cu.tmpl" --type T=bfloat16 --shape "$2" |
		sed -n 's/.* default (\([^)]*\)) is feasible.*/\1/p'
}
below() { awk -v a="$1" -v b="$2" 'BEGIN { exit !(a + 0 < b + 0) }'; }

case $case_ in
l2_cold)
	for tmpl in rmsnorm fused_add_rmsnorm; do
		shape=rows=2048,hidden=4096
		tune "$tmpl-cold" $tmpl $shape --budget 40 --seed 1
		grep -q '^  timed: cold L2, stream launches$' "$work/$tmpl-cold.txt" || fail "$tmpl: not timed with a cold L2"
		pct=$(chosen_pct "$tmpl-cold") cfg=$(chosen_cfg "$tmpl-cold") cold=$(chosen_us "$tmpl-cold")
		[ -n "$pct" ] && [ -n "$cfg" ] || fail "$tmpl: no chosen configuration with a share of the floor"
		[ "$pct" -le $MAX_PCT ] || fail "$tmpl $shape: $pct% of the DRAM floor with a cold L2"
		! grep -q 'under the DRAM floor' "$work/$tmpl-cold.txt" || fail "$tmpl: a time under the DRAM floor"
		tune "$tmpl-warm" $tmpl $shape --config "$cfg" --l2 warm
		warm=$(chosen_us "$tmpl-warm")
		[ -n "$warm" ] && below "$warm" "$cold" || fail "$tmpl: warm $warm us is not below cold $cold us"
		echo "$tmpl $shape $cfg: cold $cold us ($pct% of the floor), warm $warm us"
	done
	;;
graph)
	for ts in rmsnorm:rows=16,hidden=4096 silu_and_mul:tokens=16,d=4096; do
		tmpl=${ts%%:*} shape=${ts#*:}
		cfg=$(default_cfg $tmpl $shape)
		[ -n "$cfg" ] || fail "$tmpl: no default configuration from kt check"
		tune "$tmpl-stream" $tmpl $shape --config "$cfg"
		tune "$tmpl-graph" $tmpl $shape --config "$cfg" --launch graph
		grep -q '^  timed: cold L2, CUDA-graph replays$' "$work/$tmpl-graph.txt" || fail "$tmpl: not timed as graph replays"
		stream=$(chosen_us "$tmpl-stream") graph=$(chosen_us "$tmpl-graph")
		[ -n "$stream" ] && [ -n "$graph" ] || fail "$tmpl: no time in one of the modes"
		below "$graph" "$stream" || fail "$tmpl $shape: graph replays $graph us per launch, not below stream $stream us"
		echo "$tmpl $shape $cfg: stream $stream us, graph $graph us per launch"
	done
	;;
*) fail "unknown case $case_" ;;
esac
echo PASS
