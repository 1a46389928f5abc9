#!/usr/bin/env bash
# v2tests.sh BINDIR
#
# Runs INSIDE the cgroup v2 guest of scripts/v2guest.sh, started by
# `make test-v2` from the repository root, which has built the test binaries
# on the host into BINDIR (a directory the guest sees through its read-only
# view of the host's /):
#
#   qos.test   internal/qos with -tags e2e: all its tests
#   e2e.test   e2e with -tags e2e: the tests matching $E2E_V2_RUN
#   tug        the agent, for e2e (TUG_TEST_BINARY)
#
# First it checks that this is the host the tests are meant for: cgroup2 on
# /sys/fs/cgroup, no v1 hierarchy, the cpu, cpuset, io, memory and pids
# controllers available to children, the guest's containerd answering. Then
# it runs each test binary that exists, in its package directory (as go test
# does), with -test.v -test.count=1 -test.timeout $V2_TEST_TIMEOUT; its output
# also goes to $V2G_OUT/<name>.log. A binary fails when it exits non-zero, and
# also when it ran no test at all (a -test.run that matches nothing, or tests
# behind another build tag, must not pass as green).
#
# Environment: CI, TUG_TEST_CONTAINERD, TUG_TEST_IMAGE, TUG_TEST_IMAGE_ARCHIVE,
# TUG_TEST_BINARY (the tests read them; see internal/testutil), E2E_V2_RUN
# (required when e2e.test exists), V2_TEST_TIMEOUT (default 6m).
set -uo pipefail

BIN=${1:?usage: v2tests.sh BINDIR}
TIMEOUT=${V2_TEST_TIMEOUT:-6m}
OUT=${V2G_OUT:-/tmp}

log() { echo "v2tests: $*"; }

failed=()
summary=()

# ---------------------------------------------------------------- preflight
preflight() {
    local ok=yes c
    if grep -q ' cgroup ' /proc/mounts; then
        log "FAIL: a cgroup v1 hierarchy is mounted"
        ok=
    fi
    if [ "$(stat -f -c %T /sys/fs/cgroup)" != cgroup2fs ]; then
        log "FAIL: /sys/fs/cgroup is not cgroup2"
        ok=
    fi
    for c in cpu cpuset io memory pids; do
        grep -qw "$c" /sys/fs/cgroup/cgroup.subtree_control ||
            { log "FAIL: controller $c is not enabled in /sys/fs/cgroup/cgroup.subtree_control"; ok=; }
    done
    if ! timeout 10 ctr -a "${TUG_TEST_CONTAINERD:-}" version >/dev/null 2>&1; then
        log "FAIL: containerd does not answer on TUG_TEST_CONTAINERD=${TUG_TEST_CONTAINERD:-}"
        ok=
    fi
    [ -n "$ok" ] || return 1
    log "pure cgroup v2 ($(cat /sys/fs/cgroup/cgroup.subtree_control)), kernel $(uname -r), containerd on $TUG_TEST_CONTAINERD"
}

# run_tests NAME PKGDIR [ARGS...]: runs BIN/NAME in PKGDIR with ARGS.
run_tests() {
    local name=$1 dir=$2 rc=0 t0=$SECONDS n pass fail skip
    shift 2
    local logf=$OUT/$name.log
    log "---- $name (in $dir): $name -test.v -test.count=1 -test.timeout $TIMEOUT $*"
    (cd "$dir" && "$BIN/$name" -test.v -test.count=1 -test.timeout "$TIMEOUT" "$@") 2>&1 | tee "$logf" || rc=$?
    # Top-level results are the unindented "--- PASS|FAIL|SKIP: TestX" lines.
    pass=$(grep -c '^--- PASS: ' "$logf")
    fail=$(grep -c '^--- FAIL: ' "$logf")
    skip=$(grep -c '^--- SKIP: ' "$logf")
    n=$((pass + fail + skip))
    if [ "$rc" = 0 ] && { [ "$n" = 0 ] || grep -q '^testing: warning: no tests to run' "$logf"; }; then
        log "FAIL: $name ran no test at all"
        rc=1
    fi
    summary+=("$(printf '%-9s %s: %d passed, %d failed, %d skipped, %ds' \
        "$([ "$rc" = 0 ] && echo ok || echo FAIL)" "$name" "$pass" "$fail" "$skip" $((SECONDS - t0)))")
    [ "$rc" = 0 ] || failed+=("$name")
}

if ! preflight; then
    log "FAIL: the guest is not the pure cgroup v2 host the tests need"
    exit 1
fi
ran=
if [ -x "$BIN/qos.test" ]; then
    run_tests qos.test internal/qos
    ran=yes
fi
if [ -x "$BIN/e2e.test" ]; then
    [ -n "${E2E_V2_RUN:-}" ] || { log "FAIL: e2e.test needs E2E_V2_RUN"; exit 1; }
    run_tests e2e.test e2e -test.run "$E2E_V2_RUN"
    ran=yes
fi
[ -n "$ran" ] || { log "FAIL: no test binary in $BIN"; exit 1; }

log "---- summary (cgroup v2 guest)"
printf '  %s\n' "${summary[@]}"
if [ ${#failed[@]} -gt 0 ]; then
    log "FAILED: ${failed[*]}"
    exit 1
fi
log "PASS"
