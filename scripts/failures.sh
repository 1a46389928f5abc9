#!/usr/bin/env bash
# failures.sh LOG [LINES]: what failed in a `go test -v` log, printed last so
# that a CI page showing only the tail of the output still names it: each
# failed test with the last LINES (default 25) lines it printed, then the
# packages that failed and any panic or timeout.
set -euo pipefail
log=${1:?usage: failures.sh LOG [LINES]}
lines=${2:-25}
grep -qE '^(--- FAIL|FAIL|panic:)' "$log" || exit 0
echo "failures in $log:"
# Output lines belong to the test named by the last === RUN/CONT/NAME header
# (parallel tests interleave); a failed test's lines are kept in a ring of
# LINES and printed once its --- FAIL line is seen.
awk -v keep="$lines" '
    /^=== (RUN|CONT|NAME) / { cur = $3; next }
    /^=== PAUSE / { next }
    /^ *--- (PASS|SKIP): / { next }
    /^ *--- FAIL: / {
        name = $3
        print "  " $0
        top = name; sub(/\/.*/, "", top)
        if (name == top && n[top] > 0) {
            start = n[top] > keep ? n[top] - keep : 0
            for (i = start; i < n[top]; i++) print "      | " buf[top, i % keep]
        }
        next
    }
    /^(FAIL|ok)[ \t]/ { if ($1 == "FAIL") print "  " $0; delete n; cur = ""; next }
    /^panic: |^goroutine [0-9]+ \[running\]|test timed out/ { print "  " $0; next }
    cur != "" { t = cur; sub(/\/.*/, "", t); buf[t, n[t] % keep] = $0; n[t]++ }
' "$log"
