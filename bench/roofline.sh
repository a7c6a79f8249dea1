#!/bin/bash
# roofline.sh - the template library against the hardware limit, on this machine's GPU.
#
# For every template and shape in templates/shapes.txt (or those matching --only), `kt tune`
# measures the naive reference kernel, the template's default configuration and the tuned one
# (medians of CUDA-event timings over rotated inputs, with their spread) and the roofline floor
# (the template's minimal bytes over the measured copy bandwidth).  For the matrix multiply the
# floor is its flops over the matrix rate that cuBLAS reaches at 8192^3 (fp16 in, fp32
# accumulation), and cuBLAS's own time at the shape is shown beside it (bench/cublas_gemm.cu).
# Beside each memory-bound shape whose floor is 20 us or more stands the fastest plain copy of
# the same bytes, timed the same way (bench/copy_floor.cu): what any kernel can reach at that size.
# Prints a table and saves it, with every tuner log, under the output directory.
#
#   bench/roofline.sh [--budget N] [--seconds S] [--only REGEX] [--out DIR] [--build DIR]
#
#   --budget N    configurations evaluated per shape (default 120)
#   --seconds S   tuning time per shape (default 60; three times that for gemm, whose variants
#                 compile slowly, and for softmax and transpose, whose spaces are the largest)
#   --only REGEX  only the lines of templates/shapes.txt that match (e.g. '^rmsnorm|^gemm')
#   --out DIR     results (default: <build>/roofline-<date>)
#   --build DIR   kt's build directory (default: build/bench); configured and built if needed
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
budget=120
seconds=60
only=.
out=""
build="$root/build/bench"
while [ $# -gt 0 ]; do
	case $1 in
	--budget) budget=$2; shift 2 ;;
	--seconds) seconds=$2; shift 2 ;;
	--only) only=$2; shift 2 ;;
	--out) out=$2; shift 2 ;;
	--build) build=$2; shift 2 ;;
	-h | --help) sed -n '2,18p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
	*) echo "roofline.sh: unknown argument '$1' (see --help)" >&2; exit 1 ;;
	esac
done
[ -n "$out" ] || out="$build/roofline-$(date -u +%Y%m%d-%H%M%S)"
mkdir -p "$out"

if [ ! -x "$build/generator/kt" ]; then
	cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DKT_BUILD_TESTS=OFF >"$out/build.log" 2>&1 &&
		cmake --build "$build" --target kt >>"$out/build.log" 2>&1 ||
		{ echo "roofline.sh: building kt failed; see $out/build.log" >&2; exit 2; }
fi
kt="$build/generator/kt"
nvcc -O2 -arch=sm_90 -o "$build/cublas_gemm" "$root/bench/cublas_gemm.cu" -lcublasLt -lcublas >>"$out/build.log" 2>&1 ||
	{ echo "roofline.sh: building cublas_gemm failed; see $out/build.log" >&2; exit 2; }
nvcc -O2 -arch=sm_90 -o "$build/copy_floor" "$root/bench/copy_floor.cu" >>"$out/build.log" 2>&1 ||
	{ echo "roofline.sh: building copy_floor failed; see $out/build.log" >&2; exit 2; }

gpu=$(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null | head -1)
date=$(date -u +%Y-%m-%dT%H:%MZ)
# the matrix ceiling: what cuBLAS reaches on a large product
mat_tflops=$("$build/cublas_gemm" 8192 8192 8192 | awk '{print $7}')

csv="$out/roofline.csv"
echo "line,kernel,type,shape,naive_us,default_us,tuned_us,tuned_spread_us,floor_us,pct_of_floor,tuned_vs_naive,tuned_vs_default,cublas_us,evaluated,config,copy_us,pct_of_copy" >"$csv"
log="$build/roofline-shape.log"
: >"$out/tune.log"

