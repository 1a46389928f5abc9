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
	"tug/internal/policy"
	"tug/internal/wave"
)

const verifyUsage = `usage: tug verify --key PUB [--node NAME] [--labels K=V,...] [--min-version N] FILE.signed...

Checks each signed bundle as a device run with --manifest-verify-key PUB
would: its signature, that it has not expired, that it is for the node
(--node, default this host's name) and not older than --min-version (the
version the device runs: "tug pods -o json" and GET /manifests show it),
then its manifests with validate's messages; and prints what the device
would apply; with a rollout plan or a halt, what a device named --node
with the labels --labels (its --node-labels) would do and when. PUB is a PEM "PUBLIC KEY" file or a directory of *.pem, as
for --manifest-verify-key. A signed tug release ("tug release sign") is
checked the same way and said as one: its version, architecture and
sha256, and, with a plan or a halt, when the device would install it ahead
and switch to it. Exits 1 when a device would refuse a bundle.

`

// Verify is "tug verify".
func Verify(args []string, stdout, stderr io.Writer) int {
	fs := cmdflag.New("verify")
	keys := fs.StringArray("key", nil, "ed25519 public key `file` (PEM), or a directory of *.pem (repeatable: any one verifies)")
	host, _ := os.Hostname()
	node := fs.String("node", host, "the `name` of the node the bundle must be for")
	minVersion := fs.Uint64("min-version", 0, "refuse a bundle older than this `version` (what the device runs)")
	labelFlag := fs.String("labels", "", "the node's `labels` (key=value,...), as its --node-labels, for the bundle's rollout plan")
	files, code, ok := cmdflag.Parse(fs, args, verifyUsage, stdout, stderr)
	if !ok {
		return code
	}
	labels, err := deviceLabels(*node, *labelFlag)
	if err != nil {
		return cmdflag.UsageError(stderr, verifyUsage, "verify: --labels: "+err.Error())
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
		if err := verifyBundle(file, pubs, *node, labels, *minVersion, time.Now(), stdout, stderr); err != nil {
			fmt.Fprintf(stderr, "tug: verify: %s: refused: %v\n", file, err)
			rc = 1
		}
	}
	return rc
}

// verifyBundle checks one bundle file and prints what it would apply.
func verifyBundle(file string, keys []ed25519.PublicKey, node string, labels map[string]string, minVersion uint64, now time.Time, stdout, stderr io.Writer) error {
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
	if arch, err := bundle.ELFArch(env.Body); err == nil {
		// A release of tug ("tug release sign"): a binary, not manifests.
		fmt.Fprintf(stdout, "%s: ok: release version %d, linux/%s, sha256 %s, not after %s, for %s; a device of that architecture running an older tug would install it\n",
			file, env.Header.Version, arch, env.Header.SHA256, env.Header.NotAfter.UTC().Format(time.RFC3339), nodesOf(env.Header.Nodes))
		printRollout(stdout, env.Header, node, labels, now, releaseVerbs)
		return nil
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
	printRollout(stdout, env.Header, node, labels, now, bundleVerbs)
	return nil
}

// rolloutVerbs are the words printRollout says what a device does with.
type rolloutVerbs struct {
	apply, ahead, kept, keeps, revert string
}

var (
	bundleVerbs = rolloutVerbs{
		apply:  "apply",
		ahead:  "pull the images ahead in its download window",
		kept:   "a device that has not applied it keeps what it runs and drops it if held",
		keeps:  "one that applied it keeps it",
		revert: "one that applied it applies this bundle's content at once (revert)",
	}
	releaseVerbs = rolloutVerbs{
		apply:  "switch to it",
		ahead:  "install the binary ahead into its other slot in its download window",
		kept:   "a device that has not switched to it keeps the tug it runs and drops it if installed ahead",
		keeps:  "one that committed it keeps it",
		revert: "one that committed it installs this release's binary at once, on trial (revert)",
	}
)

// deviceLabels are the labels a device named node has with --node-labels
// s: the standard kubernetes.io/hostname and kubernetes.io/os (linux) and
// s's, as the agent's node has them (kubernetes.io/arch only when s says).
func deviceLabels(node, s string) (map[string]string, error) {
	labels, err := policy.ParseNodeLabels(s)
	if err != nil {
		return nil, err
	}
	std := policy.StandardLabels(node, "linux", "")
	delete(std, "kubernetes.io/arch")
	for k, v := range std {
		if _, ok := labels[k]; !ok {
			labels[k] = v
		}
	}
	return labels, nil
}

// printRollout says what a device (node, labels) would do with a bundle
// or a release that has a rollout plan or a halt, at now.
func printRollout(w io.Writer, hdr bundle.EnvelopeHeader, node string, labels map[string]string, now time.Time, v rolloutVerbs) {
	if h := hdr.Halt; h != nil {
		fmt.Fprintf(w, "halt: version %d's rollout is halted: %s;", h.Version, v.kept)
		if h.Revert {
			fmt.Fprintf(w, " %s\n", v.revert)
		} else {
			fmt.Fprintf(w, " %s\n", v.keeps)
		}
		return
	}
	p := hdr.Rollout
	if p == nil {
		return
	}
	a := p.Choose(node, labels, hdr.Version)
	fmt.Fprintf(w, "rollout: starts %s, %d waves; node %s has bucket %d of %d for version %d\n",
		p.Start.UTC().Format(time.RFC3339), len(p.Waves), node, a.Bucket, wave.Buckets, hdr.Version)
	switch {
	case a.Index == 0:
		fmt.Fprintf(w, "node %s: in no wave: would never %s (version %d) and keep what it runs\n", node, v.apply, hdr.Version)
	case a.Opens.After(now):
		fmt.Fprintf(w, "node %s: wave %d %q, opens at %s (in %s): would %s, keep what it runs until then, then %s in its update window\n",
			node, a.Index, a.Name, a.Opens.UTC().Format(time.RFC3339), a.Opens.Sub(now).Round(time.Second), v.ahead, v.apply)
	default:
		fmt.Fprintf(w, "node %s: wave %d %q, open since %s: would %s in its update window\n", node, a.Index, a.Name, a.Opens.UTC().Format(time.RFC3339), v.apply)
	}
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
