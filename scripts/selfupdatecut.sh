#!/bin/bash
# selfupdatecut.sh RELEASES UNIT ARCHIVE IMAGE: a power cut during tug's
# update of itself. Two boots of the systemd guest with one persistent disk
# (V2G_DISK): the first runs tug 1 with its pod, serves release 2, and is
# killed (SIGKILL of QEMU, as scripts/powercut.sh cuts) at a seeded moment
# 0 to SU_HOLD (6) s after tug logs that it installs it (tug's log reaches
# the host through the out share as it is written), while tug writes the
# binary, checks it, records the trial, switches and restarts into it; the
# second boots from what the disk kept and must
# start tug, run the pod and commit release 2
# (scripts/selfupdatecut-guest.sh). SEED replays a run's moment. Exits 0
# only if every check passed.
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
REL=$1 UNIT=$2 ARCHIVE=$3 IMAGE=$4
SEED=${SEED:-$(( $(date +%s) % 100000 ))}
HOLD=${SU_HOLD:-6}
RANDOM=$SEED
tenths=$(( RANDOM % (HOLD * 10 + 1) ))
hold=$((tenths / 10)).$((tenths % 10))
DIR=${V2G_DIR:-/var/tmp/tug-v2guest}/selfupdatecut/$(date +%Y%m%d-%H%M%S)-$$
mkdir -p "$DIR"
DISK=$DIR/disk.img
echo "selfupdatecut: seed $SEED, the cut ${hold}s after tug starts installing release 2; files in $DIR"
fails=0

RUN=$DIR/boot-0
mkdir -p "$RUN/out"
V2G_SYSTEMD=1 V2G_DISK=$DISK V2G_RUN=$RUN V2G_PIDFILE=$RUN/qemu.pid V2G_STALL=0 \
    "$HERE/v2guest.sh" run -- sh "$HERE/selfupdatecut-guest.sh" cut "$REL/tug-1" "$REL" "$REL/key.pub.pem" "$UNIT" "$ARCHIVE" "$IMAGE" \
    > "$RUN/v2guest.log" 2>&1 &
vpid=$!
t0=$SECONDS
cut=
while kill -0 $vpid 2>/dev/null; do
    sleep 0.5
    if [ -z "$cut" ] && grep -q 'self-update: installing a release' "$RUN/out/tug.log" 2>/dev/null; then
        sleep "$hold"
        cut=1
        kill -KILL "$(cat "$RUN/qemu.pid")" 2>/dev/null
        break
    fi
    if [ $((SECONDS - t0)) -ge 600 ]; then break; fi
done
[ -s "$RUN/qemu.pid" ] && kill -KILL "$(cat "$RUN/qemu.pid")" 2>/dev/null
wait $vpid 2>/dev/null
grep -aE '^(PASS|FAIL)' "$RUN/out/output.log" 2>/dev/null | sed 's/^/boot 0 /'
grep -aqE '^FAIL' "$RUN/out/output.log" && fails=$((fails + 1))
if [ -z "$cut" ]; then
    echo "FAIL: boot 0: tug never installed release 2 (see $RUN)"
    exit 1
fi
echo "boot 0: power cut ${hold}s after tug started installing release 2; tug's last lines:"
grep -a 'self-update' "$RUN/out/tug.log" | tail -n 4 | cut -c1-200

RUN=$DIR/boot-1
mkdir -p "$RUN/out"
V2G_SYSTEMD=1 V2G_DISK=$DISK V2G_RUN=$RUN V2G_STALL=0 \
    "$HERE/v2guest.sh" run -- sh "$HERE/selfupdatecut-guest.sh" after "$REL/tug-1" "$REL" "$REL/key.pub.pem" "$UNIT" "$ARCHIVE" "$IMAGE" \
    > "$RUN/v2guest.log" 2>&1
rc=$?
grep -aE '^(PASS|FAIL|state after)' "$RUN/out/output.log" 2>/dev/null | sed 's/^/boot 1 /'
[ $rc -eq 0 ] || fails=$((fails + 1))
rm -f "$DISK"
echo "selfupdatecut: seed $SEED: $fails failing boot(s)"
[ $fails -eq 0 ]
