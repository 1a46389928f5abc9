#!/bin/sh
# powercut-guest.sh BOOT SEED TUG UNIT ARCHIVE IMAGE BOUND: one boot of the
# power-cut test (scripts/powercut.sh runs it in the QEMU guest of
# scripts/v2guest.sh, booted with V2G_SYSTEMD=1 and V2G_DISK: systemd is
# PID 1, /persist is the persistent ext4 disk, /var/lib/containerd,
# /var/lib/tug and /var/log/pods are on it). It never ends: the host kills
# the guest at a random moment.
#
#   1. the first boot lays out /persist/pc: 7 manifests (4 writers, 3
#      loggers), the busybox archive in tug's image directory, a status
#      signing key, and bundle version 1 served by busybox httpd;
#   2. before tug starts, it reports what the last cut left (lines the host
#      checks): each writer's claim (CLAIM: records that parse, in order,
#      and the torn tail), the container logs (LOGS: lines that are not CRI
#      lines, in the middle of a file or as its last line), the status
#      sequence file (SEQ), the remote-write buffer (RW), the bundle served
#      (SERVED);
#   3. it installs the repository's unit (a drop-in only sends tug's output
#      to out/tug.log) and /etc/tug/config.yaml, and starts tug;
#   4. it waits, at most BOUND seconds, for every pod to be Running and
#      Ready with the URL bundle's three pods on one version (SETTLED
#      seconds-since-boot), and checks that version against what is served;
#   5. then, until the cut, it swaps the served bundle at random moments
#      (seeded by SEED and BOOT): a good next version, or a bad one whose
#      pod app-b never gets Ready so that tug rolls the atomic bundle back;
#      at every other swap it also pushes a new image to the guest's
#      registry (busybox's layer and a new layer of 1 MiB of random bytes)
#      and points the pod puller at it, so that tug pulls (downloads,
#      unpacks, syncs) an image it has never seen.
#
# The status documents go to a receiver in the guest (busybox httpd, a CGI
# script) that appends each document's version to $PC/status-received
# and syncs it before it answers, as an upstream that stores what it
# acknowledges; at every boot the versions received so far must never go
# down.
#
# The writers write numbered records of 64 bytes to their claim (a hostPath
# on the disk), fsync each (sync FILE), and then acknowledge it by a line in
# /v2out/acks/<writer> (9p: the write reaches the host before it returns, a
# cut cannot take it back). At start a writer keeps the longest prefix of
# records that parse and truncates the rest (the torn tail), as an
# application recovering its journal does.
#
# Output lines: PASS/FAIL[class] (class: tug, containerd, kernel) and
# the facts above, on stdout (out/output.log on the host).
set -u
BOOT=$1 SEED=$2 TUG=$3 UNIT=$4 ARCHIVE=$5 IMAGE=$6 BOUND=$7
OUT=${V2G_OUT:-/tmp}
PC=/persist/pc
SOCK=/run/tug/tug.sock
up() { cut -d' ' -f1 /proc/uptime; }
say() { echo "$*"; }
pass() { echo "PASS: $*"; }
fail() { echo "FAIL[$1]: $2"; }
WRITERS="writer-1 writer-2 writer-3 writer-4"
LOGGERS="logger-1 logger-2 logger-3"
APPS="app-a app-b app-c"
REG=127.0.0.1:5055   # the guest's registry (Debian's docker-registry)

if ! mountpoint -q /persist; then
    fail kernel "no persistent disk on /persist ($(tr '\n' ' ' < "$OUT/disk.txt" 2>/dev/null))"
    sleep 100000
fi
say "DISK $(tr '\n' ' ' < "$OUT/disk.txt")"
grep -q '^e2fsck=[0-3]$' "$OUT/disk.txt" || fail kernel "e2fsck: $(tail -n 3 "$OUT/e2fsck.log" | tr '\n' ' ')"

