#!/usr/bin/env bash
# testenv.sh up|down|env|status|logs|restart-containerd
#
# The test environment of tug's end-to-end tests and benchmarks (used by
# `make test`, `make bench` and .ci/run). Everything lives in one directory,
# ${TUG_TESTENV_DIR:-/var/tmp/tug-testenv}:
#
#   containerd.toml, containerd.sock, containerd.log, containerd.pid
#       a PRIVATE containerd (own root, state, sockets; CRI plugin disabled).
#       The system containerd on /run/containerd/containerd.sock is never touched.
#   registry.yml, registry/, registry.log, registry.pid, registry.port
#       Debian's docker-registry on 127.0.0.1:${TUG_TEST_REGISTRY_PORT:-5000}
#   busybox.tar   OCI archive of docker.io/library/busybox:1.35 (scripts/mkimage.sh),
#                 imported into the private containerd (namespace tug-testenv) and
#                 pushed to the registry as 127.0.0.1:PORT/tug/busybox:1.35
#   env           shell exports for the tests (see `env` below)
#   containerd.bin  the directory of the containerd binaries `up` used, when
#                 TUG_TESTENV_CONTAINERD_BIN named one (see below)
#
#   up      install missing packages, start what is not running, build, import
#           and push the test image, write $DIR/env. Idempotent: a second `up`
#           only checks that everything answers.
#   down    kill the tasks of the private containerd, stop only what `up`
#           started (recorded pids), kill leftover shims of the private
#           containerd, unmount what is left under its root and state. The
#           image cache (containerd content, registry storage, busybox.tar) stays.
#   env     print $DIR/env (use: eval "$(scripts/testenv.sh env)")
#   status  say what is running
#   logs    print the tail of the containerd and registry logs
#   restart-containerd
#           SIGKILL the private containerd (if it runs) and start it again as
#           `up` does, same configuration; shims and their tasks live on. For
#           the e2e test of tug surviving a containerd crash.
#
# The helpers shared with scripts/demo.sh (packages, waiting, containerd,
# the image, removing a namespace's containers) are in scripts/lib.sh.
#
# TUG_TESTENV_CONTAINERD_BIN=DIR (for `up`; the other commands read it back
# from $DIR/containerd.bin): run the containerd, containerd-shim-runc-v2 and
# ctr of DIR instead of Debian's (scripts/containerd2.sh: containerd 2.x built
# from source, in a TUG_TESTENV_DIR of its own). DIR comes first in the PATH of
# this script and so of the daemon, which finds its shim there; runc stays
# Debian's. A containerd 2.x gets a version 3 configuration, 1.x version 2.
#
# Notes: containerd 1.6's shims and ctr still put their sockets, fifos and runc
# state under /run/containerd/{s,fifo,runc} (hashed or per-namespace names: no
# clash with the system containerd). When the registry port is taken by
# something that is not an open registry (on a systemd host, the
# docker-registry package starts its own service on :5000, with auth), `up`
# picks the next free port, unless TUG_TEST_REGISTRY_PORT was set; the tests
# read the port from the env file.
set -Eeuo pipefail

DIR=${TUG_TESTENV_DIR:-/var/tmp/tug-testenv}
PORT_SET=${TUG_TEST_REGISTRY_PORT:+yes}
PORT=${TUG_TEST_REGISTRY_PORT:-5000}
SOCK=$DIR/containerd.sock
NS=tug-testenv
REPO_PATH=tug/busybox
REPO_TAG=1.35
ARCHIVE=$DIR/busybox.tar
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
LIB_NAME=testenv
# shellcheck source=scripts/lib.sh
. "$HERE/lib.sh"
IMAGE=$LIB_IMAGE
LIB_ON_DIE= # show_logs once `up` runs

# The containerd binaries: TUG_TESTENV_CONTAINERD_BIN, else those `up`
# recorded, else Debian's (PATH).
CONTAINERD_BIN=${TUG_TESTENV_CONTAINERD_BIN:-}
if [ -z "$CONTAINERD_BIN" ] && [ -s "$DIR/containerd.bin" ]; then
    CONTAINERD_BIN=$(cat "$DIR/containerd.bin")
fi
if [ -n "$CONTAINERD_BIN" ]; then
    [ -x "$CONTAINERD_BIN/containerd" ] || die "no containerd in $CONTAINERD_BIN (TUG_TESTENV_CONTAINERD_BIN or $DIR/containerd.bin)"
    PATH=$CONTAINERD_BIN:$PATH
fi

# On any failure, show what the daemons said.
on_error() {
    local rc=$? line=$1
    trap - ERR
    log "FAILED (exit $rc, line $line)"
    show_logs
    exit "$rc"
}
show_logs() {
    local f
    for f in "$DIR/containerd.log" "$DIR/registry.log"; do
        [ -s "$f" ] || continue
        log "---- last 40 lines of $f"
        tail -n 40 "$f" >&2
    done
}

