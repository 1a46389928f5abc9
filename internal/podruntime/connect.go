package podruntime

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"time"

	containerd "github.com/containerd/containerd/v2/client"
	"github.com/containerd/containerd/v2/pkg/namespaces"
)

// Dial connects to containerd at address with namespace as the default
// namespace of every call, and checks that it serves; until it does, or
// ctx ends, it tries again, waiting 1 s doubling to 10 s between tries, so
// that tug started before containerd (at boot, or while containerd
// restarts) waits for it instead of exiting. The first failure is logged,
// then nothing until the connection works.
func Dial(ctx context.Context, address, namespace string, log *slog.Logger) (*containerd.Client, error) {
	delay := time.Second
	for logged := false; ; {
		c, version, err := dialOnce(ctx, address, namespace)
		if err == nil {
			if log != nil {
				log.Info("connected to containerd", "address", address, "version", version, "namespace", namespace)
			}
			return c, nil
		}
		if !logged && log != nil {
			log.Warn("containerd is not reachable; waiting for it", "err", err)
			logged = true
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("connect to containerd at %s: %w", address, ctx.Err())
		case <-time.After(delay):
		}
		if delay *= 2; delay > 10*time.Second {
			delay = 10 * time.Second
		}
	}
}

// dialOnce connects to containerd once and returns its version; it fails
// clearly when the socket is missing or the daemon does not answer.
func dialOnce(ctx context.Context, address, namespace string) (*containerd.Client, string, error) {
	if _, err := os.Stat(strings.TrimPrefix(address, "unix://")); err != nil {
		return nil, "", fmt.Errorf("connect to containerd at %s: %w", address, err)
	}
	client, err := containerd.New(address,
		containerd.WithDefaultNamespace(namespace),
		containerd.WithTimeout(DefaultConnectTimeout))
	if err != nil {
		return nil, "", fmt.Errorf("connect to containerd at %s: %w", address, err)
	}
	ver, err := client.Version(namespaces.WithNamespace(ctx, namespace))
	if err != nil {
		client.Close()
		return nil, "", fmt.Errorf("connect to containerd at %s: %w", address, err)
	}
	return client, ver.Version, nil
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
