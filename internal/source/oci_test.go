package source

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/containerd/containerd/v2/core/remotes"
	"github.com/containerd/errdefs"
	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"tug/internal/bundle"
	"tug/internal/pod"
)

// fakeRegistry is an in-memory registry: a tag and the blobs by digest,
// with settable failure and counters of what was asked.
type fakeRegistry struct {
	mu       sync.Mutex
	tag      ocispec.Descriptor
	blobs    map[digest.Digest][]byte
	down     bool
	resolves int
	fetches  int
}

func newFakeRegistry() *fakeRegistry { return &fakeRegistry{blobs: map[digest.Digest][]byte{}} }

// put stores a's blobs and points the tag at its manifest.
func (r *fakeRegistry) put(a bundle.Artifact) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.blobs[a.Manifest.Digest] = a.ManifestJSON
	r.blobs[a.Layer.Digest] = a.Body
	r.tag = a.Manifest
}

func (r *fakeRegistry) setDown(down bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.down = down
}

func (r *fakeRegistry) counts() (resolves, fetches int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.resolves, r.fetches
}

func (r *fakeRegistry) Resolve(_ context.Context, ref string) (string, ocispec.Descriptor, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.resolves++
	if r.down {
		return "", ocispec.Descriptor{}, errors.New("connection refused")
	}
	if r.tag.Digest == "" {
		return "", ocispec.Descriptor{}, fmt.Errorf("%s: %w", ref, errdefs.ErrNotFound)
	}
	return ref, r.tag, nil
}

func (r *fakeRegistry) Fetcher(context.Context, string) (remotes.Fetcher, error) {
	return remotes.FetcherFunc(func(_ context.Context, d ocispec.Descriptor) (io.ReadCloser, error) {
		r.mu.Lock()
		defer r.mu.Unlock()
		r.fetches++
		if r.down {
			return nil, errors.New("connection refused")
		}
		b, ok := r.blobs[d.Digest]
		if !ok {
			return nil, errdefs.ErrNotFound
		}
		return io.NopCloser(bytes.NewReader(b)), nil
	}), nil
}

func artifact(t *testing.T, body []byte) bundle.Artifact {
	t.Helper()
	a, err := bundle.BuildArtifact(body, "pods.yaml", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func TestArtifactRoundTrip(t *testing.T) {
	_, priv, _ := ed25519.GenerateKey(nil)
	tests := []struct {
		name, mediaType string
		body            []byte
	}{
		{"signed", bundle.MediaTypeEnvelope, seal(t, priv, 7, podManifest("web", "nginx:1"))},
		{"bare", bundle.MediaTypeManifests, []byte(podManifest("web", "nginx:1"))},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			a := artifact(t, tc.body)
			reg := newFakeRegistry()
			reg.put(a)
			got, err := bundle.FetchArtifact(context.Background(), reg, "r.example/tug/b:1", 1<<20)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got.Body, tc.body) || got.Layer.MediaType != tc.mediaType || got.Manifest.Digest != a.Manifest.Digest {
				t.Fatalf("got layer %+v manifest %s, want %s and the body", got.Layer, got.Manifest.Digest, tc.mediaType)
			}
		})
	}
}

func TestParseArtifactRefuses(t *testing.T) {
	tests := []struct{ name, json string }{
		{"not JSON", "<html>"},
		{"an image", `{"schemaVersion":2,"mediaType":"application/vnd.oci.image.manifest.v1+json","config":{"mediaType":"application/vnd.oci.image.config.v1+json","digest":"sha256:44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a","size":2},"layers":[]}`},
		{"two layers", `{"schemaVersion":2,"artifactType":"application/vnd.tug.bundle.v1","layers":[{"mediaType":"application/vnd.tug.bundle.envelope.v1","digest":"sha256:44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a","size":2},{"mediaType":"application/vnd.tug.bundle.envelope.v1","digest":"sha256:44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a","size":2}]}`},
		{"other layer type", `{"schemaVersion":2,"artifactType":"application/vnd.tug.bundle.v1","layers":[{"mediaType":"application/x-tar","digest":"sha256:44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a","size":2}]}`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := bundle.ParseArtifact([]byte(tc.json)); !errors.Is(err, bundle.ErrNotBundle) {
				t.Fatalf("err %v, want bundle.ErrNotBundle", err)
			}
		})
	}
}

// ociFixture is an OCI source over a fakeRegistry, polled by the test.
type ociFixture struct {
	t    *testing.T
	reg  *fakeRegistry
	sink *fakeSink
	o    *OCI
	ctx  context.Context
}

func newOCIFixture(t *testing.T, ckpt string, keys ...ed25519.PublicKey) *ociFixture {
	t.Helper()
	f := &ociFixture{t: t, reg: newFakeRegistry(), sink: newFakeSink(), ctx: context.Background()}
	var err error
	f.o, err = NewOCI(OCIConfig{Ref: "r.example/tug/bundle:prod", Resolver: f.reg, VerifyKeys: keys, Checkpoint: ckpt, Hostname: "node1"}, f.sink)
	if err != nil {
		t.Fatal(err)
	}
	f.o.start(f.ctx)
	return f
}

