package bundle

import (
	"bytes"
	"context"
	"debug/elf"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/opencontainers/go-digest"
	specs "github.com/opencontainers/image-spec/specs-go"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
)

// The release artifact: tug's own binaries, what "tug release push"
// pushes and --self-update-oci follows. It is an OCI image index
// (application/vnd.oci.image.index.v1+json) with artifactType
// ReleaseArtifactType and one manifest per platform (linux and the
// architecture read from the binary's ELF header), each laid out as a
// bundle artifact (see BuildArtifact) of type ReleaseArtifactType whose one
// layer (MediaTypeEnvelope) is a signed envelope whose body is the binary.
// Every binary of a release carries the same envelope version. The
// platform in the index chooses which manifest a device fetches; the
// device then checks the binary's own ELF header, since the index is not
// signed.

// ReleaseArtifactType is the artifactType of a release's index and of
// each of its platform manifests.
const ReleaseArtifactType = "application/vnd.tug.release.v1"

// MaxRelease bounds one binary of a release (tug is about 20 MiB
// stripped).
const MaxRelease = 256 << 20

// maxReleaseIndex bounds a release's index.
const maxReleaseIndex = 1 << 20

// Errors of releases.
var (
	// ErrNoPlatform: the release has no binary for this architecture.
	ErrNoPlatform = errors.New("bundle: release has no binary for this architecture")
	// ErrWrongArch: a binary is not a Linux ELF executable of the
	// architecture it is published or fetched for.
	ErrWrongArch = errors.New("bundle: binary of the wrong architecture")
)

// elfArch maps ELF machines to GOARCH names.
var elfArch = map[elf.Machine]string{
	elf.EM_X86_64:  "amd64",
	elf.EM_AARCH64: "arm64",
	elf.EM_ARM:     "arm",
	elf.EM_386:     "386",
	elf.EM_RISCV:   "riscv64",
	elf.EM_PPC64:   "ppc64le",
	elf.EM_S390:    "s390x",
}

// ELFArch reads the GOARCH of a Linux executable from its ELF header. It
// returns an error wrapping ErrWrongArch for anything that is not an
// executable ELF file of a known machine.
func ELFArch(bin []byte) (string, error) {
	f, err := elf.NewFile(bytes.NewReader(bin))
	if err != nil {
		return "", fmt.Errorf("%w: not an ELF file: %w", ErrWrongArch, err)
	}
	defer f.Close()
	if f.Type != elf.ET_EXEC && f.Type != elf.ET_DYN {
		return "", fmt.Errorf("%w: ELF type %s, want an executable", ErrWrongArch, f.Type)
	}
	arch, ok := elfArch[f.Machine]
	if !ok || (arch == "riscv64" && f.Class != elf.ELFCLASS64) {
		return "", fmt.Errorf("%w: ELF machine %s", ErrWrongArch, f.Machine)
	}
	if f.Machine == elf.EM_PPC64 && f.ByteOrder.String() != "LittleEndian" {
		return "", fmt.Errorf("%w: big-endian ppc64", ErrWrongArch)
	}
	return arch, nil
}

// Release is a release artifact ready to push: its index and one
// artifact per architecture.
type Release struct {
	Index     ocispec.Descriptor
	IndexJSON []byte
	// Platforms are the architectures' artifacts, in the index's order.
	Platforms []Artifact
}

// BuildRelease wraps signed envelopes whose bodies are tug binaries into
// a release: each binary's architecture is read from its ELF header, and
// two binaries of one architecture, an envelope that does not parse or
// envelopes of different versions are refused.
func BuildRelease(envelopes [][]byte, created time.Time) (Release, error) {
	if len(envelopes) == 0 {
		return Release{}, errors.New("bundle: a release needs at least one binary")
	}
	var (
		rel     Release
		descs   []ocispec.Descriptor
		version uint64
		seen    []string
	)
	for _, e := range envelopes {
		env, err := ParseEnvelope(e)
		if err != nil {
			return Release{}, err
		}
		if version != 0 && env.Header.Version != version {
			return Release{}, fmt.Errorf("bundle: release binaries of versions %d and %d", version, env.Header.Version)
		}
		version = env.Header.Version
		arch, err := ELFArch(env.Body)
		if err != nil {
			return Release{}, err
		}
		if slices.Contains(seen, arch) {
			return Release{}, fmt.Errorf("bundle: two binaries for linux/%s", arch)
		}
		seen = append(seen, arch)
		a, err := BuildArtifact(e, "tug-linux-"+arch, created)
		if err != nil {
			return Release{}, err
		}
		if a, err = retype(a, ReleaseArtifactType); err != nil {
			return Release{}, err
		}
		d := a.Manifest
		d.Platform = &ocispec.Platform{OS: "linux", Architecture: arch}
		descs = append(descs, d)
		rel.Platforms = append(rel.Platforms, a)
	}
	idx := ocispec.Index{
		Versioned:    specs.Versioned{SchemaVersion: 2},
		MediaType:    ocispec.MediaTypeImageIndex,
		ArtifactType: ReleaseArtifactType,
		Manifests:    descs,
		Annotations: map[string]string{
			ocispec.AnnotationCreated: created.UTC().Format(time.RFC3339),
			ocispec.AnnotationVersion: strconv.FormatUint(version, 10),
		},
	}
	data, err := json.Marshal(idx)
	if err != nil {
		return Release{}, fmt.Errorf("bundle: release index: %w", err)
	}
	rel.IndexJSON = data
	rel.Index = ocispec.Descriptor{MediaType: ocispec.MediaTypeImageIndex, ArtifactType: ReleaseArtifactType, Digest: digest.FromBytes(data), Size: int64(len(data))}
	return rel, nil
}

