package eviction

import (
	"fmt"
	"slices"
	"time"

	"tug/internal/pod"
)

// Node condition types (pod's names).
const (
	MemoryPressure = pod.NodeMemoryPressure
	DiskPressure   = pod.NodeDiskPressure
	PIDPressure    = pod.NodePIDPressure
)

// NodeCondition is one node condition (GET /node, tug node).
type NodeCondition = pod.NodeCondition

// conditionText is the kubelet's reasons and messages per condition, for
// false and true.
var conditionText = map[string][2][2]string{
	MemoryPressure: {{"KubeletHasSufficientMemory", "kubelet has sufficient memory available"}, {"KubeletHasInsufficientMemory", "kubelet has insufficient memory available"}},
	DiskPressure:   {{"KubeletHasNoDiskPressure", "kubelet has no disk pressure"}, {"KubeletHasDiskPressure", "kubelet has disk pressure"}},
	PIDPressure:    {{"KubeletHasSufficientPID", "kubelet has sufficient PID available"}, {"KubeletHasInsufficientPID", "kubelet has insufficient PID available"}},
}

func conditionOf(s Signal) string {
	switch s {
	case SignalMemoryAvailable:
		return MemoryPressure
	case SignalPIDAvailable:
		return PIDPressure
	}
	return DiskPressure
}

// computeConditions returns the conditions for the thresholds met now
// (hard or soft, whatever the grace period): a condition stays true for
// PressureTransitionPeriod after its threshold was last met. Called with
// mu held (or before the Manager is shared).
func (m *Manager) computeConditions(now time.Time, met []Threshold) []NodeCondition {
	for _, t := range met {
		m.lastObserved[conditionOf(t.Signal)] = now
	}
	out := make([]NodeCondition, 0, 3)
	for _, typ := range []string{MemoryPressure, DiskPressure, PIDPressure} {
		last, seen := m.lastObserved[typ]
		on := seen && now.Sub(last) < m.cfg.PressureTransitionPeriod
		if seen && !on {
			delete(m.lastObserved, typ)
		}
		idx := 0
		if on {
			idx = 1
		}
		c := NodeCondition{Type: typ, Status: "False", Reason: conditionText[typ][idx][0], Message: conditionText[typ][idx][1], LastTransitionTime: now}
		if on {
			c.Status = "True"
		}
		if i := slices.IndexFunc(m.conditions, func(o NodeCondition) bool { return o.Type == typ }); i >= 0 && m.conditions[i].Status == c.Status {
			c.LastTransitionTime = m.conditions[i].LastTransitionTime
		}
		out = append(out, c)
	}
	return out
}

// Conditions returns the node conditions MemoryPressure, DiskPressure and
// PIDPressure as of the last pass. The slice is the caller's.
func (m *Manager) Conditions() []NodeCondition {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(m.conditions)
}

// Admit reports whether p may start now, the kubelet's admission rule
// under pressure: with MemoryPressure a BestEffort pod may not, with
// DiskPressure or PIDPressure no pod may (a critical pod always may). When
// it may not, message is the kubelet's ("The node had condition:
// [DiskPressure]. ") and the pod's reason is Reason. reconcile calls it
// before starting an evicted pod again.
func (m *Manager) Admit(p *pod.Pod, bestEffort bool) (ok bool, message string) {
	if m.priority(p) >= SystemCriticalPriority {
		return true, ""
	}
	var blocking []string
	for _, c := range m.Conditions() {
		if c.Status != "True" {
			continue
		}
		if c.Type != MemoryPressure || bestEffort {
			blocking = append(blocking, c.Type)
		}
	}
	if len(blocking) == 0 {
		return true, ""
	}
	return false, fmt.Sprintf(nodeConditionMessageFmt, blocking)
}
