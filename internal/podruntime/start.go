package podruntime

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	containerd "github.com/containerd/containerd/v2/client"
	"github.com/containerd/containerd/v2/pkg/oci"
	"github.com/containerd/errdefs"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	specs "github.com/opencontainers/runtime-spec/specs-go"

	"tug/internal/objects"
	"tug/internal/pod"
	"tug/internal/podlabels"
	"tug/internal/podlogs"
	"tug/internal/specopts"
	"tug/internal/steptime"
	"tug/internal/volume"
)

const (
	// killTimeout bounds the wait for a task to die after SIGKILL.
	killTimeout = 10 * time.Second
	// cleanupTimeout bounds the removal of what a failed start left, which
	// runs even when the caller's context is done.
	cleanupTimeout = 30 * time.Second
	// startTimeout bounds creating and starting a task once its container
	// exists; it is not cut short by the caller's context.
	startTimeout = 2 * time.Minute
	// unknownExitCode is reported for a task that vanished without tug
	// seeing its exit (its shim died, or the host rebooted), as
	// containerd's CRI does.
	unknownExitCode = 255
)

// StartContainer runs attempt number attempt of container c of pod p: it
// makes the image present (honouring imagePullPolicy), creates the
// container with tug's labels and a new snapshot, its OCI spec built from the
// manifest joining the pod's sandbox sb with resources res, and starts its task with the
// output going to the attempt's log file. A leftover container with the same
// ID (an earlier failed try) is deleted first. Whatever a failed start
// created is removed again. It returns the container ID (see ContainerID).
//
// With imagePullPolicy Always, a failed pull of an image that is present
// is logged (Warn) and the present image is used: a device that is offline
// keeps running what it has. Never with a missing image is
// images.ErrImageNotPresent; a privileged container without AllowPrivileged is
// specopts.ErrPrivilegedNotAllowed; runAsNonRoot with an image that runs as root, or
// a Localhost seccomp profile that cannot be loaded, is
// pod.ErrCreateContainerConfig, and no container is created.
func (r *Runtime) StartContainer(ctx context.Context, p *pod.Pod, c *pod.Container, init bool, attempt int, sb pod.Sandbox, res pod.LinuxResources) (string, error) {
	ctx = r.ctx(ctx)
	id, err := r.startContainer(ctx, p, c, init, attempt, sb, res)
	if err != nil {
		return "", fmt.Errorf("start container %q: %w", c.Name, err)
	}
	return id, nil
}

