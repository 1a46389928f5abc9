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
# host's architecture in Go's naming (amd64, arm64, arm/v7, ...).  index.json
# carries io.containerd.image.name=NAME and org.opencontainers.image.ref.name=<tag>,
# so `ctr images import` and tug's sideloading register it as NAME.
#
# The archive is reproducible (fixed mtimes, sorted names, numeric owners) and
# the script is idempotent: it does nothing when OUT already holds NAME and is
# newer than busybox and this script.
#
# tug's examples use NAME=docker.io/library/busybox:1.35 (Debian 12's busybox
# is 1.35), so the same manifests run on a real cluster.
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

BUSYBOX=/usr/bin/busybox
[ -x "$BUSYBOX" ] || BUSYBOX=/bin/busybox
[ -x "$BUSYBOX" ] || die "no busybox binary: apt-get install busybox-static"
# The image has no libc: the binary must be static (busybox-static, not busybox).
if ldd "$BUSYBOX" >/dev/null 2>&1; then
    die "$BUSYBOX is dynamically linked: apt-get install busybox-static"
fi

# tag: what follows the last ':' of the last path component, else latest
last=${NAME##*/}
case $last in
    *@*) die "NAME must be a tag reference, not a digest: $NAME" ;;
    *:*) TAG=${last##*:} ;;
    *) TAG=latest ;;
esac

# ---------------------------------------------------------------- idempotency
if [ -s "$OUT" ] && [ "$OUT" -nt "$BUSYBOX" ] && [ "$OUT" -nt "$SELF" ] && [ "$OUT" -nt "$GRPCHEALTH_SRC/main.go" ] &&
    tar -xOf "$OUT" index.json 2>/dev/null | grep -qF "\"io.containerd.image.name\":\"$NAME\""; then
    log "$OUT is up to date ($NAME)"
    exit 0
fi

# ---------------------------------------------------------------- architecture
# Debian's architecture names mapped to the OCI/Go ones.
deb_arch=$(dpkg --print-architecture 2>/dev/null || true)
[ -n "$deb_arch" ] || deb_arch=$(uname -m)
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
for a in $("$BUSYBOX" --list); do
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
log "built $OUT: $NAME ($arch${variant:+/$variant}, busybox $("$BUSYBOX" | head -1 | awk '{print $2}'), $n applets, manifest sha256:$mdg)"
