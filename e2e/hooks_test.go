//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"tug/internal/api"
	"tug/internal/pod"
	"tug/internal/podview"
)

// Lifecycle hooks and the grpc probe against the test
// image's /bin/grpchealth. Each pod writes what happens, in order, to a
// file on a hostPath directory the test reads: "prestop" from its preStop
// hook, "term" from the app's TERM trap.

// termScript records "term" in /d/order when the container gets SIGTERM
// and exits; until then it loops (short sleeps, so the trap runs at once).
const termScript = "trap 'echo term >> /d/order; exit 0' TERM; echo started >> /d/order; while true; do sleep 0.1; done"

// hookPod is a pod with one container "main" running script, with the
// container lines extra (hooks, probes) and /d mounted from the host's dir.
func hookPod(name, image, dir, script, extra string, grace int) string {
	return podYAML{
		name:  name,
		grace: grace,
		containers: []ctrYAML{{name: "main", image: image, script: script, extra: extra,
			mounts: []mountYAML{{name: "d", path: "/d"}}}},
		volumes: []volYAML{hostPathVol("d", dir, "Directory")},
	}.String()
}

// execHook is a lifecycle hook (postStart or preStop) that runs script
// with sh -c, as container lines.
func execHook(kind, script string) string {
	return fmt.Sprintf("      lifecycle:\n        %s:\n          exec:\n            command: [\"sh\", \"-c\", %s]\n", kind, q(script))
}

