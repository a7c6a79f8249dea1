#!/bin/sh
# Tuning throughput: configurations compiled, checked and timed per second on this machine's GPU.
#
#   bench/tune_throughput.sh KT [OUTDIR]
#
# Tunes two memory-bound shipped templates with a budget of 300 configurations each (random
# order, so the sample spans the whole space), then one whole space (exhaustive), then two
# shapes with the default search (best-first, which asks in smaller batches while results steer
# it; with --patience -1, so that it spends its budget rather than stop when it converged), each
# from an empty work directory; the GPU's ceilings are measured in the first run and kept.  On a host
# with two or more GPUs of one kind, the first and the whole-space case run again on all of them
# (one worker per GPU, `--gpu -1`).  Prints one table row per case and where the time went
# (kt tune's rate counts the search after its setup: the first compile batch, the workers, the
# references; "whole run" is the command's wall time); each run's full table, its recorded space
# and its timeline (kt tune --trace: NAME.trace.json, for Perfetto) go to OUTDIR (default: a
# temporary directory).
set -eu
kt=$1
out=${2:-$(mktemp -d)}
src=$(cd "$(dirname "$0")/.." && pwd)
mkdir -p "$out"
"$kt" tune --list-gpus | tee "$out/gpus.txt"
case $(cat "$out/gpus.txt") in "no GPU"*) echo "tune_throughput: skipped (no GPU)"; exit 0 ;; esac

run() { # NAME TEMPLATE SHAPE TYPE STRATEGY BUDGET [PATIENCE]
	name=$1 tmpl=$2 shape=$3 type=$4 strategy=$5 budget=$6 patience=${7:-0}
	"$kt" space "$src/templates/$tmpl" --shape "$shape" --type "$type" | tail -1 >"$out/$name.space.txt"
	start=$(date +%s.%N)
	"$kt" tune "$src/templates/$tmpl" --shape "$shape" --type "$type" --strategy "$strategy" --budget "$budget" --patience "$patience" --seconds 150 --seed 1 $gpu_arg \
		--cache-dir "$out/cache" --record "$out/$name.csv" --trace "$out/$name.trace.json" --quiet >"$out/$name.txt" 2>&1
	wall=$(awk -v a="$start" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')
	line=$(grep ' evaluated in ' "$out/$name.txt")
	n=$(echo "$line" | sed 's/.*: \([0-9]*\) evaluated.*/\1/')
	whole=$(awk -v n="$n" -v w="$wall" 'BEGIN { printf "%.1f s (%.1f/s)", w, n / w }')
	status=$(grep '  status:' "$out/$name.txt" | sed 's/  status: //')
	best=$(grep -- '  chosen: ' "$out/$name.txt" | sed 's/.*, \([0-9.]* us\) (\(.*\))/\1, \2/')
	printf '%-14s | %-24s | %s | %s | %s | %s | %s\n' "$name" "$shape" "$(echo "$line" | sed 's/.*: //; s/, strategy.*//')" \
		"$whole" "$status" "$best" "$(sed 's/[()]//g; s/ shown.*//' "$out/$name.space.txt")"
	grep -E '^(time|  GPUs)' "$out/$name.txt" | sed "s/^ */    $name /"
}

gpu_arg=
printf '%-14s | %-24s | %s | %s | %s | %s | %s\n' case shape "evaluated, time (rate)" "whole run (rate)" statuses best feasible
run silu_and_mul silu_and_mul.cu.tmpl tokens=4096,d=8192 T=half random 300
run rmsnorm rmsnorm.cu.tmpl rows=16384,hidden=4096 T=half random 300
run silu_all silu_and_mul.cu.tmpl tokens=4096,d=8192 T=bfloat16 exhaustive 0
run gelu_search gelu_and_mul.cu.tmpl tokens=2048,d=11008 T=bfloat16 bestfirst 232 -1
run softmax_search softmax.cu.tmpl rows=4096,cols=32768 T=bfloat16 bestfirst 150 -1
if [ "$(grep -c '^GPU [0-9]*:' "$out/gpus.txt")" -ge 2 ]; then
	gpu_arg="--gpu -1"
	run silu_2gpus silu_and_mul.cu.tmpl tokens=4096,d=8192 T=half random 300
	run silu_all_2gpus silu_and_mul.cu.tmpl tokens=4096,d=8192 T=bfloat16 exhaustive 0
fi
echo "details: $out"
