#!/bin/bash
# spot_check.sh - a few hand-picked configurations through ref_check.cu without CMake: each is
# built with nvcc (in parallel), checked against the CPU double-precision reference at the case's
# small and odd shapes, then timed at the given shapes.  For a quick look on a lent GPU:
#   tests/templates/spot_check.sh "TEMPLATE TYPE P=V,... SHAPE..." ...
# e.g. tests/templates/spot_check.sh "softmax bfloat16 STORE=regs,ITEMS=2,ALGO=expcache 4096,32768"
# Parameters and options not given keep the template's defaults (e.g. LSE=base2 for
# merge_attn_states' base-2 log-sum-exps).  Exit status 1 when a check failed.
set -uo pipefail
src=$(cd "$(dirname "$0")/../.." && pwd)
work=${SPOT_WORK:-/tmp/kt-spot}
mkdir -p "$work"

# -D flags for "P=V,..." of template $1 (choice parameters and options get their P_IS_<choice>
# flags).
defines() {
	local tmpl=$src/templates/$1.cu.tmpl cfg=$2 a p v line choices c
	[ "$cfg" = - ] && return
	for a in ${cfg//,/ }; do
		p=${a%%=*}
		v=${a#*=}
		echo "-D$p=$v"
		line=$(grep -E "^// @kt (param|option) +$p +in " "$tmpl") || continue
		choices=$(echo "$line" | sed -E 's/^.* in +//; s/ +default .*$//; s/ +$//')
		if ! echo "$choices" | grep -qE '^[0-9, .-]+$'; then
			for c in ${choices//,/ }; do
				[ "$c" = "$v" ] && echo "-D${p}_IS_$c=1" || echo "-D${p}_IS_$c=0"
			done
		fi
	done
}

n=0
for spec in "$@"; do
	read -r name type cfg shapes <<<"$spec"
	[ "$type" = half ] && cxx=__half || cxx=__nv_bfloat16
	n=$((n + 1))
	nvcc -arch=sm_90 -std=c++17 -O2 -I"$src/templates" -DKT_CASE_"$name" -DT=$cxx $(defines "$name" "$cfg") \
		-o "$work/spot$n" "$src/tests/templates/ref_check.cu" >"$work/spot$n.log" 2>&1 &
done
wait
rc=0
n=0
for spec in "$@"; do
	read -r name type cfg shapes <<<"$spec"
	n=$((n + 1))
	echo "== $name $type $cfg"
	if [ ! -x "$work/spot$n" ]; then
		cat "$work/spot$n.log"
		rc=1
		continue
	fi
	"$work/spot$n" >"$work/spot$n.out" || rc=1
	grep -E "FAIL|PASSED" "$work/spot$n.out" | tail -4
	[ -n "$shapes" ] && { "$work/spot$n" --time $shapes | grep -E "time|FAIL" || rc=1; }
done
exit $rc
