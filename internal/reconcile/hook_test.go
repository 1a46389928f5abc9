package reconcile

import (
	"context"
	"errors"
	"slices"
	"testing"

	"tug/internal/pod"
)

// stageHook takes part in the stages its fields say, recording each call
// as "NAME STAGE" in calls.
type stageHook struct {
	name     string
	calls    *[]string
	notReady bool  // Ready says false
	failWith error // StartFailed: mended when the start failed with it
	mend     func()
}

func (h *stageHook) Name() string { return h.name }

func (h *stageHook) Ready(string, *pod.Container) bool {
	*h.calls = append(*h.calls, h.name+" ready")
	return !h.notReady
}

func (h *stageHook) Started(string, *pod.Container) bool { return true }

func (h *stageHook) StartFailed(_ context.Context, _ *pod.Pod, _ *pod.Container, err error) bool {
	*h.calls = append(*h.calls, h.name+" startFailed")
	if h.failWith != nil && errors.Is(err, h.failWith) {
		h.mend()
		return true
	}
	return false
}

// failingStart fails each start while fail is set.
type failingStart struct {
	*fakeRuntime
	fail error
}

func (f *failingStart) StartContainer(ctx context.Context, p *pod.Pod, c *pod.Container, init bool, attempt int, sb pod.Sandbox, res pod.LinuxResources) (string, error) {
	if f.fail != nil {
		return "", f.fail
	}
	return f.fakeRuntime.StartContainer(ctx, p, c, init, attempt, sb, res)
}

// TestHookStages: the hooks of a stage run in the order given, a
// container is ready only when every ReadyHook says so, and a
// StartFailedHook that mends the cause of a failed start has it tried
// again at once.
func TestHookStages(t *testing.T) {
	damaged := errors.New("image damaged")
	tests := []struct {
		name      string
		hooks     func(calls *[]string, rt *failingStart) []Hook
		startErr  error
		wantReady bool
		wantStart bool
		wantCalls []string
	}{
		{
			name:      "no hooks: ready, and a failed start stays failed",
			hooks:     func(*[]string, *failingStart) []Hook { return nil },
			startErr:  damaged,
			wantReady: true,
		},
		{
			name: "every ReadyHook is asked, in order, until one says no",
			hooks: func(calls *[]string, _ *failingStart) []Hook {
				return []Hook{&stageHook{name: "a", calls: calls}, &stageHook{name: "b", calls: calls, notReady: true}, &stageHook{name: "c", calls: calls}}
			},
			wantStart: true,
			wantCalls: []string{"a ready", "b ready"},
		},
		{
			name: "the second StartFailedHook mends the start",
			hooks: func(calls *[]string, rt *failingStart) []Hook {
				return []Hook{
					&stageHook{name: "a", calls: calls},
					&stageHook{name: "b", calls: calls, failWith: damaged, mend: func() { rt.fail = nil }},
				}
			},
			startErr:  damaged,
			wantReady: true,
			wantStart: true,
			wantCalls: []string{"a startFailed", "b startFailed", "a ready", "b ready"},
		},
		{
			name: "a StartFailedHook that cannot mend the cause leaves the start failed",
			hooks: func(calls *[]string, rt *failingStart) []Hook {
				return []Hook{&stageHook{name: "a", calls: calls, failWith: damaged, mend: func() {}}}
			},
			startErr:  errors.New("no such file"),
			wantReady: true,
			wantCalls: []string{"a startFailed", "a ready"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var calls []string
			rt := &failingStart{fakeRuntime: &fakeRuntime{}, fail: tt.startErr}
			s := newTestSyncer(rt, &fakeSandbox{})
			s.hooks = sortHooks(tt.hooks(&calls, rt))
			p := testPod(pod.RestartAlways, nil, []string{"app"})
			_, err := s.start(context.Background(), p, &p.Spec.Containers[0], false, nil, pod.Sandbox{})
			if (err == nil) != tt.wantStart {
				t.Errorf("start = %v, want started %v", err, tt.wantStart)
			}
			if got := s.hooks.Ready("id", &p.Spec.Containers[0]); got != tt.wantReady {
				t.Errorf("Ready = %v, want %v", got, tt.wantReady)
			}
			if !slices.Equal(calls, tt.wantCalls) {
				t.Errorf("calls %q, want %q", calls, tt.wantCalls)
			}
		})
	}
}
