#!/bin/sh
# A stand-in for `kt nvrtc --lib LIB [--verify] -- NVCC ARGS...` (nvrtc.h): nvcc compiles, and
# the last line says what the real one would.  FAKE_NVRTC_VERDICT: what --verify says, "same" or
# "differs".
shift 3 # nvrtc --lib LIB
verify=0
if [ "$1" = --verify ]; then verify=1; shift; fi
shift # --
"$@" || exit $?
if [ $verify = 0 ]; then
	echo "kt nvrtc: compiled by NVRTC"
elif [ "${FAKE_NVRTC_VERDICT:-same}" = same ]; then
	echo "kt nvrtc: the same machine code as nvcc's"
else
	echo "kt nvrtc: machine code differs from nvcc's (section .text.x)"
fi
