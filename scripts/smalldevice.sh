#!/bin/sh
# smalldevice.sh TUG UNIT ARCHIVE IMAGE: tug on a device with 256 MiB of
# memory (run in the QEMU guest booted with V2G_SYSTEMD=1 V2G_MEM=256 and a
# disk, V2G_DISK, by `make test-small-device`: systemd as PID 1, containerd
# and tug keeping their files on the disk as on a device's SD card, tug from
# UNIT with its default eviction thresholds). It checks:
#   1. PODS (10) small pods on the pod network start, and for HOLD seconds
#      (60) stay Running: none evicted, none restarted;
#   2. the unit protects tug's memory (MemoryMin=, MemoryLow= in its
#      cgroup, no MemoryMax=);
#   3. a BestEffort pod that grows by 1 MiB a second is evicted by tug
#      (Failed/Evicted, memory) before the kernel's OOM killer acts: no
#      "Out of memory" in the kernel log, tug's pid unchanged, the PODS
#      pods still Running.
# Then it prints the memory table: MemTotal, MemAvailable before tug and at
# rest with the pods, and the PSS (/proc/PID/smaps_rollup) of tug,
# containerd, the shims and the pods' processes. Prints PASS/FAIL lines;
# exits 0 only if everything passed.
set -u
TUG=$1 UNIT=$2 ARCHIVE=$3 IMAGE=$4
PODS=${PODS:-10}
HOLD=${HOLD:-60}
D=/var/lib/tug/small # on the guest's disk
NS=tugsmall
OUT=${V2G_OUT:-/tmp}
# shellcheck source=scripts/guestlib.sh
. "$(dirname "$0")/guestlib.sh"
meminfo() { awk -v k="$1:" '$1 == k { print int($2 / 1024) }' /proc/meminfo; }
# pss PID...: the summed PSS of the processes, in KiB.
pss() {
    s=0
    for p in "$@"; do
        v=$(awk '$1 == "Pss:" { print $2 }' "/proc/$p/smaps_rollup" 2>/dev/null) || v=0
        s=$((s + ${v:-0}))
    done
    echo $s
}
pods() { $D/bin/tug pods --socket /run/tugsmall/tug.sock --no-headers 2>/dev/null; }
running() { [ "$(pods | awk '$3 == "Running" && $1 ~ /^small-/' | wc -l)" -eq "$PODS" ]; }
# name POD: the pod's name in tug's list (a static pod's name ends in the
# node's); status POD: its STATUS.
name() { pods | awk -v n="$1" '$1 == n || index($1, n "-") == 1 { print $1; exit }'; }
status() { pods | awk -v n="$1" '$1 == n || index($1, n "-") == 1 { print $3; exit }'; }

# A memory trace for the run's files: meminfo and the largest processes
# every 5 s.
( while :; do
    date +%T
    grep -E '^(MemAvailable|MemFree|Cached|Shmem|AnonPages|Slab|SReclaimable|KernelStack|PageTables):' /proc/meminfo | tr -s ' ' | tr '\n' ' '; echo
    ps -eo rss=,comm= 2>/dev/null | sort -rn | head -8 | tr -s ' ' | tr '\n' ';'; echo
    sleep 5
done ) > "$OUT/memtrace.log" 2>&1 &
trace=$!
trap 'kill $trace 2>/dev/null' EXIT
echo "memory: MemTotal $(meminfo MemTotal) MiB, MemAvailable $(meminfo MemAvailable) MiB before tug"
avail0=$(meminfo MemAvailable)
mountpoint -q /persist || { echo "smalldevice: FAIL: no disk on /persist (V2G_DISK)"; exit 1; }
# A boot that v2guest.sh repeats (a stalled guest) finds the disk of the
# first: start from nothing.
for c in $(ctr -n $NS containers ls -q 2>/dev/null); do
    ctr -n $NS tasks kill -s KILL "$c" >/dev/null 2>&1
    ctr -n $NS tasks rm -f "$c" >/dev/null 2>&1
    ctr -n $NS containers rm "$c" >/dev/null 2>&1
done
rm -rf $D
mkdir -p $D/manifests $D/images $D/root $D/logs /run/tugsmall
cp "$ARCHIVE" $D/images/
i=0
while [ $i -lt "$PODS" ]; do
    cat > $D/manifests/small-$i.yaml <<YAML
apiVersion: v1
kind: Pod
metadata:
  name: small-$i
spec:
  terminationGracePeriodSeconds: 1
  containers:
    - name: main
      image: $IMAGE
      imagePullPolicy: Never
      command: ["sleep", "86400"]
      resources:
        requests: {memory: 4Mi, cpu: 10m}
        limits: {memory: 16Mi}
YAML
    i=$((i + 1))
done

