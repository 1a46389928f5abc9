package statusreport

import (
	"crypto/ed25519"
	"crypto/sha256"
	"crypto/x509"
	"encoding/hex"
	"os"
	"path/filepath"
	"testing"
	"time"

	"tug/internal/source"
)

func TestSigner(t *testing.T) {
	pub, priv, err := ed25519.GenerateKey(nil)
	if err != nil {
		t.Fatal(err)
	}
	seq := filepath.Join(t.TempDir(), "status", "sequence")
	epoch := time.Unix(0, 0) // a device with no clock yet
	s, err := NewSigner(priv, "kiosk-1", seq, epoch)
	if err != nil {
		t.Fatal(err)
	}
	der, _ := x509.MarshalPKIXPublicKey(pub)
	sum := sha256.Sum256(der)
	if want := "sha256:" + hex.EncodeToString(sum[:]); s.Fingerprint() != want {
		t.Errorf("Fingerprint() = %s, want %s", s.Fingerprint(), want)
	}
	var last uint64
	seal := func(s *Signer, now time.Time) source.EnvelopeHeader {
		t.Helper()
		body := []byte(`{"apiVersion":"tug.io/status/v1"}`)
		data, err := s.Seal(body, now)
		if err != nil {
			t.Fatal(err)
		}
		env, err := source.ParseEnvelope(data)
		if err != nil {
			t.Fatal(err)
		}
		if err := env.Verify([]ed25519.PublicKey{pub}); err != nil {
			t.Fatal(err)
		}
		if err := env.ForNode("kiosk-1"); err != nil || len(env.Header.Nodes) != 1 {
			t.Errorf("nodes %q: %v", env.Header.Nodes, err)
		}
		if string(env.Body) != string(body) {
			t.Errorf("body %q", env.Body)
		}
		if !env.Header.NotAfter.Equal(now.Add(SignatureValidity)) {
			t.Errorf("notAfter %v", env.Header.NotAfter)
		}
		if env.Header.Version <= last {
			t.Fatalf("version %d after %d", env.Header.Version, last)
		}
		last = env.Header.Version
		return env.Header
	}
	for range sequenceBlock + 5 { // across a reservation
		seal(s, epoch)
	}
	// A restart with the clock still behind goes on above what was used.
	s2, err := NewSigner(priv, "kiosk-1", seq, epoch)
	if err != nil {
		t.Fatal(err)
	}
	seal(s2, epoch)
	// A right clock lifts the sequence to the time.
	now := time.Date(2026, 11, 27, 6, 0, 0, 0, time.UTC)
	os.Remove(seq)
	s3, err := NewSigner(priv, "kiosk-1", seq, now)
	if err != nil {
		t.Fatal(err)
	}
	if h := seal(s3, now); h.Version != uint64(now.UnixMilli()) {
		t.Errorf("version %d, want %d", h.Version, now.UnixMilli())
	}
}

func TestSignerBadSequenceFile(t *testing.T) {
	_, priv, _ := ed25519.GenerateKey(nil)
	seq := filepath.Join(t.TempDir(), "sequence")
	os.WriteFile(seq, []byte("twelve\n"), 0o600)
	if _, err := NewSigner(priv, "n", seq, time.Now()); err == nil {
		t.Fatal("a sequence file that is not a number is accepted")
	}
}
