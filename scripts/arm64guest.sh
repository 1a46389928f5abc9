#!/usr/bin/env bash
# arm64guest.sh setup | run [--] CMD [ARG...] | selftest
#
# Runs a command inside a throwaway QEMU aarch64 guest (qemu-system-aarch64
# -M virt, software emulation) with containerd and runc from Debian's arm64
# packages running inside it: this is how tug's arm64 build is tested on an
# amd64 host (`scripts/arm64tests.sh`). The host's own containerd, cgroups and
# network are never touched.
#
# How the guest is made (all under $A64G_DIR, by `setup`):
#   packages   `dpkg --add-architecture arm64` (once), then `apt-get download`
#              of a fixed list of arm64 packages (ROOT_PACKAGES below: libc,
#              dash (/bin/sh), bash, containerd, runc, busybox-static (the other
#              commands: mount, ...), iproute2, nftables, kmod,
#              docker-registry, openssl and their libraries, plus
#              A64G_PACKAGES) and the kernel (the package linux-image-arm64
#              points to, or A64G_KPKG). `dpkg-deb -x` unpacks them into
#              root/, merged into /usr as Debian 12 is (/bin, /sbin, /lib are
#              links); no maintainer script runs. Every shared library an ELF
#              file of the root asks for (readelf NEEDED) must be in the root,
#              or setup fails and names it. The .debs are not kept.
#   modules    the kernel's modules but drivers for hardware the guest does
#              not have (GPU, media, wireless, USB, ...), with depmod's
#              modules.dep: veth, bridge, br_netfilter, nf_tables and its
#              expressions load on demand through the root's modprobe.
#   root.img   an ext4 image of root/ (mke2fs -d, no journal), attached
#              READ-ONLY as a virtio-blk disk. A disk is read on demand:
#              under software emulation this boots faster than an initramfs
#              holding the whole root (the kernel would copy all of it into
#              memory before starting init), and runc cannot pivot_root out
#              of an initramfs root, so that root would have to be copied
#              once more into a tmpfs.
#   initramfs  the arm64 busybox-static and the modules that reach the root
#              (virtio_pci, virtio_blk, ext4, overlay, 9p). It mounts
#              root.img as the lower layer of an overlayfs whose upper layer
#              is a tmpfs and switches to it: the guest writes anywhere,
#              nothing reaches root.img.
#   guest init /sbin/a64guest-init in root.img (busybox sh): mounts cgroup2
#              (kernel booted with cgroup_no_v1=all) and enables every
#              controller, tmpfs on /run, /tmp and /var/lib/containerd
#              (containerd's overlayfs snapshotter needs an upper that is not
#              overlayfs), loopback up, hostname a64guest, the shares (below),
#              starts containerd (CRI plugin off, /run/containerd/containerd.sock,
#              namespace default), imports A64G_IMAGE_TAR if set, runs CMD,
#              prints "a64guest: exit status N" and powers off.
#   kernel     the kernel package's Image (gunzipped if it is compressed),
#              booted directly (no firmware), console on ttyAMA0.
#
# Files reach the guest over virtio-9p, READ-ONLY, at the same path as on the
# host: every directory of A64G_SHARE (default: the current directory and
# $A64G_DIR). CMD runs in the host's current directory (which must be in a
# share), with stdin from /dev/null, TMPDIR=/tmp (a tmpfs), A64G_OUT=/a64out
# (a directory that is $RUN/out on the host: files written there survive),
# the variables named in A64G_PASSENV with their host values, and PATH as
# usual. CMD must be built for arm64 (GOARCH=arm64 CGO_ENABLED=0 for Go).
#
#   setup     install what is missing on the host (qemu-system-arm, cpio,
#             e2fsprogs, kmod, binutils), fetch the packages, build the root,
#             root.img and the initramfs. Idempotent; `run` does it too. The
#             root is built again when the package list or the kernel package
#             changes (A64G_REFRESH=1 forces it: newer package versions),
#             root.img and the initramfs when this script changes.
#   run       boot, run CMD (argv, exactly as given) once containerd is up,
#             stream the guest console (CMD's output is on it), and exit with
#             CMD's exit status; 124 = timeout, 125 = the guest failed. On a
#             failure, containerd's log is printed. Each run keeps its files in
#             $A64G_DIR/runs/<time>-<pid>/ (console.log, qemu.log,
#             out/{containerd.log,output.log,...}); the newest A64G_KEEP_RUNS stay.
#   selftest  checks the guest itself: aarch64, pure cgroup v2 with every
#             controller, containerd + runc run a container of the arm64
#             busybox test image (scripts/mkimage.sh with MKIMAGE_ARCH=arm64)
#             that prints its `uname -m`, memory.max enforced, modprobe of
#             veth, bridge, br_netfilter and nf_tables, a veth into a netns
#             on a bridge, nft.
#
# Knobs (environment):
#   A64G_DIR       work directory, default /var/tmp/tug-arm64guest
#   A64G_TIMEOUT   seconds for the whole run, boot included, default 900
#   A64G_MEM       guest memory in MiB, default 2048
#   A64G_SMP       guest CPUs, default 2
#   A64G_CPU       QEMU's -cpu, default max,pauth=off: every feature but
#                  pointer authentication, which the kernel would use on every
#                  function return and which costs the most to emulate.
#                  Measured here with the selftest: max,pauth=off 36 s,
#                  max,pauth-impdef=on 39 s, cortex-a57 (ARMv8.0) 75 s
#   A64G_IMAGE_TAR OCI/docker archive to import into the guest's containerd
#                  (namespace default) before CMD; copied into the run's out
#                  directory when no share holds it. selftest defaults it to
#                  $A64G_DIR/busybox-arm64.tar built by scripts/mkimage.sh
#   A64G_SHARE     host directories the guest sees read-only at the same path,
#                  space-separated (no spaces in them), default "$PWD $A64G_DIR"
#   A64G_PASSENV   names of host environment variables CMD gets, space-separated
#   A64G_KPKG      kernel package, default: what linux-image-arm64 depends on
#   A64G_PACKAGES  more arm64 packages for the root (their libraries must be
#                  in the list too: setup checks)
#   A64G_KEEP_RUNS run directories kept, default 5
#   A64G_RUN       the run directory to use instead of $A64G_DIR/runs/<time>-<pid>
#                  (not pruned)
#   A64G_STALL     seconds without the guest's heartbeat (a file it writes to
#                  its out share every 5 s) after which the guest counts as
#                  frozen, is killed and booted again, A64G_RETRIES times
#                  (default 1); 0 (the default) watches nothing. The stalled
#                  run's files stay in $RUN.stalled-N.
#
# Timing here (2 cores, no KVM, TCG, 2026-11-29): setup from nothing ~20 s
# (91 MiB of packages, a 268 MiB root, root.img 1-2 s); the kernel starts the
# guest init at ~3 s, containerd answers at ~6.5 s, `run -- true` takes 8 s
# from QEMU's start to its exit; a container start takes 2-4 s, the import of
# the busybox test image 3-5 s. The selftest: ~40 s.
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
A64G_DIR=${A64G_DIR:-/var/tmp/tug-arm64guest}
TIMEOUT=${A64G_TIMEOUT:-900}
MEM=${A64G_MEM:-2048}
SMP=${A64G_SMP:-2}
CPU=${A64G_CPU:-max,pauth=off}
IMAGE_TAR=${A64G_IMAGE_TAR:-}
KEEP_RUNS=${A64G_KEEP_RUNS:-5}
STALL=${A64G_STALL:-0}
RETRIES=${A64G_RETRIES:-1}
SHARE=${A64G_SHARE:-$PWD $A64G_DIR}
TEST_IMAGE=docker.io/library/busybox:1.35   # the name scripts/mkimage.sh gives it

