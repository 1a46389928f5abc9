package podruntime

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	tasks "github.com/containerd/containerd/api/services/tasks/v1"
	containerd "github.com/containerd/containerd/v2/client"
	"github.com/containerd/containerd/v2/core/containers"
	"github.com/containerd/containerd/v2/pkg/oci"
	"github.com/containerd/errdefs"
	"github.com/containerd/errdefs/pkg/errgrpc"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	specs "github.com/opencontainers/runtime-spec/specs-go"

	"tug/internal/objects"
	"tug/internal/pod"
	"tug/internal/podlabels"
	"tug/internal/podlogs"
	"tug/internal/specopts"
	"tug/internal/volume"
)

const (
	// runcRuntime is the shim every container runs under.
	runcRuntime = "io.containerd.runc.v2"
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
	// 1. The request, and the pod's user namespace.
	if err := r.checkStart(p, c); err != nil {
		return "", err
	}
	sb, err := r.withUserNS(p, sb)
	if err != nil {
		return "", err
	}
	id := podlabels.ContainerID(p, c.Name, attempt)
	log := r.log.With("pod", p.FullName(), "uid", p.Metadata.UID, "container", id)

	// 2. The image.
	img, imgConfig, err := r.ensureImage(ctx, p, c)
	if err != nil {
		return "", err
	}
	imageVolumes, err := r.mountImageVolumes(ctx, p, c)
	if err != nil {
		return "", err
	}

	// 3. The log directory: only this attempt's log and the previous one's
	// are kept.
	logPath := r.ContainerLogPath(p, c.Name, attempt)
	if err := os.MkdirAll(filepath.Dir(logPath), 0o755); err != nil {
		return "", fmt.Errorf("create log directory: %w", err)
	}
	if err := podlogs.Prune(filepath.Dir(logPath), attempt-1); err != nil {
		log.Warn("remove logs of earlier attempts", "err", err)
	}

	// 4. What an earlier try of this ID left.
	if err := r.removeLeftover(ctx, id, p.Metadata.UID, c.Name); err != nil {
		return "", err
	}

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

	// 6. The shim group, held until the task is created.
	group, releaseGroup, err := r.shimGroupFor(ctx, p.Metadata.UID, id)
	if err != nil {
		return "", err
	}
	defer releaseGroup()

	// 7. The spec.
	specOpts, err := r.specOpts(ctx, p, c, id, imgConfig, sb, res, mounts, group)
	if err != nil {
		return "", err
	}

	// 8. The container. From here on a failure removes what was made; a
	// container that exists already was made by someone else, and its
	// snapshot is not ours to remove.
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
		containerd.WithNewSpec(append([]oci.SpecOpts{oci.WithImageConfig(img)}, specOpts...)...),
		containerd.WithContainerLabels(podlabels.ForContainer(p, c, init, attempt, img.Target().Digest.String(), sb.CgroupParent)),
		containerd.WithAdditionalContainerLabels(map[string]string{LabelShimGroup: group}),
		containerd.WithAdditionalContainerLabels(podlabels.ImageVolumes(imageVolumes)),
		withStopSignal(stopSignal(c, imgConfig)),
		containerd.WithRuntime(runcRuntime, nil),
	)
	r.records.changed()
	// NewContainer's lease lets GC collect a snapshot it made, but not
	// before a retry would trip over it: it is removed here.
	owned = err == nil || !errdefs.IsAlreadyExists(err)
	if err != nil {
		cont = nil // only the snapshot, if NewContainer made one
		return "", err
	}
	// From here on the start runs to its end whatever happens to ctx (tug
	// stopping): a task that containerd started while the call was being
	// cancelled must not be taken for a failure and killed.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), startTimeout)
	defer cancel()

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
	task, err := cont.NewTask(ctx, creator)
	releaseGroup()
	if err != nil {
		return "", r.withImageDamage(ctx, cont, img, fmt.Errorf("create task: %w", err))
	}

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
	if err := task.Start(ctx); err != nil {
		return "", r.withImageDamage(ctx, cont, img, fmt.Errorf("start task: %w", err))
	}
	log.Info("started container", "image", img.Name(), "attempt", attempt, "pid", task.Pid())
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
	imgSpec, err := img.Spec(ctx)
	if err != nil {
		err = fmt.Errorf("read image config of %s: %w", img.Name(), err)
		if derr := r.images.CheckContent(ctx, img.Target()); errors.Is(derr, pod.ErrImageDamaged) {
			err = fmt.Errorf("%w (%w)", derr, err)
		}
		return nil, ocispec.ImageConfig{}, err
	}
	return img, imgSpec.Config, nil
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

