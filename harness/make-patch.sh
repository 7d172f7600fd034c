#!/bin/sh
# Regenerates content-modes.patch: the difference between the shared harness and a
# patched copy (node_modules and captures left out, no timestamps).
#   harness/make-patch.sh <shared harness dir> <patched copy>
set -eu
[ $# -eq 2 ] || { echo "usage: $0 <shared harness dir> <patched copy>" >&2; exit 2; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir "$tmp/a" "$tmp/b"
(cd "$1" && tar cf - --exclude=node_modules --exclude='captures*' .) | tar xf - -C "$tmp/a"
(cd "$2" && tar cf - --exclude=node_modules --exclude='captures*' .) | tar xf - -C "$tmp/b"
out=$(cd "$(dirname "$0")" && pwd)/content-modes.patch
(cd "$tmp" && diff -ruN a b | sed -E 's/^(\+\+\+|---) ([^\t]+)\t.*/\1 \2/' > "$out") || true
echo "wrote $out ($(grep -c '^+++ ' "$out") files)"
