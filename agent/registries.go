package main

import (
	"tug/internal/config"
	"tug/internal/registry"
)

// newRegistries returns how tug reaches image registries: every registry
// pull (and every other user of a registry) reads the hosts of
// --registry-config-dir and shares the one --image-pull-bandwidth cap.
func newRegistries(cfg config.Config) *registry.Registry {
	return registry.New(registry.Config{HostsDir: cfg.RegistryConfigDir, Bandwidth: cfg.ImagePullBandwidthBytes()})
}
