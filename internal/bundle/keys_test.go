package bundle

import (
	"crypto/ed25519"
	"crypto/x509"
	"encoding/base64"
	"encoding/pem"
	"os"
	"path/filepath"
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

func TestLoadPublicKeys(t *testing.T) {
	dir := t.TempDir()
	var want []ed25519.PublicKey
	for _, name := range []string{"a.pem", "b.pem"} {
		pub, _, _ := ed25519.GenerateKey(nil)
		pk, _ := x509.MarshalPKIXPublicKey(pub)
		os.WriteFile(filepath.Join(dir, name), pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pk}), 0o644)
		want = append(want, pub)
	}
	os.WriteFile(filepath.Join(dir, "README"), []byte("not a key"), 0o644)
	single := filepath.Join(t.TempDir(), "c.pub")
	pub, _, _ := ed25519.GenerateKey(nil)
	os.WriteFile(single, []byte(base64.StdEncoding.EncodeToString(pub)), 0o644)
	keys, err := LoadPublicKeys([]string{dir, single})
	if err != nil {
		t.Fatal(err)
	}
	if len(keys) != 3 || !keys[0].Equal(want[0]) || !keys[1].Equal(want[1]) || !keys[2].Equal(pub) {
		t.Fatalf("keys %d", len(keys))
	}
	for _, p := range []string{t.TempDir(), filepath.Join(dir, "README"), filepath.Join(dir, "none")} {
		if _, err := LoadPublicKeys([]string{p}); err == nil {
			t.Errorf("LoadPublicKeys(%s): no error", p)
		}
	}
}
