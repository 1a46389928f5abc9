#!/usr/bin/env bash
# v2guest.sh setup | run [--] CMD [ARG...] | selftest
#
# Runs a command inside a throwaway QEMU guest whose cgroups are PURE v2
# (cpu, cpuset, io, memory, pids on /sys/fs/cgroup, no v1 hierarchy), with
# containerd and runc from the host running inside it. The host's own cgroups
# are hybrid v1 and are never touched: this is how tug's cgroup tests cover v2
# (`make test-v2`).
#
# How the guest is made:
#   kernel     Debian's stock kernel (the package linux-image-amd64 points to;
#              the -cloud flavour has no 9p), fetched with `apt-get download`
#              and unpacked under $V2G_DIR/kernel, booted with cgroup_no_v1=all.
#              The uncompressed vmlinux is booted directly (PVH), which saves
#              ~4 s of firmware and decompression under software emulation.
#   initramfs  busybox-static plus the virtio/9p/overlay modules. It mounts the
#              host's / READ-ONLY over virtio-9p as the lower layer of an
#              overlayfs whose upper layer is a tmpfs, and switches to it: every
#              host binary (containerd, runc, ctr, test binaries built on the
#              host) runs in the guest, and nothing the guest writes reaches the
#              host except through the run's out directory.
#   guest init $V2G_DIR/guest-init.sh (read from the host root): mounts cgroup2
#              and enables every controller, tmpfs on /run and
#              /var/lib/containerd (containerd's overlayfs snapshotter needs an
#              upper that is not overlayfs), TMPDIR=/run/v2guest/tmp for CMD
#              (so t.TempDir() is on tmpfs too), the host's modules on /lib/modules
#              (veth, bridge, nf_tables... load on demand), the out share on
#              /v2out; starts containerd on /run/containerd/containerd.sock
#              (namespace default, CRI plugin off), imports $V2G_IMAGE_TAR if
#              set, runs CMD, powers off.
#
# Because the guest sees the host's / as it was at boot, CMD and its files
# must be on the host before `run`, and NOT under /run (the guest mounts a
# tmpfs there). CMD runs in the host's current directory, with stdin from
# /dev/null, TMPDIR=/run/v2guest/tmp, V2G_OUT=/v2out (a directory that is
# $RUN/out on the host: files written there survive) and PATH as usual.
#
#   setup     install what is missing (qemu-system-x86, busybox-static, kmod,
#             cpio, xz-utils, containerd, runc; systemd and systemd-journal-remote with V2G_SYSTEMD=1),
#             fetch the kernel, write the
#             guest init and the initramfs. Idempotent; `run` does it too.
#   run       boot, run CMD (argv, exactly as given) once containerd is up,
#             stream the guest console (CMD's output is on it), and exit with
#             CMD's exit status; 124 = timeout, 125 = the guest failed. On a
#             failure, containerd's log is printed. Each run keeps its files in
#             $V2G_DIR/runs/<time>-<pid>/ (console.log, qemu.log,
#             out/{containerd.log,output.log,...}); the newest V2G_KEEP_RUNS stay.
#   selftest  checks the guest itself: pure cgroup v2, every controller,
#             containerd + runc run a container, memory.max and cpu.max
#             enforced (an allocation over the limit is OOM-killed), veth,
#             bridge and netns work. Imports the busybox test image of
#             scripts/mkimage.sh.
#
# Knobs (environment):
#   V2G_DIR        work directory, default /var/tmp/tug-v2guest (must be
#                  visible in the guest: not under /run)
#   V2G_TIMEOUT    seconds for the whole run, boot included, default 900
#   V2G_MEM        guest memory in MiB, default 2048
#   V2G_SMP        guest CPUs, default 2
#   V2G_ACCEL      auto | tcg | kvm; auto = kvm only when /dev/kvm is usable AND
#                  the CPU shows vmx/svm (a nested host without them cannot run
#                  a stock kernel under KVM), else tcg
#   V2G_IMAGE_TAR  OCI/docker archive to import into the guest's containerd
#                  (namespace default) before CMD; selftest defaults it to
#                  $V2G_DIR/busybox.tar built by scripts/mkimage.sh
#   V2G_RTC        the guest's real-time clock at boot, as QEMU's -rtc base=
#                  takes it (e.g. 1970-01-01T00:00:00, a device without an
#                  RTC battery); default: the host's UTC time
#   V2G_KPKG       kernel package, default: what linux-image-amd64 depends on
#   V2G_KEEP_RUNS  run directories kept, default 5
#   V2G_DISK       a raw image file attached as a PERSISTENT virtio-blk disk
#                  (created sparse, V2G_DISK_SIZE MiB, default 6144, if missing;
#                  cache=unsafe: what the guest wrote survives a kill of QEMU,
#                  what is only in the guest's page cache does not). The guest
#                  init runs e2fsck -p on it (mkfs.ext4 when it holds no file
#                  system yet), mounts it on /persist and binds
#                  /persist/containerd, /persist/tug and /persist/pods-logs onto
#                  /var/lib/containerd, /var/lib/tug and /var/log/pods before
#                  containerd starts; e2fsck's and mount's results are in
#                  out/disk.txt. scripts/powercut.sh cuts such a guest.
#   V2G_RUN        the run directory to use instead of $V2G_DIR/runs/<time>-<pid>
#                  (not pruned)
#   V2G_STALL      seconds without the guest's heartbeat after which the guest
#                  counts as frozen (QEMU under TCG, or its kernel, hung: no
#                  output, not even the kernel's hung-task warnings), is
#                  killed and booted again, V2G_RETRIES times (default 1);
#                  0 (the default) watches nothing. The stalled run's files
#                  stay in $RUN.stalled-N. CMD must not depend on state a
#                  stalled boot left behind.
#   V2G_PIDFILE    where QEMU writes its pid, so that a caller can kill the
#                  guest hard (kill -KILL: no shutdown, the power cut of
#                  scripts/powercut.sh); CMD need not end
#
# Timing here (2 cores, no KVM, TCG): ~8 s to a running containerd, 1-2 s per
# container start.
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
V2G_DIR=${V2G_DIR:-/var/tmp/tug-v2guest}
TIMEOUT=${V2G_TIMEOUT:-900}
MEM=${V2G_MEM:-2048}
SMP=${V2G_SMP:-2}
ACCEL=${V2G_ACCEL:-auto}
IMAGE_TAR=${V2G_IMAGE_TAR:-}
KEEP_RUNS=${V2G_KEEP_RUNS:-5}
STALL=${V2G_STALL:-0}
RETRIES=${V2G_RETRIES:-1}
TEST_IMAGE=docker.io/library/busybox:1.35   # the name scripts/mkimage.sh gives it

