package bundle

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"time"

	"github.com/containerd/containerd/v2/core/remotes"
	"github.com/containerd/errdefs"
	"github.com/opencontainers/go-digest"
	specs "github.com/opencontainers/image-spec/specs-go"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
)

// The bundle artifact: what the OCI source pulls and "tug bundle push"
// pushes. It is an OCI image manifest (application/vnd.oci.image.manifest.
// v1+json, image-spec 1.1's artifact guidance) with
//
//   - artifactType ArtifactType (application/vnd.tug.bundle.v1);
//   - the empty config (application/vnd.oci.empty.v1+json, the 2 bytes
//     "{}");
//   - exactly one layer: the bundle, the bytes the URL source accepts, with
//     media type MediaTypeEnvelope when it is a signed bundle
//     (tug-envelope-v1) and MediaTypeManifests when it is bare manifests;
//     its annotation org.opencontainers.image.title names the file;
//   - annotations org.opencontainers.image.created and, for a signed
//     bundle, org.opencontainers.image.version (the envelope's version) and
//     AnnotationNotAfter: for people and registry UIs only. A device never
//     trusts them: the envelope's signed header is what it checks.

// Media types of the bundle artifact.
const (
	// ArtifactType is the artifactType of a bundle's manifest.
	ArtifactType = "application/vnd.tug.bundle.v1"
	// MediaTypeEnvelope is the layer of a signed bundle (tug-envelope-v1).
	MediaTypeEnvelope = "application/vnd.tug.bundle.envelope.v1"
	// MediaTypeManifests is the layer of bare manifests (YAML or JSON).
	MediaTypeManifests = "application/vnd.tug.bundle.manifests.v1+yaml"
	// AnnotationNotAfter is the manifest annotation with a signed bundle's
	// expiry (RFC 3339), informative only.
	AnnotationNotAfter = "io.tug.bundle.not-after"
)

// maxArtifactManifest bounds an artifact's manifest (containerd's own
// bound for an image manifest is 4 MiB; a bundle's is under 1 KiB).
const maxArtifactManifest = 1 << 20

// Errors of the bundle artifact.
var (
	// ErrNotBundle: the reference names something that is not a bundle
	// artifact (an image, an index, an artifact of another type).
	ErrNotBundle = errors.New("bundle: not a tug bundle artifact")
	// ErrDigestMismatch: a blob's bytes are not those its descriptor names
	// (a tampered or corrupt blob).
	ErrDigestMismatch = errors.New("bundle: blob does not match its digest")
)

// Artifact is a bundle artifact: its manifest, the bundle layer and the
// bundle's bytes.
type Artifact struct {
	// Manifest is the descriptor of ManifestJSON; its digest is what a tag
	// resolves to.
	Manifest     ocispec.Descriptor
	ManifestJSON []byte
	// Layer is the descriptor of Body.
	Layer ocispec.Descriptor
	Body  []byte
}

// emptyConfig is the artifact's config, without the inline data (which
// older registries do not know).
var emptyConfig = ocispec.Descriptor{MediaType: ocispec.MediaTypeEmptyJSON, Digest: ocispec.DescriptorEmptyJSON.Digest, Size: 2}

// BuildArtifact wraps body (a signed bundle or bare manifests) in a bundle
// artifact; title names the file in the layer's annotation.
func BuildArtifact(body []byte, title string, created time.Time) (Artifact, error) {
	layer := ocispec.Descriptor{MediaType: MediaTypeManifests, Digest: digest.FromBytes(body), Size: int64(len(body))}
	ann := map[string]string{ocispec.AnnotationCreated: created.UTC().Format(time.RFC3339)}
	if IsEnvelope(body) {
		env, err := ParseEnvelope(body)
		if err != nil {
			return Artifact{}, err
		}
		layer.MediaType = MediaTypeEnvelope
		ann[ocispec.AnnotationVersion] = strconv.FormatUint(env.Header.Version, 10)
		ann[AnnotationNotAfter] = env.Header.NotAfter.UTC().Format(time.RFC3339)
	}
	if title != "" {
		layer.Annotations = map[string]string{ocispec.AnnotationTitle: title}
	}
	m := ocispec.Manifest{
		Versioned:    specs.Versioned{SchemaVersion: 2},
		MediaType:    ocispec.MediaTypeImageManifest,
		ArtifactType: ArtifactType,
		Config:       emptyConfig,
		Layers:       []ocispec.Descriptor{layer},
		Annotations:  ann,
	}
	data, err := json.Marshal(m)
	if err != nil {
		return Artifact{}, fmt.Errorf("bundle: bundle artifact: %w", err)
	}
	return Artifact{
		Manifest:     ocispec.Descriptor{MediaType: ocispec.MediaTypeImageManifest, ArtifactType: ArtifactType, Digest: digest.FromBytes(data), Size: int64(len(data))},
		ManifestJSON: data,
		Layer:        layer,
		Body:         body,
	}, nil
}

