package podruntime

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"sync"
	"tug/internal/podlabels"

	tasks "github.com/containerd/containerd/api/services/tasks/v1"
	tasktypes "github.com/containerd/containerd/api/types/task"
	"github.com/containerd/containerd/v2/core/containers"
	"github.com/containerd/containerd/v2/pkg/oci"
	"github.com/containerd/errdefs"
	"github.com/containerd/errdefs/pkg/errgrpc"
	specs "github.com/opencontainers/runtime-spec/specs-go"
)

// shimGroupAnnotation is the OCI annotation by which the runc shim v2
// groups containers: when a container's task is created, the shim's start
// looks for the socket of the group's shim and, if one answers, the task
// joins it; only a group's first container starts a shim. containerd's CRI
// sets the sibling key io.kubernetes.cri.sandbox-id on a sandbox's
// containers. The shim's socket is named after containerd's address, the
// namespace and the group, so two tug instances never share a shim.
const shimGroupAnnotation = "io.containerd.runc.v2.group"

// LabelShimGroup is the shim group a container was created in (see
// shimGroupFor).
const LabelShimGroup = podlabels.Prefix + "shim-group"

// shimGroupFor returns the shim group for a new container (id) of the pod
// with UID uid: the group of the newest container of the pod (of any pod
// with ShimGroupingNode) whose task is alive (created, running or paused),
// or, when there is none, a new group named after the pod (the node) and
// id. release must be called once the container's task is created (or its
// start failed): until then no other container of the pod (the node) looks
// for a group. This holds for a group joined as well as a new one: the
// group's shim may exit before the task joins it (its last task deleted),
// so that the task starts a new shim under the group's name; a container
// looking meanwhile would see no live task and start a second group.
//
// A shim ends when the last task it serves is deleted, yet it answers on
// its socket for a moment after that. A fixed group name would let a
// container started in that moment (the next init container, right after
// the previous one was reaped) join a shim that is exiting, and die with
// it. A group whose tasks are all gone is therefore never joined again.
// What remains is a task that exits and is deleted while the new one is
// being created: see docs/decisions.md.
func (r *Runtime) shimGroupFor(ctx context.Context, uid, id string) (group string, release func(), err error) {
	key, filter, fresh := uid, `labels."`+podlabels.LabelPodUID+`"==`+strconv.Quote(uid), "tug-pod-"+id
	if r.cfg.ShimGrouping == ShimGroupingNode {
		key, filter, fresh = "", `labels."`+LabelShimGroup+`"`, "tug-node-"+id
	}
	unlock := r.shimLocks.Lock(key)
	group, err = r.liveShimGroup(ctx, filter, id)
	if err != nil {
		unlock()
		return "", func() {}, err
	}
	if group == "" {
		group = fresh
	}
	return group, sync.OnceFunc(unlock), nil
}

// liveShimGroup returns the shim group label of the newest container that
// filter selects (id aside) whose task is alive, "" when there is none.
func (r *Runtime) liveShimGroup(ctx context.Context, filter, id string) (string, error) {
	recs, err := r.client.ContainerService().List(ctx, filter)
	if err != nil {
		return "", fmt.Errorf("list containers for the shim group: %w", err)
	}
	sort.Slice(recs, func(i, j int) bool { return recs[i].CreatedAt.After(recs[j].CreatedAt) })
	for _, rec := range recs {
		group := rec.Labels[LabelShimGroup]
		if group == "" || rec.ID == id {
			continue
		}
		resp, err := r.client.TaskService().Get(ctx, &tasks.GetRequest{ContainerID: rec.ID})
		if err != nil {
			if errdefs.IsNotFound(errgrpc.ToNative(err)) {
				continue
			}
			return "", fmt.Errorf("get task of %s for the shim group: %w", rec.ID, err)
		}
		switch resp.Process.Status {
		case tasktypes.Status_CREATED, tasktypes.Status_RUNNING, tasktypes.Status_PAUSED, tasktypes.Status_PAUSING:
			return group, nil
		}
	}
	return "", nil
}

// withShimGroup sets the runc shim's group annotation; an empty group sets
// nothing (the container gets a shim of its own).
func withShimGroup(group string) oci.SpecOpts {
	return func(_ context.Context, _ oci.Client, _ *containers.Container, s *specs.Spec) error {
		if group == "" {
			return nil
		}
		if s.Annotations == nil {
			s.Annotations = map[string]string{}
		}
		s.Annotations[shimGroupAnnotation] = group
		return nil
	}
}
