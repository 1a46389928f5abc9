package imagehooks

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"tug/internal/pod"
)

// damagedImage is a runtime whose image is damaged: a repair mends it
// unless repairErr is set or the image stays damaged (brokenForGood: an
// image broken as published).
type damagedImage struct {
	damaged       bool
	brokenForGood bool
	repairErr     error
	repairs       int
}

func (d *damagedImage) start(c *pod.Container) error {
	if d.damaged {
		return fmt.Errorf("start container %q: image %s: %w: entrypoint /bin/sh is empty", c.Name, c.Image, pod.ErrImageDamaged)
	}
	return nil
}

func (d *damagedImage) repair(_ context.Context, _ *pod.Pod, _ *pod.Container, damage error) error {
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

// TestRepairStartFailed starts a container from a damaged image the way
// the sync loop does: a failed start asks StartFailed, and a retry starts
// again.
func TestRepairStartFailed(t *testing.T) {
	tests := []struct {
		name          string
		brokenForGood bool
		repairErr     error
		otherErr      bool
		wantErr       bool
		wantRepairs   int
		wantEvent     string
	}{
		{name: "damaged image is repaired and the container starts", wantRepairs: 1, wantEvent: ReasonImageRepaired},
		{name: "an image broken as published fails after one repair", brokenForGood: true, wantErr: true, wantRepairs: 1, wantEvent: ReasonImageRepaired},
		{name: "a failed repair fails the start", repairErr: errors.New("registry unreachable"), wantErr: true, wantRepairs: 1, wantEvent: ReasonImageRepairFailed},
		{name: "a start error that is no damage repairs nothing", otherErr: true, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			img := &damagedImage{damaged: true, brokenForGood: tt.brokenForGood, repairErr: tt.repairErr}
			ev := &eventList{}
			r := NewRepair(RepairConfig{Repair: img.repair, Events: ev})
			c := &pod.Container{Name: "app", Image: "busybox:1.36"}
			start := func() error {
				err := img.start(c)
				if tt.otherErr {
					err = errors.New("no such file")
				}
				if err != nil && r.StartFailed(context.Background(), &pod.Pod{}, c, err) {
					err = img.start(c)
				}
				return err
			}
			err := start()
			if (err != nil) != tt.wantErr {
				t.Fatalf("start = %v, want error %v", err, tt.wantErr)
			}
			if img.repairs != tt.wantRepairs {
				t.Errorf("repairs = %d, want %d", img.repairs, tt.wantRepairs)
			}
			if tt.wantEvent != "" && ev.count(tt.wantEvent) != 1 {
				t.Errorf("events %v, want one %s", ev.reasons, tt.wantEvent)
			}
			// A second start within the back-off period repairs nothing.
			if tt.wantErr && !tt.otherErr {
				_ = start()
				if img.repairs != tt.wantRepairs {
					t.Errorf("repairs after a second start within the back-off = %d, want %d", img.repairs, tt.wantRepairs)
				}
				if ev.count(ReasonImageDamaged) != 1 {
					t.Errorf("events %v, want one %s for the repair left for later", ev.reasons, ReasonImageDamaged)
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
