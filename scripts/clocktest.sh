#!/bin/sh
# clocktest.sh MODE TUG ARCHIVE IMAGE TRUE_EPOCH [TLS_CERT TLS_KEY]: tug
# with a wrong clock, run in the QEMU guest by `make test-clock`, booted
# with its real-time clock (V2G_RTC) at 1970 (MODE behind) or a year ahead
# (MODE ahead). TRUE_EPOCH is the host's time (Unix seconds) when the guest
# was booted; the true time in the guest is that plus its uptime. A
# receiver in the guest (scripts/clockrecv.py) takes the status documents
# and the remote-write batches.
#
# MODE behind checks:
#   1. the guest's clock reads 1970 (when it does not, it is set to 1970
#      with date -s before tug starts, and the run says so);
#   2. tug starts, its pods run (a server with TCP liveness and readiness
#      probes, and a container that exits at once), and tug says once that
#      the clock is behind: the Warn line, the node event
#      ClockBeforeTimeFloor, the node condition ClockBehind True; the
#      receiver gets nothing;
#   3. date -s sets the true time (and the kernel is told it is
#      synchronized, as an NTP client tells it): tug says the clock is sane again, the
#      status document arrives with a true generatedAt and ClockBehind
#      False (every node condition's transition time a true time), and the
#      remote-write samples held arrive stamped with the true
#      times they were gathered at (before the clock was set, none in 1970);
#   4. while the crashing container waits out its 30 s back-off, the clock
#      steps a year ahead: the container is not restarted early, the probed
#      server is not restarted; then the clock steps back to the true time
#      (NTP correcting): tug follows (no second "behind"), the floor file
#      holds the true time (the year ahead, set by hand and so not
#      synchronized, is never written), status documents go on, the crashing container
#      restarts when its back-off ends (not a year later), and no probe
#      failed and the probed server was not restarted across both steps.
#
# MODE ahead (TLS_CERT, TLS_KEY: the status receiver's certificate, made
# on the host at the true time and valid for 180 days, so expired by the
# guest's clock) checks:
#   1. the guest's clock reads a year ahead;
#   2. tug starts with a URL source (a signed bundle valid for two years,
#      its host-network pod allowed by --url-policy privileged)
#      and its manifest directory: both pods run; a clock ahead is not
#      behind (no Warn line); the status receiver's certificate fails the
#      handshake and tug says so in words ("renew the certificate, or set
#      the clock if it is ahead"); no status document is received;
#   3. tug is killed (SIGKILL) and the URL answers 503: the next tug starts
#      the URL's pods from their checkpoint, and the pod runs on, never
#      restarted;
#   4. the clock steps back to the true time (NTP correcting): tug follows
#      ("the clock stepped back"), never says "behind", the floor file
#      never holds the year ahead, the status documents arrive over TLS
#      with true times, remote-write samples after the step carry true
#      times, no pod restarted and no probe failed.
#
# A clock ahead cannot be told from a true one by the device alone: tug
# says what it sees (a certificate expired by its clock) in words that name
# both causes, and follows the step back.
# Prints PASS/FAIL lines; exits 0 only if everything passed.
set -u
MODE=$1 TUG=$2 ARCHIVE=$3 IMAGE=$4 TRUE0=$5 CERT=${6:-} KEY=${7:-}
RPID2= TPID= RPID=
HERE=$(cd "$(dirname "$0")" && pwd)
D=/run/clocktest
NS=tugclock
OUT=${V2G_OUT:-/tmp}
LOG=$OUT/tug-clock.log
RECV=$OUT/received.jsonl
PORT=18081
# shellcheck source=scripts/guestlib.sh
. "$HERE/guestlib.sh"
# waitfor SECONDS CMD...: until CMD succeeds, SECONDS of uptime at the most:
# the windows here are bounds on tug (a back-off that ends on time, a line
# said soon after a step), and the wall clock steps.
waitfor() {
    end=$(( $(cut -d. -f1 /proc/uptime) + $1 )); shift
    while [ "$(cut -d. -f1 /proc/uptime)" -lt $end ]; do "$@" && return 0; sleep 0.5; done
    return 1
}
truenow() { echo $(( TRUE0 + $(cut -d. -f1 /proc/uptime) )); }
# ntpsynced: tell the kernel the clock is synchronized, as an NTP client
# does (adjtimex: STA_UNSYNC cleared, maximum error 0); date -s sets the
# flag again. x86_64 struct timex: modes at 0, maxerror at 24, esterror
# at 32, status at 40.
ntpsynced() { python3 -c '
import ctypes, struct
buf = ctypes.create_string_buffer(512)
struct.pack_into("I", buf, 0, 0x0004 | 0x0008 | 0x0010)  # ADJ_MAXERROR | ADJ_ESTERROR | ADJ_STATUS
libc = ctypes.CDLL(None, use_errno=True)
if libc.adjtimex(buf) < 0 or struct.unpack_from("i", buf.raw, 40)[0] & 0x40:
    raise SystemExit("adjtimex: STA_UNSYNC not cleared, errno %d" % ctypes.get_errno())
' || fail "ntpsynced: the kernel's clock not marked synchronized"; }
tugc() { "$TUG" "$@" --socket $D/run/tug.sock; }
# restarts NAME: the restart count of pod NAME's container.
restarts() {
    tugc pods -o json 2>/dev/null | python3 -c '
import json, sys
for p in json.load(sys.stdin).get("items", []):
    if p["metadata"]["name"].startswith(sys.argv[1] + "-"):
        cs = p.get("status", {}).get("containerStatuses") or [{}]
        print(cs[0].get("restartCount", 0)); break
else:
    print(-1)' "$1"
}
# more NAME N: pod NAME's container has restarted more than N times.
more() { [ "$(restarts "$1")" -gt "$2" ]; }
# unhealthy: the number of probe failures tug's events count.
unhealthy() {
    tugc events -o json 2>/dev/null | python3 -c '
import json, sys
d = json.load(sys.stdin)
items = d.get("items", d) if isinstance(d, dict) else d
print(sum(e.get("count", 1) for e in items if e.get("reason") == "Unhealthy"))'
}
running() { [ "$(tugc pods 2>/dev/null | awk -v n="$1-" 'index($1, n) == 1 && $3 == "Running"' | wc -l)" -gt 0 ]; }
lines() { grep -c "$1" "$LOG" 2>/dev/null || true; }
# received PY: a Python expression over the records r (a list of dicts) that must hold.
received() { python3 -c "
import json, sys
r = [json.loads(l) for l in open('$RECV')] if __import__('os').path.exists('$RECV') else []
sys.exit(0 if ($1) else 1)"; }
# webpod [PROBE...]: the manifest of pod web, busybox httpd on
# 127.0.0.1:18090 with a TCP livenessProbe and each PROBE (readinessProbe)
# alike. The servers of both modes are probed over TCP, by tug itself: exec
# probes every 2 s keep the runc shim so busy under emulation that
# containerd loses it now and then, which is not what this test is about.
webpod() {
    hostpod web "$IMAGE" '["httpd", "-f", "-p", "127.0.0.1:18090", "-h", "/"]'
    for probe in livenessProbe "$@"; do
        cat <<YAML
      $probe:
        tcpSocket: {host: 127.0.0.1, port: 18090}
        periodSeconds: 2
        timeoutSeconds: 20
        failureThreshold: 2
YAML
    done
}
showlog() { echo "---- tug's log (out/tug-clock.log), last lines"; tail -n 30 "$LOG"; echo "---- received"; tail -n 5 "$RECV" 2>/dev/null; }

behind() {
# 1. The clock at boot.
if [ "$(date -u +%Y)" -lt 2000 ]; then
    pass "the guest booted with its clock at $(date -u +%FT%TZ) (the RTC at 1970)"
else
    echo "note: the guest's clock reads $(date -u +%FT%TZ), not 1970: set to 1970 with date -s before tug starts"
    date -u -s @$(cut -d. -f1 /proc/uptime) >/dev/null
fi

mkdir -p $D/manifests $D/images $D/root $D/logs $D/run
cp "$ARCHIVE" $D/images/
{
    webpod readinessProbe
    echo ---
    hostpod crash "$IMAGE" '["sh", "-c", "exit 1"]'
} > $D/manifests/pods.yaml
python3 "$HERE/clockrecv.py" $PORT "$RECV" &
RPID=$!
"$TUG" run --pod-manifest-path $D/manifests --image-dir $D/images --root-dir $D/root --pod-logs-dir $D/logs --run-dir $D/run \
    --containerd-namespace $NS --sync-frequency 5s --healthz-port 0 \
    --status-url http://127.0.0.1:$PORT/status --status-frequency 5s \
    --metrics-remote-write-url http://127.0.0.1:$PORT/write --metrics-push-interval 2s \
    --crash-loop-back-off-initial 30s --crash-loop-back-off-max 60s > "$LOG" 2>&1 &
TPID=$!

# 2. Behind: the pods run, tug says so once, nothing is sent.
if waitfor 120 running web; then pass "the pod runs with the clock at 1970"; else fail "the pod does not run"; showlog; fi
waitfor 60 more crash 0 || fail "the crashing container was not restarted at once (restarts $(restarts crash))"
[ "$(lines "the clock is behind tug's time floor")" = 1 ] && pass "one Warn: the clock is behind tug's time floor" || { fail "the Warn line $(lines "the clock is behind tug's time floor") times"; showlog; }
if tugc node -o json | python3 -c '
import json, sys
c = [c for c in json.load(sys.stdin)["status"]["conditions"] if c["type"] == "ClockBehind"]
sys.exit(0 if c and c[0]["status"] == "True" else 1)'; then pass "tug node: ClockBehind True"; else fail "tug node: no ClockBehind True: $(tugc node)"; fi
tugc events | grep -q "ClockBeforeTimeFloor" && pass "tug events: the node event ClockBeforeTimeFloor" || fail "no ClockBeforeTimeFloor event: $(tugc events | tail -n 5)"
sleep 8
if received "len(r) == 0"; then pass "nothing sent while the clock is behind"; else fail "sent while behind: $(head -n 3 "$RECV")"; fi

# 3. The clock set: sane again, the held reports sent with true times.
SET=$(truenow)
date -u -s @$SET >/dev/null
ntpsynced
echo "clock set to $(date -u +%FT%TZ)"
waitfor 20 grep -q "the clock is at or past tug's time floor again" "$LOG" && pass "tug says the clock is sane again" || { fail "no line saying the clock is sane again"; showlog; }
if waitfor 30 received "any(x['path'] == '/status' and x['generatedAt'] >= '2025' and any(c['type'] == 'ClockBehind' and c['status'] == 'False' for c in x['conditions']) for x in r)"; then
    pass "a status document with a true time and ClockBehind False"
else
    fail "no status document with a true time and ClockBehind False"; showlog
fi
if received "all(c['lastTransitionTime'] >= '2025' for x in r if x['path'] == '/status' for c in x['conditions'])"; then
    pass "the node conditions' transition times in the status documents are true times (none in 1970)"
else
    fail "a node condition's transition time in 1970: $(grep -m1 1970 "$RECV")"
fi
if waitfor 30 received "any(x['path'] == '/write' and x['n'] > 0 and x['min'] < $SET * 1000 - 4000 and x['min'] > ($SET - 900) * 1000 for x in r)"; then
    pass "held samples arrive stamped with the true times they were gathered at (before the clock was set)"
else
    fail "no held samples with true times before $SET"; showlog
fi
received "all(x['min'] > 1e12 for x in r if x['path'] == '/write') and not any('error' in x for x in r)" && pass "no sample stamped 1970, no request refused" || fail "a sample stamped 1970 or a refused request: $(grep -v '"min": 1[0-9]\{12\}' "$RECV" | head -n 3)"

# 4. Steps while the pods run. (Under emulation a loaded guest may lose a
# shim or a probe before any step: what counts is what the steps change.)
n0=$(restarts crash)
waitfor 90 more crash "$n0" || fail "the crashing container was not restarted within 90s"
n1=$(restarts crash)
sleep 2 # its exit is seen: its back-off (30 s or more) is running
web0=$(restarts web) unh0=$(unhealthy)
echo "before the steps: the server restarted $web0 times, $unh0 probe failures"
date -u -s @$(( $(truenow) + 365 * 86400 )) >/dev/null
echo "clock stepped a year ahead: $(date -u +%FT%TZ)"
sleep 10
[ "$(restarts crash)" = "$n1" ] && pass "a year's step forward restarts no container early (back-off)" || fail "restarted early after a step forward: $n1 -> $(restarts crash)"
date -u -s @$(truenow) >/dev/null
ntpsynced
echo "clock stepped back to $(date -u +%FT%TZ)"
waitfor 10 grep -q "the clock stepped back; the time floor follows it" "$LOG" && pass "tug follows the step back" || { fail "no line about the step back"; showlog; }
if waitfor 60 more crash "$n1"; then pass "the crashing container restarts when its back-off ends after the step back"; else fail "not restarted within 60s of the step back (restarts $(restarts crash))"; fi
[ "$(lines "the clock is behind tug's time floor")" = 1 ] && pass "no second 'behind' after the step back" || { fail "said behind again after the step back"; showlog; }
floor=$(date -u -d "$(cat $D/root/timefloor)" +%s 2>/dev/null || echo 0)
[ "$floor" -le $(( $(truenow) + 60 )) ] && [ "$floor" -ge $(( SET - 60 )) ] && pass "the floor file holds the true time ($(cat $D/root/timefloor))" || fail "the floor file holds $(cat $D/root/timefloor 2>&1), true time $(truenow)"
S=$(truenow)
if waitfor 20 received "any(x['path'] == '/status' and $S + 1 < x['at'] < $S + 300 and x['generatedAt'] < '2027' for x in r)"; then pass "status documents go on after the steps"; else fail "no status document after the steps"; fi
[ "$(restarts web)" = "$web0" ] && pass "the probed server was not restarted across the steps" || fail "the probed server restarted across the steps: $web0 -> $(restarts web)"
[ "$(unhealthy)" = "$unh0" ] && pass "no probe failure across the steps" || fail "probe failures across the steps: $unh0 -> $(unhealthy): $(tugc events | grep Unhealthy | tail -n 3)"
running web && pass "the server is still Running" || fail "the server is not Running"

}

ahead() {
# 1. The clock at boot.
if [ "$(date +%s)" -gt $(( $(truenow) + 300 * 86400 )) ]; then
    pass "the guest booted with its clock at $(date -u +%FT%TZ), a year ahead (the RTC)"
else
    echo "note: the guest's clock reads $(date -u +%FT%TZ), not a year ahead: set with date -s before tug starts"
    date -u -s @$(( $(truenow) + 365 * 86400 )) >/dev/null
fi
[ -r "$CERT" ] && [ -r "$KEY" ] || { fail "no TLS certificate and key given ($CERT, $KEY)"; return; }

mkdir -p $D/manifests $D/images $D/root $D/logs $D/run $D/url
cp "$ARCHIVE" $D/images/
webpod > $D/manifests/web.yaml
hostpod ckpt "$IMAGE" '["sleep", "86400"]' > $D/url/ckpt.yaml
openssl genpkey -algorithm ed25519 -out $D/url/key.pem 2>/dev/null && openssl pkey -in $D/url/key.pem -pubout -out $D/url/pub.pem ||
    fail "openssl: no ed25519 key"
notafter=$(date -u -d @$(( $(truenow) + 2 * 365 * 86400 )) +%FT%TZ)
"$TUG" sign --key $D/url/key.pem --version 1 --not-after "$notafter" -o $D/url/bundle $D/url/ckpt.yaml || fail "tug sign"
python3 "$HERE/clockrecv.py" $PORT "$RECV" $D/url/bundle &
RPID=$!
python3 "$HERE/clockrecv.py" $((PORT + 1)) "$RECV" "" "$CERT" "$KEY" &
RPID2=$!
starttug() {
    "$TUG" run --pod-manifest-path $D/manifests --image-dir $D/images --root-dir $D/root --pod-logs-dir $D/logs --run-dir $D/run \
        --containerd-namespace $NS --sync-frequency 5s --healthz-port 0 \
        --manifest-url http://127.0.0.1:$PORT/bundle --manifest-verify-key $D/url/pub.pem --http-check-frequency 5s --url-policy privileged \
        --status-url https://127.0.0.1:$((PORT + 1))/status --status-url-ca "$CERT" --status-frequency 5s \
        --metrics-remote-write-url http://127.0.0.1:$PORT/write --metrics-push-interval 2s >> "$LOG" 2>&1 &
    TPID=$!
}
starttug

# 2. Ahead: the pods run, the certificate's failure said in words.
if waitfor 120 running web && waitfor 60 running ckpt; then pass "the pods of the directory and the URL run with the clock a year ahead"; else fail "the pods do not run"; showlog; fi
if waitfor 60 grep -q "renew the certificate, or set the clock if it is ahead" "$LOG"; then
    pass "the status receiver's certificate, expired by the clock, is said in words: $(grep -m1 -o 'the certificate expired at [^:]*' "$LOG")"
else
    fail "no words about the certificate and the clock"; showlog
fi
[ "$(lines "the clock is behind tug's time floor")" = 0 ] && pass "a clock ahead is not said to be behind" || fail "said behind with the clock ahead"
received "not any(x['path'] == '/status' for x in r)" && pass "no status document through the refused handshake" || fail "a status document arrived: $(grep -m1 status "$RECV")"

# 3. A crash and a restart with the URL down: the checkpoint.
kill -9 $TPID; wait $TPID 2>/dev/null
touch $D/url/bundle.down
echo "tug killed; the URL answers 503"
starttug
if waitfor 60 grep -q "starting manifest URL pods from checkpoint" "$LOG"; then pass "the URL's pods start from their checkpoint, the clock a year ahead"; else fail "no start from the checkpoint"; showlog; fi
sleep 10
running ckpt && [ "$(restarts ckpt)" = 0 ] && pass "the checkpoint's pod runs, never restarted" || fail "the checkpoint's pod: restarts $(restarts ckpt), $(tugc pods | grep ckpt)"
rm -f $D/url/bundle.down
web0=$(restarts web) unh0=$(unhealthy)

# 4. NTP steps the clock back: tug follows, reports go with true times.
S=$(truenow)
date -u -s @$S >/dev/null
ntpsynced
echo "clock stepped back to $(date -u +%FT%TZ)"
waitfor 20 grep -q "the clock stepped back; the time floor follows it" "$LOG" && pass "tug follows the step back" || { fail "no line about the step back"; showlog; }
if waitfor 60 received "any(x['path'] == '/status' and '$(date -u -d @$((S - 60)) +%FT%T)' <= x['generatedAt'] < '$(date -u -d @$((S + 600)) +%FT%T)' for x in r)"; then
    pass "status documents arrive over TLS with true times"
else
    fail "no status document with a true time"; showlog
fi
if waitfor 30 received "any(x['path'] == '/write' and x['n'] > 0 and ($S - 60) * 1000 < x['min'] and x['max'] < ($S + 600) * 1000 for x in r)"; then
    pass "remote-write samples after the step carry true times"
else
    fail "no remote-write batch with true times"; showlog
fi
[ "$(lines "the clock is behind tug's time floor")" = 0 ] && pass "never said behind" || fail "said behind"
floor=$(date -u -d "$(cat $D/root/timefloor 2>/dev/null)" +%s 2>/dev/null || echo 0)
[ "$floor" -le $(( $(truenow) + 60 )) ] && pass "the floor file never holds the year ahead ($(cat $D/root/timefloor 2>/dev/null || echo absent))" || fail "the floor file holds $(cat $D/root/timefloor), true time $(truenow)"
[ "$(restarts web)" = "$web0" ] && [ "$(restarts ckpt)" = 0 ] && pass "no pod restarted across the step" || fail "restarts across the step: web $web0 -> $(restarts web), ckpt $(restarts ckpt)"
[ "$(unhealthy)" = "$unh0" ] && pass "no probe failure across the step" || fail "probe failures across the step: $unh0 -> $(unhealthy)"
running web && running ckpt && pass "both pods still Running" || fail "a pod is not Running: $(tugc pods)"
}

case $MODE in
behind) behind ;;
ahead) ahead ;;
*) fail "mode $MODE: want behind or ahead" ;;
esac

kill $TPID $RPID $RPID2 2>/dev/null
wait $TPID 2>/dev/null
summary clocktest