# The binary on the disk too: a copy on the guest's tmpfs would be memory
# no device spends on it.
install -D -m 755 "$TUG" $D/bin/tug
install -m 644 "$UNIT" /etc/systemd/system/tug.service
tugdropin "$OUT/tug.log" \
    "$D/bin/tug run --pod-manifest-path $D/manifests --image-dir $D/images --root-dir $D/root --pod-logs-dir $D/logs --run-dir /run/tugsmall --containerd-namespace $NS --healthz-port 0"

# 1. The pods start and stay.
t0=$(date +%s)
systemctl start tug || fail "systemctl start tug: $(show Result)"
tugpid=$(show MainPID)
if waitfor 300 running; then
    pass "$PODS pods on the pod network Running $(( $(date +%s) - t0 ))s after the start"
else
    fail "not all $PODS pods Running after 300s"
    pods
fi
sleep "$HOLD"
bad=$(pods | awk '$1 ~ /^small-/ && ($3 != "Running" || $4 != "0")')
if [ -z "$bad" ] && running; then
    pass "after ${HOLD}s all $PODS pods still Running, none restarted or evicted"
else
    fail "after ${HOLD}s: $bad"
fi
if grep -q '"evicting pod"\|msg="evicting pod"' "$OUT/tug.log"; then
    fail "tug evicted a pod that fits: $(grep 'evicting pod' "$OUT/tug.log" | head -3)"
fi

# The memory table, at rest.
shims=$(pgrep -f containerd-shim | tr '\n' ' ')
cpid=$(pgrep -x containerd | head -1)
podpids=$(for f in $(find /sys/fs/cgroup/tugpods-$NS -name cgroup.procs 2>/dev/null); do cat "$f"; done | sort -u | tr '\n' ' ')
echo "memory at rest with $PODS pods (PSS, KiB): tug $(pss "$tugpid"), containerd $(pss $cpid), $(echo $shims | wc -w) shims $(pss $shims), pods' processes $(pss $podpids)"
echo "memory: MemAvailable $(meminfo MemAvailable) MiB at rest (was ${avail0} MiB before tug)"
echo "memory: tug's cgroup memory.current $(( $(cat /sys/fs/cgroup/system.slice/tug.service/memory.current 2>/dev/null || echo 0) / 1024 )) KiB"

# 2. The unit's memory protection, as the kernel sees it.
cg=/sys/fs/cgroup/system.slice/tug.service
min=$(cat $cg/memory.min 2>/dev/null) low=$(cat $cg/memory.low 2>/dev/null) max=$(cat $cg/memory.max 2>/dev/null)
if [ "${min:-0}" -gt 0 ] && [ "${low:-0}" -gt 0 ] && [ "$max" = max ]; then
    pass "tug's cgroup: memory.min $min, memory.low $low, memory.max $max"
else
    fail "tug's cgroup: memory.min '${min:-}', memory.low '${low:-}', memory.max '${max:-}' (want min and low set, no max)"
fi

# 3. A pod that grows until something gives: tug's eviction, not the
# kernel's OOM killer. sort holds every line it reads until its input ends,
# and a line of 1 MiB comes every second.
dmesg -c >/dev/null 2>&1 || true
cat > $D/manifests/grow.yaml <<YAML
apiVersion: v1
kind: Pod
metadata:
  name: grow
spec:
  terminationGracePeriodSeconds: 1
  restartPolicy: Never
  containers:
    - name: main
      image: $IMAGE
      imagePullPolicy: Never
      command: ["sh", "-c", "while :; do head -c 1048576 /dev/zero | tr '\\\\0' x; echo; sleep 1; done | sort >/dev/null"]
YAML
# describe's pod-level "Reason:" (the first, unindented one): the STATUS
# column shows the container's own reason once it is stopped.
describe() { $D/bin/tug describe --socket /run/tugsmall/tug.sock "$(name grow)" 2>/dev/null; }
evicted() { describe | grep -Eq '^Reason:[[:space:]]+Evicted'; }
if waitfor 240 evicted; then
    pass "the growing BestEffort pod was evicted"
else
    fail "the growing pod is $(status grow), not Evicted"
fi
msg=$(describe | grep -i "low on resource" | head -1)
case "$msg" in *memory*) pass "eviction message: $(echo "$msg" | sed 's/^ *//')" ;; *) fail "no memory eviction message in tug describe grow" ;; esac
if dmesg 2>/dev/null | grep -qi "out of memory\|oom-kill"; then
    fail "the kernel's OOM killer acted: $(dmesg | grep -i 'out of memory\|oom-kill' | head -3)"
else
    pass "no kernel OOM kill"
fi
[ "$(show MainPID)" = "$tugpid" ] && pass "tug kept its pid $tugpid" || fail "tug's pid changed: $tugpid -> $(show MainPID)"
sleep 2
running && pass "the $PODS small pods still Running after the eviction" || { fail "small pods after the eviction:"; pods; }
echo "memory: MemAvailable $(meminfo MemAvailable) MiB after the eviction"

systemctl stop tug
summary smalldevice
