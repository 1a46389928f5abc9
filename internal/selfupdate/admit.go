package selfupdate

import (
	"errors"
	"fmt"
)

// Errors of a release's admission.
var (
	// ErrNotNewer: the release is the committed one, or the one on trial:
	// nothing to do.
	ErrNotNewer = errors.New("selfupdate: release is the one running")
	// ErrBelowFloor: the release is older than the committed one.
	ErrBelowFloor = errors.New("selfupdate: release older than the one committed")
	// ErrBroken: the release was reverted on this device.
	ErrBroken = errors.New("selfupdate: release was reverted on this device")
	// ErrArch: the binary is not of this device's architecture.
	ErrArch = errors.New("selfupdate: binary of another architecture")
	// ErrNoWave: no wave of the release's rollout plan selects the
	// device, which never installs that version.
	ErrNoWave = errors.New("selfupdate: no wave of the release's rollout plan selects this node")
	// ErrHalted: the release halts another, and this device keeps what
	// it runs.
	ErrHalted = errors.New("selfupdate: release halts a rollout")
	// ErrCheck: the new binary does not run, or refuses the device's
	// configuration.
	ErrCheck = errors.New("selfupdate: new binary failed its check")
)

// Admit says whether a release of version v may be installed given the
// state: above the committed version (the floor), not on trial, never
// reverted here. Its errors wrap the sentinels above.
func Admit(st State, v uint64) error {
	switch {
	case st.Trial != nil && st.Trial.Version == v, v == st.Committed:
		return fmt.Errorf("%w: version %d", ErrNotNewer, v)
	case v < st.Committed:
		return fmt.Errorf("%w: version %d, committed %d", ErrBelowFloor, v, st.Committed)
	}
	if reason, ok := st.Broken[v]; ok {
		return fmt.Errorf("%w: version %d: %s", ErrBroken, v, reason)
	}
	return nil
}