// retype rewrites a bundle artifact's manifest as one of another
// artifactType.
func retype(a Artifact, artifactType string) (Artifact, error) {
	var m ocispec.Manifest
	if err := json.Unmarshal(a.ManifestJSON, &m); err != nil {
		return Artifact{}, fmt.Errorf("bundle: %w", err)
	}
	m.ArtifactType = artifactType
	data, err := json.Marshal(m)
	if err != nil {
		return Artifact{}, fmt.Errorf("bundle: %w", err)
	}
	a.ManifestJSON = data
	a.Manifest = ocispec.Descriptor{MediaType: ocispec.MediaTypeImageManifest, ArtifactType: artifactType, Digest: digest.FromBytes(data), Size: int64(len(data))}
	return a, nil
}

// PushRelease pushes every platform's artifact, then the index to ref:
// the tag names the release only once all of it is in the registry.
func PushRelease(ctx context.Context, r ArtifactPusher, ref string, rel Release) error {
	p, err := r.Pusher(ctx, ref)
	if err != nil {
		return fmt.Errorf("push %s: %w", ref, err)
	}
	for _, a := range rel.Platforms {
		for _, b := range []struct {
			desc ocispec.Descriptor
			data []byte
		}{{emptyConfig, []byte("{}")}, {a.Layer, a.Body}, {a.Manifest, a.ManifestJSON}} {
			if err := pushBlob(ctx, p, b.desc, b.data); err != nil {
				return fmt.Errorf("push %s: %s %s: %w", ref, b.desc.MediaType, b.desc.Digest, err)
			}
		}
	}
	if err := pushBlob(ctx, p, rel.Index, rel.IndexJSON); err != nil {
		return fmt.Errorf("push %s: index %s: %w", ref, rel.Index.Digest, err)
	}
	return nil
}

// ResolveRelease resolves ref (one HEAD) to the descriptor of a release's
// index, or of one platform's manifest when ref names one directly.
func ResolveRelease(ctx context.Context, r ArtifactResolver, ref string) (ocispec.Descriptor, error) {
	_, desc, err := r.Resolve(ctx, ref)
	if err != nil {
		return ocispec.Descriptor{}, fmt.Errorf("resolve %s: %w", ref, err)
	}
	return desc, nil
}

// FetchRelease fetches the signed envelope of arch's binary from the
// release desc names (see ResolveRelease): through the index's platform
// entry, or the manifest itself when desc names one. The envelope is
// returned unchecked (see Open) but for its blobs' digests and sizes.
func FetchRelease(ctx context.Context, r ArtifactResolver, ref string, desc ocispec.Descriptor, arch string) (Artifact, error) {
	if desc.MediaType == ocispec.MediaTypeImageIndex {
		f, err := r.Fetcher(ctx, ref)
		if err != nil {
			return Artifact{}, fmt.Errorf("fetcher: %w", err)
		}
		data, err := fetchBlob(ctx, f, desc, maxReleaseIndex)
		if err != nil {
			return Artifact{}, fmt.Errorf("release index: %w", err)
		}
		var idx ocispec.Index
		if err := json.Unmarshal(data, &idx); err != nil {
			return Artifact{}, fmt.Errorf("%w: release index: %s", ErrNotBundle, truncate(err.Error(), 200))
		}
		if idx.ArtifactType != ReleaseArtifactType {
			return Artifact{}, fmt.Errorf("%w: index artifact type %q, want %s", ErrNotBundle, truncate(idx.ArtifactType, 100), ReleaseArtifactType)
		}
		found := false
		for _, m := range idx.Manifests {
			if m.Platform != nil && m.Platform.OS == "linux" && m.Platform.Architecture == arch {
				desc, found = m, true
				break
			}
		}
		if !found {
			return Artifact{}, fmt.Errorf("%w: linux/%s", ErrNoPlatform, arch)
		}
	}
	a, err := fetchResolvedOf(ctx, r, ref, desc, MaxRelease, ReleaseArtifactType)
	if err != nil {
		return Artifact{}, err
	}
	if a.Layer.MediaType != MediaTypeEnvelope {
		return Artifact{}, fmt.Errorf("%w: release layer %q, want %s", ErrNotEnvelope, truncate(a.Layer.MediaType, 100), MediaTypeEnvelope)
	}
	return a, nil
}