// cleanup removes what a failed start created: the task, the container and
// its snapshot (or the bare snapshot when cont is nil). It runs on a context
// of its own so that a cancelled start leaks nothing.
func (r *Runtime) cleanup(ctx context.Context, id string, cont containerd.Container, log *slog.Logger) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
	defer cancel()
	var err error
	if cont != nil {
		err = r.deleteContainer(ctx, cont)
	} else {
		err = r.client.SnapshotService(r.cfg.Snapshotter).Remove(ctx, id)
	}
	if err != nil && !errdefs.IsNotFound(err) {
		log.Warn("clean up after failed start", "err", err)
	}
}

// deleteContainer kills and deletes the container's task, if any, then the
// container and its snapshot.
func (r *Runtime) deleteContainer(ctx context.Context, cont containerd.Container) error {
	task, err := cont.Task(ctx, nil)
	switch {
	case err == nil:
		unlock := r.deletes.lock(cont.ID()) // see reap
		_, err := task.Delete(ctx, containerd.WithProcessKill)
		unlock()
		if err != nil && !errdefs.IsNotFound(err) {
			// A reap may have deleted the task between our load and our
			// delete, which can surface as a closed ttrpc connection to
			// its shim: only a task that is still there is a failure.
			if _, terr := cont.Task(ctx, nil); !errdefs.IsNotFound(terr) {
				return fmt.Errorf("delete task: %w", err)
			}
		}
	case !errdefs.IsNotFound(err):
		return fmt.Errorf("load task: %w", err)
	}
	r.logTaskDeleted(cont.ID())
	err = cont.Delete(ctx, containerd.WithSnapshotCleanup)
	if errdefs.IsNotFound(err) {
		// The snapshot is gone (an image repair removed it): the
		// snapshot clean-up fails before the record is deleted.
		err = cont.Delete(ctx)
	}
	r.records.changed()
	if err != nil && !errdefs.IsNotFound(err) {
		return err
	}
	return nil
}

// WaitContainer blocks until the container's task has exited and returns
// its exit code, at once if it already has. The exit is then recorded in the
// container's labels and the task deleted (see reap), which also makes the
// log file complete. For a task that is already deleted the exit code
// recorded in the labels is returned; for one that vanished unseen (its shim
// died, the host rebooted), 255. A container that was never started is
// ErrNoTask; a missing one ErrContainerNotFound.
func (r *Runtime) WaitContainer(ctx context.Context, id string) (int, error) {
	code, err := r.waitContainer(r.ctx(ctx), id)
	if cerr := contextErr(ctx); err != nil && cerr != nil && !errors.Is(err, cerr) {
		// containerd reports a deadline that passed during a call as
		// "Unknown"; the caller's context says what really happened.
		return 0, fmt.Errorf("wait for container %s: %w", id, cerr)
	}
	return code, err
}

// contextErr is ctx.Err(), or DeadlineExceeded once ctx's deadline has
// passed even if its timer has not fired yet: on a loaded machine
// containerd's end of a call can see the deadline pass first.
func contextErr(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if dl, ok := ctx.Deadline(); ok && !time.Now().Before(dl) {
		return context.DeadlineExceeded
	}
	return nil
}

