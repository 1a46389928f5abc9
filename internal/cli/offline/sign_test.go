package offline

import (
	"bytes"
	"crypto/ed25519"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"tug/internal/bundle"
	"tug/internal/testutil"
)

func TestSignCmd(t *testing.T) {
	dir := t.TempDir()
	vpub, keyFile, _ := keyPair(t, dir)
	a, b := filepath.Join(dir, "a.yaml"), filepath.Join(dir, "b.yaml")
	os.WriteFile(a, []byte("apiVersion: v1\nkind: Pod\nmetadata: {name: web}\nspec: {containers: [{name: app, image: busybox}]}\n"), 0o644)
	os.WriteFile(b, nil, 0o644) // an empty bundle: the device runs nothing from it
	open := func(f string) *bundle.Envelope {
		t.Helper()
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		env, err := bundle.ParseEnvelope(data)
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		if err := env.Verify([]ed25519.PublicKey{vpub}); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		return env
	}

	var out, errb bytes.Buffer
	before := time.Now()
	if rc := Sign([]string{"--key", keyFile, a, b}, &out, &errb); rc != 0 {
		t.Fatalf("rc %d: %s", rc, errb.String())
	}
	for _, f := range []string{a, b} {
		body, _ := os.ReadFile(f)
		env := open(f + ".signed")
		if !bytes.Equal(env.Body, body) || env.Header.Version < uint64(before.Unix()) || len(env.Header.Nodes) != 0 ||
			env.Header.NotAfter.Before(before.Add(29*24*time.Hour)) {
			t.Fatalf("%s: header %+v", f, env.Header)
		}
	}
	o := filepath.Join(dir, "out.bundle")
	if rc := Sign([]string{"--key", keyFile, "--version", "7", "--not-after", "2099-01-01T00:00:00Z", "--node", "kiosk-*", "--node", "gw1",
		"--update-window", "Sat 22:00-Sun 06:00 tz=UTC", "--download-window", "daily 01:00-05:00", "-o", o, a}, &out, &errb); rc != 0 {
		t.Fatalf("rc %d: %s", rc, errb.String())
	}
	env := open(o)
	if env.Header.Version != 7 || env.Header.NotAfter.Year() != 2099 || strings.Join(env.Header.Nodes, ",") != "kiosk-*,gw1" ||
		env.Header.UpdateWindow != "Sat 22:00-Sun 06:00 tz=UTC" || env.Header.DownloadWindow != "daily 01:00-05:00" {
		t.Fatalf("header %+v", env.Header)
	}

	for _, tc := range []struct {
		args []string
		rc   int
		msg  string
	}{
		{[]string{a}, 2, "--key is required"},
		{[]string{"--key", keyFile}, 2, "no file"},
		{[]string{"--key", keyFile, "-o", o, a, b}, 2, "one FILE"},
		{[]string{"--key", keyFile, "--expires", "-1h", a}, 2, "expired"},
		{[]string{"--key", keyFile, "--not-after", "tomorrow", a}, 2, "not-after"},
		{[]string{"--key", keyFile, "--node", "[", a}, 1, "nodes"},
		{[]string{"--key", keyFile, "--update-window", "Mon 25:00-26:00", a}, 1, "updateWindow"},
		{[]string{"--key", filepath.Join(dir, "nope"), a}, 1, "no such file"},
		{[]string{"--key", a, a}, 1, "private key"},
		{[]string{"--key", keyFile, filepath.Join(dir, "missing.yaml")}, 1, "missing.yaml"},
	} {
		errb.Reset()
		if rc := Sign(tc.args, &out, &errb); rc != tc.rc || !strings.Contains(errb.String(), tc.msg) {
			t.Errorf("sign %v: rc %d, stderr %q; want %d with %q", tc.args, rc, errb.String(), tc.rc, tc.msg)
		}
	}
}

// TestSignMatchesOpenSSL checks the key formats and the signature against
// openssl (the README tells operators to make keys with it): an openssl key
// signs with tug, and openssl verifies the bundle's signature (of its first
// two lines) with the public key it extracted. Without openssl it skips, and fails in CI.
func TestSignMatchesOpenSSL(t *testing.T) {
	testutil.RequireCommand(t, "openssl")
	dir := t.TempDir()
	run := func(args ...string) {
		t.Helper()
		if out, err := exec.Command("openssl", args...).CombinedOutput(); err != nil {
			t.Fatalf("openssl %v: %v: %s", args, err, out) // OpenSSL >= 3.0 has ed25519 and -rawin
		}
	}
	key, pubFile, file := filepath.Join(dir, "key.pem"), filepath.Join(dir, "pub.pem"), filepath.Join(dir, "pods.yaml")
	run("genpkey", "-algorithm", "ed25519", "-out", key)
	run("pkey", "-in", key, "-pubout", "-out", pubFile)
	os.WriteFile(file, []byte("apiVersion: v1\nkind: PodList\nitems: []\n"), 0o644)
	var out, errb bytes.Buffer
	if rc := Sign([]string{"--key", key, file}, &out, &errb); rc != 0 {
		t.Fatalf("rc %d: %s", rc, errb.String())
	}
	sealed, _ := os.ReadFile(file + ".signed")
	env, err := bundle.ParseEnvelope(sealed)
	if err != nil {
		t.Fatal(err)
	}
	sig, signed := env.Signature, filepath.Join(dir, "signed.bin")
	os.WriteFile(signed, env.Signed, 0o644)
	sigBin := filepath.Join(dir, "sig.bin")
	os.WriteFile(sigBin, sig, 0o644)
	if out, err := exec.Command("openssl", "pkeyutl", "-verify", "-pubin", "-inkey", pubFile, "-rawin", "-in", signed, "-sigfile", sigBin).CombinedOutput(); err != nil {
		t.Fatalf("openssl rejects tug's signature: %v: %s", err, out)
	}
	pemPub, _ := os.ReadFile(pubFile)
	pub, err := bundle.ParsePublicKey(pemPub)
	if err != nil {
		t.Fatal(err)
	}
	if !ed25519.Verify(pub, env.Signed, sig) {
		t.Fatal("openssl public key does not verify")
	}
}

// TestSignRefusesInvalidManifest: a bundle that a device would refuse is
// not signed; the errors are validate's, at file:line:col.
func TestSignRefusesInvalidManifest(t *testing.T) {
	dir := t.TempDir()
	_, keyFile, _ := keyPair(t, dir)
	file := filepath.Join(dir, "pods.yaml")
	os.WriteFile(file, []byte("apiVersion: v1\nkind: Pod\nmetadata: {name: web}\nspec: {containers: [{name: app, imagee: busybox}]}\n"), 0o644)
	var out, errb bytes.Buffer
	if rc := Sign([]string{"--key", keyFile, file}, &out, &errb); rc != 1 {
		t.Fatalf("rc %d, want 1; stderr: %s", rc, errb.String())
	}
	if !strings.Contains(errb.String(), file+":4:") || !strings.Contains(errb.String(), "imagee") {
		t.Errorf("stderr %q does not name the field at its line", errb.String())
	}
	if _, err := os.Stat(file + ".signed"); err == nil {
		t.Error("an invalid manifest was signed")
	}
}
