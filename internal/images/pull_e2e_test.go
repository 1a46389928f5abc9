//go:build e2e

package images

import (
	"context"
	"slices"
	"testing"
	"time"

	containerd "github.com/containerd/containerd/v2/client"
	"golang.org/x/sys/unix"

	"tug/internal/testutil"
)

// BenchmarkPullSyncFS measures what durable pulls cost: pulls (fetch and
// unpack) of the test registry image with the unpack synced (syncfs(2) of
// the snapshotter's filesystem on containerd 1.x, diff.WithSyncFs on 2.x)
// and without (SkipSyncFS), paired: each iteration pulls both ways, in
// alternating order, and the medians of each and their ratio are reported
// (sync-ms, nosync-ms, sync/nosync), so that the load of a shared machine
// falls on both alike. Before each pull the image is removed with its
// snapshots and content (a synchronous garbage collection) and every
// filesystem is synced (sync(2)), untimed, so that each pull starts with
// nothing dirty and the difference is the flush of that pull's own files.
// The blobs may still be held by another namespace of the daemon (the test
// environment's own), so a pull is mostly its unpack, the part the sync
// changes.
//
//	go test -tags e2e -run '^$' -bench PullSyncFS -benchtime 20x ./internal/images/
func BenchmarkPullSyncFS(b *testing.B) {
	client, ns, ref := benchClient(b)
	ctx := context.Background()
	synced := New(Config{Client: client, Namespace: ns, Snapshotter: "overlayfs"})
	unsynced := New(Config{Client: client, Namespace: ns, Snapshotter: "overlayfs", SkipSyncFS: true})
	pull := func(m *Manager) time.Duration {
		if err := m.Remove(ctx, ref); err != nil {
			b.Fatal(err)
		}
		unix.Sync()
		start := time.Now()
		if _, err := m.pull(m.ctx(ctx), ref, m.keyringFor(nil), true, nil); err != nil {
			b.Fatal(err)
		}
		return time.Since(start)
	}
	var withSync, without []time.Duration
	i := 0
	for b.Loop() {
		if i%2 == 0 {
			withSync = append(withSync, pull(synced))
			without = append(without, pull(unsynced))
		} else {
			without = append(without, pull(unsynced))
			withSync = append(withSync, pull(synced))
		}
		i++
	}
	b.StopTimer()
	if err := synced.Remove(ctx, ref); err != nil {
		b.Fatal(err)
	}
	ms, mn := median(withSync), median(without)
	b.ReportMetric(float64(ms.Microseconds())/1000, "sync-ms")
	b.ReportMetric(float64(mn.Microseconds())/1000, "nosync-ms")
	b.ReportMetric(float64(ms)/float64(mn), "sync/nosync")
}

// benchClient is a containerd client in a namespace of the benchmark's own,
// closed when it ends, and the test registry's image.
func benchClient(b *testing.B) (client *containerd.Client, ns, ref string) {
	b.Helper()
	testutil.RequireRoot(b)
	addr := testutil.RequireContainerd(b)
	ref = testutil.RegistryImage(b)
	ns = testutil.Namespace(b)
	client, err := containerd.New(addr, containerd.WithDefaultNamespace(ns), containerd.WithTimeout(10*time.Second))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { client.Close() })
	return client, ns, ref
}

func median(d []time.Duration) time.Duration {
	s := slices.Clone(d)
	slices.Sort(s)
	return s[len(s)/2]
}

// BenchmarkCheckEntrypoint measures the look at an image's entrypoint that
// a failed start and every restart pay (CheckEntrypoint: a view snapshot
// under a lease, a read-only mount, a path walk and a 4-byte read).
//
//	go test -tags e2e -run '^$' -bench CheckEntrypoint ./internal/images/
func BenchmarkCheckEntrypoint(b *testing.B) {
	client, ns, ref := benchClient(b)
	ctx := context.Background()
	m := New(Config{Client: client, Namespace: ns, Snapshotter: "overlayfs"})
	call, err := m.pull(m.ctx(ctx), ref, m.keyringFor(nil), true, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer func() {
		if err := m.Remove(ctx, ref); err != nil {
			b.Fatal(err)
		}
	}()
	env := []string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"}
	for b.Loop() {
		if err := m.CheckEntrypoint(ctx, call.img, "sh", env, "/"); err != nil {
			b.Fatal(err)
		}
	}
}