# children_of PID: the pids whose parent is PID.
children_of() {
    local s
    for s in /proc/[0-9]*/status; do
        awk -v p="$1" '$1=="PPid:" && $2==p {found=1} END{exit !found}' "$s" 2>/dev/null &&
            { s=${s%/status}; echo "${s#/proc/}"; }
    done
    return 0
}

# ---------------------------------------------------------------- containerd
start_containerd() {
    if containerd_answers; then
        log "containerd: already up on $SOCK"
        return
    fi
    if pid_alive "$DIR/containerd.pid" "$(command -v containerd)"; then
        # ours but hung: it holds the metadata db lock, so a second one would block
        log "containerd: pid $(cat "$DIR/containerd.pid") does not answer; killing it"
        kill -KILL "$(cat "$DIR/containerd.pid")" 2>/dev/null || true
        wait_for 10 "containerd to exit" bash -c "[ ! -d /proc/$(cat "$DIR/containerd.pid") ]" || true
    fi
    mkdir -p "$DIR/root" "$DIR/state" "$DIR/opt"
    # containerd 2.x reads version 3 (and migrates it), where the CRI is
    # three plugins; 1.6 knows versions 1 and 2. The rest is the same.
    local major config_version=2 disabled='"io.containerd.grpc.v1.cri"'
    major=$(containerd --version | awk '{v=$3; sub(/^v/, "", v); split(v, a, "."); print a[1]}')
    if [ "${major:-0}" -ge 2 ] 2>/dev/null; then
        config_version=3
        disabled='"io.containerd.grpc.v1.cri", "io.containerd.cri.v1.runtime", "io.containerd.cri.v1.images"'
    fi
    cat > "$DIR/containerd.toml" <<EOF
# Written by scripts/testenv.sh: tug's private test containerd.
version = $config_version
root = "$DIR/root"
state = "$DIR/state"
disabled_plugins = [$disabled]

[grpc]
  address = "$SOCK"

[ttrpc]
  address = "$SOCK.ttrpc"

[debug]
  level = "info"

[plugins."io.containerd.internal.v1.opt"]
  path = "$DIR/opt"
EOF
    rm -f "$DIR/containerd.pid"
    log "containerd: starting (config $DIR/containerd.toml, log $DIR/containerd.log)"
    # setsid: not in the caller's process group, so ^C or CI's job control
    # does not kill it; all fds redirected, so make/CI pipes are not held open.
    setsid containerd --config "$DIR/containerd.toml" </dev/null >>"$DIR/containerd.log" 2>&1 &
    echo $! > "$DIR/containerd.pid"
    await_containerd "$DIR/containerd.pid"
    log "containerd: up (pid $(cat "$DIR/containerd.pid"), $(ctr_ version | awk '/Server:/{s=1} s&&/Version:/{print $2; exit}'))"
}

# ---------------------------------------------------------------- registry
registry_answers() { curl -fsS -o /dev/null --max-time 2 "http://127.0.0.1:$1/v2/" 2>/dev/null; }
port_busy() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

start_registry() {
    # Ours, from an earlier `up`?
    if pid_alive "$DIR/registry.pid" /usr/bin/docker-registry && [ -s "$DIR/registry.port" ]; then
        PORT=$(cat "$DIR/registry.port")
        if registry_answers "$PORT"; then
            log "registry: already up on 127.0.0.1:$PORT"
            return
        fi
        log "registry: pid $(cat "$DIR/registry.pid") does not answer; restarting it"
        kill "$(cat "$DIR/registry.pid")" 2>/dev/null || true
        wait_for 10 "registry to exit" bash -c "! kill -0 $(cat "$DIR/registry.pid")" || true
        rm -f "$DIR/registry.pid"
    fi
    # Somebody's registry (without auth) already answering on the port: use it.
    if registry_answers "$PORT"; then
        log "registry: a registry not started by testenv answers on 127.0.0.1:$PORT; using it"
        echo "$PORT" > "$DIR/registry.port"
        return
    fi
    # The port is taken by something else. On a machine with systemd, the
    # docker-registry package starts its own service on :5000 (with htpasswd
    # auth, so /v2/ answers 401): leave it alone and use another port.
    if port_busy "$PORT"; then
        [ -z "$PORT_SET" ] || die "port $PORT (TUG_TEST_REGISTRY_PORT) is taken by a service that is not an open registry"
        log "registry: port $PORT is taken (Debian's own docker-registry service?), looking for a free one"
        local p
        for ((p = PORT + 1; p < PORT + 100; p++)); do
            port_busy "$p" || break
        done
        port_busy "$p" && die "no free port in $PORT..$p"
        PORT=$p
    fi
    mkdir -p "$DIR/registry"
    cat > "$DIR/registry.yml" <<EOF
# Written by scripts/testenv.sh: tug's test registry (no auth, loopback only).
version: 0.1
log:
  level: info
  accesslog:
    disabled: true
storage:
  filesystem:
    rootdirectory: $DIR/registry
  delete:
    enabled: true
http:
  addr: 127.0.0.1:$PORT
EOF
    log "registry: starting on 127.0.0.1:$PORT (config $DIR/registry.yml, log $DIR/registry.log)"
    setsid /usr/bin/docker-registry serve "$DIR/registry.yml" </dev/null >>"$DIR/registry.log" 2>&1 &
    echo $! > "$DIR/registry.pid"
    echo "$PORT" > "$DIR/registry.port"
    local i
    for ((i = 0; i < 150; i++)); do
        registry_answers "$PORT" && break
        starting "$DIR/registry.pid" || die "docker-registry exited at start"
        sleep 0.1
    done
    registry_answers "$PORT" || die "registry did not answer on 127.0.0.1:$PORT within 15s"
    log "registry: up (pid $(cat "$DIR/registry.pid"))"
}

