#!/bin/sh
# selfupdatetest.sh TUG RELEASES PUB UNIT ARCHIVE IMAGE: tug updating itself
# under a real systemd (the QEMU guest booted with V2G_SYSTEMD=1 by `make
# test-self-update`). TUG (release 1) is installed as the README installs
# it, with the repository's UNIT and a drop-in for the test's directories,
# WatchdogSec=10s, RestartSec=1 and --self-update-url pointing at a python
# http.server in the guest; RELEASES holds tug-2.signed (a good tug),
# tug-3.signed (exits at start), tug-4.signed (never feeds the watchdog)
# and tug-5.signed (fails its health gate), signed with PUB's key (the
# test faults of main.selfUpdateTestFault). One pod runs throughout. In
# order, each served in turn:
#   3, 4, 5: the release is installed, switched to, and reverted with no
#      person (the launch guard after 3 launches for 3 and 4, the gate
#      itself for 5): the installed binary runs again, the state marks the
#      release broken with its reason, the pod's task keeps its pid, and
#      the release is not installed again while it is served;
#   2: installed, on trial for --self-update-trial (30 s), committed: tug
#      runs from the slot, the pod's task keeps its pid.
# Prints PASS/FAIL lines; exits 0 only if everything passed.
set -u
TUG=$1 REL=$2 PUB=$3 UNIT=$4 ARCHIVE=$5 IMAGE=$6
D=/run/tugself
NS=tugself
OUT=${V2G_OUT:-/tmp}
LOG=$OUT/tug.log
# shellcheck source=scripts/guestlib.sh
. "$(dirname "$0")/guestlib.sh"
state() { cat $D/root/self/state.json 2>/dev/null || echo '{}'; }
jqstate() { state | jq -r "$1"; }
mainexe() { readlink "/proc/$(show MainPID)/exe" 2>/dev/null; }
active() { [ "$(show ActiveState)" = active ]; }
ARCH=$(goarch)

if ! command -v jq >/dev/null || [ ! -x /usr/bin/python3 ]; then
    if [ "${CI:-}" = true ]; then fail "jq or /usr/bin/python3 is missing"; exit 1; fi
    echo "SKIP: jq or /usr/bin/python3 is missing"; exit 0
fi

mkdir -p $D/manifests $D/images $D/root $D/logs $D/run $D/www
cp "$ARCHIVE" $D/images/
hostpod web "$IMAGE" '["sleep", "86400"]' > $D/manifests/web.yaml
install -m 755 "$TUG" /usr/local/bin/tug
install -m 644 "$UNIT" /etc/systemd/system/tug.service
/usr/bin/python3 -m http.server 8099 --bind 127.0.0.1 --directory $D/www > $OUT/http.log 2>&1 &
tugdropin "$LOG" \
    "/usr/local/bin/tug run --pod-manifest-path $D/manifests --image-dir $D/images --root-dir $D/root --pod-logs-dir $D/logs --run-dir $D/run --containerd-namespace $NS --sync-frequency 5s --healthz-port 0 --self-update-url http://127.0.0.1:8099/tug-{arch}.signed --manifest-verify-key $PUB --oci-check-frequency 2s --self-update-trial 30s" \
    WatchdogSec=10s RestartSec=1
t0=$(date +%s)
systemctl start tug || fail "systemctl start tug: $(show Result)"
if waitfor 90 taskrunning; then
    pid1=$(taskpid)
    pass "tug 1 runs the pod (task pid $pid1, $(( $(date +%s) - t0 ))s)"
else
    fail "the pod does not run"; pid1=none
    tail -n 40 $LOG
fi

# serve N: the URL serves release N (renamed into place).
serve() {
    cp "$REL/tug-$1.signed" $D/www/.next && mv $D/www/.next $D/www/tug-$ARCH.signed
}

# reverted N WHAT SECONDS: release N is installed, reverted and not tried
# again.
reverted() {
    v=$1 what=$2 secs=$3 t0=$(date +%s)
    serve "$v"
    if waitfor "$secs" sh -c "[ \"\$(cat $D/root/self/state.json 2>/dev/null | jq -r '.broken[\"$v\"] // empty')\" != '' ]"; then
        pass "release $v ($what) reverted in $(( $(date +%s) - t0 ))s: $(jqstate ".broken[\"$v\"]")"
    else
        fail "release $v ($what) not reverted within ${secs}s: state $(state), tug $(show ActiveState), NRestarts $(show NRestarts)"
        tail -n 30 $LOG
        return
    fi
    waitfor 60 active || fail "tug is $(show ActiveState) after the revert of $v"
    waitfor 30 sh -c "[ \"\$(readlink /proc/\$(systemctl show -p MainPID --value tug)/exe)\" = /usr/local/bin/tug ]" &&
        pass "the installed tug runs again ($(mainexe))" || fail "tug runs $(mainexe) after the revert of $v"
    [ -z "$(readlink $D/root/self/current)" ] && pass "no current link" || fail "current link $(readlink $D/root/self/current)"
    [ "$(jqstate .last.state)" = reverted ] && [ "$(jqstate .trial)" = null ] || fail "state after the revert of $v: $(state)"
    n=$(show NRestarts)
    if waitfor 30 grep -q "version $v: .*reverted on this device\|reverted on this device: version $v" $LOG; then
        pass "release $v, still served, is refused: $(grep -m1 "reverted on this device: version $v" $LOG | cut -c1-160)"
    else
        fail "no refusal of the reverted release $v in tug's log"
    fi
    sleep 6
    [ "$(show NRestarts)" = "$n" ] && [ "$(jqstate .trial)" = null ] && pass "release $v not tried again" ||
        fail "release $v tried again: NRestarts $n -> $(show NRestarts), state $(state)"
    p=$(taskpid)
    [ "$p" = "$pid1" ] && pass "the pod kept its task (pid $p)" || fail "the pod's task pid changed: $pid1 -> $p"
}

reverted 3 "exits at start" 180
reverted 4 "never feeds the watchdog" 300
reverted 5 "fails its health gate" 240

# The good release: on trial for 30 s, then committed.
t0=$(date +%s)
serve 2
if waitfor 240 sh -c "[ \"\$(cat $D/root/self/state.json 2>/dev/null | jq -r .committed)\" = 2 ]"; then
    pass "release 2 committed in $(( $(date +%s) - t0 ))s (slot $(jqstate .good))"
else
    fail "release 2 not committed within 240s: state $(state), tug $(show ActiveState)"
    tail -n 30 $LOG
fi
case "$(mainexe)" in
    $D/root/self/[ab]/tug) pass "tug runs from its slot: $(mainexe)" ;;
    *) fail "tug runs $(mainexe)" ;;
esac
active && pass "tug is active" || fail "tug is $(show ActiveState)"
p=$(taskpid)
[ "$p" = "$pid1" ] && pass "the pod kept its task through the update (pid $p)" || fail "the pod's task pid changed: $pid1 -> $p"
grep -q 'starting tug.*version=selfupdate-2' $LOG && pass "release 2's binary logged its start" || fail "no start of release 2 in tug's log"

systemctl stop tug
killtasks
summary "self-update test"
