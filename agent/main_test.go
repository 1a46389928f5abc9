package main

import (
	"bytes"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// TestValidateWiring: "tug validate --policy" applies the agent's own
// admission policy (newPolicy with the default configuration): a hostPath
// on containerd's socket is refused whatever the level, unless
// --allow-host-state-mounts is given, as "tug run" would.
func TestValidateWiring(t *testing.T) {
	host := filepath.Join(t.TempDir(), "host.yaml")
	if err := os.WriteFile(host, []byte(`apiVersion: v1
kind: Pod
metadata:
  name: host
spec:
  containers:
  - name: app
    image: busybox
  volumes:
  - name: sock
    hostPath: {path: /run/containerd/containerd.sock}
`), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		args []string
		code int
		want string
	}{
		{"host state under privileged", []string{"validate", "--policy", "privileged", host}, 1,
			`spec.volumes[0].hostPath.path: "/run/containerd/containerd.sock" exposes containerd's socket (/run/containerd/containerd.sock); refused whatever the policy`},
		{"host state allowed", []string{"validate", "--policy", "privileged", "--allow-host-state-mounts", host}, 0, ": ok"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			if code := run(tt.args, &stdout, &stderr); code != tt.code {
				t.Fatalf("tug %v = %d, want %d; stderr:\n%s", tt.args, code, tt.code, stderr.String())
			}
			if !strings.Contains(stdout.String()+stderr.String(), tt.want) {
				t.Errorf("tug %v: output does not contain %q:\nstdout %s\nstderr %s", tt.args, tt.want, stdout.String(), stderr.String())
			}
		})
	}
}

// TestBuildVersion: without -ldflags, "tug version" says what the
// toolchain recorded (at least the Go version) rather than a bare "dev";
// with them, their version alone.
func TestBuildVersion(t *testing.T) {
	saved := version
	defer func() { version = saved }()
	version = ""
	if got := buildVersion(); !strings.Contains(got, runtime.Version()) {
		t.Errorf("buildVersion() = %q, want the Go version %s in it", got, runtime.Version())
	}
	version = "v1.2.3"
	if got := buildVersion(); got != "v1.2.3" {
		t.Errorf("buildVersion() = %q with -ldflags v1.2.3", got)
	}
}
