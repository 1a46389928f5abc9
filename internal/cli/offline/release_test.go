package offline

import (
	"bytes"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"tug/internal/bundle"
)

// TestReleaseSignPlan: "tug release sign" takes the plan flags of "tug
// sign", checked the same way, and refuses the windows a release does not
// carry; "tug verify" says what a device would do with the signed release.
func TestReleaseSignPlan(t *testing.T) {
	dir := t.TempDir()
	_, keyFile, pubFile := keyPair(t, dir)
	// The test binary is an ELF executable of this architecture.
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	exe, _ := os.ReadFile(self)
	bin := filepath.Join(dir, "tug")
	if err := os.WriteFile(bin, exe, 0o755); err != nil {
		t.Fatal(err)
	}
	start := time.Now().UTC().Truncate(time.Second).Add(time.Hour)
	tests := []struct {
		name    string
		args    []string
		wantErr string // "" : signed
		check   func(h bundle.EnvelopeHeader) bool
		// verify is in what "tug verify --node kiosk-1 --labels
		// ring=canary" prints of the signed release.
		verify string
	}{
		{"waves", []string{"--version", "9", "--rollout-start", start.Format(time.RFC3339), "--wave", "name=canary,labels=ring=canary", "--wave", "name=all,after=1h"}, "",
			func(h bundle.EnvelopeHeader) bool {
				return h.Rollout != nil && len(h.Rollout.Waves) == 2 && h.Rollout.Start.Equal(start) && h.Halt == nil
			}, `node kiosk-1: wave 1 "canary", opens at ` + start.Format(time.RFC3339)},
		{"halt with revert", []string{"--version", "10", "--halt", "9", "--revert"}, "",
			func(h bundle.EnvelopeHeader) bool {
				return h.Halt != nil && h.Halt.Version == 9 && h.Halt.Revert && h.Rollout == nil
			}, "one that committed it installs this release's binary at once"},
		{"bad share", []string{"--version", "9", "--wave", "share=150"}, "rollout.waves[0].share", nil, ""},
		{"halt not older", []string{"--version", "9", "--halt", "9"}, "halt.version", nil, ""},
		{"halt and wave", []string{"--version", "10", "--halt", "9", "--wave", "name=all"}, "--halt and --wave", nil, ""},
		{"revert alone", []string{"--version", "10", "--revert"}, "--revert without --halt", nil, ""},
		{"own window", []string{"--version", "9", "--update-window", "daily 02:00-04:00"}, "own windows", nil, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			os.Remove(bin + ".signed")
			var stdout, stderr bytes.Buffer
			rc := Release(t.Context(), append(append([]string{"sign", "--key", keyFile}, tt.args...), bin), &stdout, &stderr)
			if tt.wantErr != "" {
				if rc == 0 || !strings.Contains(stderr.String(), tt.wantErr) {
					t.Fatalf("rc %d, stderr %q, want an error with %q", rc, stderr.String(), tt.wantErr)
				}
				return
			}
			if rc != 0 {
				t.Fatalf("rc %d: %s", rc, stderr.String())
			}
			data, err := os.ReadFile(bin + ".signed")
			if err != nil {
				t.Fatal(err)
			}
			env, err := bundle.ParseEnvelope(data)
			if err != nil || !tt.check(env.Header) {
				t.Fatalf("header %+v, %v", env.Header, err)
			}
			stdout.Reset()
			rc = Verify([]string{"--key", pubFile, "--node", "kiosk-1", "--labels", "ring=canary", bin + ".signed"}, &stdout, &stderr)
			release := "ok: release version " + strconv.FormatUint(env.Header.Version, 10) + ", linux/" + runtime.GOARCH
			if rc != 0 || !strings.Contains(stdout.String(), release) || !strings.Contains(stdout.String(), tt.verify) {
				t.Errorf("tug verify: rc %d, stdout %q, stderr %q; want %q and %q", rc, stdout.String(), stderr.String(), release, tt.verify)
			}
		})
	}
}
