package offline

import (
	"context"
	"fmt"
	"io"
	"os"
	"time"

	"tug/internal/bundle"
	"tug/internal/cli/cmdflag"
)

const releaseUsage = `usage: tug release push --key KEY --version N [--expires DURATION | --not-after TIME]
                        [--node NAME]... [--rollout-start TIME] [--wave SPEC]... BIN... REF
       tug release push --key KEY --version N --halt N [--revert] BIN... REF
       tug release sign --key KEY --version N [...] BIN...

push signs each tug binary BIN (one per architecture, read from its ELF
header) with KEY in the signed bundle envelope, version N for all of them,
and pushes them to REF (host/repository:tag) as one release: an OCI index
with one manifest per platform, which devices follow with
--self-update-oci REF. A device installs a release only when one of its
--manifest-verify-key keys verifies it, its version is above the one it
runs, it was never reverted there, --node matches the device, and the
binary is of the device's architecture.

--rollout-start, --wave, --halt and --revert mean what they mean for "tug
sign" and "tug bundle push" (README "Updating a fleet"): a device installs
the release in its wave (ahead, into its other A/B slot, in its download
window) and switches to it once its wave and its update window are open;
one that no wave selects never installs it. A release that halts version
N (--halt N, BIN... the last good build under a new version) is never
installed by a device that has not committed N, and one that has keeps
N, unless --revert: then it installs this release at once.

sign writes BIN.signed for each BIN instead: the signed binary a URL serves
for --self-update-url (one file per architecture).

Registries are reached as tug run reaches them (see tug bundle --help).

`

// Release implements "tug release".
func Release(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		return cmdflag.UsageError(stderr, releaseUsage, "release: push or sign?")
	}
	switch args[0] {
	case "push":
		return releasePush(ctx, args[1:], stdout, stderr)
	case "sign":
		return releaseSign(args[1:], stdout, stderr)
	case "-h", "--help", "help":
		fs := cmdflag.New("release push")
		addSignFlags(fs)
		addRegistryFlags(fs)
		fmt.Fprint(stdout, releaseUsage)
		fmt.Fprint(stdout, "Flags of push:\n"+fs.FlagUsages())
		return 0
	}
	return cmdflag.UsageError(stderr, releaseUsage, fmt.Sprintf("release: unknown command %q (push or sign)", args[0]))
}

func releasePush(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := cmdflag.New("release push")
	sf := addSignFlags(fs)
	rf := addRegistryFlags(fs)
	pos, code, ok := cmdflag.Parse(fs, args, releaseUsage, stdout, stderr)
	if !ok {
		return code
	}
	if len(pos) < 2 {
		return cmdflag.UsageError(stderr, releaseUsage, "release push: want BIN... REF")
	}
	if *sf.key == "" || *sf.version == 0 {
		return cmdflag.UsageError(stderr, releaseUsage, "release push: give --key and --version")
	}
	if msg := releaseOnlyFlags(sf); msg != "" {
		return cmdflag.UsageError(stderr, releaseUsage, "release push: "+msg)
	}
	bins, ref := pos[:len(pos)-1], pos[len(pos)-1]
	now := time.Now()
	hdr, err := sf.header(now)
	if err != nil {
		return cmdflag.UsageError(stderr, releaseUsage, "release push: "+err.Error())
	}
	priv, err := sf.privateKey()
	if err != nil {
		fmt.Fprintf(stderr, "tug: release push: %v\n", err)
		return 1
	}
	var envelopes [][]byte
	for _, b := range bins {
		data, err := os.ReadFile(b)
		if err != nil {
			fmt.Fprintf(stderr, "tug: release push: %v\n", err)
			return 1
		}
		if _, err := bundle.ELFArch(data); err != nil {
			fmt.Fprintf(stderr, "tug: release push: %s: %v\n", b, err)
			return 1
		}
		env, err := bundle.SealEnvelope(priv, hdr, data)
		if err != nil {
			fmt.Fprintf(stderr, "tug: release push: %v\n", err)
			return 1
		}
		envelopes = append(envelopes, env)
	}
	rel, err := bundle.BuildRelease(envelopes, now)
	if err != nil {
		fmt.Fprintf(stderr, "tug: release push: %v\n", err)
		return 1
	}
	ctx, cancel := context.WithTimeout(ctx, 4*bundleTimeout)
	defer cancel()
	if err := bundle.PushRelease(ctx, rf.resolver(ctx, stderr), ref, rel); err != nil {
		fmt.Fprintf(stderr, "tug: release push: %v\n", err)
		return 1
	}
	fmt.Fprintf(stdout, "%s@%s (version %d, not after %s)\n", ref, rel.Index.Digest, hdr.Version, hdr.NotAfter.UTC().Format(time.RFC3339))
	for _, a := range rel.Platforms {
		fmt.Fprintf(stdout, "  %s %s (%d bytes)\n", a.Layer.Annotations["org.opencontainers.image.title"], a.Manifest.Digest, len(a.Body))
	}
	return 0
}

// releaseSign is "tug release sign": each BIN sealed into BIN.signed.
func releaseSign(args []string, stdout, stderr io.Writer) int {
	fs := cmdflag.New("release sign")
	sf := addSignFlags(fs)
	pos, code, ok := cmdflag.Parse(fs, args, releaseUsage, stdout, stderr)
	if !ok {
		return code
	}
	if len(pos) == 0 || *sf.key == "" || *sf.version == 0 {
		return cmdflag.UsageError(stderr, releaseUsage, "release sign: want --key, --version and BIN...")
	}
	if msg := releaseOnlyFlags(sf); msg != "" {
		return cmdflag.UsageError(stderr, releaseUsage, "release sign: "+msg)
	}
	hdr, err := sf.header(time.Now())
	if err != nil {
		return cmdflag.UsageError(stderr, releaseUsage, "release sign: "+err.Error())
	}
	priv, err := sf.privateKey()
	if err != nil {
		fmt.Fprintf(stderr, "tug: release sign: %v\n", err)
		return 1
	}
	for _, b := range pos {
		data, err := os.ReadFile(b)
		if err == nil {
			_, err = bundle.ELFArch(data)
		}
		var env []byte
		if err == nil {
			env, err = bundle.SealEnvelope(priv, hdr, data)
		}
		if err == nil {
			err = os.WriteFile(b+".signed", env, 0o644)
		}
		if err != nil {
			fmt.Fprintf(stderr, "tug: release sign: %s: %v\n", b, err)
			return 1
		}
		fmt.Fprintf(stdout, "%s.signed (version %d)\n", b, hdr.Version)
	}
	return 0
}

// releaseOnlyFlags refuses the bundle flags a release does not take: a
// release follows each device's own windows. Its rollout plan and halt
// are the bundles' (signFlags.header checks them).
func releaseOnlyFlags(sf signFlags) string {
	if *sf.update != "" || *sf.download != "" {
		return "a release follows each device's own windows (no --update-window, --download-window)"
	}
	return ""
}
