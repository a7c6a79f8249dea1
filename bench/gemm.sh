#!/usr/bin/env bash
# gemm.sh - templates/gemm_sm90.cu.tmpl tuned on this machine's GPU at its lines of
# templates/shapes.txt (Llama-3 projections at decode and prefill sizes), beside cuBLAS.
#
#   bench/gemm.sh KT OUT [SECONDS] [BUDGET] [ONLY]
#
# For each element type, `kt generate` tunes every listed shape (at most SECONDS, default 6, and
# BUDGET evaluations, default 60, per shape) into a fresh user cache under OUT, as a build
# would; the records go to OUT/records (`kt cache promote`: copy them into cache/ to commit
# them).  With RECORDS=DIR (e.g. the repository's cache/), nothing is tuned: the records come
# from that project cache, and a missing one is an error.  Then bench/gemm_side.cu, built with
# the generated launcher, times kt's choice and cuBLAS's best way (cublasGemmEx and the
# algorithms cuBLASLt's heuristic proposes) side by side in one process: alternating, after a
# second of both under load, each launch after kt's cold-L2 flush.  A table: kt's time, TFLOP/s,
# cuBLAS's time and way, kt as a percentage of cuBLAS's speed, kt's record time (the re-timed
# time under load; records written before that existed hold the search's time, for a long
# tensor-core kernel one at the boost clock), and for every shape the weight-read floor (K x N x
# 2 bytes over kt's measured copy bandwidth) with kt's time as a percentage of it, and the time
# of the fastest plain read of the weight's bytes (bench/copy_floor.cu MB:0: a launch that reads
# them and writes nothing), with kt's time as a percentage of that.
# ONLY, a regular expression, limits the shapes (e.g. 'M=(1|16|64),'); TYPES (default "half
# bfloat16") the element types.  SEEDS=DIR (e.g. cache/) is a project cache read as a build
# reads it: its records of this GPU are used, the other GPUs' seed the searches of the misses.
set -euo pipefail
kt=${1:?usage: bench/gemm.sh KT OUT [SECONDS] [BUDGET] [ONLY]}
out=${2:?usage: bench/gemm.sh KT OUT [SECONDS] [BUDGET] [ONLY]}
seconds=${3:-6}
budget=${4:-60}
only=${5:-.}
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
mkdir -p "$out"
nvcc -O2 -arch=sm_90 -o "$out/copy_floor" "$root/bench/copy_floor.cu" >"$out/build.log" 2>&1 ||
	{ echo "gemm.sh: building the benchmarks failed; see $out/build.log" >&2; exit 2; }