// hookDir returns a fresh host directory for a pod's /d.
func hookDir(t *testing.T, name string) string {
	dir := filepath.Join(t.TempDir(), name)
	if err := os.Mkdir(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	return dir
}

// orderIn returns the lines of dir/order.
func orderIn(dir string) []string {
	b, _ := os.ReadFile(filepath.Join(dir, "order"))
	return strings.Fields(string(b))
}

// waitOrder waits until dir/order starts with want.
func (tg *tug) waitOrder(timeout time.Duration, dir string, want ...string) {
	tg.t.Helper()
	tg.waitFor(timeout, fmt.Sprintf("%s/order = %q", dir, want), func() (bool, error) {
		got := orderIn(dir)
		if len(got) < len(want) {
			return false, fmt.Errorf("order %q", got)
		}
		if !slices.Equal(got[:len(want)], want) {
			return false, fmt.Errorf("order %q, want %q first", got, want)
		}
		return true, nil
	})
}

// eventReasons returns the reasons of the events of pod uid.
func (tg *tug) eventReasons(uid string) []string {
	tg.t.Helper()
	evs, err := tg.api().Events(context.Background(), api.EventQuery{UID: uid})
	if err != nil {
		tg.t.Fatalf("GET /events: %v", err)
	}
	var out []string
	for _, e := range evs {
		out = append(out, e.Reason)
	}
	return out
}

// mainStatus returns the status of container "main" of v.
func mainStatus(v *podview.View) pod.ContainerStatus {
	for _, cs := range v.Status.ContainerStatuses {
		if cs.Name == "main" {
			return cs
		}
	}
	return pod.ContainerStatus{}
}

// TestHookPreStopBeforeSIGTERM: a preStop hook runs, and its side effect is
// visible, before the container gets SIGTERM: on pod removal (an exec
// hook, and an httpGet hook served by a CGI script), on a manifest update
// (the old container's stop) and on a liveness restart.
func TestHookPreStopBeforeSIGTERM(t *testing.T) {
	t.Parallel()
	tg := startTug(t, tugOpts{args: []string{"--crash-loop-back-off-initial", "1s"}})
	preStop := execHook("preStop", "echo prestop >> /d/order; sleep 1")
	dirs := map[string]string{}
	for _, name := range []string{"removed", "updated", "unhealthy", "httpget"} {
		dirs[name] = hookDir(t, name)
	}
	liveness := "      livenessProbe:\n        exec:\n          command: [\"sh\", \"-c\", \"test ! -e /d/fail\"]\n        periodSeconds: 1\n        timeoutSeconds: 5\n        failureThreshold: 1\n"
	tg.writeManifest("removed.yaml", hookPod("removed", tg.image, dirs["removed"], termScript, preStop, 10))
	tg.writeManifest("updated.yaml", hookPod("updated", tg.image, dirs["updated"], termScript, preStop, 10))
	tg.writeManifest("unhealthy.yaml", hookPod("unhealthy", tg.image, dirs["unhealthy"], termScript, preStop+liveness, 10))
	// httpGet: busybox httpd runs a CGI script that records the request.
	cgi := "mkdir -p /www/cgi-bin && printf '#!/bin/sh\\necho prestop >> /d/order\\nprintf \"Content-Type: text/plain\\\\r\\\\n\\\\r\\\\nok\\\\n\"\\n' > /www/cgi-bin/prestop && chmod +x /www/cgi-bin/prestop && httpd -p 8080 -h /www && "
	httpHook := "      lifecycle:\n        preStop:\n          httpGet:\n            path: /cgi-bin/prestop\n            port: 8080\n"
	tg.writeManifest("httpget.yaml", hookPod("httpget", tg.image, dirs["httpget"], cgi+termScript, httpHook, 10))
	for name, dir := range dirs {
		tg.waitRunning(startTimeout, name, "main", 0)
		tg.waitOrder(logTimeout, dir, "started")
	}

	uid := tg.uid("removed")
	tg.removeManifest("removed.yaml")
	tg.waitGone(20*time.Second, uid, "removed pod stopped")
	tg.waitOrder(logTimeout, dirs["removed"], "started", "prestop", "term")
	uid = tg.uid("httpget")
	tg.removeManifest("httpget.yaml")
	tg.waitGone(20*time.Second, uid, "httpget pod stopped")
	tg.waitOrder(logTimeout, dirs["httpget"], "started", "prestop", "term")

	tg.writeManifest("updated.yaml", hookPod("updated", tg.image, dirs["updated"], termScript+" # v2", preStop, 10))
	tg.waitOrder(20*time.Second, dirs["updated"], "started", "prestop", "term", "started")

	if err := os.WriteFile(filepath.Join(dirs["unhealthy"], "fail"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	tg.waitOrder(20*time.Second, dirs["unhealthy"], "started", "prestop", "term", "started")
}

// TestHookPreStopSleepCountsAgainstGrace: a preStop sleep action delays the
// stop signal, and it is cut at the pod's grace period: with a 10 s sleep
// and a 4 s grace the container gets SIGTERM after about 4 s.
func TestHookPreStopSleepCountsAgainstGrace(t *testing.T) {
	t.Parallel()
	tg := startTug(t, tugOpts{})
	dir := hookDir(t, "sleepy")
	sleep := "      lifecycle:\n        preStop:\n          sleep:\n            seconds: 10\n"
	tg.writeManifest("sleepy.yaml", hookPod("sleepy", tg.image, dir, termScript, sleep, 4))
	tg.waitRunning(startTimeout, "sleepy", "main", 0)
	tg.waitOrder(logTimeout, dir, "started")
	uid := tg.uid("sleepy")
	removed := time.Now()
	tg.removeManifest("sleepy.yaml")
	tg.waitFor(15*time.Second, "SIGTERM after the preStop sleep", func() (bool, error) {
		if got := orderIn(dir); len(got) < 2 {
			return false, fmt.Errorf("order %q", got)
		}
		return true, nil
	})
	took := time.Since(removed)
	t.Logf("SIGTERM %v after the removal (sleep 10 s, grace 4 s)", took.Round(10*time.Millisecond))
	if took < 3500*time.Millisecond || took > 8*time.Second {
		t.Errorf("SIGTERM after %v, want about 4 s (the grace period cuts the 10 s sleep)", took)
	}
	tg.waitGone(10*time.Second, uid, "pod stopped")
}

// TestHookPostStartFailureKills: a postStart hook that fails stops the
// container, which restarts under restartPolicy Always (the hook runs
// again each time); the status shows the hook's failure and the events
// FailedPostStartHook.
func TestHookPostStartFailureKills(t *testing.T) {
	t.Parallel()
	tg := startTug(t, tugOpts{args: []string{"--crash-loop-back-off-initial", "1s"}})
	dir := hookDir(t, "poststart")
	postStart := execHook("postStart", "echo poststart >> /d/order; echo hook says no; exit 3")
	tg.writeManifest("poststart.yaml", hookPod("poststart", tg.image, dir, "sleep 3600", postStart, 5))
	v := tg.waitPod(startTimeout, "poststart", "restarted after its postStart failed", func(v *podview.View) error {
		cs := mainStatus(v)
		term := cs.LastTerminationState.Terminated
		if cs.RestartCount < 1 || term == nil {
			return fmt.Errorf("restarts %d, last state %+v", cs.RestartCount, cs.LastTerminationState)
		}
		if !strings.Contains(term.Message, "PostStartHook failed") || !strings.Contains(term.Message, "hook says no") {
			return fmt.Errorf("last state message %q", term.Message)
		}
		return nil
	})
	t.Logf("last state: %+v", mainStatus(&v).LastTerminationState.Terminated)
	tg.waitOrder(logTimeout, dir, "poststart", "poststart") // once per start
	if got := tg.eventReasons(tg.uid("poststart")); !slices.Contains(got, "FailedPostStartHook") {
		t.Errorf("events %q, want FailedPostStartHook", got)
	}
}

// TestProbeGRPCHealth: grpc readiness and liveness probes against the test
// image's grpc.health.v1 server: the service "tug.test" goes NOT_SERVING
// while /d/down exists (Ready false, no restart) and SERVING again after.
func TestProbeGRPCHealth(t *testing.T) {
	t.Parallel()
	tg := startTug(t, tugOpts{})
	dir := hookDir(t, "grpc")
	probes := "      ports:\n        - containerPort: 9090\n" +
		"      readinessProbe:\n        grpc:\n          port: 9090\n          service: tug.test\n        periodSeconds: 1\n        failureThreshold: 1\n" +
		"      livenessProbe:\n        grpc:\n          port: 9090\n        periodSeconds: 1\n"
	tg.writeManifest("grpc.yaml", hookPod("grpc", tg.image, dir, "exec grpchealth -listen :9090 -service tug.test -down /d/down", probes, 5))
	ready := func(want bool) func(v *podview.View) error {
		return func(v *podview.View) error {
			cs := mainStatus(v)
			if cs.RestartCount != 0 {
				return fmt.Errorf("main restarted %d times", cs.RestartCount)
			}
			if cs.State.Running == nil || cs.Ready != want {
				return fmt.Errorf("main running %v ready %v, want ready %v", cs.State.Running != nil, cs.Ready, want)
			}
			return nil
		}
	}
	tg.waitPod(startTimeout, "grpc", "ready (SERVING)", ready(true))
	if err := os.WriteFile(filepath.Join(dir, "down"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	tg.waitPod(10*time.Second, "grpc", "not ready (NOT_SERVING)", ready(false))
	if err := os.Remove(filepath.Join(dir, "down")); err != nil {
		t.Fatal(err)
	}
	tg.waitPod(10*time.Second, "grpc", "ready again", ready(true))
}

// TestHookHungPostStartDoesNotBlockRemoval: a postStart hook that never
// returns holds its pod's sync, but removing the pod cuts it: the pod is
// stopped and removed within its grace period.
func TestHookHungPostStartDoesNotBlockRemoval(t *testing.T) {
	t.Parallel()
	tg := startTug(t, tugOpts{})
	dir := hookDir(t, "hung")
	postStart := execHook("postStart", "echo poststart >> /d/order; sleep 3600")
	tg.writeManifest("hung.yaml", hookPod("hung", tg.image, dir, termScript, postStart, 5))
	tg.waitOrder(startTimeout, dir, "started", "poststart")
	uid := tg.uid("hung")
	tg.removeManifest("hung.yaml")
	tg.waitGone(20*time.Second, uid, "pod with a hung postStart removed")
	tg.waitOrder(logTimeout, dir, "started", "poststart", "term")
}
