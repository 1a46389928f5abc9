package images

import (
	"context"
	"sync"

	containerd "github.com/containerd/containerd/v2/client"
	"github.com/opencontainers/image-spec/identity"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
)

// maxByDigest bounds a byDigest: more images than a device runs at once.
// When full, it starts empty again.
const maxByDigest = 64

// byDigest remembers a value per image, by the image's target digest.
// Content is addressed by digest, so what is read from an image's content
// once stays true: every container start after the first is spared
// reading the image's manifest and config blobs from containerd, which,
// during a burst of starts, waits behind containerd's other work. The zero
// value is ready to use and safe for concurrent use.
type byDigest[V any] struct {
	mu sync.Mutex
	m  map[string]V
}

func (c *byDigest[V]) get(d string) (V, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	v, ok := c.m[d]
	return v, ok
}

func (c *byDigest[V]) put(d string, v V) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil || len(c.m) >= maxByDigest {
		c.m = make(map[string]V)
	}
	c.m[d] = v
}

func (c *byDigest[V]) drop(d string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.m, d)
}

// Config returns the config of img (its user, entrypoint, environment),
// read from its content the first time and remembered by digest.
func (m *Manager) Config(ctx context.Context, img containerd.Image) (ocispec.ImageConfig, error) {
	d := img.Target().Digest.String()
	if cfg, ok := m.configs.get(d); ok {
		return cfg, nil
	}
	spec, err := img.Spec(m.ctx(ctx))
	if err != nil {
		return ocispec.ImageConfig{}, err
	}
	m.configs.put(d, spec.Config)
	return spec.Config, nil
}

// isUnpacked reports whether img is unpacked for the snapshotter: whether
// the snapshot of its top layer (named by the chain ID of its layers)
// exists, as containerd's IsUnpacked asks. The first answer for an image
// reads its manifest and config to learn the chain ID, which is
// remembered; later answers look the snapshot up alone.
func (m *Manager) isUnpacked(ctx context.Context, img containerd.Image) (bool, error) {
	d := img.Target().Digest.String()
	if chain, ok := m.chains.get(d); ok {
		if _, err := m.client.SnapshotService(m.cfg.Snapshotter).Stat(ctx, chain); err == nil {
			return true, nil
		}
		m.chains.drop(d) // gone (the GC, a repair): ask the long way
	}
	ok, err := img.IsUnpacked(ctx, m.cfg.Snapshotter)
	if err != nil || !ok {
		return ok, err
	}
	if diffIDs, err := img.RootFS(ctx); err == nil {
		m.chains.put(d, identity.ChainID(diffIDs).String())
	}
	return true, nil
}
