#!/usr/bin/env bash
# one_build.sh - one build of the example project for two GPU models, run on the GPU here.
#
#   bench/one_build.sh KT_SOURCE BUILD [GPU...]
#
# Configures example_project with KT_GPUS = the GPU models given (default: NVIDIA H200 and NVIDIA
# H100 80GB HBM3): the GPU here tunes its misses, the other models' tables come from kt's
# committed cache/.  Builds it, prints the tables of its launchers (the manifests), and runs
# example_app with KT_VERBOSE=1, which says which table each launcher takes on this GPU and
# checks every result against a CPU reference.  The binary (BUILD/example_app) can then run on
# another GPU model unchanged.
set -euo pipefail
src=$(cd "$1" && pwd)
build=$2
shift 2
gpus=("$@")
[ ${#gpus[@]} -gt 0 ] || gpus=("NVIDIA H200" "NVIDIA H100 80GB HBM3")
list=$(IFS=';'; echo "${gpus[*]}")
t0=$(date +%s.%N)
cmake -S "$src/example_project" -B "$build" -G Ninja "-DKT_SOURCE_DIR=$src" "-DKT_GPUS=$list" >"$build.configure.log" 2>&1 ||
	{ cat "$build.configure.log"; exit 1; }
t1=$(date +%s.%N)
cmake --build "$build" >"$build.build.log" 2>&1 || { cat "$build.build.log"; exit 1; }
t2=$(date +%s.%N)
grep -E '^(-- )?kt' "$build.configure.log" || true
printf '\n%-14s %-24s %-22s %-6s %s\n' kernel table shape arch origin
for name in rmsnorm silu_and_mul; do
	python3 - "$build/kt/$name/kt_$name.json" "$name" <<'PY'
import json, sys
m = json.load(open(sys.argv[1]))
arch = {t["gpu"]: t["arch"] for t in m["tables"]}
for s in m["shapes"]:
    shape = ",".join("%s=%s" % kv for kv in s["shape"].items())
    print("%-14s %-24s %-22s %-6s %s" % (sys.argv[2], s.get("gpu", "-"), shape, arch.get(s.get("gpu"), "-"), s["origin"]))
PY
done
awk -v a="$t0" -v b="$t1" -v c="$t2" 'BEGIN { printf "\nconfigure %.1f s, build %.1f s\n\n", b - a, c - b }'
KT_VERBOSE=1 "$build/example_app"