# ---------------------------------------------------------------- image
# archive_digest: the manifest digest recorded in the archive's index.json.
archive_digest() {
    tar -xOf "$ARCHIVE" index.json | grep -o '"digest":"sha256:[0-9a-f]*"' | head -1 | cut -d'"' -f4
}

setup_image() {
    build_image "$ARCHIVE"
    local want have reg_image=127.0.0.1:$PORT/$REPO_PATH:$REPO_TAG
    want=$(archive_digest)
    [ -n "$want" ] || die "no manifest digest in $ARCHIVE"

    have=$(ctr_ -n "$NS" images ls 2>/dev/null | awk -v n="$IMAGE" '$1==n{print $3}') || true
    if [ "$have" = "$want" ]; then
        log "image: $IMAGE present in namespace $NS"
    else
        log "image: importing $ARCHIVE into namespace $NS"
        ctr_ -n "$NS" images import "$ARCHIVE" >&2
        have=$(ctr_ -n "$NS" images ls | awk -v n="$IMAGE" '$1==n{print $3}')
        [ "$have" = "$want" ] || die "import: $IMAGE is ${have:-missing}, want $want"
    fi

    have=$(curl -fsS --max-time 5 -o /dev/null -D - \
        -H 'Accept: application/vnd.oci.image.manifest.v1+json' \
        "http://127.0.0.1:$PORT/v2/$REPO_PATH/manifests/$REPO_TAG" 2>/dev/null |
        tr -d '\r' | awk -F': ' 'tolower($1)=="docker-content-digest"{print $2}') || true
    if [ "$have" = "$want" ]; then
        log "image: $reg_image present in the registry"
    else
        log "image: pushing $reg_image"
        ctr_ -n "$NS" images tag --force "$IMAGE" "$reg_image" >/dev/null
        ctr_ -n "$NS" images push --plain-http "$reg_image" >&2
        curl -fsS --max-time 5 "http://127.0.0.1:$PORT/v2/$REPO_PATH/tags/list" | grep -qF "\"$REPO_TAG\"" ||
            die "push: tag $REPO_TAG not listed by the registry"
    fi
}

write_env() {
    cat > "$DIR/env.new" <<EOF
# Written by scripts/testenv.sh up; source it or eval "\$(scripts/testenv.sh env)".
export TUG_TESTENV_DIR=$DIR
export TUG_TEST_CONTAINERD=$SOCK
export TUG_TEST_IMAGE=$IMAGE
export TUG_TEST_IMAGE_ARCHIVE=$ARCHIVE
export TUG_TEST_REGISTRY=127.0.0.1:$PORT
export TUG_TEST_REGISTRY_IMAGE=127.0.0.1:$PORT/$REPO_PATH:$REPO_TAG
EOF
    mv -f "$DIR/env.new" "$DIR/env"
}

up() {
    local t0=$SECONDS
    [ "$(id -u)" = 0 ] || die "up needs root (containerd, mounts)"
    trap 'on_error $LINENO' ERR
    LIB_ON_DIE=show_logs
    mkdir -p "$DIR"
    if [ -n "$CONTAINERD_BIN" ]; then
        echo "$CONTAINERD_BIN" > "$DIR/containerd.bin"
    else
        rm -f "$DIR/containerd.bin"
    fi
    ensure_packages docker-registry prometheus zsh fish iptables jq # jq: scripts/fleet-halt.sh in TestRolloutWaves; prometheus: the e2e tests of a real scraper (TestPrometheusScrapesTug) and remote-write receiver (TestRemoteWrite); zsh, fish: TestShellCompletion; iptables: the IP-level counters of bench/benchbytes
    start_containerd
    start_registry
    setup_image
    write_env
    trap - ERR
    log "up in $((SECONDS - t0))s; env in $DIR/env"
}