# Largest shapes first (the product of the shape's numbers), so that a run cut short keeps them.
# (--only matches the line itself, not the number that grep -n puts before it)
grep -v '^#' "$root/templates/shapes.txt" | grep -n . | awk -v re="$only" '{ l = $0; sub(/^[0-9]+:/, "", l) } l ~ re' |
	awk '{ n = split($3, a, /[=,]/); p = 1; for (i = 2; i <= n; i += 2) p *= a[i]; print p, $0 }' |
	sort -k1,1gr | cut -d' ' -f2- | tr ':' ' ' | while read -r line name type shape arch; do
	s=$seconds
	case $name in # the largest spaces, and gemm whose variants compile slowly
	gemm | gemm_sm90 | softmax | transpose) s=$((seconds * 3)) ;;
	esac
	"$kt" tune "$root/templates/$name.cu.tmpl" --type "$type" --shape "$shape" --budget "$budget" \
		--seconds "$s" ${arch:+--arch "$arch"} --top 1000 --quiet --cache-dir "$build/kt-cache" >"$log" 2>&1
	cat "$log" >>"$out/tune.log"
	cublas_us=""
	floor_override=""
	if [ "$name" = gemm ] || [ "$name" = gemm_sm90 ]; then
		IFS=, read -r m n k <<<"$(echo "$shape" | sed 's/[MNK]=//g')"
		cublas_us=$("$build/cublas_gemm" $([ "$type" = T=bfloat16 ] && echo --type bfloat16) "$m" "$n" "$k" | awk '{print $5}')
		[ -n "$mat_tflops" ] &&
			floor_override=$(awk -v m="$m" -v n="$n" -v k="$k" -v r="$mat_tflops" 'BEGIN { printf "%.2f", 2*m*n*k / (r*1e6) }')
	fi
	# the same bytes copied (two input streams per output for the gated and merging kernels)
	copy_us=""
	floor_us=$(awk '/^  floor:/ { print $2 }' "$log")
	bw=$(sed -n 's/^  floor:.*(copy \([0-9.]*\) GB\/s.*/\1/p' "$log")
	if [ -z "$cublas_us" ] && [ -n "$floor_us" ] && [ -n "$bw" ] && awk -v f="$floor_us" 'BEGIN { exit !(f >= 20) }'; then
		case $name in silu_and_mul | gelu_and_mul | merge_attn_states) reads=2 ;; *) reads=1 ;; esac
		copy_us=$("$build/copy_floor" --bw "$bw" --best "$(awk -v f="$floor_us" -v b="$bw" 'BEGIN { printf "%.3f", f * b / 1e3 }'):$reads" 2>>"$out/build.log")
	fi
	awk -v line="$line" -v name="$name" -v type="${type#T=}" -v shape="${shape//,/ }" -v cublas="$cublas_us" -v fo="$floor_override" -v copy="$copy_us" '
		/ evaluated in / { evals = $4 }
		/^  floor:/ { floor = $2 }
		/<- chosen/ { tuned = $2; spread = $3; cfg = $6; gsub(/,/, ";", cfg) }
		/^  reference:/ { naive = $2 }
		/^  default:/ { def = $2 }
		END {
			if (fo != "") floor = fo
			pct = (tuned > 0 && floor > 0) ? sprintf("%.0f", 100 * floor / tuned) : ""
			vn = (tuned > 0 && naive > 0) ? sprintf("%.2f", naive / tuned) : ""
			vd = (tuned > 0 && def > 0) ? sprintf("%.2f", def / tuned) : ""
			pc = (tuned > 0 && copy > 0) ? sprintf("%.0f", 100 * copy / tuned) : ""
			printf "%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s\n", line, name, type, shape, naive, def, tuned, spread,
				floor, pct, vn, vd, cublas, evals, cfg, copy, pc
		}' "$log" >>"$csv"
	tail -1 "$csv" | awk -F, '{ printf "%-18s %-26s tuned %9s us (floor %9s us, %4s%%)\n", $2, $4, $7, $9, $10 }'
done

md="$out/roofline.md"
{
	echo "GPU: ${gpu:-unknown}; date: $date; kt tune budget $budget configurations or ${seconds} s per shape."
	echo "Floor: bytes / measured copy bandwidth (kt's measurement); gemm: flops / cuBLAS rate at 8192^3 (${mat_tflops} TFLOP/s)."
	echo "Times in microseconds (medians; tuned with its spread). x naive / x default: how many times faster the tuned kernel is."
	echo
	echo "Copy: the fastest plain copy of the same bytes, timed the same way (shapes with a floor of 20 us or more); % of copy = copy / tuned."
	echo
	echo "| kernel | type | shape | naive | default | tuned (spread) | floor | % of floor | x naive | x default | cuBLAS | copy | % of copy |"
	echo "|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
	tail -n +2 "$csv" | sort -t, -k1,1n | awk -F, '{ printf "| %s | %s | %s | %s | %s | %s (%s) | %s | %s | %s | %s | %s | %s | %s |\n", $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $16, $17 }'
	echo
	echo "Chosen configurations:"
	echo
	tail -n +2 "$csv" | sort -t, -k1,1n | awk -F, '{ printf "- %s %s: %s (%s evaluated)\n", $2, $4, $15, $14 }'
} >"$md"
echo
cat "$md"
echo
echo "saved: $md, $csv, the tuner's output in $out/tune.log"
