//go:build e2e

package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"tug/internal/pod"
	"tug/internal/podview"
	"tug/internal/testutil"
)

// blockedWithin is how long tug may take to show a refused pod as Blocked.
const blockedWithin = 20 * time.Second

// capsAll is a container securityContext that adds every capability.
const capsAll = `      securityContext:
        capabilities:
          add: ["ALL"]
`

// waitBlocked waits until the pod named name is Blocked with a message
// containing each of want, in its status and in "tug pods", and returns
// its status message.
func (tg *tug) waitBlocked(name string, want ...string) string {
	tg.t.Helper()
	v := tg.waitPod(blockedWithin, name, "Blocked", func(v *podview.View) error {
		if v.Status.Reason != pod.ReasonBlocked {
			return fmt.Errorf("reason %q, want Blocked", v.Status.Reason)
		}
		for _, w := range want {
			if !strings.Contains(v.Status.Message, w) {
				return fmt.Errorf("message %q lacks %q", v.Status.Message, w)
			}
		}
		return nil
	})
	tg.waitFor(blockedWithin, "tug pods to show "+name+" Blocked", func() (bool, error) {
		out, stderr, code := tg.runCLI("pods")
		if code != 0 {
			return false, fmt.Errorf("tug pods exited %d: %s", code, stderr)
		}
		rows, _, err := parsePodTable(out)
		if err != nil {
			return false, err
		}
		if s := rows[staticName(name)]["STATUS"]; s != "Blocked" {
			return false, fmt.Errorf("STATUS %q, want Blocked", s)
		}
		if !strings.Contains(out, staticName(name)+": "+strings.SplitN(v.Status.Message, "\n", 2)[0]) {
			return false, fmt.Errorf("tug pods does not print the message:\n%s", out)
		}
		return true, nil
	})
	return v.Status.Message
}

