package reconcile

import (
	"context"
	"errors"
	"slices"
	"testing"

	"tug/internal/pod"
)

// fakeHooks records each hook it runs into the fake runtime's log, as
// "postStart NAME" or "preStop NAME", and fails those named in fail.
type fakeHooks struct {
	rt   *fakeRuntime
	fail map[string]bool
}

func (h *fakeHooks) Name() string { return "lifecycle" }

func (h *fakeHooks) Poststart(_ context.Context, _ *pod.Pod, c *pod.Container, _ string, _ pod.Sandbox) error {
	if c.Lifecycle == nil || c.Lifecycle.PostStart == nil {
		return nil
	}
	return h.run("postStart", c)
}

func (h *fakeHooks) Prestop(_ context.Context, _ *pod.Pod, c *pod.Container, _ string, _ func() pod.Sandbox) (bool, error) {
	if c.Lifecycle == nil || c.Lifecycle.PreStop == nil {
		return false, nil
	}
	return true, h.run("preStop", c)
}

func (h *fakeHooks) run(kind string, c *pod.Container) error {
	h.rt.mu.Lock()
	h.rt.record(kind + " " + c.Name)
	h.rt.mu.Unlock()
	if h.fail[kind] {
		return errors.New(kind + " exited with 1")
	}
	return nil
}

func TestHooks(t *testing.T) {
	hook := &pod.LifecycleHandler{Exec: &pod.ExecAction{Command: []string{"true"}}}
	tests := []struct {
		name    string
		fail    map[string]bool
		act     func(ctx context.Context, s *podSyncer, p *pod.Pod) error
		want    []string // the runtime's log after the first sync
		wantErr bool
	}{{
		name: "postStart after start, preStop before the stop on removal",
		act:  func(ctx context.Context, s *podSyncer, p *pod.Pod) error { return s.killPod(ctx, p) },
		want: []string{"preStop app", "stop app/0", "remove app/0", "cleanup"},
	}, {
		name: "preStop before the stop on a manifest update",
		act: func(ctx context.Context, s *podSyncer, p *pod.Pod) error {
			q := *p
			q.Spec.Containers = slices.Clone(p.Spec.Containers)
			q.Spec.Containers[0].Image = "busybox:other"
			_, err := s.syncPod(ctx, ctx, &q)
			return err
		},
		want: []string{"preStop app", "stop app/0", "remove app/0", "start app/1", "postStart app"},
	}, {
		name: "a failed preStop does not keep the container from stopping",
		fail: map[string]bool{"preStop": true},
		act:  func(ctx context.Context, s *podSyncer, p *pod.Pod) error { return s.killPod(ctx, p) },
		want: []string{"preStop app", "stop app/0", "remove app/0", "cleanup"},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			f := &fakeRuntime{}
			s := newTestSyncer(f, &fakeSandbox{})
			s.hooks = sortHooks([]Hook{&fakeHooks{rt: f, fail: tt.fail}})
			p := testPod(pod.RestartAlways, nil, []string{"app"})
			preStop := *hook
			p.Spec.Containers[0].Lifecycle = &pod.Lifecycle{PostStart: hook, PreStop: &preStop}
			if _, err := s.syncPod(ctx, ctx, p); err != nil {
				t.Fatal(err)
			}
			if got, want := f.takeLog(), []string{"start app/0", "postStart app"}; !slices.Equal(got, want) {
				t.Fatalf("first sync: %q, want %q", got, want)
			}
			if err := tt.act(ctx, s, p); (err != nil) != tt.wantErr {
				t.Fatalf("err = %v", err)
			}
			if got := f.takeLog(); !slices.Equal(got, tt.want) {
				t.Errorf("log %q, want %q", got, tt.want)
			}
		})
	}
}

func TestPostStartFailureStopsTheContainer(t *testing.T) {
	ctx := context.Background()
	f := &fakeRuntime{}
	s := newTestSyncer(f, &fakeSandbox{})
	s.hooks = sortHooks([]Hook{&fakeHooks{rt: f, fail: map[string]bool{"postStart": true}}})
	p := testPod(pod.RestartAlways, nil, []string{"app"})
	hook := &pod.LifecycleHandler{Exec: &pod.ExecAction{Command: []string{"false"}}}
	p.Spec.Containers[0].Lifecycle = &pod.Lifecycle{PostStart: hook}
	if _, err := s.syncPod(ctx, ctx, p); err == nil {
		t.Fatal("sync: no error for a failed postStart")
	}
	if got, want := f.takeLog(), []string{"start app/0", "postStart app", "stop app/0"}; !slices.Equal(got, want) {
		t.Errorf("log %q, want %q", got, want)
	}
	n := s.notes.pod(p.Metadata.UID, s.now.Now())
	if w := n.waiting["app"]; w.Reason != reasonPostStartHookError {
		t.Errorf("waiting %+v, want reason %s", w, reasonPostStartHookError)
	}
}
