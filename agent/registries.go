package main

import (
	"tug/internal/config"
	"tug/internal/registry"
)

// newRegistries returns how tug reaches image registries: every registry
// pull (and every other user of a registry) reads the hosts of
// --registry-config-dir and shares the one --image-pull-bandwidth cap and
// one set of connections per registry host. An idle connection is kept
// for two OCI poll periods (at least registry.DefaultIdleConnTimeout), so
// each poll reuses the last one's.
func newRegistries(cfg config.Config) *registry.Registry {
	return registry.New(registry.Config{
		HostsDir:        cfg.RegistryConfigDir,
		Bandwidth:       cfg.ImagePullBandwidthBytes(),
		IdleConnTimeout: max(registry.DefaultIdleConnTimeout, 2*cfg.OCICheckFrequency),
	})
}
