#!/bin/sh
# systemdtest.sh TUG UNIT ARCHIVE IMAGE: tug under a real systemd (run in the
# QEMU guest booted with V2G_SYSTEMD=1 by `make test-systemd`, systemd as
# PID 1). It installs UNIT (the repository's systemd/tug.service, hardening
# included) with a drop-in for the test's directories and WatchdogSec=10s,
# and checks:
#   0. systemd-analyze verify accepts UNIT as the README installs it (TUG
#      at /usr/local/bin/tug, no drop-in): its syntax, its dependencies,
#      ExecStart's binary (with CI=true a missing systemd-analyze fails);
#   1. systemctl start returns only once tug sent READY=1, and STATUS= has
#      the pod counts;
#   2. with the sync loop wedged (the hidden --test-fault-wedge-sync-loop),
#      tug stops sending WATCHDOG=1, says so in STATUS=, and systemd kills
#      it (watchdog) and restarts it;
#   3. the restarted tug adopts the pod: its task has the same pid;
#   4. systemctl stop leaves the pod running;
#   5. journald (it runs in the guest; with CI=true its absence, jq's or
#      systemd-journal-remote's fails): tug's error lines are at priority
#      err (journalctl -u tug -p err), its info lines at info without the
#      <N> prefix; with --container-log-driver journald a container's
#      stdout and stderr lines are entries with PRIORITY 6 and 3 and
#      podman's and the pod's fields, no CRI file is written, tug logs
#      reads them back (and not an entry a non-root user sent with the
#      container's ID), and systemd-journal-upload ships them to
#      systemd-journal-remote (http on 127.0.0.1:19532, one output file).
# Prints PASS/FAIL lines; exits 0 only if everything passed.
set -u
TUG=$1 UNIT=$2 ARCHIVE=$3 IMAGE=$4
D=/run/tugtest
NS=tugsystemd
POLL_TENTHS=2
# shellcheck source=scripts/guestlib.sh
. "$(dirname "$0")/guestlib.sh"

mkdir -p $D/manifests $D/images $D/root $D/logs $D/run
cp "$ARCHIVE" $D/images/
hostpod web "$IMAGE" '["sleep", "86400"]' > $D/manifests/web.yaml
install -m 644 "$UNIT" /etc/systemd/system/tug.service

# 0. The unit as the README's install steps leave it (the guest's / is an
# overlay that is thrown away). Its own lines are the ones that name it.
install -m 755 "$TUG" /usr/local/bin/tug
if ! command -v systemd-analyze >/dev/null; then
    need "systemd-analyze is missing (package systemd)"
elif out=$(systemd-analyze verify /etc/systemd/system/tug.service 2>&1) && ! echo "$out" | grep -q 'tug\.service'; then
    pass "systemd-analyze verify tug.service"
else
    fail "systemd-analyze verify tug.service: $out"
fi

# SYSTEMDTEST_EXTRA: more [Service] lines for the drop-in, separated by spaces.
tugdropin "${V2G_OUT:-/tmp}/tug.log" \
    "$TUG run --pod-manifest-path $D/manifests --image-dir $D/images --root-dir $D/root --pod-logs-dir $D/logs --run-dir $D/run --containerd-namespace $NS --sync-frequency 5s --healthz-port 0 \$FAULT" \
    "EnvironmentFile=-$D/fault.env" WatchdogSec=10s RestartSec=1 "$(echo "${SYSTEMDTEST_EXTRA:-}" | tr " " "\n")"

# 1. READY and STATUS.
t0=$(date +%s)
if systemctl start tug; then
    pass "systemctl start tug returned after READY=1 ($(( $(date +%s) - t0 ))s)"
else
    fail "systemctl start tug: $(show Result)"
fi
[ "$(show ActiveState)" = active ] && pass "tug is active" || fail "tug is $(show ActiveState)"
case "$(show StatusText)" in *pods:*) pass "STATUS=$(show StatusText)" ;; *) fail "STATUS= without pod counts: '$(show StatusText)'" ;; esac
if waitfor 60 taskrunning; then
    pid1=$(taskpid)
    pass "the pod runs (task pid $pid1)"
else
    fail "the pod does not run"; pid1=none
    echo "---- tug's log (out/tug.log)"; tail -n 40 "${V2G_OUT:-/tmp}/tug.log"
fi

