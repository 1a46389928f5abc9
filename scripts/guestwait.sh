# guestwait.sh: what scripts/v2guest.sh and scripts/arm64guest.sh share to
# run their QEMU and wait for it. Sourced; the caller defines log() and
# boot_guest().
#
# guest_prune_runs DIR KEEP: makes DIR, the runs' directory, and keeps in it
# only the newest KEEP - 1 runs, to make room for a fresh one.
guest_prune_runs() {
    mkdir -p "$1"
    find "$1" -mindepth 1 -maxdepth 1 -type d -printf '%T@ %p\n' | sort -rn |
        tail -n +"$2" | cut -d' ' -f2- | xargs -r rm -rf
}

# guest_boots RETRIES CMD...: boot_guest CMD... in $RUN, and again while the
# guest stalls (126), RETRIES times at the most, each stalled run's files
# moved aside to $RUN.stalled-N; returns the last boot's status.
guest_boots() {
    local retries=$1 attempt=1 status
    shift
    while :; do
        boot_guest "$@" && return 0 || status=$?
        [ "$status" = 126 ] && [ "$attempt" -le "$retries" ] || break
        mv "$RUN" "$RUN.stalled-$attempt"
        attempt=$((attempt + 1))
        log "the stalled run's files are in $RUN.stalled-$((attempt - 1)); booting again (attempt $attempt of $((retries + 1)))"
    done
    return "$status"
}

# guest_wait RUN TIMEOUT STALL KNOB [TAG]: supervises the QEMU the caller
# started in the background as $QPID (timeout(1)'s pid; QEMU is its child).
# It streams RUN/console.log, kills a guest whose RUN/out/heartbeat (written
# every 5 s by the guest) is older than STALL seconds (0: no watch; KNOB is
# the prefix of the caller's settings, for the messages), waits, and returns
# the command's status: RUN/out/exit_status, else the last "TAG: exit status
# N" line of the console; 124 when TIMEOUT killed the guest, 126 when it
# stalled, 125 when it left no status. On a failure it prints QEMU's output
# and the last lines of the guest's containerd log.
guest_wait() {
    local run=$1 timeout=$2 stall=$3 knob=$4 tag=${5:-} t0=$SECONDS rc=0 tpid stalled= beat
    trap '[ -z "$QPID" ] || kill "$QPID" 2>/dev/null; exit 130' INT TERM HUP
    # Stream the console (kernel messages, the guest init, the command's output).
    tail -s 0.2 -n +1 -F "$run/console.log" --pid="$QPID" 2>/dev/null | sed -u 's/\r$//' &
    tpid=$!
    # The heartbeat's age is counted from the boot until the first one: a
    # guest without one for over STALL seconds is frozen (QEMU or the guest's
    # kernel), whatever the command was doing.
    if [ "$stall" -gt 0 ]; then
        while kill -0 "$QPID" 2>/dev/null; do
            sleep 2
            beat=$(stat -c %Y "$run/out/heartbeat" 2>/dev/null) || beat=$(($(date +%s) - SECONDS + t0))
            if [ $(($(date +%s) - beat)) -gt "$stall" ]; then
                stalled=1
                log "STALLED: no heartbeat from the guest for over ${stall}s (${knob}_STALL): QEMU or the guest's kernel froze"
                # KILL: a frozen QEMU (or timeout(1)) may not act on TERM.
                pkill -KILL -P "$QPID" 2>/dev/null || true
                kill -KILL "$QPID" 2>/dev/null || true
                break
            fi
        done
    fi
    wait "$QPID" || rc=$?
    QPID=
    trap - INT TERM HUP
    sleep 0.3
    kill "$tpid" 2>/dev/null || true
    wait "$tpid" 2>/dev/null || true
    log "guest ran $((SECONDS - t0))s (qemu exit status $rc)"

    local status=125
    if [ -n "$stalled" ]; then
        status=126
    elif [ "$rc" = 124 ] || [ "$rc" = 137 ]; then
        log "TIMEOUT: the guest was killed after ${timeout}s (${knob}_TIMEOUT)"
        status=124
    elif [ -s "$run/out/exit_status" ]; then
        status=$(cat "$run/out/exit_status")
    elif [ -n "$tag" ] && grep -q "^$tag: exit status [0-9]" "$run/console.log"; then
        status=$(sed -n "s/^$tag: exit status \([0-9]*\).*/\1/p" "$run/console.log" | tail -1)
    else
        log "the guest left no exit status"
    fi
    if [ "$status" != 0 ]; then
        [ -s "$run/qemu.log" ] && { log "---- qemu's output"; cat "$run/qemu.log" >&2; }
        [ -s "$run/out/containerd.log" ] && { log "---- last 60 lines of the guest's containerd log"; tail -n 60 "$run/out/containerd.log" >&2; }
        log "FAILED (status $status); console, containerd log and output in $run"
    fi
    return "$status"
}
