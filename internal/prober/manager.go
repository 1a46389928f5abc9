package prober

import (
	"context"
	"log/slog"
	"math/rand/v2"
	"net"
	"reflect"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"tug/internal/clock"
	"tug/internal/pod"
)

// Kind is a probe's kind, as the kubelet's metrics label it.
type Kind string

const (
	Liveness  Kind = "Liveness"
	Readiness Kind = "Readiness"
	Startup   Kind = "Startup"
)

// eventRecorder records Kubernetes-shaped events (implemented by the
// agent's event ring); nil records nothing.
type eventRecorder interface {
	Event(p *pod.Pod, container, eventType, reason, message string)
}

// Config configures a Manager.
type Config struct {
	// Exec runs cmd in container id (podruntime.Runtime.ExecSync).
	Exec func(ctx context.Context, id string, cmd []string) (int, []byte, error)
	// Notify asks for a sync of pod uid: a liveness or startup probe has
	// failed and the container must be restarted. It must not block.
	Notify func(uid string)
	// Events, when set, records Unhealthy and Killing events.
	Events eventRecorder
	// Registerer, when set, registers prober_probe_total and
	// prober_probe_duration_seconds.
	Registerer prometheus.Registerer
	Clock      clock.Clock
	Log        *slog.Logger
}

// Manager runs one worker per probe of every running container of tug's
// pods and keeps their results, by container ID. The sync loop tells it
// which containers run (Sync, Remove) and asks it whether a container is
// ready, started or unhealthy. Results are kept in memory: a restarted tug
// re-arms the workers of the containers that still run and counts from
// scratch, as the kubelet does; a container is not ready again until its
// readiness probe succeeds once more, and it is not killed for failures
// seen before the restart. Safe for concurrent use.
type Manager struct {
	cfg     Config
	now     clock.Clock
	metrics *metrics
	base    context.Context
	stop    context.CancelFunc
	started time.Time

	pool nsPool // threads in the pods' namespaces

	mu         sync.Mutex
	containers map[string]*container // by container ID
	wg         sync.WaitGroup
}

// container is the probe state of one running container.
type container struct {
	uid     string
	pod     *pod.Pod
	name    string
	workers map[Kind]*worker

	// Guarded by Manager.mu.
	started   bool   // startup probe succeeded, or none
	ready     bool   // readiness probe succeeded (last threshold crossing), or none
	unhealthy string // why a liveness or startup probe failed ("" if not)
	grace     *int64 // the failed probe's terminationGracePeriodSeconds
}

// New returns a Manager; its workers run until Run's context ends.
func New(cfg Config) *Manager {
	base, stop := context.WithCancel(context.Background())
	m := &Manager{cfg: cfg, now: cfg.Clock, base: base, stop: stop, containers: map[string]*container{}}
	m.started = m.now.Now()
	m.metrics = newMetrics(cfg.Registerer)
	return m
}

// Run waits for ctx to end, then stops every worker and waits for them.
// It always returns nil.
func (m *Manager) Run(ctx context.Context) error {
	<-ctx.Done()
	m.stop()
	m.wg.Wait()
	return nil
}

// Name names the manager as one of the sync loop's hooks.
func (m *Manager) Name() string { return "probes" }

// Listed arms the probes of p's running containers (recs: the pod's
// containers as the runtime lists them) and stops the workers of its
// containers that no longer run. A probe whose spec changed is re-armed.
// sb gives the pod's network namespace and address.
func (m *Manager) Listed(p *pod.Pod, recs []pod.RuntimeContainer, sb pod.Sandbox) {
	uid := p.Metadata.UID
	running := map[string]bool{}
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, r := range recs {
		if r.State != pod.RunRunning {
			continue
		}
		c := specOf(p, r.Name, r.Init)
		if c == nil {
			continue
		}
		running[r.ID] = true
		st := m.containers[r.ID]
		if st == nil {
			st = &container{uid: uid, name: c.Name, workers: map[Kind]*worker{}, started: c.StartupProbe == nil, ready: c.ReadinessProbe == nil}
			m.containers[r.ID] = st
		}
		st.pod = p
		target := Target{NetNS: sb.Net, PodIP: sb.IP, Ports: c.Ports}
		if ns := sb.Net; ns != "" {
			target.Dial = func(ctx context.Context, network, addr string) (net.Conn, error) {
				return m.pool.dial(ctx, ns, network, addr)
			}
		}
		if m.cfg.Exec != nil {
			target.Exec = containerExec{id: r.ID, exec: m.cfg.Exec}
		}
		for kind, probe := range map[Kind]*pod.Probe{Liveness: c.LivenessProbe, Readiness: c.ReadinessProbe, Startup: c.StartupProbe} {
			w := st.workers[kind]
			if w != nil && reflect.DeepEqual(w.probe, probe) {
				w.target.Store(&target) // the pod's address may have changed
				continue
			}
			if w != nil {
				w.cancel()
				delete(st.workers, kind)
			}
			if probe == nil {
				switch kind {
				case Readiness:
					st.ready = true
				case Startup:
					st.started = true
				}
				continue
			}
			w = m.newWorker(r, st, kind, probe, target)
			st.workers[kind] = w
		}
	}
	for id, st := range m.containers {
		if st.uid == uid && !running[id] {
			m.dropLocked(id, st)
		}
	}
}