// startContainer starts attempt attempt of container c of pod p, in steps
// that each call one package: check the request; make the image and the
// image volumes' images present (images) and mount those; prepare the log directory (podlogs); remove a leftover of an
// earlier try; stage the mounts (volume); join the shim group; build the
// spec (objects, specopts); create the container; on a restart, look at
// the image's entrypoint (images); set up its output (podlogs) and create
// its task; limit the shim; record the start time and start the task. A failure after the container is created removes it (one
// deferred clean-up); the staged mounts and the shim group are released
// whatever happens.
func (r *Runtime) startContainer(ctx context.Context, p *pod.Pod, c *pod.Container, init bool, attempt int, sb pod.Sandbox, res pod.LinuxResources) (_ string, retErr error) {
	// 1. The request, and the pod's user namespace (PreparePod's sandbox
	// carries it).
	if err := r.checkStart(p, c); err != nil {
		return "", err
	}
	rt, err := r.runtimeFor(p)
	if err != nil {
		return "", fmt.Errorf("%w: %w", pod.ErrCreateContainerConfig, err)
	}
	if p.UserNamespace() && sb.UserNS == nil {
		return "", fmt.Errorf("pod %s has hostUsers: false, but its sandbox has no user namespace mapping (PreparePod gives it)", p.FullName())
	}
	id := podlabels.ContainerID(p, c.Name, attempt)
	log := r.log.With("pod", p.FullName(), "uid", p.Metadata.UID, "container", id)
	st := steptime.New()

	// 2. The image.
	img, imgConfig, err := r.ensureImage(ctx, p, c)
	if err != nil {
		return "", err
	}
	imageVolumes, err := r.volumes.MountImageVolumes(ctx, p, c)
	if err != nil {
		return "", err
	}
	st.Step("image")

	// 3. The log directory: only this attempt's log and the previous one's
	// are kept.
	logPath := r.ContainerLogPath(p, c.Name, attempt)
	if err := os.MkdirAll(filepath.Dir(logPath), 0o755); err != nil {
		return "", fmt.Errorf("create log directory: %w", err)
	}
	if err := podlogs.Prune(filepath.Dir(logPath), attempt-1); err != nil {
		log.Warn("remove logs of earlier attempts", "err", err)
	}
	st.Step("log_dir")

	// 4. What an earlier try of this ID left.
	if err := r.removeLeftover(ctx, id, p.Metadata.UID, c.Name); err != nil {
		return "", err
	}
	st.Step("leftover")

	// 5. The mounts, staged last and unstaged when the start is over: runc
	// has made its own mounts in the container by then (task create).
	stageDir := r.volumes.StagingDir(p.Metadata.UID, id)
	defer func() {
		if err := volume.Unstage(stageDir); err != nil {
			log.Warn("remove staging mounts", "err", err)
		}
	}()
	mounts, err := r.mounts(p, c, id, stageDir)
	if err != nil {
		return "", err
	}
	st.Step("mounts")

	// 6. The shim group, held until the task is created: the runc shim's
	// only (another shim starts one process per container, or as it
	// decides).
	group, releaseGroup := "", func() {}
	if rt.Type == RuncRuntime {
		if group, releaseGroup, err = r.shimGroupFor(ctx, p.Metadata.UID, id); err != nil {
			return "", err
		}
	}
	defer releaseGroup()
	st.Step("shim_group")

	// 7. The spec.
	specOpts, err := r.specOpts(ctx, p, c, id, imgConfig, sb, res, mounts, group)
	if err != nil {
		return "", err
	}
	st.Step("spec_options")

	// 8. The container. From here on the start runs to its end whatever
	// happens to ctx (tug stopping): a container whose creation is
	// cancelled leaves its snapshot under containerd's lease, and a task
	// that containerd started while the call was being cancelled must not
	// be taken for a failure and killed. A failure removes what was made;
	// a container that exists already was made by someone else, and its
	// snapshot is not ours to remove.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), startTimeout)
	defer cancel()
	var cont containerd.Container
	owned := false
	defer func() {
		if retErr != nil && owned {
			r.cleanup(ctx, id, cont, log)
		}
	}()
	cont, err = r.client.NewContainer(ctx, id,
		containerd.WithImage(img),
		containerd.WithSnapshotter(r.cfg.Snapshotter),
		r.withSnapshot(id, img, sb.UserNS),
		containerd.WithNewSpec(specOpts...),
		containerd.WithContainerLabels(podlabels.ForContainer(p, c, init, attempt, img.Target().Digest.String(), sb.CgroupParent)),
		containerd.WithAdditionalContainerLabels(map[string]string{LabelShimGroup: group}),
		containerd.WithAdditionalContainerLabels(podlabels.ImageVolumes(imageVolumes)),
		withStopSignal(stopSignal(c, imgConfig)),
		withRuntime(rt),
	)
	r.records.changed()
	// NewContainer's lease lets GC collect a snapshot it made, but not
	// before a retry would trip over it: it is removed here.
	owned = err == nil || !errdefs.IsAlreadyExists(err)
	if err != nil {
		cont = nil // only the snapshot, if NewContainer made one
		return "", err
	}
	st.Step("create")

	// 9. A restart first looks at the image's entrypoint: a binary a power
	// cut left empty fails only once it is exec'd, after the start
	// succeeded (runc reports "exec format error" in the container's
	// output and an exit code), so the exit alone cannot tell damage from
	// a crash (imagedamage.go).
	if attempt > 0 {
		if err := r.imageDamage(ctx, cont, img); err != nil {
			return "", err
		}
	}

	// 10. The output, and the task.
	creator, err := r.logIO(id, logPath, p.Metadata.UID, c.Name, attempt)
	if err != nil {
		return "", err
	}
	st.Step("output")
	task, err := cont.NewTask(ctx, creator)
	releaseGroup()
	if err != nil {
		return "", r.withImageDamage(ctx, cont, img, fmt.Errorf("create task: %w", err))
	}
	st.Step("task")

	// 11. The shim's limit on the raw output files.
	if err := r.limitShim(task.Pid()); err != nil {
		log.Warn("cannot limit the shim's raw output files: what the container writes while tug is down is not bounded", "err", err)
	}

	// 12. The start, recorded before it happens so that a relist woken by
	// the start event sees it and a quick exit never precedes it.
	started := r.cfg.Clock.Now()
	if _, err := cont.SetLabels(ctx, map[string]string{podlabels.LabelStartedAt: started.UTC().Format(time.RFC3339Nano)}); err != nil {
		log.Warn("record start time", "err", err)
	}
	r.records.changed()
	st.Step("start_label")
	if err := task.Start(ctx); err != nil {
		return "", r.withImageDamage(ctx, cont, img, fmt.Errorf("start task: %w", err))
	}
	st.Step("start")
	log.Info("started container", "image", img.Name(), "attempt", attempt, "pid", task.Pid())
	log.Debug("container start steps", st.Attrs()...)
	return id, nil
}

// checkStart refuses a container tug must not start: privileged without
// --allow-privileged, or names that cannot be path components.
func (r *Runtime) checkStart(p *pod.Pod, c *pod.Container) error {
	if sc := c.SecurityContext; sc != nil && sc.Privileged != nil && *sc.Privileged && !r.cfg.AllowPrivileged {
		return specopts.ErrPrivilegedNotAllowed
	}
	if err := volume.CheckPod(p); err != nil {
		return err
	}
	return volume.CheckName("container name", c.Name)
}

