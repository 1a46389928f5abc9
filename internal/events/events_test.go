package events

import (
	"context"
	"testing"
	"time"
	"tug/internal/testutil"
)

func TestRing(t *testing.T) {
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	type ev struct{ pod, container, typ, reason, msg string }
	tests := []struct {
		name       string
		size       int
		record     []ev
		want       []string // reason/fieldPath/count of List(0), oldest first
		wantLatest map[string]string
	}{
		{
			name:       "in order with field paths",
			size:       10,
			record:     []ev{{"a", "setup", Normal, "Created", "c"}, {"a", "app", Normal, "Started", "s"}, {"b", "", Warning, "FailedMount", "m"}},
			want:       []string{"Created spec.initContainers{setup} 1", "Started spec.containers{app} 1", "FailedMount  1"},
			wantLatest: map[string]string{"uid-a": "Started", "uid-b": "FailedMount"},
		},
		{
			name:       "a repeat bumps the count and moves last",
			size:       10,
			record:     []ev{{"a", "app", Warning, "BackOff", "x"}, {"b", "app", Normal, "Started", "s"}, {"a", "app", Warning, "BackOff", "x"}},
			want:       []string{"Started spec.containers{app} 1", "BackOff spec.containers{app} 2"},
			wantLatest: map[string]string{"uid-a": "BackOff", "uid-b": "Started"},
		},
		{
			name:       "a different event in between is not a repeat",
			size:       10,
			record:     []ev{{"a", "app", Normal, "Started", "s"}, {"a", "app", Normal, "Killing", "k"}, {"a", "app", Normal, "Started", "s"}},
			want:       []string{"Started spec.containers{app} 1", "Killing spec.containers{app} 1", "Started spec.containers{app} 1"},
			wantLatest: map[string]string{"uid-a": "Started"},
		},
		{
			name:       "the oldest fall out",
			size:       2,
			record:     []ev{{"a", "app", Normal, "Pulled", "1"}, {"a", "app", Normal, "Created", "2"}, {"a", "app", Normal, "Started", "3"}},
			want:       []string{"Created spec.containers{app} 1", "Started spec.containers{app} 1"},
			wantLatest: map[string]string{"uid-a": "Started"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := New(tt.size, func() time.Time { return t0 }, "node1")
			for _, e := range tt.record {
				r.Event(testutil.Pod(e.pod, testutil.WithInit("setup")), e.container, e.typ, e.reason, e.msg)
			}
			got := r.List(0)
			if len(got) != len(tt.want) {
				t.Fatalf("List = %+v, want %d events", got, len(tt.want))
			}
			for i, e := range got {
				if s := e.Reason + " " + e.InvolvedObject.FieldPath + " " + itoa(e.Count); s != tt.want[i] {
					t.Errorf("event %d = %q, want %q", i, s, tt.want[i])
				}
				if e.Source.Host != "node1" || !e.LastTimestamp.Equal(t0) || e.InvolvedObject.Kind != "Pod" {
					t.Errorf("event %d = %+v: wrong source, time or kind", i, e)
				}
			}
			for uid, reason := range tt.wantLatest {
				if got := r.Latest()[uid].Reason; got != reason {
					t.Errorf("Latest()[%s] = %q, want %q", uid, got, reason)
				}
			}
		})
	}
}

func itoa(n int) string { return string(rune('0' + n)) }

func TestRingNil(t *testing.T) {
	var r *Ring
	r.Event(testutil.Pod("a", testutil.WithInit("setup")), "", Normal, "Started", "") // must not panic
	New(1, nil, "").Event(nil, "", Normal, "Started", "")
}

func TestWait(t *testing.T) {
	r := New(10, nil, "")
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	got := make(chan []Event, 1)
	go func() {
		evs, err := r.Wait(ctx, 0)
		if err != nil {
			t.Error(err)
		}
		got <- evs
	}()
	r.Event(testutil.Pod("a", testutil.WithInit("setup")), "app", Normal, "Started", "s")
	evs := <-got
	if len(evs) != 1 || evs[0].Reason != "Started" {
		t.Fatalf("Wait = %+v", evs)
	}
	short, cancel2 := context.WithTimeout(ctx, 10*time.Millisecond)
	defer cancel2()
	if evs, err := r.Wait(short, evs[0].Seq); err == nil || evs != nil {
		t.Fatalf("Wait after the last = %v, %v; want a timeout", evs, err)
	}
}

// TestNodeEvent: a node event names the node (the ring's host), and a
// repeat is counted on the same event.
func TestNodeEvent(t *testing.T) {
	r := New(10, nil, "edge-1")
	r.NodeEvent(Warning, "ClockBeforeTimeFloor", "m")
	r.NodeEvent(Warning, "ClockBeforeTimeFloor", "m")
	var nilRing *Ring
	nilRing.NodeEvent(Warning, "x", "y") // must not panic
	got := r.List(0)
	if len(got) != 1 || got[0].InvolvedObject != (ObjectReference{Kind: "Node", Name: "edge-1"}) || got[0].Count != 2 || got[0].Type != Warning {
		t.Errorf("List = %+v", got)
	}
}
