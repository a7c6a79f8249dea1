#!/usr/bin/env bash
# cold_configure.sh - a project of 30 shapes over 6 templates, configured cold on this GPU.
#
# usage: bench/cold_configure.sh KT OUTDIR [--project-cache DIR] [--reference DIR] [--make-reference]
#
# Writes a CMake project that tunes rmsnorm, fused_add_rmsnorm, silu_and_mul, gelu_and_mul,
# merge_attn_states and softmax (bfloat16) at 30 LLM-serving shapes, and configures it once with
# an empty user cache (OUTDIR/cache): every shape misses and all of them are tuned in one kt
# generate run.  --project-cache DIR gives the project a committed cache (e.g. kt's cache/, whose
# records are another GPU's: the warm start's seeds); without it the project has none.
#
# Then it prints one row per shape: the seconds of the wall time its tuning was charged, its
# evaluations, why its search stopped, the chosen time, and the best of a reference run of the
# same shape: the whole space (exhaustive) where it has at most 3,000 configurations, else a long
# best-first search (REF_BUDGET evaluations, default 600, no convergence stop).  The chosen configuration's time is
# also looked up in the reference run itself (the same run, the same conditions), and the ratio
# is of those two; a ratio over 1.03 is checked again by timing the chosen and the best
# configuration side by side in one kt tune run (the recheck column).  The references are kt tune recordings in --reference DIR (default
# OUTDIR/reference), made there with --make-reference.  Last, the configure's total time.
set -euo pipefail

kt=$(realpath "${1:?usage: bench/cold_configure.sh KT OUTDIR [--project-cache DIR] [--reference DIR] [--make-reference]}")
out=$(mkdir -p "${2:?OUTDIR}" && realpath "$2")
shift 2
src=$(cd "$(dirname "$0")/.." && pwd)
project_cache="" ref="$out/reference" make_ref=0
while (($#)); do
	case $1 in
	--project-cache) project_cache=$(realpath "$2"); shift 2 ;;
	--reference) ref=$(mkdir -p "$2" && realpath "$2"); shift 2 ;;
	--make-reference) make_ref=1; shift ;;
	*) echo "cold_configure.sh: unknown argument '$1'" >&2; exit 1 ;;
	esac
done

# template, then its shapes
kernels=(
	"rmsnorm rows=16,hidden=4096 rows=128,hidden=4096 rows=2048,hidden=4096 rows=16384,hidden=4096 rows=2048,hidden=8192 rows=16384,hidden=8192"
	"fused_add_rmsnorm rows=16,hidden=4096 rows=128,hidden=4096 rows=2048,hidden=4096 rows=16384,hidden=4096 rows=2048,hidden=8192 rows=16384,hidden=8192"
	"silu_and_mul tokens=1,d=11008 tokens=64,d=11008 tokens=2048,d=11008 tokens=8192,d=11008 tokens=1,d=14336 tokens=64,d=14336 tokens=2048,d=14336 tokens=8192,d=14336"
	"gelu_and_mul tokens=64,d=11008 tokens=2048,d=11008 tokens=8192,d=11008 tokens=64,d=14336 tokens=2048,d=14336 tokens=8192,d=14336"
	"merge_attn_states tokens=512,heads=32,dim=128 tokens=4096,heads=32,dim=128 tokens=16384,heads=32,dim=128"
	"softmax rows=4096,cols=1024"
)

# ---- the project ----
mkdir -p "$out/project"
printf '// the project'"'"'s code is only the tuned kernels\n' >"$out/project/app.cu"
{
	echo "cmake_minimum_required(VERSION 3.25)"
	echo "set(CMAKE_CUDA_ARCHITECTURES 90 CACHE STRING \"\")"
	echo "project(cold_configure LANGUAGES C CXX CUDA)"
	echo "add_subdirectory(\"$src\" kt EXCLUDE_FROM_ALL)"
	echo "add_library(cold STATIC app.cu)"
	for k in "${kernels[@]}"; do
		set -- $k
		name=$1
		shift
		pc=""
		[[ -n $project_cache ]] && pc="PROJECT_CACHE \"$project_cache\""
		echo "kt_add_tuned_kernel(cold NAME $name TEMPLATE \${KT_TEMPLATES_DIR}/$name.cu.tmpl TYPES T=bfloat16 $pc SHAPES $*)"
	done
} >"$out/project/CMakeLists.txt"

# ---- the cold configure ----
rm -rf "$out/cache" "$out/build"
start=$EPOCHREALTIME
KT_CACHE_DIR=$out/cache cmake -S "$out/project" -B "$out/build" -G Ninja -DKT_EXECUTABLE="$kt" >"$out/configure.log" 2>&1 ||
	{ tail -30 "$out/configure.log"; exit 1; }
