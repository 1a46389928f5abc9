//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"tug/internal/pod"
	"tug/internal/podview"
)

// Probes: each test runs a busybox httpd (or nothing) in a
// pod and checks what the probes do to the pod's status and containers.

// webScript serves /www on port 8080 with busybox httpd (in the
// background) and then runs rest.
func webScript(rest string) string {
	return "mkdir -p /www && echo ok > /www/healthz && httpd -p 8080 -h /www && " + rest
}

// probePod is a pod with one container "main" running script, with the
// container lines extra (probes, ports), indented by six spaces.
func probePod(name, image, script, extra string) string {
	return podYAML{name: name, containers: []ctrYAML{{name: "main", image: image, script: script, extra: extra}}}.String()
}

// statusOf returns the status of container name in v (zero if absent).
func statusOf(v *podview.View, name string) pod.ContainerStatus {
	for _, cs := range append(v.Status.ContainerStatuses, v.Status.InitContainerStatuses...) {
		if cs.Name == name {
			return cs
		}
	}
	return pod.ContainerStatus{}
}

// conditionOf returns the pod's condition typ.
func conditionOf(v *podview.View, typ string) pod.Condition {
	for _, c := range v.Status.Conditions {
		if c.Type == typ {
			return c
		}
	}
	return pod.Condition{}
}

// readyIs checks the pod's Ready condition, its container main's ready,
// and that main never restarted.
func readyIs(want bool) func(v *podview.View) error {
	return func(v *podview.View) error {
		cs := statusOf(v, "main")
		if cs.RestartCount != 0 {
			return fmt.Errorf("main restarted %d times", cs.RestartCount)
		}
		ready := conditionOf(v, pod.ConditionReady)
		if cs.Ready != want || (ready.Status == "True") != want || (conditionOf(v, pod.ConditionContainersReady).Status == "True") != want {
			return fmt.Errorf("main ready %v, Ready %s, want %v", cs.Ready, ready.Status, want)
		}
		if conditionOf(v, pod.ConditionPodScheduled).Status != "True" {
			return fmt.Errorf("no PodScheduled condition")
		}
		return nil
	}
}

// TestProbeLivenessRestartsHungServer: an HTTP server that stops answering
// (SIGSTOP: the process is alive) is restarted by its liveness probe within
// periodSeconds*failureThreshold + timeout + the probe's grace, the restart
// counted, with "Liveness probe failed" as its last state's message.
func TestProbeLivenessRestartsHungServer(t *testing.T) {
	t.Parallel()
	tg := startTug(t, tugOpts{args: []string{"--crash-loop-back-off-initial", "1s"}})
	// The first run stops its httpd after 3 s and marks the moment on the
	// emptyDir (/data/hung); /data/broke keeps the second run healthy.
	script := webScript(`if [ ! -f /data/broke ]; then touch /data/broke; (sleep 3; kill -STOP $(pidof httpd); touch /data/hung) & fi; ` + idle)
	tg.writeManifest("hung.yaml", podYAML{name: "hung", grace: 30, volumes: []volYAML{emptyVol("data")},
		containers: []ctrYAML{{name: "main", image: tg.image, script: script, mounts: []mountYAML{{name: "data", path: "/data"}}, extra: `      livenessProbe:
        httpGet: {path: /healthz, port: 8080}
        periodSeconds: 1
        timeoutSeconds: 1
        failureThreshold: 2
        terminationGracePeriodSeconds: 1
`}}}.String())
	tg.waitRunning(startTimeout, "hung", "main", 0)
	v := tg.waitPod(30*time.Second, "hung", "restarted by liveness", func(v *podview.View) error {
		cs := statusOf(v, "main")
		if cs.RestartCount < 1 || cs.State.Running == nil || cs.LastTerminationState.Terminated == nil {
			return fmt.Errorf("restartCount %d", cs.RestartCount)
		}
		return nil
	})
	term := statusOf(&v, "main").LastTerminationState.Terminated
	if !strings.Contains(term.Message, "Liveness probe failed") {
		t.Errorf("last state message %q, want Liveness probe failed: ...", term.Message)
	}
	hung, err := os.Stat(filepath.Join(tg.emptyDir("hung", "data"), "hung"))
	if err != nil {
		t.Fatalf("the first run's mark of its hang: %v", err)
	}
	// period*failureThreshold + timeout + grace, and 1 s for scheduling.
	limit := 2*time.Second + time.Second + time.Second + time.Second
	took := term.FinishedAt.Sub(hung.ModTime())
	if took > limit {
		t.Errorf("killed %v after the server hung, want within %v", took.Round(time.Millisecond), limit)
	}
	t.Logf("killed %v after the server hung (%v after start)", took.Round(time.Millisecond), term.FinishedAt.Sub(term.StartedAt).Round(time.Millisecond))
	// The second run is healthy: no more restarts.
	time.Sleep(4 * time.Second)
	if v, err := tg.podView("hung"); err != nil || statusOf(&v, "main").RestartCount != 1 {
		t.Errorf("after the restart: restartCount %d (err %v), want 1", statusOf(&v, "main").RestartCount, err)
	}
}

