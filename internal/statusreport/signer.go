package statusreport

import (
	"crypto/ed25519"
	"crypto/sha256"
	"crypto/x509"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"tug/internal/atomicfile"
	"tug/internal/bundle"
)

// EnvelopeContentType is the Content-Type of a signed status document.
const EnvelopeContentType = "application/vnd.tug.envelope"

// SignatureValidity is how long after it is sealed a signed document's
// envelope says it is valid (its notAfter).
const SignatureValidity = 10 * time.Minute

// sequenceBlock is how many sequence numbers are reserved on disk at once:
// one write of the sequence file per this many documents (and one per
// start).
const sequenceBlock = 1000

// Signer seals status documents in tug's signed envelope (the format of
// `tug sign`, see bundle.SealEnvelope): version is a sequence number that
// only goes up, across restarts too; notAfter is SignatureValidity after
// sealing; nodes is the node's name. It is safe for concurrent use.
type Signer struct {
	key         ed25519.PrivateKey
	node        string
	fingerprint string

	mu       sync.Mutex
	path     string // the sequence file
	next     uint64 // the next version to use
	reserved uint64 // the versions below it are reserved on disk
}

// maxSequence is the highest number the sequence file may hold: a
// reservation adds sequenceBlock to what it read, and must not wrap.
const maxSequence = math.MaxUint64 - 2*sequenceBlock

// NewSigner returns the signer of node with key. seqFile holds the
// highest sequence number reserved so far; the first Seal creates it (with
// its directory) if missing, so that a disk that cannot be written makes
// sends fail, not tug's start. The first version is the larger of that
// number and now in Unix milliseconds, so that a device that lost the file
// but keeps a right clock still counts up. A file that holds no number (a
// power cut left it empty, NUL-filled or cut short) or one too large to
// count up from is logged (Warn, with its path) and counts as lost: the
// clock alone gives the first version, and the file is rewritten at once.
func NewSigner(key ed25519.PrivateKey, node, seqFile string, now time.Time, log *slog.Logger) (*Signer, error) {
	if len(key) != ed25519.PrivateKeySize {
		return nil, fmt.Errorf("statusreport: signing key: %d bytes, want %d", len(key), ed25519.PrivateKeySize)
	}
	fp, err := Fingerprint(key.Public().(ed25519.PublicKey))
	if err != nil {
		return nil, err
	}
	s := &Signer{key: key, node: node, fingerprint: fp, path: seqFile}
	data, err := os.ReadFile(seqFile)
	damaged := false
	switch {
	case errors.Is(err, os.ErrNotExist):
	case err != nil:
		return nil, fmt.Errorf("statusreport: sequence: %w", err)
	default:
		// The file is always written as digits and a newline: one
		// without its newline was cut short.
		digits, whole := strings.CutSuffix(string(data), "\n")
		n, perr := strconv.ParseUint(digits, 10, 64)
		switch {
		case perr != nil || !whole:
			damaged = true
			log.Warn("status sequence file damaged: it holds no number; the clock gives the next version", "file", seqFile, "bytes", len(data))
		case n > maxSequence:
			damaged = true
			log.Warn("status sequence file damaged: its number leaves no room to count up; the clock gives the next version", "file", seqFile, "sequence", n)
		default:
			s.next = n
		}
	}
	s.next = max(s.next, uint64(max(now.UnixMilli(), 0)), 1)
	if damaged {
		// Rewritten now, so that the damage is not met again; a disk
		// that cannot be written makes the sends fail, not the start.
		if err := s.reserve(); err != nil {
			log.Warn("status sequence file not rewritten", "file", seqFile, "err", err)
		}
	}
	return s, nil
}

// Fingerprint returns "sha256:" and the hex SHA-256 of pub in PKIX DER
// form, what `openssl pkey -pubout -outform DER | sha256sum` prints.
func Fingerprint(pub ed25519.PublicKey) (string, error) {
	der, err := x509.MarshalPKIXPublicKey(pub)
	if err != nil {
		return "", fmt.Errorf("statusreport: public key: %w", err)
	}
	sum := sha256.Sum256(der)
	return "sha256:" + hex.EncodeToString(sum[:]), nil
}

// Fingerprint returns the fingerprint of the signer's public key.
func (s *Signer) Fingerprint() string { return s.fingerprint }

// Seal returns body in a signed envelope with the next sequence number.
// A number is used once even when sealing or sending fails.
func (s *Signer) Seal(body []byte, now time.Time) ([]byte, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.next >= s.reserved {
		if err := s.reserve(); err != nil {
			return nil, err
		}
	}
	v := s.next
	s.next++
	return bundle.SealEnvelope(s.key, bundle.EnvelopeHeader{Version: v, NotAfter: now.Add(SignatureValidity).Truncate(time.Second), Nodes: []string{s.node}}, body)
}

// reserve writes next+sequenceBlock to the sequence file durably
// (atomicfile.Write: temporary file, fsync, rename, fsync of the
// directory).
func (s *Signer) reserve() error {
	if s.next > maxSequence {
		return fmt.Errorf("statusreport: sequence %d: %w", s.next, ErrSequenceExhausted)
	}
	r := s.next + sequenceBlock
	if err := atomicfile.Write(s.path, fmt.Appendf(nil, "%d\n", r), 0o600); err != nil {
		return fmt.Errorf("statusreport: sequence: %w", err)
	}
	s.reserved = r
	return nil
}

// ErrSequenceExhausted is returned by Seal when the sequence reached the
// highest number it may hold.
var ErrSequenceExhausted = errors.New("no sequence number left")
