#!/bin/sh
# GPU tests of tuning: tune_case.sh CASE KT SOURCE_DIR WORK_DIR
# Exits 77 (ctest's SKIP_RETURN_CODE) with the reason when kt finds no GPU.
set -u
case_=$1 kt=$2 src=$3 work=$4
. "$(dirname "$0")/common.sh"
gpu_start "$kt" "$work"

case $case_ in
planted)
	# Faults and hangs cost only their worker; wrong results are rejected; a correct winner is chosen.
	"$kt" tune "$src/tests/gpu/planted.cu.tmpl" --shape n=4194304 --strategy exhaustive --timeout 3 \
		--record "$work/space.csv" --cache-dir "$work/cache" --workdir "$work/w" >"$work/out.txt" 2>&1
	rc=$?
	cat "$work/out.txt"
	[ $rc -eq 0 ] || fail "kt tune exited with $rc"
	grep -q '"BLOCK=128,ITEMS=1,MODE=oob",faulted' "$work/space.csv" || fail "oob not faulted"
	grep -q '"BLOCK=128,ITEMS=1,MODE=loop",timed-out' "$work/space.csv" || fail "loop not timed out"
	grep -q '"BLOCK=128,ITEMS=1,MODE=wrong",check-failed' "$work/space.csv" || fail "wrong not rejected"
	grep -q '"BLOCK=128,ITEMS=1,MODE=last",check-failed' "$work/space.csv" || fail "last element not checked"
	[ "$(grep -c ',ok,' "$work/space.csv")" -eq 15 ] || fail "expected 15 passing configurations"
	grep -q '  chosen: .*MODE=good, ' "$work/out.txt" || fail "no correct winner"
	;;
rmsnorm)
	# A shipped template end to end: a budget of the default strategy, a winner faster than the reference.
	"$kt" tune "$src/templates/rmsnorm.cu.tmpl" --shape rows=4096,hidden=4096 --budget 60 --seed 3 --patience -1 \
		--record "$work/space.csv" --cache-dir "$work/cache" >"$work/out.txt" 2>&1
	rc=$?
	cat "$work/out.txt"
	[ $rc -eq 0 ] || fail "kt tune exited with $rc"
	grep -q '  chosen: ' "$work/out.txt" || fail "nothing chosen"
	grep -q 'tuned is .*x faster' "$work/out.txt" || fail "no comparison with the reference"
	[ "$(grep -c ',ok,' "$work/space.csv")" -ge 30 ] || fail "fewer than 30 configurations passed"
	grep -q 'bw_gbs' "$work"/cache/v*/ceilings/*.json || fail "the bandwidth was not kept"
	;;
generate)
	# kt generate on an empty cache tunes, stores the record and emits the tuned variant; the
	# second run is a hit.
	export KT_CACHE_DIR="$work/cache"
	"$kt" generate --template "$src/tests/gpu/planted.cu.tmpl" --name planted --out "$work/gen" \
		--shape n=1048576 >"$work/out1.txt" 2>&1 || { cat "$work/out1.txt"; fail "first generate"; }
	cat "$work/out1.txt"
	grep -q '"tuned"' "$work/gen/kt_planted.json" || fail "the manifest does not say tuned"
	! grep -Eq '"MODE":[[:space:]]*"(oob|loop|wrong|last)"' "$work/gen/kt_planted.json" || fail "a planted failure was chosen"
	"$kt" generate --template "$src/tests/gpu/planted.cu.tmpl" --name planted --out "$work/gen" \
		--shape n=1048576 >"$work/out2.txt" 2>&1 || fail "second generate"
	grep -q '"cache:user"' "$work/gen/kt_planted.json" || fail "the second run did not hit the cache"
	;;
batch)
	# Shapes of two templates missed together (kt generate --batch): one pipeline tunes them all,
	# a silu_and_mul configuration measured at both of its shapes is compiled once, every search
	# starts from the committed records of other shapes (warm start) and says why it stopped, and
	# the second run is all hits.  The shapes are ones cache/ has no record of, on any GPU.
	export KT_CACHE_DIR="$work/cache"
	printf '%s\n' --template "$src/templates/silu_and_mul.cu.tmpl" --name silu --out "$work/gen/silu" \
		--type T=bfloat16 --shape tokens=300,d=11008 --shape tokens=3000,d=11008 -- \
		--template "$src/templates/rmsnorm.cu.tmpl" --name rms --out "$work/gen/rms" \
		--type T=bfloat16 --shape rows=777,hidden=4096 >"$work/batch.txt"
	"$kt" generate --batch "$work/batch.txt" --project-cache "$src/cache" >"$work/out1.txt" 2>&1
	rc=$?
	cat "$work/out1.txt"
	[ $rc -eq 0 ] || fail "kt generate --batch exited with $rc"
	line=$(grep '^kt: tuned 3 shapes in ' "$work/out1.txt") || fail "the three shapes were not tuned in one batch"
	reused=$(echo "$line" | sed -n 's/.*(\([0-9]*\) reused at another shape).*/\1/p')
	[ -n "$reused" ] && [ "$reused" -ge 1 ] || fail "no variant was measured at both silu_and_mul shapes: $line"
	[ "$(grep -c 'warm start from' "$work/out1.txt")" -eq 3 ] || fail "not every shape was warm-started"
	[ "$(grep -c '^kt: tuned .*; stopped: ' "$work/out1.txt")" -ge 3 ] || fail "a shape does not say why it stopped"
	n=$(grep -l '"stopped":[[:space:]]*"[a-z]' "$work"/cache/v*/*/*.json | wc -l)
	[ "$n" -ge 3 ] || fail "$n records keep why their search stopped, expected 3"
	for k in silu rms; do grep -q '"tuned"' "$work/gen/$k/kt_$k.json" || fail "$k's manifest does not say tuned"; done
	"$kt" generate --batch "$work/batch.txt" --project-cache "$src/cache" >"$work/out2.txt" 2>&1 || fail "second generate"
	! grep -q '^kt: tuned' "$work/out2.txt" || fail "the second run tuned again"
	grep -q '"cache:user"' "$work/gen/rms/kt_rms.json" || fail "the second run did not hit the user cache"
	;;
two_gpus)
	# With two GPUs of one kind, one worker per GPU shares every batch.
	n=$(echo "$gpu" | grep -c '^GPU [0-9]*:')
	[ "$n" -ge 2 ] || { echo "skipped: $n GPU here, this case needs 2"; exit 77; }
	"$kt" tune "$src/templates/silu_and_mul.cu.tmpl" --type T=bfloat16 --shape tokens=4096,d=8192 --gpu -1 \
		--strategy random --budget 160 --seed 1 --record "$work/space.csv" --cache-dir "$work/cache" \
		--quiet >"$work/out.txt" 2>&1
	rc=$?
	cat "$work/out.txt"
	[ $rc -eq 0 ] || fail "kt tune exited with $rc"
	line=$(grep '^  GPUs: ' "$work/out.txt") || fail "no GPUs line: one GPU was used"
	for g in 0 1; do
		jobs=$(echo "$line" | sed -n "s/.* $g (\([0-9]*\) jobs).*/\1/p")
		[ -n "$jobs" ] && [ "$jobs" -ge 20 ] || fail "GPU $g did fewer than 20 jobs: $line"
	done
	[ "$(grep -c ',ok,' "$work/space.csv")" -ge 150 ] || fail "fewer than 150 configurations passed"
	grep -q '  chosen: ' "$work/out.txt" || fail "nothing chosen"
	;;
*) fail "unknown case $case_" ;;
esac
echo PASS