# The root's packages (arm64). The kernel package is added to them.
ROOT_PACKAGES="libc6 libgcc-s1 busybox-static dash bash
containerd runc libseccomp2
iproute2 libbpf1 libbsd0 libmd0 libcap2 libdb5.3 libelf1 zlib1g libmnl0 libselinux1
libpcre2-8-0 libtirpc3 libgssapi-krb5-2 libkrb5-3 libk5crypto3 libcom-err2 libkrb5support0
libkeyutils1 libxtables12
nftables libnftables1 libnftnl11 libjansson4 libgmp10 libedit2 libtinfo6
kmod libkmod2 liblzma5 libssl3 libzstd1
docker-registry openssl
${A64G_PACKAGES:-}"

# Module directories left out of the root: hardware the virt machine does
# not have.
SKIP_MODS="drivers/gpu drivers/media drivers/net/wireless drivers/net/ethernet drivers/infiniband
drivers/iio drivers/usb drivers/scsi drivers/staging drivers/hwmon drivers/input drivers/hid
drivers/target drivers/ata drivers/bluetooth drivers/net/can drivers/net/usb drivers/mmc
drivers/mtd drivers/video drivers/leds drivers/power drivers/regulator drivers/rtc sound"

# Modules the initramfs loads (in this order; modprobe resolves dependencies)
# to reach the root and the shares.
INITRD_MODS="virtio_pci virtio_blk ext4 overlay 9pnet_virtio 9p virtio_rng"

