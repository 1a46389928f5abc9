package events

import (
	"context"
	"sync"
	"time"

	"tug/internal/clock"
	"tug/internal/pod"
)

// DefaultSize is the number of events a Ring keeps when New is given 0.
const DefaultSize = 1000

// Event types, as in Kubernetes.
const (
	Normal  = "Normal"
	Warning = "Warning"
)

// ObjectReference names the object an event is about, as Kubernetes'
// involvedObject does.
type ObjectReference struct {
	Kind      string `json:"kind"`
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	UID       string `json:"uid"`
	// FieldPath is "spec.containers{NAME}" (or initContainers) for a
	// container's event, "" for the pod's.
	FieldPath string `json:"fieldPath,omitempty"`
}

// Source is the component that reported an event.
type Source struct {
	Component string `json:"component"`
	Host      string `json:"host,omitempty"`
}

// Event is one Kubernetes-shaped event (the fields of core/v1 Event that
// mean something without an API server), plus Seq, its position in the
// ring, for watchers.
type Event struct {
	InvolvedObject ObjectReference `json:"involvedObject"`
	Reason         string          `json:"reason"`
	Message        string          `json:"message"`
	Type           string          `json:"type"`
	Count          int             `json:"count"`
	FirstTimestamp time.Time       `json:"firstTimestamp"`
	LastTimestamp  time.Time       `json:"lastTimestamp"`
	Source         Source          `json:"source"`
	Seq            uint64          `json:"seq"`
}

// Ring is a fixed-size ring of the most recent events. It is safe for
// concurrent use; its methods return copies the caller may keep.
type Ring struct {
	now  clock.Clock
	host string

	mu   sync.Mutex
	size int // the most events kept
	// buf is the ring: buf[(start+i)%len(buf)] is the i-th oldest. It
	// grows up to size (start stays 0 until then): most agents never
	// hold DefaultSize events.
	buf     []Event
	start   int
	n       int
	seq     uint64
	changed chan struct{} // closed and replaced on every change
}

// New returns a ring that keeps the last size events (DefaultSize when
// size <= 0), stamps them with now (nil: the system clock) and names host
// as their source.
func New(size int, now clock.Clock, host string) *Ring {
	if size <= 0 {
		size = DefaultSize
	}
	return &Ring{now: now, host: host, size: size, changed: make(chan struct{})}
}

// Event records an event about pod p, or about its container when
// container is not "". eventType is Normal or Warning. A nil Ring or pod
// records nothing.
func (r *Ring) Event(p *pod.Pod, container, eventType, reason, message string) {
	if r == nil || p == nil {
		return
	}
	ref := ObjectReference{Kind: "Pod", Namespace: p.Metadata.Namespace, Name: p.Metadata.Name, UID: p.Metadata.UID}
	if container != "" {
		ref.FieldPath = fieldPath(p, container)
	}
	r.record(ref, eventType, reason, message)
}

// NodeEvent records an event about the node itself (involvedObject kind
// Node, named by the ring's host). A nil Ring records nothing.
func (r *Ring) NodeEvent(eventType, reason, message string) {
	if r == nil {
		return
	}
	r.record(ObjectReference{Kind: "Node", Name: r.host}, eventType, reason, message)
}

// record adds an event about ref, or counts it again when the last event
// of ref has the same reason and message.
func (r *Ring) record(ref ObjectReference, eventType, reason, message string) {
	now := r.now.Now()
	r.mu.Lock()
	defer r.mu.Unlock()
	r.seq++
	if i, ok := r.last(ref, reason, message); ok {
		e := &r.buf[i]
		e.Count++
		e.LastTimestamp, e.Type, e.Seq = now, eventType, r.seq
	} else {
		e := Event{InvolvedObject: ref, Reason: reason, Message: message, Type: eventType, Count: 1,
			FirstTimestamp: now, LastTimestamp: now, Source: Source{Component: "tug", Host: r.host}, Seq: r.seq}
		if r.n < r.size {
			r.buf = append(r.buf, e)
			r.n++
		} else {
			r.buf[r.start] = e
			r.start = (r.start + 1) % len(r.buf)
		}
	}
	close(r.changed)
	r.changed = make(chan struct{})
}

// last returns the index of the most recent event of ref when it has the
// same reason and message. r.mu must be held.
func (r *Ring) last(ref ObjectReference, reason, message string) (int, bool) {
	for i := r.n - 1; i >= 0; i-- {
		j := (r.start + i) % len(r.buf)
		if r.buf[j].InvolvedObject == ref {
			return j, r.buf[j].Reason == reason && r.buf[j].Message == message
		}
	}
	return 0, false
}

// fieldPath is Kubernetes' field path of a container of p.
func fieldPath(p *pod.Pod, container string) string {
	for _, c := range p.Spec.InitContainers {
		if c.Name == container {
			return "spec.initContainers{" + container + "}"
		}
	}
	return "spec.containers{" + container + "}"
}

// List returns the events with Seq > after, oldest first (by their last
// occurrence).
func (r *Ring) List(after uint64) []Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.listLocked(after)
}

func (r *Ring) listLocked(after uint64) []Event {
	out := make([]Event, 0, r.n)
	for i := range r.n {
		if e := r.buf[(r.start+i)%len(r.buf)]; e.Seq > after {
			out = append(out, e)
		}
	}
	// A repeat moves an event's Seq past later ones: sort by Seq.
	for i := 1; i < len(out); i++ {
		for j := i; j > 0 && out[j].Seq < out[j-1].Seq; j-- {
			out[j], out[j-1] = out[j-1], out[j]
		}
	}
	return out
}

// Wait returns the events with Seq > after, blocking until there is at
// least one or ctx ends (then it returns nil and ctx's error).
func (r *Ring) Wait(ctx context.Context, after uint64) ([]Event, error) {
	for {
		r.mu.Lock()
		out, changed := r.listLocked(after), r.changed
		r.mu.Unlock()
		if len(out) > 0 {
			return out, nil
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-changed:
		}
	}
}

// Latest returns the most recent event of each pod, by pod UID.
func (r *Ring) Latest() map[string]Event {
	out := map[string]Event{}
	for _, e := range r.List(0) {
		out[e.InvolvedObject.UID] = e
	}
	return out
}
