package podruntime

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"

	containerd "github.com/containerd/containerd/v2/client"
	"github.com/containerd/containerd/v2/pkg/cio"
	"github.com/containerd/containerd/v2/pkg/oci"
	"github.com/containerd/errdefs"
	specs "github.com/opencontainers/runtime-spec/specs-go"

	"tug/internal/pod"
	"tug/internal/podlabels"
	"tug/internal/specopts"
)

// LabelHolder marks the PID namespace holder of a pod with
// shareProcessNamespace (its value is the pod's uid). It is not
// podlabels.LabelPodUID, so the holder is in no listing of the pod's containers (a
// sandbox detail, like the pause container in Kubernetes); CleanupPod
// removes it with the pod.
const LabelHolder = podlabels.Prefix + "pid-holder"

// holderExe is where the holder's rootfs has tug's own binary (bound
// read-only from the running executable: tug is static).
const holderExe = "/tug"

// sharesPID reports whether the pod's containers share one PID namespace.
func sharesPID(p *pod.Pod) bool {
	return p.Spec.ShareProcessNamespace != nil && *p.Spec.ShareProcessNamespace && !p.Spec.HostPID
}

// holderID is the containerd ID of the pod's PID namespace holder.
func holderID(uid string) string { return "tug-pid-holder-" + uid }

// holderRootfs prepares the holder's rootfs: an empty directory with only
// the mount point of tug's binary, mounted read-only by runc.
func (r *Runtime) holderRootfs() (string, error) {
	dir := filepath.Join(r.cfg.RootDir, "pid-holder", "rootfs")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	exe := filepath.Join(dir, holderExe)
	f, err := os.OpenFile(exe, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o555)
	if err == nil {
		err = f.Close()
	} else if errors.Is(err, fs.ErrExist) {
		err = nil
	}
	return dir, err
}

// ensureHolder makes sure the PID namespace holder of a pod with
// shareProcessNamespace runs: `tug pause` as PID 1 of the namespace, in
// the pod's network, IPC and UTS namespaces and cgroup. A holder whose
// task is gone (a reboot, a kill) is replaced; the pod's containers then
// still run in the old namespace until they are restarted.
func (r *Runtime) ensureHolder(ctx context.Context, p *pod.Pod, sb pod.Sandbox) error {
	if !sharesPID(p) {
		return nil
	}
	uid := p.Metadata.UID
	id := holderID(uid)
	if cont, err := r.client.LoadContainer(ctx, id); err == nil {
		if task, err := cont.Task(ctx, nil); err == nil {
			if st, err := task.Status(ctx); err == nil && st.Status == containerd.Running {
				return nil
			}
		}
		if err := r.deleteContainer(ctx, cont); err != nil {
			return fmt.Errorf("replace PID namespace holder: %w", err)
		}
	} else if !errdefs.IsNotFound(err) {
		return fmt.Errorf("load PID namespace holder: %w", err)
	}
	rt, err := r.runtimeFor(p)
	if err != nil {
		return fmt.Errorf("PID namespace holder: %w: %w", pod.ErrCreateContainerConfig, err)
	}
	rootfs, err := r.holderRootfs()
	if err != nil {
		return fmt.Errorf("PID namespace holder's rootfs: %w", err)
	}
	exe, err := os.Executable()
	if err != nil {
		return fmt.Errorf("PID namespace holder: %w", err)
	}
	cont, err := r.client.NewContainer(ctx, id,
		containerd.WithNewSpec(
			oci.WithDefaultSpec(),
			oci.WithRootFSPath(rootfs),
			oci.WithRootFSReadonly(),
			oci.WithProcessArgs(holderExe, "pause"),
			oci.WithProcessCwd("/"),
			oci.WithMounts([]specs.Mount{{Destination: holderExe, Type: "bind", Source: exe, Options: []string{"rbind", "ro", "nosuid", "nodev"}}}),
			specopts.WithNamespaces(sb.Namespaces, false),
			specopts.WithCgroup(sb.CgroupParent, id),
			oci.WithNoNewPrivileges,
			oci.WithCapabilities(nil),
		),
		containerd.WithContainerLabels(map[string]string{LabelHolder: uid}),
		withRuntime(rt), // the pod's, as containerd's CRI runs a sandbox with its handler
	)
	r.records.changed()
	if err != nil {
		return fmt.Errorf("create PID namespace holder: %w", err)
	}
	task, err := cont.NewTask(ctx, cio.NullIO)
	if err == nil {
		err = task.Start(ctx)
	}
	if err != nil {
		r.cleanup(ctx, id, cont, r.log)
		return fmt.Errorf("start PID namespace holder: %w", err)
	}
	r.log.Info("started PID namespace holder", "pod", p.FullName(), "uid", uid, "container", id, "pid", task.Pid())
	return nil
}

// withSharedPID puts a container of a pod with shareProcessNamespace into
// the PID namespace of the pod's holder.
func (r *Runtime) withSharedPID(ctx context.Context, p *pod.Pod) (oci.SpecOpts, error) {
	cont, err := r.client.LoadContainer(ctx, holderID(p.Metadata.UID))
	if err != nil {
		return nil, fmt.Errorf("PID namespace holder: %w", err)
	}
	task, err := cont.Task(ctx, nil)
	if err != nil {
		return nil, fmt.Errorf("PID namespace holder: %w", err)
	}
	path := "/proc/" + strconv.Itoa(int(task.Pid())) + "/ns/pid"
	return oci.WithLinuxNamespace(specs.LinuxNamespace{Type: specs.PIDNamespace, Path: path}), nil
}

// removeHolder removes the pod's PID namespace holder, if any. It looks
// whatever the pod's spec says: a pod rebuilt from its containers' labels
// (an orphan) has no spec. A Runtime without containerd (the volume tests)
// has none.
func (r *Runtime) removeHolder(ctx context.Context, uid string) error {
	if r.client == nil {
		return nil
	}
	cont, err := r.client.LoadContainer(ctx, holderID(uid))
	if errdefs.IsNotFound(err) {
		return nil
	} else if err != nil {
		return err
	}
	return r.deleteContainer(ctx, cont)
}
