package registry

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// fakeClock is a clock whose Sleep advances it.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) Sleep(ctx context.Context, d time.Duration) error {
	c.advance(d)
	return ctx.Err()
}

func (c *fakeClock) advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

func TestBucketTake(t *testing.T) {
	type step struct {
		after time.Duration // the clock advances this much first
		n     int
		wait  time.Duration
	}
	tests := []struct {
		name  string
		rate  int64
		steps []step
	}{
		{"the burst at once, then the rate", 1 << 20, []step{
			{0, 32 << 10, 0},
			{0, 32 << 10, time.Second / 32},
			{0, 1 << 20, time.Second + time.Second/32},
		}},
		{"refill up to the burst only", 1 << 20, []step{
			{time.Hour, 32 << 10, 0},
			{0, 1, time.Second / (1 << 20)},
		}},
		{"debt paid by time", 1 << 20, []step{
			{0, 32<<10 + 1<<20, time.Second},
			{time.Second, 1 << 20, time.Second},
		}},
		{"a rate below the maximum burst bursts one second", 4 << 10, []step{
			{0, 4 << 10, 0},
			{0, 4 << 10, time.Second},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := &fakeClock{now: time.Unix(1000, 0)}
			b := newBucket(tt.rate, c)
			for i, s := range tt.steps {
				c.advance(s.after)
				if got := b.take(s.n); got.Round(time.Microsecond) != s.wait.Round(time.Microsecond) {
					t.Errorf("step %d: take(%d) = %s, want %s", i, s.n, got, s.wait)
				}
			}
		})
	}
}

// TestBucketRate: readers that take turns on one bucket get its rate
// together, on the clock their waits advance.
func TestBucketRate(t *testing.T) {
	const rate = 1 << 20
	c := &fakeClock{now: time.Unix(1000, 0)}
	b := newBucket(rate, c)
	start := c.Now()
	total := 0
	for range 64 {
		for range 4 { // four readers, 16 KiB each in turn
			if err := b.wait(context.Background(), 16<<10); err != nil {
				t.Fatal(err)
			}
			total += 16 << 10
		}
	}
	// 4 MiB at 1 MiB/s, less the first burst that came at once.
	want := time.Duration(float64(total-b.burst) / rate * float64(time.Second))
	if got := c.Now().Sub(start); got.Round(time.Millisecond) != want.Round(time.Millisecond) {
		t.Errorf("4 MiB by 4 readers took %s, want %s", got, want)
	}
}

// TestLimitedBody: a response body through the transport of a capped
// Registry comes at its rate, in real time; the observer is told of 2xx
// answers only; a context that ends stops the wait.
func TestLimitedBody(t *testing.T) {
	body := bytes.Repeat([]byte("x"), 160<<10)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/missing" {
			http.NotFound(w, r)
			return
		}
		w.Write(body)
	}))
	defer srv.Close()
	var seen []Served
	tr := &transport{base: http.DefaultTransport, bucket: newBucket(512<<10, systemClock{}), served: Served{Host: "h"},
		observe: func(s Served) { seen = append(seen, s) }}
	client := &http.Client{Transport: tr}

	resp, err := client.Get(srv.URL + "/missing")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if len(seen) != 0 {
		t.Errorf("a 404 was observed as served: %+v", seen)
	}

	began := time.Now()
	resp, err = client.Get(srv.URL + "/blob")
	if err != nil {
		t.Fatal(err)
	}
	n, err := io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	took := time.Since(began)
	if err != nil || n != int64(len(body)) {
		t.Fatalf("read %d bytes, %v", n, err)
	}
	// 160 KiB at 512 KiB/s, the first 32 KiB (the burst) at once, less
	// what the 404's body took: at least 0.25 s.
	if min := 240 * time.Millisecond; took < min {
		t.Errorf("160 KiB at 512 KiB/s took %s, want at least %s", took, min)
	}
	if len(seen) != 1 || seen[0] != (Served{Host: "h"}) {
		t.Errorf("observed %+v, want one answer of h", seen)
	}

	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL+"/blob", nil)
	resp, err = client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	cancel()
	if _, err := io.Copy(io.Discard, resp.Body); !errors.Is(err, context.Canceled) && (err == nil || !strings.Contains(err.Error(), "canceled")) {
		t.Errorf("reading after the context ended: %v, want it canceled", err)
	}
}