// TestProbeReadinessFlips: a readiness probe flips the pod's Ready and
// ContainersReady conditions and the container's ready back and forth,
// without restarting it.
func TestProbeReadinessFlips(t *testing.T) {
	t.Parallel()
	tg := startTug(t, tugOpts{})
	script := webScript(`while true; do echo ok > /www/ready; sleep 3; rm /www/ready; sleep 3; done`)
	tg.writeManifest("flip.yaml", probePod("flip", tg.image, script, `      readinessProbe:
        httpGet: {path: /ready, port: 8080}
        periodSeconds: 1
        failureThreshold: 1
`))
	first := tg.waitRunning(startTimeout, "flip", "main", 0)
	for i, want := range []bool{true, false, true, false} {
		v := tg.waitPod(15*time.Second, "flip", fmt.Sprintf("flip %d: ready %v", i, want), readyIs(want))
		if i == 2 {
			if tt := conditionOf(&v, pod.ConditionReady).LastTransitionTime; time.Since(tt) > 3*time.Second {
				t.Errorf("Ready's lastTransitionTime %v is not the last flip", tt)
			}
		}
	}
	if c, _, _ := tg.container(tg.uid("flip"), "main"); c.ID != first.ID {
		t.Errorf("container replaced: %s, was %s", c.ID, first.ID)
	}
}

// TestProbeStartupDelaysLiveness: a slow starter (6 s before it listens)
// with a strict liveness probe (1 failure kills) is not killed while its
// startup probe has not succeeded; it is started and ready after.
func TestProbeStartupDelaysLiveness(t *testing.T) {
	t.Parallel()
	tg := startTug(t, tugOpts{})
	script := `sleep 6; mkdir -p /www && echo ok > /www/healthz && exec httpd -f -p 8080 -h /www`
	tg.writeManifest("slow.yaml", probePod("slow", tg.image, script, `      startupProbe:
        httpGet: {path: /healthz, port: 8080}
        periodSeconds: 1
        failureThreshold: 20
      livenessProbe:
        httpGet: {path: /healthz, port: 8080}
        periodSeconds: 1
        timeoutSeconds: 5
        failureThreshold: 1
`))
	tg.waitRunning(startTimeout, "slow", "main", 0)
	v := tg.waitPod(5*time.Second, "slow", "running, not started", func(v *podview.View) error {
		cs := statusOf(v, "main")
		if cs.State.Running == nil || cs.Started == nil || *cs.Started || cs.Ready {
			return fmt.Errorf("started %v ready %v", cs.Started, cs.Ready)
		}
		return nil
	})
	_ = v
	tg.waitPod(20*time.Second, "slow", "started and ready", func(v *podview.View) error {
		if cs := statusOf(v, "main"); cs.Started == nil || !*cs.Started {
			return fmt.Errorf("not started")
		}
		return readyIs(true)(v)
	})
	time.Sleep(3 * time.Second) // liveness now runs, and passes
	tg.waitPod(time.Second, "slow", "still ready, never restarted", readyIs(true))
}