# A cut loses more: dirty pages stay in memory for up to 30 s, and ext4
# commits its journal every 30 s instead of 5.
sysctl -qw vm.dirty_ratio=80 vm.dirty_background_ratio=50 vm.dirty_expire_centisecs=3000 vm.dirty_writeback_centisecs=1000
mount -o remount,commit=30 /persist

# ------------------------------------------------------------ manifests
# pod_head NAME [METADATA]: a pod's first lines, its metadata (METADATA:
# more lines of it) and the spec's fields every pod here has.
pod_head() {
    cat <<YAML
apiVersion: v1
kind: Pod
metadata:
  name: $1
${2:-}spec:
  hostNetwork: true
  terminationGracePeriodSeconds: 1
YAML
}
writer_yaml() { # NAME
    pod_head $1
    cat <<YAML
  volumes:
    - name: claim
      hostPath: {path: $PC/claims/$1, type: DirectoryOrCreate}
    - name: acks
      hostPath: {path: /v2out/acks, type: Directory}
  containers:
    - name: w
      image: $IMAGE
      imagePullPolicy: Never
      volumeMounts:
        - {name: claim, mountPath: /claim}
        - {name: acks, mountPath: /acks}
      command:
        - sh
        - -c
        - |
          f=/claim/data; touch \$f
          set -- \$(awk 'BEGIN{n=0;b=0} \$0 ~ /^rec [0-9]+ x+\$/ && \$2 == sprintf("%010d", n + 1) && length(\$0) == 63 {n++; b+=64; next} {exit} END{print n, b}' \$f)
          n=\$1; b=\$2
          if [ \$b -gt \$(stat -c %s \$f) ]; then n=\$((n-1)); b=\$((b-64)); fi
          truncate -s \$b \$f; sync \$f
          echo "recovered \$n records"
          while :; do
            n=\$((n+1))
            printf 'rec %010d xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx\n' \$n >> \$f
            sync \$f && echo "\$n" >> /acks/$1
            echo "wrote record \$n"
            usleep 700000
          done
YAML
}
logger_yaml() { # NAME
    pod_head $1
    cat <<YAML
  containers:
    - name: l
      image: $IMAGE
      imagePullPolicy: Never
      command: ["sh", "-c", "i=0; while :; do i=\$((i+1)); echo \"$1 line \$i out\"; echo \"$1 line \$i err\" >&2; usleep 500000; done"]
YAML
}
bundle() { # VERSION good|bad: three pods, one unit (atomic), probed Ready
    for p in $APPS; do
        ready="touch /tmp/ready"
        [ "$2" = bad ] && [ $p = app-b ] && ready="true"
        echo ---
        pod_head $p '  labels: {bundle: "v'$1'"}
  annotations:
    tug.io/rollout: atomic
    tug.io/rollout-timeout: 60s
'
        cat <<YAML
  containers:
    - name: app
      image: $IMAGE
      imagePullPolicy: Never
      command: ["sh", "-c", "$ready; echo $p bundle v$1 $2; exec sleep 100000"]
      readinessProbe:
        exec: {command: ["cat", "/tmp/ready"]}
        periodSeconds: 2
YAML
    done
}
serve() { # VERSION good|bad LASTGOOD: replace the served bundle atomically
    bundle "$1" "$2" > $PC/www/bundle.yaml.tmp
    sync $PC/www/bundle.yaml.tmp
    mv -f $PC/www/bundle.yaml.tmp $PC/www/bundle.yaml
    echo "$1 $2 $3" > $PC/served.tmp && sync $PC/served.tmp && mv -f $PC/served.tmp $PC/served
    echo "SWAP v=$1 $2 lastgood=$3 at $(up)"
}

