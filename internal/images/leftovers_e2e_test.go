//go:build e2e

package images

import (
	"bytes"
	"context"
	"crypto/rand"
	"testing"
	"time"

	containerd "github.com/containerd/containerd/v2/client"
	"github.com/containerd/containerd/v2/core/content"
	"github.com/containerd/errdefs"
	digest "github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"tug/internal/testutil"
)

// TestPullLeftoversFreed: against the test containerd, what a failed pull
// keeps under its lease (a fetched blob and a partial ingest) is counted
// by PullLeftovers and freed by FreePullLeftovers, which waits until the
// content is gone; the lease of a pull under way is neither counted nor
// freed.
func TestPullLeftoversFreed(t *testing.T) {
	testutil.RequireRoot(t)
	addr := testutil.RequireContainerd(t)
	ns := testutil.Namespace(t)
	client, err := containerd.New(addr, containerd.WithDefaultNamespace(ns), containerd.WithTimeout(10*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { client.Close() })
	m := New(Config{Client: client, Namespace: ns, Snapshotter: "overlayfs"})
	ctx := m.ctx(context.Background())
	cs := client.ContentStore()
	const blobSize, partSize = 3 << 20, 1 << 20

	// A failed pull: a blob fetched whole, another one in part.
	failedCtx, release, err := m.pullLease(ctx, "example.com/failed:1")
	if err != nil {
		t.Fatal(err)
	}
	blob := random(t, blobSize)
	blobDesc := ocispec.Descriptor{MediaType: ocispec.MediaTypeImageLayer, Digest: digest.FromBytes(blob), Size: blobSize}
	if err := content.WriteBlob(failedCtx, cs, "blob-"+blobDesc.Digest.Encoded(), bytes.NewReader(blob), blobDesc); err != nil {
		t.Fatal(err)
	}
	part := random(t, 2*partSize)
	partDesc := ocispec.Descriptor{MediaType: ocispec.MediaTypeImageLayer, Digest: digest.FromBytes(part), Size: int64(len(part))}
	w, err := cs.Writer(failedCtx, content.WithRef("part-"+partDesc.Digest.Encoded()), content.WithDescriptor(partDesc))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Write(part[:partSize]); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	release(true)

	// A pull under way, with a blob of its own.
	heldCtx, releaseHeld, err := m.pullLease(ctx, "example.com/running:1")
	if err != nil {
		t.Fatal(err)
	}
	held := random(t, partSize)
	heldDesc := ocispec.Descriptor{MediaType: ocispec.MediaTypeImageLayer, Digest: digest.FromBytes(held), Size: partSize}
	if err := content.WriteBlob(heldCtx, cs, "held-"+heldDesc.Digest.Encoded(), bytes.NewReader(held), heldDesc); err != nil {
		t.Fatal(err)
	}

	if n, err := m.PullLeftovers(ctx); err != nil || n != blobSize+partSize {
		t.Errorf("PullLeftovers() = %d, %v; want %d (the blob and the part fetched, not the running pull's)", n, err, blobSize+partSize)
	}
	freed, err := m.FreePullLeftovers(ctx)
	if err != nil || freed != blobSize+partSize {
		t.Errorf("FreePullLeftovers() = %d, %v; want %d", freed, err, blobSize+partSize)
	}
	if _, err := cs.Info(ctx, blobDesc.Digest); !errdefs.IsNotFound(err) {
		t.Errorf("the failed pull's blob: %v, want it gone", err)
	}
	if _, err := cs.Status(ctx, "part-"+partDesc.Digest.Encoded()); !errdefs.IsNotFound(err) {
		t.Errorf("the failed pull's ingest: %v, want it gone", err)
	}
	if _, err := cs.Info(ctx, heldDesc.Digest); err != nil {
		t.Errorf("the running pull's blob: %v, want it kept", err)
	}
	if n, err := m.PullLeftovers(ctx); err != nil || n != 0 {
		t.Errorf("PullLeftovers() after freeing = %d, %v; want 0", n, err)
	}
	releaseHeld(false) // its blob is no image's: gone with the lease
	if err := cs.Delete(ctx, heldDesc.Digest); err != nil && !errdefs.IsNotFound(err) {
		t.Error(err)
	}
}

func random(t *testing.T, n int) []byte {
	t.Helper()
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return b
}