// lastManifest returns the last snapshot's one manifest.
func (f *ociFixture) lastManifest() pod.SourceFile {
	f.t.Helper()
	h := f.sink.history()
	if len(h) == 0 {
		f.t.Fatal("no snapshot")
	}
	return h[len(h)-1].files[0]
}

func TestOCIAppliesVerifiedDigestsOnly(t *testing.T) {
	pub, priv, _ := ed25519.GenerateKey(nil)
	_, other, _ := ed25519.GenerateKey(nil)
	f := newOCIFixture(t, filepath.Join(t.TempDir(), "ckpt.json"), pub)
	v1 := artifact(t, seal(t, priv, 1, podManifest("web", "nginx:1")))
	f.reg.put(v1)
	f.o.poll(f.ctx)
	m := f.lastManifest()
	if m.Err != nil || len(m.Pods) != 1 || m.Version != 1 {
		t.Fatalf("v1 not applied: %+v", m)
	}
	if st := f.o.Status(); st.Digest != v1.Manifest.Digest.String() || st.FullResponses != 1 {
		t.Fatalf("status %+v, want digest %s", st, v1.Manifest.Digest)
	}
	f.o.poll(f.ctx)
	if _, fetches := f.reg.counts(); fetches != 2 {
		t.Fatalf("%d blob fetches after an unchanged poll, want 2 (manifest and layer, once)", fetches)
	}

	tampered := artifact(t, seal(t, priv, 2, podManifest("web", "nginx:2")))
	tampered.Body = bytes.Replace(tampered.Body, []byte("nginx:2"), []byte("evil:66"), 1)
	tests := []struct {
		name string
		a    bundle.Artifact
		want error
	}{
		{"tampered layer", tampered, bundle.ErrDigestMismatch},
		{"unsigned", artifact(t, []byte(podManifest("web", "nginx:2"))), bundle.ErrNotEnvelope},
		{"other key", artifact(t, seal(t, other, 2, podManifest("web", "nginx:2"))), bundle.ErrBadSignature},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f.reg.put(tc.a)
			f.o.poll(f.ctx)
			m := f.lastManifest()
			if !errors.Is(m.Err, tc.want) || m.Hash != sha256Hex(v1.Body) {
				t.Fatalf("manifest err %v hash %s, want %v with v1 kept", m.Err, m.Hash, tc.want)
			}
			_, before := f.reg.counts()
			f.o.poll(f.ctx)
			if _, after := f.reg.counts(); after != before {
				t.Fatalf("a refused digest was fetched again")
			}
		})
	}

	v2 := artifact(t, seal(t, priv, 2, podManifest("web", "nginx:2")))
	f.reg.put(v2)
	f.o.poll(f.ctx)
	if m := f.lastManifest(); m.Err != nil || m.Version != 2 || m.Pods[0].Spec.Containers[0].Image != "nginx:2" {
		t.Fatalf("v2 not applied: %+v", m)
	}

	// A restart with the registry down runs the checkpoint.
	g := &ociFixture{t: t, reg: f.reg, sink: newFakeSink(), ctx: f.ctx}
	f.reg.setDown(true)
	var err error
	g.o, err = NewOCI(f.o.cfg, g.sink)
	if err != nil {
		t.Fatal(err)
	}
	g.o.start(g.ctx)
	g.o.poll(g.ctx)
	m = g.lastManifest()
	if m.Version != 2 || !strings.Contains(errText(m.Err), "connection refused") {
		t.Fatalf("after restart: %+v, want the v2 checkpoint with the registry's error", m)
	}
	if st := g.o.Status(); st.Digest != v2.Manifest.Digest.String() || !st.FromCheckpoint {
		t.Fatalf("status %+v", st)
	}
	if g.o.failures != 1 {
		t.Fatalf("failures %d, want 1", g.o.failures)
	}
}

func TestOCINothingAcceptedNotReady(t *testing.T) {
	pub, _, _ := ed25519.GenerateKey(nil)
	f := newOCIFixture(t, "", pub)
	f.o.poll(f.ctx) // tag missing
	f.reg.put(artifact(t, []byte(podManifest("web", "nginx:1"))))
	f.o.poll(f.ctx) // unsigned
	if h := f.sink.history(); len(h) != 0 {
		t.Fatalf("%d snapshots with nothing accepted, want 0", len(h))
	}
	if st := f.o.Status(); !strings.Contains(st.Error, "signed") {
		t.Fatalf("status error %q", st.Error)
	}
}

func TestOCIBackoff(t *testing.T) {
	tests := []struct {
		period   time.Duration
		failures int
		want     time.Duration
	}{
		{time.Minute, 0, time.Minute},
		{time.Minute, 1, 2 * time.Minute},
		{time.Minute, 2, 4 * time.Minute},
		{time.Minute, 3, 5 * time.Minute},
		{time.Minute, 30, 5 * time.Minute},
		{2 * time.Second, 10, 16 * time.Second},
		{time.Hour, 2, time.Hour},
	}
	for _, tc := range tests {
		t.Run(fmt.Sprintf("%v/%d", tc.period, tc.failures), func(t *testing.T) {
			if got := backoff(tc.period, tc.failures); got != tc.want {
				t.Fatalf("backoff = %v, want %v", got, tc.want)
			}
		})
	}
}
