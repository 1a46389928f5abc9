package podruntime

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"time"
	"tug/internal/podlabels"

	eventtypes "github.com/containerd/containerd/api/events"
	"github.com/containerd/containerd/v2/core/containers"
	"github.com/containerd/containerd/v2/core/events"
	"github.com/containerd/errdefs"
	"github.com/containerd/typeurl/v2"
)

// The task event topics WatchEvents subscribes to.
const (
	topicTaskStart  = "/tasks/start"
	topicTaskExit   = "/tasks/exit"
	topicTaskOOM    = "/tasks/oom"
	topicTaskDelete = "/tasks/delete"
)

const (
	// watchBackoffMin and watchBackoffMax bound the wait before
	// resubscribing after the event stream broke: it starts at the minimum
	// and doubles up to the maximum while subscribing keeps failing.
	watchBackoffMin = 100 * time.Millisecond
	watchBackoffMax = 5 * time.Second
	// watchUpAfter is how long a new stream must last without breaking (or
	// deliver an event) to count as working: then the backoff starts over.
	watchUpAfter = time.Second
	// oomLabelTimeout bounds the recording of an OOM kill in a label.
	oomLabelTimeout = 5 * time.Second
)

// WatchEvents subscribes to containerd's task events in tug's namespace
// (/tasks/start, /tasks/exit, /tasks/oom, /tasks/delete) and calls wake
// for each, from this goroutine, one at a time: wake must return quickly
// (pleg.PLEG.Wake never blocks).
//
// On an OOM event it first records podlabels.LabelOOMKilled on the container (bounded
// by a 5 s timeout), so that a listing reports OOMKilled, also after tug
// restarts; then it wakes. When the stream breaks (containerd restarting)
// it resubscribes after a backoff of 100 ms doubling to 5 s, and logs only
// when the stream breaks and when it works again, then wakes once, since
// events may have been missed meanwhile.
//
// Events are only a wake-up: nothing depends on their delivery. An OOM
// event missed while the stream is down leaves that container's OOMKilled
// false. It returns nil when ctx is done, and leaves no goroutine behind.
func (r *Runtime) WatchEvents(ctx context.Context, wake func()) error {
	ctx = r.ctx(ctx)
	filters := taskEventFilters(r.cfg.Namespace)
	w := eventWatcher{
		subscribe: func(ctx context.Context) (<-chan *events.Envelope, <-chan error) {
			return r.client.Subscribe(ctx, filters...)
		},
		handle: func(ctx context.Context, env *events.Envelope) {
			if env.Namespace != r.cfg.Namespace {
				return // the filters keep them out; never act on another's
			}
			if id, ok := oomContainerID(env); ok {
				r.recordOOM(ctx, id)
			}
		},
		wake: wake,
		log:  r.log,
	}
	return w.run(ctx)
}

// taskEventFilters returns containerd event filters selecting the task
// events of namespace ns. Filters are alternatives; the terms of one are
// all required.
func taskEventFilters(ns string) []string {
	topics := []string{topicTaskStart, topicTaskExit, topicTaskOOM, topicTaskDelete}
	fs := make([]string, 0, len(topics))
	for _, t := range topics {
		fs = append(fs, "namespace=="+strconv.Quote(ns)+",topic=="+strconv.Quote(t))
	}
	return fs
}

// oomContainerID returns the container ID of a /tasks/oom event.
func oomContainerID(env *events.Envelope) (string, bool) {
	if env.Topic != topicTaskOOM || env.Event == nil {
		return "", false
	}
	var oom eventtypes.TaskOOM
	if err := typeurl.UnmarshalTo(env.Event, &oom); err != nil || oom.ContainerID == "" {
		return "", false
	}
	return oom.ContainerID, true
}

// recordOOM sets podlabels.LabelOOMKilled on container id. A container already gone
// is not an error.
func (r *Runtime) recordOOM(ctx context.Context, id string) {
	ctx, cancel := context.WithTimeout(ctx, oomLabelTimeout)
	defer cancel()
	rec := containers.Container{ID: id, Labels: map[string]string{podlabels.LabelOOMKilled: "true"}}
	_, err := r.client.ContainerService().Update(ctx, rec, "labels."+podlabels.LabelOOMKilled)
	r.records.changed()
	if err != nil {
		if !errdefs.IsNotFound(err) && ctx.Err() == nil {
			r.log.Warn("record OOM kill", "container", id, "err", err)
		}
		return
	}
	r.log.Info("container OOM-killed", "container", id)
}

// eventWatcher is WatchEvents' loop, with containerd behind subscribe and
// handle so that the retry logic can be tested without a daemon.
type eventWatcher struct {
	// subscribe starts a stream that ends when ctx is done or the stream
	// breaks (an error on the second channel, or its closing).
	subscribe func(ctx context.Context) (<-chan *events.Envelope, <-chan error)
	// handle runs for each event, before wake.
	handle func(ctx context.Context, env *events.Envelope)
	wake   func()
	log    *slog.Logger
}

// errStreamClosed reports a stream that ended without saying why.
var errStreamClosed = errors.New("event stream closed")

func (w *eventWatcher) run(ctx context.Context) error {
	backoff := watchBackoffMin
	broken := false // the stream is down, and that was logged
	for {
		up, err := w.stream(ctx, func() {
			if broken {
				broken = false
				w.log.Info("containerd event stream restored")
			} else {
				w.log.Debug("watching containerd task events")
			}
			w.wake() // events may have been missed before
		})
		if ctx.Err() != nil {
			return nil
		}
		if up {
			backoff = watchBackoffMin
		}
		if !broken {
			broken = true
			w.log.Warn("containerd event stream broken; resubscribing", "err", err)
		} else {
			w.log.Debug("resubscribe to containerd events", "err", err, "backoff", backoff)
		}
		t := time.NewTimer(backoff)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil
		case <-t.C:
		}
		backoff = min(2*backoff, watchBackoffMax)
	}
}

// stream runs one subscription until it breaks or ctx is done. It calls
// onUp once the stream has lasted watchUpAfter or delivered an event, and
// reports whether it did.
func (w *eventWatcher) stream(ctx context.Context, onUp func()) (up bool, err error) {
	sctx, cancel := context.WithCancel(ctx)
	defer cancel() // ends the subscription's goroutine
	evs, errs := w.subscribe(sctx)
	upTimer := time.NewTimer(watchUpAfter)
	defer upTimer.Stop()
	markUp := func() {
		if !up {
			up = true
			onUp()
		}
	}
	for {
		select {
		case <-ctx.Done():
			return up, ctx.Err()
		case err, ok := <-errs:
			if !ok || err == nil {
				err = errStreamClosed
			}
			return up, fmt.Errorf("subscribe to containerd events: %w", err)
		case <-upTimer.C:
			markUp()
		case env, ok := <-evs:
			if !ok {
				return up, fmt.Errorf("subscribe to containerd events: %w", errStreamClosed)
			}
			markUp()
			if env != nil {
				w.handle(ctx, env)
			}
			w.wake()
		}
	}
}