func (r *Runtime) waitContainer(ctx context.Context, id string) (int, error) {
	cont, err := r.client.LoadContainer(ctx, id)
	if err != nil {
		return 0, fmt.Errorf("wait for container %s: %w", id, notFound(err))
	}
	task, err := cont.Task(ctx, nil)
	if err != nil {
		if errdefs.IsNotFound(err) {
			return r.exitFromLabels(ctx, cont)
		}
		return 0, fmt.Errorf("wait for container %s: %w", id, err)
	}
	ch, err := task.Wait(ctx)
	if err != nil {
		return 0, fmt.Errorf("wait for container %s: %w", id, err)
	}
	select {
	case st := <-ch:
		code, at, err := st.Result()
		if err != nil {
			if errdefs.IsNotFound(err) { // deleted meanwhile
				return r.exitFromLabels(ctx, cont)
			}
			if ctx.Err() != nil {
				return 0, fmt.Errorf("wait for container %s: %w", id, ctx.Err())
			}
			return 0, fmt.Errorf("wait for container %s: %w", id, err)
		}
		if err := r.reap(ctx, id, code, at); err != nil {
			r.log.Warn("reap exited task", "container", id, "err", err)
		}
		return int(code), nil
	case <-ctx.Done():
		return 0, fmt.Errorf("wait for container %s: %w", id, ctx.Err())
	}
}

// exitFromLabels returns the exit code of a container whose task is gone.
func (r *Runtime) exitFromLabels(ctx context.Context, cont containerd.Container) (int, error) {
	labels, err := cont.Labels(ctx)
	if err != nil {
		return 0, fmt.Errorf("wait for container %s: %w", cont.ID(), notFound(err))
	}
	if code, _, ok := podlabels.ReadExit(labels); ok {
		return code, nil
	}
	if _, started := labels[podlabels.LabelStartedAt]; started {
		return unknownExitCode, nil
	}
	return 0, fmt.Errorf("wait for container %s: %w", cont.ID(), ErrNoTask)
}

// StopContainer stops the container's task: its stop signal (see
// stopSignal; SIGTERM by default), up to grace for it to exit, then SIGKILL and a bounded wait (10 s); then it records the exit code
// and time in the container's labels and deletes the task (see reap). A
// missing container or one without a task is not an error.
func (r *Runtime) StopContainer(ctx context.Context, id string, grace time.Duration) error {
	ctx = r.ctx(ctx)
	if err := r.stopContainer(ctx, id, grace); err != nil {
		return fmt.Errorf("stop container %s: %w", id, err)
	}
	return nil
}

func (r *Runtime) stopContainer(ctx context.Context, id string, grace time.Duration) error {
	cont, err := r.client.LoadContainer(ctx, id)
	if errdefs.IsNotFound(err) {
		return nil
	} else if err != nil {
		return err
	}
	task, err := cont.Task(ctx, nil)
	if errdefs.IsNotFound(err) {
		return nil
	} else if err != nil {
		return err
	}
	st, err := task.Status(ctx)
	if errdefs.IsNotFound(err) {
		return nil
	} else if err != nil {
		return err
	}
	if st.Status != containerd.Stopped {
		exited, err := task.Wait(ctx)
		if err != nil {
			return err
		}
		done := false
		if grace > 0 {
			sig, err := containerd.GetStopSignal(ctx, cont, syscall.SIGTERM)
			if err != nil {
				r.log.Warn("stop signal unreadable, sending SIGTERM", "container", id, "err", err)
				sig = syscall.SIGTERM
			}
			if err := task.Kill(ctx, sig); err != nil && !errdefs.IsNotFound(err) {
				return fmt.Errorf("send %v: %w", sig, err)
			}
			if done, err = waitExit(ctx, exited, grace); err != nil {
				return err
			}
		}
		if !done {
			if err := task.Kill(ctx, syscall.SIGKILL, containerd.WithKillAll); err != nil && !errdefs.IsNotFound(err) {
				return fmt.Errorf("send SIGKILL: %w", err)
			}
			if done, err = waitExit(ctx, exited, killTimeout); err != nil {
				return err
			}
			if !done {
				return fmt.Errorf("task did not exit %s after SIGKILL", killTimeout)
			}
		}
		if st, err = task.Status(ctx); err != nil {
			return err
		}
	}
	if err := r.reap(ctx, id, st.ExitStatus, st.ExitTime); err != nil {
		return err
	}
	r.log.Info("stopped container", "container", id, "exit", st.ExitStatus)
	return nil
}

