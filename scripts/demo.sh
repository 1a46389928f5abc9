#!/usr/bin/env bash
# demo.sh [start]|stop   (make demo, make demo-stop)
#
# Runs tug's example pods (manifests/) on this machine, as root, on a fresh
# Debian 12 with Go installed:
#
#   1. installs what is missing (containerd runc busybox-static iproute2 nftables curl)
#   2. starts the SYSTEM containerd on /run/containerd/containerd.sock with
#      Debian's default config (systemctl when systemd runs, otherwise nohup,
#      log /var/log/tug-demo-containerd.log) unless it already answers
#   3. builds the busybox image archive into tug's image dir
#      (/var/lib/tug/images/busybox.tar: tug imports it at start, no registry needed)
#   4. builds bin/tug and starts `bin/tug run --pod-manifest-path manifests/`
#      in the background (log /var/log/tug-demo.log, pid /run/tug-demo.pid);
#      every other flag keeps its default (containerd namespace tug, state
#      /var/lib/tug, run dir /run/tug, pod logs /var/log/pods)
#   5. waits (at most DEMO_TIMEOUT, 60 s) until every container of the example
#      pods runs and http://127.0.0.1:8080/ answers, then shows them
#
# The packages, containerd, image and clean-up helpers are scripts/lib.sh's,
# shared with scripts/testenv.sh.
#
# `demo.sh stop` stops tug, then kills and deletes every task and container in
# containerd namespace tug and removes its snapshots. containerd keeps running.
set -euo pipefail

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
LIB_NAME=demo
# shellcheck source=scripts/lib.sh
. "$REPO/scripts/lib.sh"
SOCK=/run/containerd/containerd.sock
NS=tug
IMAGE_DIR=/var/lib/tug/images
MANIFESTS=$REPO/manifests
TUG=$REPO/bin/tug
TUG_LOG=/var/log/tug-demo.log
TUG_PID=/run/tug-demo.pid
CONTAINERD_LOG=/var/log/tug-demo-containerd.log
URL=http://127.0.0.1:8080/
TIMEOUT=${DEMO_TIMEOUT:-60}

# tug_alive: the pid in $TUG_PID is a running bin/tug.
tug_alive() { pid_alive "$TUG_PID" "$TUG"; }
tug_gone() { ! tug_alive; }

# show_containerd_log: the end of the log of the containerd demo started.
show_containerd_log() { [ ! -s "$CONTAINERD_LOG" ] || tail -n 30 "$CONTAINERD_LOG" >&2; }

start_containerd() {
    if containerd_answers; then
        log "containerd: up on $SOCK"
        return
    fi
    if [ -d /run/systemd/system ] && command -v systemctl >/dev/null; then
        log "containerd: systemctl start containerd"
        systemctl start containerd
    else
        log "containerd: starting in the background (Debian's config, log $CONTAINERD_LOG)"
        setsid nohup containerd </dev/null >>"$CONTAINERD_LOG" 2>&1 &
    fi
    LIB_ON_DIE=show_containerd_log await_containerd
    log "containerd: up on $SOCK"
}

build() {
    build_image "$IMAGE_DIR/busybox.tar"
    export PATH=$PATH:/usr/local/go/bin
    command -v go >/dev/null || die "go is not installed (expected in PATH or /usr/local/go/bin)"
    local version
    version=$(git -C "$REPO" describe --always --dirty 2>/dev/null || echo dev)
    log "building $TUG ($version)"
    (cd "$REPO" && CGO_ENABLED=0 go build -trimpath -tags grpcnotrace -ldflags "-X main.version=$version" -o "$TUG" ./agent)
}

stop_tug() {
    if tug_alive; then
        local pid
        pid=$(cat "$TUG_PID")
        log "stopping tug (pid $pid)"
        kill -TERM "$pid" 2>/dev/null || true
        if ! wait_for 15 "tug to stop" tug_gone; then
            log "killing tug"
            kill -KILL "$pid" 2>/dev/null || true
            sleep 0.5
        fi
    fi
    rm -f "$TUG_PID"
}

# expected_containers: how many app containers the manifests declare (entries
# of each pod's spec.containers list; init containers exit, so not counted).
expected_containers() {
    local f
    for f in "$MANIFESTS"/*.yaml "$MANIFESTS"/*.yml; do
        if [ -f "$f" ]; then cat "$f" && printf '\n---\n'; fi
    done | awk '
        function indent(s) { match(s, /^ */); return RLENGTH }
        /^[ \t]*(#.*)?$/ { next }
        /^---/ { inblock = 0; next }
        {
            ind = indent($0)
            if (inblock) {
                if (ind < cind || (ind == cind && $0 !~ /^ *- /)) inblock = 0
                else if ($0 ~ /^ *- / && (item < 0 || ind == item)) { item = ind; n++; next }
            }
            if ($0 ~ /^ *containers: *$/) { inblock = 1; cind = ind; item = -1 }
        }
        END { print n + 0 }'
}

# running_tasks: number of tasks of namespace tug in state RUNNING (exited
# init containers may leave STOPPED tasks: they are not counted).
running_tasks() { ctr_ -n "$NS" tasks ls 2>/dev/null | awk 'NR>1 && $3=="RUNNING"' | wc -l; }

