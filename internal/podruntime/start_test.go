package podruntime

import (
	"context"
	"strings"
	"testing"

	"tug/internal/pod"
	"tug/internal/testutil"
)

// TestStartNeedsPreparedUserNamespace: a pod with hostUsers: false starts
// only in the sandbox PreparePod returned, which carries its mapping;
// given one without, the start fails before it touches containerd, and
// the container never runs with the node's users.
func TestStartNeedsPreparedUserNamespace(t *testing.T) {
	p := testutil.Pod("web")
	no := false
	p.Spec.HostUsers = &no
	r := &Runtime{}
	_, err := r.startContainer(context.Background(), p, &p.Spec.Containers[0], false, 0, pod.Sandbox{}, pod.LinuxResources{})
	if err == nil || !strings.Contains(err.Error(), "no user namespace mapping") {
		t.Fatalf("start without the mapping: %v, want it refused", err)
	}
}
