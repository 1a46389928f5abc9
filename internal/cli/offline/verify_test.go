package offline

import (
	"bytes"
	"crypto/ed25519"
	"crypto/x509"
	"encoding/pem"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"tug/internal/bundle"
)

// TestVerifyCmd checks bundles as a device would: each refusal a device
// makes is a refusal here, with its reason, and a good bundle lists what it
// would apply.
func TestVerifyCmd(t *testing.T) {
	dir := t.TempDir()
	pub, priv, _ := ed25519.GenerateKey(nil)
	other, _, _ := ed25519.GenerateKey(nil)
	writeKey := func(name string, k ed25519.PublicKey) string {
		der, _ := x509.MarshalPKIXPublicKey(k)
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der}), 0o644); err != nil {
			t.Fatal(err)
		}
		return path
	}
	key, wrongKey := writeKey("pub.pem", pub), writeKey("other.pem", other)
	good := "apiVersion: v1\nkind: Pod\nmetadata: {name: web}\nspec: {containers: [{name: app, image: busybox}]}\n"
	seal := func(name string, hdr bundle.EnvelopeHeader, body string) string {
		data, err := bundle.SealEnvelope(priv, hdr, []byte(body))
		if err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
		return path
	}
	future := time.Now().Add(time.Hour)
	okFile := seal("ok.signed", bundle.EnvelopeHeader{Version: 7, NotAfter: future, Nodes: []string{"kiosk-*"}}, good)
	empty := seal("empty.signed", bundle.EnvelopeHeader{Version: 7, NotAfter: future}, "")
	expired := seal("expired.signed", bundle.EnvelopeHeader{Version: 7, NotAfter: time.Now().Add(-time.Minute)}, good)
	invalid := seal("invalid.signed", bundle.EnvelopeHeader{Version: 7, NotAfter: future}, "apiVersion: v1\nkind: Pod\nmetadata: {name: web}\nspec: {containers: [{name: app}]}\n")
	tampered := filepath.Join(dir, "tampered.signed")
	data, _ := os.ReadFile(okFile)
	os.WriteFile(tampered, bytes.Replace(data, []byte(`"version":7`), []byte(`"version":9`), 1), 0o644)

	tests := []struct {
		name       string
		args       []string
		wantCode   int
		wantStdout string // contained in stdout
		wantStderr string // contained in stderr
	}{
		{"good", []string{"--key", key, "--node", "kiosk-3", okFile}, 0,
			"ok.signed: ok: version 7, not after " + future.UTC().Format(time.RFC3339) + ", for nodes kiosk-*; would apply default/web", ""},
		{"key directory", []string{"--key", dir, "--node", "kiosk-3", okFile}, 0, "would apply default/web", ""},
		{"empty bundle", []string{"--key", key, empty}, 0, "would apply nothing: every pod of the source stops", ""},
		{"wrong key", []string{"--key", wrongKey, "--node", "kiosk-3", okFile}, 1, "", "refused: bundle: bad signature"},
		{"tampered header", []string{"--key", key, "--node", "kiosk-3", tampered}, 1, "", "refused: bundle: bad signature"},
		{"other node", []string{"--key", key, "--node", "gateway", okFile}, 1, "", `is for nodes ["kiosk-*"], this node is "gateway"`},
		{"expired", []string{"--key", key, expired}, 1, "", "expired at"},
		{"older than the device's", []string{"--key", key, "--node", "kiosk-1", "--min-version", "8", okFile}, 1, "", "version 7 is older than 8"},
		{"invalid manifest", []string{"--key", key, invalid}, 1, "", "invalid.signed:7:"},
		{"no key", []string{okFile}, 2, "", "--key is required"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := Verify(tt.args, &stdout, &stderr)
			if code != tt.wantCode || !strings.Contains(stdout.String(), tt.wantStdout) || !strings.Contains(stderr.String(), tt.wantStderr) {
				t.Errorf("tug verify %q = %d\nstdout %q (want %q)\nstderr %q (want %q)", tt.args, code, stdout.String(), tt.wantStdout, stderr.String(), tt.wantStderr)
			}
		})
	}

	// tug validate reads the bundle's manifests, with the .signed file's
	// line numbers.
	var stdout, stderr bytes.Buffer
	if code := run([]string{"validate", okFile}, &stdout, &stderr); code != 0 || !strings.Contains(stdout.String(), "ok (default/web); signed bundle version 7") {
		t.Errorf("tug validate %s = %d: %q %q", okFile, code, stdout.String(), stderr.String())
	}
	stdout.Reset()
	stderr.Reset()
	if code := run([]string{"validate", invalid}, &stdout, &stderr); code != 1 || !strings.Contains(stderr.String(), invalid+":7:") {
		t.Errorf("tug validate %s = %d: %q, want an error at line 7", invalid, code, stderr.String())
	}
}
