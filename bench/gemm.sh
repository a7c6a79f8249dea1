#!/usr/bin/env bash
# gemm.sh - templates/gemm_sm90.cu.tmpl tuned on this machine's GPU at its lines of
# templates/shapes.txt (Llama-3 projections at decode and prefill sizes), beside cuBLAS.
#
#   bench/gemm.sh KT OUT [SECONDS] [BUDGET] [ONLY]
#
# For each element type, `kt generate` tunes every listed shape (at most SECONDS, default 6, and
# BUDGET evaluations, default 60, per shape) into a fresh user cache under OUT, as a build
# would; the records go to OUT/records (`kt cache promote`: copy them into cache/ to commit
# them).  Then cuBLAS's best at each shape (bench/cublas_gemm.cu: cublasGemmEx and the
# algorithms cuBLASLt's heuristic proposes) and a table: kt's tuned time, TFLOP/s, cuBLAS's
# time and way, kt as a percentage of cuBLAS's speed, and for every shape the weight-read floor
# (K x N x 2 bytes over kt's measured copy bandwidth) with kt's time as a percentage of it, and
# the time of the fastest plain read of the weight's bytes, timed the same way (bench/copy_floor.cu
# MB:0: a launch that reads them and writes nothing), with kt's time as a percentage of that.
# ONLY, a regular expression, limits the shapes (e.g. 'M=(1|16|64),'); TYPES (default "half
# bfloat16") the element types.
set -euo pipefail
kt=${1:?usage: bench/gemm.sh KT OUT [SECONDS] [BUDGET] [ONLY]}
out=${2:?usage: bench/gemm.sh KT OUT [SECONDS] [BUDGET] [ONLY]}
seconds=${3:-6}
budget=${4:-60}
only=${5:-.}
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
mkdir -p "$out"
{ nvcc -O2 -arch=sm_90 -o "$out/cublas_gemm" "$root/bench/cublas_gemm.cu" -lcublasLt -lcublas &&
	nvcc -O2 -arch=sm_90 -o "$out/copy_floor" "$root/bench/copy_floor.cu"; } >"$out/build.log" 2>&1 ||
	{ echo "gemm.sh: building the benchmarks failed; see $out/build.log" >&2; exit 2; }
declare -A reads # the fastest plain read of a weight, by N,K
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1)
: >"$out/table.tsv"
for type in ${TYPES:-half bfloat16}; do
	shapes=$(awk -v t="T=$type" -v re="$only" '$1 == "gemm_sm90" && $2 == t && $3 ~ re { printf " --shape %s", $3 }' "$root/templates/shapes.txt")
	[ -n "$shapes" ] || continue
	cache=$out/cache-$type
	rm -rf "$cache" "$out/gen-$type"
	start=$(date +%s)
	# shellcheck disable=SC2086 # $shapes is a list of --shape arguments
	KT_CACHE_DIR=$cache "$kt" generate --template "$root/templates/gemm_sm90.cu.tmpl" --name gemm_sm90 --type "T=$type" \
		$shapes --arch 90a --budget "$budget" --seconds "$seconds" --out "$out/gen-$type" >"$out/generate-$type.log" 2>&1 ||
		{ echo "gemm.sh: kt generate failed; see $out/generate-$type.log" >&2; exit 2; }
	echo "$type: tuned $(echo "$shapes" | wc -w | awk '{print $1 / 2}') shapes in $(($(date +%s) - start)) s" >&2
	"$kt" cache promote --cache-dir "$cache" --to "$out/records" >/dev/null
	bw=$(find "$cache" -name '*.json' -exec grep -ho '"bw_gbs":[[:space:]]*[0-9.]*' {} + | head -1 | sed 's/.*:[[:space:]]*//')
	"$kt" cache ls --cache-dir "$cache" --tsv | awk -F'\t' '$3 == "gemm_sm90" { print $4, $6, $7 }' | while read -r shape us cfg; do
		IFS=, read -r m n k <<<"$(echo "$shape" | sed 's/[MNK]=//g')"
		read -r cub via <<<"$("$out/cublas_gemm" --type "$type" "$m" "$n" "$k" | awk '{ print $5, $8 }')"
		[ -n "${reads[$n,$k]:-}" ] || reads[$n,$k]=$("$out/copy_floor" --best "$(awk -v n="$n" -v k="$k" 'BEGIN { print n * k * 2 / 1e6 }'):0")
		printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$type" "$m" "$n" "$k" "$us" "$cub" "$via" "$bw" "$cfg" "${reads[$n,$k]}" >>"$out/table.tsv"
	done
done
{
	echo "gemm_sm90 beside cuBLAS on $gpu, $(date -u +%Y-%m-%d); times in us (kt: tuned, cold L2; cuBLAS: its best way)"
	printf '%-9s %5s %6s %6s %9s %7s %9s %-7s %8s %9s %7s %8s %6s  %s\n' type M N K kt_us TFLOP/s cublas_us way %cublas floor_us %floor read_us %read config
	sort -t$'\t' -k1,1 -k3,3n -k4,4n -k2,2n "$out/table.tsv" | awk -F'\t' '{
		tf = 2 * $2 * $3 * $4 / ($5 * 1e6); floor = $3 * $4 * 2 / ($8 * 1e3)
		printf "%-9s %5d %6d %6d %9.2f %7.1f %9.2f %-7s %7.0f%% %9.2f %6.0f%% %8.2f %5.0f%%  %s\n", $1, $2, $3, $4, $5, tf, $6, $7,
			100 * $6 / $5, floor, 100 * floor / $5, $10, 100 * $10 / $5, $9 }'
} | tee "$out/table.txt"