# 2. The wedge: restart tug with the fault, then take it away so that the
# restart after the watchdog's kill runs normally.
echo "FAULT=--test-fault-wedge-sync-loop=3s" > $D/fault.env
systemctl restart tug || fail "systemctl restart tug with the fault"
rm -f $D/fault.env
n0=$(show NRestarts)
saw_unhealthy=
wedged() {
    case "$(show StatusText)" in unhealthy*) saw_unhealthy=1 ;; esac
    [ "$(show NRestarts)" -gt "$n0" ]
}
if waitfor 90 wedged; then
    pass "systemd restarted the wedged tug (NRestarts $(show NRestarts))"
else
    fail "no restart within 90s of the wedge (NRestarts $(show NRestarts), state $(show ActiveState), status '$(show StatusText)')"
fi
[ -n "$saw_unhealthy" ] && pass "STATUS= said unhealthy before the kill" || echo "note: the unhealthy STATUS= was not seen between polls"
if journalctl -u tug --no-pager 2>/dev/null | grep -qi watchdog; then pass "the journal names the watchdog"; fi

# 3. Adoption.
waitfor 60 sh -c '[ "$(systemctl show -p ActiveState --value tug)" = active ]' || fail "tug not active after the restart"
waitfor 30 sh -c "systemctl show -p StatusText --value tug | grep -q 'pods:'" || true
pid2=$(taskpid)
[ "$pid1" = "$pid2" ] && pass "the restarted tug adopted the pod (task pid $pid2)" || fail "the task pid changed: $pid1 -> $pid2"

# 4. Stop.
systemctl stop tug
pid3=$(taskpid)
[ "$pid3" = "$pid1" ] && pass "systemctl stop tug left the pod running" || fail "after stop the task pid is '$pid3'"

# 5. journald: tug's own errors at their priority (a manifest file that
# does not parse is logged at error level), container output as journal
# entries with podman's fields (--container-log-driver journald), tug logs
# reading them back, and systemd-journal-upload shipping them to
# systemd-journal-remote.
JREMOTE=/lib/systemd/systemd-journal-remote JUPLOAD=/lib/systemd/systemd-journal-upload
if ! systemctl is-active -q systemd-journald || [ ! -S /run/systemd/journal/socket ]; then
    need "systemd-journald does not run in the guest"
elif ! command -v jq >/dev/null; then
    need "jq is missing (package jq)"
