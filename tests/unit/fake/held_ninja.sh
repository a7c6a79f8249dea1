#!/bin/sh
# ninja, its output held until it ends: the tuning loop then hears of a batch only as it ends,
# never of an edge in between (a test of what the loop does while nothing it waits for ends).
out=$(ninja "$@" 2>&1)
rc=$?
printf '%s\n' "$out"
exit $rc
