package podruntime

import (
	"context"
	"errors"
	"log/slog"
	"reflect"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	eventtypes "github.com/containerd/containerd/api/events"
	"github.com/containerd/containerd/v2/core/events"
	"github.com/containerd/containerd/v2/pkg/filters"
	"github.com/containerd/typeurl/v2"

	"tug/internal/pod"
	"tug/internal/podlabels"
)

func TestTaskEventFilters(t *testing.T) {
	fs := taskEventFilters("tug-test")
	want := []string{
		`namespace=="tug-test",topic=="/tasks/start"`,
		`namespace=="tug-test",topic=="/tasks/exit"`,
		`namespace=="tug-test",topic=="/tasks/oom"`,
		`namespace=="tug-test",topic=="/tasks/delete"`,
	}
	if !reflect.DeepEqual(fs, want) {
		t.Fatalf("filters = %q, want %q", fs, want)
	}
	// containerd parses them and selects exactly tug's task events.
	f, err := filters.ParseAll(fs...)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		ns, topic string
		want      bool
	}{
		{"tug-test", "/tasks/exit", true},
		{"tug-test", "/tasks/oom", true},
		{"tug-test", "/tasks/start", true},
		{"tug-test", "/tasks/delete", true},
		{"tug-test", "/tasks/create", false},
		{"tug-test", "/containers/update", false},
		{"other", "/tasks/exit", false},
		{"tug-test-2", "/tasks/exit", false},
	}
	for _, tt := range tests {
		env := &events.Envelope{Namespace: tt.ns, Topic: tt.topic}
		if got := f.Match(filters.AdapterFunc(env.Field)); got != tt.want {
			t.Errorf("match(%s %s) = %v, want %v", tt.ns, tt.topic, got, tt.want)
		}
	}
}

func envelope(t *testing.T, topic string, ev any) *events.Envelope {
	t.Helper()
	a, err := typeurl.MarshalAny(ev)
	if err != nil {
		t.Fatal(err)
	}
	return &events.Envelope{Namespace: "tug", Topic: topic, Event: a}
}

func TestOOMContainerID(t *testing.T) {
	if id, ok := oomContainerID(envelope(t, topicTaskOOM, &eventtypes.TaskOOM{ContainerID: "web_app_1"})); !ok || id != "web_app_1" {
		t.Errorf("OOM event: %q, %v", id, ok)
	}
	for name, env := range map[string]*events.Envelope{
		"exit":        envelope(t, topicTaskExit, &eventtypes.TaskExit{ContainerID: "x", ExitStatus: 137}),
		"no event":    {Topic: topicTaskOOM},
		"empty ID":    envelope(t, topicTaskOOM, &eventtypes.TaskOOM{}),
		"wrong type":  envelope(t, topicTaskOOM, &eventtypes.TaskExit{ContainerID: "x"}),
		"wrong topic": envelope(t, topicTaskStart, &eventtypes.TaskOOM{ContainerID: "x"}),
	} {
		if id, ok := oomContainerID(env); ok {
			t.Errorf("%s: oomContainerID = %q, want none", name, id)
		}
	}
}

func TestOOMKilledLabel(t *testing.T) {
	labels := map[string]string{podlabels.LabelPodUID: "u", podlabels.LabelExitCode: "137"}
	var rc pod.RuntimeContainer
	podlabels.Record(labels, &rc)
	if rc.OOMKilled {
		t.Error("OOMKilled without the label")
	}
	labels[podlabels.LabelOOMKilled] = "true"
	podlabels.Record(labels, &rc)
	if !rc.OOMKilled {
		t.Error("OOMKilled false with the label")
	}
}

// fakeStreams is a containerd event service whose subscriptions fail
// while fail is set, and otherwise stay open until broken or cancelled.
type fakeStreams struct {
	mu     sync.Mutex
	fail   error
	tries  []time.Time
	active *fakeStream
}

type fakeStream struct {
	evs  chan *events.Envelope
	errs chan error
}

func (f *fakeStreams) subscribe(ctx context.Context) (<-chan *events.Envelope, <-chan error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.tries = append(f.tries, time.Now())
	s := &fakeStream{evs: make(chan *events.Envelope), errs: make(chan error, 1)}
	if f.fail != nil {
		s.errs <- f.fail
		return s.evs, s.errs
	}
	f.active = s
	return s.evs, s.errs
}

func (f *fakeStreams) setFail(err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.fail = err
}

// breakStream breaks the open stream, as a containerd restart does.
func (f *fakeStreams) breakStream(err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.active.errs <- err
	f.active = nil
}

func (f *fakeStreams) send(env *events.Envelope) {
	f.mu.Lock()
	s := f.active
	f.mu.Unlock()
	s.evs <- env
}

func (f *fakeStreams) lastTry() time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.tries[len(f.tries)-1]
}

// gaps returns the waits between successive subscription tries.
func (f *fakeStreams) gaps() []time.Duration {
	f.mu.Lock()
	defer f.mu.Unlock()
	var d []time.Duration
	for i := 1; i < len(f.tries); i++ {
		d = append(d, f.tries[i].Sub(f.tries[i-1]))
	}
	return d
}

type recordHandler struct {
	mu   sync.Mutex
	msgs []string // "LEVEL message"
}

func (h *recordHandler) Enabled(context.Context, slog.Level) bool { return true }
func (h *recordHandler) Handle(_ context.Context, r slog.Record) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if r.Level >= slog.LevelInfo {
		h.msgs = append(h.msgs, r.Level.String()+" "+r.Message)
	}
	return nil
}
func (h *recordHandler) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h *recordHandler) WithGroup(string) slog.Handler      { return h }

