package podruntime

import (
	"sync"

	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
)

// maxImageConfigs bounds imageConfigs: more images than a device runs at
// once. When full, it starts empty again.
const maxImageConfigs = 64

// imageConfigs remembers the config of each image (by its target digest)
// a container was started from. Content is addressed by digest, so a
// config read once stays true; every start after the first is spared
// reading the image's manifest and config blobs from containerd, which
// under a burst of starts waits behind containerd's other work. The zero
// value is ready to use and safe for concurrent use.
type imageConfigs struct {
	mu sync.Mutex
	m  map[string]ocispec.ImageConfig
}

func (c *imageConfigs) get(d string) (ocispec.ImageConfig, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	cfg, ok := c.m[d]
	return cfg, ok
}

func (c *imageConfigs) put(d string, cfg ocispec.ImageConfig) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil || len(c.m) >= maxImageConfigs {
		c.m = make(map[string]ocispec.ImageConfig)
	}
	c.m[d] = cfg
}
