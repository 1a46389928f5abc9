package bundle

import (
	"bytes"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path"
	"time"

	"tug/internal/wave"
	"tug/internal/window"
)

// Signed bundles. A bundle is one file, served as the body of the manifest
// URL:
//
//	tug-envelope-v1\n
//	{"version":42,"notAfter":"2026-12-01T00:00:00Z","nodes":["kiosk-*"],"sha256":"<hex>"}\n
//	<base64 ed25519 signature>\n
//	<body: the manifests, byte for byte>
//
// Line 1 is the magic. Line 2 is the header, one JSON object on one line
// (at most MaxEnvelopeHeader bytes); unknown fields are refused, so that a
// bundle restricted by a field a newer tug understands never runs on an
// older tug that would ignore it. Line 3 is the ed25519 signature (RFC 8032,
// pure) of the exact bytes of lines 1 and 2, newlines included: the signed
// bytes are the bytes served, so no JSON canonicalisation is involved. The
// header's sha256 (lowercase hex) binds the body, which is everything after
// line 3. Fields:
//
//   - version (required, ≥ 1): never goes down; a bundle older than the one
//     applied is refused, an equal one is accepted (a re-fetch).
//   - notAfter (required, RFC 3339): a bundle fetched after this instant is
//     refused. What was accepted before keeps running.
//   - nodes (optional): node names (path.Match patterns, e.g. "kiosk-*")
//     of the devices the bundle is for; absent or empty means any node.
//   - sha256 (required): of the body.
//   - updateWindow, downloadWindow (optional): the times at which a device
//     may apply the bundle's content and pull its images, replacing the
//     device's --update-window and --download-window (package window's
//     syntax). A tug that does not know these fields refuses the bundle
//     (unknown fields are refused): a fleet that sets them needs every
//     device on a tug that reads them. A window that does not parse on
//     the device makes the bundle bad content, as any bad header field.
//   - rollout (optional): the rollout plan (package wave): a start time and
//     ordered waves, each selecting devices by node labels and/or a share
//     of the fleet, each opening some time after the start. A device
//     holds the content until its wave and its update window are open.
//   - halt (optional): {"version": N, "revert": bool}: this bundle halts
//     the rollout of version N (lower than its own). A device that has not
//     applied N keeps what it runs; one that applied N keeps it, unless
//     revert, then it applies this bundle's content (which the fleet makes
//     the last good version's manifests). A bundle carries a plan or a
//     halt, not both.
//
// A tug that does not know rollout or halt refuses the bundle (unknown
// fields): it keeps its current content and reports bad content. A fleet
// updates tug before it publishes its first plan.

// EnvelopeMagic is the first line of a signed bundle.
const EnvelopeMagic = "tug-envelope-v1"

// MaxEnvelopeHeader bounds the header line.
const MaxEnvelopeHeader = 4 << 10

// EnvelopeHeader is line 2 of a signed bundle.
type EnvelopeHeader struct {
	Version  uint64    `json:"version"`
	NotAfter time.Time `json:"notAfter"`
	Nodes    []string  `json:"nodes,omitempty"`
	SHA256   string    `json:"sha256"`
	// UpdateWindow and DownloadWindow replace the device's update and
	// download windows for this bundle's content (package window's
	// syntax); "" leaves the device's.
	UpdateWindow   string `json:"updateWindow,omitempty"`
	DownloadWindow string `json:"downloadWindow,omitempty"`
	// Rollout is the rollout plan; nil: every device at once.
	Rollout *wave.Plan `json:"rollout,omitempty"`
	// Halt halts the rollout of an older version; nil: none.
	Halt *wave.Halt `json:"halt,omitempty"`
}

// Envelope is a parsed bundle. Parsing checks its structure and that the
// body matches the header's sha256, not the signature (see Verify).
type Envelope struct {
	Header EnvelopeHeader
	// Signed is the bytes the signature covers (lines 1 and 2).
	Signed    []byte
	Signature []byte
	Body      []byte
}

// IsEnvelope reports whether data starts with the envelope magic line.
func IsEnvelope(data []byte) bool {
	return bytes.HasPrefix(data, []byte(EnvelopeMagic+"\n"))
}

// ParseEnvelope parses a signed bundle. Errors wrap ErrNotEnvelope (no
// magic line) or ErrBadEnvelope. The returned slices alias data.
func ParseEnvelope(data []byte) (*Envelope, error) {
	if !IsEnvelope(data) {
		return nil, ErrNotEnvelope
	}
	rest := data[len(EnvelopeMagic)+1:]
	i := bytes.IndexByte(rest, '\n')
	if i < 0 || i > MaxEnvelopeHeader {
		return nil, fmt.Errorf("%w: no header line of at most %d bytes", ErrBadEnvelope, MaxEnvelopeHeader)
	}
	line := rest[:i]
	signed := data[:len(EnvelopeMagic)+1+i+1]
	rest = rest[i+1:]
	j := bytes.IndexByte(rest, '\n')
	if j < 0 || j > 2*base64.StdEncoding.EncodedLen(ed25519.SignatureSize) {
		return nil, fmt.Errorf("%w: no signature line", ErrBadEnvelope)
	}
	sig, err := base64.StdEncoding.DecodeString(string(bytes.TrimSpace(rest[:j])))
	if err != nil || len(sig) != ed25519.SignatureSize {
		return nil, fmt.Errorf("%w: signature line is not base64 of %d bytes", ErrBadEnvelope, ed25519.SignatureSize)
	}
	body := rest[j+1:]
	hdr, err := parseEnvelopeHeader(line)
	if err != nil {
		return nil, err
	}
	if sha256Hex(body) != hdr.SHA256 {
		return nil, fmt.Errorf("%w: body sha256 is not the header's", ErrBadEnvelope)
	}
	return &Envelope{Header: hdr, Signed: signed, Signature: sig, Body: body}, nil
}

