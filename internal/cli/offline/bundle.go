package offline

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/containerd/containerd/v2/core/remotes"
	"github.com/spf13/pflag"

	"tug/internal/bundle"
	"tug/internal/cli/cmdflag"
	"tug/internal/manifest"
	"tug/internal/pod"
	"tug/internal/registry"
	"tug/internal/source"
)

const bundleUsage = `usage: tug bundle push --key KEY [--version N] [--expires DURATION | --not-after TIME]
                       [--node NAME]... [--update-window W] [--download-window W]
                       [--rollout-start TIME] [--wave SPEC]... FILE... REF
       tug bundle push --key KEY --halt N [--revert] [FILE...] REF
       tug bundle push --unsigned FILE... REF
       tug bundle pull [--verify-key PUB]... [--node NAME] [--labels K=V,...]
                       [--min-version N] REF

push checks FILE... (files or directories) with validate's messages, joins
them into one bundle, signs it with KEY as "tug sign" does (--version,
--expires, --not-after, --node, --update-window, --download-window,
--rollout-start, --wave, --halt and --revert mean the same) and pushes it to REF
(host/repository:tag) as tug's bundle artifact, which devices run with
--manifest-oci REF. --unsigned pushes the bare manifests instead, which
only a device without --manifest-verify-key accepts. With --halt, FILE...
may be left out (an empty bundle); give the last good version's manifests,
which a device that joins during the halt runs and --revert returns to.

pull fetches REF (a tag or a digest) as a device would, checks each blob
against its digest, and shows what a device would apply: the artifact's
digest, the bundle's signature (with --verify-key, as
--manifest-verify-key), expiry, nodes (--node, default this host's name)
and version (not older than --min-version), and its manifests with
validate's messages, and, when the bundle has a rollout plan or a halt,
what a device named --node with the labels --labels (its --node-labels)
would do and when. Nothing is applied. Exits 1 when a device would refuse
the bundle.

Registries are reached as tug run reaches them: the hosts.toml of
--registry-config-dir (mirrors, CAs, client certificates; without one, a
loopback registry is tried over HTTPS, then plain HTTP), with the
credentials of --registry-credentials (a docker config.json).

`

// bundleTimeout bounds a push or a pull.
const bundleTimeout = 2 * time.Minute

// Bundle implements "tug bundle".
func Bundle(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		return cmdflag.UsageError(stderr, bundleUsage, "bundle: push or pull?")
	}
	switch args[0] {
	case "push":
		return bundlePush(ctx, args[1:], stdout, stderr)
	case "pull":
		return bundlePull(ctx, args[1:], stdout, stderr)
	case "-h", "--help", "help":
		push, _, _, _ := bundlePushFlags()
		pull, _ := bundlePullFlags()
		fmt.Fprint(stdout, bundleUsage)
		fmt.Fprint(stdout, "Flags of push:\n"+push.FlagUsages()+"\nFlags of pull:\n"+pull.FlagUsages())
		return 0
	}
	return cmdflag.UsageError(stderr, bundleUsage, fmt.Sprintf("bundle: unknown command %q (push or pull)", args[0]))
}

// registryFlags say how "tug bundle" reaches a registry: as the agent
// does, through the hosts of a certs.d directory, with the credentials of
// a docker config.json.
type registryFlags struct {
	hostsDir    *string
	credentials *string
}

func addRegistryFlags(fs *pflag.FlagSet) registryFlags {
	return registryFlags{
		hostsDir:    fs.String("registry-config-dir", "/etc/containerd/certs.d", "`directory` of containerd's hosts.toml files (mirrors, CAs, client certificates), as tug run's"),
		credentials: fs.String("registry-credentials", "", "docker config.json `file` with the registry's credentials (default: none, anonymous)"),
	}
}

// resolver speaks to registries as the agent's OCI source does.
func (f registryFlags) resolver(ctx context.Context, stderr io.Writer) remotes.Resolver {
	var creds registry.Credentials
	if *f.credentials != "" {
		creds = registry.FileCredentials(*f.credentials, slog.New(slog.NewTextHandler(stderr, nil)))
	}
	return registry.New(registry.Config{HostsDir: *f.hostsDir}).Resolver(ctx, creds, nil)
}

