package specopts

import (
	"bytes"
	"os/exec"
	"strings"
	"testing"

	"tug/internal/testutil"
)

// TestDefaultProfileParses compiles the default profile with the real
// apparmor_parser (without loading it into the kernel), with and without
// the system's includes, and with tug confined by a profile of its own.
func TestDefaultProfileParses(t *testing.T) {
	testutil.RequireCommand(t, "apparmor_parser")
	tests := []struct {
		name, daemon string
		has          func(string) bool
	}{
		{name: "system includes", daemon: "unconfined", has: exists},
		{name: "no includes", daemon: "unconfined", has: func(string) bool { return false }},
		{name: "confined agent", daemon: "tug-agent", has: exists},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			text := defaultProfile("tug-test", tt.daemon, tt.has)
			cmd := exec.Command("apparmor_parser", "--skip-kernel-load", "--skip-cache", "--debug")
			cmd.Stdin = strings.NewReader(text)
			var out, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &out, &stderr
			if err := cmd.Run(); err != nil {
				t.Fatalf("apparmor_parser: %v: %s\n%s", err, stderr.String(), text)
			}
			// The parser's view of the profile names it and keeps mounts denied.
			if !strings.Contains(out.String(), "tug-test") {
				t.Errorf("parser output does not name the profile:\n%s", out.String())
			}
			if tt.daemon != "unconfined" && !strings.Contains(text, "peer="+tt.daemon) {
				t.Errorf("no signal rule for the agent's profile %s", tt.daemon)
			}
		})
	}
}

func TestPeerName(t *testing.T) {
	for in, want := range map[string]string{"": "unconfined", "unconfined\n": "unconfined", "tug (enforce)\n": "tug", "x (complain)": "x"} {
		if got := peerName(in); got != want {
			t.Errorf("peerName(%q) = %q, want %q", in, got, want)
		}
	}
}
