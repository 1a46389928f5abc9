package offline

import (
	"context"
	"crypto/ed25519"
	"crypto/x509"
	"encoding/pem"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"testing"

	"tug/internal/policy"
)

// update rewrites the .want files of testdata/bad from what validate prints.
var update = flag.Bool("update", false, "rewrite the golden files under testdata/")

// testPolicy is the PolicyFunc of the tests. It protects no host path:
// agent/ passes the agent's own (agent's TestValidateWiring checks them).
func testPolicy(levels map[string]string, allowPrivileged, allowHostStateMounts bool) *policy.Policy {
	pl := &policy.Policy{Levels: map[string]policy.Level{}, Default: policy.Restricted,
		AllowPrivileged: allowPrivileged, AllowHostStateMounts: allowHostStateMounts}
	for src, level := range levels {
		pl.Levels[src] = policy.Level(level)
	}
	return pl
}

// testValidate is "tug validate" with testPolicy.
func testValidate(args []string, stdout, stderr io.Writer) int {
	return validate(testPolicy, args, stdout, stderr)
}

// run runs the subcommand args[0] of this package, as tug's main does.
func run(args []string, stdout, stderr io.Writer) int {
	switch args[0] {
	case "validate":
		return testValidate(args[1:], stdout, stderr)
	case "sign":
		return Sign(args[1:], stdout, stderr)
	case "verify":
		return Verify(args[1:], stdout, stderr)
	case "bundle":
		return Bundle(context.Background(), args[1:], stdout, stderr)
	}
	panic(fmt.Sprintf("no command %q", args[0]))
}

// keyPair writes a new ed25519 key pair into dir: key.pem (PKCS #8, what
// the signing commands' --key reads) and pub.pem (PKIX, what tug verify's
// --key and a device's --manifest-verify-key read).
func keyPair(t *testing.T, dir string) (pub ed25519.PublicKey, keyFile, pubFile string) {
	t.Helper()
	pub, priv, err := ed25519.GenerateKey(nil)
	if err != nil {
		t.Fatal(err)
	}
	pkcs8, _ := x509.MarshalPKCS8PrivateKey(priv)
	pkix, _ := x509.MarshalPKIXPublicKey(pub)
	keyFile, pubFile = filepath.Join(dir, "key.pem"), filepath.Join(dir, "pub.pem")
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: pkcs8}), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(pubFile, pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pkix}), 0o644); err != nil {
		t.Fatal(err)
	}
	return pub, keyFile, pubFile
}