func bundlePushFlags() (*pflag.FlagSet, signFlags, *bool, registryFlags) {
	fs := cmdflag.New("bundle push")
	sf := addSignFlags(fs)
	unsigned := fs.Bool("unsigned", false, "push the bare manifests, unsigned (no --key)")
	return fs, sf, unsigned, addRegistryFlags(fs)
}

// bundlePullFlags are the flags of "tug bundle pull".
type pullFlags struct {
	keys       *[]string
	node       *string
	labels     *string
	minVersion *uint64
	registry   registryFlags
}

func bundlePullFlags() (*pflag.FlagSet, pullFlags) {
	fs := cmdflag.New("bundle pull")
	host, _ := os.Hostname()
	return fs, pullFlags{
		keys:       fs.StringArray("verify-key", nil, "ed25519 public key `file` (PEM), or a directory of *.pem, as --manifest-verify-key (repeatable: any one verifies)"),
		node:       fs.String("node", host, "the `name` of the node the bundle must be for"),
		labels:     fs.String("labels", "", "the node's `labels` (key=value,...), as its --node-labels, for the bundle's rollout plan"),
		minVersion: fs.Uint64("min-version", 0, "refuse a bundle older than this `version` (what the device runs)"),
		registry:   addRegistryFlags(fs),
	}
}

func bundlePush(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs, sf, unsigned, rf := bundlePushFlags()
	pos, code, ok := cmdflag.Parse(fs, args, bundleUsage, stdout, stderr)
	if !ok {
		return code
	}
	if len(pos) < 2 && (len(pos) == 0 || *sf.halt == 0) {
		return cmdflag.UsageError(stderr, bundleUsage, "bundle push: want FILE... REF")
	}
	if *sf.revert && len(pos) < 2 {
		return cmdflag.UsageError(stderr, bundleUsage, "bundle push: --revert wants FILE...: the content devices go back to")
	}
	if (*sf.key == "") == !*unsigned {
		return cmdflag.UsageError(stderr, bundleUsage, "bundle push: give --key, or --unsigned")
	}
	files, ref := pos[:len(pos)-1], pos[len(pos)-1]
	bad := false
	files = expand(files, stderr, &bad)
	var joined bytes.Buffer
	for _, file := range files {
		body, err := readManifest(file)
		if err != nil {
			fmt.Fprintf(stderr, "tug: bundle push: %v\n", err)
			bad = true
			continue
		}
		if !validManifest(body, file, stderr) {
			bad = true
			continue
		}
		if joined.Len() > 0 {
			if !bytes.HasSuffix(joined.Bytes(), []byte("\n")) {
				joined.WriteByte('\n')
			}
			joined.WriteString("---\n")
		}
		joined.Write(body)
	}
	if bad {
		fmt.Fprintf(stderr, "tug: bundle push: %s: not pushed: not every file is a valid manifest\n", ref)
		return 1
	}
	body := joined.Bytes()
	if len(files) > 1 && !validManifest(body, ref, stderr) {
		fmt.Fprintf(stderr, "tug: bundle push: %s: not pushed: the files are not valid together\n", ref)
		return 1
	}
	now := time.Now()
	var hdr bundle.EnvelopeHeader
	if !*unsigned {
		var err error
		if hdr, err = sf.header(now); err != nil {
			return cmdflag.UsageError(stderr, bundleUsage, "bundle push: "+err.Error())
		}
		priv, err := sf.privateKey()
		if err != nil {
			fmt.Fprintf(stderr, "tug: bundle push: %v\n", err)
			return 1
		}
		if body, err = bundle.SealEnvelope(priv, hdr, body); err != nil {
			fmt.Fprintf(stderr, "tug: bundle push: %v\n", err)
			return 1
		}
	}
	title := "halt.yaml"
	if len(files) == 1 {
		title = filepath.Base(files[0])
	}
	if len(files) > 1 {
		title = "bundle.yaml"
	}
	a, err := bundle.BuildArtifact(body, title, now)
	if err != nil {
		fmt.Fprintf(stderr, "tug: bundle push: %v\n", err)
		return 1
	}
	ctx, cancel := context.WithTimeout(ctx, bundleTimeout)
	defer cancel()
	if err := bundle.PushArtifact(ctx, rf.resolver(ctx, stderr), ref, a); err != nil {
		fmt.Fprintf(stderr, "tug: bundle push: %v\n", err)
		return 1
	}
	if *unsigned {
		fmt.Fprintf(stdout, "%s@%s (unsigned)\n", ref, a.Manifest.Digest)
	} else {
		fmt.Fprintf(stdout, "%s@%s (version %d, not after %s)\n", ref, a.Manifest.Digest, hdr.Version, hdr.NotAfter.UTC().Format(time.RFC3339))
	}
	return 0
}

