package cmdflag

import (
	"bytes"
	"slices"
	"strings"
	"testing"
)

func TestParse(t *testing.T) {
	tests := []struct {
		name       string
		args       []string
		wantPos    []string
		wantCode   int
		wantOK     bool
		wantStdout string
		wantStderr string
	}{
		{name: "flags and arguments in any order", args: []string{"web", "-n", "kube-system", "x"}, wantPos: []string{"web", "x"}, wantOK: true},
		{name: "after --, flags are arguments", args: []string{"-n", "a", "--", "-n", "b"}, wantPos: []string{"-n", "b"}, wantOK: true},
		{name: "help on stdout", args: []string{"--help"}, wantCode: 0, wantStdout: "usage: tug x\nFlags:\n  -n, --namespace"},
		{name: "bad flag on stderr", args: []string{"--nope"}, wantCode: 2, wantStderr: "tug: unknown flag: --nope\nusage: tug x\nFlags:\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fs := New("x")
			ns := fs.StringP("namespace", "n", "default", "the namespace")
			var stdout, stderr bytes.Buffer
			pos, code, ok := Parse(fs, tt.args, "usage: tug x\n", &stdout, &stderr)
			if ok != tt.wantOK || code != tt.wantCode || !slices.Equal(pos, tt.wantPos) {
				t.Errorf("Parse(%q) = %q, %d, %v; want %q, %d, %v", tt.args, pos, code, ok, tt.wantPos, tt.wantCode, tt.wantOK)
			}
			if ok && *ns == "default" {
				t.Errorf("-n was not parsed: %q", *ns)
			}
			if !strings.HasPrefix(stdout.String(), tt.wantStdout) || (tt.wantStdout == "") != (stdout.Len() == 0) {
				t.Errorf("stdout %q, want it to start with %q", stdout.String(), tt.wantStdout)
			}
			if !strings.HasPrefix(stderr.String(), tt.wantStderr) || (tt.wantStderr == "") != (stderr.Len() == 0) {
				t.Errorf("stderr %q, want it to start with %q", stderr.String(), tt.wantStderr)
			}
		})
	}
}

func TestUsageError(t *testing.T) {
	var stderr bytes.Buffer
	if code := UsageError(&stderr, "usage: tug x\n", "tug x needs a pod"); code != 2 || stderr.String() != "tug: tug x needs a pod\nusage: tug x\n" {
		t.Errorf("UsageError = %d, %q", code, stderr.String())
	}
}
