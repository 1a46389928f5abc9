package podruntime

import (
	"fmt"
	"testing"

	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
)

func TestImageConfigs(t *testing.T) {
	var c imageConfigs
	d := "sha256:a"
	if _, ok := c.get(d); ok {
		t.Fatal("an empty cache has a config")
	}
	c.put(d, ocispec.ImageConfig{User: "1000"})
	if cfg, ok := c.get(d); !ok || cfg.User != "1000" {
		t.Fatalf("get = %+v, %v; want the config put", cfg, ok)
	}
	for i := range maxImageConfigs {
		c.put(fmt.Sprint("sha256:other", i), ocispec.ImageConfig{})
	}
	if n := len(c.m); n > maxImageConfigs {
		t.Fatalf("%d configs kept, want at most %d", n, maxImageConfigs)
	}
	if _, ok := c.get(d); ok {
		t.Error("a full cache kept its oldest config: it never starts empty again")
	}
}
