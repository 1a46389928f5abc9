#!/usr/bin/env bash
# mkimage.sh OUT.tar NAME
#
# Builds a tiny OCI image-layout archive (oci-layout, index.json,
# blobs/sha256/...) from Debian's busybox-static, with plain bash + tar +
# sha256sum: no registry, no Docker.  The image has one uncompressed layer:
#
#   /bin/busybox            (a copy of /usr/bin/busybox from busybox-static)
#   /bin/<applet>           symlinks to busybox for every applet (busybox --list)
#   /etc/passwd, /etc/group root and nobody, as in the upstream busybox image
#   /etc /proc /sys /dev /tmp /root /var/www   empty directories
#   /bin/grpchealth         a static grpc.health.v1 server (e2e/testimage/grpchealth,
#                           built with the host's Go for the image's arch) that
#                           the grpc probe tests run
#
# config: Env PATH=/bin:/usr/bin:/sbin:/usr/sbin, Cmd ["sh"], os linux, and the
# image's architecture in Go's naming (amd64, arm64, arm/v7, ...).  index.json
# carries io.containerd.image.name=NAME and org.opencontainers.image.ref.name=<tag>,
# so `ctr images import` and tug's sideloading register it as NAME.
#
# The archive is reproducible (fixed mtimes, sorted names, numeric owners) and
# the script is idempotent: it does nothing when OUT already holds NAME and is
# newer than busybox and this script.
#
# tug's examples use NAME=docker.io/library/busybox:1.35 (Debian 12's busybox
# is 1.35), so the same manifests run on a real cluster.
#
# The image's architecture is the host's, or MKIMAGE_ARCH (a Debian
# architecture: arm64, armhf, ...) for another one.  Then busybox comes from
# that architecture's busybox-static package: MKIMAGE_BUSYBOX names the binary,
# or the .deb is fetched (apt-get download busybox-static:ARCH, which needs
# `dpkg --add-architecture ARCH && apt-get update`) into
# $(dirname OUT)/.mkimage-busybox-ARCH/.  The host cannot run that binary, so
# the applet list is the host's busybox --list, and the two must be the same
# BusyBox version.  grpchealth is built for that architecture.
set -euo pipefail

log() { echo "mkimage: $*" >&2; }
die() { log "ERROR: $*"; exit 1; }

[ $# -eq 2 ] || die "usage: $0 OUT.tar NAME (e.g. docker.io/library/busybox:1.35)"
OUT=$1
NAME=$2
SELF=${BASH_SOURCE[0]}
GRPCHEALTH_SRC=$(cd "$(dirname "$SELF")/../e2e/testimage/grpchealth" && pwd)
GO=${GO:-go}
command -v "$GO" >/dev/null || die "no Go toolchain ($GO): it builds /bin/grpchealth"

HOST_BUSYBOX=/usr/bin/busybox
[ -x "$HOST_BUSYBOX" ] || HOST_BUSYBOX=/bin/busybox
host_deb_arch=$(dpkg --print-architecture 2>/dev/null || true)
[ -n "$host_deb_arch" ] || host_deb_arch=$(uname -m)
deb_arch=${MKIMAGE_ARCH:-$host_deb_arch}

# tag: what follows the last ':' of the last path component, else latest
last=${NAME##*/}
case $last in
    *@*) die "NAME must be a tag reference, not a digest: $NAME" ;;
    *:*) TAG=${last##*:} ;;
    *) TAG=latest ;;
esac

# ---------------------------------------------------------------- architecture
# Debian's architecture names mapped to the OCI/Go ones.
variant=
case $deb_arch in
    amd64 | x86_64) arch=amd64 ;;
    arm64 | aarch64) arch=arm64 ;;
    armhf | armv7l) arch=arm variant=v7 ;;
    armel) arch=arm variant=v5 ;;
    i386 | i686) arch=386 ;;
    ppc64el | ppc64le) arch=ppc64le ;;
    s390x) arch=s390x ;;
    riscv64) arch=riscv64 ;;
    mips64el) arch=mips64le ;;
    *) die "unknown architecture $deb_arch" ;;
esac
platform="\"architecture\":\"$arch\",\"os\":\"linux\""
[ -z "$variant" ] || platform+=",\"variant\":\"$variant\""

# ---------------------------------------------------------------- busybox
# bb_version FILE: the BusyBox version a binary names, without running it
bb_version() { LC_ALL=C grep -aom1 'BusyBox v[0-9][0-9.]*' "$1" | cut -c10-; }
if [ "$deb_arch" = "$host_deb_arch" ]; then
    BUSYBOX=$HOST_BUSYBOX
    [ -x "$BUSYBOX" ] || die "no busybox binary: apt-get install busybox-static"
    # The image has no libc: the binary must be static (busybox-static, not busybox).
    if ldd "$BUSYBOX" >/dev/null 2>&1; then
        die "$BUSYBOX is dynamically linked: apt-get install busybox-static"
    fi
