package reconcile

import (
	"context"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	"tug/internal/pod"
	"tug/internal/podconfig"
)

// recorder is a podOps whose sync blocks on gate until released, and
// which records what it was asked to do.
type recorder struct {
	mu    sync.Mutex
	calls []string // "sync ARG0" or "kill"
	gate  chan struct{}
	did   chan string
}

func newRecorder() *recorder {
	return &recorder{gate: make(chan struct{}), did: make(chan string, 100)}
}

func (r *recorder) ops() podOps {
	return podOps{
		sync: func(ctx, wait context.Context, p *pod.Pod) (syncResult, error) {
			r.note("sync " + p.Spec.Containers[0].Args[0])
			select {
			case <-r.gate:
			case <-wait.Done():
			}
			return syncResult{}, nil
		},
		kill: func(ctx context.Context, p *pod.Pod) error {
			r.note("kill")
			return nil
		},
	}
}

func (r *recorder) note(s string) {
	r.mu.Lock()
	r.calls = append(r.calls, s)
	r.mu.Unlock()
	r.did <- s
}

func (r *recorder) expect(t *testing.T, want string) {
	t.Helper()
	select {
	case got := <-r.did:
		if got != want {
			t.Fatalf("got %q, want %q", got, want)
		}
	case <-time.After(5 * time.Second):
		t.Fatalf("timed out waiting for %q", want)
	}
}

func (r *recorder) expectNothing(t *testing.T) {
	t.Helper()
	select {
	case got := <-r.did:
		t.Fatalf("unexpected %q", got)
	case <-time.After(50 * time.Millisecond):
	}
}

func podWithArg(arg string) *pod.Pod {
	p := testPod(pod.RestartAlways, nil, []string{"app"})
	p.Spec.Containers[0].Args = []string{arg}
	return p
}

func discard() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

func TestWorkerNewerUpdateReplacesPending(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	r := newRecorder()
	w := newWorker("uid-web", r.ops(), discard(), backoff{min: time.Hour, max: time.Hour})
	go w.run(ctx)
	w.update(podWithArg("v1"))
	r.expect(t, "sync v1")
	// v2 interrupts v1's wait; v3 replaces v2 if v2 was not picked up yet.
	w.mu.Lock()
	w.deliverLocked(&work{pod: podWithArg("v2")}, false) // pending, no interrupt
	w.mu.Unlock()
	w.update(podWithArg("v3"))
	r.expect(t, "sync v3")
	close(r.gate)
	r.expectNothing(t)
}

func TestWorkerKillIsNeverOverwritten(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	r := newRecorder()
	w := newWorker("uid-web", r.ops(), discard(), backoff{min: time.Hour, max: time.Hour})
	w.update(podWithArg("v1"))
	w.kill(podWithArg("v1"))
	if w.update(podWithArg("v2")) {
		t.Fatal("update after kill was accepted")
	}
	done := make(chan struct{})
	go func() { w.run(ctx); close(done) }()
	r.expect(t, "kill")
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("worker did not end after its kill")
	}
}

func TestWorkerRetriesFailedSync(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	tries := make(chan struct{}, 10)
	ops := podOps{
		sync: func(ctx, wait context.Context, p *pod.Pod) (syncResult, error) {
			tries <- struct{}{}
			if len(tries) < 3 {
				return syncResult{}, context.DeadlineExceeded
			}
			return syncResult{}, nil
		},
	}
	w := newWorker("uid-web", ops, discard(), backoff{min: time.Millisecond, max: 2 * time.Millisecond})
	go w.run(ctx)
	w.update(podWithArg("v1"))
	deadline := time.After(5 * time.Second)
	for len(tries) < 3 {
		select {
		case <-deadline:
			t.Fatalf("only %d tries", len(tries))
		case <-time.After(time.Millisecond):
		}
	}
}

func TestLoopReAddDuringKillStartsNewWorker(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	r := newRecorder()
	close(r.gate) // syncs return at once
	updates := make(chan []podconfig.Change)
	l := newLoop(Config{Updates: updates, ResyncPeriod: time.Hour, RetryMin: time.Hour, RetryMax: time.Hour, Log: discard()}, r.ops())
	done := make(chan error)
	go func() { done <- l.Run(ctx) }()

	updates <- []podconfig.Change{{Op: podconfig.Add, Pod: podWithArg("v1")}}
	r.expect(t, "sync v1")
	updates <- []podconfig.Change{
		{Op: podconfig.Remove, Pod: podWithArg("v1")},
		{Op: podconfig.Add, Pod: podWithArg("v2")},
	}
	r.expect(t, "kill")
	r.expect(t, "sync v2")
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}
