package images

import (
	"context"
	"fmt"
	"strings"

	"github.com/containerd/containerd/v2/core/content"
	"github.com/containerd/containerd/v2/core/leases"
)

// Leftovers of failed pulls. What a failed pull fetched stays under its
// lease for the next pull of its reference to resume from (pull.go,
// "Partial pulls"); no image names it, so the image GC sees only the
// filesystem's usage grow. PullLeftovers attributes those bytes, and
// FreePullLeftovers frees them: the image GC frees them first when it must
// make room, before any unused image, as a resumed pull is worth less than
// an image present.

// leftoverSize is the bytes one resource of a pull's lease holds: a blob's
// size, an ingest's offset, a snapshot's usage. Resources it cannot read
// count 0.
func (m *Manager) leftoverSize(ctx context.Context, r leases.Resource) int64 {
	cs := m.client.ContentStore()
	switch {
	case r.Type == "content":
		var size int64
		_ = cs.Walk(ctx, func(info content.Info) error {
			size = info.Size
			return nil
		}, "digest=="+r.ID)
		return size
	case r.Type == "ingests":
		st, err := cs.Status(ctx, r.ID)
		if err != nil {
			return 0
		}
		return st.Offset
	case strings.HasPrefix(r.Type, "snapshots/"):
		u, err := m.client.SnapshotService(strings.TrimPrefix(r.Type, "snapshots/")).Usage(ctx, r.ID)
		if err != nil {
			return 0
		}
		return u.Size
	}
	return 0
}

// PullLeftovers returns the bytes the leases of failed pulls hold (those
// no pull of this Manager holds), blobs shared with an image included.
// Safe for concurrent use.
func (m *Manager) PullLeftovers(ctx context.Context) (int64, error) {
	ctx = m.ctx(ctx)
	ls := m.client.LeasesService()
	var total int64
	_, err := m.orphanLeases(ctx, pullLeasePrefix, func(l leases.Lease) error {
		res, err := ls.ListResources(ctx, l)
		if err != nil {
			return fmt.Errorf("list resources of lease %s: %w", l.ID, err)
		}
		for _, r := range res {
			total += m.leftoverSize(ctx, r)
		}
		return nil
	})
	return total, err
}

// FreePullLeftovers deletes the leases of failed pulls (not those of pulls
// under way), waiting for containerd's garbage collection so that the
// space is free when it returns, and returns the bytes they held (as
// PullLeftovers counts them). Safe for concurrent use.
func (m *Manager) FreePullLeftovers(ctx context.Context) (int64, error) {
	ctx = m.ctx(ctx)
	ls := m.client.LeasesService()
	var total int64
	_, err := m.orphanLeases(ctx, pullLeasePrefix, func(l leases.Lease) error {
		var size int64
		res, err := ls.ListResources(ctx, l)
		if err == nil {
			for _, r := range res {
				size += m.leftoverSize(ctx, r)
			}
		}
		if err := ls.Delete(ctx, l, leases.SynchronousDelete); err != nil {
			return fmt.Errorf("delete lease %s: %w", l.ID, err)
		}
		m.log.Info("freed what a failed pull kept", "lease", l.ID, "bytes", size)
		total += size
		return nil
	})
	if err != nil {
		return total, fmt.Errorf("free failed pulls' leftovers: %w", err)
	}
	return total, nil
}
