#!/bin/sh
# check-layers.sh - refuse include cycles between modules of lib/ and rules/.
#
# A module is a .c and its .h.  An x_internal.h (what a folder's files
# share and nobody else) is no module: including it counts as including
# what it includes.  The build
# already keeps each stratum or layer from including one above it (each is
# compiled with an include path that holds only what it may use); this
# checks what that cannot: that no two modules, in one folder or across
# several, include each other, directly or round a loop.  A loop is
# printed, and the exit status is 1.
set -eu
cd "$(dirname "$0")/.."

module() {
	echo "$1" | sed -E 's/\.(c|h)$//'
}

# The files f includes, from the tree, through internal headers.
includes() {
	sed -nE 's/^#include "([^"]+)".*/\1/p' "$1" | while read -r inc; do
		case $inc in
		core/* | model/* | store/*) t=lib/$inc ;;
		rules/*) t=$inc ;;
		*) continue ;;
		esac
		[ -f "$t" ] || continue
		case $t in
		*_internal.h) includes "$t" ;;
		*) echo "$t" ;;
		esac
	done
}

pairs=$(mktemp)
trap 'rm -f "$pairs" "$pairs.err"' EXIT
for f in lib/*/*.[ch] rules/*.[ch] rules/*/*.[ch]; do
	case $f in *_internal.h) continue ;; esac
	m=$(module "$f")
	echo "$m $m"
	includes "$f" | while read -r t; do
		t=$(module "$t")
		[ "$t" = "$m" ] || echo "$m $t"
	done
done >"$pairs"

if ! tsort "$pairs" >/dev/null 2>"$pairs.err"; then
	echo "check-layers: modules include each other (a loop; tsort names its members):" >&2
	grep -v 'input contains a loop' "$pairs.err" | sed 's/^tsort: /  /' >&2
	echo "check-layers: break the loop: move what both need down, or pass it in" >&2
	exit 1
fi
