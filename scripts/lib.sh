# lib.sh: the shell functions scripts/testenv.sh and scripts/demo.sh share.
# Sourced, never run. The caller sets, before using them:
#
#   LIB_NAME   the prefix of log lines ("testenv", "demo")
#   SOCK       the containerd socket ctr_, containerd_answers and friends use
#
# and may set LIB_ON_DIE to a function die calls before exiting (to show
# daemons' logs, say).

log() { echo "${LIB_NAME:-lib}: $*" >&2; }
die() {
    log "ERROR: $*"
    [ -z "${LIB_ON_DIE:-}" ] || "$LIB_ON_DIE"
    exit 1
}

# wait_for SECONDS WHAT CMD...: runs CMD every 0.1 s until it succeeds (0) or
# SECONDS have passed (1). Bounded: never waits forever.
wait_for() {
    local secs=$1 what=$2 i
    shift 2
    for ((i = 0; i < secs * 10; i++)); do
        "$@" >/dev/null 2>&1 && return 0
        sleep 0.1
    done
    log "timed out after ${secs}s waiting for $what"
    return 1
}

# pid_alive PIDFILE EXE: the pid recorded in PIDFILE runs EXE and has not
# exited (a zombie, not yet reaped by its parent, has).
pid_alive() {
    local pid
    [ -s "$1" ] || return 1
    pid=$(cat "$1")
    [ -d "/proc/$pid" ] || return 1
    ! grep -q '^State:.*Z' "/proc/$pid/status" 2>/dev/null || return 1
    [ "$(readlink -f "/proc/$pid/exe" 2>/dev/null)" = "$(readlink -f "$2")" ]
}

# starting PIDFILE: whether the process just started in the background is
# still there (neither gone nor a zombie). Not pid_alive: until setsid has
# exec'd the daemon its exe is still bash or setsid, a race a loaded machine
# loses ("containerd exited at start" while it was starting).
starting() {
    local pid
    pid=$(cat "$1" 2>/dev/null) || return 1
    [ -d "/proc/$pid" ] && ! grep -q '^State:.*Z' "/proc/$pid/status" 2>/dev/null
}

# ensure_packages [COMMAND...]: install, as root, what tug and its pods need
# and is missing (containerd runc busybox-static iproute2 nftables curl),
# plus the Debian packages named like the extra COMMANDs (docker-registry).
ensure_packages() {
    local need=() c
    command -v containerd >/dev/null || need+=(containerd)
    command -v runc >/dev/null || need+=(runc)
    dpkg -s busybox-static >/dev/null 2>&1 || need+=(busybox-static)
    command -v ip >/dev/null || need+=(iproute2)
    command -v nft >/dev/null || need+=(nftables)
    command -v curl >/dev/null || need+=(curl)
    for c in "$@"; do
        command -v "$c" >/dev/null || need+=("$c")
    done
    [ ${#need[@]} -eq 0 ] && return
    [ "$(id -u)" = 0 ] || die "missing packages (${need[*]}) and not root"
    log "installing: ${need[*]}"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq >&2
    apt-get install -y -qq --no-install-recommends "${need[@]}" >&2
}

# ---------------------------------------------------------------- containerd
ctr_() { ctr -a "$SOCK" "$@"; }
# (ctr waits for a missing socket: check that it exists first)
containerd_answers() { [ -S "$SOCK" ] && timeout 5 ctr -a "$SOCK" version >/dev/null 2>&1; }

# await_containerd PIDFILE: wait (30 s at most) until the containerd just
# started answers on $SOCK; with a PIDFILE, fail at once if that process
# exits.
await_containerd() {
    local pidfile=${1:-} i
    for ((i = 0; i < 300; i++)); do
        containerd_answers && return 0
        [ -z "$pidfile" ] || starting "$pidfile" || die "containerd exited at start"
        sleep 0.1
    done
    die "containerd did not answer on $SOCK within 30s"
}

# remove_containers NS: kill every task of containerd namespace NS, wait
# (10 s each at most) until it no longer runs, delete it, then delete every
# container of NS.
remove_containers() {
    local ns=$1 id ids
    ids=$(ctr_ -n "$ns" tasks ls -q 2>/dev/null) || return 0
    for id in $ids; do
        log "killing task $ns/$id"
        ctr_ -n "$ns" tasks kill -a -s SIGKILL "$id" >/dev/null 2>&1 || true
    done
    for id in $ids; do
        wait_for 10 "task $ns/$id to stop" \
            bash -c "! ctr -a '$SOCK' -n '$ns' tasks ls | awk '\$1==\"$id\"{print \$3}' | grep -qx RUNNING" || true
        ctr_ -n "$ns" tasks delete -f "$id" >/dev/null 2>&1 || true
    done
    for id in $(ctr_ -n "$ns" containers ls -q 2>/dev/null); do
        log "deleting container $ns/$id"
        ctr_ -n "$ns" containers delete "$id" >/dev/null 2>&1 || true
    done
}

# build_image ARCHIVE: the test and example image, busybox:1.35 made from
# Debian's busybox-static (scripts/mkimage.sh; does nothing when up to date).
LIB_IMAGE=docker.io/library/busybox:1.35
build_image() { "$(dirname "${BASH_SOURCE[0]}")/mkimage.sh" "$1" "$LIB_IMAGE"; }