// assertNothingCreated checks, across a few syncs, that containerd has no
// container of pod uid and that tug prepared nothing for it.
func (tg *tug) assertNothingCreated(uid string) {
	tg.t.Helper()
	deadline := time.Now().Add(2 * syncFrequency)
	for {
		cs, err := tg.podContainers(uid)
		if err != nil {
			tg.t.Fatal(err)
		}
		if len(cs) > 0 {
			tg.t.Fatalf("containerd has containers of the blocked pod %s: %v", uid, cs)
		}
		if _, err := os.Stat(filepath.Join(tg.rootDir, "pods", uid)); err == nil {
			tg.t.Fatalf("tug prepared volumes for the blocked pod %s", uid)
		}
		if time.Now().After(deadline) {
			return
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// TestPolicyPerSource: capabilities.add ALL from the URL (baseline by
// default) is Blocked and never created, while the same pod from the
// manifest dir (privileged by default) runs.
func TestPolicyPerSource(t *testing.T) {
	t.Parallel()
	image, _ := testutil.TestImage(t)
	manifest := shPod("caps", image, idle, capsAll)
	srv := newManifestServer(t, good(manifest))
	tg := urlTug(t, srv.url)
	tg.writeManifest("caps.yaml", strings.Replace(manifest, "name: caps", "name: filecaps", 1))

	tg.waitRunning(startTimeout, "filecaps", "main", 0)
	msg := tg.waitBlocked("caps", `spec.containers[0].securityContext.capabilities.add[0]: "ALL" is not allowed by the baseline policy of source `+srv.url)
	t.Logf("blocked: %s", msg)
	tg.assertNothingCreated(urlUID(srv.url, "caps"))
}

// TestPolicyFileBaselineUpdate: under --file-policy baseline a compliant
// pod runs; an update adding ALL capabilities is Blocked and the admitted
// version keeps running, untouched; a compliant update runs again.
func TestPolicyFileBaselineUpdate(t *testing.T) {
	t.Parallel()
	tg := startTug(t, tugOpts{args: []string{"--file-policy", "baseline"}})
	tg.writeManifest("upd.yaml", shPod("upd", tg.image, "echo v1; "+idle))
	v1 := tg.waitRunning(startTimeout, "upd", "main", 0)

	tg.writeManifest("upd.yaml", shPod("upd", tg.image, "echo v2; "+idle, capsAll))
	tg.waitBlocked("upd", "is not allowed by the baseline policy of source file:"+tg.manifestDir)
	deadline := time.Now().Add(2 * syncFrequency)
	for time.Now().Before(deadline) {
		c, ok, err := tg.container(tg.uid("upd"), "main")
		if err != nil || !ok {
			t.Fatalf("the admitted container is gone: %v %v", ok, err)
		}
		if c.ID != v1.ID || c.PID != v1.PID {
			t.Fatalf("the admitted container changed under a blocked update: before %v, now %v", v1, c)
		}
		time.Sleep(500 * time.Millisecond)
	}

	tg.writeManifest("upd.yaml", shPod("upd", tg.image, "echo v3; "+idle))
	tg.waitRunning(startTimeout, "upd", "main", 1)
	tg.waitPod(blockedWithin, "upd", "no longer Blocked", func(v *podview.View) error {
		if v.Status.Reason == pod.ReasonBlocked {
			return fmt.Errorf("still Blocked: %s", v.Status.Message)
		}
		return nil
	})
}

// TestPolicyHostStateMounts: hostPaths of containerd's socket and of tug's
// root dir are refused under the privileged file policy, unless
// --allow-host-state-mounts.
func TestPolicyHostStateMounts(t *testing.T) {
	t.Parallel()
	tg := startTug(t, tugOpts{})
	vol := func(p string) string {
		return fmt.Sprintf("      volumeMounts:\n        - {name: h, mountPath: /h}\n  volumes:\n    - name: h\n      hostPath: {path: %q}\n", p)
	}
	tg.writeManifest("sock.yaml", shPod("sock", tg.image, idle, vol(tg.addr)))
	tg.writeManifest("root.yaml", shPod("root", tg.image, idle, vol(tg.rootDir+"/")))
	tg.writeManifest("slash.yaml", shPod("slash", tg.image, idle, vol("/")))
	tg.waitBlocked("sock", fmt.Sprintf("spec.volumes[0].hostPath.path: %q exposes containerd's socket", tg.addr), "--allow-host-state-mounts")
	tg.waitBlocked("root", "exposes tug's root dir ("+tg.rootDir+")")
	tg.waitBlocked("slash", "exposes the host's root filesystem")
	for _, name := range []string{"sock", "root", "slash"} {
		tg.assertNothingCreated(tg.uid(name))
	}
	if err := tg.Stop(); err != nil {
		t.Fatal(err)
	}

	for _, f := range []string{"root.yaml", "slash.yaml"} {
		if err := os.Remove(tg.manifestPath(f)); err != nil {
			t.Fatal(err)
		}
	}
	tg.args = append(tg.args, "--allow-host-state-mounts")
	tg.Start()
	tg.waitRunning(startTimeout, "sock", "main", 0)
}

// TestValidatePolicyCLI: "tug validate --policy" prints the agent's
// messages at the field's file:line:col and exits 1.
func TestValidatePolicyCLI(t *testing.T) {
	t.Parallel()
	image, _ := testutil.TestImage(t)
	dir := t.TempDir()
	file := filepath.Join(dir, "caps.yaml")
	if err := os.WriteFile(file, []byte(shPod("caps", image, idle, capsAll)), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		level string
		code  int
		want  string // a regexp
	}{
		{"privileged", 0, regexp.QuoteMeta("caps.yaml: ok")},
		{"baseline", 1, regexp.QuoteMeta(file) + `:\d+:\d+: ` + regexp.QuoteMeta(`spec.containers[0].securityContext.capabilities.add[0]: "ALL" is not allowed by the baseline policy of source file:`+dir)},
		{"restricted", 1, `:\d+:\d+: ` + regexp.QuoteMeta("spec.containers[0].securityContext.runAsNonRoot: must be true")},
	} {
		out, err := exec.Command(tugBin, "validate", "--policy", tt.level, file).CombinedOutput()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		if code != tt.code || !regexp.MustCompile(tt.want).Match(out) {
			t.Errorf("tug validate --policy %s: exit %d, output:\n%s\nwant exit %d and %q", tt.level, code, out, tt.code, tt.want)
		}
	}
}

// statusScript prints the process's seccomp mode and no_new_privs, then
// whether unshare(CLONE_NEWUSER) (refused by containerd's default profile
// without CAP_SYS_ADMIN) and mkdir work.
const statusScript = `grep -E '^(Seccomp|NoNewPrivs):' /proc/self/status | tr -d ' \t' | tr ':' '='; ` +
	`if unshare -U true 2>/dev/null; then echo unshare=ok; else echo unshare=refused; fi; ` +
	`if mkdir /tmp/d 2>/dev/null; then echo mkdir=ok; else echo mkdir=refused; fi; ` + idle

// TestSeccompAndNoNewPrivs: containerd's default profile by default,
// Unconfined on request, a Localhost profile from --seccomp-profile-root,
// and no_new_privs from allowPrivilegeEscalation false.
func TestSeccompAndNoNewPrivs(t *testing.T) {
	t.Parallel()
	tg := startTug(t, tugOpts{beforeStart: func(tg *tug) {
		dir := filepath.Join(tg.rootDir, "seccomp")
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		prof := `{"defaultAction":"SCMP_ACT_ALLOW","syscalls":[{"names":["mkdir","mkdirat"],"action":"SCMP_ACT_ERRNO"}]}`
		for _, f := range []string{filepath.Join(dir, "nomkdir.json"), filepath.Join(tg.base, "outside.json")} {
			if err := os.WriteFile(f, []byte(prof), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		if err := os.Symlink("../../outside.json", filepath.Join(dir, "escape.json")); err != nil {
			t.Fatal(err)
		}
	}})
	sc := func(s string) string { return "      securityContext:\n" + s }
	tg.writeManifest("def.yaml", shPod("def", tg.image, statusScript))
	tg.writeManifest("unc.yaml", shPod("unc", tg.image, statusScript, sc("        seccompProfile: {type: Unconfined}\n")))
	tg.writeManifest("podunc.yaml", shPod("podunc", tg.image, statusScript, "  securityContext:\n    seccompProfile: {type: Unconfined}\n"))
	tg.writeManifest("nnp.yaml", shPod("nnp", tg.image, statusScript, sc("        allowPrivilegeEscalation: false\n")))
	tg.writeManifest("local.yaml", shPod("local", tg.image, statusScript, sc("        seccompProfile: {type: Localhost, localhostProfile: nomkdir.json}\n")))
	tg.writeManifest("escape.yaml", shPod("escape", tg.image, statusScript, sc("        seccompProfile: {type: Localhost, localhostProfile: escape.json}\n")))
	tg.writeManifest("dotdot.yaml", shPod("dotdot", tg.image, statusScript, sc("        seccompProfile: {type: Localhost, localhostProfile: ../outside.json}\n")))

	tg.waitLog(startTimeout, "def", "main", 0, "Seccomp=2", "NoNewPrivs=0", "unshare=refused", "mkdir=ok")
	tg.waitLog(startTimeout, "unc", "main", 0, "Seccomp=0", "unshare=ok", "mkdir=ok")
	tg.waitLog(startTimeout, "podunc", "main", 0, "Seccomp=0", "unshare=ok")
	tg.waitLog(startTimeout, "nnp", "main", 0, "Seccomp=2", "NoNewPrivs=1")
	tg.waitLog(startTimeout, "local", "main", 0, "Seccomp=2", "unshare=ok", "mkdir=refused")

	// A symlink out of the profile dir: the container is never created.
	tg.waitConfigError("escape", "seccomp profile")
	// "../" is refused with the manifest.
	tg.waitFor(blockedWithin, "dotdot.yaml to be refused", func() (bool, error) {
		out, _, _ := tg.runCLI("pods")
		if !strings.Contains(out, "localhostProfile: must not contain '..'") {
			return false, fmt.Errorf("tug pods:\n%s", out)
		}
		return true, nil
	})
	tg.assertNoContainers(tg.uid("dotdot"))
}

// waitConfigError waits until the first container of the pod named name
// waits with CreateContainerConfigError and a message holding msg, then
// checks that containerd never got a container of it.
func (tg *tug) waitConfigError(name, msg string) {
	tg.t.Helper()
	tg.waitPod(startTimeout, name, pod.ReasonCreateContainerConfigError, func(v *podview.View) error {
		if len(v.Status.ContainerStatuses) == 0 {
			return fmt.Errorf("no container status")
		}
		w := v.Status.ContainerStatuses[0].State.Waiting
		if w == nil || w.Reason != pod.ReasonCreateContainerConfigError || !strings.Contains(w.Message, msg) {
			return fmt.Errorf("state %+v", v.Status.ContainerStatuses[0].State)
		}
		return nil
	})
	tg.assertNoContainers(tg.uid(name))
}

// assertNoContainers checks, across a few syncs, that containerd has no
// container of pod uid.
func (tg *tug) assertNoContainers(uid string) {
	tg.t.Helper()
	for deadline := time.Now().Add(2 * syncFrequency); time.Now().Before(deadline); time.Sleep(500 * time.Millisecond) {
		cs, err := tg.podContainers(uid)
		if err != nil {
			tg.t.Fatal(err)
		}
		if len(cs) > 0 {
			tg.t.Fatalf("containerd has containers of pod %s: %v", uid, cs)
		}
	}
}

// TestRunAsNonRoot: runAsNonRoot with the test image (which runs as root)
// is refused before the container is created; with runAsUser 1000 it runs.
func TestRunAsNonRoot(t *testing.T) {
	t.Parallel()
	tg := startTug(t, tugOpts{})
	tg.writeManifest("root.yaml", shPod("asroot", tg.image, "id -u; "+idle, "      securityContext:\n        runAsNonRoot: true\n"))
	tg.writeManifest("user.yaml", shPod("asuser", tg.image, "id -u; "+idle, "  securityContext:\n    runAsNonRoot: true\n    runAsUser: 1000\n"))

	tg.waitLog(startTimeout, "asuser", "main", 0, "1000")
	tg.waitConfigError("asroot", "container has runAsNonRoot and image will run as root")
	out, _, _ := tg.runCLI("pods")
	if rows, _, err := parsePodTable(out); err != nil || rows[staticName("asroot")]["STATUS"] != pod.ReasonCreateContainerConfigError {
		t.Errorf("tug pods (%v):\n%s", err, out)
	}
}
