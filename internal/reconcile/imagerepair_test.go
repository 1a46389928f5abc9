package reconcile

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"tug/internal/pod"
)

// damagedRuntime fails a start with pod.ErrImageDamaged while its image
// is damaged; a repair mends it unless repairErr is set or the image stays
// damaged (brokenForGood: an image broken as published).
type damagedRuntime struct {
	*fakeRuntime
	damaged       bool
	brokenForGood bool
	repairErr     error
	repairs       int
}

func (d *damagedRuntime) StartContainer(ctx context.Context, p *pod.Pod, c *pod.Container, init bool, attempt int, sb pod.Sandbox, res pod.LinuxResources) (string, error) {
	if d.damaged {
		return "", fmt.Errorf("start container %q: image %s: %w: entrypoint /bin/sh is empty", c.Name, c.Image, pod.ErrImageDamaged)
	}
	return d.fakeRuntime.StartContainer(ctx, p, c, init, attempt, sb, res)
}

func (d *damagedRuntime) RepairImage(_ context.Context, _ *pod.Pod, _ *pod.Container, damage error) error {
	if !errors.Is(damage, pod.ErrImageDamaged) {
		return fmt.Errorf("repair asked for %v", damage)
	}
	d.repairs++
	if d.repairErr != nil {
		return d.repairErr
	}
	d.damaged = d.brokenForGood
	return nil
}

// eventList records events as "REASON".
type eventList struct {
	mu      sync.Mutex
	reasons []string
}

func (e *eventList) Event(_ *pod.Pod, _, _, reason, _ string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.reasons = append(e.reasons, reason)
}

func (e *eventList) count(reason string) int {
	e.mu.Lock()
	defer e.mu.Unlock()
	n := 0
	for _, r := range e.reasons {
		if r == reason {
			n++
		}
	}
	return n
}

func TestStartRepairsDamagedImage(t *testing.T) {
	tests := []struct {
		name          string
		brokenForGood bool
		repairErr     error
		noRepairer    bool
		wantErr       bool
		wantRepairs   int
		wantEvent     string
	}{
		{name: "damaged image is repaired and the container starts", wantRepairs: 1, wantEvent: reasonImageRepaired},
		{name: "an image broken as published fails after one repair", brokenForGood: true, wantErr: true, wantRepairs: 1, wantEvent: reasonImageRepaired},
		{name: "a failed repair fails the start", repairErr: errors.New("registry unreachable"), wantErr: true, wantRepairs: 1, wantEvent: reasonImageRepairFailed},
		{name: "without a repairer the damage is a start error", noRepairer: true, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rt := &damagedRuntime{fakeRuntime: &fakeRuntime{}, damaged: true, brokenForGood: tt.brokenForGood, repairErr: tt.repairErr}
			s := newTestSyncer(rt, &fakeSandbox{})
			ev := &eventList{}
			s.rec = ev
			s.repairs = &repairBackoff{}
			if !tt.noRepairer {
				s.repairer = rt
			}
			p := testPod(pod.RestartAlways, nil, []string{"app"})
			_, err := s.start(context.Background(), p, &p.Spec.Containers[0], false, nil, pod.Sandbox{})
			if (err != nil) != tt.wantErr {
				t.Fatalf("start = %v, want error %v", err, tt.wantErr)
			}
			if err != nil && !errors.Is(err, pod.ErrImageDamaged) && tt.repairErr == nil {
				t.Errorf("start = %v, want it to wrap pod.ErrImageDamaged", err)
			}
			if rt.repairs != tt.wantRepairs {
				t.Errorf("repairs = %d, want %d", rt.repairs, tt.wantRepairs)
			}
			if tt.wantEvent != "" && ev.count(tt.wantEvent) != 1 {
				t.Errorf("events %v, want one %s", ev.reasons, tt.wantEvent)
			}
			// A second start within the back-off period repairs nothing.
			if tt.wantErr && !tt.noRepairer {
				_, _ = s.start(context.Background(), p, &p.Spec.Containers[0], false, nil, pod.Sandbox{})
				if rt.repairs != tt.wantRepairs {
					t.Errorf("repairs after a second start within the back-off = %d, want %d", rt.repairs, tt.wantRepairs)
				}
				if ev.count(reasonImageDamaged) != 1 {
					t.Errorf("events %v, want one %s for the repair left for later", ev.reasons, reasonImageDamaged)
				}
			}
		})
	}
}

func TestRepairBackoff(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	b := &repairBackoff{}
	steps := []struct {
		at   time.Duration
		want bool
	}{
		{0, true},                             // first damage: at once
		{time.Minute, false},                  // within 5 min
		{5 * time.Minute, true},               // the period has passed; the next is 10 min
		{14 * time.Minute, false},             // 9 min after
		{15 * time.Minute, true},              // 10 min after; the next is 20 min
		{16 * time.Minute, false},             //
		{35 * time.Minute, true},              // then 40, then 60 (the cap)
		{75 * time.Minute, true},              //
		{2*time.Hour + 14*time.Minute, false}, // 59 min after: capped at 1 h
		{2*time.Hour + 15*time.Minute, true},  //
		{27 * time.Hour, true},                // a day later: starts over
		{27*time.Hour + time.Minute, false},
		{27*time.Hour + 5*time.Minute, true},
	}
	for _, st := range steps {
		if got, _ := b.allow("busybox:1.35", t0.Add(st.at)); got != st.want {
			t.Errorf("allow at +%s = %v, want %v", st.at, got, st.want)
		}
	}
	if ok, _ := b.allow("other:1", t0.Add(27*time.Hour+time.Minute)); !ok {
		t.Error("the back-off of one image holds back another")
	}
}
