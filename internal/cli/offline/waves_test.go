package offline

import (
	"bytes"
	"cmp"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"tug/internal/bundle"
	"tug/internal/wave"
)

// TestSignWavesAndVerify: "tug sign --wave" writes the plan, "--halt" the
// halt, and "tug verify --node --labels" says which wave a device is in,
// when it opens and what it would do.
func TestSignWavesAndVerify(t *testing.T) {
	dir := t.TempDir()
	_, keyFile, pubFile := keyPair(t, dir)
	a := filepath.Join(dir, "a.yaml")
	os.WriteFile(a, []byte("apiVersion: v1\nkind: Pod\nmetadata: {name: web}\nspec: {containers: [{name: app, image: busybox}]}\n"), 0o644)

	start := time.Now().UTC().Truncate(time.Second).Add(time.Hour)
	// Pick a node in the 50 % share of version 9 and one outside it.
	var in, out string
	for i := 0; in == "" || out == ""; i++ {
		n := fmt.Sprintf("kiosk-%d", i)
		if wave.Bucket(n, 9) < wave.Buckets/2 {
			in = cmp.Or(in, n)
		} else {
			out = cmp.Or(out, n)
		}
	}
	o := filepath.Join(dir, "v9.signed")
	var stdout, stderr bytes.Buffer
	if rc := Sign([]string{"--key", keyFile, "--version", "9", "--rollout-start", start.Format(time.RFC3339),
		"--wave", "name=canary,labels=ring=canary,after=0s", "--wave", "name=half,share=50,after=1h", "--wave", "name=rest,after=2h", "-o", o, a}, &stdout, &stderr); rc != 0 {
		t.Fatalf("sign: %d: %s", rc, stderr.String())
	}
	data, _ := os.ReadFile(o)
	env, err := bundle.ParseEnvelope(data)
	if err != nil || env.Header.Rollout == nil || len(env.Header.Rollout.Waves) != 3 || !env.Header.Rollout.Start.Equal(start) {
		t.Fatalf("plan %+v, %v", env.Header.Rollout, err)
	}
	tests := []struct {
		node, labels, want string
	}{
		{out, "ring=canary", fmt.Sprintf(`node %s: wave 1 "canary", opens at %s`, out, start.Format(time.RFC3339))},
		{in, "", fmt.Sprintf(`node %s: wave 2 "half", opens at %s`, in, start.Add(time.Hour).Format(time.RFC3339))},
		{out, "ring=prod", fmt.Sprintf(`node %s: wave 3 "rest", opens at %s`, out, start.Add(2*time.Hour).Format(time.RFC3339))},
	}
	for _, tt := range tests {
		stdout.Reset()
		stderr.Reset()
		if rc := Verify([]string{"--key", pubFile, "--node", tt.node, "--labels", tt.labels, o}, &stdout, &stderr); rc != 0 || !strings.Contains(stdout.String(), tt.want) {
			t.Errorf("verify --node %s --labels %q = %d:\n%s%s\nwant %q", tt.node, tt.labels, rc, stdout.String(), stderr.String(), tt.want)
		}
	}

	h := filepath.Join(dir, "v10.signed")
	if rc := Sign([]string{"--key", keyFile, "--version", "10", "--halt", "9", "--revert", "-o", h, a}, &stdout, &stderr); rc != 0 {
		t.Fatalf("sign --halt: %d: %s", rc, stderr.String())
	}
	stdout.Reset()
	if rc := Verify([]string{"--key", pubFile, "--node", in, h}, &stdout, &stderr); rc != 0 || !strings.Contains(stdout.String(), "halt: version 9's rollout is halted") ||
		!strings.Contains(stdout.String(), "(revert)") {
		t.Errorf("verify halt = %d:\n%s", rc, stdout.String())
	}

	for _, tc := range []struct {
		args []string
		msg  string
	}{
		{[]string{"--wave", "share=150", a}, "rollout.waves[0].share"},
		{[]string{"--wave", "after=2h", "--wave", "after=1h", a}, "rollout.waves[1].after"},
		{[]string{"--wave", "ring=canary", a}, "unknown key"},
		{[]string{"--rollout-start", "now", "--wave", "after=0s", a}, "--rollout-start"},
		{[]string{"--rollout-start", start.Format(time.RFC3339), a}, "without --wave"},
		{[]string{"--revert", a}, "--revert without --halt"},
		{[]string{"--version", "5", "--halt", "5", a}, "halt.version"},
		{[]string{"--halt", "5", "--wave", "after=0s", a}, "carries no plan"},
	} {
		stderr.Reset()
		if rc := Sign(append([]string{"--key", keyFile}, tc.args...), &stdout, &stderr); rc != 2 || !strings.Contains(stderr.String(), tc.msg) {
			t.Errorf("sign %v: rc %d, %q; want a usage error with %q", tc.args, rc, stderr.String(), tc.msg)
		}
	}
}
