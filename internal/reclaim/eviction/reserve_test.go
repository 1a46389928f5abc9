package eviction

import "testing"

// TestReserve: what the thresholds of the given signals keep available,
// the largest of hard and soft.
func TestReserve(t *testing.T) {
	const capacity = 1000 << 20
	tests := []struct {
		name              string
		hard, soft, grace string
		signals           []Signal
		want              int64
	}{
		{"the default imagefs.available<15%", "", "", "", []Signal{SignalImageFsAvailable}, capacity * 15 / 100},
		{"a quantity", "imagefs.available<100Mi", "", "", []Signal{SignalImageFsAvailable}, 100 << 20},
		{"a soft threshold above the hard one", "imagefs.available<5%", "imagefs.available<20%", "imagefs.available=1m", []Signal{SignalImageFsAvailable}, capacity * 20 / 100},
		{"nodefs too on one filesystem", "imagefs.available<5%,nodefs.available<10%", "", "", []Signal{SignalImageFsAvailable, SignalNodeFsAvailable}, capacity * 10 / 100},
		{"nodefs not asked for", "imagefs.available<5%,nodefs.available<10%", "", "", []Signal{SignalImageFsAvailable}, capacity * 5 / 100},
		{"none", "none", "", "", []Signal{SignalImageFsAvailable}, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			th, err := ParseThresholds(tt.hard, tt.soft, tt.grace)
			if err != nil {
				t.Fatal(err)
			}
			if got := Reserve(th, capacity, tt.signals...); got != tt.want {
				t.Errorf("Reserve() = %d, want %d", got, tt.want)
			}
		})
	}
}
