package registry

import (
	"context"
	"sync"
	"time"
)

// maxBurst is the most a bucket holds, in bytes, and the most one read of
// a limited body asks for: small beside a second of any useful cap, so the
// rate holds over short transfers too, and as big as io.Copy's buffer.
const maxBurst = 32 << 10

// clock is the bucket's time source.
type clock interface {
	Now() time.Time
	// Sleep waits for d or until ctx is done, returning ctx's error then.
	Sleep(ctx context.Context, d time.Duration) error
}

// systemClock is the real time.
type systemClock struct{}

func (systemClock) Now() time.Time { return time.Now() }

func (systemClock) Sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// bucket is a token bucket of bytes that every limited body shares. It
// fills at rate bytes per second up to burst. A reader takes what it has
// read, and the bucket may go into debt: the reader then waits until the
// debt is paid, and readers that come later wait behind it, so that
// readers together get rate, in the order they read. Safe for concurrent
// use.
type bucket struct {
	rate  float64 // bytes per second, > 0
	burst int     // bytes, > 0
	clock clock

	mu     sync.Mutex
	tokens float64 // bytes that may be read at once; negative: debt
	last   time.Time
}

// newBucket returns a full bucket of rate bytes per second (rate > 0).
func newBucket(rate int64, c clock) *bucket {
	burst := int(min(rate, maxBurst))
	return &bucket{rate: float64(rate), burst: burst, clock: c, tokens: float64(burst), last: c.Now()}
}

// take takes n bytes from the bucket and returns how long the reader
// waits before it has them.
func (b *bucket) take(n int) time.Duration {
	b.mu.Lock()
	defer b.mu.Unlock()
	now := b.clock.Now()
	if now.After(b.last) {
		b.tokens = min(float64(b.burst), b.tokens+now.Sub(b.last).Seconds()*b.rate)
		b.last = now
	}
	b.tokens -= float64(n)
	if b.tokens >= 0 {
		return 0
	}
	return time.Duration(-b.tokens / b.rate * float64(time.Second))
}

// wait takes n bytes and waits until the reader has them, or ctx is done.
// The bytes are taken either way: they were read.
func (b *bucket) wait(ctx context.Context, n int) error {
	d := b.take(n)
	if d <= 0 {
		return nil
	}
	return b.clock.Sleep(ctx, d)
}
