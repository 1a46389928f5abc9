# guestlib.sh: the shell functions the test scripts run inside the QEMU guest
# of scripts/v2guest.sh share (systemdtest.sh, selfupdatetest.sh,
# selfupdatecut-guest.sh, clocktest.sh, smalldevice.sh): the PASS/FAIL lines
# and their count, waiting for a condition, a host-network pod's manifest,
# the drop-in that points the repository's tug.service at a test's
# directories, the guest's architecture by Go's name, and the tasks of the
# test's containerd namespace. Each script keeps its own checks, directories
# and flags.
#
# POSIX sh (the guest runs these scripts with its sh); sourced, never run.
# The host's / is the guest's lower layer, so a script finds this file beside
# itself: . "$(dirname "$0")/guestlib.sh". The caller sets, before using them:
#
#   NS           the containerd namespace taskpid, taskrunning and killtasks read
#
# and may set POLL_TENTHS, waitfor's poll interval in tenths of a second (5).

# shellcheck shell=sh

fails=0
pass() { echo "PASS: $*"; }
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
# need WHAT: a missing prerequisite: a failure with CI=true, a SKIP line
# otherwise.
need() { if [ "${CI:-}" = true ]; then fail "$*"; else echo "SKIP: $*"; fi; }
# summary NAME: the last line, NAME and the count of failures; succeeds only
# if nothing failed.
summary() {
    if [ "$fails" -eq 0 ]; then echo "$1: PASS, 0 failures"; else echo "$1: FAIL, $fails failure(s)"; fi
    [ "$fails" -eq 0 ]
}

# waitfor SECONDS CMD...: runs CMD every POLL_TENTHS tenths of a second until
# it succeeds (0), at most SECONDS * 10 / POLL_TENTHS times (1). A count of
# polls bounds it, not the wall clock: a slow CMD makes the wait longer, never
# shorter.
waitfor() {
    _wn=$(($1 * 10 / ${POLL_TENTHS:-5})) _ws=$((${POLL_TENTHS:-5} / 10)).$((${POLL_TENTHS:-5} % 10))
    shift
    _wi=0
    while [ $_wi -lt $_wn ]; do "$@" && return 0; sleep $_ws; _wi=$((_wi + 1)); done
    return 1
}

# goarch: the guest's architecture as Go (and tug's {arch}) names it.
goarch() { case "$(uname -m)" in x86_64) echo amd64 ;; aarch64) echo arm64 ;; *) uname -m ;; esac; }

# show PROPERTY: the property of tug.service, as systemd has it.
show() { systemctl show -p "$1" --value tug; }
# taskpid: the pid of the first RUNNING task in NS (empty if none runs);
# taskrunning: a task in NS runs; killtasks: SIGKILL to every container's
# task in NS (the guest is thrown away, its containers with it).
taskpid() { ctr -n "$NS" tasks ls 2>/dev/null | awk '$3 == "RUNNING" { print $2; exit }'; }
taskrunning() { [ -n "$(taskpid)" ]; }
killtasks() {
    for _kc in $(ctr -n "$NS" containers ls -q); do ctr -n "$NS" tasks kill -s KILL "$_kc" 2>/dev/null; done
}

# hostpod NAME IMAGE COMMAND [CONTAINER]: the manifest of pod NAME on the
# host's network, one container (CONTAINER, main) of the local IMAGE running
# COMMAND (a YAML flow list), on stdout. More container fields may follow it
# at the container's indentation (six spaces).
hostpod() {
    cat <<YAML
apiVersion: v1
kind: Pod
metadata:
  name: $1
spec:
  hostNetwork: true
  terminationGracePeriodSeconds: 1
  containers:
    - name: ${4:-main}
      image: $2
      imagePullPolicy: Never
      command: $3
YAML
}

# TUGDROPIN: the drop-in tugdropin writes (a script may edit its lines).
TUGDROPIN=/etc/systemd/system/tug.service.d/test.conf
# tugdropin LOG EXECSTART [LINE...]: a drop-in for the installed tug.service
# that runs EXECSTART instead, appends tug's output to LOG, drops the unit's
# dependencies (the guest's containerd is no unit) and its
# ConfigurationDirectory, adds LINE... to [Service]; then systemctl
# daemon-reload.
tugdropin() {
    mkdir -p "$(dirname "$TUGDROPIN")"
    cat > "$TUGDROPIN" <<CONF
[Unit]
After=
Wants=
DefaultDependencies=no
[Service]
StandardOutput=append:$1
StandardError=append:$1
ExecStart=
ExecStart=$2
ConfigurationDirectory=
CONF
    shift 2
    [ $# -eq 0 ] || printf '%s\n' "$@" >> "$TUGDROPIN"
    systemctl daemon-reload
}
