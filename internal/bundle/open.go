package bundle

import (
	"crypto/ed25519"
	"fmt"
	"time"
)

// Check is what a served body is checked against before its
// manifests are taken in: the URL source, the OCI source and "tug bundle
// pull" check through Open, so the three agree.
type Check struct {
	// Keys, when set, make a signed bundle (see Envelope) mandatory; any
	// one key verifies it.
	Keys []ed25519.PublicKey
	// Node is matched against the bundle's node selector.
	Node string
	// MinVersion is the version floor: the highest version accepted.
	MinVersion uint64
	// Now is checked against the bundle's expiry; zero: not checked (a
	// checkpoint, accepted while it was fresh).
	Now time.Time
}

// Open checks a body and returns the manifests in it and the
// envelope's header. With keys it must be a signed bundle: verified, for
// this node, fresh at Now (unless Now is zero), and not older than
// MinVersion. Without keys, a bare body is the manifests; a bundle is
// unwrapped and its nodes and expiry checked, but its version is neither
// enforced nor kept (returned as 0): an unauthenticated header must not set
// a floor that freezes the device; nor are its rollout plan and halt, which
// name versions (returned as nil). The returned body aliases body.
func Open(body []byte, c Check) ([]byte, EnvelopeHeader, error) {
	keys := len(c.Keys) > 0
	if !keys && !IsEnvelope(body) {
		return body, EnvelopeHeader{}, nil
	}
	env, err := ParseEnvelope(body)
	if err != nil {
		return nil, EnvelopeHeader{}, err
	}
	if keys {
		if err := env.Verify(c.Keys); err != nil {
			return nil, EnvelopeHeader{}, err
		}
	}
	if err := env.ForNode(c.Node); err != nil {
		return nil, EnvelopeHeader{}, err
	}
	if !c.Now.IsZero() {
		if err := env.Fresh(c.Now); err != nil {
			return nil, EnvelopeHeader{}, err
		}
	}
	hdr := env.Header
	if !keys {
		hdr.Version, hdr.Rollout, hdr.Halt = 0, nil, nil
	}
	if hdr.Version < c.MinVersion {
		return nil, EnvelopeHeader{}, fmt.Errorf("%w: version %d, applied %d", ErrRollback, hdr.Version, c.MinVersion)
	}
	return env.Body, hdr, nil
}
