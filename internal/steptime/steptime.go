// Package steptime times the steps of one piece of work (a pod's sandbox,
// a container's start) for a debug log line: each step's duration, in the
// order the steps ran. The timer travels in the context, as net/http's
// httptrace does, so that a package deep in the call path marks its own
// steps without a parameter in every signature; a context without a timer
// marks nothing and costs one context lookup.
package steptime

import (
	"context"
	"time"
)

// Timer holds the steps of one piece of work. It is not safe for
// concurrent use: one piece of work runs in one goroutine.
type Timer struct {
	start, last time.Time
	attrs       []any
}

// New starts a timer now.
func New() *Timer {
	now := time.Now()
	return &Timer{start: now, last: now}
}

// Step records the time since the previous step (or since New) as the
// step name. A step that runs again (a retry) adds to its first entry.
func (t *Timer) Step(name string) {
	if t == nil {
		return
	}
	now := time.Now()
	d := now.Sub(t.last)
	t.last = now
	for i := 0; i+1 < len(t.attrs); i += 2 {
		if t.attrs[i] == name {
			t.attrs[i+1] = t.attrs[i+1].(time.Duration) + d
			return
		}
	}
	t.attrs = append(t.attrs, name, d)
}

// Attrs returns the steps as slog key-value pairs (name, duration), in
// order, followed by "total", the time since New.
func (t *Timer) Attrs() []any {
	if t == nil {
		return nil
	}
	return append(append([]any{}, t.attrs...), "total", time.Since(t.start))
}

type key struct{}

// With returns ctx carrying t.
func With(ctx context.Context, t *Timer) context.Context {
	return context.WithValue(ctx, key{}, t)
}

// From returns the timer ctx carries, or nil (whose Step does nothing).
func From(ctx context.Context) *Timer {
	t, _ := ctx.Value(key{}).(*Timer)
	return t
}
