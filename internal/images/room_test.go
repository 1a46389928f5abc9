package images

import (
	"errors"
	"fmt"
	"log/slog"
	"testing"

	digest "github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"tug/internal/pod"
)

// TestNeededBytes: what a pull still writes, estimated from its manifest's
// children: the layers not in the content store, compressed and unpacked.
func TestNeededBytes(t *testing.T) {
	const mb = 1 << 20
	desc := func(mt, name string, size int64) ocispec.Descriptor {
		return ocispec.Descriptor{MediaType: mt, Digest: digest.FromString(name), Size: size}
	}
	config := desc(ocispec.MediaTypeImageConfig, "config", 2000)
	gz := desc(ocispec.MediaTypeImageLayerGzip, "gz", 100*mb)
	zst := desc(ocispec.MediaTypeImageLayerZstd, "zstd", 10*mb)
	tar := desc(ocispec.MediaTypeImageLayer, "tar", 240*mb)
	docker := desc("application/vnd.docker.image.rootfs.diff.tar.gzip", "docker", 4*mb)
	present := desc(ocispec.MediaTypeImageLayerGzip, "present", 50*mb)
	tests := []struct {
		name     string
		children []ocispec.Descriptor
		want     int64
	}{
		{"a gzip layer: compressed plus twice that unpacked", []ocispec.Descriptor{config, gz}, 300 * mb},
		{"a zstd layer", []ocispec.Descriptor{zst}, 30 * mb},
		{"a docker gzip layer", []ocispec.Descriptor{docker}, 12 * mb},
		{"an uncompressed tar layer: its size twice", []ocispec.Descriptor{tar}, 480 * mb},
		{"a layer in the content store counts nothing", []ocispec.Descriptor{config, present, gz}, 300 * mb},
		{"the config alone counts nothing", []ocispec.Descriptor{config}, 0},
		{"a layer listed twice counts once", []ocispec.Descriptor{gz, gz}, 300 * mb},
		{"all of them", []ocispec.Descriptor{config, gz, zst, tar, docker, present}, 822 * mb},
	}
	has := func(d ocispec.Descriptor) bool { return d.Digest == present.Digest }
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := neededBytes(tt.children, has); got != tt.want {
				t.Errorf("neededBytes() = %d (%s), want %d (%s)", got, humanBytes(got), tt.want, humanBytes(tt.want))
			}
		})
	}
}

// TestFits: a pull that needs more than the room above the threshold is
// deferred, with the figures in human units.
func TestFits(t *testing.T) {
	tests := []struct {
		need, free int64
		want       string // "" fits
	}{
		{need: 100, free: 100},
		{need: 0, free: -5},
		{need: 420_000_000, free: 180_000_000, want: "needs 420.0 MB, 180.0 MB free above the threshold"},
		{need: 2_500_000, free: -3_000_000, want: "needs 2.5 MB, 0 B free above the threshold"},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%d/%d", tt.need, tt.free), func(t *testing.T) {
			err := fits(tt.need, tt.free)
			if tt.want == "" {
				if err != nil {
					t.Fatalf("fits() = %v, want nil", err)
				}
				return
			}
			var derr *PullDeferredError
			if !errors.As(err, &derr) || !errors.Is(err, pod.ErrImagePullDeferred) || err.Error() != tt.want {
				t.Errorf("fits() = %v, want %q wrapping pod.ErrImagePullDeferred", err, tt.want)
			}
		})
	}
}

// TestRunsOut: a running pull is cut when the room is gone or, once the
// room shrank by more than its estimate, when the room would be gone
// within two more readings at the rate it shrinks.
func TestRunsOut(t *testing.T) {
	tests := []struct {
		name                   string
		start, need, prev, cur int64
		want                   bool
	}{
		{"steady", 100, 50, 100, 100, false},
		{"room growing", 100, 50, 50, 100, false},
		{"within an estimate that fits, however fast", 100, 90, 80, 20, false},
		{"another writer took room: past the estimate, fast", 100, 60, 60, 30, true},
		{"past the estimate, slowly", 100, 10, 60, 55, false},
		{"past the estimate, gone by the reading after the next", 100, 10, 60, 30, true},
		{"an exact estimate and the filesystem's overhead, fast", 800, 640, 200, 100, false},
		{"past the estimate and its eighth, fast", 800, 640, 180, 79, true},
		{"gone", 100, 50, 10, 0, true},
		{"below the threshold", 100, 50, -5, -10, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := runsOut(tt.start, tt.need, tt.prev, tt.cur); got != tt.want {
				t.Errorf("runsOut(%d, %d, %d, %d) = %v, want %v", tt.start, tt.need, tt.prev, tt.cur, got, tt.want)
			}
		})
	}
}

// TestDeferredEventOnce: the ImagePullDeferred warning is recorded once
// per wait, however often the pull is tried again; a pull that ran ends
// the wait, and the next one that does not fit is a new wait.
func TestDeferredEventOnce(t *testing.T) {
	rec := &fakeRecorder{}
	m := New(Config{Recorder: rec, Log: slog.New(slog.DiscardHandler)})
	p := &pod.Pod{}
	p.Metadata.UID = "u1"
	r := request{pod: p, container: "main", image: "example.com/big:1"}
	other := request{pod: p, container: "side", image: "example.com/big:1"}
	deferred := fmt.Errorf("pull image %q: %w", r.image, &PullDeferredError{Need: 420_000_000, Free: 180_000_000})
	count := func() (n int) {
		for _, e := range rec.events {
			if e.reason == pod.ReasonImagePullDeferred {
				n++
			}
		}
		return n
	}
	ctx := t.Context()
	for range 3 {
		m.failed(ctx, r, deferred)
	}
	if n := count(); n != 1 {
		t.Fatalf("%d ImagePullDeferred events after three deferred tries, want 1: %+v", n, rec.events)
	}
	if e := rec.events[0]; e.typ != eventWarning || e.message != `Pull of image "example.com/big:1" deferred: needs 420.0 MB, 180.0 MB free above the threshold` {
		t.Errorf("event %+v", e)
	}
	m.failed(ctx, other, deferred)
	if n := count(); n != 2 {
		t.Errorf("%d events, want 2: another container's wait is its own", n)
	}
	m.pulledFor(r)
	m.failed(ctx, r, deferred)
	if n := count(); n != 3 {
		t.Errorf("%d events, want 3: a wait after a pull that ran is a new one", n)
	}
	m.failed(ctx, r, fmt.Errorf("pull: %w", pod.ErrImagePull))
	m.failed(ctx, r, deferred)
	if n := count(); n != 4 {
		t.Errorf("%d events, want 4: a wait after a failed pull is a new one", n)
	}
}
