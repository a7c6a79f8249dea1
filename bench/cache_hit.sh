#!/usr/bin/env bash
# cache_hit.sh - how long a configure-time `kt generate` takes when every shape hits the cache.
#
# usage: bench/cache_hit.sh BUILD_DIR [RUNS]
#
# BUILD_DIR is a kt build tree with the tests built (it needs `kt` and `tests/cache/cache_driver`,
# which seeds the cache as the tuner would).  For one kernel (templates/rmsnorm.cu.tmpl) and 1, 4
# and 8 shapes it times RUNS (default 31) runs of `kt generate` against a warm user cache, and for
# comparison the same with an empty cache (every shape a miss: template defaults, no GPU), and
# prints the median, minimum and maximum in milliseconds.  Target (issue 3): a hit adds at most
# 20 ms per tuned kernel.  Times use bash's EPOCHREALTIME, so the timer itself forks nothing.
set -euo pipefail

build=${1:?usage: bench/cache_hit.sh BUILD_DIR [RUNS]}
runs=${2:-31}
here=$(cd "$(dirname "$0")/.." && pwd)
kt=$build/generator/kt
driver=$build/tests/cache/cache_driver
template=$here/templates/rmsnorm.cu.tmpl
[[ -x $kt && -x $driver ]] || { echo "cache_hit.sh: build kt and cache_driver in $build first" >&2; exit 1; }
nvcc=${CUDACXX:-$(command -v nvcc || true)}
[[ -n $nvcc ]] || { echo "cache_hit.sh: no nvcc in PATH (set CUDACXX)" >&2; exit 1; }

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
shapes=(rows=4096,hidden=4096 rows=1024,hidden=8192 rows=16384,hidden=2048 rows=8,hidden=4096
        rows=128,hidden=5120 rows=2048,hidden=7168 rows=32,hidden=8192 rows=65536,hidden=1024)
export KT_DRIVER_NVCC=$nvcc KT_DRIVER_ARCH=90 KT_DRIVER_FLAGS=-O3 KT_DRIVER_GPU="NVIDIA H200"
unset KT_REMOTE_CACHE KT_RETUNE KT_REQUIRE_CACHE_HIT KT_GPU

# Seed the warm cache: one record per shape, as a GPU machine's tuning would leave it.
KT_CACHE_DIR=$work/warm
export KT_CACHE_DIR
for s in "${shapes[@]}"; do
	"$driver" store "$template" "$s" default >/dev/null
done
unset KT_CACHE_DIR

# time_ms CACHE_DIR NSHAPES EXTRA...: prints "median min max" over $runs runs.
time_ms() {
	local dir=$1 n=$2
	shift 2
	local args=() t0 t1 i
	for ((i = 0; i < n; i++)); do args+=(--shape "${shapes[i]}"); done
	local -a ms=()
	for ((i = 0; i < runs; i++)); do
		t0=$EPOCHREALTIME
		"$kt" generate --template "$template" --name rmsnorm --out "$work/out" --nvcc "$nvcc" \
			--arch 90 --flags -O3 --cache-dir "$dir" --quiet "${args[@]}" "$@" >/dev/null
		t1=$EPOCHREALTIME
		ms+=("$(( (${t1/./} - ${t0/./}) ))")
	done
	printf '%s\n' "${ms[@]}" | sort -n | awk '{ v[NR] = $1 } END { printf "%8.2f %8.2f %8.2f", v[int((NR + 1) / 2)] / 1000, v[1] / 1000, v[NR] / 1000 }'
}

printf '%-28s %6s %8s %8s %8s\n' "case" "shapes" "median" "min" "max"
for n in 1 4 8; do
	printf '%-28s %6d %s\n' "warm hit (--gpu H200)" "$n" "$(time_ms "$work/warm" "$n" --gpu "NVIDIA H200" --require-hit --read-only)"
	printf '%-28s %6d %s\n' "no cache (defaults)" "$n" "$(time_ms "$work/empty" "$n")"
done
echo "(milliseconds per kt generate run, median of $runs runs; $(nproc) CPUs)"