declare -A reads # the fastest plain read of a weight, by N,K
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1 || true)
: >"$out/table.tsv"
for type in ${TYPES:-half bfloat16}; do
	shapes=$(awk -v t="T=$type" -v re="$only" '$1 == "gemm_sm90" && $2 == t && $3 ~ re { printf " --shape %s", $3 }' "$root/templates/shapes.txt")
	[ -n "$shapes" ] || continue
	cache=$out/cache-$type gen=$out/gen-$type
	rm -rf "$cache" "$gen"
	start=$(date +%s)
	if [ -n "${RECORDS:-}" ]; then
		project=(--project-cache "$RECORDS")
		export KT_REQUIRE_CACHE_HIT=1
	elif [ -n "${SEEDS:-}" ]; then
		project=(--project-cache "$SEEDS")
	else
		project=()
	fi
	# shellcheck disable=SC2086 # $shapes is a list of --shape arguments
	KT_CACHE_DIR=$cache "$kt" generate --template "$root/templates/gemm_sm90.cu.tmpl" --name gemm_sm90 --type "T=$type" \
		$shapes --arch 90a --budget "$budget" --seconds "$seconds" "${project[@]}" --out "$gen" >"$out/generate-$type.log" 2>&1 ||
		{ echo "gemm.sh: kt generate failed; see $out/generate-$type.log" >&2; exit 2; }
	echo "$type: generated $(echo "$shapes" | wc -w | awk '{print $1 / 2}') shapes in $(($(date +%s) - start)) s" >&2
	[ -n "${RECORDS:-}" ] || "$kt" cache promote --cache-dir "$cache" --to "$out/records" >/dev/null
	mkdir -p "$gen/obj"
	{ printf '%s\n' "$root/bench/gemm_side.cu" "$gen"/*.cu |
		xargs -P "$(nproc)" -I{} sh -c 'nvcc -O2 -gencode=arch=compute_90a,code=sm_90a -I"$1" -c "$2" -o "$1/obj/$(basename "$2" .cu).o"' \
			_ "$gen" {} &&
		nvcc -gencode=arch=compute_90a,code=sm_90a -o "$out/gemm_side-$type" "$gen"/obj/*.o -lcublasLt -lcublas; } \
		>"$out/build-$type.log" 2>&1 || { echo "gemm.sh: building gemm_side failed; see $out/build-$type.log" >&2; exit 2; }
	# The records the launcher was generated from (the manifest's keys): time, configuration, bandwidth.
	grep -o '"key":[[:space:]]*"[0-9a-f]*"' "$gen/kt_gemm_sm90.json" | sed 's/.*"\([0-9a-f]*\)"/\1/' >"$out/keys-$type"
	"$kt" cache ls --cache-dir "$cache" "${project[@]}" --tsv |
		awk -F'\t' 'NR == FNR { want[$1] = 1; next } $3 == "gemm_sm90" && want[$2] && !seen[$2]++ { print $4, $6, $7, $2 }' \
			"$out/keys-$type" - >"$out/records-$type"
	dims=$(awk '{ gsub(/[MNK]=/, "", $1); gsub(/,/, " ", $1); print $1 }' "$out/records-$type")
	# shellcheck disable=SC2086 # $dims is a list of M N K
	"$out/gemm_side-$type" --type "$type" $dims >"$out/side-$type.txt" ||
		{ echo "gemm.sh: gemm_side failed; see $out/side-$type.txt" >&2; exit 2; }
	while read -r shape rec cfg key; do
		IFS=, read -r m n k <<<"$(echo "$shape" | sed 's/[MNK]=//g')"
		read -r us cub via <<<"$(awk -v m="$m" -v n="$n" -v k="$k" '$2 == m && $3 == n && $4 == k { print $5, $6, $8 }' "$out/side-$type.txt")"
		rec_file=$(find "$cache" ${RECORDS:+"$RECORDS"} ${SEEDS:+"$SEEDS"} -name "$key.json" | head -1)
		bw=$(grep -ho '"bw_gbs":[[:space:]]*[0-9.]*' "$rec_file" | head -1 | sed 's/.*:[[:space:]]*//')
		[ -n "${reads[$n,$k]:-}" ] || reads[$n,$k]=$("$out/copy_floor" --best "$(awk -v n="$n" -v k="$k" 'BEGIN { print n * k * 2 / 1e6 }'):0")
		printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$type" "$m" "$n" "$k" "$us" "$cub" "$via" "$bw" "$cfg" "${reads[$n,$k]}" "$rec" >>"$out/table.tsv"
	done <"$out/records-$type"
done
{
	echo "gemm_sm90 beside cuBLAS on $gpu, $(date -u +%Y-%m-%d); times in us, side by side (bench/gemm_side.cu): kt's" \
		"tuned choice and cuBLAS's best way, cold L2, under load; rec_us: kt's record"
	printf '%-9s %5s %6s %6s %9s %7s %9s %-7s %8s %9s %9s %7s %8s %6s  %s\n' type M N K kt_us TFLOP/s cublas_us way %cublas rec_us \
		floor_us %floor read_us %read config
	sort -t$'\t' -k1,1 -k3,3n -k4,4n -k2,2n "$out/table.tsv" | awk -F'\t' '{
		tf = 2 * $2 * $3 * $4 / ($5 * 1e6); floor = $3 * $4 * 2 / ($8 * 1e3)
		printf "%-9s %5d %6d %6d %9.2f %7.1f %9.2f %-7s %7.0f%% %9.2f %9.2f %6.0f%% %8.2f %5.0f%%  %s\n", $1, $2, $3, $4, $5, tf, $6, $7,
			100 * $6 / $5, $11, floor, 100 * floor / $5, $10, 100 * $10 / $5, $9 }'
} | tee "$out/table.txt"
