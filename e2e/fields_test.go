//go:build e2e

package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	containerd "github.com/containerd/containerd/v2/client"

	"tug/internal/pod"
	"tug/internal/podview"
)

// Manifest fields of real files (node selection and tolerations, sidecars,
// Jobs, hostname and scheduling fields) on the real containerd.

// TestNodeSelectorAdmission: a pod whose nodeSelector the node's labels do
// not match is not started and is Failed/NodeAffinity; once tug is
// restarted with a matching --node-labels it runs. A pod that does not
// tolerate a --register-with-taints taint is Failed/Taint.
func TestNodeSelectorAdmission(t *testing.T) {
	t.Parallel()
	tg := startTug(t, tugOpts{args: []string{"--register-with-taints", "dedicated=edge:NoSchedule"}})
	tolerate := "  tolerations:\n    - {key: dedicated, operator: Exists, effect: NoSchedule}\n"
	tg.writeManifest("cam.yaml", shPod("cam", tg.image, "sleep 3600",
		"  nodeSelector:\n    site: plant-7\n    kubernetes.io/os: linux\n", tolerate))
	tg.writeManifest("untolerated.yaml", shPod("untolerated", tg.image, "sleep 3600",
		"  nodeSelector:\n    kubernetes.io/hostname: "+strings.ToLower(hostname)+"\n"))
	tg.waitPod(startTimeout, "cam", "Failed/NodeAffinity", reasonIs(pod.PhaseFailed, "NodeAffinity", "spec.nodeSelector[site]"))
	tg.waitPod(startTimeout, "untolerated", "Failed/Taint", reasonIs(pod.PhaseFailed, "Taint", "dedicated=edge:NoSchedule"))
	tg.assertRefused("cam", "NodeAffinity")
	tg.assertRefused("untolerated", "Taint")

	if err := tg.Stop(); err != nil {
		t.Fatal(err)
	}
	tg.args = append(tg.args, "--node-labels", "site=plant-7,tier=edge")
	tg.Start()
	tg.waitRunning(startTimeout, "cam", "main", 0)
	tg.waitPod(startTimeout, "cam", "Running", phaseIs(pod.PhaseRunning))
	tg.waitPod(startTimeout, "untolerated", "still Failed/Taint", reasonIs(pod.PhaseFailed, "Taint", "dedicated"))
	tg.removePods("cam", "untolerated")
}

// TestSidecarInitContainer: an init container with restartPolicy Always is
// started before the app container, kept running beside it, restarted when
// it exits, and stopped after the app container when the pod goes.
func TestSidecarInitContainer(t *testing.T) {
	t.Parallel()
	tg := startTug(t, tugOpts{args: []string{"--crash-loop-back-off-initial", "1s"}})
	out := t.TempDir()
	// The sidecar exits once, 2 s after its first start (the app runs by
	// then); both note the order in which SIGTERM reached them.
	sidecar := `trap 'echo sidecar >> /out/order; exit 0' TERM
if [ ! -f /out/once ]; then touch /out/once; sleep 2; exit 1; fi
while true; do sleep 0.2; done`
	app := `trap 'echo app >> /out/order; sleep 1; exit 0' TERM
while true; do sleep 0.2; done`
	mount := []mountYAML{{name: "out", path: "/out"}}
	tg.writeManifest("side.yaml", podYAML{
		name:       "side",
		init:       []ctrYAML{{name: "proxy", image: tg.image, script: sidecar, mounts: mount, extra: "      restartPolicy: Always\n"}},
		containers: []ctrYAML{{name: "app", image: tg.image, script: app, mounts: mount}},
		volumes:    []volYAML{hostPathVol("out", out, "Directory")},
	}.String())
	tg.waitRunning(startTimeout, "side", "app", 0)
	// Restarted beside the running app, which is left alone.
	tg.waitRunning(startTimeout, "side", "proxy", 1)
	appCtr := tg.waitRunning(startTimeout, "side", "app", 0)
	if appCtr.Attempt() != 0 {
		t.Errorf("the app was restarted with its sidecar: %v", appCtr)
	}
	v := tg.waitPod(startTimeout, "side", "Running and initialized", func(v *podview.View) error {
		if v.Status.Phase != pod.PhaseRunning || !hasCondition(&v.Status, pod.ConditionInitialized, "True") {
			return fmt.Errorf("phase %s, conditions %v", v.Status.Phase, v.Status.Conditions)
		}
		return nil
	})
	if n := len(v.Status.InitContainerStatuses); n != 1 || v.Status.InitContainerStatuses[0].State.Running == nil {
		t.Errorf("sidecar status %+v, want running", v.Status.InitContainerStatuses)
	}

	tg.removeManifest("side.yaml")
	tg.waitGone(removeTimeout, tg.uid("side"), "pod side removed")
	order, err := os.ReadFile(filepath.Join(out, "order"))
	if err != nil {
		t.Fatal(err)
	}
	if string(order) != "app\nsidecar\n" {
		t.Errorf("stop order %q, want the app first, then the sidecar", order)
	}
}

