package offline

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestBundleRefusesBeforePushing: usage errors, and manifests a device
// would refuse, stop "tug bundle" before any request (the reference names
// a port nothing listens on, so a request would fail otherwise).
func TestBundleRefusesBeforePushing(t *testing.T) {
	dir := t.TempDir()
	_, key, _ := keyPair(t, dir)
	good := filepath.Join(dir, "good.yaml")
	os.WriteFile(good, []byte("apiVersion: v1\nkind: Pod\nmetadata: {name: web}\nspec: {containers: [{name: app, image: busybox}]}\n"), 0o644)
	bad := filepath.Join(dir, "bad.yaml")
	os.WriteFile(bad, []byte("apiVersion: v1\nkind: Pod\nmetadata: {name: web}\nspec: {containers: [{name: app}]}\n"), 0o644)
	const ref = "127.0.0.1:1/tug/b:prod"
	tests := []struct {
		name     string
		args     []string
		code     int
		inStderr string
	}{
		{"no subcommand", nil, 2, "push or pull"},
		{"unknown subcommand", []string{"get", ref}, 2, "unknown command"},
		{"no key", []string{"push", good, ref}, 2, "give --key, or --unsigned"},
		{"key and unsigned", []string{"push", "--key", key, "--unsigned", good, ref}, 2, "give --key, or --unsigned"},
		{"no reference", []string{"push", "--key", key, good}, 2, "want FILE... REF"},
		{"invalid manifest", []string{"push", "--key", key, good, bad, ref}, 1, "bad.yaml:4:"},
		{"invalid manifest named", []string{"push", "--unsigned", bad, ref}, 1, "not pushed"},
		{"expired", []string{"push", "--key", key, "--not-after", "2001-01-01T00:00:00Z", good, ref}, 2, "already have expired"},
		{"pull without reference", []string{"pull"}, 2, "want one REF"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := Bundle(context.Background(), tt.args, &stdout, &stderr)
			if code != tt.code || !strings.Contains(stderr.String(), tt.inStderr) {
				t.Fatalf("tug bundle %q = %d, stderr:\n%s\nwant %d and %q", tt.args, code, stderr.String(), tt.code, tt.inStderr)
			}
			if stdout.Len() > 0 {
				t.Errorf("stdout %q, want nothing", stdout.String())
			}
		})
	}
}