// ensureImage makes c's image present (images.Ensure records its events)
// and returns the image with its config.
func (r *Runtime) ensureImage(ctx context.Context, p *pod.Pod, c *pod.Container) (containerd.Image, ocispec.ImageConfig, error) {
	img, err := r.images.Ensure(ctx, p, c)
	if err != nil {
		return nil, ocispec.ImageConfig{}, err
	}
	cfg, err := r.images.Config(ctx, img)
	if err != nil {
		err = fmt.Errorf("read image config of %s: %w", img.Name(), err)
		if derr := r.images.CheckContent(ctx, img.Target()); errors.Is(derr, pod.ErrImageDamaged) {
			err = fmt.Errorf("%w (%w)", derr, err)
		}
		return nil, ocispec.ImageConfig{}, err
	}
	return img, cfg, nil
}

// mounts stages c's volumes under stageDir and returns its mounts, its
// termination message file's included.
func (r *Runtime) mounts(p *pod.Pod, c *pod.Container, id, stageDir string) ([]specs.Mount, error) {
	mounts, err := r.volumes.Mounts(p, c, stageDir)
	if err != nil {
		return nil, err
	}
	m, err := r.volumes.TerminationMount(p, c, id, r.podLogDir(p))
	if err != nil {
		return nil, err
	}
	if m != nil {
		mounts = append(mounts, *m)
	}
	return mounts, nil
}

// specOpts returns the options of c's OCI spec, to apply after the
// image's config. Its env is read now, from the objects bound to the pod:
// fixed for the life of this container, as in Kubernetes.
func (r *Runtime) specOpts(ctx context.Context, p *pod.Pod, c *pod.Container, id string, img ocispec.ImageConfig, sb pod.Sandbox, res pod.LinuxResources, mounts []specs.Mount, group string) ([]oci.SpecOpts, error) {
	hostname, err := volume.Hostname(p)
	if err != nil {
		return nil, err
	}
	env, err := objects.Env(p, c, r.volumes.NodeInfo(sb), r.volumes)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", pod.ErrCreateContainerConfig, err)
	}
	resolved := *c
	resolved.Env, resolved.EnvFrom = env, nil
	opts := specopts.ForContainer(specopts.Params{
		ID:              id,
		Pod:             p,
		Container:       &resolved,
		Image:           img,
		Sandbox:         sb,
		Resources:       res,
		Mounts:          mounts,
		Hostname:        hostname,
		AllowPrivileged: r.cfg.AllowPrivileged,
		Seccomp:         specopts.SeccompConfig{Root: r.cfg.SeccompProfileRoot, DefaultUnconfined: r.cfg.DefaultSeccompUnconfined},
		AppArmor:        r.cfg.AppArmor,
	})
	if sec := p.ContainerSecurity(c); sec.AppArmorProfile != nil && !r.cfg.AppArmor {
		r.log.Warn("appArmorProfile has no effect: AppArmor is not enabled on this node",
			"pod", p.FullName(), "container", c.Name, "profile", sec.AppArmorProfile.Type)
	}
	opts = append(opts, withShimGroup(group))
	if r.cfg.Devices != nil {
		nodes, cdiNames, err := r.cfg.Devices.ContainerDevices(p, c)
		if err != nil {
			return nil, fmt.Errorf("%w: %w", pod.ErrCreateContainerConfig, err)
		}
		opts = append(opts, specopts.WithDeviceNodes(nodes), specopts.WithCDIDevices(r.cfg.Devices, cdiNames))
	}
	if sharesPID(p) {
		opt, err := r.withSharedPID(ctx, p)
		if err != nil {
			return nil, err
		}
		opts = append(opts, opt)
	}
	return opts, nil
}

// removeLeftover deletes a container (with its task) or a bare snapshot
// that an earlier failed try of this ID left. A container under this ID
// whose labels are not those of container name of pod uid is never touched:
// that is ErrContainerIDTaken.
func (r *Runtime) removeLeftover(ctx context.Context, id, uid, name string) error {
	cont, err := r.client.LoadContainer(ctx, id)
	if err == nil {
		labels, err := cont.Labels(ctx)
		if err != nil {
			return fmt.Errorf("load container %s: %w", id, err)
		}
		if !podlabels.OwnedBy(labels, uid, name) {
			return fmt.Errorf("%w: %s (pod uid %q, container %q)", ErrContainerIDTaken, id, labels[podlabels.LabelPodUID], labels[podlabels.LabelContainer])
		}
		r.log.Info("removing leftover container", "container", id)
		if err := r.deleteContainer(ctx, cont); err != nil {
			return fmt.Errorf("remove leftover container %s: %w", id, err)
		}
		return nil
	}
	if !errdefs.IsNotFound(err) {
		return fmt.Errorf("load container %s: %w", id, err)
	}
	sn := r.client.SnapshotService(r.cfg.Snapshotter)
	if err := sn.Remove(ctx, id); err != nil && !errdefs.IsNotFound(err) {
		return fmt.Errorf("remove leftover snapshot %s: %w", id, err)
	}
	return nil
}