func (h *recordHandler) logged() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]string(nil), h.msgs...)
}

type watchFixture struct {
	streams *fakeStreams
	logs    *recordHandler
	mu      sync.Mutex
	wakes   int
	handled []string // topics, in order
	stop    func() error
}

// startWatcher runs an eventWatcher on fake streams; with failFirst, the
// subscriptions fail from the start.
func startWatcher(t *testing.T, failFirst ...error) *watchFixture {
	f := &watchFixture{streams: &fakeStreams{}, logs: &recordHandler{}}
	if len(failFirst) > 0 {
		f.streams.fail = failFirst[0]
	}
	w := eventWatcher{
		subscribe: f.streams.subscribe,
		handle: func(_ context.Context, env *events.Envelope) {
			f.mu.Lock()
			f.handled = append(f.handled, env.Topic)
			f.mu.Unlock()
		},
		wake: func() {
			f.mu.Lock()
			f.wakes++
			f.mu.Unlock()
		},
		log: slog.New(f.logs),
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- w.run(ctx) }()
	f.stop = func() error {
		cancel()
		return <-done
	}
	return f
}

func (f *watchFixture) counts() (wakes int, handled []string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.wakes, append([]string(nil), f.handled...)
}

// Each event is handled, then wakes; a new stream wakes once it has
// lasted a second (events may have been missed before it).
func TestWatchEventsWakes(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := startWatcher(t)
		synctest.Wait()
		f.streams.send(envelope(t, topicTaskStart, &eventtypes.TaskStart{ContainerID: "a"}))
		synctest.Wait()
		// The first event marks the stream up (one wake) and wakes itself.
		if wakes, handled := f.counts(); wakes != 2 || !reflect.DeepEqual(handled, []string{topicTaskStart}) {
			t.Errorf("after one event: %d wakes, handled %v", wakes, handled)
		}
		f.streams.send(envelope(t, topicTaskOOM, &eventtypes.TaskOOM{ContainerID: "a"}))
		f.streams.send(envelope(t, topicTaskExit, &eventtypes.TaskExit{ContainerID: "a"}))
		synctest.Wait()
		if wakes, handled := f.counts(); wakes != 4 || !reflect.DeepEqual(handled, []string{topicTaskStart, topicTaskOOM, topicTaskExit}) {
			t.Errorf("after three events: %d wakes, handled %v", wakes, handled)
		}
		if err := f.stop(); err != nil {
			t.Errorf("run = %v, want nil", err)
		}
		if got := f.logs.logged(); len(got) != 0 {
			t.Errorf("logged %q, want nothing at Info and above", got)
		}
	})
}

// A broken stream is resubscribed with a backoff of 100 ms doubling to 5 s,
// logged once when it breaks and once when it works again; the backoff
// starts over after a stream that worked.
func TestWatchEventsReconnects(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := startWatcher(t)
		time.Sleep(watchUpAfter) // the stream counts as up
		synctest.Wait()
		if wakes, _ := f.counts(); wakes != 1 {
			t.Errorf("%d wakes after the stream came up, want 1", wakes)
		}

		refused := errors.New("connection refused")
		f.streams.setFail(refused)
		f.streams.breakStream(errors.New("EOF"))
		time.Sleep(20 * time.Second)
		synctest.Wait()
		f.streams.setFail(nil)
		time.Sleep(10 * time.Second) // the next try succeeds and lasts
		synctest.Wait()

		want := []time.Duration{
			watchUpAfter + 100*time.Millisecond, // the first stream lasted 1 s, then the minimum backoff
			200 * time.Millisecond, 400 * time.Millisecond, 800 * time.Millisecond,
			1600 * time.Millisecond, 3200 * time.Millisecond, 5 * time.Second, 5 * time.Second, 5 * time.Second,
		}
		gaps := f.streams.gaps()
		if len(gaps) < len(want) || !reflect.DeepEqual(gaps[:len(want)], want) {
			t.Errorf("waits between tries = %v, want %v...", gaps, want)
		}
		if got, want := f.logs.logged(), []string{
			"WARN containerd event stream broken; resubscribing",
			"INFO containerd event stream restored",
		}; !reflect.DeepEqual(got, want) {
			t.Errorf("logged %q, want %q", got, want)
		}
		wakes, _ := f.counts()
		if wakes != 2 {
			t.Errorf("%d wakes, want 2 (each time the stream came up)", wakes)
		}

		// After a stream that worked, the backoff starts over.
		broke := time.Now()
		f.streams.breakStream(errors.New("EOF"))
		time.Sleep(time.Second)
		synctest.Wait()
		if got := f.streams.lastTry().Sub(broke); got != watchBackoffMin {
			t.Errorf("resubscribed %v after a working stream broke, want %v", got, watchBackoffMin)
		}
		if err := f.stop(); err != nil {
			t.Errorf("run = %v, want nil", err)
		}
	})
}

// Cancelling ctx during the backoff returns nil at once.
func TestWatchEventsStopsDuringBackoff(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := startWatcher(t, errors.New("connection refused"))
		time.Sleep(2 * time.Second)
		synctest.Wait()
		if n := len(f.streams.gaps()); n != 4 {
			t.Errorf("%d retries in 2 s, want 4 (after 100, 200, 400, 800 ms)", n)
		}
		if got := f.logs.logged(); !reflect.DeepEqual(got, []string{"WARN containerd event stream broken; resubscribing"}) {
			t.Errorf("logged %q", got)
		}
		if err := f.stop(); err != nil {
			t.Errorf("run = %v, want nil", err)
		}
	})
}
