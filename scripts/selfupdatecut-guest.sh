#!/bin/sh
# selfupdatecut-guest.sh MODE TUG RELEASES PUB UNIT ARCHIVE IMAGE: one boot of
# the self-update power cut (scripts/selfupdatecut.sh runs it in the systemd
# guest with a persistent disk: /var/lib/tug and containerd's root on it,
# the manifests and the served release under /persist). MODE cut: tug 1
# installed with the repository's unit, the pod running, then release 2
# served; the line SERVED tells the host, which cuts the power at a seeded
# moment while tug fetches, installs, checks, switches and restarts. MODE
# after: the boot after the cut: tug starts and runs the pod, the state
# file and the current link are consistent, and release 2 is committed
# within 300 s (its trial goes on, or the update is made again).
set -u
MODE=$1 TUG=$2 REL=$3 PUB=$4 UNIT=$5 ARCHIVE=$6 IMAGE=$7
P=/persist/selfcut
NS=tugselfcut
OUT=${V2G_OUT:-/tmp}
LOG=$OUT/tug.log
# shellcheck source=scripts/guestlib.sh
. "$(dirname "$0")/guestlib.sh"
state() { cat /var/lib/tug/self/state.json 2>/dev/null || echo '{}'; }
ARCH=$(goarch)
if ! mountpoint -q /persist || ! command -v jq >/dev/null; then
    fail "no persistent disk or no jq"; exit 1
fi

mkdir -p $P/manifests $P/images $P/www /var/lib/tug
[ -f $P/images/busybox.tar ] || cp "$ARCHIVE" $P/images/busybox.tar
hostpod web "$IMAGE" '["sleep", "86400"]' > $P/manifests/web.yaml
sync
# The guest's / is thrown away at each boot: the install steps again.
install -m 755 "$TUG" /usr/local/bin/tug
install -m 644 "$UNIT" /etc/systemd/system/tug.service
/usr/bin/python3 -m http.server 8099 --bind 127.0.0.1 --directory $P/www > $OUT/http.log 2>&1 &
tugdropin "$LOG" \
    "/usr/local/bin/tug run --pod-manifest-path $P/manifests --image-dir $P/images --root-dir /var/lib/tug --containerd-namespace $NS --sync-frequency 5s --healthz-port 0 --self-update-url http://127.0.0.1:8099/tug-{arch}.signed --manifest-verify-key $PUB --oci-check-frequency 2s --self-update-trial 30s" \
    WatchdogSec=20s RestartSec=1

if [ "$MODE" = after ]; then
    echo "state after the cut: $(state); current -> $(readlink /var/lib/tug/self/current)"
    if cat /var/lib/tug/self/state.json >/dev/null 2>&1 && ! jq -e . /var/lib/tug/self/state.json >/dev/null 2>&1; then
        fail "the state file does not parse: $(head -c 300 /var/lib/tug/self/state.json | od -c | head -5)"
    fi
fi
t0=$(date +%s)
systemctl start tug || echo "note: systemctl start tug: $(show Result) (it restarts)"
if waitfor 240 taskrunning; then
    pass "$MODE: the pod runs ($(( $(date +%s) - t0 ))s after tug's start)"
else
    fail "$MODE: the pod does not run within 240s; tug $(show ActiveState)"
    tail -n 30 $LOG
fi
if [ "$MODE" = cut ]; then
    cp "$REL/tug-2.signed" $P/www/.next && mv $P/www/.next $P/www/tug-$ARCH.signed && sync
    echo SERVED
    sleep 600
    exit 0
fi

# After the cut.
if waitfor 300 sh -c "[ \"\$(cat /var/lib/tug/self/state.json 2>/dev/null | jq -r .committed)\" = 2 ]"; then
    pass "after: release 2 committed ($(( $(date +%s) - t0 ))s after tug's start): $(state | jq -c '{committed, good, broken}')"
else
    fail "after: release 2 not committed within 300s: state $(state), current -> $(readlink /var/lib/tug/self/current), tug $(show ActiveState)"
    grep -a 'self-update' $LOG | tail -n 20
fi
exe=$(readlink "/proc/$(show MainPID)/exe")
case "$exe" in
    /var/lib/tug/self/[ab]/tug) pass "after: tug runs from its slot ($exe)" ;;
    *) fail "after: tug runs $exe" ;;
esac
[ "$(show ActiveState)" = active ] && pass "after: tug is active" || fail "after: tug is $(show ActiveState)"
taskrunning && pass "after: the pod runs" || fail "after: the pod does not run"
systemctl stop tug
killtasks
summary "self-update cut test"