# puller_yaml N: the pod that runs image $REG/pc/data:N.
puller_yaml() {
    pod_head puller
    cat <<YAML
  containers:
    - name: p
      image: $REG/pc/data:$1
      imagePullPolicy: IfNotPresent
      command: ["sh", "-c", "test -s /data && exec sleep 100000"]
YAML
}
# push_data N: image $REG/pc/data:N, busybox's layers and a new layer of
# 1 MiB of random bytes, built as an OCI layout from the busybox archive,
# pushed to the registry through containerd (namespace pcbuild, removed
# again) and synced there, so that no cut loses what the manifest names.
push_data() {
    d=/tmp/data-$1 bb=$PC/busybox-oci
    rm -rf $d && mkdir -p $d/blobs/sha256 $d/layer || return 1
    head -c 1048576 /dev/urandom > $d/layer/data
    tar -C $d/layer -cf $d/layer.tar data
    l=$(sha256sum $d/layer.tar | cut -d' ' -f1) ls=$(stat -c %s $d/layer.tar)
    mv $d/layer.tar $d/blobs/sha256/$l
    m=$(jq -r '.manifests[0].digest' $bb/index.json | cut -d: -f2)
    c=$(jq -r '.config.digest' $bb/blobs/sha256/$m | cut -d: -f2)
    for b in $(jq -r '.layers[].digest' $bb/blobs/sha256/$m | cut -d: -f2); do cp $bb/blobs/sha256/$b $d/blobs/sha256/; done
    jq -c --arg l sha256:$l '.rootfs.diff_ids += [$l]' $bb/blobs/sha256/$c > $d/config
    c=$(sha256sum $d/config | cut -d' ' -f1) cs=$(stat -c %s $d/config)
    mv $d/config $d/blobs/sha256/$c
    jq -c --arg c sha256:$c --argjson cs $cs --arg l sha256:$l --argjson ls $ls \
        '.config.digest = $c | .config.size = $cs | .layers += [{mediaType: "application/vnd.oci.image.layer.v1.tar", digest: $l, size: $ls}]' \
        $bb/blobs/sha256/$m > $d/manifest
    m=$(sha256sum $d/manifest | cut -d' ' -f1) ms=$(stat -c %s $d/manifest)
    mv $d/manifest $d/blobs/sha256/$m
    echo '{"imageLayoutVersion":"1.0.0"}' > $d/oci-layout
    printf '{"schemaVersion":2,"manifests":[{"mediaType":"application/vnd.oci.image.manifest.v1+json","digest":"sha256:%s","size":%s,"annotations":{"io.containerd.image.name":"%s","org.opencontainers.image.ref.name":"%s"}}]}' \
        $m $ms "$REG/pc/data:$1" $1 > $d/index.json
    tar -C $d -cf $d.tar oci-layout index.json blobs &&
        ctr -n pcbuild images import --no-unpack $d.tar >/dev/null &&
        ctr -n pcbuild images push --plain-http $REG/pc/data:$1 >/dev/null 2>&1
    rc=$?
    ctr -n pcbuild images rm --sync $REG/pc/data:$1 >/dev/null 2>&1
    rm -rf $d $d.tar
    sync -f $PC/registry
    return $rc
}
# counter FILE: the number FILE holds (0 when it has none); set_counter
# FILE N writes it durably.
counter() { n=; read -r n 2>/dev/null < $1; echo ${n:-0}; }
set_counter() { echo $2 > $1.tmp && sync $1.tmp && mv -f $1.tmp $1; }
# push_ahead: the image the next pull_next points at, pushed now (at boot,
# before tug starts: a push while the pods run takes longer than most
# boots last before their cut).
push_ahead() {
    n=$(($(counter $PC/pulled) + 1))
    [ "$(counter $PC/pushed)" -ge $n ] && return
    push_data $n && set_counter $PC/pushed $n || echo "PUSH failed for data:$n"
}
# pull_next: the puller pointed at the next image (pushed ahead, or now;
# the manifest replaced atomically); the image two before goes from tug's
# namespace, so that the disk does not fill.
pull_next() {
    push_ahead
    n=$(($(counter $PC/pulled) + 1))
    [ "$(counter $PC/pushed)" -ge $n ] || return
    puller_yaml $n > $PC/manifests/.puller.tmp && sync $PC/manifests/.puller.tmp &&
        mv -f $PC/manifests/.puller.tmp $PC/manifests/puller.yaml
    set_counter $PC/pulled $n
    [ $n -gt 2 ] && ctr -n tug images rm $REG/pc/data:$((n - 2)) >/dev/null 2>&1
    echo "PULLSWAP data:$n at $(up)"
}
start_registry() {
    mkdir -p $PC/registry
    cat > $PC/registry.yml <<YML
version: 0.1
log:
  accesslog:
    disabled: true
storage:
  filesystem:
    rootdirectory: $PC/registry
  delete:
    enabled: true
http:
  addr: $REG
YML
    docker-registry serve $PC/registry.yml > $OUT/registry.log 2>&1 &
    i=0
    until curl -fs -o /dev/null --max-time 2 http://$REG/v2/; do
        i=$((i + 1)); [ $i -ge 60 ] && { fail kernel "the guest's registry does not answer"; return 1; }
        sleep 1
    done
}
# The status receiver: busybox httpd with a CGI script that appends the
# version of each document (line 2 of the envelope, its header; gzip -dcf
# takes a compressed document and passes a plain one through) to
# $PC/status-received and syncs it before it answers.
start_receiver() {
    mkdir -p $PC/recv/cgi-bin
    cat > $PC/recv/cgi-bin/status <<'CGI'
#!/bin/sh
PATH=/usr/sbin:/usr/bin:/sbin:/bin
v=$(head -c "${CONTENT_LENGTH:-0}" | gzip -dcf | sed -n 2p | jq -r '.version // empty' 2>/dev/null)
[ -n "$v" ] && echo "v=$v;" >> /persist/pc/status-received && sync /persist/pc/status-received
printf 'Content-Type: text/plain\r\n\r\nok\n'
CGI
    chmod 755 $PC/recv/cgi-bin/status
    busybox httpd -p 127.0.0.1:9444 -h $PC/recv
}

