package imagegc

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

// fakeStore is an image store on a filesystem of capacity bytes whose
// used bytes are base plus the images' sizes.
type fakeStore struct {
	capacity, base int64
	images         []Image
	used           map[string]bool
	removed        []string
}

func (f *fakeStore) ListImages(context.Context) ([]Image, error) { return slices.Clone(f.images), nil }

func (f *fakeStore) RemoveImage(_ context.Context, ref string) error {
	f.removed = append(f.removed, ref)
	for i, img := range f.images {
		if j := slices.Index(img.Refs, ref); j >= 0 {
			img.Refs = slices.Delete(slices.Clone(img.Refs), j, j+1)
			if len(img.Refs) == 0 {
				f.images = slices.Delete(f.images, i, i+1)
			} else {
				f.images[i] = img
			}
			return nil
		}
	}
	return nil
}

func (f *fakeStore) ImagesInUse(context.Context) (map[string]bool, error) { return f.used, nil }

func (f *fakeStore) ImageFS(context.Context) (uint64, uint64, error) {
	used := f.base
	for _, img := range f.images {
		used += img.Size
	}
	return uint64(f.capacity), uint64(f.capacity - used), nil
}

func TestGarbageCollect(t *testing.T) {
	img := func(id string, size int64, refs ...string) Image { return Image{ID: id, Refs: refs, Size: size} }
	tests := []struct {
		name    string
		policy  Policy
		images  []Image
		used    map[string]bool
		usedAt  map[string]bool // in use at the first detection only (older use)
		base    int64
		age     time.Duration // time between the first detection and the collection
		want    []string      // refs removed, in order
		wantErr error
	}{
		{
			name:   "below the high threshold nothing is removed",
			images: []Image{img("a", 10, "a:1"), img("b", 10, "b:1")},
			base:   60, // 80%
			want:   nil,
		},
		{
			name:   "least recently used first, down to the low threshold",
			images: []Image{img("a", 5, "a:1"), img("b", 5, "b:1"), img("c", 5, "c:1")},
			usedAt: map[string]bool{"b:1": true}, // b used more recently than a and c
			base:   75,                           // 90%: free 10
			want:   []string{"a:1", "c:1"},
		},
		{
			name:    "an image in use by ref, by ID, or pinned is never removed",
			images:  []Image{img("a", 5, "a:1"), img("b", 5, "b:1"), {ID: "c", Refs: []string{"c:1"}, Size: 5, Pinned: true}, img("d", 5, "d:1")},
			used:    map[string]bool{"a:1": true, "b": true},
			base:    80, // 100%: free 20, only d may go
			want:    []string{"d:1"},
			wantErr: ErrNotEnoughFreed,
		},
		{
			name:   "every name of an image is removed",
			images: []Image{img("a", 10, "a:1", "a:latest")},
			base:   80,
			want:   []string{"a:1", "a:latest"},
		},
		{
			name:    "images younger than the minimum age are kept",
			policy:  Policy{MinAge: time.Hour},
			images:  []Image{img("a", 10, "a:1")},
			base:    80,
			age:     time.Minute,
			wantErr: ErrNotEnoughFreed,
		},
		{
			name:   "older than the minimum age",
			policy: Policy{MinAge: time.Hour},
			images: []Image{img("a", 10, "a:1")},
			base:   80,
			age:    2 * time.Hour,
			want:   []string{"a:1"},
		},
		{
			name:   "100 disables",
			policy: Policy{HighThresholdPercent: 100},
			images: []Image{img("a", 10, "a:1")},
			base:   90,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
			wantImages := 0
			for _, img := range tt.images {
				if len(img.Refs) > 0 && slices.Contains(tt.want, img.Refs[0]) {
					wantImages++
				}
			}
			f := &fakeStore{capacity: 100, base: tt.base, images: slices.Clone(tt.images), used: tt.usedAt}
			reg := prometheus.NewRegistry()
			m, err := New(Config{Policy: tt.policy, Images: f, InUse: f, FS: f, Registerer: reg, Clock: func() time.Time { return now }})
			if err != nil {
				t.Fatal(err)
			}
			// The first look: records first-detected times and, for
			// usedAt, a last use.
			if _, err := m.detect(context.Background()); err != nil {
				t.Fatal(err)
			}
			f.used = tt.used
			now = now.Add(tt.age + time.Second)
			err = m.GarbageCollect(context.Background())
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("GarbageCollect() = %v, want %v", err, tt.wantErr)
			}
			if !slices.Equal(f.removed, tt.want) {
				t.Errorf("removed %q, want %q", f.removed, tt.want)
			}
			if got := testutil.ToFloat64(m.collected.WithLabelValues("space")); int(got) != wantImages {
				t.Errorf("kubelet_image_garbage_collected_total = %v, want %d", got, wantImages)
			}
		})
	}
}

func TestDeleteUnusedImages(t *testing.T) {
	f := &fakeStore{capacity: 100, base: 10, images: []Image{{ID: "a", Refs: []string{"a:1"}, Size: 5}, {ID: "b", Refs: []string{"b:1"}, Size: 7}},
		used: map[string]bool{"b:1": true}}
	m, err := New(Config{Images: f, InUse: f, FS: f})
	if err != nil {
		t.Fatal(err)
	}
	freed, err := m.DeleteUnusedImages(context.Background())
	if err != nil || freed != 5 || !slices.Equal(f.removed, []string{"a:1"}) {
		t.Errorf("DeleteUnusedImages() = %d, %v; removed %q, want 5, nil, [a:1]", freed, err, f.removed)
	}
}

func TestPolicyValidate(t *testing.T) {
	tests := []struct {
		name string
		p    Policy
		ok   bool
	}{
		{"defaults", Policy{}, true},
		{"kubelet's", Policy{HighThresholdPercent: 85, LowThresholdPercent: 80, MinAge: 2 * time.Minute}, true},
		{"low above high", Policy{HighThresholdPercent: 50, LowThresholdPercent: 60}, false},
		{"high above 100", Policy{HighThresholdPercent: 101}, false},
		{"negative age", Policy{MinAge: -time.Second}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := tt.p.Validate(); (err == nil) != tt.ok || (err != nil && !errors.Is(err, ErrInvalidPolicy)) {
				t.Errorf("Validate() = %v, want ok=%v", err, tt.ok)
			}
		})
	}
}

// TestFailureReason: the kubelet's reasons for a failed collection.
func TestFailureReason(t *testing.T) {
	for _, tt := range []struct {
		err  error
		want string
	}{
		{fmt.Errorf("%w: freed 1 of 2 bytes", ErrNotEnoughFreed), "FreeDiskSpaceFailed"},
		{errors.New("image filesystem stats: zero capacity"), "ImageGCFailed"},
	} {
		if got := FailureReason(tt.err); got != tt.want {
			t.Errorf("FailureReason(%v) = %q, want %q", tt.err, got, tt.want)
		}
	}
}
