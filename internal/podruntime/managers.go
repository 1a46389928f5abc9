package podruntime

import (
	"context"

	containerd "github.com/containerd/containerd/v2/client"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"github.com/opencontainers/runtime-spec/specs-go"

	"tug/internal/objects"
	"tug/internal/pod"
)

// Images is what the runtime needs of the image store (implemented by
// images.Manager): an image present as a container's imagePullPolicy says,
// the damage checks of a start and the repair of a damaged image.
type Images interface {
	Ensure(ctx context.Context, p *pod.Pod, c *pod.Container) (containerd.Image, error)
	// EnsureAhead is Ensure before a running container is replaced: the
	// start that follows does not pull the image again.
	EnsureAhead(ctx context.Context, p *pod.Pod, c *pod.Container) (containerd.Image, error)
	Local(ctx context.Context, ref string) (containerd.Image, error)
	// Config returns an image's config (user, entrypoint, environment).
	Config(ctx context.Context, img containerd.Image) (ocispec.ImageConfig, error)
	CheckEntrypoint(ctx context.Context, img containerd.Image, args0 string, env []string, cwd string) error
	CheckContent(ctx context.Context, target ocispec.Descriptor) error
	Repair(ctx context.Context, p *pod.Pod, c *pod.Container, damage error, removable func(key string) bool) error
	// ForgetPod drops what was noted of the pod's pulls.
	ForgetPod(uid string)
}

// Volumes is what the runtime needs of the pods' volumes (implemented by
// volume.Manager): a pod's volumes made and removed, a container's mounts
// and staging directory, its termination message and environment
// files, and the mounts of image
// volumes.
type Volumes interface {
	Prepare(p *pod.Pod, sb pod.Sandbox) error
	Remove(uid string) error
	NodeInfo(sb pod.Sandbox) objects.NodeInfo
	StagingDir(uid, id string) string
	Mounts(p *pod.Pod, c *pod.Container, stageDir string) ([]specs.Mount, error)
	TerminationMount(p *pod.Pod, c *pod.Container, id, logDir string) (*specs.Mount, error)
	TerminationMessage(rc *pod.RuntimeContainer) (msg, fallbackLog string)
	// ReadEnvFile reads a file of a volume for a container's
	// fileKeyRef environment variables.
	ReadEnvFile(p *pod.Pod, volume, path string) ([]byte, error)
	// MountImageVolumes mounts the image volumes c mounts and returns
	// the image ID of each, by volume name; PullImageVolumes makes their
	// images present without mounting anything.
	MountImageVolumes(ctx context.Context, p *pod.Pod, c *pod.Container) (map[string]string, error)
	PullImageVolumes(ctx context.Context, p *pod.Pod, c *pod.Container) error
	// RemoveImageViews removes the image volume views of pod uid, and
	// ImageViewUIDs lists the pods that have one.
	RemoveImageViews(ctx context.Context, uid string) error
	ImageViewUIDs(ctx context.Context) ([]string, error)
}

// Logs is the converter of the file log drivers' raw output files
// (implemented by podlogs.Pumps): the raw files of a new container
// attempt, whether shims are to be limited, and a task's end.
type Logs interface {
	// RawBase is the base of an attempt's raw files; Create sets them up
	// and returns the paths the shim writes stdout and stderr to.
	RawBase(uid, container string, attempt int) string
	Create(id, cri, base string) (stdout, stderr string, err error)
	// LimitsShims reports whether shims are to be limited (LimitShim).
	LimitsShims() bool
	// TaskDeleted says the shim of container id has written everything.
	TaskDeleted(id string)
}
