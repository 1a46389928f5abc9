package imagegc

import (
	"context"
	"slices"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

// fakeLeftovers are failed pulls' leftovers of held bytes, on the
// fakeStore's filesystem (freeing them lowers its base); order records
// what was freed, leftovers and images, in turn.
type fakeLeftovers struct {
	store *fakeStore
	held  int64
	order *[]string
}

func (f *fakeLeftovers) PullLeftovers(context.Context) (int64, error) { return f.held, nil }

func (f *fakeLeftovers) FreePullLeftovers(context.Context) (int64, error) {
	n := f.held
	f.store.base -= n
	f.held = 0
	*f.order = append(*f.order, "leftovers")
	return n, nil
}

// orderedStore records its removals in a shared order.
type orderedStore struct {
	*fakeStore
	order *[]string
}

func (o orderedStore) RemoveImage(ctx context.Context, ref string) error {
	*o.order = append(*o.order, ref)
	return o.fakeStore.RemoveImage(ctx, ref)
}

// TestLeftoversFreedFirst: under pressure, the leftovers of failed pulls
// go before any unused image, and an image goes only when they were not
// enough; the bytes they hold are shown by tug_image_pull_leftover_bytes.
func TestLeftoversFreedFirst(t *testing.T) {
	tests := []struct {
		name      string
		free      func(m *Manager) (int64, error)
		base      int64 // of which held are leftovers
		held      int64
		wantOrder []string
		wantFreed int64 // 0: not checked
	}{
		{
			name:      "a collection above the high threshold frees the leftovers and stops when they were enough",
			free:      func(m *Manager) (int64, error) { return 0, m.GarbageCollect(context.Background()) },
			base:      70, // 90% with the images: free 10
			held:      30,
			wantOrder: []string{"leftovers"},
		},
		{
			name:      "a collection goes on to the images when the leftovers were not enough",
			free:      func(m *Manager) (int64, error) { return 0, m.GarbageCollect(context.Background()) },
			base:      75, // 95%: free 15
			held:      5,
			wantOrder: []string{"leftovers", "a:1"},
		},
		{
			name:      "the eviction manager's reclaim frees the leftovers, then every unused image",
			free:      func(m *Manager) (int64, error) { return m.DeleteUnusedImages(context.Background()) },
			base:      20,
			held:      5,
			wantOrder: []string{"leftovers", "a:1"},
			wantFreed: 15,
		},
		{
			name:      "room for a pull: the leftovers first, enough",
			free:      func(m *Manager) (int64, error) { return m.MakeRoom(context.Background(), 4) },
			base:      20,
			held:      5,
			wantOrder: []string{"leftovers"},
			wantFreed: 5,
		},
		{
			name:      "room for a pull: the leftovers, then an unused image",
			free:      func(m *Manager) (int64, error) { return m.MakeRoom(context.Background(), 12) },
			base:      20,
			held:      5,
			wantOrder: []string{"leftovers", "a:1"},
			wantFreed: 15,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var order []string
			f := &fakeStore{capacity: 100, base: tt.base, images: []Image{{ID: "a", Refs: []string{"a:1"}, Size: 10}, {ID: "b", Refs: []string{"b:1"}, Size: 10}},
				used: map[string]bool{"b:1": true}}
			l := &fakeLeftovers{store: f, held: tt.held, order: &order}
			s := orderedStore{fakeStore: f, order: &order}
			m, err := New(Config{Images: s, InUse: f, FS: f, Leftovers: l, Registerer: prometheus.NewRegistry()})
			if err != nil {
				t.Fatal(err)
			}
			freed, err := tt.free(m)
			if err != nil {
				t.Fatalf("err %v", err)
			}
			if !slices.Equal(order, tt.wantOrder) {
				t.Errorf("freed %q, want %q", order, tt.wantOrder)
			}
			if tt.wantFreed != 0 && freed != tt.wantFreed {
				t.Errorf("freed %d bytes, want %d", freed, tt.wantFreed)
			}
		})
	}
}

// TestLeftoverBytesShown: a collection under the high threshold frees
// nothing and shows the bytes failed pulls keep.
func TestLeftoverBytesShown(t *testing.T) {
	var order []string
	f := &fakeStore{capacity: 100, base: 30}
	m, err := New(Config{Images: f, InUse: f, FS: f, Leftovers: &fakeLeftovers{store: f, held: 25, order: &order}})
	if err != nil {
		t.Fatal(err)
	}
	if err := m.GarbageCollect(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := testutil.ToFloat64(m.leftover); got != 25 {
		t.Errorf("tug_image_pull_leftover_bytes = %v, want 25", got)
	}
	if len(order) != 0 {
		t.Errorf("freed %q under the high threshold, want nothing", order)
	}
}
