//go:build e2e

package e2e

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/containerd/containerd/v2/pkg/namespaces"
)

// TestConfigRejectedBeforeHost: "tug run" with a bad setting exits 1 and
// names every bad value (a config file's at its line), before it has created anything on the host (no
// namespace pins under the run dir, no leases under the root dir, no
// images imported into its containerd namespace).
func TestConfigRejectedBeforeHost(t *testing.T) {
	t.Parallel()
	tg := startTug(t, tugOpts{noStart: true})
	badFile := filepath.Join(tg.base, "config.yaml")
	if err := os.WriteFile(badFile, []byte("max-pods: 10\neviction-hardd: none\nsync-frequency: soon\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		args []string
		want []string
	}{
		{"reserved and pod cidr", []string{"--reserved", "cpu=lots,memory=1Gi", "--pod-cidr", "10.0.0.0/8", "--node-ip", "node1"},
			[]string{"reserved: cpu", "pod-cidr: \"10.0.0.0/8\"", "between /16 and /30", "node-ip: \"node1\""}},
		{"reserved", []string{"--reserved", "memory=1Gi,gpu=1"}, []string{"reserved: unknown resource \"gpu\""}},
		{"pod cidr /31", []string{"--pod-cidr", "10.0.0.0/31"}, []string{"between /16 and /30"}},
		{"missing header file", []string{"--manifest-url", "http://127.0.0.1:9/pods", "--manifest-url-header-file", filepath.Join(tg.base, "nope")},
			[]string{"header file", "no such file"}},
		{"config file", []string{"--config", badFile}, []string{
			badFile + `:2: unknown key "eviction-hardd" (did you mean "eviction-hard"?)`,
			badFile + `:3: sync-frequency: want a duration such as 30s, 5m or 1h30m, got "soon"`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tg.refusedToStart(t, 30*time.Second, tt.args, tt.want...)
			for _, p := range []string{filepath.Join(tg.runDir, "ns"), filepath.Join(tg.rootDir, "network")} {
				if _, err := os.Stat(p); !errors.Is(err, os.ErrNotExist) {
					t.Errorf("%s exists (%v): tug touched the host before it checked its configuration", p, err)
				}
			}
			images, err := tg.client.ImageService().List(namespaces.WithNamespace(context.Background(), tg.ns))
			if err != nil {
				t.Fatal(err)
			}
			if len(images) > 0 {
				t.Errorf("%d images imported into namespace %s before the configuration was checked", len(images), tg.ns)
			}
		})
	}
}

// TestCLIHelp runs the built binary as a new user would: "tug help" lists
// the commands, and "tug CMD --help" (here the ones that printed an error
// or exited non-zero before) prints the command's usage and flags and
// exits 0.
func TestCLIHelp(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		args []string
		want []string
	}{
		{[]string{"help"}, []string{"tug run", "tug validate", "tug pods", "tug inspect", "tug sign", "tug version", "tug help"}},
		{[]string{"validate", "--help"}, []string{"usage: tug validate", "-policy", "-allow-privileged"}},
		{[]string{"help", "validate"}, []string{"usage: tug validate", "-policy"}},
		{[]string{"run", "--help"}, []string{"usage: tug run", "-config", "-pod-cidr", "-reserved"}},
		{[]string{"version", "--help"}, []string{"usage: tug version"}},
	} {
		out, err := exec.Command(tugBin, tt.args...).Output()
		if err != nil {
			t.Errorf("tug %v: %v", tt.args, err)
			continue
		}
		for _, w := range tt.want {
			if !strings.Contains(string(out), w) {
				t.Errorf("tug %v does not print %q:\n%s", tt.args, w, out)
			}
		}
	}
}
