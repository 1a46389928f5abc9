#!/usr/bin/env bash
# lanes.sh LANE... : the QEMU guest stages of make test, LANE at a time.
#
# A LANE is a quoted, space-separated list of make targets, run one after
# the other (each its own make, so that one failing does not keep the next
# from running). The lanes run at the same time: alone, a systemd guest
# under TCG keeps about half of this machine's two cores busy (test-systemd:
# 136 s of CPU in 124 s) and waits the rest of its time on timers
# (watchdogs, trials, back-offs); side by side the cores are the limit and
# each takes about twice as long, so the lanes gain what those waits leave
# idle. Each line a target prints is shown as it comes, prefixed with
# the target's name; the target's whole output is also kept in
# $LANES_DIR/<target>.log. At the end: each target's time and status, the
# last lines of each failed target's log, and the exit status 1 when any
# target failed.
#
# The stages may share the machine because each keeps its files apart:
# the guests' run directories are named by time and pid, each stage builds
# its binaries under a name of its own, and the kernel, initramfs, packages
# and image archives are made before the lanes start (make guest-setup).
set -uo pipefail

[ $# -gt 0 ] || { echo "usage: $0 'TARGET...' ['TARGET...' ...]" >&2; exit 2; }
lanes=("$@")
MAKE=${MAKE:-make}
LANES_DIR=${LANES_DIR:-/var/tmp/tug-lanes}
rm -rf "$LANES_DIR" && mkdir -p "$LANES_DIR"

# lane TARGET...: runs the targets in order, writing "<target> <rc> <s>"
# lines to $LANES_DIR/status.
lane() {
    local t rc start
    for t in "$@"; do
        start=$SECONDS
        $MAKE --no-print-directory "$t" 2>&1 | tee "$LANES_DIR/$t.log" | sed -u "s/^/[$t] /"
        rc=${PIPESTATUS[0]}
        echo "$t $rc $((SECONDS - start))" >> "$LANES_DIR/status"
        echo "[$t] lanes: $t exited $rc after $((SECONDS - start)) s"
    done
}

start=$SECONDS
pids=()
targets=0
for l in "${lanes[@]}"; do
    read -ra ts <<<"$l"
    targets=$((targets + ${#ts[@]}))
done
for l in "${lanes[@]}"; do
    # shellcheck disable=SC2086 # a lane is a list of targets
    lane $l &
    pids+=($!)
done
wait "${pids[@]}"

failed=()
echo "lanes: all done in $((SECONDS - start)) s"
while read -r t rc s; do
    if [ "$rc" = 0 ]; then
        echo "lanes: $t passed in $s s"
    else
        echo "lanes: $t FAILED (exit $rc) in $s s"
        failed+=("$t")
    fi
done < <(touch "$LANES_DIR/status"; cat "$LANES_DIR/status")
for t in "${failed[@]}"; do
    echo "lanes: ---- last 60 lines of $t ($LANES_DIR/$t.log)"
    tail -n 60 "$LANES_DIR/$t.log"
done
ran=$(wc -l < "$LANES_DIR/status")
[ "$ran" = "$targets" ] || { echo "lanes: $ran of $targets targets ran"; exit 1; }
[ ${#failed[@]} -eq 0 ]