if [ ! -f $PC/initialized ]; then
    mkdir -p $PC/manifests $PC/claims $PC/www /var/lib/tug/images
    for w in $WRITERS; do writer_yaml $w > $PC/manifests/$w.yaml; done
    for l in $LOGGERS; do logger_yaml $l > $PC/manifests/$l.yaml; done
    cp "$ARCHIVE" /var/lib/tug/images/
    openssl genpkey -algorithm ed25519 -out $PC/status.key 2>/dev/null
    serve 1 good 1
    sync
    touch $PC/initialized && sync
    say "INIT first boot: layout written"
fi
mkdir -p /v2out/acks
if [ ! -f $PC/busybox-oci/index.json ]; then
    mkdir -p $PC/busybox-oci.tmp && tar -C $PC/busybox-oci.tmp -xf "$ARCHIVE" && sync -f $PC &&
        mv $PC/busybox-oci.tmp $PC/busybox-oci && sync -f $PC
fi

# ------------------------------------------------------------ what the cut left
for w in $WRITERS; do
    f=$PC/claims/$w/data
    if [ -f $f ]; then
        set -- $(awk 'BEGIN{n=0;b=0} $0 ~ /^rec [0-9]+ x+$/ && $2 == sprintf("%010d", n + 1) && length($0) == 63 {n++; b+=64; next} {exit} END{print n, b}' $f)
        size=$(stat -c %s $f)
        [ "$2" -gt "$size" ] && set -- $(($1 - 1)) $(($2 - 64))
        tail=$((size - $2))
        nul=$(tail -c +$(($2 + 1)) $f | tr -d '\000' | wc -c)
        say "CLAIM $w valid=$1 tail=$tail tail_non_nul=$nul"
    else
        say "CLAIM $w valid=0 tail=0 absent"
    fi
