package offline

import (
	"crypto/ed25519"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"tug/internal/bundle"
	"tug/internal/cli/cmdflag"
	"tug/internal/manifest"
	"tug/internal/pod"
	"tug/internal/wave"
)

const signUsage = `usage: tug sign --key KEY [--version N] [--expires DURATION | --not-after TIME]
                [--node NAME]... [--rollout-start TIME] [--wave SPEC]...
                [--halt N [--revert]] [-o OUT] FILE...

Writes FILE.signed (or OUT, for one FILE) for each FILE: a signed bundle
(tug-envelope-v1, see docs/decisions.md) holding the file's exact bytes,
its version, its expiry and the nodes it is for, signed with KEY. Publish it
at the manifest URL; the agent checks it with --manifest-verify-key.

KEY is a PEM "PRIVATE KEY" (PKCS #8, as "openssl genpkey -algorithm
ed25519" writes it); the agent's key is the matching PEM "PUBLIC KEY"
("openssl pkey -pubout").

--version must never go down for a URL: a device refuses a bundle older
than the one it runs (the default, the current Unix time, grows by itself).
--node (repeatable) restricts the bundle to those node names (the host
name tug uses, or --hostname-override; shell patterns such as "kiosk-*");
none means every node.
--update-window and --download-window (README "Update windows") replace
the devices' own windows for this bundle; a tug that does not know these
header fields refuses the bundle.
--wave (repeatable, in order) adds a wave to the bundle's rollout plan
(README "Updating a fleet"): SPEC is comma-separated name=NAME,
labels=KEY=VALUE (repeatable: all must match the node's labels),
share=PERCENT (of the fleet, by a stable hash of node name and version),
after=DURATION (from --rollout-start, default now); a device applies the
bundle in its wave, the first that selects it, and one no wave selects
never applies it. --halt N makes the bundle halt the rollout of version
N: devices keep what they run; with --revert, those that applied N apply
this bundle's content (give the last good version's manifests). A tug that
does not know these fields refuses the bundle: update tug first.

`

// signFlags are the flags of a bundle's envelope, shared by "tug sign"
// and "tug bundle push".
type signFlags struct {
	key      *string
	version  *uint64
	expires  *time.Duration
	notAfter *string
	nodes    *[]string
	update   *string
	download *string
	start    *string
	waves    *[]string
	halt     *uint64
	revert   *bool
}

func addSignFlags(fs *pflag.FlagSet) signFlags {
	return signFlags{
		key:      fs.String("key", "", "ed25519 private key file (PEM PKCS #8)"),
		version:  fs.Uint64("version", 0, "bundle version, never lower than the last one published (default: the current Unix time)"),
		expires:  fs.Duration("expires", 30*24*time.Hour, "the bundle is refused when fetched after this long"),
		notAfter: fs.String("not-after", "", "the bundle is refused when fetched after this RFC 3339 time (instead of --expires)"),
		nodes:    fs.StringArray("node", nil, "node `name` or pattern the bundle is for (repeatable; default: every node)"),
		update:   fs.String("update-window", "", "`window` in which devices apply the bundle, instead of their --update-window (a tug that does not know the field refuses the bundle)"),
		download: fs.String("download-window", "", "`window` in which devices pull the bundle's images ahead, instead of their --download-window"),
		start:    fs.String("rollout-start", "", "RFC 3339 `time` the rollout plan's waves count from (default: now)"),
		waves:    fs.StringArray("wave", nil, "a wave of the rollout plan, in order: `name=N,labels=K=V,share=PERCENT,after=DURATION` (repeatable)"),
		halt:     fs.Uint64("halt", 0, "halt the rollout of this `version`: devices keep what they run"),
		revert:   fs.Bool("revert", false, "with --halt: devices that applied the halted version apply this bundle's content"),
	}
}

