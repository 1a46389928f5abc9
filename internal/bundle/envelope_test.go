package bundle

import (
	"bytes"
	"crypto/ed25519"
	"errors"
	"strings"
	"testing"
	"time"

	"tug/internal/wave"
)

func TestEnvelope(t *testing.T) {
	pub, priv, _ := ed25519.GenerateKey(nil)
	other, _, _ := ed25519.GenerateKey(nil)
	at := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	body := []byte("apiVersion: v1\nkind: Pod\n")
	b, err := SealEnvelope(priv, EnvelopeHeader{Version: 3, NotAfter: at, Nodes: []string{"kiosk-*", "gw1"}}, body)
	if err != nil {
		t.Fatal(err)
	}
	wantHead := EnvelopeMagic + "\n" + `{"version":3,"notAfter":"2030-01-02T03:04:05Z","nodes":["kiosk-*","gw1"],"sha256":"` + sha256Hex(body) + `"}` + "\n"
	if !strings.HasPrefix(string(b), wantHead) || !bytes.HasSuffix(b, body) {
		t.Fatalf("sealed:\n%s", b)
	}
	env, err := ParseEnvelope(b)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(env.Body, body) || env.Header.Version != 3 || !env.Header.NotAfter.Equal(at) || string(env.Signed) != wantHead {
		t.Fatalf("parsed %+v", env)
	}
	if err := env.Verify([]ed25519.PublicKey{other, pub}); err != nil {
		t.Errorf("verify with the second key: %v", err)
	}
	if err := env.Verify([]ed25519.PublicKey{other}); !errors.Is(err, ErrBadSignature) {
		t.Errorf("verify with another key: %v", err)
	}
	for node, ok := range map[string]bool{"kiosk-7": true, "gw1": true, "gw2": false, "": false} {
		if err := env.ForNode(node); (err == nil) != ok || (err != nil && !errors.Is(err, ErrOtherNode)) {
			t.Errorf("ForNode(%q) = %v", node, err)
		}
	}
	if err := env.Fresh(at); err != nil {
		t.Errorf("Fresh at notAfter: %v", err)
	}
	if err := env.Fresh(at.Add(time.Second)); !errors.Is(err, ErrExpired) {
		t.Errorf("Fresh after notAfter: %v", err)
	}

	head := func(h string) []byte {
		return []byte(EnvelopeMagic + "\n" + h + "\n" + strings.Repeat("A", 86) + "==\n")
	}
	sum := sha256Hex(nil)
	tests := []struct {
		name string
		data []byte
		want error
	}{
		{"bare manifest", body, ErrNotEnvelope},
		{"empty", nil, ErrNotEnvelope},
		{"magic only", []byte(EnvelopeMagic + "\n"), ErrBadEnvelope},
		{"no signature line", []byte(EnvelopeMagic + "\n{}\n"), ErrBadEnvelope},
		{"long header", head(`{"version":1,"x":"` + strings.Repeat("a", MaxEnvelopeHeader) + `"}`), ErrBadEnvelope},
		{"unknown field", head(`{"version":1,"notAfter":"2030-01-01T00:00:00Z","sha256":"` + sum + `","labels":{"a":"b"}}`), ErrBadEnvelope},
		{"no version", head(`{"notAfter":"2030-01-01T00:00:00Z","sha256":"` + sum + `"}`), ErrBadEnvelope},
		{"no expiry", head(`{"version":1,"sha256":"` + sum + `"}`), ErrBadEnvelope},
		{"upper-case sha", head(`{"version":1,"notAfter":"2030-01-01T00:00:00Z","sha256":"` + strings.ToUpper(sum) + `"}`), ErrBadEnvelope},
		{"bad pattern", head(`{"version":1,"notAfter":"2030-01-01T00:00:00Z","nodes":["["],"sha256":"` + sum + `"}`), ErrBadEnvelope},
		{"trailing data", head(`{"version":1,"notAfter":"2030-01-01T00:00:00Z","sha256":"` + sum + `"} {}`), ErrBadEnvelope},
		{"negative version", head(`{"version":-1,"notAfter":"2030-01-01T00:00:00Z","sha256":"` + sum + `"}`), ErrBadEnvelope},
		{"bad signature line", []byte(EnvelopeMagic + "\n" + `{"version":1,"notAfter":"2030-01-01T00:00:00Z","sha256":"` + sum + `"}` + "\nnope\n"), ErrBadEnvelope},
		{"body changed", append(bytes.Clone(b), '\n'), ErrBadEnvelope},
	}
	for _, tc := range tests {
		if _, err := ParseEnvelope(tc.data); !errors.Is(err, tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, err, tc.want)
		}
	}
	if env, err := ParseEnvelope(head(`{"version":1,"notAfter":"2030-01-01T00:00:00Z","sha256":"` + sum + `"}`)); err != nil {
		t.Errorf("well-formed, empty body: %v", err)
	} else if env.Verify([]ed25519.PublicKey{pub}) == nil {
		t.Error("a signature of zeros verifies")
	}
	if _, err := SealEnvelope(priv, EnvelopeHeader{NotAfter: at}, body); err == nil {
		t.Error("sealed version 0")
	}
}