done
# CRI lines: TIME STREAM TAG MESSAGE. A file's last line may be torn by the
# cut (tug's reader skips a line that does not parse, see docs/benchmarks.md).
crire='^[0-9]+-[0-9]+-[0-9]+T[0-9:.]+(Z|[+-][0-9:]+) (stdout|stderr) [FP] '  # mawk: no {n}
set -- $(find /var/log/pods -name '*.log' -type f 2>/dev/null)
files=$# bytes=0 nuls=0 lines=0 badmid=0 torn=0 ex=
if [ $# -gt 0 ]; then
    bytes=$(cat "$@" | wc -c); nuls=$(cat "$@" | tr -cd '\000' | wc -c)
    r=$(awk -v re="$crire" '
        function fin() { if (fl > 0) { if (lb == fl) { torn++; bm += fb - 1 } else bm += fb }; fb = 0; lb = 0; fl = 0 }
        FNR == 1 { fin() }
        { fl = FNR; lines++; if ($0 !~ re) { fb++; lb = FNR; if (ex == "") ex = FILENAME ":" FNR ": " substr($0, 1, 80) } }
        END { fin(); printf "%d %d %d %s\n", lines, bm, torn, ex }' "$@")
    set -- $r
    lines=$1 badmid=$2 torn=$3; shift 3; ex="$*"
fi
say "LOGS files=$files lines=$lines bad_middle=$badmid torn_last=$torn bytes=$bytes nul_bytes=$nuls"
[ "$badmid" -gt 0 ] && say "LOGBAD $ex"
seqf=/var/lib/tug/status/sequence
if [ -f $seqf ]; then
    say "SEQ value=$(tr -cd '0-9' < $seqf | head -c 20) bytes=$(stat -c %s $seqf) nul=$(tr -cd '\000' < $seqf | wc -c)"
else
    say "SEQ absent"
fi
say "RW files=$(find /var/lib/tug/remote-write -type f 2>/dev/null | wc -l) bytes=$(du -sb /var/lib/tug/remote-write 2>/dev/null | cut -f1)"
# Records are "v=N;": a cut can leave an append that was not synced (never
# acknowledged) as NULs or a torn record, which do not match.
if [ -s $PC/status-received ]; then
    r=$(awk '{ while (match($0, /v=[0-9]+;/)) { v = substr($0, RSTART + 2, RLENGTH - 3) + 0; $0 = substr($0, RSTART + RLENGTH)
                 if (n > 0 && v < p) { bad++; if (ex == "") ex = sprintf("%.0f-then-%.0f", p, v) }; p = v; n++ } }
             END {printf "%d %d %.0f %s\n", n, bad + 0, p, ex}' $PC/status-received)
    set -- $r
    if [ "$2" = 0 ]; then pass "status documents received: $1, their versions never went down (last $3)"
    else fail tug "status document versions went down $2 times ($4)"; fi
fi
read -r sv skind slast < $PC/served || { fail kernel "served state unreadable"; sv=1 skind=good slast=1; }
say "SERVED v=$sv $skind lastgood=$slast"
say "PRECHECKS done at $(up)"

# ------------------------------------------------------------ tug
echo on > /proc/sys/kernel/printk_devkmsg
busybox httpd -p 127.0.0.1:8088 -h $PC/www
start_registry
start_receiver
i=0
until ctr version >/dev/null 2>&1 || [ $i -ge 60 ]; do sleep 1; i=$((i + 1)); done
[ -f $PC/pulled ] || pull_next
push_ahead
mkdir -p /etc/tug
cat > /etc/tug/config.yaml <<CONF
pod-manifest-path: $PC/manifests
manifest-url: http://127.0.0.1:8088/bundle.yaml
http-check-frequency: 5s
sync-frequency: 10s
status-url: http://127.0.0.1:9444/cgi-bin/status
status-signing-key: $PC/status.key
status-frequency: 5s
metrics-remote-write-url: http://127.0.0.1:9009/push
metrics-push-interval: 5s
url-policy: privileged
rollout-min-ready: 5s
CONF
chmod 600 /etc/tug/config.yaml
install -m 755 "$TUG" /usr/local/bin/tug
install -m 644 "$UNIT" /etc/systemd/system/tug.service
mkdir -p /etc/systemd/system/tug.service.d
cat > /etc/systemd/system/tug.service.d/powercut.conf <<CONF
[Unit]
DefaultDependencies=no
[Service]
StandardOutput=append:$OUT/tug.log
StandardError=append:$OUT/tug.log
CONF
systemctl daemon-reload
t_start=$(up)
systemctl start --no-block tug
say "TUGSTART at $t_start"

# ------------------------------------------------------------ until the cut
# swaps: seeded moments (SEED, BOOT): the first 1-8 s after every pod runs
# (with a pull), then every 3-20 s a swap, a bad version one time in three
# (the first swap too: most cuts come before the second); a bad version
# served in this boot stays served 65 s more (tug rolls it back after the rollout timeout, 60 s:
# longer than a boot takes to start every pod here, which it must cover)
# and is followed by a good one. A version is good 5 s after its pods are
# Ready (rollout-min-ready), so that cuts find the bundle being updated,
# being rolled back and at rest. A bad version is served only once the
# bundle has a good content (tug's /manifests): with none, tug keeps an
# atomic bundle on the failing version, by design, and the bundle could not
# settle. Runs in the background from SETTLED on, beside the checks, until
# the cut.
has_good() { curl -s --max-time 5 --unix-socket $SOCK http://tug/manifests |
    jq -e '[.items[] | select(.file | startswith("http")) | .rollout.goodHash // ""] | any(. != "")' >/dev/null 2>&1; }
held_back() { curl -s --max-time 5 --unix-socket $SOCK http://tug/manifests |
    jq -r '.items[] | select(.file | startswith("http")) | select(.rollout.heldBack) | .rollout.reason // "no reason"' 2>/dev/null; }
swaps() {
    mine=
    # mawk's rand() after srand of nearby seeds starts alike: the seed is
    # mixed first.
    awk -v s=$((((SEED % 1000003) * 1000 + BOOT) * 2654435761 % 2147483647)) 'BEGIN{srand(s); rand(); rand(); print int(1 + rand() * 8), (rand() < 0.34 ? "bad" : "good"), "pull"; for (i = 0; i < 500; i++) print int(3 + rand() * 17), (rand() < 0.34 ? "bad" : "good"), (rand() < 0.5 ? "pull" : "-")}' |
    while read -r delay kind pull; do
        read -r sv skind slast < $PC/served
        # A bad version this boot served stays served past its timeout
        # (tug rolls it back meanwhile); one an earlier boot served has
        # been seen already and is followed by a good one at once.
        [ "$skind" = bad ] && { [ "$mine" = "$sv" ] && delay=$((delay + 65)); kind=good; }
        i=0
        while [ $i -lt "$delay" ]; do
            sleep 1; i=$((i + 1))
            [ $((i % 5)) = 0 ] && [ -f $seqf ] && echo "SEQNOW $(tr -cd '0-9' < $seqf | head -c 20)"
        done
        [ "$kind" = bad ] && ! has_good && kind=good
        if [ "$kind" = good ]; then serve $((sv + 1)) good $((sv + 1)); else serve $((sv + 1)) bad "$slast"; fi
        mine=$((sv + 1))
        [ "$pull" = pull ] && pull_next
    done
}

# ------------------------------------------------------------ settle
pods_json() { tug pods -o json --socket $SOCK 2>/dev/null; }
# state: one line per pod: NAME PHASE READY BUNDLE
state() {
    pods_json | jq -r '(if type == "array" then .[] elif .items then .items[] else . end)
        | [(.metadata.name | sub("-v2guest$"; "")), (.status.phase // "-"),
           ((.status.conditions // []) | map(select(.type == "Ready")) | .[0].status // "-"),
           (.metadata.labels.bundle // "-")] | join(" ")' 2>/dev/null
}
settled=
deadline=$(awk -v u="$(up)" -v b="$BOUND" 'BEGIN{print int(u + b)}')
while [ "$(up | cut -d. -f1)" -lt "$deadline" ]; do
    st=$(state)
    ok=1
    for p in $WRITERS $LOGGERS $APPS puller; do
        echo "$st" | grep -q "^$p Running True " || { ok=0; break; }
    done
    if [ $ok = 1 ]; then
        vers=$(echo "$st" | awk '$1 ~ /^app-/ {print $4}' | sort -u)
        [ "$(echo "$vers" | wc -l)" = 1 ] && { settled=$(up); break; }
    fi
    sleep 1
done
if [ -n "$settled" ]; then
    say "SETTLED $settled tugstart=$t_start"
    pass "tug started and all 11 pods are Running and Ready $(awk -v a="$settled" 'BEGIN{print a}')s after boot"
    v=${vers#v}
    if [ "$skind" = good ] && [ "$v" = "$sv" ]; then
        pass "the URL bundle's pods all run the served version v$v"
    elif [ "$skind" = bad ] && [ "$v" -le "$slast" ] 2>/dev/null; then
        pass "the URL bundle's pods all run v$v, a good version (v$sv is bad, rolled back; last good served v$slast)"
    elif held=$(held_back) && [ -n "$held" ] && [ "$v" -lt "$sv" ] 2>/dev/null; then
        # A good version whose rollout the cut interrupted and that was
        # not Ready within its timeout at the boot: tug holds it back and
        # says why; the bundle is whole on the last good content.
        pass "the URL bundle's pods all run v$v, its last good content: tug held the served v$sv back ($held)"
        say "HELDBACK v$sv: $held"
    else
        fail tug "the URL bundle's pods run v$v; served v$sv ($skind), last good v$slast"
    fi
    swaps &
    # The logs go on after the boot: new CRI lines from each logger.
    sleep 3
    for l in $LOGGERS; do
        n=$(find /var/log/pods -path "*_$l-*" -name '*.log' -newer $OUT/disk.txt -type f -exec cat {} + 2>/dev/null | grep -Ec "$crire")
        if [ "${n:-0}" -gt 0 ]; then pass "$l's log continues after the boot ($n CRI lines)"; else fail tug "$l's log has no line written after the boot"; fi
    done
    tug logs --socket $SOCK --tail 1 writer-1 >/dev/null 2>&1 && pass "tug logs reads writer-1" || fail tug "tug logs writer-1: $(tug logs --socket $SOCK --tail 1 writer-1 2>&1 | tail -n 1)"
    # tug started once: a file the cut damaged must not make it exit
    # (systemd would restart it, Restart=always).
    n=$(systemctl show -p NRestarts --value tug)
    if [ "$n" = 0 ]; then
        pass "tug started once (no exit since the boot)"
    else
        fail tug "tug exited $n times after the boot: $(grep -m1 'level=ERROR' $OUT/tug.log | cut -c1-300)"
    fi
else
    cls=tug
    if ! systemctl is-active -q containerd || ! ctr version >/dev/null 2>&1; then
        cls=containerd
    elif ! systemctl is-active -q tug; then
        cls=tug
    elif tug pods --socket $SOCK 2>/dev/null | grep -Eqi 'CreateContainerError|RunContainerError|exec format|ErrImage|StartError'; then
        cls=containerd
    fi
    fail $cls "not every pod Running and Ready within ${BOUND}s; tug is $(systemctl is-active tug)"
    echo "---- tug pods"; tug pods --socket $SOCK 2>&1 | head -n 20
    echo "---- tug's log (last lines)"; tail -n 15 $OUT/tug.log
    say "UNSETTLED"
fi

# What tug said about the remote-write buffer the cut left.
say "RWLOG counted_loss=$(grep -c 'its samples are lost' $OUT/tug.log) unreadable_dropped=$(grep -c 'dropping an unreadable remote-write batch' $OUT/tug.log)"
say "CHECKED at $(up)"
[ -n "$settled" ] || swaps
wait
sleep 100000