else
    pass "systemd-journald runs"
    hostpod talk "$IMAGE" '["sh", "-c", "echo talk-out; echo talk-err >&2; sleep 86400"]' talk > $D/manifests/talk.yaml
    printf 'apiVersion: v1\nkind: Pod\nmetadata: [broken\n' > $D/manifests/broken.yaml
    sed -i -e 's|^StandardOutput=.*|StandardOutput=journal|' -e 's|^StandardError=.*|StandardError=journal|' \
        -e 's|^\(ExecStart=.* run \)|\1--container-log-driver journald |' "$TUGDROPIN"
    systemctl daemon-reload
    systemctl start tug || fail "systemctl start tug with the journald driver: $(show Result)"
    if waitfor 60 sh -c 'journalctl -u tug -p err -o cat --no-pager | grep -q "manifest file failing"'; then
        pass "journalctl -u tug -p err shows tug's error: $(journalctl -u tug -p err -o cat --no-pager | grep -m1 'manifest file failing' | cut -c1-120)"
    else
        fail "no error of tug at priority err; tug's journal: $(journalctl -u tug -o cat --no-pager | tail -n 5)"
    fi
    if journalctl -u tug -p err -o cat --no-pager | grep -q 'starting tug'; then
        fail "journalctl -p err shows tug's info lines"
    elif ! journalctl -u tug -p info -o cat --no-pager | grep -q '^time=.*starting tug'; then
        fail "tug's info line 'starting tug' is not at priority info (or keeps its <N> prefix)"
    else
        pass "tug's info lines are at priority info, without the <N> prefix"
    fi
    entries() { journalctl CONTAINER_NAME=talk -o json --no-pager 2>/dev/null; }
    if waitfor 120 sh -c "journalctl CONTAINER_NAME=talk -o cat --no-pager | grep -q talk-err"; then
        pass "the container's lines are in the journal"
    else
        fail "no journal entry with CONTAINER_NAME=talk; tug's journal: $(journalctl -u tug -o cat --no-pager | tail -n 5)"
    fi
    fields='.TUG_POD_NAMESPACE == "default" and (.TUG_POD_NAME | startswith("talk")) and (.TUG_POD_UID | length > 0)
        and (.CONTAINER_ID_FULL | length > 0) and (.CONTAINER_ID | test("^[0-9a-f]{12}$"))
        and (.CONTAINER_TAG | endswith("/talk")) and .SYSLOG_IDENTIFIER == .CONTAINER_TAG'
    if entries | jq -se "any(.[]; .MESSAGE == \"talk-out\" and .PRIORITY == \"6\" and $fields)" >/dev/null; then
        pass "stdout line: PRIORITY 6 and the pod's fields"
    else
        fail "no stdout entry with PRIORITY 6 and the pod's fields: $(entries | head -c 2000)"
    fi
    if entries | jq -se "any(.[]; .MESSAGE == \"talk-err\" and .PRIORITY == \"3\" and $fields)" >/dev/null; then
        pass "stderr line: PRIORITY 3 and the pod's fields"
    else
        fail "no stderr entry with PRIORITY 3 and the pod's fields"
    fi
    if [ -z "$(find $D/logs -path '*_talk*' -name '*.log*' 2>/dev/null)" ]; then
        pass "the journald driver alone writes no CRI log file"
    else
        fail "CRI log files with the journald driver: $(find $D/logs -path '*_talk*' -name '*.log*')"
    fi
    out=$("$TUG" logs --socket $D/run/tug.sock talk 2>&1)
    case "$out" in
        *talk-out*talk-err* | *talk-err*talk-out*) pass "tug logs reads the journal: $(echo $out)" ;;
        *) fail "tug logs talk: '$out'" ;;
    esac
    # A local user may send an entry claiming the container's ID to the
    # journal's socket; journald stamps it with the user's _UID, so tug
    # logs (which reads _UID=0 entries of tug.service only) never shows it.
    cid=$(entries | jq -r 'select(.MESSAGE == "talk-out") | .CONTAINER_ID_FULL' | head -n 1)
    if [ -z "$cid" ]; then
        fail "no CONTAINER_ID_FULL of talk to forge an entry with"
    elif ! printf 'MESSAGE=forged-by-nobody\nPRIORITY=6\nCONTAINER_ID_FULL=%s\nCONTAINER_NAME=talk\n' "$cid" |
        setpriv --reuid=65534 --regid=65534 --clear-groups logger --journald; then
        fail "logger --journald as uid 65534 could not send the forged entry"
    elif ! waitfor 30 sh -c "journalctl CONTAINER_ID_FULL=$cid _UID=65534 -o cat --no-pager | grep -q forged-by-nobody"; then
        fail "the forged entry (uid 65534, CONTAINER_ID_FULL=$cid) is not in the journal"
    else
        out=$("$TUG" logs --socket $D/run/tug.sock talk 2>&1)
        case "$out" in
            *forged-by-nobody*) fail "tug logs shows an entry a non-root user sent with the container's ID: '$out'" ;;
            *talk-out*) pass "tug logs leaves out an entry uid 65534 sent with the container's ID" ;;
            *) fail "tug logs talk after the forged entry: '$out'" ;;
        esac
    fi
    # -f follows journalctl --follow: the lines, then it waits (timeout ends it).
    out=$(timeout 5 "$TUG" logs -f --timestamps --socket $D/run/tug.sock talk 2>&1); rc=$?
    case "$rc:$out" in
        124:*Z\ talk-out*) pass "tug logs -f --timestamps follows the journal" ;;
        *) fail "tug logs -f talk: exit $rc, '$out'" ;;
    esac
    if [ ! -x $JREMOTE ] || [ ! -x $JUPLOAD ]; then
        need "systemd-journal-remote/-upload are missing (package systemd-journal-remote)"
    else
        mkdir -p $D/remote
        $JREMOTE --listen-http=19532 --split-mode=none --output=$D/remote/all.journal > ${V2G_OUT:-/tmp}/journal-remote.log 2>&1 &
        rpid=$!
        if waitfor 60 $JUPLOAD --url=http://127.0.0.1:19532 --follow=no --save-state=$D/upload.state > ${V2G_OUT:-/tmp}/journal-upload.log 2>&1 &&
            waitfor 30 sh -c "journalctl --file=$D/remote/all.journal CONTAINER_NAME=talk -o cat --no-pager 2>/dev/null | grep -q talk-err"; then
            pass "systemd-journal-upload -> systemd-journal-remote: $(journalctl --file=$D/remote/all.journal CONTAINER_NAME=talk -o json --no-pager | jq -sc 'map({MESSAGE, PRIORITY, TUG_POD_NAME})')"
        else
            fail "the container's lines did not reach systemd-journal-remote: $(tail -n 5 ${V2G_OUT:-/tmp}/journal-upload.log ${V2G_OUT:-/tmp}/journal-remote.log)"
        fi
        kill $rpid 2>/dev/null
    fi
    systemctl stop tug
fi

# Clean up the pod's task and container (the guest is thrown away anyway).
killtasks
summary "systemd test"
