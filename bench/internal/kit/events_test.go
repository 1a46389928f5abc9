package kit

import (
	"context"
	"testing"
	"time"
)

// Await keeps the first event per key and topic of its namespace, and
// stops at the wanted number of task starts.
func TestRecorderAwait(t *testing.T) {
	t0 := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	at := func(n int) time.Time { return t0.Add(ms(n)) }
	r := &Recorder{events: make(chan Event, 16), errs: make(chan error, 1)}
	for _, e := range []Event{
		{at(5), "a", TopicContainerCreate, "p1_c"},
		{at(6), "b", TopicContainerCreate, "p2_c"}, // other namespace
		{at(7), "a", TopicContainerCreate, "x_c"},  // not the run's
		{at(8), "a", TopicTaskCreate, "p1_c"},
		{at(9), "a", TopicContainerCreate, "p2_c"},
		{at(10), "a", TopicTaskStart, "p1_c"},
		{at(11), "a", TopicTaskStart, "p1_c"}, // a repeat: the first counts
		{at(12), "a", TopicTaskCreate, "p2_c"},
		{at(20), "a", TopicTaskStart, "p2_c"},
	} {
		r.events <- e
	}
	key := func(id string) (string, bool) { return id[:2], id[0] == 'p' }
	tl, err := r.Await(context.Background(), "a", 2, key)
	if err != nil {
		t.Fatal(err)
	}
	first, last := Span(tl.Created, t0)
	if first != ms(5) || last != ms(9) {
		t.Errorf("created span %v..%v, want 5ms..9ms", first, last)
	}
	if _, ready := Span(tl.Started, t0); ready != ms(20) {
		t.Errorf("ready %v, want 20ms", ready)
	}
	// p1: 5 -> 8, p2: 9 -> 12: both 3 ms.
	if g := MedianGap(tl.Created, tl.TaskCreated); g != ms(3) {
		t.Errorf("create -> task create %v, want 3ms", g)
	}
	if f, l := Span(nil, t0); f != -1 || l != -1 {
		t.Errorf("Span(nil) = %v, %v", f, l)
	}

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := r.Await(ctx, "a", 1, key); err == nil {
		t.Error("Await without events returned no error on a cancelled context")
	}
}
