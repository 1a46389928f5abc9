#!/usr/bin/env bash
# powercut.sh TUG UNIT ARCHIVE IMAGE: cut the power of a device running tug,
# CUTS times, and check after every boot what came back (`make test-powercut`).
#
# The device is the QEMU guest of scripts/v2guest.sh with systemd as PID 1
# (V2G_SYSTEMD=1) and a persistent ext4 disk (V2G_DISK, a raw image file that
# holds /var/lib/containerd, tug's root dir, /var/log/pods, the manifests and
# the claims). Each boot runs scripts/powercut-guest.sh (see its header):
# it reports what the last cut left, starts tug with the repository's unit
# (TUG, UNIT), waits for the 11 pods (4 writing fsync'd records to claims, 3
# writing logs, a URL bundle of 3 pods, one whose image comes from a
# registry in the guest) and then swaps the URL's bundle, sometimes to a
# version that fails its readiness probe so that tug rolls it back, and
# the puller's image to a new one tug has to pull, until the cut.
#
# The cut: QEMU is killed with SIGKILL (no shutdown, no sync: what is only
# in the guest's page cache is lost; the guest keeps dirty pages up to 30 s
# and ext4 commits every 30 s to lose more), at a seeded random moment:
# one boot in four during start-up (3-30 s after QEMU starts), otherwise
# 0-PC_HOLD s after the boot's checks (the guest swaps the bundle from the
# moment every pod runs, the first time 1-8 s after). Boot CUTS+1 only checks.
#
# Checked after every boot (PASS/FAIL lines; exit 1 on any FAIL):
#   - e2fsck -p fixes what it finds (exit < 4), the disk mounts;
#   - tug starts (and does not exit) and every pod is Running and Ready
#     within PC_BOUND s of tug's start, the URL bundle's three pods on one version (an atomic bundle
#     is never half applied): the served one, or when the served one is bad
#     a good one no newer than the last good served;
#   - no acknowledged record is lost: each writer's claim holds, as records
#     that parse in order, at least as many as it acknowledged (on 9p, to
#     the host) before any earlier cut;
#   - container logs are CRI lines but for a torn last line of a file; the
#     loggers' logs go on after the boot, and tug logs reads them;
#   - the status sequence file never goes below a value seen before the cut;
#   - the remote-write buffer: tug starts over what the cut left of it
#     (its size is printed; the receiver is absent, so it only grows).
# Failures are classed tug, containerd or kernel (kernel and file system).
# `powercut.sh --summary PC_DIR` prints a run's figures so far.
#
# Knobs: CUTS (2: ~3.5 min here), PC_RESUME (1: go on with the run in PC_DIR),
# SEED (default: the time; printed, SEED=... replays the
# cut moments and the guest's swaps), PC_BOUND (300 s, tug's start to all
# Running), PC_HOLD (20 s), PC_DIR (the run's files, default
# $V2G_DIR/powercut/<time>-<pid>, the newest V2G_KEEP_RUNS (5) kept: disk.raw, boot-N/{v2guest.log,console.log,
# out/{output.log,tug.log,containerd.log,acks/}}, summary.txt).
set -uo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# powercut.sh --summary PC_DIR: the figures of a run so far (a soak that
# still runs included), from its summary.txt and failures.txt.
if [ "${1:-}" = --summary ] && [ -d "${2:-}" ]; then
    sum=$2/summary.txt f=$2/failures.txt
    times=$(awk '$1 == "boot" && $7 ~ /^[0-9.]+$/ {print $7}' "$sum" | sort -n)
    echo "boots $(grep -cE '^boot [0-9]+: (cut-|final|ended)' "$sum"), cuts $(grep -cE '^boot [0-9]+: cut-' "$sum")" \
        "($(grep -cE '^boot [0-9]+: cut-starting' "$sum") during start-up), boots with every pod Running and Ready $(grep -c . <<<"$times")"
    [ -n "$times" ] && awk '{a[NR] = $1} END{printf "boot to all Running and Ready: median %.0f s, max %.0f s\n", (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2, a[NR]}' <<<"$times"
    fl=$(cat "$f" 2>/dev/null)
    echo "failures: $(grep -c . <<<"$fl") (tug $(grep -c 'FAIL\[tug\]' <<<"$fl"), containerd $(grep -c 'FAIL\[containerd\]' <<<"$fl"), kernel/fs $(grep -c 'FAIL\[kernel\]' <<<"$fl"))"
    [ -z "$fl" ] || echo "$fl"
    exit 0