total=$(awk -v a="$start" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.1f", b - a }')

# ---- the references ----
mkdir -p "$ref"
for k in "${kernels[@]}"; do
	set -- $k
	name=$1
	shift
	[[ -e $ref/$name.csv || -e $ref/$name.csv.0 ]] && continue
	((make_ref)) || continue
	[[ -n ${REF_ONLY:-} && ! $name =~ $REF_ONLY ]] && continue
	count=$("$kt" space "$src/templates/$name.cu.tmpl" --shape "$1" --type T=bfloat16 --arch 90 | tail -1 | grep -o '[0-9]* feasible' | grep -o '^[0-9]*' || echo 0)
	args=()
	for s in "$@"; do args+=(--shape "$s"); done
	if ((count > 0 && count <= 3000)); then
		strategy=(--strategy exhaustive)
	else
		strategy=(--strategy bestfirst --budget "${REF_BUDGET:-600}" --patience -1)
	fi
	"$kt" tune "$src/templates/$name.cu.tmpl" --type T=bfloat16 "${args[@]}" "${strategy[@]}" --seconds 600 \
		--record "$ref/$name.csv" --cache-dir "$out/ceilings" --quiet >"$ref/$name.log" 2>&1 || { tail "$ref/$name.log"; exit 1; }
done

# ---- the table ----
"$kt" cache ls --cache-dir "$out/cache" --tsv >"$out/records.tsv"
printf '%-18s %-28s %7s %6s %10s %10s %10s %7s %7s  %s\n' kernel shape seconds evals chosen_us ref_best ref_chosen ratio recheck stopped
worst=1 worst_checked=1
for k in "${kernels[@]}"; do
	set -- $k
	name=$1
	shift
	i=0
	for s in "$@"; do
		line=$(awk -F'\t' -v k="$name" -v s="$s" '$3 == k && $4 == s' "$out/records.tsv")
		csv=$ref/$name.csv
		(($# > 1)) && csv=$ref/$name.csv.$i
		i=$((i + 1))
		if [[ -z $line ]]; then
			printf '%-18s %-28s  (no record: see %s)\n' "$name" "$s" "$out/configure.log"
			continue
		fi
		IFS=$'\t' read -r _ _ _ _ _ us cfg evals secs stop <<<"$line"
		best=- chosen=- ratio=-
		if [[ -e $csv ]]; then
			read -r best best_cfg < <(awk -F'"' '/^"/ { split($3, f, ","); if (f[2] == "ok" && (b == "" || f[3] + 0 < b)) { b = f[3] + 0; c = $2 } } END { print b, c }' "$csv")
			chosen=$(awk -F'"' -v c="$cfg" '/^"/ && $2 == c { split($3, f, ","); if (f[2] == "ok") print f[3] + 0 }' "$csv")
			[[ -n $chosen && -n $best ]] && ratio=$(awk -v a="$chosen" -v b="$best" 'BEGIN { printf "%.4f", a / b }')
			[[ -z $chosen && -n $best ]] && chosen=- && ratio=$(awk -v a="$us" -v b="$best" 'BEGIN { printf "%.4f", a / b }')
		fi
		# A ratio over 1.03 may be the reference's noise (one timing of a 5 us kernel): the two
		# configurations are then timed again side by side, interleaved, in one kt tune run.
		recheck=-
		if [[ $ratio != - && $cfg != "$best_cfg" ]] && awk -v r="$ratio" 'BEGIN { exit !(r > 1.03) }'; then
			"$kt" tune "$src/templates/$name.cu.tmpl" --type T=bfloat16 --shape "$s" --config "$cfg" --config "$best_cfg" \
				--cache-dir "$out/ceilings" --quiet >"$out/recheck-$name-$i.txt" 2>&1 || true
			recheck=$(awk -v a="$cfg" -v b="$best_cfg" '$1 ~ /^[0-9]+$/ && NF >= 6 { if ($6 == a) x = $2; if ($6 == b) y = $2 }
				END { if (x != "" && y != "") printf "%.4f", x / y; else print "-" }' "$out/recheck-$name-$i.txt")
		fi
		[[ $ratio != - ]] && worst=$(awk -v a="$ratio" -v b="$worst" 'BEGIN { print (a > b ? a : b) }')
		checked=$ratio
		[[ $recheck != - ]] && checked=$recheck
		[[ $checked != - ]] && worst_checked=$(awk -v a="$checked" -v b="$worst_checked" 'BEGIN { print (a > b ? a : b) }')
		printf '%-18s %-28s %7.2f %6d %10.2f %10s %10s %7s %7s  %s\n' "$name" "$s" "$secs" "$evals" "$us" "$best" "$chosen" "$ratio" "$recheck" "$stop"
	done
done
echo "configure (cmake -S ... -B ..., every shape tuned): $total s; the worst chosen/best ratio: $worst ($worst_checked with the rechecks)"