// ParseArtifact reads a bundle artifact's manifest and returns the
// descriptor of its bundle layer. Errors wrap ErrNotBundle.
func ParseArtifact(manifestJSON []byte) (ocispec.Descriptor, error) {
	return parseArtifactOf(manifestJSON, ArtifactType)
}

// parseArtifactOf is ParseArtifact for an artifact of the given type
// (a bundle's, or one platform's binary of a release).
func parseArtifactOf(manifestJSON []byte, artifactType string) (ocispec.Descriptor, error) {
	var m ocispec.Manifest
	if err := json.Unmarshal(manifestJSON, &m); err != nil {
		return ocispec.Descriptor{}, fmt.Errorf("%w: manifest: %s", ErrNotBundle, truncate(err.Error(), 200))
	}
	if m.SchemaVersion != 2 || (m.MediaType != "" && m.MediaType != ocispec.MediaTypeImageManifest) {
		return ocispec.Descriptor{}, fmt.Errorf("%w: media type %q, want an OCI image manifest", ErrNotBundle, truncate(m.MediaType, 100))
	}
	if m.ArtifactType != artifactType && m.Config.MediaType != artifactType {
		return ocispec.Descriptor{}, fmt.Errorf("%w: artifact type %q, want %s", ErrNotBundle, truncate(m.ArtifactType, 100), artifactType)
	}
	if len(m.Layers) != 1 {
		return ocispec.Descriptor{}, fmt.Errorf("%w: %d layers, want 1", ErrNotBundle, len(m.Layers))
	}
	l := m.Layers[0]
	if l.MediaType != MediaTypeEnvelope && l.MediaType != MediaTypeManifests {
		return ocispec.Descriptor{}, fmt.Errorf("%w: layer media type %q, want %s or %s", ErrNotBundle, truncate(l.MediaType, 100), MediaTypeEnvelope, MediaTypeManifests)
	}
	if err := l.Digest.Validate(); err != nil {
		return ocispec.Descriptor{}, fmt.Errorf("%w: layer digest: %w", ErrNotBundle, err)
	}
	return l, nil
}

// ArtifactResolver is what the OCI source and "tug bundle pull" need of
// containerd's remotes.Resolver: Resolve (one HEAD of the reference) and a
// Fetcher for its blobs. docker.NewResolver's resolver is one.
type ArtifactResolver interface {
	Resolve(ctx context.Context, ref string) (name string, desc ocispec.Descriptor, err error)
	Fetcher(ctx context.Context, ref string) (remotes.Fetcher, error)
}

// FetchArtifact resolves ref and fetches its bundle artifact; the layer
// is refused when larger than maxBody. Each blob is checked against its
// digest and size.
func FetchArtifact(ctx context.Context, r ArtifactResolver, ref string, maxBody int64) (Artifact, error) {
	_, desc, err := r.Resolve(ctx, ref)
	if err != nil {
		return Artifact{}, fmt.Errorf("resolve %s: %w", ref, err)
	}
	a, err := FetchResolved(ctx, r, ref, desc, maxBody)
	if err != nil {
		return Artifact{}, fmt.Errorf("%s: %s: %w", ref, desc.Digest, err)
	}
	return a, nil
}

// FetchResolved fetches the artifact of ref whose manifest desc names.
// Its errors name neither ref nor desc's digest.
func FetchResolved(ctx context.Context, r ArtifactResolver, ref string, desc ocispec.Descriptor, maxBody int64) (Artifact, error) {
	return fetchResolvedOf(ctx, r, ref, desc, maxBody, ArtifactType)
}

