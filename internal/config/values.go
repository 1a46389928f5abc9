package config

import (
	"fmt"
	"net/netip"
	"strings"

	"tug/internal/pod"
)

// The pod CIDR's prefix length is between MinPodCIDRBits and
// MaxPodCIDRBits: a /30 holds one pod (network, gateway, pod, broadcast),
// a /16 holds 65533, beyond any single node. The network package checks
// the same bounds again (agent's TestPodCIDRRuleAgrees keeps them equal).
const (
	MinPodCIDRBits = 16
	MaxPodCIDRBits = 30
)

// The values below are the parsed forms of the fields that are strings in
// Config. They are valid once Validate has returned nil; before, a field
// that does not parse gives the zero value.

// PodNetwork returns PodCIDR, masked.
func (c *Config) PodNetwork() netip.Prefix {
	p, _ := parsePodCIDR(c.PodCIDR)
	return p
}

// NodeAddr returns NodeIP, or the zero Addr when none is set.
func (c *Config) NodeAddr() netip.Addr {
	a, _ := netip.ParseAddr(c.NodeIP)
	return a
}

// ReservedResources returns Reserved as a resource list (empty when
// nothing is reserved).
func (c *Config) ReservedResources() pod.ResourceList {
	l, _ := parseReserved(c.Reserved)
	return l
}

// ImagePullBandwidthBytes returns ImagePullBandwidth in bytes per second,
// 0 for no cap.
func (c *Config) ImagePullBandwidthBytes() int64 {
	n, _ := parseBandwidth(c.ImagePullBandwidth)
	return n
}

// MinImagePullBandwidth is the lowest cap --image-pull-bandwidth takes:
// below it, a cap is more likely a unit mistaken ("2" for 2 MiB/s) than
// meant.
const MinImagePullBandwidth = 1 << 10

// parseBandwidth reads --image-pull-bandwidth, a quantity of bytes per
// second ("2Mi"); "0" (or "") is no cap.
func parseBandwidth(s string) (int64, error) {
	if s == "" || s == "0" {
		return 0, nil
	}
	q, err := pod.ParseQuantity(s)
	if err != nil {
		return 0, fmt.Errorf("image-pull-bandwidth: %w", err)
	}
	n := q.Value()
	if q.MilliValue() < 0 || (n != 0 && n < MinImagePullBandwidth) {
		return 0, fmt.Errorf("image-pull-bandwidth: %q: at least %d bytes per second (1Ki), or 0 for no cap", s, MinImagePullBandwidth)
	}
	return n, nil
}

func parsePodCIDR(s string) (netip.Prefix, error) {
	p, err := netip.ParsePrefix(s)
	switch {
	case err != nil || !p.Addr().Is4():
		return netip.Prefix{}, fmt.Errorf("pod-cidr: %q is not an IPv4 CIDR", s)
	case p.Bits() < MinPodCIDRBits || p.Bits() > MaxPodCIDRBits:
		return netip.Prefix{}, fmt.Errorf("pod-cidr: %q: the prefix length must be between /%d and /%d", s, MinPodCIDRBits, MaxPodCIDRBits)
	}
	return p.Masked(), nil
}

// parseReserved reads --reserved ("cpu=500m,memory=256Mi") with the
// manifests' quantity syntax (pod.ParseQuantity); "" reserves nothing.
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
		if _, dup := list[rn]; dup {
			return nil, fmt.Errorf("reserved: %s given twice", name)
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
