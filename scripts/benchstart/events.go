package main

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/containerd/containerd"
	apievents "github.com/containerd/containerd/api/events"
	"github.com/containerd/typeurl/v2"
)

// Topics the recorder subscribes to.
const (
	topicContainerCreate = "/containers/create"
	topicTaskCreate      = "/tasks/create"
	topicTaskStart       = "/tasks/start"
)

// event is one containerd event, stamped with the time it reached this
// process.
type event struct {
	at    time.Time
	ns    string
	topic string
	id    string // container ID
}

// recorder receives containerd's container-create, task-create and
// task-start events for
// the benchmark's namespaces from the moment it is made, and hands them out
// in order.
type recorder struct {
	events chan event
	errs   chan error
}

// subscribe subscribes to the events; they are recorded until ctx ends.
func subscribe(ctx context.Context, client *containerd.Client) *recorder {
	r := &recorder{events: make(chan event, 1<<14), errs: make(chan error, 1)}
	var filters []string
	for _, ns := range []string{nsTug, nsCtr} {
		for _, topic := range []string{topicContainerCreate, topicTaskCreate, topicTaskStart} {
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
					fmt.Fprintf(os.Stderr, "benchstart: decode %s event: %v\n", env.Topic, err)
					continue
				}
				e := event{at: at, ns: env.Namespace, topic: env.Topic}
				switch ev := ev.(type) {
				case *apievents.ContainerCreate:
					e.id = ev.ID
				case *apievents.TaskCreate:
					e.id = ev.ContainerID
				case *apievents.TaskStart:
					e.id = ev.ContainerID
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

// drain drops the events received so far.
func (r *recorder) drain() {
	for {
		select {
		case <-r.events:
		default:
			return
		}
	}
}

// timeline is what the events said about one run: per container key, when
// its container was created, its task created and its task started.
type timeline struct {
	created     map[string]time.Time
	taskCreated map[string]time.Time
	started     map[string]time.Time
}

// await collects the events of namespace ns whose container ID key selects
// (and maps to a key: one per pod or container of the run) until want tasks
// have started, or ctx ends.
func (r *recorder) await(ctx context.Context, ns string, want int, key func(id string) (string, bool)) (timeline, error) {
	tl := timeline{created: map[string]time.Time{}, taskCreated: map[string]time.Time{}, started: map[string]time.Time{}}
	for len(tl.started) < want {
		select {
		case e := <-r.events:
			k, ok := key(e.id)
			if e.ns != ns || !ok {
				continue
			}
			m := tl.created
			switch e.topic {
			case topicTaskCreate:
				m = tl.taskCreated
			case topicTaskStart:
				m = tl.started
			}
			if _, seen := m[k]; !seen {
				m[k] = e.at
			}
		case err := <-r.errs:
			return tl, err
		case <-ctx.Done():
			return tl, fmt.Errorf("%d of %d tasks started: %w", len(tl.started), want, ctx.Err())
		}
	}
	return tl, nil
}

// span returns the earliest and latest time in m, as offsets from t0, or
// -1 when m is empty.
func span(m map[string]time.Time, t0 time.Time) (first, last time.Duration) {
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
