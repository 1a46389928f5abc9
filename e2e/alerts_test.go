//go:build e2e

package e2e

import (
	"fmt"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"

	"tug/internal/podview"
)

// TestAlertsOnACrashLoopingPod: tug under MemoryPressure (a soft
// memory.available threshold above what the node has, with an hour's grace:
// the condition holds, nothing is evicted) runs a pod whose container exits
// at once. tug's /metrics has the container's restart count and its
// CrashLoopBackOff wait, and the node's conditions, under kube-state-metrics'
// names; pushed by remote write into a real Prometheus that loads
// systemd/tug-alerts.yml, TugPodCrashLooping, TugContainerRestarting,
// TugNodePressure and TugRolloutFailed (the pod's first spec never became
// ready, and there is no good spec to return to) fire for this node and
// this pod, and no other alert does.
// Then an update that crashes is rolled back and TugRolledBack fires, and
// once tug is stopped TugDeviceSilent does. The rules are the file's, with
// their `for:` made 0s and the silence rule's 15 minutes made 20 s (its
// subquery step 1 s instead of 5 minutes), so that the test does not wait
// a quarter of an hour.
func TestAlertsOnACrashLoopingPod(t *testing.T) {
	t.Parallel()
	rules, err := os.ReadFile("../systemd/tug-alerts.yml")
	if err != nil {
		t.Fatal(err)
	}
	rules = regexp.MustCompile(`(?m)^(\s+)for: \S+$`).ReplaceAll(rules, []byte("${1}for: 0s"))
	for from, to := range map[string]string{"[1d:5m]": "[1h:1s]", "> 15 * 60": "> 20"} {
		if !strings.Contains(string(rules), from) {
			t.Fatalf("tug-alerts.yml has no %q", from)
		}
		rules = []byte(strings.ReplaceAll(string(rules), from, to))
	}
	prom := newPromServerWith(t, "global:\n  evaluation_interval: 1s\nrule_files: [tug-alerts.yml]\n",
		map[string][]byte{"tug-alerts.yml": rules})
	port := freePort(t)
	tg := startTug(t, tugOpts{healthzPort: port, beforeStart: func(tg *tug) { tg.relay(prom.addr()) }, args: []string{
		"--metrics-remote-write-url", "http://" + prom.addr() + "/api/v1/write", "--metrics-push-interval", "1s",
		"--crash-loop-back-off-initial", "1s", "--crash-loop-back-off-max", "4s",
		"--eviction-soft", "memory.available<100Gi", "--eviction-soft-grace-period", "memory.available=1h",
		"--rollout-min-ready", "2s",
	}})
	tg.writeManifest("crash.yaml", shPod("crash", tg.image, "echo crashing; exit 1"))
	// web runs a good spec, for the rollback below.
	ann := map[string]string{"tug.io/rollout-max-restarts": "1", "tug.io/rollout-timeout": "60s"}
	tg.writeManifest("web.yaml", rolloutPod("web", tg.image, fmt.Sprintf(rolloutWeb, "v1"), ann, ""))
	name, uid := staticName("crash"), tg.uid("crash")

	tg.waitPod(2*time.Minute, "crash", "3 restarts", func(v *podview.View) error {
		if cs := v.Status.ContainerStatuses; len(cs) != 1 || cs[0].RestartCount < 3 {
			return fmt.Errorf("container statuses %+v", cs)
		}
		return nil
	})
	// /metrics: the restarts, and a scrape in a back-off finds the
	// container waiting in CrashLoopBackOff.
	ctr := map[string]string{"namespace": "default", "pod": name, "uid": uid, "container": "main"}
	waiting := map[string]string{"pod": name, "uid": uid, "container": "main", "reason": "CrashLoopBackOff"}
	var restarts float64
	sawWaiting := false
	waitFor(t, 2*time.Minute, "/metrics with 3 restarts of crash's container and its CrashLoopBackOff wait", func() (bool, error) {
		mf, _ := tg.scrape(port)
		if r := series(mf, "kube_pod_container_status_restarts_total", ctr); len(r) == 1 {
			restarts = value(r[0])
		}
		if w := series(mf, "kube_pod_container_status_waiting_reason", waiting); len(w) == 1 && value(w[0]) == 1 {
			sawWaiting = true
		}
		if restarts < 3 || !sawWaiting {
			return false, fmt.Errorf("%v restarts, CrashLoopBackOff seen: %v", restarts, sawWaiting)
		}
		return true, nil
	})
	// The eviction manager's first observation sets MemoryPressure.
	var mf map[string]*dto.MetricFamily
	waitFor(t, time.Minute, "kube_node_status_condition MemoryPressure true", func() (bool, error) {
		mf, _ = tg.scrape(port)
		s := series(mf, "kube_node_status_condition", map[string]string{"condition": "MemoryPressure", "status": "true"})
		return len(s) == 1 && value(s[0]) == 1, nil
	})
	total, state := 0, 0
	for name, f := range mf {
		total += len(f.GetMetric())
		if strings.HasPrefix(name, "kube_") {
			state += len(f.GetMetric())
		}
	}
	t.Logf("/metrics: %d series, %d of them kube-state-metrics'", total, state)
	for _, c := range []struct {
		condition, status string
		want              float64
	}{
		{"MemoryPressure", "true", 1}, {"MemoryPressure", "false", 0}, {"MemoryPressure", "unknown", 0},
		{"DiskPressure", "false", 1}, {"DiskPressure", "true", 0},
		{"PIDPressure", "false", 1}, {"PIDPressure", "true", 0},
		{"ClockBehind", "false", 1},
	} {
		s := series(mf, "kube_node_status_condition", map[string]string{"node": hostname, "condition": c.condition, "status": c.status})
		if len(s) != 1 || value(s[0]) != c.want {
			t.Errorf("kube_node_status_condition{condition=%q,status=%q}: %v, want one series = %v", c.condition, c.status, s, c.want)
		}
	}
	// The rollback counter is there at 0 before the first rollback.
	if s := series(mf, "tug_rollouts_total", map[string]string{"result": "rolled_back"}); len(s) != 1 || value(s[0]) != 0 {
		t.Errorf("tug_rollouts_total{result=\"rolled_back\"}: %v, want one series at 0", s)
	}

	good := tg.waitGood("web", "")

	// The alerts, in Prometheus.
	want := []string{
		fmt.Sprintf("TugContainerRestarting{container=main,instance=%s,node=%s,pod=%s}", hostname, hostname, name),
		fmt.Sprintf("TugNodePressure{condition=MemoryPressure,instance=%s,node=%s}", hostname, hostname),
		fmt.Sprintf("TugPodCrashLooping{container=main,instance=%s,node=%s,pod=%s}", hostname, hostname, name),
		fmt.Sprintf("TugRolloutFailed{instance=%s,node=%s}", hostname, hostname),
	}
	waitAlerts(t, prom, "exactly", func(firing []string) bool { return slices.Equal(firing, want) })

	// An update of web that crashes is rolled back.
	tg.writeManifest("web.yaml", rolloutPod("web", tg.image, "echo broken; exit 1", ann, ""))
	tg.waitRolledBack(90*time.Second, "web", good, "restarted 2 times")
	rolledBack := fmt.Sprintf("TugRolledBack{instance=%s,node=%s}", hostname, hostname)
	waitAlerts(t, prom, "with "+rolledBack, func(firing []string) bool { return slices.Contains(firing, rolledBack) })

	// tug stops: the device goes silent.
	silent := fmt.Sprintf("TugDeviceSilent{instance=%s,node=%s}", hostname, hostname)
	stopping := time.Now()
	if err := tg.Stop(); err != nil {
		t.Fatal(err)
	}
	waitAlerts(t, prom, "with "+silent, func(firing []string) bool { return slices.Contains(firing, silent) })
	// 20 s after the last sample, which is at most a push interval (1 s)
	// older than the stop, seen at the next evaluation (1 s).
	if d := time.Since(stopping); d < 18*time.Second {
		t.Errorf("TugDeviceSilent fired %v after tug began to stop, before its 20 s of silence", d)
	}
}

// waitAlerts waits until Prometheus' firing alerts, each written as
// name{label=value,...} with the labels that tell these tests' alerts
// apart, sorted, are what ok accepts.
func waitAlerts(t *testing.T, prom *promServer, what string, ok func(firing []string) bool) {
	t.Helper()
	var firing []string
	waitFor(t, 2*time.Minute, "Prometheus' firing alerts: "+what, func() (bool, error) {
		rs, err := prom.query(`ALERTS{alertstate="firing"}`, time.Now())
		if err != nil {
			return false, err
		}
		firing = firing[:0]
		for _, r := range rs {
			var labels []string
			for _, k := range []string{"condition", "container", "instance", "node", "pod"} {
				if v, ok := r.Metric[k]; ok {
					labels = append(labels, k+"="+v)
				}
			}
			firing = append(firing, r.Metric["alertname"]+"{"+strings.Join(labels, ",")+"}")
		}
		slices.Sort(firing)
		if !ok(firing) {
			return false, fmt.Errorf("firing: %v", firing)
		}
		return true, nil
	})
	t.Logf("firing: %s", strings.Join(firing, " "))
}
