#!/usr/bin/env bash
# arm64tests.sh            (on the host, from the repository root)
# arm64tests.sh guest BIN  (inside the arm64 guest; the host part starts it)
#
# Runs e2e tests on arm64: tug and the e2e test binary cross-compiled here
# (GOARCH=arm64 CGO_ENABLED=0), the arm64 busybox test image
# (scripts/mkimage.sh with MKIMAGE_ARCH=arm64), run against containerd and
# runc from Debian's arm64 packages in the QEMU aarch64 guest of
# scripts/arm64guest.sh (software emulation).
#
# On the host it builds, into $A64G_DIR/bin (A64G_DIR as arm64guest.sh has it,
# default /var/tmp/tug-arm64guest):
#
#   tug        ./agent (-trimpath -tags grpcnotrace), for e2e (TUG_TEST_BINARY)
#   e2e.test   ./e2e with -tags e2e
#
# and $A64G_DIR/busybox-arm64.tar, then boots the guest, which runs this
# script again (`guest`). In the guest it checks the machine (aarch64,
# containerd answering), starts Debian's docker-registry on 127.0.0.1:5000
# with the test image pushed to it (TUG_TEST_REGISTRY, TUG_TEST_REGISTRY_IMAGE:
# the pull tests), and runs e2e.test in e2e/ (as go test does) with -test.v
# -test.count=1 -test.run "$E2E_ARM64_RUN". Its output also goes to the run's
# out directory (e2e.test.log). The run fails when a test fails, and also when
# no test ran (a -test.run that matches nothing must not pass as green). The
# summary lists each test's time.
#
# Environment:
#   E2E_ARM64_RUN       which e2e tests (-test.run), default: DEFAULT_RUN below
#   E2E_ARM64_PARALLEL  tests at once (-test.parallel), default 1: the guest's
#                       two emulated CPUs are busy with one test already (the
#                       default selection took 411 s with 2 at once, 427 s
#                       one at a time), and two at once stretch waits of 10 s
#                       (a log line, a probe's answer) past their bound
#   E2E_ARM64_TIMEOUT   -test.timeout, default 8m
#   CI                  passed to the tests: a missing prerequisite fails, not skips
#   A64G_*              the guest's knobs (scripts/arm64guest.sh); A64G_TIMEOUT
#                       defaults to 900 and A64G_STALL to 120 here
#
# Timing here (2 cores, no KVM, TCG, 2026-11-29): the builds 7-35 s (by how
# warm the Go cache is), the boot to a running containerd 6-7 s, the registry
# and the push 6-9 s, the default selection ~430 s (each test's time is in
# the summary): about 8 minutes in all.
set -euo pipefail

# The default selection: a pod's start, init containers, volumes, an edit
# and a removal, pod networking and hostPorts with the adoption of the pods
# by a tug started after a SIGKILL of the last one (TestPodNetwork,
# TestHostPortLoopback), probes (HTTP, gRPC with the arm64 grpchealth), logs,
# exec, cgroup limits and the OOM kill, seccomp, user namespaces, a pull from
# the registry, an image volume, adoption after a restart, the HTTP source,
# signed URL bundles and the OCI source. Left out: the tests that time
# restarts or answers to a few seconds (TestCrashLoopBackoff, TestKill9Twenty,
# TestRolloutSurvivesTugKill; TestRestartPolicies passes alone but not beside
# another test), which software emulation stretches past their tolerance,
# and those that restart containerd (they need scripts/testenv.sh's).
DEFAULT_RUN='^(TestStartFromManifest|TestInitContainersBeforeApps|TestVolumes|TestEditRecreatesOnlyChangedContainer|TestRemoveCleansEverything|TestPodNetwork|TestHostPortLoopback|TestProbeLivenessRestartsHungServer|TestProbeGRPCHealth|TestLogsCommand|TestExecCommand|TestQoSCgroupTree|TestQoSOOMKilled|TestSeccompAndNoNewPrivs|TestUserNamespacePods|TestPullFromRegistry|TestImageVolume|TestAdoptionRemovesOrphans|TestHTTPSourcePods|TestURLSignedBundles|TestOCISource)$'
TEST_IMAGE=docker.io/library/busybox:1.35

log() { echo "arm64tests: $*" >&2; }

# ---------------------------------------------------------------- guest
if [ "${1:-}" = guest ]; then
    BIN=${2:?usage: arm64tests.sh guest BINDIR}
    OUT=${A64G_OUT:-/tmp}
    PORT=5000
    glog() { echo "arm64tests: $*"; }

    [ "$(uname -m)" = aarch64 ] || { glog "FAIL: not an aarch64 machine ($(uname -m))"; exit 1; }
    timeout 20 ctr -a "$TUG_TEST_CONTAINERD" version >/dev/null 2>&1 ||
        { glog "FAIL: containerd does not answer on $TUG_TEST_CONTAINERD"; exit 1; }
    glog "$(uname -m), kernel $(uname -r), containerd on $TUG_TEST_CONTAINERD"

    # The registry of the pull tests, with the test image pushed to it.
    t0=$SECONDS
    mkdir -p /tmp/a64registry
    cat > /tmp/a64registry.yml <<EOF
