package offline

import (
	"crypto/ed25519"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"tug/internal/bundle"
	"tug/internal/cli/cmdflag"
	"tug/internal/manifest"
	"tug/internal/pod"
)

const verifyUsage = `usage: tug verify --key PUB [--node NAME] [--min-version N] FILE.signed...

Checks each signed bundle as a device run with --manifest-verify-key PUB
would: its signature, that it has not expired, that it is for the node
(--node, default this host's name) and not older than --min-version (the
version the device runs: "tug pods -o json" and GET /manifests show it),
then its manifests with validate's messages; and prints what the device
would apply. PUB is a PEM "PUBLIC KEY" file or a directory of *.pem, as
for --manifest-verify-key. Exits 1 when a device would refuse a bundle.

`

// Verify is "tug verify".
func Verify(args []string, stdout, stderr io.Writer) int {
	fs := cmdflag.New("verify")
	keys := fs.StringArray("key", nil, "ed25519 public key `file` (PEM), or a directory of *.pem (repeatable: any one verifies)")
	host, _ := os.Hostname()
	node := fs.String("node", host, "the `name` of the node the bundle must be for")
	minVersion := fs.Uint64("min-version", 0, "refuse a bundle older than this `version` (what the device runs)")
	files, code, ok := cmdflag.Parse(fs, args, verifyUsage, stdout, stderr)
	if !ok {
		return code
	}
	if len(*keys) == 0 {
		return cmdflag.UsageError(stderr, verifyUsage, "verify: --key is required")
	}
	if len(files) == 0 {
		return cmdflag.UsageError(stderr, verifyUsage, "verify: no bundle to check")
	}
	pubs, err := bundle.LoadPublicKeys(*keys)
	if err != nil {
		fmt.Fprintf(stderr, "tug: verify: %v\n", err)
		return 1
	}
	rc := 0
	for _, file := range files {
		if err := verifyBundle(file, pubs, *node, *minVersion, time.Now(), stdout, stderr); err != nil {
			fmt.Fprintf(stderr, "tug: verify: %s: refused: %v\n", file, err)
			rc = 1
		}
	}
	return rc
}

// verifyBundle checks one bundle file and prints what it would apply.
func verifyBundle(file string, keys []ed25519.PublicKey, node string, minVersion uint64, now time.Time, stdout, stderr io.Writer) error {
	data, err := os.ReadFile(file)
	if err != nil {
		return err
	}
	env, err := bundle.ParseEnvelope(data)
	if err != nil {
		return err
	}
	if err := env.Verify(keys); err != nil {
		return err
	}
	if err := env.Fresh(now); err != nil {
		return err
	}
	if err := env.ForNode(node); err != nil {
		return err
	}
	if env.Header.Version < minVersion {
		return fmt.Errorf("version %d is older than %d, the version the device runs", env.Header.Version, minVersion)
	}
	pf, err := manifest.ParseFile(envelopeLines(env), manifest.ParseOptions{
		Origin:   pod.Origin{Source: "url", File: file},
		Hostname: node,
		Warn:     func(w *pod.FieldError) { fmt.Fprintln(stderr, "warning:", w) },
	})
	if err != nil {
		for _, e := range flatten(err) {
			fmt.Fprintln(stderr, e)
		}
		return errors.New("its manifests are not valid")
	}
	var names []string
	for _, p := range pf.Pods {
		names = append(names, p.Metadata.Namespace+"/"+p.Metadata.ManifestName)
	}
	for _, o := range pf.Objects {
		names = append(names, o.String())
	}
	apply := "would apply " + strings.Join(names, ", ")
	if len(names) == 0 {
		apply = "would apply nothing: every pod of the source stops"
	}
	fmt.Fprintf(stdout, "%s: ok: version %d, not after %s, for %s; %s\n", file, env.Header.Version,
		env.Header.NotAfter.UTC().Format(time.RFC3339), nodesOf(env.Header.Nodes), apply)
	return nil
}

// envelopeLines is the bundle's body with its three envelope lines
// replaced by empty ones, so that the manifest messages' line numbers are
// those of the .signed file.
func envelopeLines(env *bundle.Envelope) []byte {
	return append([]byte("\n\n\n"), env.Body...)
}

func nodesOf(nodes []string) string {
	if len(nodes) == 0 {
		return "every node"
	}
	return "nodes " + strings.Join(nodes, ", ")
}