// TestProbeTCPAndNamedPort: tcpSocket and httpGet probes by port name reach
// the pod's listener; a tcpSocket probe of a closed port keeps its
// container not ready (and the pod not Ready), without a restart.
func TestProbeTCPAndNamedPort(t *testing.T) {
	t.Parallel()
	tg := startTug(t, tugOpts{})
	tg.writeManifest("tcp.yaml", podYAML{name: "tcp", containers: []ctrYAML{
		{name: "main", image: tg.image, script: webScript(idle), extra: `      ports:
        - {name: web, containerPort: 8080}
      readinessProbe:
        httpGet: {path: /healthz, port: web}
        periodSeconds: 1
      livenessProbe:
        tcpSocket: {port: web}
        periodSeconds: 1
`},
		{name: "closed", image: tg.image, script: idle, extra: `      readinessProbe:
        tcpSocket: {port: 9999}
        periodSeconds: 1
`},
	}}.String())
	tg.waitPod(startTimeout, "tcp", "main ready, closed not", func(v *podview.View) error {
		m, c := statusOf(v, "main"), statusOf(v, "closed")
		if !m.Ready || c.Ready || c.State.Running == nil || conditionOf(v, pod.ConditionReady).Status != "False" {
			return fmt.Errorf("main ready %v, closed ready %v", m.Ready, c.Ready)
		}
		return nil
	})
	time.Sleep(3 * time.Second)
	v, err := tg.podView("tcp")
	if err != nil {
		t.Fatal(err)
	}
	if m, c := statusOf(&v, "main"), statusOf(&v, "closed"); !m.Ready || c.Ready || m.RestartCount+c.RestartCount != 0 {
		t.Errorf("after 3 s: main ready %v, closed ready %v, restarts %d+%d", m.Ready, c.Ready, m.RestartCount, c.RestartCount)
	}
}

// TestProbeHostNetwork: a hostNetwork pod's probe dials the node's
// network namespace (tug's), where its server listens.
func TestProbeHostNetwork(t *testing.T) {
	t.Parallel()
	tg := startTug(t, tugOpts{})
	script := "mkdir -p /www && echo ok > /www/healthz && httpd -p 18080 -h /www && " + idle
	tg.writeManifest("hostnet.yaml", podYAML{name: "hostnet", hostNetwork: true, containers: []ctrYAML{{name: "main", image: tg.image, script: script, extra: `      readinessProbe:
        httpGet: {path: /healthz, port: 18080}
        periodSeconds: 1
`}}}.String())
	tg.waitPod(startTimeout, "hostnet", "ready", readyIs(true))
}

// TestProbeExecTimeoutNoLeak: exec probes that outlive their timeout are
// killed: after 100 timeouts no exec process is left over in the
// containers, and once the probes are removed (without a restart: probes
// are not part of the container's hash) only the containers' own
// processes remain.
func TestProbeExecTimeoutNoLeak(t *testing.T) {
	t.Parallel()
	tg := startTug(t, tugOpts{})
	const n = 4
	probe := `      readinessProbe:
        exec: {command: [sh, -c, "echo x >> /tmp/n; sleep 30"]}
        periodSeconds: 1
        timeoutSeconds: 1
`
	write := func(extra string) {
		var cs []ctrYAML
		for i := range n {
			cs = append(cs, ctrYAML{name: "c" + strconv.Itoa(i), image: tg.image, script: idle, extra: extra})
		}
		tg.writeManifest("execs.yaml", podYAML{name: "execs", containers: cs}.String())
	}
	write(probe)
	var ctrs []ctr
	for i := range n {
		ctrs = append(ctrs, tg.waitRunning(startTimeout, "execs", "c"+strconv.Itoa(i), 0))
	}
	// The two processes of idle: sh and its sleep.
	const own = 2
	maxSeen := 0
	tg.waitFor(90*time.Second, "100 exec probes timed out", func() (bool, error) {
		total := 0
		for _, c := range ctrs {
			b, _ := os.ReadFile(filepath.Join("/proc", strconv.Itoa(int(c.PID)), "root/tmp/n"))
			total += strings.Count(string(b), "x")
			pids := tg.pids(c)
			maxSeen = max(maxSeen, pids)
			if pids > own+2 { // at most one probe (sh + sleep) in flight
				t.Errorf("container %s has %d processes: exec processes leak", c.Name(), pids)
			}
		}
		if total < 100 {
			return false, fmt.Errorf("%d probes so far", total)
		}
		return true, nil
	})
	v, err := tg.podView("execs")
	if err != nil {
		t.Fatal(err)
	}
	if cs := statusOf(&v, "c0"); cs.Ready {
		t.Error("c0 is ready although every probe timed out")
	}
	write("")
	tg.waitFor(10*time.Second, "only the containers' own processes", func() (bool, error) {
		for _, c := range ctrs {
			if pids := tg.pids(c); pids != own {
				return false, fmt.Errorf("container %s has %d processes, want %d", c.Name(), pids, own)
			}
		}
		return true, nil
	})
	tg.waitPod(10*time.Second, "execs", "ready without probes, not restarted", func(v *podview.View) error {
		for i := range n {
			if cs := statusOf(v, "c"+strconv.Itoa(i)); !cs.Ready || cs.RestartCount != 0 {
				return fmt.Errorf("c%d ready %v restarts %d", i, cs.Ready, cs.RestartCount)
			}
		}
		return nil
	})
	t.Logf("at most %d processes in a container while probes timed out", maxSeen)
}

