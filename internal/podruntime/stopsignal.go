package podruntime

import (
	"context"

	containerd "github.com/containerd/containerd/v2/client"
	"github.com/containerd/containerd/v2/core/containers"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"tug/internal/pod"
)

// stopSignal returns the signal that stops container c, as Kubernetes and
// containerd's CRI choose it: c's lifecycle.stopSignal, else the image's
// STOPSIGNAL, else "" (SIGTERM).
func stopSignal(c *pod.Container, img ocispec.ImageConfig) string {
	if l := c.Lifecycle; l != nil && l.StopSignal != nil {
		return string(*l.StopSignal)
	}
	return img.StopSignal
}

// withStopSignal records sig in the container's labels under containerd's
// own label for it, which StopContainer reads (containerd.GetStopSignal);
// "" records nothing.
func withStopSignal(sig string) containerd.NewContainerOpts {
	return func(_ context.Context, _ *containerd.Client, c *containers.Container) error {
		if sig == "" {
			return nil
		}
		if c.Labels == nil {
			c.Labels = make(map[string]string)
		}
		c.Labels[containerd.StopSignalLabel] = sig
		return nil
	}
}