// TestJobCompletes: a Job's pod template runs to completion as pod
// "<job>-pod"; a Job that keeps failing is retried backoffLimit times and
// ends Failed/BackoffLimitExceeded. A Service beside it is skipped.
func TestJobCompletes(t *testing.T) {
	t.Parallel()
	tg := startTug(t, tugOpts{args: []string{"--crash-loop-back-off-initial", "1s"}})
	job := func(name, script string, backoff int) string {
		return fmt.Sprintf(`apiVersion: batch/v1
kind: Job
metadata:
  name: %s
spec:
  backoffLimit: %d
  template:
    metadata:
      labels: {job: %s}
    spec:
      restartPolicy: Never
      terminationGracePeriodSeconds: 5
      initContainers:
        - name: proxy
          image: %s
          restartPolicy: Always
          command: ["sh", "-c", "trap 'exit 0' TERM; while true; do sleep 0.2; done"]
      containers:
        - name: main
          image: %s
          command: ["sh", "-c", %s]
---
apiVersion: v1
kind: Service
metadata:
  name: %s
spec:
  ports: [{port: 80}]
`, name, backoff, name, tg.image, tg.image, q(script), name)
	}
	tg.writeManifest("migrate.yaml", job("migrate", "echo migrated", 2))
	tg.writeManifest("broken.yaml", job("broken", "echo failing; exit 3", 1))
	tg.waitPod(startTimeout, "migrate-pod", "Succeeded", phaseIs(pod.PhaseSucceeded))
	tg.waitLog(logTimeout, "migrate-pod", "main", 0, "migrated")
	// Its sidecar is stopped once the Job's container is done.
	tg.waitFor(startTimeout, "the Job's sidecar to stop", func() (bool, error) {
		c, ok, err := tg.container(tg.uid("migrate-pod"), "proxy")
		if err != nil || !ok {
			return false, fmt.Errorf("sidecar %v %v", ok, err)
		}
		if c.Status == containerd.Running {
			return false, fmt.Errorf("sidecar still running: %v", c)
		}
		return true, nil
	})
	v := tg.waitPod(startTimeout, "broken-pod", "Failed/BackoffLimitExceeded", reasonIs(pod.PhaseFailed, "BackoffLimitExceeded", "backoff limit (1)"))
	if cs := v.Status.ContainerStatuses; len(cs) != 1 || cs[0].RestartCount != 1 {
		t.Errorf("container statuses %+v, want one retry", cs)
	}
	// Nothing more is started once the limit is reached.
	time.Sleep(3 * time.Second)
	if c, ok, err := tg.container(tg.uid("broken-pod"), "main"); err != nil || !ok || c.Attempt() != 1 {
		t.Errorf("latest container %v (%v, %v), want attempt 1", c, ok, err)
	}
	if !strings.Contains(tg.output(), `kind \"Service\" skipped`) {
		t.Errorf("tug did not log the skipped Service")
	}
	tg.removeManifest("migrate.yaml")
	tg.removeManifest("broken.yaml")
	tg.waitGone(removeTimeout, tg.uid("migrate-pod"), "Job migrate removed")
	tg.waitGone(removeTimeout, tg.uid("broken-pod"), "Job broken removed")
}

