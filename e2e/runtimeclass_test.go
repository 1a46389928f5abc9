//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"tug/internal/pod"
	"tug/internal/testutil"
)

// runtimeWrapper writes a script that appends its arguments to a record
// file, one line per call, then execs runc: an OCI runtime binary a runtime
// class can name. It returns the script's path and the record's.
func runtimeWrapper(t *testing.T) (script, record string) {
	t.Helper()
	testutil.RequireCommand(t, "runc")
	runc, err := exec.LookPath("runc")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	script, record = filepath.Join(dir, "wrapped-runc"), filepath.Join(dir, "calls")
	body := fmt.Sprintf("#!/bin/sh\necho \"$*\" >> %s\nexec %s \"$@\"\n", record, runc)
	if err := os.WriteFile(script, []byte(body), 0o755); err != nil {
		t.Fatal(err)
	}
	return script, record
}

// runtimeCalls returns the runtime calls the wrapper recorded for
// container id (the runc subcommands: create, start, state, ...).
func runtimeCalls(t *testing.T, record, id string) []string {
	t.Helper()
	data, err := os.ReadFile(record)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	var calls []string
	for line := range strings.SplitSeq(string(data), "\n") {
		f := strings.Fields(line)
		if len(f) == 0 || f[len(f)-1] != id {
			continue
		}
		for _, sub := range []string{"create", "start", "state", "kill", "delete"} {
			if strings.Contains(" "+line+" ", " "+sub+" ") {
				calls = append(calls, sub)
				break
			}
		}
	}
	return calls
}

// TestRuntimeClass: a pod whose runtimeClassName the node declares with
// --runtime-class NAME=io.containerd.runc.v2:BINARY runs, its containers
// created and started through BINARY (a wrapper of runc that records its
// calls), while a pod without a class runs with plain runc. A pod naming a
// class the node does not declare is refused (Failed/RuntimeClass, the
// class and the flag named) and the others keep running. A restart of tug
// adopts the class's container; removing the class from the manifest
// recreates it with runc.
func TestRuntimeClass(t *testing.T) {
	t.Parallel()
	wrapper, record := runtimeWrapper(t)
	tg := startTug(t, tugOpts{args: []string{"--runtime-class", "wrapped=io.containerd.runc.v2:" + wrapper}})
	classPod := func(class string) string {
		extra := ""
		if class != "" {
			extra = "  runtimeClassName: " + class + "\n"
		}
		return podYAML{name: "wrapped", containers: []ctrYAML{{name: "main", image: tg.image, script: idle}}, extra: extra}.String()
	}
	tg.writeManifest("wrapped.yaml", classPod("wrapped"))
	tg.writeManifest("plain.yaml", shPod("plain", tg.image, idle))
	w0 := tg.waitRunning(startTimeout, "wrapped", "main", 0)
	plain := tg.waitRunning(startTimeout, "plain", "main", 0)

	calls := runtimeCalls(t, record, w0.ID)
	if !strings.Contains(strings.Join(calls, " "), "create") || !strings.Contains(strings.Join(calls, " "), "start") {
		t.Errorf("runtime calls of %s through the class's binary: %v, want create and start", w0.ID, calls)
	}
	if out, stderr, code := tg.runCLI("describe", "wrapped"); code != 0 || findLine(out, "Runtime Class Name:", "wrapped") == "" {
		t.Errorf("tug describe wrapped (exit %d, %s) does not show the runtime class:\n%s", code, stderr, out)
	}
	if calls := runtimeCalls(t, record, plain.ID); len(calls) != 0 {
		t.Errorf("the pod without a class ran through the class's binary: %v", calls)
	}

	// An undeclared class is refused at admission; the others keep running.
	tg.writeManifest("undeclared.yaml", podYAML{name: "undeclared", containers: []ctrYAML{{name: "main", image: tg.image, script: idle}},
		extra: "  runtimeClassName: kata\n"}.String())
	tg.waitPod(startTimeout, "undeclared", "Failed/RuntimeClass",
		reasonIs(pod.PhaseFailed, "RuntimeClass", `runtime class "kata" is not declared on this node`))
	v, err := tg.podView("undeclared")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(v.Status.Message, "--runtime-class kata=") {
		t.Errorf("refusal %q does not name the setting", v.Status.Message)
	}
	tg.assertRefused("undeclared", "RuntimeClass")
	if c, _, err := tg.container(tg.uid("wrapped"), "main"); err != nil || c.ID != w0.ID || c.PID != w0.PID {
		t.Errorf("the class's pod did not keep running: %v (%v), was %v", c, err, w0)
	}

	// A restart adopts the container: no new create through the binary.
	if err := tg.Stop(); err != nil {
		t.Fatal(err)
	}
	tg.Start()
	tg.waitPod(startTimeout, "wrapped", "Running after restart", phaseIs(pod.PhaseRunning))
	tg.waitPod(startTimeout, "undeclared", "still Failed/RuntimeClass", reasonIs(pod.PhaseFailed, "RuntimeClass", "kata"))
	if c, _, err := tg.container(tg.uid("wrapped"), "main"); err != nil || c.ID != w0.ID || c.PID != w0.PID {
		t.Errorf("the class's container was not adopted: %v (%v), was %v", c, err, w0)
	}
	if n := strings.Count(strings.Join(runtimeCalls(t, record, w0.ID), " "), "create"); n != 1 {
		t.Errorf("%d creates of %s through the class's binary, want 1", n, w0.ID)
	}

	// Removing the class recreates the container, with runc.
	tg.writeManifest("wrapped.yaml", classPod(""))
	w1 := tg.waitRunning(removeTimeout, "wrapped", "main", 1)
	if calls := runtimeCalls(t, record, w1.ID); len(calls) != 0 {
		t.Errorf("the container recreated without a class ran through the class's binary: %v", calls)
	}
	tg.removePods("wrapped", "plain", "undeclared")
}

// TestRuntimeClassFlagChecked: tug refuses to start with a --runtime-class
// whose binary does not exist, naming the flag and the binary.
func TestRuntimeClassFlagChecked(t *testing.T) {
	t.Parallel()
	missing := filepath.Join(t.TempDir(), "no-such-runtime")
	tg := startTug(t, tugOpts{noStart: true, args: []string{"--runtime-class", "gone=io.containerd.runc.v2:" + missing}})
	ctx, cancel := context.WithTimeout(context.Background(), stopTimeout)
	defer cancel()
	out, err := tg.command(ctx, tg.runArgs()...).CombinedOutput()
	if err == nil {
		t.Fatalf("tug started with a runtime class whose binary is missing:\n%s", out)
	}
	if line := findLine(string(out), "--runtime-class", `"gone"`, missing); line == "" {
		t.Errorf("tug's error does not name the flag, the class and the binary:\n%s", out)
	}
}
