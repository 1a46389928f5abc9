package main

import (
	"fmt"
	"log/slog"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"tug/internal/config"
	"tug/internal/network"
	"tug/internal/pod"
	"tug/internal/qos"
)

// newPodNetwork builds the pod network (bridge, veths, leases under
// <root-dir>/network, nftables rules) from the configuration.
func newPodNetwork(cfg config.Config, log *slog.Logger) (*network.Pods, error) {
	cidr, err := netip.ParsePrefix(cfg.PodCIDR)
	if err != nil {
		return nil, fmt.Errorf("pod-cidr: %w", err)
	}
	var nodeIP netip.Addr
	if cfg.NodeIP != "" {
		if nodeIP, err = netip.ParseAddr(cfg.NodeIP); err != nil {
			return nil, fmt.Errorf("node-ip: %w", err)
		}
	}
	return network.New(network.Config{
		Bridge:   cfg.BridgeName,
		CIDR:     cidr,
		StateDir: filepath.Join(cfg.RootDir, "network"),
		HostIP:   nodeIP,
		Instance: cfg.ContainerdNamespace, // names tug's table, veths and bridge alias
		Log:      log,
	})
}

// newCgroups builds the QoS cgroup tree from the configuration. Containers
// never get an OOM score below tug's own: root here may lack
// CAP_SYS_RESOURCE, and runc fails to create a container asking for less.
func newCgroups(cfg config.Config, log *slog.Logger) (*qos.Manager, error) {
	reserved, err := parseReserved(cfg.Reserved)
	if err != nil {
		return nil, err
	}
	minAdj, err := ownOOMScoreAdj()
	if err != nil {
		return nil, err
	}
	return qos.New(qos.Config{
		Root:           cfg.CgroupRoot,
		Reserved:       reserved,
		PodPidsLimit:   cfg.PodPidsLimit,
		MemoryQoS:      cfg.MemoryQoS,
		MinOOMScoreAdj: minAdj,
		Log:            log,
	})
}

// parseReserved reads --reserved ("cpu=500m,memory=256Mi") as a resource
// list; "" reserves nothing.
func parseReserved(s string) (pod.ResourceList, error) {
	list := pod.ResourceList{}
	if strings.TrimSpace(s) == "" {
		return list, nil
	}
	for item := range strings.SplitSeq(s, ",") {
		name, value, ok := strings.Cut(strings.TrimSpace(item), "=")
		if !ok {
			return nil, fmt.Errorf("reserved: %q is not name=quantity", item)
		}
		rn := pod.ResourceName(name)
		if rn != pod.ResourceCPU && rn != pod.ResourceMemory {
			return nil, fmt.Errorf("reserved: unknown resource %q (cpu or memory)", name)
		}
		q, err := pod.ParseQuantity(value)
		if err != nil {
			return nil, fmt.Errorf("reserved: %s: %w", name, err)
		}
		if q.MilliValue() < 0 {
			return nil, fmt.Errorf("reserved: %s: must not be negative", name)
		}
		list[rn] = q
	}
	return list, nil
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
