#!/usr/bin/env bash
# suite_anywhere.sh - the whole non-GPU suite, from a deep build directory, on a loaded machine.
#
# usage: bench/suite_anywhere.sh [RUNS] [JOBS] [HOGS]
#
# Clones this repository's HEAD into /tmp/ppp.../src and builds it in /tmp/ppp.../build, a build
# directory whose path is exactly 200 characters (CI workspaces nest deep: a checkout named by a
# 40-hex commit under a job's directory); then starts HOGS busy loops (default 4) and runs
# `ctest -LE gpu -jJOBS` (default -j4) RUNS times (default 3), printing per run the tests passed,
# failed and skipped, and its wall time.  Target (issue 22): every run passes, every test passed
# or skipped saying why.  The build is not loaded, only the test runs.  The busy loops are stopped
# at the end; the directory is removed unless a run failed (its logs are there, run<N>.log) or
# KEEP=1.
set -euo pipefail

runs=${1:-3}
jobs=${2:-4}
hogs=${3:-4}
here=$(cd "$(dirname "$0")/.." && pwd)
BUILD_PATH_LENGTH=200
top=/tmp/$(printf 'p%.0s' $(seq $((BUILD_PATH_LENGTH - 11))))  # + "/tmp/" + "/build" = 200
build=$top/build
[[ ${#build} -eq $BUILD_PATH_LENGTH ]] || { echo "suite_anywhere.sh: $build is not $BUILD_PATH_LENGTH long" >&2; exit 2; }

hog_pids=()
keep=${KEEP:-0}
stop() {
	for pid in "${hog_pids[@]}"; do kill "$pid" 2>/dev/null || true; done
	[[ $keep == 1 ]] && echo "kept: $top" || rm -rf "$top"
}
trap stop EXIT

rm -rf "$top"
mkdir -p "$top"
git clone --quiet "$here" "$top/src"
echo "source $top/src at $(git -C "$top/src" rev-parse --short HEAD); build directory ${#build} characters"
cmake -S "$top/src" -B "$build" -G Ninja > "$top/configure.log" 2>&1 || { cat "$top/configure.log"; exit 1; }
cmake --build "$build" > "$top/build.log" 2>&1 || { tail -50 "$top/build.log"; exit 1; }

for ((i = 0; i < hogs; i++)); do
	(while :; do :; done) &
	hog_pids+=($!)
done
echo "$hogs busy loops on $(nproc) cores; ctest -LE gpu -j$jobs, $runs runs"

failed_runs=0
for ((r = 1; r <= runs; r++)); do
	log=$top/run$r.log
	t0=$EPOCHREALTIME
	rc=0
	ctest --test-dir "$build" -LE gpu -j"$jobs" --output-on-failure > "$log" 2>&1 || rc=$?
	t1=$EPOCHREALTIME
	summary=$(grep -E '^[0-9]+% tests passed' "$log" || echo "no summary")
	total=$(sed -nE 's/.* out of ([0-9]+)$/\1/p' <<< "$summary")
	bad=$(sed -nE 's/.* ([0-9]+) tests failed out of .*/\1/p' <<< "$summary")
	skipped=$(grep -cE '^[[:space:]]*[0-9]+ - .* \(Skipped\)$' "$log" || true)
	printf 'run %d: %s passed, %s failed, %s skipped of %s; %.1f s (exit status %d)\n' "$r" \
		"$((${total:-0} - ${bad:-0} - skipped))" "${bad:-?}" "$skipped" "${total:-?}" \
		"$(awk "BEGIN { print $t1 - $t0 }")" "$rc"
	if [[ $rc -ne 0 ]]; then
		failed_runs=$((failed_runs + 1))
		keep=1
		sed -n '/The following tests FAILED/,$p' "$log"
	fi
done
[[ $failed_runs -eq 0 ]] && echo "all $runs runs passed" || echo "$failed_runs of $runs runs failed"
[[ $failed_runs -eq 0 ]]
