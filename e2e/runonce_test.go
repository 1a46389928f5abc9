//go:build e2e

package e2e

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	containerd "github.com/containerd/containerd/v2/client"
	"golang.org/x/sys/unix"
)

// runOnceTimeout bounds a "tug run --runonce" (its own --runonce-timeout
// is set below it).
const runOnceTimeout = 90 * time.Second

// TestRunOnce runs "tug run --runonce" three times on one manifest
// directory: with two good pods it exits 0 and prints them Running; with a
// pod whose container exits 1 under restartPolicy Never, or with a broken
// manifest, it exits non-zero. Each time the pods keep running after tug
// exits, as with the kubelet's --runonce.
func TestRunOnce(t *testing.T) {
	t.Parallel()
	tg := startTug(t, tugOpts{noStart: true, beforeStart: func(tg *tug) {
		tg.writeManifest("ro-a.yaml", shPod("ro-a", tg.image, idle))
		tg.writeManifest("ro-b.yaml", shPod("ro-b", tg.image, idle))
	}})
	good := []string{"ro-a", "ro-b"}

	out, code := tg.runOnce()
	if code != 0 {
		t.Fatalf("tug run --runonce with two good pods exited %d; it printed:\n%s", code, out)
	}
	rows := runOnceRows(t, out)
	for _, n := range good {
		if r := rows[staticName(n)]; r["STATUS"] != "Running" || r["READY"] != "1/1" {
			t.Errorf("printed %s as %v, want 1/1 Running", n, r)
		}
	}
	want := tg.snapshotTasks(good)
	time.Sleep(time.Second) // tug is gone: nothing should change
	if err := tg.sameTasks(want); err != nil {
		t.Fatalf("after tug run --runonce exited: %v", err)
	}

	t.Run("failing pod", func(t *testing.T) {
		tg.writeManifest("ro-fail.yaml", policyPod("ro-fail", tg.image, "Never", "", "exit 1"))
		out, code := tg.runOnce()
		if code == 0 {
			t.Errorf("tug run --runonce with a pod that failed exited 0; it printed:\n%s", out)
		}
		rows := runOnceRows(t, out)
		if r := rows[staticName("ro-fail")]; r["STATUS"] != "Error" {
			t.Errorf("printed ro-fail as %v, want STATUS Error", r)
		}
		if err := tg.sameTasks(want); err != nil {
			t.Errorf("the good pods: %v", err)
		}
		if err := os.Remove(tg.manifestPath("ro-fail.yaml")); err != nil {
			t.Fatal(err)
		}
	})

	t.Run("broken manifest", func(t *testing.T) {
		tg.writeManifest("broken.yaml", brokenManifest)
		out, code := tg.runOnce()
		if code == 0 {
			t.Errorf("tug run --runonce with a broken manifest exited 0; it printed:\n%s", out)
		}
		rows := runOnceRows(t, out)
		if r := rows["broken.yaml"]; r["STATUS"] != "ManifestError" {
			t.Errorf("printed broken.yaml as %v, want STATUS ManifestError", r)
		}
		for _, n := range good {
			if r := rows[staticName(n)]; r["STATUS"] != "Running" {
				t.Errorf("printed %s as %v, want Running", n, r)
			}
		}
		time.Sleep(time.Second)
		if err := tg.sameTasks(want); err != nil {
			t.Errorf("the good pods after tug exited: %v", err)
		}
		for _, c := range want {
			if err := unix.Kill(int(c.PID), 0); err != nil || c.Status != containerd.Running {
				t.Errorf("process %d of %v: %v", c.PID, c, err)
			}
		}
	})
}

// runOnce runs "tug run --runonce" on the test's directories and returns
// what it printed on stdout and its exit code. Its log goes to tug's
// output.
func (tg *tug) runOnce() (string, int) {
	tg.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), runOnceTimeout)
	defer cancel()
	args := tg.runArgs("--runonce", "--runonce-timeout", (runOnceTimeout - 10*time.Second).String())
	cmd := tg.command(ctx, args...)
	var stdout strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, tg.out
	start := time.Now()
	err := cmd.Run()
	var exit *exec.ExitError
	switch {
	case ctx.Err() != nil:
		tg.t.Fatalf("tug run --runonce did not exit within %v", runOnceTimeout)
	case errors.As(err, &exit):
	case err != nil:
		tg.t.Fatalf("tug run --runonce: %v", err)
	}
	tg.t.Logf("tug run --runonce exited %d after %v; it printed:\n%s", cmd.ProcessState.ExitCode(), time.Since(start).Round(time.Millisecond), stdout.String())
	return stdout.String(), cmd.ProcessState.ExitCode()
}

// runOnceRows parses the pod table "tug run --runonce" printed.
func runOnceRows(t *testing.T, out string) map[string]podRow {
	t.Helper()
	rows, _, err := parsePodTable(out)
	if err != nil {
		t.Fatalf("tug run --runonce printed no pod table: %v", err)
	}
	return rows
}
