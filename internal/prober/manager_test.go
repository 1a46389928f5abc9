package prober

import (
	"context"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"tug/internal/pod"
)

// scripted answers exec probes by command name: the exit code set for it,
// and counts the calls.
type scripted struct {
	mu    sync.Mutex
	codes map[string]int
	calls map[string]int
}

func (s *scripted) set(cmd string, code int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.codes[cmd] = code
}

func (s *scripted) count(cmd string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.calls[cmd]
}

func (s *scripted) exec(_ context.Context, _ string, cmd []string) (int, []byte, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls[cmd[0]]++
	return s.codes[cmd[0]], []byte(cmd[0] + " said no"), nil
}

func execProbe(cmd string, failures int32) *pod.Probe {
	return &pod.Probe{Exec: &pod.ExecAction{Command: []string{cmd}}, TimeoutSeconds: 1, PeriodSeconds: 1, SuccessThreshold: 1, FailureThreshold: failures}
}

func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestManagerStartupGatesLiveness: liveness and readiness do not run
// before the startup probe succeeds; then readiness makes the container
// ready, and liveness failing failureThreshold times in a row marks it
// unhealthy and asks for a sync of its pod, once.
func TestManagerStartupGatesLiveness(t *testing.T) {
	s := &scripted{codes: map[string]int{"startup": 1, "live": 0, "ready": 0}, calls: map[string]int{}}
	var notified atomic.Int32
	reg := prometheus.NewRegistry()
	m := New(Config{Exec: s.exec, Notify: func(uid string) {
		if uid == "u1" {
			notified.Add(1)
		}
	}, Registerer: reg})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- m.Run(ctx) }()
	defer func() { cancel(); <-done }()

	c := pod.Container{Name: "main", LivenessProbe: execProbe("live", 2), ReadinessProbe: execProbe("ready", 1), StartupProbe: execProbe("startup", 100)}
	p := &pod.Pod{Metadata: pod.ObjectMeta{Name: "web", Namespace: "default", UID: "u1"}, Spec: pod.PodSpec{Containers: []pod.Container{c}}}
	recs := []pod.RuntimeContainer{{ID: "id1", Name: "main", State: pod.RunRunning, StartedAt: time.Now()}}
	m.Listed(p, recs, pod.Sandbox{})

	waitUntil(t, "two startup probes", func() bool { return s.count("startup") >= 2 })
	if m.Started("id1", &c) || m.Ready("id1", &c) || s.count("live")+s.count("ready") != 0 {
		t.Fatalf("before startup succeeded: started %v ready %v, liveness ran %d, readiness %d times",
			m.Started("id1", &c), m.Ready("id1", &c), s.count("live"), s.count("ready"))
	}
	s.set("startup", 0)
	waitUntil(t, "started and ready", func() bool { return m.Started("id1", &c) && m.Ready("id1", &c) })
	if _, _, bad := m.Unhealthy("id1"); bad {
		t.Fatal("unhealthy while liveness passes")
	}
	s.set("live", 1)
	waitUntil(t, "unhealthy", func() bool { _, _, bad := m.Unhealthy("id1"); return bad })
	msg, _, _ := m.Unhealthy("id1")
	if !strings.HasPrefix(msg, "Liveness probe failed: live said no") {
		t.Errorf("message %q", msg)
	}
	n := s.count("live")
	time.Sleep(1500 * time.Millisecond)
	if s.count("live") != n || notified.Load() != 1 {
		t.Errorf("after the failure: liveness ran %d more times, %d notifications; want 0 and 1", s.count("live")-n, notified.Load())
	}
	if got := testutil.ToFloat64(m.metrics.total.WithLabelValues("Liveness", "failed", "main", "web", "default")); got != 2 {
		t.Errorf("prober_probe_total{Liveness,failed} = %v, want 2", got)
	}
	// The container is gone: its state and series go too.
	m.Listed(p, nil, pod.Sandbox{})
	if _, _, bad := m.Unhealthy("id1"); bad || m.Ready("id1", &c) {
		t.Error("state kept for a container that no longer runs")
	}
	if n := testutil.CollectAndCount(reg, "prober_probe_total"); n != 0 {
		t.Errorf("%d prober_probe_total series left, want 0", n)
	}
}

// TestManagerNoProbes: a container without probes is ready and started.
func TestManagerNoProbes(t *testing.T) {
	m := New(Config{})
	c := pod.Container{Name: "main"}
	if !m.Ready("x", &c) || !m.Started("x", &c) {
		t.Error("a container without probes is not ready")
	}
	c.ReadinessProbe = execProbe("ready", 1)
	if m.Ready("x", &c) {
		t.Error("a container with a readiness probe no worker ran is ready")
	}
}
