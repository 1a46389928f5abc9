package selfupdate

import (
	"fmt"
	"time"
)

// DefaultMaxLaunches is how many launches a release on trial gets: the
// next launch runs the good binary and marks the release broken. A
// release that exits at start, is killed by systemd's watchdog or by
// TimeoutStartSec, or is cut by the power during its trial, uses one.
const DefaultMaxLaunches = 3

// Launch is what the guard decides at a launch of "tug run".
type Launch struct {
	// State is the state to write (when Write is set).
	State State
	Write bool
	// Slot is the slot to run ("" for the installed binary), and
	// SetCurrent whether the current link must be pointed at it first.
	Slot       string
	SetCurrent bool
	// Reverted says the guard reverted a release (logged with Reason).
	Reverted bool
	Reason   string
}

// Decide is the guard's decision, a pure function of the state, the slot
// the current link names and the launches a trial gets:
//
//   - no trial: the good slot runs; a current link that names another
//     slot is pointed back at the good one;
//   - a trial whose slot the current link does not name: the switch did
//     not happen (a power cut between the state's write and the link's)
//     or a revert's link was written and its state was not: the trial is
//     dropped, marked broken only when its launches were used up;
//   - a trial that the current link names: one more launch is counted and
//     written before the trial binary runs; the launch after the last one
//     reverts: the current link goes back to the good slot (first) and the
//     release is marked broken (then), so that a cut between the two
//     leaves a trial the next launch drops.
func Decide(st State, current string, maxLaunches int, now time.Time) Launch {
	st = st.clone()
	if st.Trial == nil {
		return Launch{State: st, Slot: st.Good, SetCurrent: current != st.Good}
	}
	t := *st.Trial
	if current != t.Slot {
		if t.Launches >= maxLaunches {
			reason := fmt.Sprintf("did not pass its trial in %d launches", t.Launches)
			st.markBroken(t.Version, reason, t.Printed, now)
			return Launch{State: st, Write: true, Slot: st.Good, SetCurrent: current != st.Good, Reverted: true, Reason: reason}
		}
		st.Trial = nil
		return Launch{State: st, Write: true, Slot: st.Good, SetCurrent: current != st.Good,
			Reason: fmt.Sprintf("release %d was not switched to: trial dropped", t.Version)}
	}
	if t.Launches >= maxLaunches {
		reason := fmt.Sprintf("did not pass its trial in %d launches (it exited, hung or was killed before its health gate passed)", t.Launches)
		st.markBroken(t.Version, reason, t.Printed, now)
		return Launch{State: st, Write: true, Slot: st.Good, SetCurrent: true, Reverted: true, Reason: reason}
	}
	st.Trial.Launches++
	return Launch{State: st, Write: true, Slot: t.Slot}
}

// Apply carries a launch decision out on the layout: a revert points the
// current link back first and writes the state after; a launch of the
// trial writes its count before it runs.
func (l Layout) Apply(d Launch) error {
	if d.Reverted || (d.SetCurrent && d.Write) {
		if err := l.SetCurrent(d.Slot); err != nil {
			return err
		}
		return WriteState(l.StateFile(), d.State)
	}
	if d.Write {
		if err := WriteState(l.StateFile(), d.State); err != nil {
			return err
		}
	}
	if d.SetCurrent {
		return l.SetCurrent(d.Slot)
	}
	return nil
}
