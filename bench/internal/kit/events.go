package kit

import (
	"context"
	"fmt"
	"os"
	"time"

	apievents "github.com/containerd/containerd/api/events"
	containerd "github.com/containerd/containerd/v2/client"
	"github.com/containerd/typeurl/v2"
)

// The topics a Recorder receives.
const (
	TopicContainerCreate = "/containers/create"
	TopicTaskCreate      = "/tasks/create"
	TopicTaskStart       = "/tasks/start"
)

// Event is one containerd event, stamped with the time it reached this
// process: every method a benchmark compares is timed on that one clock.
type Event struct {
	At    time.Time
	NS    string
	Topic string
	ID    string // container ID
}

// Recorder receives containerd's container-create, task-create and
// task-start events of some namespaces from the moment it is made, and
// hands them out in order.
type Recorder struct {
	events chan Event
	errs   chan error
}

// Subscribe subscribes to the events of namespaces nss; they are recorded
// until ctx ends.
func Subscribe(ctx context.Context, client *containerd.Client, nss ...string) *Recorder {
	r := &Recorder{events: make(chan Event, 1<<14), errs: make(chan error, 1)}
	var filters []string
	for _, ns := range nss {
		for _, topic := range []string{TopicContainerCreate, TopicTaskCreate, TopicTaskStart} {
			filters = append(filters, fmt.Sprintf("namespace==%q,topic==%q", ns, topic))
		}
	}
	envelopes, errs := client.Subscribe(ctx, filters...)
	go func() {
		for {
			select {
			case env := <-envelopes:
				at := time.Now()
				ev, err := typeurl.UnmarshalAny(env.Event)
				if err != nil {
					fmt.Fprintf(os.Stderr, "bench: decode %s event: %v\n", env.Topic, err)
					continue
				}
				e := Event{At: at, NS: env.Namespace, Topic: env.Topic}
				switch ev := ev.(type) {
				case *apievents.ContainerCreate:
					e.ID = ev.ID
				case *apievents.TaskCreate:
					e.ID = ev.ContainerID
				case *apievents.TaskStart:
					e.ID = ev.ContainerID
				default:
					continue
				}
				r.events <- e
			case err := <-errs:
				if err == nil {
					err = context.Canceled
				}
				r.errs <- fmt.Errorf("containerd event stream: %w", err)
				return
			}
		}
	}()
	return r
}

// Drain drops the events received so far.
func (r *Recorder) Drain() {
	for {
		select {
		case <-r.events:
		default:
			return
		}
	}
}

// Timeline is what the events said about one run: per key (a pod or a
// container of the run), when its container was created, its task created
// and its task started.
type Timeline struct {
	Created     map[string]time.Time
	TaskCreated map[string]time.Time
	Started     map[string]time.Time
}

// Await collects the events of namespace ns whose container ID key maps to
// a key until want tasks have started, or ctx ends.
func (r *Recorder) Await(ctx context.Context, ns string, want int, key func(id string) (string, bool)) (Timeline, error) {
	tl := Timeline{Created: map[string]time.Time{}, TaskCreated: map[string]time.Time{}, Started: map[string]time.Time{}}
	for len(tl.Started) < want {
		select {
		case e := <-r.events:
			tl.add(e, ns, key)
		case err := <-r.errs:
			return tl, err
		case <-ctx.Done():
			return tl, fmt.Errorf("%d of %d tasks started: %w", len(tl.Started), want, ctx.Err())
		}
	}
	return tl, nil
}

// add records e if it is of namespace ns and key selects it; only the
// first event of a topic per key counts.
func (tl Timeline) add(e Event, ns string, key func(id string) (string, bool)) {
	k, ok := key(e.ID)
	if e.NS != ns || !ok {
		return
	}
	m := tl.Created
	switch e.Topic {
	case TopicTaskCreate:
		m = tl.TaskCreated
	case TopicTaskStart:
		m = tl.Started
	}
	if _, seen := m[k]; !seen {
		m[k] = e.At
	}
}

// Span returns the earliest and latest time in m, as offsets from t0, or
// -1 when m is empty.
func Span(m map[string]time.Time, t0 time.Time) (first, last time.Duration) {
	first, last = -1, -1
	for _, t := range m {
		d := t.Sub(t0)
		if first < 0 || d < first {
			first = d
		}
		if d > last {
			last = d
		}
	}
	return first, last
}

// MedianGap is the median over the keys in both maps of to[k] - from[k],
// -1 when there are none.
func MedianGap(from, to map[string]time.Time) time.Duration {
	var ds []time.Duration
	for k, t := range to {
		if f, ok := from[k]; ok {
			ds = append(ds, t.Sub(f))
		}
	}
	return Summarise(ds).Med
}
