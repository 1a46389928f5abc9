#!/usr/bin/env bash
# fleet-halt.sh DOCS_DIR VERSION MIN_PERCENT [PUSH_ARGS...]
#
# The fleet's side of a rollout in waves (README "Updating a fleet"), with
# nothing but the status documents a receiver already keeps: it reads the
# latest status document of each device (DOCS_DIR/*.json, the JSON of
# tug.io/status/v1 as docs/status.md describes it, one file per device),
# judges the devices of wave 1 of bundle VERSION, and publishes the halt
# of VERSION when fewer than MIN_PERCENT of them are healthy:
#
#   tug bundle push --halt VERSION PUSH_ARGS...
#
# PUSH_ARGS are the rest of that command: --key KEY, the last good
# version's manifests (a device that joins during the halt runs them; add
# --revert to send the devices of wave 1 back to them) and the REF the
# devices follow. $TUG names the tug binary (default: tug on the PATH).
#
# A device of wave 1 is one whose source reports wave index 1 of VERSION
# (sources[].files[].wave). It is healthy when its state is "applied" and
# every pod is Ready, has not restarted and was not rolled back; it failed
# when its state is "rolled_back" or a pod is not; one still waiting is
# not judged yet. Prints one line per device and the verdict; exits 0
# whether it halted or not, 1 on an error, 2 on a usage error. Needs jq.
set -euo pipefail

if [ $# -lt 3 ]; then
	sed -n '2,3p' "$0" | sed 's/^# /usage: /' >&2
	exit 2
fi
docs=$1 version=$2 min=$3
shift 3
command -v jq >/dev/null || { echo "fleet-halt: jq is needed" >&2; exit 1; }
case $version$min in *[!0-9]*) echo "fleet-halt: VERSION and MIN_PERCENT are whole numbers" >&2; exit 2 ;; esac

judged=0 healthy=0
for doc in "$docs"/*.json; do
	[ -e "$doc" ] || continue
	# One line per device of wave 1: "<node> <verdict> <why>".
	line=$(jq -r --argjson v "$version" '
		[.sources[].files[] | select(.wave != null and .wave.version == $v and .wave.index == 1) | .wave][0] as $w
		| if $w == null then empty
		  elif $w.state == "waiting" then "\(.node.name) pending \($w.reason // "waiting")"
		  elif $w.state == "rolled_back" then "\(.node.name) failed \($w.reason // "rolled back")"
		  elif $w.state != "applied" then "\(.node.name) pending state \($w.state)"
		  else ([.pods[] | select(.ready != true or .restarts > 0 or .rollout.outcome == "RolledBack")] as $bad
		    | if ($bad | length) == 0 then "\(.node.name) healthy \(.pods | length) pods ready"
		      else "\(.node.name) failed \($bad | map("\(.name): ready \(.ready), restarts \(.restarts)") | join("; "))" end)
		  end' "$doc")
	[ -n "$line" ] || continue
	echo "$line"
	case $line in
	*" healthy "*) judged=$((judged + 1)) healthy=$((healthy + 1)) ;;
	*" failed "*) judged=$((judged + 1)) ;;
	esac
done

if [ "$judged" -eq 0 ]; then
	echo "version $version: no device of wave 1 to judge yet"
	exit 0
fi
rate=$((healthy * 100 / judged))
echo "version $version: wave 1: $healthy of $judged devices healthy ($rate %, at least $min % wanted)"
if [ "$rate" -ge "$min" ]; then
	echo "version $version: the rollout goes on"
	exit 0
fi
echo "version $version: halting the rollout"
"${TUG:-tug}" bundle push --halt "$version" "$@"