fi
[ $# -eq 4 ] || { echo "usage: $0 TUG UNIT ARCHIVE IMAGE | --summary PC_DIR" >&2; exit 2; }
TUG=$(realpath "$1") UNIT=$(realpath "$2") ARCHIVE=$(realpath "$3") IMAGE=$4
CUTS=${CUTS:-2}
SEED=${SEED:-$(date +%s)}
BOUND=${PC_BOUND:-300}
HOLD=${PC_HOLD:-20}
export V2G_DIR=${V2G_DIR:-/var/tmp/tug-v2guest}
if [ -z "${PC_DIR:-}" ]; then
    # the newest runs stay (each has its disk image, ~120 MiB)
    mkdir -p "$V2G_DIR/powercut"
    find "$V2G_DIR/powercut" -mindepth 1 -maxdepth 1 -type d -printf '%T@ %p\n' | sort -rn |
        tail -n +"${V2G_KEEP_RUNS:-5}" | cut -d' ' -f2- | xargs -r rm -rf
    PC_DIR=$V2G_DIR/powercut/$(date +%Y%m%d-%H%M%S)-$$
fi
DISK=$PC_DIR/disk.raw
mkdir -p "$PC_DIR"
SUM=$PC_DIR/summary.txt
RANDOM=$SEED
WRITERS="writer-1 writer-2 writer-3 writer-4"

log() { echo "powercut: $*"; }
fails=0
declare -A classes=()
record_fail() { # CLASS TEXT
    echo "FAIL[$1]: $2"
    fails=$((fails + 1)); classes[$1]=$((${classes[$1]:-0} + 1))
    echo "boot $b FAIL[$1]: $2" >> "$PC_DIR/failures.txt"
}
log "SEED=$SEED CUTS=$CUTS PC_BOUND=$BOUND PC_HOLD=$HOLD, files in $PC_DIR (replay: SEED=$SEED CUTS=$CUTS make test-powercut)"

# maxack WRITER: the highest record number WRITER acknowledged in the boots so far.
maxack() { cat "$PC_DIR"/boot-*/out/acks/"$1" 2>/dev/null | grep -E '^[0-9]+$' | sort -n | tail -n 1; }
maxseq() { cat "$PC_DIR"/boot-*/out/output.log 2>/dev/null | awk '$1 == "SEQNOW" && $2 ~ /^[0-9]+$/ {print $2}' | sort -n | tail -n 1; }

# draw: boot b's seeded moments (a cut during start-up at tcut s, or hold s
# after the boot's checks).
draw() {
    early=0 tcut=
    if [ $b -lt "$CUTS" ] && [ $((RANDOM % 4)) = 0 ]; then early=1; tcut=$((3 + RANDOM % 28)); fi
    hold=$((RANDOM % (HOLD + 1)))
}

# PC_RESUME=1 with the PC_DIR of a run goes on with that run: the boots
# its summary.txt records stay, the boot that was under way when the run
# stopped (its QEMU killed: one more cut, at a moment the seed did not
# choose) is done again, its files kept as boot-N.stopped-TIME, and the
# draws of the boots done are made again so that the rest of the run is
# the one SEED gives.
first=0
if [ "${PC_RESUME:-}" = 1 ] && [ -s "$SUM" ]; then
    first=$(awk '$1 == "boot" && $3 ~ /^(cut-|final|ended)/ {sub(":", "", $2); n = $2 + 1} END {print n + 0}' "$SUM")
    [ -d "$PC_DIR/boot-$first" ] && mv "$PC_DIR/boot-$first" "$PC_DIR/boot-$first.stopped-$(date +%s)"
    log "resuming at boot $first"
fi
settles=() fromtug=()
pods_back=0
t_all=$SECONDS
for ((b = 0; b <= CUTS; b++)); do
    draw
    [ $b -lt $first ] && continue
    RUN=$PC_DIR/boot-$b
    mkdir -p "$RUN/out"
    declare -A acked=()
    for w in $WRITERS; do acked[$w]=$(maxack $w); done
    seqmax=$(maxseq)
    V2G_SYSTEMD=1 V2G_DISK=$DISK V2G_RUN=$RUN V2G_PIDFILE=$RUN/qemu.pid V2G_TIMEOUT=$((BOUND + 900)) V2G_STALL=0 \
        "$HERE/v2guest.sh" run -- sh "$HERE/powercut-guest.sh" $b "$SEED" "$TUG" "$UNIT" "$ARCHIVE" "$IMAGE" "$BOUND" \
        > "$RUN/v2guest.log" 2>&1 &
    vpid=$!
    t0=$SECONDS
    out=$RUN/out/output.log
    state=boot settled= tset=
    while :; do
        sleep 0.5
        el=$((SECONDS - t0))
        if ! kill -0 $vpid 2>/dev/null; then
            record_fail tug "boot $b: the guest ended by itself (see $RUN/v2guest.log)"; state=ended; break
        fi
        if [ -z "$tset" ] && grep -q '^CHECKED' "$out" 2>/dev/null; then
            tset=$SECONDS
            settled=$(awk '$1 == "SETTLED" {print $2}' "$out")
            [ $b -eq "$CUTS" ] && { state=final; break; }
        fi
        if [ -n "$tset" ] && [ $((SECONDS - tset)) -ge "$hold" ]; then state=cut-running; break; fi
        if [ $early = 1 ] && [ -z "$tset" ] && [ $el -ge "$tcut" ]; then state=cut-starting; break; fi
        if [ $el -ge $((BOUND + 120)) ]; then record_fail tug "boot $b: no CHECKED within $((BOUND + 120))s of QEMU's start"; state=cut-stuck; break; fi
    done
    el=$((SECONDS - t0))
    [ -s "$RUN/qemu.pid" ] && kill -KILL "$(cat "$RUN/qemu.pid")" 2>/dev/null
    wait $vpid 2>/dev/null

    # The guest's own checks.
    while IFS= read -r line; do
        case $line in
            PASS:*) echo "boot $b $line" ;;
            FAIL\[*) c=${line#FAIL[}; c=${c%%]*}; record_fail "$c" "boot $b: ${line#*]: }" ;;
        esac
    done < <(grep -aE '^(PASS|FAIL)' "$out" 2>/dev/null)
    # Acknowledged records against what the claims hold.
    if [ $b -gt 0 ]; then
        for w in $WRITERS; do
            a=${acked[$w]:-0}; a=${a:-0}
            v=$(awk -v w=$w '$1 == "CLAIM" && $2 == w {sub("valid=", "", $3); print $3}' "$out" 2>/dev/null)
            if [ -z "$v" ]; then
                [ "$state" = cut-starting ] || record_fail tug "boot $b: no CLAIM line for $w"
            elif [ "$v" -ge "$a" ]; then
                echo "boot $b PASS: $w's claim holds $v records in order, $a acknowledged before the cut ($(awk -v w=$w '$1 == "CLAIM" && $2 == w {print $4, $5}' "$out"))"
            else
                record_fail kernel "boot $b: $w lost acknowledged records: $v on disk, $a acknowledged"
            fi
        done
        s=$(awk '$1 == "SEQ" {sub("value=", "", $2); print $2}' "$out" 2>/dev/null)
        if [ -n "$seqmax" ]; then
            if [ -n "$s" ] && [ "$s" -ge "$seqmax" ] 2>/dev/null; then
                echo "boot $b PASS: status sequence file $s >= $seqmax seen before the cut"
            elif grep -q '^SEQ' "$out"; then
                record_fail tug "boot $b: status sequence file went back: '$(grep -m1 '^SEQ' "$out")', $seqmax seen before the cut"
            fi
        fi
        lg=$(grep -m1 '^LOGS' "$out")
        if [ -n "$lg" ]; then
            case $lg in
                *bad_middle=0*) echo "boot $b PASS: container logs parse as CRI lines ($lg)" ;;
                *) record_fail tug "boot $b: container log lines that are not CRI lines: $lg $(grep -m2 '^LOGBAD' "$out" | tr '\n' ' ')" ;;
            esac
        fi
    fi
    if [ -n "$settled" ]; then
        settles+=("$settled"); pods_back=$((pods_back + 1))
        fromtug+=("$(awk '$1 == "SETTLED" {sub("tugstart=", "", $3); print $2 - $3}' "$out")")
    fi
    printf '%s\n' "boot $b: $state after ${el}s; settled ${settled:-never} s after boot; $(grep -m1 '^RW' "$out" 2>/dev/null); $(grep -m1 '^RWLOG' "$out" 2>/dev/null); $(grep -m1 '^DISK' "$out" 2>/dev/null)" | tee -a "$SUM"
done

# Summary.
boots=$((CUTS + 1))
medmax() { # median and max of the arguments, or "- -"
    [ $# -gt 0 ] || { echo "- -"; return; }
    printf '%s\n' "$@" | sort -n | awk '{a[NR] = $1} END{m = (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2; print m, a[NR]}'
}
read -r med max < <(medmax "${settles[@]}")
read -r tmed tmax < <(medmax "${fromtug[@]}")
{
    echo "SUMMARY seed=$SEED cuts=$CUTS boots=$boots boots with every pod back=$pods_back/$boots"
    echo "SUMMARY time from boot to all Running and Ready: median ${med}s, max ${max}s (from tug's start: median ${tmed}s, max ${tmax}s)"
    echo "SUMMARY failures: $fails (tug ${classes[tug]:-0}, containerd ${classes[containerd]:-0}, kernel/fs ${classes[kernel]:-0}); wall time $((SECONDS - t_all))s"
} | tee -a "$SUM"
[ $fails -eq 0 ] && echo "powercut: PASS" || echo "powercut: FAIL ($fails failures, $PC_DIR/failures.txt)"
[ $fails -eq 0 ]
