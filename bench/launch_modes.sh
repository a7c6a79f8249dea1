#!/bin/sh
# Launch modes and L2 states on decode shapes: how kt's timing changes the times and the choices.
#
#   bench/launch_modes.sh KT [OUTDIR]
#
# Decode-sized shapes of two shipped templates (bf16: rmsnorm rows x 4096, silu_and_mul tokens x
# 11008, at 1, 16 and 64 rows), on this machine's GPU:
#
#   1. one fixed configuration (the template's default) timed four ways: stream launches and
#      CUDA-graph replays (--launch), each with a cold and a warm L2 (--l2); per launch, in us,
#      with the DRAM floor;
#   2. each shape tuned with a small budget (BUDGET evaluations, seed 1) with stream launches and
#      with graph replays (cold L2), and with a cold and a warm L2 (stream): the two choices, and
#      whether they differ; where they do, both timed side by side (kt tune --config A --config B)
#      in the second mode, to show what taking the first mode's choice would cost there.
#
# Every kt tune's full output goes to OUTDIR (default: a temporary directory).
set -eu
kt=$1
out=${2:-$(mktemp -d)}
src=$(cd "$(dirname "$0")/.." && pwd)
BUDGET=60
mkdir -p "$out"
"$kt" tune --list-gpus | tee "$out/gpus.txt"
case $(cat "$out/gpus.txt") in "no GPU"*) echo "launch_modes: skipped (no GPU)"; exit 0 ;; esac

# The kernels, their shapes (blank-separated) and type.
kernels="rmsnorm silu_and_mul"
shapes_rmsnorm="rows=1,hidden=4096 rows=16,hidden=4096 rows=64,hidden=4096"
shapes_silu_and_mul="tokens=1,d=11008 tokens=16,d=11008 tokens=64,d=11008"

shapes_of() { eval echo "\$shapes_$1"; }

# tune NAME KERNEL ARGS...: kt tune of KERNEL at all its shapes (one batch) into $out/NAME.txt.
tune() {
	name=$1 k=$2
	shift 2
	set -- "$@" $(for s in $(shapes_of "$k"); do printf -- '--shape %s ' "$s"; done)
	"$kt" tune "$src/templates/$k.cu.tmpl" --type T=bfloat16 --cache-dir "$out/cache" --quiet "$@" \
		>"$out/$name.txt" 2>&1 || { cat "$out/$name.txt"; echo "launch_modes: $name failed"; exit 1; }
}

# chosen NAME SHAPE [time|config|floor]: what kt tune's run NAME chose at SHAPE.
chosen() {
	awk -v shape="$2" -v what="${3:-time}" '
		/^[a-z_0-9]+ at [^:]+: [0-9]+ evaluated/ { split($3, a, ":"); cur = a[1] }
		cur == shape && /^  floor: / { floor = $2 }
		cur == shape && /^  chosen: / {
			line = substr($0, 11); i = match(line, /, [0-9.]+ us \(/)
			cfg = substr(line, 1, i - 1); t = substr(line, i + 2); sub(/ us.*/, "", t)
		}
		END { print what == "config" ? cfg : what == "floor" ? floor : t }' "$out/$1.txt"
}

# timed NAME SHAPE CONFIG: the time of CONFIG at SHAPE in run NAME's table.
timed() {
	awk -v shape="$2" -v cfg="$3" '
		/^[a-z_0-9]+ at [^:]+: [0-9]+ evaluated/ { split($3, a, ":"); cur = a[1] }
		cur == shape && $1 ~ /^[0-9]+$/ && $6 == cfg { print $2; exit }' "$out/$1.txt"
}

default_of() {
	"$kt" check "$src/templates/$1.cu.tmpl" --type T=bfloat16 --shape "$2" |
		sed -n 's/.* default (\([^)]*\)) is feasible.*/\1/p'
}

echo
echo "1. the default configuration, us per launch (bf16)"
printf '%-13s | %-20s | %12s | %12s | %12s | %12s | %8s\n' kernel shape "stream cold" "stream warm" "graph cold" \
	"graph warm" floor
for k in $kernels; do
	cfg=$(default_of "$k" "$(shapes_of "$k" | cut -d' ' -f1)")
	for l in stream graph; do
		for c in cold warm; do
			tune "fixed-$k-$l-$c" "$k" --config "$cfg" --launch $l --l2 $c
		done
	done
	for s in $(shapes_of "$k"); do
		printf '%-13s | %-20s | %12s | %12s | %12s | %12s | %8s\n' "$k" "$s" "$(chosen "fixed-$k-stream-cold" "$s")" \
			"$(chosen "fixed-$k-stream-warm" "$s")" "$(chosen "fixed-$k-graph-cold" "$s")" \
			"$(chosen "fixed-$k-graph-warm" "$s")" "$(chosen "fixed-$k-stream-cold" "$s" floor)"
	done
done

# compare K A B ARGS_A -- ARGS_B: tunes K both ways; one row per shape: each choice, and where they
# differ, both timed in B's mode.
compare() {
	k=$1 a=$2 b=$3
	shift 3
	args_a="" args_b=""
	while [ "$1" != "--" ]; do args_a="$args_a $1"; shift; done
	shift
	args_b="$*"
	tune "tuned-$k-$a" "$k" --budget $BUDGET --seed 1 $args_a
	tune "tuned-$k-$b" "$k" --budget $BUDGET --seed 1 $args_b
	for s in $(shapes_of "$k"); do
		ca=$(chosen "tuned-$k-$a" "$s" config) cb=$(chosen "tuned-$k-$b" "$s" config)
		same=yes cross=-
		if [ "$ca" != "$cb" ]; then
			same=no
			"$kt" tune "$src/templates/$k.cu.tmpl" --type T=bfloat16 --shape "$s" --cache-dir "$out/cache" --quiet \
				--config "$ca" --config "$cb" $args_b >"$out/cross-$k-$a-$b-$s.txt" 2>&1
			ta=$(timed "cross-$k-$a-$b-$s" "$s" "$ca") tb=$(timed "cross-$k-$a-$b-$s" "$s" "$cb")
			cross=$(awk -v x="$ta" -v y="$tb" 'BEGIN { if (x == "" || y == "") print "?"; else printf "%s vs %s us (%+.1f%%)", x, y, 100 * (x - y) / y }')
		fi
		printf '%-13s | %-20s | %-6s | %s us: %s\n%-13s | %-20s | %-6s | %s us: %s\n%-13s | %-20s | same: %-3s | %s\n' \
			"$k" "$s" "$a" "$(chosen "tuned-$k-$a" "$s")" "$ca" "" "" "$b" "$(chosen "tuned-$k-$b" "$s")" "$cb" \
			"" "" "$same" "${a}'s choice vs ${b}'s, timed $b: $cross"
	done
}

echo
echo "2. tuned with a budget of $BUDGET: stream launches against graph replays (cold L2)"
for k in $kernels; do
	compare "$k" stream graph --launch stream -- --launch graph
done
echo
echo "3. tuned with a budget of $BUDGET: a cold L2 against a warm one (stream launches)"
for k in $kernels; do
	compare "$k" cold warm --l2 cold -- --l2 warm
done
echo "details: $out"
