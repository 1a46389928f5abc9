package statusreport

import (
	"crypto/ed25519"
	"crypto/sha256"
	"crypto/x509"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
	"tug/internal/bundle"
	"tug/internal/testutil"
)

func TestSigner(t *testing.T) {
	pub, priv, err := ed25519.GenerateKey(nil)
	if err != nil {
		t.Fatal(err)
	}
	seq := filepath.Join(t.TempDir(), "status", "sequence")
	epoch := time.Unix(0, 0) // a device with no clock yet
	s, err := NewSigner(priv, "kiosk-1", seq, epoch, testutil.Logger(t))
	if err != nil {
		t.Fatal(err)
	}
	der, _ := x509.MarshalPKIXPublicKey(pub)
	sum := sha256.Sum256(der)
	if want := "sha256:" + hex.EncodeToString(sum[:]); s.Fingerprint() != want {
		t.Errorf("Fingerprint() = %s, want %s", s.Fingerprint(), want)
	}
	var last uint64
	seal := func(s *Signer, now time.Time) bundle.EnvelopeHeader {
		t.Helper()
		body := []byte(`{"apiVersion":"tug.io/status/v1"}`)
		data, err := s.Seal(body, now)
		if err != nil {
			t.Fatal(err)
		}
		env, err := bundle.ParseEnvelope(data)
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
	s2, err := NewSigner(priv, "kiosk-1", seq, epoch, testutil.Logger(t))
	if err != nil {
		t.Fatal(err)
	}
	seal(s2, epoch)
	// A right clock lifts the sequence to the time.
	now := time.Date(2026, 11, 27, 6, 0, 0, 0, time.UTC)
	os.Remove(seq)
	s3, err := NewSigner(priv, "kiosk-1", seq, now, testutil.Logger(t))
	if err != nil {
		t.Fatal(err)
	}
	if h := seal(s3, now); h.Version != uint64(now.UnixMilli()) {
		t.Errorf("version %d, want %d", h.Version, now.UnixMilli())
	}
}

// TestSignerDamagedSequenceFile: a sequence file a power cut damaged
// never stops the signer: it says so (Warn naming the file), the clock
// gives the next version, and the file is rewritten with a number.
func TestSignerDamagedSequenceFile(t *testing.T) {
	_, priv, _ := ed25519.GenerateKey(nil)
	now := time.Date(2026, 11, 27, 6, 0, 0, 0, time.UTC)
	damages := append([]testutil.Damage{}, testutil.Damages...)
	cases := map[testutil.Damage]bool{} // the damages that must warn
	for _, d := range damages {
		cases[d] = d != testutil.DamageMissing
	}
	for _, d := range damages {
		t.Run(string(d), func(t *testing.T) {
			seq := filepath.Join(t.TempDir(), "status", "sequence")
			// A number of 13 digits, so that truncating it leaves a
			// shorter number below the clock, and a tug that used it.
			os.MkdirAll(filepath.Dir(seq), 0o700)
			os.WriteFile(seq, []byte("1700000000000\n"), 0o600)
			testutil.DamageFile(t, seq, d)
			log := testutil.NewWarnLog(t)
			s, err := NewSigner(priv, "n", seq, now, log.Logger)
			if err != nil {
				t.Fatalf("NewSigner: %v", err)
			}
			if got := log.Files(); cases[d] != slices.Contains(got, seq) {
				t.Errorf("warnings name %q, want %s named: %v", got, seq, cases[d])
			}
			data, err := s.Seal([]byte("{}"), now)
			if err != nil {
				t.Fatal(err)
			}
			env, err := bundle.ParseEnvelope(data)
			if err != nil {
				t.Fatal(err)
			}
			if env.Header.Version < uint64(now.UnixMilli()) {
				t.Errorf("version %d below the clock %d", env.Header.Version, now.UnixMilli())
			}
			b, err := os.ReadFile(seq)
			if err != nil {
				t.Fatal(err)
			}
			n, err := strconv.ParseUint(strings.TrimSpace(string(b)), 10, 64)
			if err != nil || n <= env.Header.Version {
				t.Errorf("sequence file %q after the seal of %d: %v", b, env.Header.Version, err)
			}
			// A second start reads the rewritten file with no warning.
			log2 := testutil.NewWarnLog(t)
			if _, err := NewSigner(priv, "n", seq, now, log2.Logger); err != nil || len(log2.Files()) != 0 {
				t.Errorf("second start: %v, warnings %q", err, log2.Files())
			}
		})
	}
}

// TestSignerSequenceOverflow: a number on disk too large to count up from
// is damage, not a sequence that wraps to zero.
func TestSignerSequenceOverflow(t *testing.T) {
	_, priv, _ := ed25519.GenerateKey(nil)
	now := time.Date(2026, 11, 27, 6, 0, 0, 0, time.UTC)
	for _, n := range []uint64{math.MaxUint64, math.MaxUint64 - sequenceBlock, maxSequence + 1} {
		seq := filepath.Join(t.TempDir(), "sequence")
		os.WriteFile(seq, fmt.Appendf(nil, "%d\n", n), 0o600)
		log := testutil.NewWarnLog(t)
		s, err := NewSigner(priv, "n", seq, now, log.Logger)
		if err != nil {
			t.Fatal(err)
		}
		if len(log.Files()) != 1 {
			t.Errorf("%d: warnings %q, want one", n, log.Files())
		}
		if _, err := s.Seal([]byte("{}"), now); err != nil {
			t.Errorf("%d: Seal: %v", n, err)
		}
	}
	// At the top of the range, a reservation fails instead of wrapping.
	s := &Signer{path: filepath.Join(t.TempDir(), "sequence"), next: maxSequence + 1}
	if err := s.reserve(); !errors.Is(err, ErrSequenceExhausted) {
		t.Errorf("reserve above maxSequence: %v", err)
	}
}
