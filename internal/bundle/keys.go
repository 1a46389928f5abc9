package bundle

import (
	"crypto/ed25519"
	"crypto/x509"
	"encoding/base64"
	"encoding/pem"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// Keys for signed bundles (see Envelope): ed25519 (RFC 8032).

// ErrBadSignature: no configured key verifies the signature.
var ErrBadSignature = errors.New("bundle: bad signature")

// ParsePublicKey reads an ed25519 public key: a PEM "PUBLIC KEY" block
// (PKIX, as `openssl pkey -pubout` writes it), or the standard base64 of the
// raw 32-byte key.
func ParsePublicKey(pemOrRaw []byte) (ed25519.PublicKey, error) {
	if block, _ := pem.Decode(pemOrRaw); block != nil {
		if block.Type != "PUBLIC KEY" {
			return nil, fmt.Errorf("bundle: public key: PEM block %q, want \"PUBLIC KEY\"", block.Type)
		}
		k, err := x509.ParsePKIXPublicKey(block.Bytes)
		if err != nil {
			return nil, fmt.Errorf("bundle: public key: %w", err)
		}
		pub, ok := k.(ed25519.PublicKey)
		if !ok {
			return nil, fmt.Errorf("bundle: public key: %T, want ed25519", k)
		}
		return pub, nil
	}
	raw, err := base64.StdEncoding.DecodeString(strings.TrimSpace(string(pemOrRaw)))
	if err != nil || len(raw) != ed25519.PublicKeySize {
		return nil, errors.New("bundle: public key: neither a PEM \"PUBLIC KEY\" nor base64 of 32 bytes")
	}
	return ed25519.PublicKey(raw), nil
}

// ParsePrivateKey reads an ed25519 private key: a PEM "PRIVATE KEY" block
// (PKCS #8, as `openssl genpkey -algorithm ed25519` writes it), or the
// standard base64 of the 32-byte seed or the 64-byte private key.
func ParsePrivateKey(pemOrRaw []byte) (ed25519.PrivateKey, error) {
	if block, _ := pem.Decode(pemOrRaw); block != nil {
		if block.Type != "PRIVATE KEY" {
			return nil, fmt.Errorf("bundle: private key: PEM block %q, want \"PRIVATE KEY\" (PKCS #8)", block.Type)
		}
		k, err := x509.ParsePKCS8PrivateKey(block.Bytes)
		if err != nil {
			return nil, fmt.Errorf("bundle: private key: %w", err)
		}
		priv, ok := k.(ed25519.PrivateKey)
		if !ok {
			return nil, fmt.Errorf("bundle: private key: %T, want ed25519", k)
		}
		return priv, nil
	}
	raw, err := base64.StdEncoding.DecodeString(strings.TrimSpace(string(pemOrRaw)))
	switch {
	case err == nil && len(raw) == ed25519.SeedSize:
		return ed25519.NewKeyFromSeed(raw), nil
	case err == nil && len(raw) == ed25519.PrivateKeySize:
		return ed25519.PrivateKey(raw), nil
	}
	return nil, errors.New("bundle: private key: neither a PEM \"PRIVATE KEY\" nor base64 of a 32-byte seed")
}

// LoadPublicKeys reads the verify keys: each path is a key file (see
// ParsePublicKey) or a directory whose *.pem files are each one key. Any of
// the keys verifies a bundle, so a fleet can roll to a new key without a
// device refusing what it is sent in between.
func LoadPublicKeys(paths []string) ([]ed25519.PublicKey, error) {
	var keys []ed25519.PublicKey
	for _, p := range paths {
		files := []string{p}
		if fi, err := os.Stat(p); err == nil && fi.IsDir() {
			if files, err = filepath.Glob(filepath.Join(p, "*.pem")); err != nil {
				return nil, fmt.Errorf("bundle: verify keys %s: %w", p, err)
			}
			if len(files) == 0 {
				return nil, fmt.Errorf("bundle: verify keys %s: no *.pem file", p)
			}
		}
		for _, f := range files {
			data, err := os.ReadFile(f)
			if err != nil {
				return nil, fmt.Errorf("bundle: verify key: %w", err)
			}
			k, err := ParsePublicKey(data)
			if err != nil {
				return nil, fmt.Errorf("bundle: verify key %s: %w", f, err)
			}
			keys = append(keys, k)
		}
	}
	return keys, nil
}