// pids counts the processes of container c's task.
func (tg *tug) pids(c ctr) int {
	tg.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), queryTimeout)
	defer cancel()
	cont, err := tg.client.LoadContainer(ctx, c.ID)
	if err != nil {
		tg.t.Fatalf("load %s: %v", c.ID, err)
	}
	task, err := cont.Task(ctx, nil)
	if err != nil {
		tg.t.Fatalf("task of %s: %v", c.ID, err)
	}
	ps, err := task.Pids(ctx)
	if err != nil {
		tg.t.Fatalf("pids of %s: %v", c.ID, err)
	}
	return len(ps)
}

// TestProbeRestartedTugKeepsHealthy: a restarted tug re-arms the probes of
// the running containers without restarting them; the container is ready
// again once its readiness probe passes.
func TestProbeRestartedTugKeepsHealthy(t *testing.T) {
	t.Parallel()
	tg := startTug(t, tugOpts{})
	tg.writeManifest("keep.yaml", probePod("keep", tg.image, webScript(idle), `      livenessProbe:
        httpGet: {path: /healthz, port: 8080}
        initialDelaySeconds: 2
        periodSeconds: 1
        timeoutSeconds: 5
        failureThreshold: 1
      readinessProbe:
        tcpSocket: {port: 8080}
        periodSeconds: 1
`))
	first := tg.waitRunning(startTimeout, "keep", "main", 0)
	tg.waitPod(startTimeout, "keep", "ready", readyIs(true))
	if err := tg.Stop(); err != nil {
		t.Fatal(err)
	}
	tg.Start()
	tg.waitPod(startTimeout, "keep", "ready after the restart", readyIs(true))
	time.Sleep(3 * time.Second)
	tg.waitPod(time.Second, "keep", "still ready", readyIs(true))
	if c, _, _ := tg.container(tg.uid("keep"), "main"); c.ID != first.ID || c.Attempt() != 0 {
		t.Errorf("container replaced: %s, was %s", c, first)
	}
}

// TestProbeSidecarStartupGates: a sidecar's startup probe holds the next
// container back until it passes (the sidecar listens 4 s after its start).
func TestProbeSidecarStartupGates(t *testing.T) {
	t.Parallel()
	tg := startTug(t, tugOpts{})
	tg.writeManifest("gate.yaml", podYAML{name: "gate",
		init: []ctrYAML{{name: "proxy", image: tg.image, script: "sleep 4; mkdir -p /www && exec httpd -f -p 8080 -h /www", extra: `      restartPolicy: Always
      startupProbe:
        tcpSocket: {port: 8080}
        periodSeconds: 1
        failureThreshold: 30
`}},
		containers: []ctrYAML{{name: "main", image: tg.image, script: idle}},
	}.String())
	v := tg.waitPod(startTimeout, "gate", "main running", func(v *podview.View) error {
		if statusOf(v, "main").State.Running == nil || statusOf(v, "proxy").State.Running == nil {
			return fmt.Errorf("not running yet")
		}
		return nil
	})
	proxy, main := statusOf(&v, "proxy").State.Running.StartedAt, statusOf(&v, "main").State.Running.StartedAt
	if d := main.Sub(proxy); d < 4*time.Second {
		t.Errorf("main started %v after the sidecar, want at least 4 s (its startup probe)", d)
	}
	if !statusOf(&v, "proxy").Ready {
		t.Error("the sidecar is not ready")
	}
}