// reap records the exit of container id's stopped task in the container's
// labels, then deletes the task, which ends its shim (unless other tasks of
// its group still run in it). The shim keeps the container's output pipes
// open until then, so only now does the logger see their end, write a last
// line that had no newline, and exit (the delete waits for that). The
// labels are written first, so the exit status is never lost. It runs on a
// context of its own, bounded, so that a caller giving up does not leave it
// half done. A task already deleted is not an error.
//
// Every delete of a task (this one, and deleteContainer's) holds r.deletes
// for the container: two at once can strand its shim in containerd 1.6.
// Both go through containerd's one connection to the shim; the one that
// ends first asks the shim to shut down (which it refuses while it still
// holds the container) and closes that connection, so the other fails with
// "ttrpc: closed" and never asks again: the shim lives on, idle, with
// nothing to end it. CI's leak check caught this twice in
// TestRestartPolicies, each time an init container, whose exit is reaped by
// its wait and by the listing.
func (r *Runtime) reap(ctx context.Context, id string, code uint32, at time.Time) error {
	r.reaps.add()
	defer r.reaps.done()
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
	defer cancel()
	rec := containers.Container{ID: id, Labels: podlabels.Exit(code, at)}
	_, err := r.client.ContainerService().Update(ctx, rec, "labels."+podlabels.LabelExitCode, "labels."+podlabels.LabelFinishedAt)
	r.records.changed()
	if err != nil {
		return fmt.Errorf("record exit status: %w", err)
	}
	unlock := r.deletes.lock(id)
	_, err = r.client.TaskService().Delete(ctx, &tasks.DeleteTaskRequest{ContainerID: id})
	unlock()
	if err != nil {
		if err = errgrpc.ToNative(err); !errdefs.IsNotFound(err) {
			return fmt.Errorf("delete task: %w", err)
		}
	}
	r.logTaskDeleted(id)
	r.log.Debug("reaped task", "container", id, "exit", code)
	return nil
}

// reapCount counts the reaps under way, so that Close can wait for them.
type reapCount struct {
	mu   sync.Mutex
	n    int
	zero *sync.Cond
}

func (c *reapCount) add() {
	c.mu.Lock()
	c.n++
	c.mu.Unlock()
}

func (c *reapCount) done() {
	c.mu.Lock()
	if c.n--; c.n == 0 && c.zero != nil {
		c.zero.Broadcast()
	}
	c.mu.Unlock()
}

// wait returns once no reap is under way.
func (c *reapCount) wait() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.zero == nil {
		c.zero = sync.NewCond(&c.mu)
	}
	for c.n > 0 {
		c.zero.Wait()
	}
}

// waitExit waits up to d for the task's exit; it reports whether it came.
func waitExit(ctx context.Context, exited <-chan containerd.ExitStatus, d time.Duration) (bool, error) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-exited:
		return true, nil
	case <-t.C:
		return false, nil
	case <-ctx.Done():
		return false, ctx.Err()
	}
}

// RemoveContainer deletes the container and its snapshot (killing a task
// that is still there). A missing container is not an error.
func (r *Runtime) RemoveContainer(ctx context.Context, id string) error {
	ctx = r.ctx(ctx)
	cont, err := r.client.LoadContainer(ctx, id)
	if errdefs.IsNotFound(err) {
		return nil
	} else if err != nil {
		return fmt.Errorf("remove container %s: %w", id, err)
	}
	if err := r.deleteContainer(ctx, cont); err != nil {
		return fmt.Errorf("remove container %s: %w", id, err)
	}
	r.log.Debug("removed container", "container", id)
	return nil
}

// notFound turns containerd's not-found into ErrContainerNotFound.
func notFound(err error) error {
	if errdefs.IsNotFound(err) {
		return fmt.Errorf("%w: %w", ErrContainerNotFound, err)
	}
	return err
}
