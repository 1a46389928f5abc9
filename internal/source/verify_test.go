package source

import (
	"crypto/ed25519"
	"crypto/x509"
	"encoding/base64"
	"encoding/pem"
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
}
