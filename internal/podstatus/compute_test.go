package podstatus

import (
	"testing"
	"time"

	"tug/internal/pod"
)

func TestConditionTransitionTime(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	prev := map[string]pod.Condition{}
	c1 := condition(prev, pod.ConditionReady, false, t0, "x")
	c2 := condition(prev, pod.ConditionReady, false, t0.Add(time.Minute), "x")
	c3 := condition(prev, pod.ConditionReady, true, t0.Add(2*time.Minute), "x")
	if !c1.LastTransitionTime.Equal(t0) || !c2.LastTransitionTime.Equal(t0) || !c3.LastTransitionTime.Equal(t0.Add(2*time.Minute)) {
		t.Errorf("transition times %v %v %v", c1.LastTransitionTime, c2.LastTransitionTime, c3.LastTransitionTime)
	}
}
