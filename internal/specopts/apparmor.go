package specopts

import (
	"context"

	"github.com/containerd/containerd/v2/contrib/apparmor"
	"github.com/containerd/containerd/v2/core/containers"
	"github.com/containerd/containerd/v2/pkg/oci"

	"tug/internal/pod"
)

// AppArmorDefaultProfile is the profile of appArmorProfile RuntimeDefault:
// containerd's default template, loaded under this name on first use.
const AppArmorDefaultProfile = "tug-default"

// withAppArmor applies the container's appArmorProfile (the pod's by
// default) when the kernel enforces AppArmor: RuntimeDefault loads and
// applies AppArmorDefaultProfile, Unconfined applies "unconfined", Localhost
// the named profile, which must be loaded on the node. Without AppArmor, or
// without a profile, nothing is set.
func withAppArmor(sc *pod.SecurityContext, enabled bool) oci.SpecOpts {
	return func(ctx context.Context, cl oci.Client, c *containers.Container, s *oci.Spec) error {
		if !enabled || sc == nil || sc.AppArmorProfile == nil {
			return nil
		}
		switch ap := sc.AppArmorProfile; ap.Type {
		case pod.AppArmorRuntimeDefault:
			return apparmor.WithDefaultProfile(AppArmorDefaultProfile)(ctx, cl, c, s)
		case pod.AppArmorUnconfined:
			return apparmor.WithProfile("unconfined")(ctx, cl, c, s)
		case pod.AppArmorLocalhost:
			if ap.LocalhostProfile != nil {
				return apparmor.WithProfile(*ap.LocalhostProfile)(ctx, cl, c, s)
			}
		}
		return nil
	}
}
