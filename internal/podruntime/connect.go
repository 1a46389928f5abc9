package podruntime

import (
	"context"
	"fmt"
	"time"
)

// Connect calls New until containerd answers or ctx ends, waiting 1 s
// doubling to 10 s between tries, so that tug started before containerd
// (at boot, or while containerd restarts) waits for it instead of exiting.
// The first failure is logged, then nothing until the connection works.
func Connect(ctx context.Context, cfg Config) (*Runtime, error) {
	delay := time.Second
	for logged := false; ; {
		r, err := New(ctx, cfg)
		if err == nil {
			return r, nil
		}
		if !logged && cfg.Log != nil {
			cfg.Log.Warn("containerd is not reachable; waiting for it", "err", err)
			logged = true
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("connect to containerd at %s: %w", cfg.Address, ctx.Err())
		case <-time.After(delay):
		}
		if delay *= 2; delay > 10*time.Second {
			delay = 10 * time.Second
		}
	}
}

// Ping reports whether containerd answers now (within 2 s).
func (r *Runtime) Ping(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(r.ctx(ctx), 2*time.Second)
	defer cancel()
	if _, err := r.client.Version(ctx); err != nil {
		return fmt.Errorf("containerd at %s does not answer: %w", r.cfg.Address, err)
	}
	return nil
}