// fetchResolvedOf is FetchResolved for an artifact of the given type.
func fetchResolvedOf(ctx context.Context, r ArtifactResolver, ref string, desc ocispec.Descriptor, maxBody int64, artifactType string) (Artifact, error) {
	f, err := r.Fetcher(ctx, ref)
	if err != nil {
		return Artifact{}, fmt.Errorf("fetcher: %w", err)
	}
	if desc.MediaType != "" && desc.MediaType != ocispec.MediaTypeImageManifest {
		return Artifact{}, fmt.Errorf("%w: media type %q, want an OCI image manifest", ErrNotBundle, truncate(desc.MediaType, 100))
	}
	mjson, err := fetchBlob(ctx, f, desc, maxArtifactManifest)
	if err != nil {
		return Artifact{}, fmt.Errorf("manifest: %w", err)
	}
	layer, err := parseArtifactOf(mjson, artifactType)
	if err != nil {
		return Artifact{}, err
	}
	body, err := fetchBlob(ctx, f, layer, maxBody)
	if err != nil {
		return Artifact{}, fmt.Errorf("bundle layer %s: %w", layer.Digest, err)
	}
	return Artifact{Manifest: desc, ManifestJSON: mjson, Layer: layer, Body: body}, nil
}

// BlobError is a blob whose bytes were read in full and are wrong: the
// content's fault, not the transport's.
type BlobError struct{ err error }

func (e *BlobError) Error() string { return e.err.Error() }
func (e *BlobError) Unwrap() error { return e.err }

// fetchBlob reads the blob desc names, at most max bytes, and checks its
// size and digest.
func fetchBlob(ctx context.Context, f remotes.Fetcher, desc ocispec.Descriptor, max int64) ([]byte, error) {
	if err := desc.Digest.Validate(); err != nil {
		return nil, &BlobError{fmt.Errorf("%w: %w", ErrNotBundle, err)}
	}
	if desc.Size < 0 || desc.Size > max {
		return nil, &BlobError{fmt.Errorf("%d bytes, larger than %d: %w", desc.Size, max, ErrTooLarge)}
	}
	rc, err := f.Fetch(ctx, desc)
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	data, err := io.ReadAll(io.LimitReader(rc, desc.Size+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) != desc.Size {
		return nil, &BlobError{fmt.Errorf("%w: %d bytes, want %d", ErrDigestMismatch, len(data), desc.Size)}
	}
	if got := desc.Digest.Algorithm().FromBytes(data); got != desc.Digest {
		return nil, &BlobError{fmt.Errorf("%w: got %s", ErrDigestMismatch, got)}
	}
	return data, nil
}

// ArtifactPusher is what "tug bundle push" needs of containerd's
// remotes.Resolver: a Pusher for the reference.
type ArtifactPusher interface {
	Pusher(ctx context.Context, ref string) (remotes.Pusher, error)
}

// PushArtifact pushes a's config, layer and manifest to ref (which names
// a tag): blobs first, the manifest last, so the tag never names an
// artifact whose blobs are missing.
func PushArtifact(ctx context.Context, r ArtifactPusher, ref string, a Artifact) error {
	p, err := r.Pusher(ctx, ref)
	if err != nil {
		return fmt.Errorf("push %s: %w", ref, err)
	}
	for _, b := range []struct {
		desc ocispec.Descriptor
		data []byte
	}{{emptyConfig, []byte("{}")}, {a.Layer, a.Body}, {a.Manifest, a.ManifestJSON}} {
		if err := pushBlob(ctx, p, b.desc, b.data); err != nil {
			return fmt.Errorf("push %s: %s %s: %w", ref, b.desc.MediaType, b.desc.Digest, err)
		}
	}
	return nil
}

func pushBlob(ctx context.Context, p remotes.Pusher, desc ocispec.Descriptor, data []byte) error {
	w, err := p.Push(ctx, desc)
	if errdefs.IsAlreadyExists(err) {
		return nil
	}
	if err != nil {
		return err
	}
	defer w.Close()
	if _, err := io.Copy(w, bytes.NewReader(data)); err != nil {
		return err
	}
	if err := w.Commit(ctx, desc.Size, desc.Digest); err != nil && !errdefs.IsAlreadyExists(err) {
		return err
	}
	return nil
}