func parseEnvelopeHeader(line []byte) (EnvelopeHeader, error) {
	var h EnvelopeHeader
	dec := json.NewDecoder(bytes.NewReader(line))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&h); err != nil {
		return h, fmt.Errorf("%w: header: %s", ErrBadEnvelope, truncate(err.Error(), 200))
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return h, fmt.Errorf("%w: header: data after the JSON object", ErrBadEnvelope)
	}
	var errs []error
	if h.Version == 0 {
		errs = append(errs, errors.New("version: required (at least 1)"))
	}
	if h.NotAfter.IsZero() {
		errs = append(errs, errors.New("notAfter: required"))
	}
	if b, err := hex.DecodeString(h.SHA256); err != nil || len(b) != 32 || h.SHA256 != hex.EncodeToString(b) {
		errs = append(errs, errors.New("sha256: want 64 lowercase hex digits"))
	}
	for _, n := range h.Nodes {
		if _, err := path.Match(n, ""); err != nil || n == "" {
			errs = append(errs, fmt.Errorf("nodes: %q is not a name or pattern", truncate(n, 64)))
			break
		}
	}
	for name, w := range map[string]string{"updateWindow": h.UpdateWindow, "downloadWindow": h.DownloadWindow} {
		if _, err := window.Parse(w); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", name, err))
		}
	}
	if h.Rollout != nil {
		errs = append(errs, h.Rollout.Validate())
	}
	if h.Halt != nil {
		errs = append(errs, wave.ValidateHalt(h.Halt, h.Version))
		if h.Rollout != nil {
			errs = append(errs, errors.New("halt: a bundle that halts a rollout carries no rollout plan"))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return h, fmt.Errorf("%w: header: %w", ErrBadEnvelope, err)
	}
	return h, nil
}

// SealEnvelope returns the signed bundle of body: hdr with its SHA256 set,
// signed with priv.
func SealEnvelope(priv ed25519.PrivateKey, hdr EnvelopeHeader, body []byte) ([]byte, error) {
	hdr.SHA256 = sha256Hex(body)
	hdr.NotAfter = hdr.NotAfter.UTC()
	line, err := json.Marshal(hdr)
	if err != nil {
		return nil, fmt.Errorf("bundle: envelope header: %w", err)
	}
	if len(line) > MaxEnvelopeHeader {
		return nil, fmt.Errorf("bundle: envelope header: %d bytes, at most %d", len(line), MaxEnvelopeHeader)
	}
	if _, err := parseEnvelopeHeader(line); err != nil {
		return nil, err
	}
	var b bytes.Buffer
	b.WriteString(EnvelopeMagic + "\n")
	b.Write(line)
	b.WriteByte('\n')
	sig := ed25519.Sign(priv, b.Bytes())
	b.WriteString(base64.StdEncoding.EncodeToString(sig))
	b.WriteByte('\n')
	b.Write(body)
	return b.Bytes(), nil
}

// Verify checks the signature with each key in turn; one that verifies is
// enough. It returns ErrBadSignature when none does.
func (e *Envelope) Verify(keys []ed25519.PublicKey) error {
	for _, k := range keys {
		if ed25519.Verify(k, e.Signed, e.Signature) {
			return nil
		}
	}
	return fmt.Errorf("%w: no configured key verifies the bundle", ErrBadSignature)
}

// ForNode checks the node selector against the node's name. It returns an
// error wrapping ErrOtherNode when the bundle is for other nodes.
func (e *Envelope) ForNode(node string) error {
	if len(e.Header.Nodes) == 0 {
		return nil
	}
	for _, n := range e.Header.Nodes {
		if ok, _ := path.Match(n, node); ok {
			return nil
		}
	}
	return fmt.Errorf("%w: bundle version %d is for nodes %q, this node is %q", ErrOtherNode, e.Header.Version, e.Header.Nodes, node)
}

// Fresh checks that the bundle has not expired at now.
func (e *Envelope) Fresh(now time.Time) error {
	if now.After(e.Header.NotAfter) {
		return fmt.Errorf("%w: bundle version %d expired at %s", ErrExpired, e.Header.Version, e.Header.NotAfter.Format(time.RFC3339))
	}
	return nil
}

// truncate cuts s to at most n bytes (plus an ellipsis), for error texts
// that echo what a server sent.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

func sha256Hex(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}