// TestSecurityContextFields: runAsUser, runAsGroup, fsGroup and
// supplementalGroups as `id` sees them in the container, a safe sysctl,
// the termination message in the status, hostPID allowed for a file pod
// (privileged level) and refused once the files are held to baseline.
func TestSecurityContextFields(t *testing.T) {
	t.Parallel()
	tg := startTug(t, tugOpts{})
	tg.writeManifest("ids.yaml", podYAML{
		name:          "ids",
		restartPolicy: "Never",
		containers: []ctrYAML{{name: "main", image: tg.image,
			script: "id; cat /proc/sys/net/ipv4/ping_group_range; hostname; grep -E 'registry|fleet' /etc/hosts; echo 'rows: 3' > /tmp/msg",
			extra:  "      terminationMessagePath: /tmp/msg\n"}},
		extra: `  hostname: box
  subdomain: fleet
  hostAliases:
    - {ip: 10.1.2.3, hostnames: [registry.local]}
  securityContext:
    runAsUser: 1000
    runAsGroup: 3000
    fsGroup: 2000
    supplementalGroups: [4000]
    sysctls:
      - {name: net.ipv4.ping_group_range, value: "0 2000"}
`,
	}.String())
	tg.writeManifest("hostpid.yaml", podYAML{name: "hostpid", restartPolicy: "Never",
		containers: []ctrYAML{{name: "main", image: tg.image, script: "echo pid1=$(cat /proc/1/comm)"}},
		extra:      "  hostPID: true\n"}.String())

	v := tg.waitPod(startTimeout, "ids", "Succeeded", phaseIs(pod.PhaseSucceeded))
	// fsGroup and supplementalGroups join the primary group's line.
	tg.waitLog(logTimeout, "ids", "main", 0, "uid=1000 gid=3000 groups=2000,3000,4000", "0\t2000",
		"box", "10.1.2.3\tregistry.local")
	lines, err := tg.logLines("ids", "main", 0)
	fqdn := false
	for _, l := range lines {
		fqdn = fqdn || strings.HasSuffix(l.Text, "\tbox.fleet.default.svc.cluster.local\tbox")
	}
	if err != nil || !fqdn {
		t.Errorf("/etc/hosts lacks the pod's FQDN line: %q %v", lines, err)
	}
	if term := v.Status.ContainerStatuses[0].State.Terminated; term == nil || term.Message != "rows: 3\n" {
		t.Errorf("terminated state %+v, want the message %q", term, "rows: 3\n")
	}

	tg.waitPod(startTimeout, "hostpid", "Succeeded", phaseIs(pod.PhaseSucceeded))
	// The file log driver converts the shim's output a moment after the exit.
	var pl []criLine
	tg.waitFor(logTimeout, "the hostpid pod's line", func() (bool, error) {
		pl, err = tg.logLines("hostpid", "main", 0)
		return len(pl) > 0, err
	})
	if err != nil || len(pl) != 1 || !strings.HasPrefix(pl[0].Text, "pid1=") || pl[0].Text == "pid1=sh" {
		t.Errorf("hostPID pod sees %v (%v) as PID 1, want the node's init", pl, err)
	}

	// Removed before the restart: only hostpid2 is under test below.
	tg.removePods("ids", "hostpid")

	if err := tg.Stop(); err != nil {
		t.Fatal(err)
	}
	tg.args = append(tg.args, "--file-policy", "baseline")
	tg.Start()
	tg.writeManifest("hostpid2.yaml", podYAML{name: "hostpid2",
		containers: []ctrYAML{{name: "main", image: tg.image, script: "sleep 3600"}},
		extra:      "  hostPID: true\n"}.String())
	tg.waitBlocked("hostpid2", "spec.hostPID: true is not allowed by the baseline policy")
	tg.assertNoContainers(tg.uid("hostpid2"))
	tg.removePods("hostpid2")
}

// removePods removes the manifests <name>.yaml and waits until their pods
// have no container left.
func (tg *tug) removePods(names ...string) {
	tg.t.Helper()
	for _, n := range names {
		tg.removeManifest(n + ".yaml")
	}
	for _, n := range names {
		tg.waitGone(removeTimeout, tg.uid(n), "pod "+n+" removed")
	}
}
