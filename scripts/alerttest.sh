#!/usr/bin/env bash
# alerttest.sh: checks systemd/tug-alerts.yml with Prometheus' own promtool
# (make test-alerts): `promtool check rules` (syntax, PromQL, templates) and
# `promtool test rules systemd/tug-alerts.test.yml` (each alert fires on a
# sick device and stays quiet on a healthy one).
#
# promtool is in Debian's prometheus package: when it is missing the script
# installs the package (as root) without letting it start the Prometheus
# server (a policy-rc.d refuses service starts during the install, and the
# unit is stopped and disabled where systemd runs), so that no daemon is
# left on :9090. Without root or apt, the check is skipped with a message;
# with CI=true that is a failure.
set -euo pipefail
cd "$(dirname "$0")/.."
LIB_NAME=alerts
. scripts/lib.sh

install_promtool() {
    [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null || return 1
    log "installing Debian's prometheus package for promtool (its server is not started)"
    local policy=/usr/sbin/policy-rc.d ours=
    if [ ! -e $policy ]; then
        printf '#!/bin/sh\nexit 101\n' >$policy
        chmod 755 $policy
        ours=1
    fi
    export DEBIAN_FRONTEND=noninteractive
    local rc=0
    { apt-get update -qq && apt-get install -y -qq --no-install-recommends prometheus; } >&2 || rc=$?
    [ -z "$ours" ] || rm -f $policy
    if [ -d /run/systemd/system ] && command -v systemctl >/dev/null; then
        systemctl disable --now prometheus.service >/dev/null 2>&1 || true
    fi
    return $rc
}

if ! command -v promtool >/dev/null; then
    if ! install_promtool || ! command -v promtool >/dev/null; then
        [ "${CI:-}" = true ] && die "promtool is missing and cannot be installed (Debian's prometheus package)"
        log "SKIP: promtool is missing (apt-get install prometheus, as root); the rules are not checked"
        exit 0
    fi
fi
promtool check rules systemd/tug-alerts.yml
(cd systemd && promtool test rules tug-alerts.test.yml)