# ---------------------------------------------------------------- down
# kill_tasks: kill and delete every task and container of the private containerd.
kill_tasks() {
    local ns
    for ns in $(ctr_ namespaces ls -q 2>/dev/null); do
        remove_containers "$ns"
    done
}

# stop_pid PIDFILE EXE NAME: stop the process `up` recorded (TERM, then KILL).
stop_pid() {
    local pidfile=$1 exe=$2 name=$3 pid
    if pid_alive "$pidfile" "$exe"; then
        pid=$(cat "$pidfile")
        log "down: stopping $name (pid $pid)"
        kill -TERM "$pid" 2>/dev/null || true
        if ! wait_for 15 "$name to exit" bash -c "[ ! -d /proc/$pid ] || grep -q '^State:.*Z' /proc/$pid/status"; then
            kill -KILL "$pid" 2>/dev/null || true
            wait_for 5 "$name to die" bash -c "[ ! -d /proc/$pid ]" || true
        fi
    fi
    rm -f "$pidfile"
}

# leftover_shims: pids of shims whose -address is our socket.
leftover_shims() {
    local p
    for p in /proc/[0-9]*; do
        [ -r "$p/cmdline" ] || continue
        case $(readlink "$p/exe" 2>/dev/null) in */containerd-shim*) ;; *) continue ;; esac
        if tr '\0' '\n' < "$p/cmdline" 2>/dev/null | grep -qxF -- "$SOCK"; then
            echo "${p#/proc/}"
        fi
    done
}

down() {
    [ "$(id -u)" = 0 ] || die "down needs root"
    [ -d "$DIR" ] || { log "down: nothing to do ($DIR does not exist)"; return; }
    if containerd_answers; then
        kill_tasks
    fi
    stop_pid "$DIR/containerd.pid" "$(command -v containerd || echo /usr/bin/containerd)" containerd
    stop_pid "$DIR/registry.pid" /usr/bin/docker-registry registry
    rm -f "$DIR/registry.port"

    # Shims outlive containerd by design; a task that could not be killed
    # through ctr (containerd already gone) leaves one. Kill the container
    # processes (the shim's children) first, then the shim.
    local pid child
    for pid in $(leftover_shims); do
        [ -d "/proc/$pid" ] || continue
        for child in $(children_of "$pid"); do
            log "down: killing leftover container process $child (shim $pid)"
            kill -KILL "$child" 2>/dev/null || true
        done
        log "down: killing leftover shim $pid"
        kill -KILL "$pid" 2>/dev/null || true
    done

    # Mounts under the private root/state (rootfs mounts, snapshots, shm).
    local m
    while read -r m; do
        log "down: unmounting $m"
        umount "$m" 2>/dev/null || umount -l "$m" || true
    done < <(awk -v r="$DIR/root" -v s="$DIR/state" \
        'index($5, r"/")==1 || index($5, s"/")==1 || $5==r || $5==s {print $5}' /proc/self/mountinfo | sort -r)

    rm -f "$DIR/env" "$SOCK" "$SOCK.ttrpc"
    log "down: done (image cache kept in $DIR)"
}

restart_containerd() {
    [ "$(id -u)" = 0 ] || die "restart-containerd needs root"
    [ -s "$DIR/containerd.toml" ] || die "$DIR/containerd.toml missing: run $0 up"
    local pid
    if pid_alive "$DIR/containerd.pid" "$(command -v containerd)"; then
        pid=$(cat "$DIR/containerd.pid")
        log "containerd: killing pid $pid (SIGKILL)"
        kill -KILL "$pid" 2>/dev/null || true
        wait_for 10 "containerd to exit" bash -c "[ ! -d /proc/$pid ] || grep -q '^State:.*Z' /proc/$pid/status" ||
            die "containerd (pid $pid) did not exit"
    fi
    start_containerd
}

status() {
    if containerd_answers; then log "containerd: up on $SOCK"; else log "containerd: down"; fi
    local port
    port=$(cat "$DIR/registry.port" 2>/dev/null || echo "$PORT")
    if registry_answers "$port"; then log "registry: up on 127.0.0.1:$port"; else log "registry: down"; fi
    [ -s "$DIR/env" ] && cat "$DIR/env"
    return 0
}

case ${1:-} in
    up) up ;;
    down) down ;;
    env)
        [ -s "$DIR/env" ] || die "$DIR/env missing: run $0 up"
        cat "$DIR/env"
        ;;
    status) status ;;
    logs) show_logs ;;
    restart-containerd) restart_containerd ;;
    *) die "usage: $0 up|down|env|status|logs|restart-containerd" ;;
esac
