#!/usr/bin/env bash
# Re-tunes the records committed in cache/: every template of the library at every shape listed in
# templates/shapes.txt, and the example project's shapes, on this machine's GPU, into a fresh user
# cache; then promotes the whole records into the project cache directory (commit them).
#
#   cache/refresh.sh KT [BUDGET] [SECONDS] [TO] [ONLY]
#
# KT is the kt executable; BUDGET and SECONDS bound the tuning of each shape (default 40
# evaluations, 4 s); TO is where the records go (default: this directory); ONLY, a regular
# expression, limits the run to the templates whose names match it (default: all of them; after
# a template changes, its records are the ones to tune again).  The architecture (90, unless
# the shape's line names another, e.g. 90a) and flags ("") are those the example project and
# the CMake module's defaults use, since both are part of each record's key.
set -euo pipefail
kt=${1:?usage: cache/refresh.sh KT [BUDGET] [SECONDS] [TO] [ONLY]}
budget=${2:-40}
seconds=${3:-4}
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
to=${4:-$here}
only=${5:-.}
root=$(dirname "$here")
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export KT_CACHE_DIR=$work/user

# template type shape: the library's list, then the example project's (half) shapes
{
	grep -E '^[a-z_][a-z0-9_]* ' "$root/templates/shapes.txt"
	printf '%s\n' "rmsnorm T=half rows=4096,hidden=4096" "rmsnorm T=half rows=16,hidden=4096" \
		"silu_and_mul T=half tokens=4096,d=11008" "silu_and_mul T=half tokens=16,d=11008"
} | awk '{ k = $1 " " $2 " " ($4 == "" ? "90" : $4); if (!(k in s)) { order[n++] = k; s[k] = "" } s[k] = s[k] " --shape " $3 }
	END { for (i = 0; i < n; i++) print order[i] s[order[i]] }' | awk -v only="$only" '$1 ~ only' |
while read -r name type arch shapes; do
	echo "== $name $type (sm_$arch)"
	# shellcheck disable=SC2086 # $shapes is a list of --shape arguments
	"$kt" generate --template "$root/templates/$name.cu.tmpl" --name "$name" --type "$type" $shapes \
		--arch "$arch" --budget "$budget" --seconds "$seconds" --out "$work/gen/$name-$type-$arch"
done
mkdir -p "$to"
"$kt" cache promote --cache-dir "$KT_CACHE_DIR" --to "$to"
"$kt" cache verify --project-cache "$to" || true
