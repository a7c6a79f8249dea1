#!/bin/sh
# torch_extension.sh EXAMPLE WORK NVCC: the GPU test of the PyTorch extension example EXAMPLE.
# pip installs it (--no-build-isolation, into WORK/site) with a kt user cache of its own, so that
# every shape is tuned on this GPU or taken from kt's committed records; then its
# tests/test_ops.py runs against that install, and the manifests must show no template default.
# Exits 77 (ctest's SKIP_RETURN_CODE), saying why, without torch or a GPU.  The Python is
# KT_TEST_PYTHON's, else python3 on PATH.
set -u
example=$1 work=$2 nvcc=$3
py=${KT_TEST_PYTHON:-python3}
say() { echo "torch_extension: $*"; }
skip() { say "skipped: $*"; exit 77; }
fail() { say "FAIL: $*"; exit 1; }
export PYTHONUNBUFFERED=1 PIP_DISABLE_PIP_VERSION_CHECK=1

"$py" -c 'import torch' 2>/dev/null || skip "no torch in $py (KT_TEST_PYTHON names another Python)"
"$py" -c 'import sys, torch; sys.exit(0 if torch.cuda.is_available() else 1)' ||
	skip "no CUDA GPU for torch (torch.cuda.is_available() is False)"
[ -n "$nvcc" ] && [ -x "$nvcc" ] || skip "no CUDA compiler (nvcc) was found when kt was configured"
"$py" -c 'import sys, torch; print("torch", torch.__version__, "CUDA", torch.version.cuda, "on", torch.cuda.get_device_name())'
rm -rf "$work" && mkdir -p "$work" || fail "cannot make $work"

# --no-build-isolation builds with this Python's own scikit-build-core: where it has none, pip
# fetches it into WORK/deps (from PyPI, or from the wheels in PIP_FIND_LINKS on a machine offline).
if ! "$py" -c 'import scikit_build_core' 2>/dev/null; then
	say "no scikit-build-core in $py: pip install --target $work/deps scikit-build-core"
	"$py" -m pip install --retries 1 --timeout 30 --target "$work/deps" 'scikit-build-core>=0.10' \
		>"$work/deps.log" 2>&1 || {
		cat "$work/deps.log"
		skip "no scikit-build-core, and pip cannot install it (offline? pip download scikit-build-core" \
			"where there is a network, and point PIP_FIND_LINKS at the wheels)"
	}
	export PYTHONPATH="$work/deps${PYTHONPATH:+:$PYTHONPATH}"
fi

say "pip install --no-build-isolation --target $work/site $example (cold: tuning takes a minute or two)"
start=$(date +%s)
CUDACXX="$nvcc" KT_CACHE_DIR="$work/kt-cache" "$py" -m pip install --no-build-isolation --no-deps -v \
	--target "$work/site" --config-settings=build-dir="$work/build" "$example" >"$work/install.log" 2>&1
rc=$?
grep -E '(-- )?kt(_ops)?: ' "$work/install.log"
if [ $rc -ne 0 ]; then
	tail -n 100 "$work/install.log"
	fail "pip install exited with $rc (the whole log: $work/install.log)"
fi
say "installed in $(($(date +%s) - start)) s; kt's report: $work/build/kt/report.html"
[ -f "$work/site/kt_ops/libkt_ops_torch.so" ] ||
	fail "the install holds no kt_ops/libkt_ops_torch.so: was Torch found? (see $work/install.log)"

export PYTHONPATH="$work/site${PYTHONPATH:+:$PYTHONPATH}"
"$py" "$example/tests/test_ops.py"
rc=$?
[ $rc -eq 0 ] || fail "tests/test_ops.py exited with $rc"

# Every shape of the manifests tuned here or a record, none the template's defaults.
"$py" - <<'PY' || fail "the manifests show configurations that were neither tuned nor cached"
import collections, sys, kt_ops
found = kt_ops.origins()
print("torch_extension: manifests:", dict(collections.Counter(o for _, _, o in found)))
for op, shape, origin in kt_ops.untuned():
    print(f"torch_extension: {op} {shape}: {origin}")
sys.exit(0 if found and not kt_ops.untuned() else 1)
PY
say "passed; to time it: PYTHONPATH=$work/site $py $example/bench.py"