log() { echo "arm64guest: $*" >&2; }
die() { log "ERROR: $*"; exit 125; }
# shellcheck source=scripts/guestwait.sh
. "$HERE/guestwait.sh"
# shellcheck source=scripts/initramfs.sh
. "$HERE/initramfs.sh"

# ---------------------------------------------------------------- packages
ensure_packages() {
    local need=()
    command -v qemu-system-aarch64 >/dev/null || need+=(qemu-system-arm)
    command -v mke2fs >/dev/null || need+=(e2fsprogs)
    command -v depmod >/dev/null || need+=(kmod)
    command -v cpio >/dev/null || need+=(cpio)
    command -v readelf >/dev/null || need+=(binutils)
    [ ${#need[@]} -eq 0 ] && return
    log "installing: ${need[*]}"
    export DEBIAN_FRONTEND=noninteractive
    apt-get install -y -qq --no-install-recommends "${need[@]}" >&2 ||
        { apt-get update -qq >&2 && apt-get install -y -qq --no-install-recommends "${need[@]}" >&2; } ||
        die "cannot install ${need[*]}"
}

# ensure_arch: apt knows the arm64 packages.
ensure_arch() {
    if ! dpkg --print-foreign-architectures | grep -qx arm64; then
        log "dpkg --add-architecture arm64"
        dpkg --add-architecture arm64
        apt-get update -qq >&2 || die "apt-get update failed"
    elif ! apt-cache show busybox-static:arm64 >/dev/null 2>&1; then
        apt-get update -qq >&2 || die "apt-get update failed"
    fi
}

# kernel_package: the versioned package linux-image-arm64 points to.
kernel_package() {
    apt-cache depends linux-image-arm64:arm64 2>/dev/null | awk '/Depends: linux-image-[0-9]/{sub(/:arm64$/, "", $2); print $2; exit}'
}

# ---------------------------------------------------------------- root
# check_libs DIR: every NEEDED library of an ELF file under DIR is in DIR.
check_libs() {
    local dir=$1 missing=() f lib have
    have=$(find "$dir/usr/lib" -maxdepth 2 \( -type f -o -type l \) -name '*.so*' -printf '%f\n' | sort -u)
    while read -r f; do
        for lib in $(LC_ALL=C readelf -d "$f" 2>/dev/null | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p'); do
            grep -qxF "$lib" <<< "$have" || missing+=("${f#"$dir"/}:$lib")
        done
    done < <(find "$dir/usr/bin" "$dir/usr/sbin" "$dir/usr/lib/aarch64-linux-gnu" -maxdepth 1 -type f -size +1k \
        -exec sh -c 'head -c 4 "$1" | grep -q ELF' _ {} \; -print)
    [ ${#missing[@]} -eq 0 ] || die "libraries missing from the root (add their packages to ROOT_PACKAGES or A64G_PACKAGES): ${missing[*]}"
}

# ensure_root sets KVER, ROOT and KERNEL.
ensure_root() {
    local kpkg=${A64G_KPKG:-}
    [ -n "$kpkg" ] || kpkg=$(kernel_package)
    [ -n "$kpkg" ] || die "cannot resolve linux-image-arm64:arm64 (apt-cache depends)"
    KVER=${kpkg#linux-image-}
    ROOT=$A64G_DIR/root
    KERNEL=$A64G_DIR/Image-$KVER
    local stamp
    # shellcheck disable=SC2086 # the list is words
    stamp=$(echo $kpkg $ROOT_PACKAGES | sha256sum | cut -c1-16)
    if [ -f "$ROOT/.stamp" ] && [ "$(cat "$ROOT/.stamp")" = "$stamp" ] && [ -s "$KERNEL" ] && [ "${A64G_REFRESH:-}" != 1 ]; then
        return
    fi
    local debs=$A64G_DIR/debs new=$A64G_DIR/root.new p pkgs=() t0=$SECONDS
    for p in $kpkg $ROOT_PACKAGES; do pkgs+=("$p:arm64"); done
    log "fetching ${#pkgs[@]} arm64 packages"
    rm -rf "$debs" "$new"
    mkdir -p "$debs" "$new"
    # APT::Sandbox::User=root: the _apt user cannot write to $debs
    (cd "$debs" && apt-get -qq -o APT::Sandbox::User=root download "${pkgs[@]}" >&2) ||
        { apt-get update -qq >&2 && (cd "$debs" && apt-get -o APT::Sandbox::User=root download "${pkgs[@]}" >&2); } ||
        die "apt-get download failed"
    local dl
    dl=$(du -sm "$debs" | cut -f1)
    for p in "$debs"/*.deb; do dpkg-deb -x "$p" "$new"; done
    rm -rf "$debs"

    # /bin, /sbin, /lib merged into /usr, as on Debian 12
    local d
    for d in bin sbin lib; do
        mkdir -p "$new/usr/$d"
        if [ -d "$new/$d" ] && [ ! -L "$new/$d" ]; then
            cp -a "$new/$d/." "$new/usr/$d/"
            rm -rf "${new:?}/$d"
        fi
        ln -s "usr/$d" "$new/$d"
    done
    # /bin/sh is dash, as on Debian: busybox's sh runs its own applets (ip,
    # mount, ...) before those in PATH
    ln -sf dash "$new/usr/bin/sh"

    # the kernel: Image for QEMU, the modules in the root
    local vmlinuz=$new/boot/vmlinuz-$KVER
    [ -f "$vmlinuz" ] || die "no $vmlinuz in $kpkg"
    if gzip -t "$vmlinuz" 2>/dev/null; then gzip -dc "$vmlinuz" > "$KERNEL.new"; else cp "$vmlinuz" "$KERNEL.new"; fi
    mv -f "$KERNEL.new" "$KERNEL"
    rm -rf "${new:?}/boot"
    local mods=$new/usr/lib/modules/$KVER
    for d in $SKIP_MODS; do rm -rf "${mods:?}/kernel/$d"; done
    depmod -b "$new" "$KVER" 2>/dev/null || die "depmod failed"
    rm -rf "$new/usr/share/doc" "$new/usr/share/man" "$new/usr/share/locale" "$new/usr/share/bug" "$new/usr/share/lintian"

    # what no maintainer script wrote
    mkdir -p "$new"/{dev,proc,sys,run,tmp,root,var/lib,var/log,etc/containerd,usr/local/bin,a64out}
    chmod 1777 "$new/tmp"
    chmod 700 "$new/root"
    printf 'root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n' > "$new/etc/passwd"
    printf 'root:x:0:\nnogroup:x:65534:\n' > "$new/etc/group"
    printf 'hosts: files dns\n' > "$new/etc/nsswitch.conf"
    : > "$new/etc/resolv.conf"
    echo a64guest > "$new/etc/hostname"
    check_libs "$new"
    echo "$stamp" > "$new/.stamp"
    echo "$dl" > "$new/.download-mib"
    rm -rf "$ROOT"
    mv "$new" "$ROOT"
    log "root: $(du -sm "$ROOT" | cut -f1) MiB from ${dl} MiB of packages (${#pkgs[@]}), $((SECONDS - t0))s"
}

# ---------------------------------------------------------------- guest init
# The guest's PID 1 after switch_root. / is the overlay (root.img + tmpfs).
# It reads its parameters from the kernel command line (a64g.*).
write_guest_init() {
    cat > "$ROOT/sbin/a64guest-init" <<'GUEST_INIT'
#!/bin/busybox sh
# Written by scripts/arm64guest.sh: PID 1 of the arm64 guest.
# busybox's applets where no package put a binary (sh, mount, ...)
/bin/busybox --install -s
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin HOME=/root TERM=dumb
say() { echo "a64guest-init[$(cut -d' ' -f1 /proc/uptime)s]: $*"; }
halt_now() { sync; umount /a64out 2>/dev/null; poweroff -f; sleep 5; echo o > /proc/sysrq-trigger; }
SHARES=
for a in $(cat /proc/cmdline); do
    case $a in
        a64g.image=*) IMAGE_TAR=${a#a64g.image=} ;;
        a64g.share=*) SHARES="$SHARES ${a#a64g.share=}" ;;
    esac
done
say "started (kernel $(uname -r), $(uname -m), $(nproc) CPUs)"

# Pure cgroup v2: the kernel runs with cgroup_no_v1=all. Every controller is
# enabled for the children of the root, as systemd would.
mount -t cgroup2 -o nsdelegate,memory_recursiveprot cgroup2 /sys/fs/cgroup ||
    mount -t cgroup2 cgroup2 /sys/fs/cgroup
for c in $(cat /sys/fs/cgroup/cgroup.controllers); do
    echo "+$c" > /sys/fs/cgroup/cgroup.subtree_control 2>/dev/null || say "cannot enable controller $c"
done

# Scratch that is not on the overlay root: containerd's overlayfs snapshotter
# and the command's TMPDIR (tests' t.TempDir(), with tug's state and mounts).
# /tmp has no nosuid or nodev: a container in a user namespace cannot
# remount a bind mount (its /etc/hostname) from a file system with those
# flags without keeping them, and runc does not keep them.
mount -t tmpfs -o mode=755,nosuid,nodev tmpfs /run
mount -t tmpfs -o mode=1777 tmpfs /tmp
mount -t tmpfs -o mode=711 tmpfs /var/lib/containerd 2>/dev/null ||
    { mkdir -p /var/lib/containerd && mount -t tmpfs -o mode=711 tmpfs /var/lib/containerd; }
mkdir -p /dev/pts /dev/shm /dev/mqueue
mount -t devpts -o gid=5,mode=620,ptmxmode=666 devpts /dev/pts
mount -t tmpfs -o mode=1777,nosuid,nodev tmpfs /dev/shm
mount -t mqueue mqueue /dev/mqueue 2>/dev/null
mount -t bpf bpf /sys/fs/bpf 2>/dev/null
ln -sf /proc/self/fd /dev/fd
ln -sf /proc/self/fd/0 /dev/stdin
ln -sf /proc/self/fd/1 /dev/stdout
ln -sf /proc/self/fd/2 /dev/stderr
hostname a64guest
printf '127.0.0.1 localhost a64guest\n::1 localhost\n' > /etc/hosts
ip link set lo up

# The run's out directory on the host (cmd.sh in, exit_status and logs out).
mount -t 9p -o trans=virtio,version=9p2000.L,msize=512000 a64out /a64out || { say "cannot mount the out share"; halt_now; }
# The heartbeat: the host (A64G_STALL) tells a frozen guest from a quiet one.
( while :; do date +%s > /a64out/heartbeat; sleep 5; done ) < /dev/null > /dev/null 2>&1 &
# The host's directories, read-only, at their host paths (TAG:PATH).
for s in $SHARES; do
    mkdir -p "${s#*:}" && mount -t 9p -o trans=virtio,version=9p2000.L,ro,msize=512000,cache=loose "${s%%:*}" "${s#*:}" ||
        say "cannot mount share ${s%%:*} on ${s#*:}"
done

containerd --config /etc/containerd/a64guest.toml --log-level warn > /a64out/containerd.log 2>&1 &
i=0
until [ -S /run/containerd/containerd.sock ] && ctr version >/dev/null 2>&1; do
    i=$((i + 1))
    [ $i -gt 1200 ] && { say "containerd did not come up within 120s"; cat /a64out/containerd.log; halt_now; }
    sleep 0.1
done
say "containerd up ($(ctr version | awk '/Server/{s=1} s && /Version/{print $2; exit}'))"
if [ -n "${IMAGE_TAR:-}" ]; then
    ctr -n default images import "$IMAGE_TAR" >/dev/null && say "imported $IMAGE_TAR" || say "import of $IMAGE_TAR FAILED"
fi

export A64G_OUT=/a64out TMPDIR=/tmp
say "running command"
( /bin/sh /a64out/cmd.sh < /dev/null; echo $? > /a64out/exit_status ) 2>&1 | tee /a64out/output.log
st=$(cat /a64out/exit_status 2>/dev/null)
say "command done"
echo "a64guest: exit status ${st:-unknown}"
halt_now
GUEST_INIT
    chmod 755 "$ROOT/sbin/a64guest-init"
    cat > "$ROOT/etc/containerd/a64guest.toml" <<'EOF'
# Written by scripts/arm64guest.sh: the guest's containerd.
version = 2
root = "/var/lib/containerd"
state = "/run/containerd"
disabled_plugins = ["io.containerd.grpc.v1.cri"]
[grpc]
  address = "/run/containerd/containerd.sock"
EOF
}

# ---------------------------------------------------------------- images
build_images() {
    ROOTIMG=$A64G_DIR/root.img
    INITRD=$A64G_DIR/initramfs-$KVER.cpio.gz
    local stamp
    # The files' contents, not their paths: arm64tests.sh's exec makes the
    # path of run absolute, that of setup is relative.
    stamp=$({ cat "${BASH_SOURCE[0]}" "$HERE/initramfs.sh" | sha256sum; cat "$ROOT/.stamp"; echo "$KVER $INITRD_MODS"; } | sha256sum | cut -c1-16)
    [ -f "$ROOTIMG" ] && [ -f "$INITRD" ] && [ "$(cat "$ROOTIMG.stamp" 2>/dev/null)" = "$stamp" ] && return
    local t0=$SECONDS
    write_guest_init
    # root.img: the root's size and a quarter more for the file system
    local mib
    mib=$(du -sm "$ROOT" | cut -f1)
    mib=$((mib + mib / 4 + 64))
    rm -f "$ROOTIMG.new"
    truncate -s "${mib}M" "$ROOTIMG.new"
    mke2fs -q -F -t ext4 -O ^has_journal -L a64root -E root_owner=0:0 -d "$ROOT" "$ROOTIMG.new" "${mib}M" ||
        die "mke2fs -d $ROOT failed"
    mv -f "$ROOTIMG.new" "$ROOTIMG"

    initramfs_build "$INITRD" "$ROOT/usr/bin/busybox" "$ROOT" "$KVER" "$INITRD_MODS" <<'INITRAMFS_INIT'
#!/bin/busybox sh
# initramfs of scripts/arm64guest.sh: mount root.img (read-only) under a
# tmpfs-backed overlay and switch to it.
/bin/busybox --install -s /bin
export PATH=/bin
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
fail() { echo "a64guest-initramfs: FATAL: $*"; poweroff -f; sleep 5; echo o > /proc/sysrq-trigger; }
for m in $(cat /mods/order); do insmod /mods/$m || echo "a64guest-initramfs: insmod $m failed"; done
i=0; while [ ! -b /dev/vda ] && [ $i -lt 200 ]; do sleep 0.05; i=$((i + 1)); done
mount -t ext4 -o ro /dev/vda /lower || fail "mount of root.img (/dev/vda)"
mount -t tmpfs -o size=75%,mode=755 tmpfs /rw
mkdir -p /rw/upper /rw/work
mount -t overlay -o lowerdir=/lower,upperdir=/rw/upper,workdir=/rw/work overlay /newroot || fail "overlay root"
for d in dev proc sys; do mount --move /$d /newroot/$d; done
exec switch_root /newroot /bin/busybox sh /sbin/a64guest-init
INITRAMFS_INIT
    echo "$stamp" > "$ROOTIMG.stamp"
    log "root.img $(du -m --apparent-size "$ROOTIMG" | cut -f1) MiB, initramfs $INITRAMFS_MODULES modules $(du -k "$INITRD" | cut -f1) KiB, $((SECONDS - t0))s"
}

setup() {
    [ "$(id -u)" = 0 ] || die "needs root (packages, mknod)"
    mkdir -p "$A64G_DIR"
    ensure_packages
    ensure_arch
    ensure_root
    build_images
}

# ---------------------------------------------------------------- run
# shquote WORD: WORD in single quotes for sh.
shquote() { printf "'%s'" "$(printf '%s' "$1" | sed "s/'/'\\\\''/g")"; }

# shared PATH: PATH is in one of the shares.
shared() {
    local p s
    p=$(realpath -m "$1")
    for s in $SHARE; do
        s=$(realpath -m "$s")
        case $p in "$s" | "$s"/*) return 0 ;; esac
    done
    return 1
}

QPID=
run_guest() {
    setup
    local s
    for s in $SHARE; do
        [ -d "$s" ] || die "A64G_SHARE: no directory $s"
    done
    shared "$PWD" || die "the guest cannot see the current directory $PWD (not in A64G_SHARE)"

    guest_prune_runs "$A64G_DIR/runs" "$KEEP_RUNS"
    RUN=${A64G_RUN:-$A64G_DIR/runs/$(date +%Y%m%d-%H%M%S)-$$}

    guest_boots "$RETRIES" "$@"
}

# boot_guest CMD...: one boot of the guest in $RUN running CMD; returns
# CMD's exit status, 124 on timeout, 125 when the guest failed, 126 when
# the guest stalled (A64G_STALL).
boot_guest() {
    mkdir -p "$RUN/out"
    local image=
    if [ -n "$IMAGE_TAR" ]; then
        image=$(realpath "$IMAGE_TAR")
        [ -f "$image" ] || die "A64G_IMAGE_TAR: no file $image"
        if ! shared "$image"; then
            cp "$image" "$RUN/out/image.tar"
            image=/a64out/image.tar
        fi
    fi
    # The command, quoted word by word, run in the current directory with
    # the variables of A64G_PASSENV.
    {
        local v w line=
        for v in ${A64G_PASSENV:-}; do
            [ -n "${!v+x}" ] && echo "export $v=$(shquote "${!v}")"
        done
        echo "cd $(shquote "$PWD") || exit 125"
        for w in "$@"; do line+="$(shquote "$w") "; done
        echo "$line"
    } > "$RUN/out/cmd.sh"

    local append="console=ttyAMA0 loglevel=4 panic=-1 oops=panic cgroup_no_v1=all mitigations=off"
    append+=" rdinit=/init"
    [ -n "$image" ] && append+=" a64g.image=$image"
    local share_opts=() n=0
    for s in $SHARE; do
        s=$(realpath "$s")
        case $s in *[[:space:]]*) die "A64G_SHARE: $s has a space" ;; esac
        n=$((n + 1))
        share_opts+=(-fsdev "local,id=sh$n,path=$s,security_model=none,readonly=on,multidevs=remap"
            -device "virtio-9p-pci,fsdev=sh$n,mount_tag=sh$n")
        append+=" a64g.share=sh$n:$s"
    done

    log "booting (aarch64 TCG, -cpu $CPU, ${MEM} MiB, $SMP CPUs, timeout ${TIMEOUT}s), run dir $RUN"
    timeout -k 10 "$TIMEOUT" qemu-system-aarch64 \
        -nodefaults -no-user-config -display none -no-reboot -monitor none \
        -machine virt -accel tcg,thread=multi -cpu "$CPU" -m "$MEM" -smp "$SMP" \
        -kernel "$KERNEL" -initrd "$INITRD" -append "$append" \
        -chardev file,id=con,path="$RUN/console.log" -serial chardev:con \
        -drive "file=$ROOTIMG,if=none,id=root,format=raw,readonly=on" -device virtio-blk-pci,drive=root \
        -fsdev local,id=a64out,path="$RUN/out",security_model=none,multidevs=remap \
        -device virtio-9p-pci,fsdev=a64out,mount_tag=a64out \
        "${share_opts[@]}" \
        -device virtio-rng-pci \
        < /dev/null > "$RUN/qemu.log" 2>&1 &
    QPID=$!   # timeout(1)'s pid; QEMU is its child and dies with it
    guest_wait "$RUN" "$TIMEOUT" "$STALL" A64G a64guest
}

# ---------------------------------------------------------------- selftest
# Run in the guest (sh -c).
# shellcheck disable=SC2016 # expanded in the guest
SELFTEST='
fail=0
check() { if eval "$2"; then echo "PASS: $1"; else echo "FAIL: $1"; fail=1; fi; }
up() { cut -d" " -f1 /proc/uptime; }
echo "kernel $(uname -r) $(uname -m)"
check "aarch64"                       "[ \"\$(uname -m)\" = aarch64 ]"
check "no cgroup v1 hierarchy"        "! grep -q \" cgroup \" /proc/mounts"
for c in cpu cpuset io memory pids; do
    check "controller $c enabled"     "grep -qw $c /sys/fs/cgroup/cgroup.subtree_control"
done
ctr version | sed -n "/Server/,\$p"; runc --version | head -1
IMG=$(ctr images ls -q | grep busybox | head -1)
check "busybox image imported"        "[ -n \"$IMG\" ]"
t0=$(up)
m=$(ctr run --rm "$IMG" hello uname -m)
echo "container: uname -m = $m"
echo "TIMING: ctr run --rm took $(awk "BEGIN{print $(up) - $t0}")s"
check "ctr run: uname -m in the container is aarch64" "[ \"$m\" = aarch64 ]"
ctr run -d --memory-limit 33554432 "$IMG" memtest sleep 600
CG=/sys/fs/cgroup/default/memtest
check "memory.max = 33554432"         "[ \"\$(cat $CG/memory.max)\" = 33554432 ]"
ctr task exec --exec-id hog memtest sh -c "a=\$(head -c 67108864 /dev/zero | tr \"\\\\000\" x); echo NOT KILLED"
erc=$?
check "64 MiB under a 32 MiB limit is OOM-killed (137, got $erc)" "[ $erc = 137 ]"
ctr task kill -s KILL memtest; sleep 0.5; ctr task rm -f memtest >/dev/null; ctr container rm memtest
for m in veth bridge br_netfilter nf_tables nft_chain_nat nft_masq nft_fib_ipv4 overlay; do
    check "modprobe $m"               "modprobe $m"
done
check "veth pair"                     "ip link add a6a type veth peer name a6b"
check "bridge"                        "ip link add a6br0 type bridge && ip link set a6a master a6br0 && ip link set a6br0 up && ip link set a6a up"
check "netns"                         "ip netns add t1 && ip link set a6b netns t1 && ip -n t1 addr add 10.99.0.2/24 dev a6b && ip -n t1 link set a6b up"
check "nft"                           "nft add table ip a6t && nft add chain ip a6t post { type nat hook postrouting priority 100 \; } && nft add rule ip a6t post masquerade && nft list ruleset >/dev/null"
check "docker-registry runs"          "docker-registry --version"
echo "selftest: $([ $fail = 0 ] && echo PASS || echo FAIL)"
exit $fail
'

case ${1:-} in
    setup)
        setup
        log "ready: kernel $KERNEL, root $ROOTIMG, initramfs $INITRD"
        ;;
    run)
        shift
        [ "${1:-}" = -- ] && shift
        [ $# -gt 0 ] || die "run: no command"
        run_guest "$@"
        ;;
    selftest)
        if [ -z "$IMAGE_TAR" ]; then
            IMAGE_TAR=$A64G_DIR/busybox-arm64.tar
            setup
            MKIMAGE_ARCH=arm64 MKIMAGE_BUSYBOX=$ROOT/usr/bin/busybox "$HERE/mkimage.sh" "$IMAGE_TAR" "$TEST_IMAGE"
        fi
        run_guest sh -c "$SELFTEST"
        ;;
    *) die "usage: $0 setup | run [--] CMD [ARG...] | selftest" ;;
esac
