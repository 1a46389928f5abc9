package source

import (
	"crypto/ed25519"
	"crypto/x509"
	"encoding/base64"
	"encoding/pem"
	"errors"
	"testing"
)

func TestKeysAndSignatures(t *testing.T) {
	pub, priv, err := ed25519.GenerateKey(nil)
	if err != nil {
		t.Fatal(err)
	}
	pkix, _ := x509.MarshalPKIXPublicKey(pub)
	pkcs8, _ := x509.MarshalPKCS8PrivateKey(priv)
	pubPEM := pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pkix})
	privPEM := pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: pkcs8})

	for name, in := range map[string][]byte{
		"pem": pubPEM,
		"raw": []byte(base64.StdEncoding.EncodeToString(pub) + "\n"),
	} {
		got, err := ParsePublicKey(in)
		if err != nil || !got.Equal(pub) {
			t.Errorf("ParsePublicKey(%s): %v", name, err)
		}
	}
	for name, in := range map[string][]byte{
		"pem":  privPEM,
		"seed": []byte(base64.StdEncoding.EncodeToString(priv.Seed())),
	} {
		got, err := ParsePrivateKey(in)
		if err != nil || !got.Equal(priv) {
			t.Errorf("ParsePrivateKey(%s): %v", name, err)
		}
	}
	for name, in := range map[string][]byte{
		"private as public": privPEM,
		"short raw":         []byte("AAAA"),
		"garbage":           []byte("hello"),
		"bad pem":           pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: []byte{1}}),
	} {
		if _, err := ParsePublicKey(in); err == nil {
			t.Errorf("ParsePublicKey(%s): no error", name)
		}
	}
	if _, err := ParsePrivateKey(pubPEM); err == nil {
		t.Error("ParsePrivateKey(public PEM): no error")
	}

	body := []byte("apiVersion: v1\n")
	sig := Sign(priv, body)
	for _, tc := range []struct {
		body []byte
		sig  string
		want error
	}{
		{body, sig, nil},
		{body, "  " + sig + "\n", nil},
		{body, "", ErrNoSignature},
		{body, " \n", ErrNoSignature},
		{append(body, ' '), sig, ErrBadSignature},
		{body, "abc", ErrBadSignature},
		{body, base64.StdEncoding.EncodeToString(make([]byte, 64)), ErrBadSignature},
	} {
		if err := verify(pub, tc.body, tc.sig); !errors.Is(err, tc.want) || (tc.want == nil && err != nil) {
			t.Errorf("verify(%q, %q) = %v, want %v", tc.body, tc.sig, err, tc.want)
		}
	}
}
