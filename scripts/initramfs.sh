# initramfs.sh: the initramfs scripts/v2guest.sh and scripts/arm64guest.sh
# boot their kernel with. Sourced (bash), never run. Each guest keeps its
# own init (where its root comes from, what it runs) and its own stamp.
# shellcheck shell=bash

# initramfs_build OUT BUSYBOX MODROOT KVER MODULES < INIT: writes OUT, a
# gzipped newc cpio owned by root: BUSYBOX as /bin/busybox, /dev/console
# and /dev/null, the kernel KVER's MODULES (names, separated by spaces) and
# the modules they depend on, found by modprobe under MODROOT and listed in
# the order to load them in /mods/order, the empty mount points /proc,
# /sys, /lower, /rw and /newroot, and INIT (standard input) as /init. It
# stages in a directory of its own beside OUT (two guests' setups may build
# at once) and sets INITRAMFS_MODULES to the count of modules.
initramfs_build() {
    local out=$1 busybox=$2 modroot=$3 kver=$4 modules=$5 st m f n=0
    st=$(mktemp -d "$(dirname "$out")/initramfs.staging.XXXXXX")
    chmod 755 "$st"
    mkdir -p "$st"/{bin,dev,proc,sys,mods,lower,rw,newroot}
    cp "$busybox" "$st/bin/busybox"
    mknod -m 600 "$st/dev/console" c 5 1
    mknod -m 666 "$st/dev/null" c 1 3
    : > "$st/mods/order"
    for m in $modules; do
        for f in $(modprobe -d "$modroot" -S "$kver" --show-depends "$m" | awk '$1=="insmod"{print $2}'); do
            grep -qxF "$(basename "$f")" "$st/mods/order" && continue
            cp "$f" "$st/mods/"
            basename "$f" >> "$st/mods/order"
            n=$((n + 1))
        done
    done
    cat > "$st/init"
    chmod 755 "$st/init"
    (cd "$st" && find . | LC_ALL=C sort | cpio -o -H newc --quiet -R 0:0 | gzip -1) > "$out.new.$$"
    mv -f "$out.new.$$" "$out"
    rm -rf "$st"
    # shellcheck disable=SC2034 # the caller reads it
    INITRAMFS_MODULES=$n
}
