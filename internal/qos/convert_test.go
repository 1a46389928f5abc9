package qos

import (
	"testing"
)

// TestMilliCPUToShares mirrors the kubelet's TestMilliCPUToShares
// (pkg/kubelet/cm/helper_linux_test.go).
func TestMilliCPUToShares(t *testing.T) {
	tests := []struct {
		name  string
		milli int64
		want  uint64
	}{
		{"no request", 0, MinShares},
		{"negative", -5, MinShares},
		{"1m below minimum", 1, MinShares},
		{"2m below minimum", 2, MinShares},
		{"3m", 3, 3},
		{"10m", 10, 10},
		{"100m", 100, 102},
		{"500m", 500, 512},
		{"900m", 900, 921},
		{"1 cpu", 1000, 1024},
		{"2 cpu", 2000, 2048},
		{"256 cpu is the maximum", 256000, MaxShares},
		{"above maximum", 300000, MaxShares},
		{"overflow guard", 1 << 62, MaxShares},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := MilliCPUToShares(tt.milli); got != tt.want {
				t.Errorf("MilliCPUToShares(%d) = %d, want %d", tt.milli, got, tt.want)
			}
		})
	}
}

// TestMilliCPUToQuota mirrors the kubelet's TestMilliCPUToQuota
// (pkg/kubelet/cm/helper_linux_test.go).
func TestMilliCPUToQuota(t *testing.T) {
	tests := []struct {
		name          string
		milli, period int64
		want          int64
	}{
		{"no limit", 0, QuotaPeriod, 0},
		{"5m rounds up to the minimum", 5, QuotaPeriod, MinQuota},
		{"9m", 9, QuotaPeriod, MinQuota},
		{"10m is the minimum", 10, QuotaPeriod, 1000},
		{"200m", 200, QuotaPeriod, 20000},
		{"500m", 500, QuotaPeriod, 50000},
		{"1 cpu", 1000, QuotaPeriod, 100000},
		{"1.5 cpu", 1500, QuotaPeriod, 150000},
		{"1.5 cpu, 10 ms period", 1500, 10000, 15000},
		{"2 cpu", 2000, QuotaPeriod, 200000},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := MilliCPUToQuota(tt.milli, tt.period); got != tt.want {
				t.Errorf("MilliCPUToQuota(%d, %d) = %d, want %d", tt.milli, tt.period, got, tt.want)
			}
		})
	}
}

// TestSharesToWeight checks the conversion of runc 1.1's
// ConvertCPUSharesToCgroupV2Value (libcontainer/cgroups/utils.go):
// 1 + (shares-2)*9999/262142. Debian 12's runc 1.1.5 was seen writing the
// weights of the rows 2, 512, 1024 and 262144 (1, 20, 39, 10000) for
// containers created with those cpu shares in the cgroup v2 guest.
func TestSharesToWeight(t *testing.T) {
	tests := []struct {
		shares, want uint64
	}{
		{0, 0}, // unset stays unset
		{2, 1},
		{3, 1},
		{102, 4},
		{512, 20},
		{921, 36},
		{1024, 39},
		{2048, 79},
		{262144, 10000},
		{1 << 30, 10000},
	}
	for _, tt := range tests {
		if got := SharesToWeight(tt.shares); got != tt.want {
			t.Errorf("SharesToWeight(%d) = %d, want %d", tt.shares, got, tt.want)
		}
	}
}

// TestOOMScoreAdj mirrors the kubelet's TestGetContainerOOMScoreAdjust
// (pkg/kubelet/qos/policy_test.go), whose node has 8000000000 bytes.
func TestOOMScoreAdj(t *testing.T) {
	const capacity = 8000000000
	tests := []struct {
		name    string
		class   PodClass
		request int64
		want    int
	}{
		{"guaranteed", Guaranteed, capacity / 2, -997},
		{"best effort", BestEffort, 0, 1000},
		{"burstable, half the node", Burstable, capacity / 2, 500},
		{"burstable, 1% of the node", Burstable, capacity / 100, 990},
		{"burstable, no memory request is 999, not 1000", Burstable, 0, 999},
		{"burstable, tiny request rounds to 1000 then 999", Burstable, 1000, 999},
		{"burstable, whole node is at least 3", Burstable, capacity, 3},
		{"burstable, 99.9% of the node is at least 3", Burstable, capacity / 1000 * 999, 3},
		{"burstable, more than the node", Burstable, 2 * capacity, 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := OOMScoreAdj(tt.class, tt.request, capacity); got != tt.want {
				t.Errorf("OOMScoreAdj(%s, %d) = %d, want %d", tt.class, tt.request, got, tt.want)
			}
		})
	}
}

// TestMemoryHigh checks the kubelet's MemoryQoS formula for memory.high
// (generateLinuxContainerResources, kuberuntime_container_linux.go, and its
// TestGenerateContainerConfigWithMemoryQoSEnforced): request + 0.9 *
// (limit or allocatable - request), rounded down to pages.
func TestMemoryHigh(t *testing.T) {
	const mi = 1 << 20
	const page = 4096
	tests := []struct {
		name                        string
		request, limit, allocatable int64
		want                        int64
	}{
		{"request 128Mi, limit 256Mi", 128 * mi, 256 * mi, 1000 * mi, 255012864},
		{"no limit: allocatable", 64 * mi, 0, 1000 * mi, 950427648},
		{"no request", 0, 256 * mi, 1000 * mi, 241590272},
		{"guaranteed memory: none", 256 * mi, 256 * mi, 1000 * mi, 0},
		{"best effort: none", 0, 0, 1000 * mi, 0},
		{"no limit, allocatable unknown", 64 * mi, 0, 0, 0},
		{"close to the request", 100 * mi, 101 * mi, 1000 * mi, 105799680},
		{"not above the request after rounding", 4096*10 + 1, 4096*10 + 2, 0, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := MemoryHigh(tt.request, tt.limit, tt.allocatable, page); got != tt.want {
				t.Errorf("MemoryHigh(%d, %d, %d) = %d, want %d", tt.request, tt.limit, tt.allocatable, got, tt.want)
			}
		})
	}
}
