package main

import (
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"tug/internal/config"
	"tug/internal/network"
	"tug/internal/qos"
)

// The components of internal/network and internal/qos, built from the
// configuration (validated by config: nothing here parses a setting).

// newPodNetwork builds the pod network (bridge, veths, leases under
// <root-dir>/network, nftables rules) from the configuration.
func newPodNetwork(cfg config.Config, log *slog.Logger) (*network.Pods, error) {
	return network.New(network.Config{
		Bridge:   cfg.BridgeName,
		CIDR:     cfg.PodNetwork(),
		StateDir: filepath.Join(cfg.RootDir, "network"),
		HostIP:   cfg.NodeAddr(),
		Instance: cfg.ContainerdNamespace, // names tug's table, veths and bridge alias
		Log:      log,
	})
}

// newCgroups builds the QoS cgroup tree from the configuration. Containers
// never get an OOM score below tug's own: root here may lack
// CAP_SYS_RESOURCE, and runc fails to create a container asking for less.
func newCgroups(cfg config.Config, log *slog.Logger) (*qos.Manager, error) {
	minAdj, err := ownOOMScoreAdj()
	if err != nil {
		return nil, err
	}
	return qos.New(qos.Config{
		Root:           cfg.CgroupRoot,
		Reserved:       cfg.ReservedResources(),
		PodPidsLimit:   cfg.PodMaxPids,
		MemoryQoS:      cfg.MemoryQoS,
		MinOOMScoreAdj: minAdj,
		Log:            log,
	})
}

// ownOOMScoreAdj reads tug's own oom_score_adj.
func ownOOMScoreAdj() (int, error) {
	b, err := os.ReadFile("/proc/self/oom_score_adj")
	if err != nil {
		return 0, fmt.Errorf("read own oom_score_adj: %w", err)
	}
	v, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		return 0, fmt.Errorf("read own oom_score_adj: %w", err)
	}
	return v, nil
}
