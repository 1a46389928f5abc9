package eviction

import (
	"context"
	"fmt"
	"testing"
)

// BenchmarkSynchronize is one eviction pass at 30 pods with no pressure,
// reading the real /proc and statfs (NodeObserver) and fake pod stats: its
// time per op divided by the 10 s period is the manager's share of a core
// (the per-pod stats a real adapter reads come on top).
func BenchmarkSynchronize(b *testing.B) {
	for _, n := range []int{30} {
		b.Run(fmt.Sprintf("pods=%d", n), func(b *testing.B) {
			th, err := ParseThresholds("", "", "")
			if err != nil {
				b.Fatal(err)
			}
			pods := &fakePods{stats: map[string]PodStats{}}
			for i := range n {
				p := mkPod(fmt.Sprintf("p%d", i), int64(i)*mi)
				pods.pods = append(pods.pods, p)
				pods.stats[p.Metadata.UID] = memStats(int64(i) * mi / 2)
			}
			m, err := New(Config{Thresholds: th, Observer: NodeObserver{NodeFS: b.TempDir()}, Pods: pods, Evicter: &fakeEvicter{}})
			if err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			for b.Loop() {
				if _, err := m.Synchronize(context.Background()); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
