#!/usr/bin/env bash
# slowest.sh N LOG: the N slowest top-level tests of a `go test -v` log
# (LOG, or stdin), slowest first, as "seconds test result".
set -euo pipefail
n=${1:?usage: slowest.sh N [LOG]}
shift
echo "slowest $n tests:"
grep -E '^--- (PASS|FAIL): Test[^/ ]* \([0-9.]+s\)$' "$@" |
    sed -E 's/^--- (PASS|FAIL): ([^ ]*) \(([0-9.]+)s\)$/\3 \2 \1/' |
    sort -rn | head -n "$n" | awk '{printf "  %8.1fs  %s %s\n", $1, $2, $3}'