// FuzzEnvelope feeds bytes to the bundle parser: it must never panic, an
// error wraps one of its two sentinels, and what parses is consistent
// (the body matches the header's sha256, the signed bytes are a prefix)
// and verifies only with the key that signed it.
func FuzzEnvelope(f *testing.F) {
	_, priv, _ := ed25519.GenerateKey(nil)
	for _, body := range []string{"", "apiVersion: v1\nkind: Pod\n", "\x00\xff"} {
		b, err := SealEnvelope(priv, EnvelopeHeader{Version: 1, NotAfter: time.Unix(2e9, 0), Nodes: []string{"n*"}}, []byte(body))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte(EnvelopeMagic + "\n{}\n\n"))
	f.Add([]byte("apiVersion: v1\n"))
	pub := priv.Public().(ed25519.PublicKey)
	f.Fuzz(func(t *testing.T, data []byte) {
		env, err := ParseEnvelope(data)
		if err != nil {
			if !errors.Is(err, ErrNotEnvelope) && !errors.Is(err, ErrBadEnvelope) {
				t.Fatalf("error %v wraps no sentinel", err)
			}
			return
		}
		if sha256Hex(env.Body) != env.Header.SHA256 || !bytes.HasPrefix(data, env.Signed) || !bytes.HasSuffix(data, env.Body) {
			t.Fatalf("inconsistent envelope %+v", env.Header)
		}
		if env.Header.Version == 0 || env.Header.NotAfter.IsZero() {
			t.Fatalf("required field missing: %+v", env.Header)
		}
		_ = env.Verify([]ed25519.PublicKey{pub})
		_ = env.ForNode("node1")
	})
}

func TestEnvelopeWindows(t *testing.T) {
	_, priv, _ := ed25519.GenerateKey(nil)
	at := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	b, err := SealEnvelope(priv, EnvelopeHeader{Version: 1, NotAfter: at, UpdateWindow: "Sat 22:00-Sun 06:00 tz=UTC", DownloadWindow: "daily 01:00-05:00 tz=UTC"}, []byte("x"))
	if err != nil {
		t.Fatal(err)
	}
	env, err := ParseEnvelope(b)
	if err != nil {
		t.Fatal(err)
	}
	if env.Header.UpdateWindow != "Sat 22:00-Sun 06:00 tz=UTC" || env.Header.DownloadWindow != "daily 01:00-05:00 tz=UTC" {
		t.Fatalf("windows %+v", env.Header)
	}
	if _, err := SealEnvelope(priv, EnvelopeHeader{Version: 1, NotAfter: at, UpdateWindow: "Sat 25:00-Sun 06:00"}, []byte("x")); !errors.Is(err, ErrBadEnvelope) || !strings.Contains(err.Error(), "updateWindow") {
		t.Fatalf("a bad window: %v", err)
	}
}

