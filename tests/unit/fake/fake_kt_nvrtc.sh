#!/bin/sh
# A stand-in for `kt nvrtc --lib LIB [--verify] -- NVCC ARGS...` (nvrtc.h): nvcc compiles, and
# the last line says what the real one would.  FAKE_NVRTC_VERDICT: what --verify says, "same",
# "differs" or "failed".  FAKE_NVRTC_SED: a sed script applied to what "NVRTC" compiled (not
# under --verify, which keeps nvcc's), so that its variants can behave otherwise than nvcc's.
shift 3 # nvrtc --lib LIB
verify=0
if [ "$1" = --verify ]; then verify=1; shift; fi
shift # --
"$@" || exit $?
out=
prev=
for a in "$@"; do
	[ "$prev" = -o ] && out=$a
	prev=$a
done
if [ $verify = 0 ]; then
	[ -n "${FAKE_NVRTC_SED:-}" ] && sed -i "$FAKE_NVRTC_SED" "$out"
	echo "kt nvrtc: compiled by NVRTC"
elif [ "${FAKE_NVRTC_VERDICT:-same}" = same ]; then
	echo "kt nvrtc: the same machine code as nvcc's"
elif [ "$FAKE_NVRTC_VERDICT" = failed ]; then
	echo "kt nvrtc: NVRTC could not compile this unit: x.cu(1): error: identifier \"INFINITY\" is undefined"
else
	echo "kt nvrtc: machine code differs from nvcc's (section .text.x)"
fi
