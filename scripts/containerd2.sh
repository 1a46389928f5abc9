#!/usr/bin/env bash
# containerd2.sh version|build|up|down|env|status|logs
#
# A second test environment whose daemon is containerd 2.x, built from the
# module source at exactly the version of github.com/containerd/containerd/v2
# that go.mod requires (the client's version), so that the daemon and the
# client move together. Debian 12 ships containerd 1.6 only and no download
# site is reachable: the module proxy and the Go toolchain are.
#
#   version  print that version (go list -m)
#   build    build containerd, containerd-shim-runc-v2 and ctr of that version
#            (go install pkg@version: containerd's own go.mod and go.sum pin
#            the dependencies; CGO_ENABLED=0, without the CRI, btrfs,
#            devmapper, zfs and tracing plugins) into
#            ${TUG_CONTAINERD2_CACHE:-/var/tmp/tug-containerd2}/<version>/bin,
#            unless they are there already; print that directory
#   up       build, then scripts/testenv.sh up with TUG_TESTENV_DIR set to
#            ${TUG_CONTAINERD2_DIR:-/var/tmp/tug-testenv-containerd2} and
#            TUG_TESTENV_CONTAINERD_BIN to the directory of the binaries: a
#            private containerd 2.x (own root, state, socket, version 3
#            configuration, overlayfs, its shim first in its PATH, Debian's
#            runc) and its own registry on 127.0.0.1:${TUG_TEST_REGISTRY_PORT:-5100};
#            the system containerd and the main test environment
#            (/var/tmp/tug-testenv) are never touched
#   down, env, status, logs
#            scripts/testenv.sh's, for that directory
#
# The e2e tests run against it unchanged: eval "$(scripts/containerd2.sh env)".
# `make e2e-containerd2` runs the subset of the suite named in the Makefile.
set -Eeuo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/.." && pwd)
LIB_NAME=containerd2
# shellcheck source=scripts/lib.sh
. "$HERE/lib.sh"

MODULE=github.com/containerd/containerd/v2
CACHE=${TUG_CONTAINERD2_CACHE:-/var/tmp/tug-containerd2}
export TUG_TESTENV_DIR=${TUG_CONTAINERD2_DIR:-/var/tmp/tug-testenv-containerd2}
# Its own registry, beside the main test environment's (5000 and up).
export TUG_TEST_REGISTRY_PORT=${TUG_TEST_REGISTRY_PORT:-5100}
# The daemon's build tags: the plugins tug does not use and that need cgo or
# pull in much (as containerd's Makefile names them); the shim's as its
# Makefile builds it (no_grpc: ttrpc only).
DAEMON_TAGS="urfave_cli_no_docs no_cri no_btrfs no_devmapper no_zfs no_tracing"
SHIM_TAGS="urfave_cli_no_docs no_grpc"

# module_version: the version of containerd/v2 that tug's go.mod requires.
module_version() {
    local v
    v=$(cd "$ROOT" && go list -m -f '{{.Version}}' "$MODULE") || die "go list -m $MODULE failed"
    [ -n "$v" ] || die "go.mod does not require $MODULE"
    echo "$v"
}

# built DIR VERSION: the three binaries are in DIR and say they are VERSION.
built() {
    local b
    for b in containerd containerd-shim-runc-v2 ctr; do
        [ -x "$1/$b" ] || return 1
    done
    [ "$("$1/containerd" --version 2>/dev/null | awk '{print $3}')" = "$2" ]
}

build() {
    local v bin tmp t0=$SECONDS
    v=$(module_version)
    bin=$CACHE/$v/bin
    if built "$bin" "$v"; then
        log "build: containerd $v already built in $bin"
        echo "$bin"
        return
    fi
    mkdir -p "$CACHE/$v"
    tmp=$(mktemp -d "$CACHE/$v/bin.XXXXXX")
    chmod 0755 "$tmp"
    # -ldflags as containerd's Makefile sets them (the version the daemon
    # reports); -trimpath: the binaries do not name this machine's paths.
    local ldflags="-s -w -X $MODULE/version.Version=$v -X $MODULE/version.Package=$MODULE"
    log "build: containerd $v from the module proxy into $bin (a few minutes the first time)"
    if ! (
        cd "$tmp" &&
            export GOBIN=$tmp CGO_ENABLED=0 GOFLAGS=-buildvcs=false &&
            go install -trimpath -tags "$DAEMON_TAGS" -ldflags "$ldflags" \
                "$MODULE/cmd/containerd@$v" "$MODULE/cmd/ctr@$v" &&
            go install -trimpath -tags "$SHIM_TAGS" -ldflags "$ldflags" \
                "$MODULE/cmd/containerd-shim-runc-v2@$v"
    ) >&2; then
        rm -rf "$tmp"
        die "build of containerd $v failed"
    fi
    rm -rf "$bin"
    mv "$tmp" "$bin"
    built "$bin" "$v" || die "build: $bin/containerd --version does not say $v"
    log "build: containerd $v built in $((SECONDS - t0))s"
    echo "$bin"
}

testenv() {
    TUG_TESTENV_CONTAINERD_BIN=$1 "$HERE/testenv.sh" "${@:2}"
}

case ${1:-} in
    version) module_version ;;
    build) build ;;
    up)
        bin=$(build)
        testenv "$bin" up
        # A daemon of another version, left running by an earlier `up`,
        # answers `up` too: the tests must run against this one.
        SOCK=$TUG_TESTENV_DIR/containerd.sock
        want=$(module_version)
        have=$("$bin/ctr" -a "$SOCK" version 2>/dev/null | awk '/Server:/{s=1} s&&/Version:/{print $2; exit}')
        [ "$have" = "$want" ] || die "the containerd on $SOCK is ${have:-silent}, want $want (scripts/containerd2.sh down, then up)"
        log "containerd $have up on $SOCK; eval \"\$($0 env)\""
        ;;
    down | env | status | logs) testenv "" "$1" ;;
    *) die "usage: $0 version|build|up|down|env|status|logs" ;;
esac