start() {
    [ "$(id -u)" = 0 ] || die "run as root (sudo make demo)"
    [ -d "$MANIFESTS" ] || die "no manifests directory $MANIFESTS"
    ensure_packages
    start_containerd
    build
    stop_tug
    log "starting tug (log $TUG_LOG, pid $TUG_PID)"
    mkdir -p "$(dirname "$TUG_PID")"
    echo "---- $(date -Is) demo start" >>"$TUG_LOG"
    setsid nohup "$TUG" run --pod-manifest-path "$MANIFESTS" </dev/null >>"$TUG_LOG" 2>&1 &
    echo $! > "$TUG_PID"

    local want t0=$SECONDS running=0 ok=
    want=$(expected_containers)
    log "waiting up to ${TIMEOUT}s for $want containers to run and $URL to answer"
    while [ $((SECONDS - t0)) -lt "$TIMEOUT" ]; do
        if ! tug_alive; then
            tail -n 40 "$TUG_LOG" >&2
            die "tug exited (log $TUG_LOG)"
        fi
        running=$(running_tasks)
        if [ "$running" -ge 1 ] && [ "$running" -ge "$want" ] &&
            curl -fsS -o /dev/null --max-time 2 "$URL" 2>/dev/null; then
            ok=yes
            break
        fi
        sleep 0.5
    done
    if [ -z "$ok" ]; then
        ctr_ -n "$NS" tasks ls >&2 || true
        log "---- last 40 lines of $TUG_LOG"
        tail -n 40 "$TUG_LOG" >&2
        die "the example pods did not come up within ${TIMEOUT}s ($running of $want containers running, $URL: $(curl -fsS -o /dev/null --max-time 2 "$URL" 2>&1 || true))"
    fi
    log "up in $((SECONDS - t0))s"
    echo
    echo "== ctr -n $NS tasks ls"
    ctr_ -n "$NS" tasks ls
    echo
    echo "== curl $URL"
    curl -fsS --max-time 5 "$URL"
    echo
    echo "== bin/tug pods"
    "$REPO/bin/tug" pods || true
    echo
    echo "pod status:      bin/tug pods, bin/tug inspect web-$(hostname), curl 127.0.0.1:10248/healthz"
    echo "tug's log:       $TUG_LOG (tug runs as pid $(cat "$TUG_PID"))"
    echo "container logs:  ls /var/log/pods   (e.g. tail /var/log/pods/*/*/0.log)"
    echo "stop the demo:   make demo-stop"
}

# remove_pods: kill and delete every task and container in namespace tug
# (lib.sh), then its snapshots (children before parents, so a few passes).
remove_pods() {
    containerd_answers || { log "containerd does not answer on $SOCK: nothing to remove"; return; }
    remove_containers "$NS"
    local id i
    local snaps left
    for ((i = 0; i < 20; i++)); do
        snaps=$(ctr_ -n "$NS" snapshots ls 2>/dev/null | awk 'NR>1{print $1}')
        [ -n "$snaps" ] || break
        for id in $snaps; do ctr_ -n "$NS" snapshots rm "$id" >/dev/null 2>&1 || true; done
    done
    left=$(ctr_ -n "$NS" snapshots ls 2>/dev/null | awk 'NR>1' | wc -l)
    [ "$left" -eq 0 ] || log "warning: $left snapshots left in namespace $NS"
}

# remove_pod_state: what tug made beside containerd for the demo pods: their
# pinned namespaces, volumes and log directories.
remove_pod_state() {
    local f d
    for f in /run/tug/ns/*/*; do
        [ -e "$f" ] || continue
        umount -l "$f" 2>/dev/null || true
        rm -f "$f"
    done
    for d in /run/tug/ns/*/; do [ -d "$d" ] && rmdir "$d" 2>/dev/null || true; done
    for d in /var/lib/tug/pods/*/; do
        [ -d "$d" ] || continue
        grep -F " ${d%/}/" /proc/self/mountinfo | awk '{print $5}' | xargs -r -n1 umount -l 2>/dev/null || true
        rm -rf "$d"
    done
    for f in "$REPO"/manifests/*.yaml; do
        d=$(awk '/^  name:/{print $2; exit}' "$f")
        [ -n "$d" ] && rm -rf /var/log/pods/default_"$d"-*
    done
    # What tug set up for the pod network and the pods' cgroups: the leases,
    # the bridge (veths go with the pods' namespaces), tug's nftables table,
    # and the cgroup tree (deepest first; runc removed the containers').
    rm -rf /var/lib/tug/network
    # The pin of the node's network namespace (made when tug's is not init's).
    if [ -e /run/tug/node-net ]; then umount -l /run/tug/node-net 2>/dev/null || true; rm -f /run/tug/node-net; fi
    ip link del tug0 2>/dev/null || true
    if command -v nft >/dev/null; then nft delete table ip tug 2>/dev/null || true; fi
    find /sys/fs/cgroup -depth -type d \( -path '*/tugpods' -o -path '*/tugpods/*' \) -exec rmdir {} + 2>/dev/null || true
    log "removed the demo pods' namespaces, volumes, logs, network and cgroups"
}

stop() {
    [ "$(id -u)" = 0 ] || die "run as root (sudo make demo-stop)"
    stop_tug
    remove_pods
    remove_pod_state
    log "stopped; containerd keeps running on $SOCK"
}

if [ "${BASH_SOURCE[0]}" = "$0" ]; then
    case ${1:-start} in
        start) start ;;
        stop) stop ;;
        *) die "usage: $0 [start|stop]" ;;
    esac
fi
