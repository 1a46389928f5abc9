package main

import (
	"fmt"
	"net/netip"
	"testing"

	"tug/internal/config"
	"tug/internal/network"
)

// TestPodCIDRRuleAgrees: every --pod-cidr that config accepts, the network
// package can build, and every prefix length config refuses, network
// refuses too (it keeps its own defensive check).
func TestPodCIDRRuleAgrees(t *testing.T) {
	for bits := 8; bits <= 32; bits++ {
		cfg := config.Default()
		cfg.PodCIDR = fmt.Sprintf("10.0.0.0/%d", bits)
		cfg.RootDir = t.TempDir()
		cfgErr := cfg.Validate()
		_, netErr := network.New(network.Config{Bridge: cfg.BridgeName, CIDR: netip.MustParsePrefix(cfg.PodCIDR), StateDir: cfg.RootDir})
		if (cfgErr == nil) != (netErr == nil) {
			t.Errorf("/%d: config.Validate = %v, network.New = %v; want both to accept or both to refuse", bits, cfgErr, netErr)
		}
	}
	// The configuration's default builds.
	cfg := config.Default()
	cfg.RootDir = t.TempDir()
	if _, err := newPodNetwork(cfg, nil); err != nil {
		t.Errorf("default pod network: %v", err)
	}
}