// TestEnvelopeRollout: a plan and a halt travel signed in the header; a bad
// one is a bad envelope whose error names the field; an unsigned bundle's
// are dropped by Open (they name versions, which only a verified bundle
// has).
func TestEnvelopeRollout(t *testing.T) {
	pub, priv, _ := ed25519.GenerateKey(nil)
	at := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	body := []byte("apiVersion: v1\nkind: Pod\n")
	fifty := 50.0
	plan := &wave.Plan{Start: at.Add(-time.Hour), Waves: []wave.Wave{{Name: "canary", Labels: map[string]string{"ring": "canary"}}, {Share: &fifty, After: wave.Duration(time.Hour)}}}
	b, err := SealEnvelope(priv, EnvelopeHeader{Version: 7, NotAfter: at, Rollout: plan}, body)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), `"rollout":{"start":"2030-01-02T02:04:05Z","waves":[{"name":"canary","labels":{"ring":"canary"}},{"share":50,"after":"1h0m0s"}]}`) {
		t.Errorf("header:\n%s", b)
	}
	_, hdr, err := Open(b, Check{Keys: []ed25519.PublicKey{pub}, Now: at.Add(-time.Minute)})
	if err != nil || hdr.Rollout == nil || len(hdr.Rollout.Waves) != 2 || hdr.Rollout.Waves[1].After != wave.Duration(time.Hour) {
		t.Fatalf("Open: %+v, %v", hdr.Rollout, err)
	}
	if _, hdr, err := Open(b, Check{Now: at.Add(-time.Minute)}); err != nil || hdr.Rollout != nil || hdr.Version != 0 {
		t.Errorf("Open without keys: plan %+v, version %d, %v; want neither", hdr.Rollout, hdr.Version, err)
	}
	h, err := SealEnvelope(priv, EnvelopeHeader{Version: 8, NotAfter: at, Halt: &wave.Halt{Version: 7, Revert: true}}, body)
	if err != nil {
		t.Fatal(err)
	}
	if _, hdr, err := Open(h, Check{Keys: []ed25519.PublicKey{pub}, MinVersion: 7, Now: at.Add(-time.Minute)}); err != nil || hdr.Halt == nil || *hdr.Halt != (wave.Halt{Version: 7, Revert: true}) {
		t.Errorf("Open halt: %+v, %v", hdr.Halt, err)
	}
	bad := []struct {
		name  string
		line  string
		field string
	}{
		{"share out of range", `"rollout":{"start":"2030-01-01T00:00:00Z","waves":[{"share":101}]}`, "rollout.waves[0].share"},
		{"no start", `"rollout":{"waves":[{}]}`, "rollout.start"},
		{"unknown wave field", `"rollout":{"start":"2030-01-01T00:00:00Z","waves":[{"percent":5}]}`, "percent"},
		{"bad after", `"rollout":{"start":"2030-01-01T00:00:00Z","waves":[{"after":"soon"}]}`, "after"},
		{"halt of a newer version", `"halt":{"version":9}`, "halt.version"},
		{"halt and plan", `"halt":{"version":2},"rollout":{"start":"2030-01-01T00:00:00Z","waves":[{}]}`, "halt:"},
	}
	for _, tt := range bad {
		line := `{"version":3,"notAfter":"2030-01-02T03:04:05Z","sha256":"` + sha256Hex(body) + `",` + tt.line + `}`
		data := EnvelopeMagic + "\n" + line + "\n" + strings.Repeat("A", 86) + "==\n" + string(body)
		if _, err := ParseEnvelope([]byte(data)); !errors.Is(err, ErrBadEnvelope) || !strings.Contains(err.Error(), tt.field) {
			t.Errorf("%s: %v, want a bad envelope naming %s", tt.name, err, tt.field)
		}
	}
}