version: 0.1
log:
  level: warn
  accesslog:
    disabled: true
storage:
  filesystem:
    rootdirectory: /tmp/a64registry
  delete:
    enabled: true
http:
  addr: 127.0.0.1:$PORT
EOF
    setsid docker-registry serve /tmp/a64registry.yml < /dev/null > "$OUT/registry.log" 2>&1 &
    reg=127.0.0.1:$PORT/tug/busybox:1.35
    ok=
    if ctr -a "$TUG_TEST_CONTAINERD" -n a64tests images import "$TUG_TEST_IMAGE_ARCHIVE" >/dev/null &&
        ctr -a "$TUG_TEST_CONTAINERD" -n a64tests images tag --force "$TUG_TEST_IMAGE" "$reg" >/dev/null; then
        for _ in $(seq 100); do
            if ctr -a "$TUG_TEST_CONTAINERD" -n a64tests images push --plain-http "$reg" >/dev/null 2>&1; then
                ok=1
                break
            fi
            sleep 0.2
        done
    fi
    if [ -n "$ok" ]; then
        export TUG_TEST_REGISTRY=127.0.0.1:$PORT TUG_TEST_REGISTRY_IMAGE=$reg
        glog "registry: $reg pushed ($((SECONDS - t0))s)"
    else
        glog "registry: the push of $reg failed; the pull tests have no registry"
    fi

    logf=$OUT/e2e.test.log
    rc=0
    t0=$SECONDS
    glog "---- e2e.test -test.run '$E2E_ARM64_RUN' -test.parallel ${E2E_ARM64_PARALLEL:-1}"
    (cd e2e && "$BIN/e2e.test" -test.v -test.count=1 -test.timeout "${E2E_ARM64_TIMEOUT:-8m}" \
        -test.parallel "${E2E_ARM64_PARALLEL:-1}" -test.run "$E2E_ARM64_RUN") 2>&1 | tee "$logf" || rc=$?
    pass=$(grep -c '^--- PASS: ' "$logf" || true)
    fail=$(grep -c '^--- FAIL: ' "$logf" || true)
    skip=$(grep -c '^--- SKIP: ' "$logf" || true)
    if [ "$rc" = 0 ] && { [ $((pass + fail + skip)) = 0 ] || grep -q '^testing: warning: no tests to run' "$logf"; }; then
        glog "FAIL: no test ran"
        rc=1
    fi
    glog "---- summary (arm64 guest): $pass passed, $fail failed, $skip skipped in $((SECONDS - t0))s"
    grep -E '^--- (PASS|FAIL|SKIP): ' "$logf" | sed 's/^--- /  /'
    if [ "$rc" = 0 ]; then glog PASS; else glog FAILED; fi
    exit "$rc"
fi

# ---------------------------------------------------------------- host
[ "${1:-}" = "" ] || { log "usage: $0 (on the host) | $0 guest BINDIR"; exit 2; }
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
cd "$HERE/.."
export A64G_DIR=${A64G_DIR:-/var/tmp/tug-arm64guest}
export A64G_TIMEOUT=${A64G_TIMEOUT:-900} A64G_STALL=${A64G_STALL:-120}
GO=${GO:-go}
BIN=$A64G_DIR/bin
ARCHIVE=$A64G_DIR/busybox-arm64.tar

scripts/arm64guest.sh setup
MKIMAGE_ARCH=arm64 MKIMAGE_BUSYBOX=$A64G_DIR/root/usr/bin/busybox GO=$GO scripts/mkimage.sh "$ARCHIVE" "$TEST_IMAGE"
rm -rf "$BIN" && mkdir -p "$BIN"
t0=$SECONDS
GOOS=linux GOARCH=arm64 CGO_ENABLED=0 "$GO" build -trimpath -tags grpcnotrace -o "$BIN/tug" ./agent
GOOS=linux GOARCH=arm64 CGO_ENABLED=0 "$GO" test -c -tags e2e -o "$BIN/e2e.test" ./e2e
log "built $BIN/tug and $BIN/e2e.test for arm64 ($((SECONDS - t0))s)"
exec scripts/arm64guest.sh run -- env \
    CI="${CI:-}" \
    TUG_TEST_CONTAINERD=/run/containerd/containerd.sock \
    TUG_TEST_IMAGE="$TEST_IMAGE" \
    TUG_TEST_IMAGE_ARCHIVE="$ARCHIVE" \
    TUG_TEST_BINARY="$BIN/tug" \
    E2E_ARM64_RUN="${E2E_ARM64_RUN:-$DEFAULT_RUN}" \
    E2E_ARM64_PARALLEL="${E2E_ARM64_PARALLEL:-1}" \
    E2E_ARM64_TIMEOUT="${E2E_ARM64_TIMEOUT:-8m}" \
    bash scripts/arm64tests.sh guest "$BIN"