// header returns the envelope header the flags give at now; its error is
// a usage error.
func (f signFlags) header(now time.Time) (bundle.EnvelopeHeader, error) {
	hdr := bundle.EnvelopeHeader{Version: *f.version, NotAfter: now.Add(*f.expires).Truncate(time.Second), Nodes: *f.nodes,
		UpdateWindow: *f.update, DownloadWindow: *f.download}
	if hdr.Version == 0 {
		hdr.Version = uint64(now.Unix())
	}
	if *f.notAfter != "" {
		t, err := time.Parse(time.RFC3339, *f.notAfter)
		if err != nil {
			return hdr, fmt.Errorf("--not-after: %w", err)
		}
		hdr.NotAfter = t
	}
	if !hdr.NotAfter.After(now) {
		return hdr, errors.New("the bundle would already have expired")
	}
	if *f.start != "" && len(*f.waves) == 0 {
		return hdr, errors.New("--rollout-start without --wave")
	}
	if len(*f.waves) > 0 {
		plan := &wave.Plan{Start: now.Truncate(time.Second).UTC()}
		if *f.start != "" {
			t, err := time.Parse(time.RFC3339, *f.start)
			if err != nil {
				return hdr, fmt.Errorf("--rollout-start: %w", err)
			}
			plan.Start = t.UTC()
		}
		for _, s := range *f.waves {
			w, err := wave.ParseFlag(s)
			if err != nil {
				return hdr, fmt.Errorf("--wave: %w", err)
			}
			plan.Waves = append(plan.Waves, w)
		}
		if err := plan.Validate(); err != nil {
			return hdr, fmt.Errorf("--wave: %w", err)
		}
		hdr.Rollout = plan
	}
	if *f.revert && *f.halt == 0 {
		return hdr, errors.New("--revert without --halt")
	}
	if *f.halt != 0 {
		if hdr.Rollout != nil {
			return hdr, errors.New("--halt and --wave: a bundle that halts a rollout carries no plan")
		}
		hdr.Halt = &wave.Halt{Version: *f.halt, Revert: *f.revert}
		if err := wave.ValidateHalt(hdr.Halt, hdr.Version); err != nil {
			return hdr, fmt.Errorf("--halt: %w", err)
		}
	}
	return hdr, nil
}

// privateKey reads --key.
func (f signFlags) privateKey() (ed25519.PrivateKey, error) {
	data, err := os.ReadFile(*f.key)
	if err != nil {
		return nil, err
	}
	priv, err := bundle.ParsePrivateKey(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", *f.key, err)
	}
	return priv, nil
}

// validManifest reports whether body parses as the agent parses a
// bundle; if not, it prints validate's messages. A device refuses a
// bundle that does not parse and keeps its last good one: such a bundle
// is refused before it is published.
func validManifest(body []byte, file string, stderr io.Writer) bool {
	if _, err := manifest.ParseFile(body, manifest.ParseOptions{Origin: pod.Origin{Source: "url", File: file}}); err != nil {
		for _, e := range flatten(err) {
			fmt.Fprintln(stderr, e)
		}
		return false
	}
	return true
}

// Sign implements "tug sign".
func Sign(args []string, stdout, stderr io.Writer) int {
	fs := cmdflag.New("sign")
	sf := addSignFlags(fs)
	out := fs.StringP("output", "o", "", "output `file` (one FILE only; default FILE.signed)")
	files, code, ok := cmdflag.Parse(fs, args, signUsage, stdout, stderr)
	if !ok {
		return code
	}
	if *sf.key == "" {
		return cmdflag.UsageError(stderr, signUsage, "sign: --key is required")
	}
	if len(files) == 0 {
		return cmdflag.UsageError(stderr, signUsage, "sign: no file to sign")
	}
	if *out != "" && len(files) > 1 {
		return cmdflag.UsageError(stderr, signUsage, "sign: -o takes one FILE")
	}
	hdr, err := sf.header(time.Now())
	if err != nil {
		return cmdflag.UsageError(stderr, signUsage, "sign: "+err.Error())
	}
	priv, err := sf.privateKey()
	if err != nil {
		fmt.Fprintf(stderr, "tug: sign: %v\n", err)
		return 1
	}
	rc := 0
	for _, file := range files {
		body, err := readManifest(file)
		if err != nil {
			fmt.Fprintf(stderr, "tug: sign: %v\n", err)
			rc = 1
			continue
		}
		if !validManifest(body, file, stderr) {
			fmt.Fprintf(stderr, "tug: sign: %s: not signed: it is not a valid manifest\n", file)
			rc = 1
			continue
		}
		bundle, err := bundle.SealEnvelope(priv, hdr, body)
		if err != nil {
			fmt.Fprintf(stderr, "tug: sign: %s: %v\n", file, err)
			rc = 1
			continue
		}
		dst := *out
		if dst == "" {
			dst = strings.TrimSuffix(file, "/") + ".signed"
		}
		if err := os.WriteFile(dst, bundle, 0o644); err != nil {
			fmt.Fprintf(stderr, "tug: sign: %v\n", err)
			rc = 1
			continue
		}
		fmt.Fprintf(stdout, "%s (version %d, not after %s)\n", dst, hdr.Version, hdr.NotAfter.UTC().Format(time.RFC3339))
	}
	return rc
}