# Modules the initramfs loads (in this order; modprobe resolves dependencies)
# to reach the 9p root. Everything else the guest needs is loaded on demand
# by the kernel through the host's /sbin/modprobe and /lib/modules.
INITRD_MODS="virtio_pci 9pnet_virtio 9p overlay"

log() { echo "v2guest: $*" >&2; }
die() { log "ERROR: $*"; exit 125; }
# shellcheck source=scripts/guestwait.sh
. "$HERE/guestwait.sh"
# shellcheck source=scripts/initramfs.sh
. "$HERE/initramfs.sh"

# hidden PATH: PATH is under /run, where the guest has a tmpfs of its own.
hidden() { case $(realpath -m "$1") in /run | /run/*) return 0 ;; esac; return 1; }
hidden "$V2G_DIR" && die "V2G_DIR=$V2G_DIR: the guest mounts a tmpfs on /run and would not see it"

# ---------------------------------------------------------------- packages
ensure_packages() {
    local need=()
    command -v qemu-system-x86_64 >/dev/null || need+=(qemu-system-x86)
    dpkg -s busybox-static >/dev/null 2>&1 || need+=(busybox-static)
    command -v containerd >/dev/null || need+=(containerd)
    command -v runc >/dev/null || need+=(runc)
    command -v depmod >/dev/null || need+=(kmod)
    command -v cpio >/dev/null || need+=(cpio)
    command -v xz >/dev/null || need+=(xz-utils)
    command -v ip >/dev/null || need+=(iproute2)
    # V2G_SYSTEMD=1: systemd as the guest's PID 1, and systemd-analyze for
    # systemdtest.sh's verify of the unit (both in Debian's systemd)
    if [ "${V2G_SYSTEMD:-}" = 1 ]; then
        { [ -x /lib/systemd/systemd ] && command -v systemd-analyze >/dev/null; } || need+=(systemd)
        # systemdtest.sh's journald checks: systemd-journal-upload sending
        # to systemd-journal-remote
        { [ -x /lib/systemd/systemd-journal-remote ] && [ -x /lib/systemd/systemd-journal-upload ]; } ||
            need+=(systemd-journal-remote)
        # the guest scripts read tug's API with them (systemdtest.sh,
        # powercut-guest.sh)
        command -v jq >/dev/null || need+=(jq)
        command -v curl >/dev/null || need+=(curl)
        # the power-cut guest's registry
        command -v docker-registry >/dev/null || need+=(docker-registry)
    fi
    [ ${#need[@]} -eq 0 ] && return
    [ "$(id -u)" = 0 ] || die "missing packages (${need[*]}) and not root"
    log "installing: ${need[*]}"
    export DEBIAN_FRONTEND=noninteractive
    apt-get install -y -qq --no-install-recommends "${need[@]}" >&2 ||
        { apt-get update -qq >&2 && apt-get install -y -qq --no-install-recommends "${need[@]}" >&2; } ||
        die "cannot install ${need[*]}"
    # busybox is PID 1 of the initramfs, which has no libc
    ! ldd /usr/bin/busybox >/dev/null 2>&1 || die "/usr/bin/busybox is not static (busybox-static)"
}

# ---------------------------------------------------------------- kernel
# kernel_package: the versioned package linux-image-amd64 points to.
kernel_package() {
    apt-cache depends linux-image-amd64 2>/dev/null | awk '/Depends: linux-image-[0-9]/{print $2; exit}'
}

# ensure_kernel sets KVER, KROOT (the unpacked package), KERNEL (what QEMU
# boots) and MODDIR (bound onto the guest's /lib/modules).
ensure_kernel() {
    local kpkg=${V2G_KPKG:-}
    if [ -z "$kpkg" ]; then
        kpkg=$(kernel_package)
        [ -n "$kpkg" ] || { apt-get update -qq >&2; kpkg=$(kernel_package); }
    fi
    [ -n "$kpkg" ] || die "cannot resolve linux-image-amd64 (apt-cache depends)"
    KVER=${kpkg#linux-image-}
    KROOT=$V2G_DIR/kernel/$KVER
    if [ ! -f "$KROOT/.done" ]; then
        log "fetching $kpkg"
        local debs=$V2G_DIR/debs
        rm -rf "$KROOT" "$debs"
        mkdir -p "$KROOT" "$debs"
        # APT::Sandbox::User=root: the _apt user cannot write to $debs
        ( cd "$debs" && apt-get -o APT::Sandbox::User=root download "$kpkg" >/dev/null 2>&1 ) ||
            { apt-get update -qq >&2 && ( cd "$debs" && apt-get -o APT::Sandbox::User=root download "$kpkg" >&2 ); } ||
            die "apt-get download $kpkg failed"
        dpkg-deb -x "$debs/${kpkg}"_*.deb "$KROOT"
        depmod -b "$KROOT" "$KVER"
        rm -rf "$debs"
        touch "$KROOT/.done"
    fi
    KERNEL=$KROOT/boot/vmlinuz-$KVER
    MODDIR=$KROOT/lib/modules
    [ -f "$KERNEL" ] || die "no kernel image $KERNEL"
    # PVH: QEMU starts an uncompressed ELF vmlinux (Debian builds CONFIG_PVH=y)
    # directly. It is the xz stream inside the bzImage.
    if [ ! -s "$KROOT/vmlinux" ]; then
        local off
        off=$(LC_ALL=C grep -obUaP '\xfd7zXZ\x00' "$KERNEL" | head -1 | cut -d: -f1) || true
        if [ -n "$off" ]; then
            tail -c +$((off + 1)) "$KERNEL" | xz -dc > "$KROOT/vmlinux.new" 2>/dev/null || true
            if [ "$(head -c 4 "$KROOT/vmlinux.new" | od -An -c | tr -d ' ')" = '177ELF' ]; then
                mv -f "$KROOT/vmlinux.new" "$KROOT/vmlinux"
            fi
            rm -f "$KROOT/vmlinux.new"
        fi
    fi
    if [ -s "$KROOT/vmlinux" ]; then KERNEL=$KROOT/vmlinux; else log "no vmlinux in $KERNEL, booting the bzImage"; fi
}

# ---------------------------------------------------------------- guest init
# The guest's PID 1 after switch_root. / is the overlay (host / read-only +
# tmpfs). It reads its parameters from the kernel command line (v2g.*).
write_guest_init() {
    cat > "$V2G_DIR/guest-init.sh.new.$$" <<'GUEST_INIT'
#!/bin/sh
# Written by scripts/v2guest.sh: PID 1 of the cgroup v2 guest.
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin HOME=/root TERM=dumb
say() { echo "v2guest-init[$(cut -d' ' -f1 /proc/uptime)s]: $*"; }
halt_now() { sync; umount /v2out 2>/dev/null; busybox poweroff -f; sleep 5; echo o > /proc/sysrq-trigger; }
for a in $(cat /proc/cmdline); do
    case $a in
        v2g.moddir=*) MODDIR=${a#v2g.moddir=} ;;
        v2g.image=*) IMAGE_TAR=${a#v2g.image=} ;;
        v2g.systemd=1) SYSTEMD=1 ;;
        v2g.disk=1) DISK=1 ;;
    esac
done
say "started (kernel $(uname -r))"

# Pure cgroup v2: the kernel runs with cgroup_no_v1=all. Every controller is
# enabled for the children of the root, as systemd would.
mount -t cgroup2 -o nsdelegate,memory_recursiveprot cgroup2 /sys/fs/cgroup ||
    mount -t cgroup2 cgroup2 /sys/fs/cgroup
for c in $(cat /sys/fs/cgroup/cgroup.controllers); do
    echo "+$c" > /sys/fs/cgroup/cgroup.subtree_control 2>/dev/null || say "cannot enable controller $c"
done
say "cgroup2 controllers: $(cat /sys/fs/cgroup/cgroup.subtree_control)"

# Writable scratch that is not on the overlay root: containerd's overlayfs
# snapshotter cannot use an overlayfs as its upper, and the command's TMPDIR
# (the tests' t.TempDir(), with tug's state, mounts and logs) is a plain
# tmpfs as well. /tmp stays the host's (read-only, with the overlay's tmpfs
# upper), so a checkout under /tmp is visible.
mount -t tmpfs -o mode=755,nosuid,nodev tmpfs /run
mkdir -p /run/v2guest/tmp
chmod 1777 /run/v2guest/tmp
mkdir -p /dev/pts /dev/shm /dev/mqueue /var/lib/containerd /lib/modules /v2out
mount -t devpts -o gid=5,mode=620,ptmxmode=666 devpts /dev/pts
mount -t tmpfs -o mode=1777,nosuid,nodev tmpfs /dev/shm
mount -t mqueue mqueue /dev/mqueue 2>/dev/null
mount -t bpf bpf /sys/fs/bpf 2>/dev/null
[ -n "${MODDIR:-}" ] && [ -d "$MODDIR" ] && mount --bind -o ro "$MODDIR" /lib/modules
ln -sf /proc/self/fd /dev/fd
ln -sf /proc/self/fd/0 /dev/stdin
ln -sf /proc/self/fd/1 /dev/stdout
ln -sf /proc/self/fd/2 /dev/stderr
hostname v2guest
echo v2guest > /etc/hostname
printf '127.0.0.1 localhost v2guest\n::1 localhost\n' > /etc/hosts
ip link set lo up

# The run's out directory on the host (cmd.sh in, exit_status and logs out).
mount -t 9p -o trans=virtio,version=9p2000.L,msize=512000 v2out /v2out || { say "cannot mount the out share"; halt_now; }
# The heartbeat: the host (V2G_STALL) tells a frozen guest from a quiet one.
( while :; do date +%s > /v2out/heartbeat; sleep 5; done ) < /dev/null > /dev/null 2>&1 &

# V2G_DISK: the persistent disk (/dev/vda). A file system that exists is
# checked (e2fsck -p, as systemd-fsck does at boot) and mounted whatever
# e2fsck said; only a disk with no ext4 on it is formatted.
if [ "${DISK:-}" = 1 ]; then
    modprobe virtio_blk; modprobe ext4
    i=0; while [ ! -b /dev/vda ] && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
    mkdir -p /persist
    if ! dumpe2fs -h /dev/vda >/dev/null 2>&1; then
        mkfs.ext4 -q -F -L tugpersist /dev/vda && echo "mkfs=0" > /v2out/disk.txt
    fi
    e2fsck -p /dev/vda > /v2out/e2fsck.log 2>&1; echo "e2fsck=$?" >> /v2out/disk.txt
    mount -t ext4 /dev/vda /persist; echo "mount=$?" >> /v2out/disk.txt
    if mountpoint -q /persist; then
        for d in containerd:/var/lib/containerd tug:/var/lib/tug pods-logs:/var/log/pods; do
            mkdir -p "/persist/${d%%:*}" "${d#*:}" && mount --bind "/persist/${d%%:*}" "${d#*:}"
        done
        chmod 711 /var/lib/containerd
    fi
    say "persistent disk: $(tr '\n' ' ' < /v2out/disk.txt)"
fi
mountpoint -q /var/lib/containerd || mount -t tmpfs -o mode=711 tmpfs /var/lib/containerd

cat > /run/v2guest/containerd.toml <<EOF
version = 2
root = "/var/lib/containerd"
state = "/run/containerd"
disabled_plugins = ["io.containerd.grpc.v1.cri"]
[grpc]
  address = "/run/containerd/containerd.sock"
EOF
# V2G_SYSTEMD=1: systemd becomes PID 1 and runs containerd and CMD as
# units (v2g.target, no default dependencies: nothing of the host's units
# starts), so that CMD can test a service under a real service manager.
# Its containerd is containerd.service (in /run, it overrides the
# package's), so that a unit that wants containerd.service gets this one.
# systemd-journald runs too (pulled in by v2g.target, CMD after it): a
# service's output and journald log drivers need its sockets. CMD's end
# powers the guest off.
if [ "${SYSTEMD:-}" = 1 ]; then
    mkdir -p /run/systemd/system
    cat > /run/systemd/system/v2g.target <<EOF
[Unit]
Description=v2guest command under systemd
DefaultDependencies=no
Requires=v2g-cmd.service
Wants=systemd-journald.service
EOF
    cat > /run/systemd/system/containerd.service <<EOF
[Unit]
DefaultDependencies=no
[Service]
ExecStart=/usr/bin/containerd --config /run/v2guest/containerd.toml --log-level warn
StandardOutput=append:/v2out/containerd.log
StandardError=append:/v2out/containerd.log
Delegate=yes
KillMode=process
EOF
    cat > /run/systemd/system/v2g-cmd.service <<EOF
[Unit]
DefaultDependencies=no
Requires=containerd.service
After=containerd.service systemd-journald.service
[Service]
Type=oneshot
Environment=V2G_OUT=/v2out TMPDIR=/run/v2guest/tmp PATH=$PATH HOME=/root V2G_IMAGE=${IMAGE_TAR:-}
ExecStart=/bin/sh -c 'until ctr version >/dev/null 2>&1; do sleep 0.1; done; if [ -n "\$V2G_IMAGE" ]; then ctr image import "\$V2G_IMAGE" >/dev/null; fi; sh /v2out/cmd.sh < /dev/null > /v2out/output.log 2>&1; echo \$\$? > /v2out/exit_status; cat /v2out/output.log > /dev/console; sync'
ExecStopPost=/bin/systemctl --no-block poweroff --force --force
TimeoutStartSec=infinity
EOF
    say "exec systemd"
    exec /lib/systemd/systemd --unit=v2g.target --log-target=console --log-level=notice
fi
containerd --config /run/v2guest/containerd.toml --log-level warn > /v2out/containerd.log 2>&1 &
i=0
until [ -S /run/containerd/containerd.sock ] && ctr version >/dev/null 2>&1; do
    i=$((i + 1))
    [ $i -gt 1200 ] && { say "containerd did not come up within 60s"; cat /v2out/containerd.log; halt_now; }
    sleep 0.05
done
say "containerd up"
if [ -n "${IMAGE_TAR:-}" ]; then
    ctr image import "$IMAGE_TAR" >/dev/null && say "imported $IMAGE_TAR" || say "import of $IMAGE_TAR FAILED"
fi

export V2G_OUT=/v2out TMPDIR=/run/v2guest/tmp
say "running command"
( sh /v2out/cmd.sh < /dev/null; echo $? > /v2out/exit_status ) 2>&1 | tee /v2out/output.log
say "command exited with status $(cat /v2out/exit_status 2>/dev/null)"
halt_now
GUEST_INIT
    chmod 755 "$V2G_DIR/guest-init.sh.new.$$"
    mv -f "$V2G_DIR/guest-init.sh.new.$$" "$V2G_DIR/guest-init.sh"
}

# ---------------------------------------------------------------- initramfs
build_initramfs() {
    INITRD=$V2G_DIR/initramfs-$KVER.cpio.gz
    local stamp
    # The files' contents, not their paths: scripts/v2guest.sh and
    # $HERE/v2guest.sh build the same initramfs.
    stamp=$({ cat "${BASH_SOURCE[0]}" "$HERE/initramfs.sh" /usr/bin/busybox | sha256sum; echo "$KVER $INITRD_MODS"; } | sha256sum | cut -c1-16)
    [ -f "$INITRD" ] && [ "$(cat "$INITRD.stamp" 2>/dev/null)" = "$stamp" ] && return
    log "building $INITRD"
    initramfs_build "$INITRD" /usr/bin/busybox "$KROOT" "$KVER" "$INITRD_MODS" <<'INITRAMFS_INIT'
#!/bin/busybox sh
# initramfs of scripts/v2guest.sh: mount the host's / (9p, read-only) under a
# tmpfs-backed overlay and switch to it.
/bin/busybox --install -s /bin
export PATH=/bin
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
fail() { echo "v2guest-initramfs: FATAL: $*"; poweroff -f; sleep 5; echo o > /proc/sysrq-trigger; }
for m in $(cat /mods/order); do insmod /mods/$m || echo "v2guest-initramfs: insmod $m failed"; done
GINIT=
for a in $(cat /proc/cmdline); do
    case $a in v2g.init=*) GINIT=${a#v2g.init=} ;; esac
done
mount -t 9p -o trans=virtio,version=9p2000.L,ro,msize=512000,cache=loose hostroot /lower || fail "9p mount of the host root"
mount -t tmpfs -o size=75%,mode=755 tmpfs /rw
mkdir -p /rw/upper /rw/work
mount -t overlay -o lowerdir=/lower,upperdir=/rw/upper,workdir=/rw/work overlay /newroot || fail "overlay root"
[ -f "/newroot$GINIT" ] || fail "guest init $GINIT not found in the host root"
for d in dev proc sys; do mount --move /$d /newroot/$d; done
exec switch_root /newroot /bin/sh "$GINIT"
INITRAMFS_INIT
    echo "$stamp" > "$INITRD.stamp"
    log "initramfs: $INITRAMFS_MODULES modules, $(du -h "$INITRD" | cut -f1)"
}

setup() {
    [ "$(id -u)" = 0 ] || die "needs root (packages, mknod, QEMU sharing /)"
    mkdir -p "$V2G_DIR"
    ensure_packages
    ensure_kernel
    write_guest_init
    build_initramfs
}

# ---------------------------------------------------------------- run
# shquote WORD: WORD in single quotes for sh.
shquote() { printf "'%s'" "$(printf '%s' "$1" | sed "s/'/'\\\\''/g")"; }

QPID=
run_guest() {
    setup
    if [ "$ACCEL" = auto ]; then
        if [ -r /dev/kvm ] && [ -w /dev/kvm ] && grep -qwE 'vmx|svm' /proc/cpuinfo; then ACCEL=kvm; else ACCEL=tcg; fi
    fi
    local accel_opts
    # shellcheck disable=SC2054 # tcg,thread=multi is one QEMU argument
    case $ACCEL in
        kvm) accel_opts=(-accel kvm -cpu host) ;;
        tcg) accel_opts=(-accel tcg,thread=multi -cpu max) ;;
        *) die "V2G_ACCEL must be auto, tcg or kvm" ;;
    esac
    if [ -n "$IMAGE_TAR" ]; then
        IMAGE_TAR=$(realpath "$IMAGE_TAR")
        [ -f "$IMAGE_TAR" ] || die "V2G_IMAGE_TAR: no file $IMAGE_TAR"
    fi

    guest_prune_runs "$V2G_DIR/runs" "$KEEP_RUNS"
    RUN=${V2G_RUN:-$V2G_DIR/runs/$(date +%Y%m%d-%H%M%S)-$$}
    hidden "$PWD" && die "the guest cannot see the current directory $PWD (its /run is a tmpfs)"

    guest_boots "$RETRIES" "$@"
}

# boot_guest CMD...: one boot of the guest in $RUN running CMD; returns
# CMD's exit status, 124 on timeout, 125 when the guest failed, 126 when
# the guest stalled (V2G_STALL).
boot_guest() {
    mkdir -p "$RUN/out"
    # The command, quoted word by word, run in the current directory.
    {
        echo "cd $(shquote "$PWD") || exit 125"
        local w line=
        for w in "$@"; do line+="$(shquote "$w") "; done
        echo "$line"
    } > "$RUN/out/cmd.sh"

    local append="console=ttyS0 loglevel=4 panic=-1 oops=panic cgroup_no_v1=all"
    append+=" mitigations=off tsc=reliable no_timer_check i8042.noaux i8042.nokbd 8250.nr_uarts=1"
    append+=" rdinit=/init v2g.init=$V2G_DIR/guest-init.sh v2g.moddir=$MODDIR"
    [ -n "$IMAGE_TAR" ] && append+=" v2g.image=$IMAGE_TAR"
    [ "${V2G_SYSTEMD:-}" = 1 ] && append+=" v2g.systemd=1"
    local disk_opts=()
    if [ -n "${V2G_DISK:-}" ]; then
        hidden "$V2G_DISK" && die "V2G_DISK=$V2G_DISK is under /run"
        [ -f "$V2G_DISK" ] || truncate -s "${V2G_DISK_SIZE:-6144}M" "$V2G_DISK"
        disk_opts=(-drive "file=$V2G_DISK,if=none,id=pdisk,format=raw,cache=unsafe" -device virtio-blk-pci,drive=pdisk)
        append+=" v2g.disk=1"
    fi
    local pid_opts=()
    [ -n "${V2G_PIDFILE:-}" ] && pid_opts=(-pidfile "$V2G_PIDFILE")
    local rtc_opts=(-rtc base=utc)
    [ -n "${V2G_RTC:-}" ] && rtc_opts=(-rtc "base=$V2G_RTC")

    log "booting ($ACCEL, ${MEM} MiB, $SMP CPUs, timeout ${TIMEOUT}s), run dir $RUN"
    # -fsdev ... readonly=on: the guest cannot write to the host's /.
    # multidevs=remap: inode numbers stay unique across the host's mounts.
    timeout -k 10 "$TIMEOUT" qemu-system-x86_64 \
        -nodefaults -no-user-config -display none -no-reboot -monitor none \
        -machine q35 "${accel_opts[@]}" -m "$MEM" -smp "$SMP" \
        -kernel "$KERNEL" -initrd "$INITRD" -append "$append" \
        -chardev file,id=con,path="$RUN/console.log" -serial chardev:con \
        -fsdev local,id=hostroot,path=/,security_model=passthrough,readonly=on,multidevs=remap \
        -device virtio-9p-pci,fsdev=hostroot,mount_tag=hostroot \
        -fsdev local,id=v2out,path="$RUN/out",security_model=none,multidevs=remap \
        -device virtio-9p-pci,fsdev=v2out,mount_tag=v2out \
        "${disk_opts[@]}" "${pid_opts[@]}" "${rtc_opts[@]}" \
        < /dev/null > "$RUN/qemu.log" 2>&1 &
    QPID=$!   # timeout(1)'s pid; QEMU is its child and dies with it
    guest_wait "$RUN" "$TIMEOUT" "$STALL" V2G
}

# ---------------------------------------------------------------- selftest
# Run in the guest (sh -c): the guest is what the cgroup tests need.
# shellcheck disable=SC2016 # expanded in the guest
SELFTEST='
fail=0
check() { if eval "$2"; then echo "PASS: $1"; else echo "FAIL: $1"; fail=1; fi; }
echo "kernel $(uname -r); cgroup mounts:"; grep cgroup /proc/mounts
check "no cgroup v1 hierarchy"        "! grep -q \" cgroup \" /proc/mounts"
check "cgroup2 on /sys/fs/cgroup"     "[ \"\$(stat -f -c %T /sys/fs/cgroup)\" = cgroup2fs ]"
for c in cpu cpuset io memory pids; do
    check "controller $c enabled"     "grep -qw $c /sys/fs/cgroup/cgroup.subtree_control"
done
ctr version | sed -n "/Server/,\$p"; runc --version | head -1
IMG=$(ctr images ls -q | grep busybox | head -1)
check "busybox image imported"        "[ -n \"$IMG\" ]"
t0=$(cut -d" " -f1 /proc/uptime)
check "ctr run"                       "ctr run --rm \"$IMG\" hello echo hello-from-container"
echo "TIMING: ctr run --rm took $(awk "BEGIN{print $(cut -d" " -f1 /proc/uptime) - $t0}")s"
ctr run -d --memory-limit 33554432 --cpus 1.5 "$IMG" memtest sleep 600
CG=/sys/fs/cgroup/default/memtest
check "memory.max = 33554432"         "[ \"\$(cat $CG/memory.max)\" = 33554432 ]"
check "cpu.max = 150000 100000"       "[ \"\$(cat $CG/cpu.max)\" = \"150000 100000\" ]"
ctr task exec --exec-id hog memtest sh -c "a=\$(head -c 67108864 /dev/zero | tr \"\\\\000\" x); echo NOT KILLED"
erc=$?
check "64 MiB under a 32 MiB limit is OOM-killed (137, got $erc)" "[ $erc = 137 ]"
check "memory.events oom_kill >= 1"   "[ \$(awk \"/^oom_kill /{print \\\$2}\" $CG/memory.events) -ge 1 ]"
ctr task kill -s KILL memtest; sleep 0.5; ctr task rm -f memtest >/dev/null; ctr container rm memtest
check "container cgroup removed"      "[ ! -d $CG ]"
check "veth pair"                     "ip link add v2a type veth peer name v2b"
check "bridge"                        "ip link add v2br0 type bridge && ip link set v2a master v2br0 && ip link set v2br0 up && ip link set v2a up"
check "netns"                         "ip netns add t1 && ip link set v2b netns t1 && ip -n t1 addr add 10.99.0.2/24 dev v2b && ip -n t1 link set v2b up"
echo "selftest: $([ $fail = 0 ] && echo PASS || echo FAIL)"
exit $fail
'

case ${1:-} in
    setup)
        setup
        log "ready: kernel $KERNEL, initramfs $INITRD"
        ;;
    run)
        shift
        [ "${1:-}" = -- ] && shift
        [ $# -gt 0 ] || die "run: no command"
        run_guest "$@"
        ;;
    selftest)
        if [ -z "$IMAGE_TAR" ]; then
            IMAGE_TAR=$V2G_DIR/busybox.tar
            mkdir -p "$V2G_DIR"
            ensure_packages
            "$HERE/mkimage.sh" "$IMAGE_TAR" "$TEST_IMAGE"
        fi
        run_guest sh -c "$SELFTEST"
        ;;
    *) die "usage: $0 setup | run [--] CMD [ARG...] | selftest" ;;
esac
