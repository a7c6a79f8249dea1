#!/usr/bin/env bash
# stability.sh - does kt choose the same way twice?  The 30-shape project of cold_configure.sh,
# configured twice cold on one GPU, and each pair of differing choices timed side by side.
#
# usage: bench/stability.sh KT OUTDIR
#
# Runs bench/cold_configure.sh KT OUTDIR/1 and then KT OUTDIR/2: each configure has an empty user
# cache of its own and no project cache, so every shape is tuned from nothing.  Both run on one
# GPU (CUDA_VISIBLE_DEVICES, default 0: the GPU ordinal given as KT_STABILITY_GPU).  Then, for each
# shape whose two records chose different configurations, one `kt tune --config A --config B
# --no-race` times both together, interleaved, in blocks (its final choice, docs/search.md) and
# the table shows each one's mean time and its 95% interval from that run, and the ratio of the
# first choice's time to the second's, and (seen) whether run 1's search evaluated choice 2 and
# run 2's choice 1 at all (y/n).  Last: how many shapes chose differently, how many of those pairs
# are more than 2% apart (issue 22's target: none), and at how many of those a search never
# evaluated the other run's choice (the search missed it; else the two final re-timings ranked
# the pair differently).  Each configure's own table and
# log, and each side-by-side run's output, stay in OUTDIR.
set -euo pipefail

kt=$(realpath "${1:?usage: bench/stability.sh KT OUTDIR}")
out=$(mkdir -p "${2:?usage: bench/stability.sh KT OUTDIR}" && realpath "$2")
src=$(cd "$(dirname "$0")/.." && pwd)
export CUDA_VISIBLE_DEVICES=${KT_STABILITY_GPU:-0}
limit=0.02

for run in 1 2; do
	echo "configure $run of 2 (cold, GPU $CUDA_VISIBLE_DEVICES): $out/$run"
	"$src/bench/cold_configure.sh" "$kt" "$out/$run" >"$out/$run.txt" 2>&1 || { tail -30 "$out/$run.txt"; exit 1; }
	tail -1 "$out/$run.txt"
done

# "kernel|shape<TAB>configuration" of each record of run $1, sorted for join
choices() { awk -F'\t' '{ print $3 "|" $4 "\t" $7 }' "$out/$1/records.tsv" | LC_ALL=C sort -t $'\t' -k1,1; }
# Whether run $1's search at kernel $2, shape $3 evaluated configuration $4 (a choice of the
# other run): "yes" or "no".  A pair apart where a run never evaluated the other's choice is one
# its search missed; where both did, the two runs' final re-timings ranked them differently.
evaluated() {
	local key
	key=$(awk -F'\t' -v k="$2" -v s="$3" '$3 == k && $4 == s { print $2; exit }' "$out/$1/records.tsv")
	{ "$kt" cache show "$key" --cache-dir "$out/$1/cache" 2>/dev/null || true; } | awk -v want="$4" '
		/^\t"[a-z_]+":/ { on = /^\t"evaluated":/ }
		on && /"config":/ { c = ""; inc = 1; next }
		on && inc && /}/ { found = found || c == want; inc = 0; next }
		on && inc { v = $0; gsub(/[\t ",]/, "", v); sub(/:/, "=", v); c = c (c == "" ? "" : ",") v }
		END { print (found ? "yes" : "no") }'
}
LC_ALL=C join -t $'\t' -j 1 <(choices 1) <(choices 2) >"$out/pairs.tsv"

printf '\n%-18s %-28s %10s %10s %7s %7s %7s %-7s  %s\n' kernel shape us_1 us_2 ci_1 ci_2 ratio seen "choice 1 / choice 2"
same=0 differ=0 over=0 missed=0 worst=1 i=0
while IFS=$'\t' read -r ks c1 c2; do
	name=${ks%%|*} shape=${ks#*|}
	if [[ $c1 == "$c2" ]]; then
		same=$((same + 1))
		continue
	fi
	differ=$((differ + 1)) i=$((i + 1))
	log=$out/side-by-side-$i-$name.txt
	"$kt" tune "$src/templates/$name.cu.tmpl" --type T=bfloat16 --shape "$shape" --config "$c1" --config "$c2" \
		--no-race --cache-dir "$out/ceilings" --quiet >"$log" 2>&1 || { tail "$log"; continue; }
	# the rivals timed together: "retimed US +- CI [(gap +- G)] [tie] CONFIG [<- chosen]"
	read -r u1 e1 u2 e2 < <(awk -v a="$c1" -v b="$c2" '$1 == "retimed" {
			for (i = 5; i <= NF; i++) if ($i ~ /=/) c = $i
			if (c == a) { x = $2; y = $4 } if (c == b) { z = $2; w = $4 } }
		END { print (x == "" ? "-" : x), (y == "" ? "-" : y), (z == "" ? "-" : z), (w == "" ? "-" : w) }' "$log")
	# "yes/no": whether run 1 evaluated choice 2, and run 2 choice 1
	seen="$(evaluated 1 "$name" "$shape" "$c2" | cut -c1)/$(evaluated 2 "$name" "$shape" "$c1" | cut -c1)"
	ratio=- far=0
	if [[ $u1 != - && $u2 != - ]]; then
		ratio=$(awk -v a="$u1" -v b="$u2" 'BEGIN { printf "%.4f", a / b }')
		far=$(awk -v r="$ratio" -v l="$limit" 'BEGIN { print (r > 1 + l || r < 1 / (1 + l)) }')
		over=$((over + far))
		worst=$(awk -v r="$ratio" -v w="$worst" 'BEGIN { r = r < 1 ? 1 / r : r; print (r > w ? r : w) }')
	fi
	[[ $far == 1 && $seen == *n* ]] && missed=$((missed + 1))
	printf '%-18s %-28s %10s %10s %7s %7s %7s %-7s  %s / %s\n' "$name" "$shape" "$u1" "$u2" "$e1" "$e2" "$ratio" "$seen" "$c1" "$c2"
done <"$out/pairs.tsv"
echo "shapes: $((same + differ)) with a record in both runs; the same choice at $same, different at $differ;" \
	"pairs more than 2% apart: $over (the worst $(printf '%.4f' "$worst") of slower over faster)," \
	"$missed of them where a run never evaluated the other's choice (seen: n)"