else
    [ -x "$HOST_BUSYBOX" ] || die "no host busybox for the applet list: apt-get install busybox-static"
    BUSYBOX=${MKIMAGE_BUSYBOX:-}
    if [ -z "$BUSYBOX" ]; then
        bbdir=$(dirname "$OUT")/.mkimage-busybox-$deb_arch
        BUSYBOX=$bbdir/bin/busybox
        if [ ! -s "$BUSYBOX" ]; then
            log "fetching busybox-static:$deb_arch"
            rm -rf "$bbdir"
            mkdir -p "$bbdir/deb"
            # APT::Sandbox::User=root: the _apt user cannot write to $bbdir
            (cd "$bbdir/deb" && apt-get -o APT::Sandbox::User=root download "busybox-static:$deb_arch" >&2) ||
                die "apt-get download busybox-static:$deb_arch failed (dpkg --add-architecture $deb_arch && apt-get update?)"
            dpkg-deb -x "$bbdir"/deb/busybox-static_*.deb "$bbdir"
            rm -rf "$bbdir/deb"
        fi
    fi
    [ -s "$BUSYBOX" ] || die "no busybox binary $BUSYBOX"
    if command -v readelf >/dev/null && LC_ALL=C readelf -l "$BUSYBOX" 2>/dev/null | grep -q 'program interpreter'; then
        die "$BUSYBOX is dynamically linked: it must come from busybox-static"
    fi
    if [ -z "$(bb_version "$BUSYBOX")" ] || [ "$(bb_version "$BUSYBOX")" != "$(bb_version "$HOST_BUSYBOX")" ]; then
        die "$BUSYBOX is BusyBox $(bb_version "$BUSYBOX"), the host's $HOST_BUSYBOX (the applet list) $(bb_version "$HOST_BUSYBOX")"
    fi
fi

# ---------------------------------------------------------------- idempotency
if [ -s "$OUT" ] && [ "$OUT" -nt "$BUSYBOX" ] && [ "$OUT" -nt "$SELF" ] && [ "$OUT" -nt "$GRPCHEALTH_SRC/main.go" ] &&
    tar -xOf "$OUT" index.json 2>/dev/null | grep -qF "\"io.containerd.image.name\":\"$NAME\"" &&
    tar -xOf "$OUT" index.json 2>/dev/null | grep -qF "{$platform}"; then
    log "$OUT is up to date ($NAME, $arch${variant:+/$variant})"
    exit 0
fi

# ---------------------------------------------------------------- build
umask 022
mkdir -p "$(dirname "$OUT")"
work=$(mktemp -d "$(dirname "$OUT")/.mkimage.XXXXXX")
trap 'rm -rf "$work"' EXIT

root=$work/rootfs
img=$work/img
mkdir -p "$root/bin" "$img/blobs/sha256"
for d in etc proc sys dev tmp root var/www; do mkdir -p "$root/$d"; done
chmod 1777 "$root/tmp"
chmod 0700 "$root/root"
cp "$BUSYBOX" "$root/bin/busybox"
chmod 0755 "$root/bin/busybox"
n=0
for a in $("$HOST_BUSYBOX" --list); do
    [ "$a" = busybox ] && continue
    ln -s busybox "$root/bin/$a"
    n=$((n + 1))
done
# the grpc.health.v1 server of the grpc probe tests, static for the image's arch
(cd "$GRPCHEALTH_SRC" && CGO_ENABLED=0 GOOS=linux GOARCH=$arch GOARM=${variant#v} \
    "$GO" build -trimpath -ldflags '-s -w' -o "$root/bin/grpchealth" .) ||
    die "building grpchealth failed"
printf 'root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/home:/bin/false\n' > "$root/etc/passwd"
printf 'root:x:0:\nnogroup:x:65534:\n' > "$root/etc/group"

tarc() { # tarc DIR OUTFILE NAMES...: a reproducible tar of NAMES inside DIR
    local dir=$1 out=$2
    shift 2
    LC_ALL=C tar -C "$dir" --format=gnu --sort=name --mtime=@0 \
        --numeric-owner --owner=0 --group=0 -cf "$out" "$@"
}
blob() { # blob FILE: moves FILE into blobs/sha256, prints "digest size"
    local dg sz
    dg=$(sha256sum "$1" | cut -d' ' -f1)
    sz=$(stat -c %s "$1")
    mv -f "$1" "$img/blobs/sha256/$dg"
    echo "$dg $sz"
}

# entries named bin/..., etc/... (no "./" prefix), like registry images
mapfile -t top < <(cd "$root" && LC_ALL=C ls -A)
tarc "$root" "$work/layer" "${top[@]}"
read -r ldg lsz < <(blob "$work/layer")

printf '{%s,"config":{"Env":["PATH=/bin:/usr/bin:/sbin:/usr/sbin"],"Cmd":["sh"]},"rootfs":{"type":"layers","diff_ids":["sha256:%s"]}}' \
    "$platform" "$ldg" > "$work/config"
read -r cdg csz < <(blob "$work/config")

printf '{"schemaVersion":2,"mediaType":"application/vnd.oci.image.manifest.v1+json","config":{"mediaType":"application/vnd.oci.image.config.v1+json","digest":"sha256:%s","size":%s},"layers":[{"mediaType":"application/vnd.oci.image.layer.v1.tar","digest":"sha256:%s","size":%s}]}' \
    "$cdg" "$csz" "$ldg" "$lsz" > "$work/manifest"
read -r mdg msz < <(blob "$work/manifest")

printf '{"schemaVersion":2,"mediaType":"application/vnd.oci.image.index.v1+json","manifests":[{"mediaType":"application/vnd.oci.image.manifest.v1+json","digest":"sha256:%s","size":%s,"platform":{%s},"annotations":{"io.containerd.image.name":"%s","org.opencontainers.image.ref.name":"%s"}}]}\n' \
    "$mdg" "$msz" "$platform" "$NAME" "$TAG" > "$img/index.json"
printf '{"imageLayoutVersion":"1.0.0"}\n' > "$img/oci-layout"

tarc "$img" "$work/out.tar" oci-layout index.json blobs
mv -f "$work/out.tar" "$OUT"
log "built $OUT: $NAME ($arch${variant:+/$variant}, busybox v$(bb_version "$BUSYBOX"), $n applets, manifest sha256:$mdg)"
