//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"tug/internal/pod"
	"tug/internal/podview"
)

// sharedHostDir returns a new directory that is a shared mount of its own
// (a bind mount of itself, made shared), as systemd makes /: mount
// propagation needs the host's mount to propagate. Every mount at or below
// it is detached when the test ends, pass or fail.
func sharedHostDir(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	if err := unix.Mount(dir, dir, "", unix.MS_BIND, ""); err != nil {
		t.Fatalf("bind %s: %v", dir, err)
	}
	t.Cleanup(func() {
		if err := unmountUnder(dir); err != nil {
			t.Errorf("host mounts left: %v", err)
		}
	})
	if err := unix.Mount("", dir, "", unix.MS_SHARED, ""); err != nil {
		t.Fatalf("make %s shared: %v", dir, err)
	}
	return dir
}

// hostTmpfs mounts a tmpfs at dir (made if missing) holding a file marker
// with content; it is detached when the test ends.
func hostTmpfs(t *testing.T, dir, content string) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := unix.Mount("tmpfs", dir, "tmpfs", 0, "size=1m"); err != nil {
		t.Fatalf("mount tmpfs at %s: %v", dir, err)
	}
	t.Cleanup(func() { _ = unix.Unmount(dir, unix.MNT_DETACH) })
	if err := os.WriteFile(filepath.Join(dir, "marker"), []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// propagationPod is a pod named name whose container (privileged if asked)
// runs script with the hostPath dir mounted at /host with mountPropagation
// mode ("" writes none).
func propagationPod(name, image, script, dir, mode string, privileged bool) string {
	extra := ""
	if privileged {
		extra = "      securityContext:\n        privileged: true\n"
	}
	mount := "        - name: host\n          mountPath: /host\n"
	if mode != "" {
		mount += "          mountPropagation: " + mode + "\n"
	}
	return podYAML{name: name, containers: []ctrYAML{{name: "main", image: image, script: script,
		extra: "      volumeMounts:\n" + mount + extra}},
		volumes: []volYAML{hostPathVol("host", dir, "Directory")}}.String()
}

// assertNoMountsLeft fails the test if a mount is left below tug's root
// dir (the volumes' staging mounts, a pod's tmpfs volumes).
func (tg *tug) assertNoMountsLeft() {
	tg.t.Helper()
	ms, err := mountsUnder(tg.rootDir)
	if err != nil {
		tg.t.Fatal(err)
	}
	if len(ms) != 0 {
		tg.t.Errorf("mounts left under tug's root dir after its pods were removed: %v", ms)
	}
}

// TestMountPropagationHostToContainer: a hostPath mounted with
// mountPropagation HostToContainer sees a tmpfs the host mounts below it
// after the container started; the same hostPath mounted without
// propagation (private) does not. Removing the pods leaves no mount behind.
func TestMountPropagationHostToContainer(t *testing.T) {
	t.Parallel()
	tg := startTug(t, tugOpts{})
	host := sharedHostDir(t)
	if err := os.Mkdir(filepath.Join(host, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	tg.writeManifest("slave.yaml", propagationPod("slave", tg.image, idle, host, "HostToContainer", false))
	tg.writeManifest("private.yaml", propagationPod("private", tg.image, idle, host, "", false))
	for _, name := range []string{"slave", "private"} {
		tg.waitRunning(startTimeout, name, "main", 0)
		tg.waitPod(startTimeout, name, "Running", phaseIs(pod.PhaseRunning))
	}

	hostTmpfs(t, filepath.Join(host, "sub"), "from-the-host")
	out, stderr, code := tg.runCLIInput("", execTimeout, "exec", "slave", "--", "cat", "/host/sub/marker")
	if code != 0 || out != "from-the-host" {
		t.Errorf("HostToContainer: cat /host/sub/marker = %q, %q, exit %d; want the host's file", out, stderr, code)
	}
	out, stderr, code = tg.runCLIInput("", execTimeout, "exec", "private", "--", "cat", "/host/sub/marker")
	if code == 0 {
		t.Errorf("private mount: cat /host/sub/marker = %q, %q, exit 0; want no such file (the host's mount must not reach it)", out, stderr)
	}

	// A hostPath on a mount that does not propagate (a private one) is
	// refused rather than mounted without propagation.
	private := t.TempDir()
	tg.writeManifest("unshared.yaml", propagationPod("unshared", tg.image, idle, private, "HostToContainer", false))
	tg.waitPod(startTimeout, "unshared", "CreateContainerConfigError", func(v *podview.View) error {
		w := mainStatus(v).State.Waiting
		if w == nil || w.Reason != pod.ReasonCreateContainerConfigError || !strings.Contains(w.Message, "neither shared nor a slave") {
			return fmt.Errorf("main is %+v, want waiting CreateContainerConfigError about the mount", mainStatus(v).State)
		}
		return nil
	})
	tg.removePods("slave", "private", "unshared")
	tg.assertNoMountsLeft()
}

// TestMountPropagationBidirectional: a privileged container mounts a tmpfs
// below its Bidirectional hostPath mount and the host sees it. A
// Bidirectional mount in a container that is not privileged is refused
// (the API server's message), and so is the privileged pod under a
// baseline policy.
func TestMountPropagationBidirectional(t *testing.T) {
	t.Parallel()
	tg := startTug(t, tugOpts{args: []string{"--allow-privileged"}})
	host := sharedHostDir(t)
	inner := filepath.Join(host, "inner")
	// Whatever the container mounts reaches the host: detached when the
	// test ends (sharedHostDir's clean-up does it too).
	t.Cleanup(func() { _ = unix.Unmount(inner, unix.MNT_DETACH) })
	script := "mkdir -p /host/inner && mount -t tmpfs -o size=1m tmpfs /host/inner && echo from-the-container > /host/inner/marker; echo mounted=$?; " + idle
	tg.writeManifest("shared.yaml", propagationPod("shared", tg.image, script, host, "Bidirectional", true))
	sh := tg.waitRunning(startTimeout, "shared", "main", 0)
	t.Cleanup(func() {
		if t.Failed() {
			lines, err := tg.logLines("shared", "main", 0)
			t.Logf("log of shared: %v %v", lines, err)
			mi, _ := os.ReadFile(fmt.Sprintf("/proc/%d/mountinfo", sh.PID))
			t.Logf("container mounts:\n%s", mi)
		}
	})
	tg.waitFor(logTimeout, "the container's mount to reach the host", func() (bool, error) {
		data, err := os.ReadFile(filepath.Join(inner, "marker"))
		if err != nil {
			return false, err
		}
		if strings.TrimSpace(string(data)) != "from-the-container" {
			return false, fmt.Errorf("marker = %q", data)
		}
		return true, nil
	})
	// Once the start is over (tug's staging mounts gone), the mount is
	// still there on both sides.
	tg.waitPod(startTimeout, "shared", "Running", phaseIs(pod.PhaseRunning))
	out, stderr, code := tg.runCLIInput("", execTimeout, "exec", "shared", "--", "cat", "/host/inner/marker")
	if code != 0 || strings.TrimSpace(out) != "from-the-container" {
		t.Errorf("in the container, cat /host/inner/marker = %q, %q, exit %d", out, stderr, code)
	}
	if ms, err := mountsUnder(inner); err != nil || len(ms) != 1 || ms[0].fstype != "tmpfs" {
		t.Errorf("host mounts at %s: %v, %v; want the container's tmpfs", inner, ms, err)
	}

	tg.writeManifest("unprivileged.yaml", propagationPod("unprivileged", tg.image, idle, host, "Bidirectional", false))
	tg.waitManifestError("unprivileged.yaml", "spec.containers[0].volumeMounts[0].mountPropagation: Bidirectional mount propagation is available only to privileged containers")
	tg.assertNoContainers(tg.uid("unprivileged"))

	tg.removePods("shared")
	tg.assertNoMountsLeft()

	if err := tg.Stop(); err != nil {
		t.Fatal(err)
	}
	tg.args = append(tg.args, "--file-policy", "baseline")
	tg.Start()
	tg.writeManifest("shared.yaml", propagationPod("shared", tg.image, script, host, "Bidirectional", true))
	tg.waitBlocked("shared", "securityContext.privileged", "is not allowed by the baseline policy")
}

// waitManifestError waits until the manifest file name (in the manifest
// directory) is reported with an error containing want.
func (tg *tug) waitManifestError(name, want string) {
	tg.t.Helper()
	file := tg.manifestPath(name)
	tg.waitFor(blockedWithin, name+"'s error", func() (bool, error) {
		ctx, cancel := context.WithTimeout(context.Background(), queryTimeout)
		defer cancel()
		ms, err := tg.api().Manifests(ctx)
		if err != nil {
			return false, err
		}
		for _, m := range ms {
			if m.File == file {
				if !strings.Contains(m.Error, want) {
					return false, fmt.Errorf("error %q, want %q", m.Error, want)
				}
				return true, nil
			}
		}
		return false, fmt.Errorf("%s not listed", file)
	})
}