func bundlePull(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs, pf := bundlePullFlags()
	keyFiles, node, minVersion := pf.keys, pf.node, pf.minVersion
	pos, code, ok := cmdflag.Parse(fs, args, bundleUsage, stdout, stderr)
	if !ok {
		return code
	}
	if len(pos) != 1 {
		return cmdflag.UsageError(stderr, bundleUsage, "bundle pull: want one REF")
	}
	ref := pos[0]
	keys, err := bundle.LoadPublicKeys(*keyFiles)
	if err != nil {
		fmt.Fprintf(stderr, "tug: bundle pull: %v\n", err)
		return 1
	}
	ctx, cancel := context.WithTimeout(ctx, bundleTimeout)
	defer cancel()
	a, err := bundle.FetchArtifact(ctx, pf.registry.resolver(ctx, stderr), ref, source.DefaultMaxBundle)
	if err != nil {
		fmt.Fprintf(stderr, "tug: bundle pull: %v\n", err)
		return 1
	}
	fmt.Fprintf(stdout, "%s: digest %s, %s (%d bytes)\n", ref, a.Manifest.Digest, a.Layer.MediaType, a.Layer.Size)
	content, hdr, err := bundle.Open(a.Body, bundle.Check{Keys: keys, Node: *node, MinVersion: *minVersion, Now: time.Now()})
	if err != nil {
		fmt.Fprintf(stderr, "tug: bundle pull: %s: refused: %v\n", ref, err)
		return 1
	}
	switch {
	case len(keys) > 0:
		fmt.Fprintf(stdout, "signature: ok; version %d, not after %s, for %s\n", hdr.Version, hdr.NotAfter.UTC().Format(time.RFC3339), nodesOf(hdr.Nodes))
		if hdr.UpdateWindow != "" || hdr.DownloadWindow != "" {
			fmt.Fprintf(stdout, "windows: update %q, download %q (instead of the device's)\n", hdr.UpdateWindow, hdr.DownloadWindow)
		}
		labels, err := deviceLabels(*node, *pf.labels)
		if err != nil {
			return cmdflag.UsageError(stderr, bundleUsage, "bundle pull: --labels: "+err.Error())
		}
		printRollout(stdout, hdr, *node, labels, time.Now(), bundleVerbs)
	case bundle.IsEnvelope(a.Body):
		fmt.Fprintln(stdout, "signature: not checked (no --verify-key)")
	default:
		fmt.Fprintln(stdout, "signature: none (bare manifests): a device with --manifest-verify-key refuses it")
	}
	if bundle.IsEnvelope(a.Body) {
		content = append([]byte("\n\n\n"), content...) // line numbers of the layer
	}
	parsed, err := manifest.ParseFile(content, manifest.ParseOptions{
		Origin:   pod.Origin{Source: source.OCIPrefix + ref, File: ref},
		Hostname: *node,
		Warn:     func(w *pod.FieldError) { fmt.Fprintln(stderr, "warning:", w) },
	})
	if err != nil {
		for _, e := range flatten(err) {
			fmt.Fprintln(stderr, e)
		}
		fmt.Fprintf(stderr, "tug: bundle pull: %s: refused: its manifests are not valid\n", ref)
		return 1
	}
	var names []string
	for _, p := range parsed.Pods {
		names = append(names, p.Metadata.Namespace+"/"+p.Metadata.ManifestName)
	}
	for _, o := range parsed.Objects {
		names = append(names, o.String())
	}
	if len(names) == 0 {
		fmt.Fprintln(stdout, "would apply nothing: every pod of the source stops")
	} else {
		fmt.Fprintln(stdout, "would apply "+strings.Join(names, ", "))
	}
	return 0
}