// Removed stops the workers of every container of pod uid.
func (m *Manager) Removed(uid string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for id, st := range m.containers {
		if st.uid == uid {
			m.dropLocked(id, st)
		}
	}
}

func (m *Manager) dropLocked(id string, st *container) {
	for _, w := range st.workers {
		w.cancel()
	}
	delete(m.containers, id)
	m.metrics.forget(st.pod, st.name)
}

// Ready reports whether running container id, with spec c, is ready: it
// has started (its startup probe succeeded) and its readiness probe
// succeeded last. A container with neither probe is ready; one with a
// probe that no worker has reported on yet is not.
func (m *Manager) Ready(id string, c *pod.Container) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	if st := m.containers[id]; st != nil {
		return st.started && st.ready
	}
	return c.ReadinessProbe == nil && c.StartupProbe == nil
}

// Started reports whether running container id's startup probe has
// succeeded (true without a startup probe).
func (m *Manager) Started(id string, c *pod.Container) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	if st := m.containers[id]; st != nil {
		return st.started
	}
	return c.StartupProbe == nil
}

// Unhealthy reports whether container id's liveness or startup probe has
// failed (failureThreshold times in a row), with the message to show
// ("Liveness probe failed: ...") and the probe's
// terminationGracePeriodSeconds (nil: the pod's).
func (m *Manager) Unhealthy(id string) (msg string, grace *int64, bad bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if st := m.containers[id]; st != nil && st.unhealthy != "" {
		return st.unhealthy, st.grace, true
	}
	return "", nil, false
}

// record stores a worker's result once it crossed its threshold and
// reports whether the caller must notify the sync loop.
func (m *Manager) record(w *worker, res Result, msg string) (notify bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	st := m.containers[w.id]
	if st == nil || st.workers[w.kind] != w {
		return false // dropped meanwhile
	}
	switch w.kind {
	case Readiness:
		st.ready = res == Success
	case Startup:
		if res == Success {
			st.started = true
			return false
		}
		st.unhealthy, st.grace = "Startup probe failed: "+msg, w.probe.TerminationGracePeriodSeconds
		return true
	case Liveness:
		if res == Failure {
			st.unhealthy, st.grace = "Liveness probe failed: "+msg, w.probe.TerminationGracePeriodSeconds
			return true
		}
	}
	return false
}

// isStarted reports whether w's container has started (for liveness and
// readiness, which wait for the startup probe).
func (m *Manager) isStarted(w *worker) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	st := m.containers[w.id]
	return st != nil && st.started
}

// podOf returns the pod of w's container, for events.
func (m *Manager) podOf(w *worker) *pod.Pod {
	m.mu.Lock()
	defer m.mu.Unlock()
	if st := m.containers[w.id]; st != nil {
		return st.pod
	}
	return nil
}

// specOf returns the spec of container name of p (an init container's
// when init).
func specOf(p *pod.Pod, name string, init bool) *pod.Container {
	list := p.Spec.Containers
	if init {
		list = p.Spec.InitContainers
	}
	for i := range list {
		if list[i].Name == name {
			return &list[i]
		}
	}
	return nil
}

// containerExec is an Execer for one container.
type containerExec struct {
	id   string
	exec func(ctx context.Context, id string, cmd []string) (int, []byte, error)
}

func (e containerExec) Exec(ctx context.Context, cmd []string) (int, []byte, error) {
	return e.exec(ctx, e.id, cmd)
}

// jitter returns a random delay in [0, d).
func jitter(d time.Duration) time.Duration {
	if d <= 0 {
		return 0
	}
	return rand.N(d)
}
