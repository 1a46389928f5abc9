//go:build e2e

package e2e

import (
	"fmt"
	"os"
	"testing"
	"time"

	"tug/internal/pod"
)

// TestStopOverExitedContainer: tug stopped right after the container of a
// restartPolicy Never pod exited (while its task is being reaped), then
// restarted, removes that pod with its shim. The stop used to cut the
// task's delete short: containerd dropped the task but its shim stayed,
// with nothing left to end it (the leak check of the harness fails on a
// shim left behind).
func TestStopOverExitedContainer(t *testing.T) {
	t.Parallel()
	tg := startTug(t, tugOpts{})
	for round := range 3 {
		name := fmt.Sprintf("done%d", round)
		tg.writeManifest(name+".yaml", podYAML{name: name, restartPolicy: "Never",
			containers: []ctrYAML{{name: "main", image: tg.image, script: "echo done"}}}.String())
		tg.waitPod(startTimeout, name, "Succeeded", phaseIs(pod.PhaseSucceeded))
		if err := tg.Stop(); err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
		tg.Start()
		tg.waitPod(startTimeout, name, "Succeeded after the restart", phaseIs(pod.PhaseSucceeded))
		tg.removePods(name)
	}
}

// TestFSGroupVolumes: a runAsUser 1000 + fsGroup 2000 pod writes into a
// claim directory (where root left a file before) and an emptyDir: the
// volumes' directories get group 2000 and setgid, so what the pod writes
// has group 2000, and the file already there has group 2000 and group
// read-write; a hostPath is left alone.
func TestFSGroupVolumes(t *testing.T) {
	t.Parallel()
	tg := startTug(t, tugOpts{})
	host := t.TempDir()
	if err := os.Chmod(host, 0o755); err != nil {
		t.Fatal(err)
	}
	tg.writeManifest("claim.yaml", `apiVersion: v1
kind: PersistentVolumeClaim
metadata:
  name: grouped
spec:
  accessModes: [ReadWriteOnce]
  resources:
    requests: {storage: 10Mi}
`)
	// Root's file in the claim, from a first pod without fsGroup.
	pre := func(name, script, sc string) string {
		return fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata:
  name: %s
spec:
  restartPolicy: Never
  terminationGracePeriodSeconds: 1
%s  containers:
  - name: main
    image: %s
    command: ["sh", "-c", %q]
    volumeMounts:
    - {name: data, mountPath: /data}
    - {name: scratch, mountPath: /scratch}
    - {name: host, mountPath: /host}
  volumes:
  - name: data
    persistentVolumeClaim: {claimName: grouped}
  - name: scratch
    emptyDir: {}
  - name: host
    hostPath: {path: %s}
`, name, sc, tg.image, script, host)
	}
	tg.writeManifest("root.yaml", pre("root", "umask 077; echo x > /data/old", ""))
	tg.waitPod(startTimeout, "root", "Succeeded", phaseIs(pod.PhaseSucceeded))
	tg.removePods("root")

	tg.writeManifest("grouped.yaml", pre("grouped",
		"echo y > /data/new && echo z > /scratch/new && id -u && stat -c '%n %g %a' /data /data/old /data/new /scratch /scratch/new /host",
		`  securityContext:
    runAsUser: 1000
    fsGroup: 2000
    fsGroupChangePolicy: OnRootMismatch
`))
	tg.waitPod(startTimeout, "grouped", "Succeeded", phaseIs(pod.PhaseSucceeded))
	tg.waitLog(logTimeout, "grouped", "main", 0, "1000",
		"/data 2000 2777", "/data/old 2000 660", "/data/new 2000 644",
		"/scratch 2000 2777", "/scratch/new 2000 644", "/host 0 755")
	tg.removePods("grouped")
}

// TestShareProcessNamespace: the containers of a shareProcessNamespace pod
// see each other's processes, and PID 1 of their namespace is the holder
// (`tug pause`). A kill -9 of tug and a restart keep the pod as it is (no
// container restarted); removing the pod leaves no holder and no shim (the
// leak check of the harness).
func TestShareProcessNamespace(t *testing.T) {
	t.Parallel()
	tg := startTug(t, tugOpts{})
	tg.writeManifest("shared.yaml", podYAML{name: "shared",
		containers: []ctrYAML{
			{name: "app", image: tg.image, script: "exec sleep 3601"},
			{name: "peek", image: tg.image, script: "until ps | grep -q '[s]leep 3601'; do sleep 0.2; done; " +
				"echo seen; echo pid1=$(tr '\\0' ' ' < /proc/1/cmdline); exec sleep 3600"},
		},
		extra: "  shareProcessNamespace: true\n"}.String())
	app := tg.waitRunning(startTimeout, "shared", "app", 0)
	peek := tg.waitRunning(startTimeout, "shared", "peek", 0)
	tg.waitLog(logTimeout, "shared", "peek", 0, "seen", "pid1=/tug pause")

	tg.Kill()
	tg.Start()
	tg.waitPod(startTimeout, "shared", "Running after the restart", phaseIs(pod.PhaseRunning))
	time.Sleep(2 * time.Second) // a few syncs of the restarted tug
	if again := tg.waitRunning(startTimeout, "shared", "app", 0); again.PID != app.PID {
		t.Errorf("app restarted by the restart of tug: pid %d, then %d", app.PID, again.PID)
	}
	if again := tg.waitRunning(startTimeout, "shared", "peek", 0); again.PID != peek.PID {
		t.Errorf("peek restarted by the restart of tug: pid %d, then %d", peek.PID, again.PID)
	}
	tg.removePods("shared")
}
