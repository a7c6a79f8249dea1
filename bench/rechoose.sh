#!/bin/sh
# Is the tuner's choice as good as the whole space's best?  For each case: tune the whole feasible
# space (exhaustive), tune again with the default strategy on a quarter of the space's
# evaluations, then re-measure both choices together in a separate run (`kt tune --config`, the
# final interleaved re-timing) and say whether the search's choice is within the measured noise
# of the exhaustive best.
#
#   bench/rechoose.sh KT [OUTDIR [CASE...]]
#
# CASE: silu, gelu, merge or transpose (default: all four).
set -eu
kt=$1
out=${2:-$(mktemp -d)}
shift $(($# < 2 ? $# : 2))
cases=${*:-silu gelu merge transpose}
src=$(cd "$(dirname "$0")/.." && pwd)
mkdir -p "$out"
case $("$kt" tune --list-gpus) in "no GPU"*) echo "rechoose: skipped (no GPU)"; exit 0 ;; esac

# The median and spread that run file $1 shows for configuration $2 (its row of the result table).
row() { awk -v c="$2" '$6 == c { print $2, $3; exit }' "$1"; }
chosen() { sed -n 's/^  chosen: \([^ ]*\), .*/\1/p' "$1"; }

printf '%-18s | %-26s | %-9s | %-58s | %-58s | %-17s | %-17s | %s\n' kernel shape evals "exhaustive best" "search's choice" \
	"best: us (spread)" "choice: us (spread)" verdict
case1() { # NAME TEMPLATE TYPE SHAPE
	name=$1 tmpl=$src/templates/$2.cu.tmpl type=$3 shape=$4
	feasible=$("$kt" space "$tmpl" --type "$type" --shape "$shape" | tail -1 | sed 's/^(\([0-9]*\) of.*/\1/')
	budget=$((feasible / 4))
	common="--type $type --shape $shape --cache-dir $out/cache --quiet --top 1000"
	"$kt" tune "$tmpl" $common --strategy exhaustive --seed 1 >"$out/$name.exhaustive.txt" 2>&1
	"$kt" tune "$tmpl" $common --budget "$budget" --seed 2 >"$out/$name.search.txt" 2>&1
	best=$(chosen "$out/$name.exhaustive.txt") pick=$(chosen "$out/$name.search.txt")
	"$kt" tune "$tmpl" $common --config "$best" --config "$pick" --seed 3 >"$out/$name.remeasure.txt" 2>&1
	bt=$(row "$out/$name.remeasure.txt" "$best") pt=$(row "$out/$name.remeasure.txt" "$pick")
	verdict=$(echo "$bt $pt" | awk '{ b = $1; sb = $2; p = $3; sp = $4
		n = sb > sp ? sb : sp; d = p - b
		if (d <= n) printf "within noise (%+.2f us, noise %.2f)", d, n; else printf "SLOWER by %.2f us (noise %.2f)", d, n }')
	evals=$(sed -n 's/.*: \([0-9]*\) evaluated in.*/\1/p' "$out/$name.search.txt")
	printf '%-18s | %-26s | %4s/%-4s | %-58s | %-58s | %8s (%5s) | %8s (%5s) | %s\n' "$2" "$shape" "$evals" "$feasible" \
		"$best" "$pick" ${bt% *} ${bt#* } ${pt% *} ${pt#* } "$verdict"
}
for c in $cases; do
	case $c in
	silu) case1 silu silu_and_mul T=bfloat16 tokens=4096,d=8192 ;;
	gelu) case1 gelu gelu_and_mul T=bfloat16 tokens=2048,d=11008 ;;
	merge) case1 merge merge_attn_states T=bfloat16 tokens=4096,heads=32,dim=128 ;;
	transpose) case1 transpose transpose T=bfloat16 rows=8192,cols=8192 ;;
	*) echo "rechoose: unknown case '$c' (silu, gelu, merge, transpose)" >&2; exit 1 ;;
	esac
done
echo "details: $out"
