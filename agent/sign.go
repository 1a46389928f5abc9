package main

import (
	"flag"
	"fmt"
	"io"
	"os"

	"tug/internal/source"
)

const signUsage = `usage: tug sign --key KEY FILE...

Writes FILE.sig for each FILE: the base64 ed25519 signature of its exact
bytes, as a manifest URL server publishes it next to the manifest (or sends
in the X-Tug-Signature header). KEY is a PEM "PRIVATE KEY" (PKCS #8, as
"openssl genpkey -algorithm ed25519" writes it). The agent checks it with
--manifest-verify-key, the matching PEM "PUBLIC KEY" ("openssl pkey -pubout").

`

// signCmd implements "tug sign".
func signCmd(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("tug sign", flag.ContinueOnError)
	key := fs.String("key", "", "ed25519 private key file (PEM PKCS #8)")
	files, code, ok := parseFlags(fs, args, signUsage, stderr)
	if !ok {
		return code
	}
	if *key == "" {
		return usageError(stderr, signUsage, "sign: --key is required")
	}
	if len(files) == 0 {
		return usageError(stderr, signUsage, "sign: no file to sign")
	}
	data, err := os.ReadFile(*key)
	if err != nil {
		fmt.Fprintf(stderr, "tug: sign: %v\n", err)
		return 1
	}
	priv, err := source.ParsePrivateKey(data)
	if err != nil {
		fmt.Fprintf(stderr, "tug: sign: %s: %v\n", *key, err)
		return 1
	}
	rc := 0
	for _, file := range files {
		body, err := os.ReadFile(file)
		if err != nil {
			fmt.Fprintf(stderr, "tug: sign: %v\n", err)
			rc = 1
			continue
		}
		if err := os.WriteFile(file+".sig", []byte(source.Sign(priv, body)+"\n"), 0o644); err != nil {
			fmt.Fprintf(stderr, "tug: sign: %v\n", err)
			rc = 1
			continue
		}
		fmt.Fprintf(stdout, "%s.sig\n", file)
	}
	return rc
}
