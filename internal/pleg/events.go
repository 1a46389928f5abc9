package pleg

import (
	"cmp"
	"slices"
	"strconv"
	"time"

	"tug/internal/pod"
)

// EventType says what happened to a container between two relists.
type EventType int

const (
	// ContainerStarted: the container is running and was not (absent,
	// created, exited or unknown) at the previous relist.
	ContainerStarted EventType = iota + 1
	// ContainerDied: the container has exited and had not at the previous
	// relist. A container first seen already exited (it was created, started
	// and died between two relists) is reported Died too. A container that
	// was running (or unknown) and is now absent is reported Died, with the
	// unknown exit code 255, before it is reported Removed.
	ContainerDied
	// ContainerRemoved: the container was present at the previous relist
	// and is gone.
	ContainerRemoved
	// ContainerChanged: any other change of the container's state (a newly
	// created container, running to unknown, a new exit code or OOM flag on
	// an exited container, a start time recorded late).
	ContainerChanged
)

// String returns the event type's name, e.g. "ContainerDied".
func (t EventType) String() string {
	switch t {
	case ContainerStarted:
		return "ContainerStarted"
	case ContainerDied:
		return "ContainerDied"
	case ContainerRemoved:
		return "ContainerRemoved"
	case ContainerChanged:
		return "ContainerChanged"
	}
	return "EventType(" + strconv.Itoa(int(t)) + ")"
}

// Event is one change seen by a relist. The container's full state is in
// the cache (PLEG.PodContainers), which is updated before the events of a
// relist are sent.
type Event struct {
	Type        EventType
	PodUID      string
	ContainerID string    // containerd container ID
	Name        string    // container name in the manifest
	ExitCode    int       // ContainerDied: the exit code (255 when unknown)
	OOMKilled   bool      // ContainerDied: the container was OOM-killed
	At          time.Time // when the relist saw it (the PLEG's clock)
}

// unknownExitCode is reported for a running container that vanished without
// its exit being seen, as containerd's CRI and podruntime do.
const unknownExitCode = 255

// generateEvents returns the events that turn the listing old into new,
// both keyed by container ID, sorted by pod UID, then container ID (a
// container's Died comes before its Removed). It is pure: it neither keeps
// nor changes its arguments. It returns nil when nothing changed.
func generateEvents(old, new map[string]pod.RuntimeContainer, now time.Time) []Event {
	var events []Event
	for id, n := range new {
		o, seen := old[id]
		switch {
		case n.State == pod.RunRunning && (!seen || o.State != pod.RunRunning):
			events = append(events, event(ContainerStarted, n, now))
		case n.State == pod.RunExited && (!seen || o.State != pod.RunExited):
			e := event(ContainerDied, n, now)
			e.ExitCode, e.OOMKilled = n.ExitCode, n.OOMKilled
			events = append(events, e)
		case !seen || !sameState(o, n):
			events = append(events, event(ContainerChanged, n, now))
		}
	}
	for id, o := range old {
		if _, ok := new[id]; ok {
			continue
		}
		if o.State == pod.RunRunning || o.State == pod.RunUnknown {
			e := event(ContainerDied, o, now)
			e.ExitCode, e.OOMKilled = unknownExitCode, o.OOMKilled
			events = append(events, e)
		}
		events = append(events, event(ContainerRemoved, o, now))
	}
	// Stable: a container's Died stays before its Removed.
	slices.SortStableFunc(events, func(a, b Event) int {
		if c := cmp.Compare(a.PodUID, b.PodUID); c != 0 {
			return c
		}
		return cmp.Compare(a.ContainerID, b.ContainerID)
	})
	return events
}

func event(t EventType, c pod.RuntimeContainer, now time.Time) Event {
	return Event{Type: t, PodUID: c.PodUID, ContainerID: c.ID, Name: c.Name, At: now}
}

// sameState reports whether two listings of one container show the same
// state. Identity fields (pod, name, attempt, hash, image) are set at
// creation and never change for an ID, so they are not compared.
func sameState(a, b pod.RuntimeContainer) bool {
	return a.State == b.State && a.PID == b.PID && a.ExitCode == b.ExitCode &&
		a.OOMKilled == b.OOMKilled && a.StartedAt.Equal(b.StartedAt) &&
		a.FinishedAt.Equal(b.FinishedAt)
}
