package reconcile

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"tug/internal/pod"
	"tug/internal/podplan"
)

// eventLog records the events of a Loop or a syncer.
type eventLog struct {
	mu     sync.Mutex
	events []string // "type container reason message"
}

func (e *eventLog) Event(_ *pod.Pod, container, typ, reason, message string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.events = append(e.events, typ+" "+container+" "+reason+" "+message)
}

// reasons returns the events recorded so far as "type container reason".
func (e *eventLog) reasons() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	var out []string
	for _, ev := range e.events {
		f := strings.SplitN(ev, " ", 4)
		out = append(out, strings.Join(f[:3], " "))
	}
	return out
}

// TestRestartRequested: Loop.Restart stops the running container it names
// through the liveness path (a Killing event, its terminated message),
// starts it again at once as a new attempt though restartPolicy is Never
// and its back-off is long, leaves the other container alone, and the
// rollout controller does not see the new attempt as a restart.
func TestRestartRequested(t *testing.T) {
	ctx := context.Background()
	f := &fakeRuntime{}
	evs := &eventLog{}
	l := New(Config{Runtime: f, Sandbox: &fakeSandbox{}, Network: &fakeNetwork{}, Cgroups: &fakeCgroups{},
		Cache: fakeCache{f}, Recorder: evs, Log: discard(), ResyncPeriod: time.Hour,
		Backoff: &podplan.CrashBackoff{Initial: time.Hour, Max: time.Hour, Reset: 10 * time.Hour}})
	p := testPod(pod.RestartNever, nil, []string{"app", "side"})
	sync := func() {
		t.Helper()
		if _, err := l.ops.sync(ctx, ctx, p); err != nil {
			t.Fatal(err)
		}
	}
	sync()
	f.takeLog()

	if err := l.Restart(p.Metadata.UID, []string{"nope"}); !errors.Is(err, ErrNotRunning) {
		t.Errorf("Restart of a container that does not exist: %v, want ErrNotRunning", err)
	}
	if err := l.Restart(p.Metadata.UID, []string{"app"}); err != nil {
		t.Fatalf("Restart(app): %v", err)
	}
	sync() // stops app
	sync() // starts its next attempt
	if got, want := f.takeLog(), []string{"stop app/0", "start app/1"}; !slices.Equal(got, want) {
		t.Errorf("calls %v, want app stopped and started again (%v)", got, want)
	}
	if !slices.Contains(evs.events, "Normal app Killing Container app "+restartMessage) {
		t.Errorf("events %q: no Killing event for the requested restart", evs.events)
	}
	if running := f.running(); len(running) != 2 {
		t.Errorf("running %v: want app and side", running)
	}

	st := l.Status(p)
	for _, cs := range st.ContainerStatuses {
		want := int32(0)
		if cs.Name == "app" {
			want = 1
			if term := cs.LastTerminationState.Terminated; term == nil || term.Message != restartMessage {
				t.Errorf("app's last state %+v: want terminated with %q", cs.LastTerminationState, restartMessage)
			}
		}
		if cs.RestartCount != want || cs.State.Running == nil {
			t.Errorf("%s: restartCount %d, running %v; want %d, running", cs.Name, cs.RestartCount, cs.State.Running != nil, want)
		}
	}
	if pr := l.Progress(p); pr.Attempts["app"] != 0 || pr.Attempts["side"] != 0 {
		t.Errorf("Progress attempts %v: a requested restart counts as none", pr.Attempts)
	}

	// A crash after it is a restart again, and under Never it stays down.
	f.exit("app", 1)
	sync()
	if l := f.takeLog(); slices.ContainsFunc(l, func(s string) bool { return s == "start app/2" }) {
		t.Errorf("calls %v: a crash under restartPolicy Never was restarted", l)
	}
	if err := l.Restart(p.Metadata.UID, []string{"app"}); !errors.Is(err, ErrNotRunning) {
		t.Errorf("Restart of an exited container: %v, want ErrNotRunning", err)
	}
}
