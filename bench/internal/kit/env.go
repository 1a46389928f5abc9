package kit

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/moby/sys/mountinfo"
	"golang.org/x/sys/unix"
)

// Options are the flags every benchmark that runs tug against containerd
// shares; their defaults come from the test environment's env file
// (eval "$(scripts/testenv.sh env)").
type Options struct {
	Containerd string
	Image      string
	Archive    string
	Tug        string
	Keep       bool
	Markdown   bool
}

// Flags registers the options on fs.
func (o *Options) Flags(fs *flag.FlagSet) {
	fs.StringVar(&o.Containerd, "containerd", os.Getenv("TUG_TEST_CONTAINERD"), "containerd socket (default $TUG_TEST_CONTAINERD)")
	fs.StringVar(&o.Image, "image", EnvOr("TUG_TEST_IMAGE", "docker.io/library/busybox:1.35"), "image of the pods (default $TUG_TEST_IMAGE)")
	fs.StringVar(&o.Archive, "archive", os.Getenv("TUG_TEST_IMAGE_ARCHIVE"), "OCI archive holding -image (default $TUG_TEST_IMAGE_ARCHIVE)")
	fs.StringVar(&o.Tug, "tug", "", "tug binary (default: build ./agent into the work directory)")
	fs.BoolVar(&o.Keep, "keep", false, "keep the work directory (tug's log) instead of removing it")
	fs.BoolVar(&o.Markdown, "markdown", false, "print the report's tables as markdown (for docs/benchmarks.md)")
}

// Check returns what is missing: a containerd, an image archive, root.
func (o *Options) Check() error {
	var errs []error
	if o.Containerd == "" {
		errs = append(errs, errors.New(`-containerd: not set and $TUG_TEST_CONTAINERD is empty (eval "$(scripts/testenv.sh env)")`))
	}
	if o.Archive == "" {
		errs = append(errs, errors.New("-archive: not set and $TUG_TEST_IMAGE_ARCHIVE is empty"))
	}
	return errors.Join(append(errs, CheckRoot())...)
}

// CheckRoot fails unless the program runs as root.
func CheckRoot() error {
	if os.Geteuid() != 0 {
		return errors.New("needs root (containerd, namespaces, mounts)")
	}
	return nil
}

// EnvOr returns the environment variable key, or def when it is empty.
func EnvOr(key, def string) string {
	if v := os.Getenv(key); v != "" {
		return v
	}
	return def
}

// TestenvContainerdPID reads the pid of scripts/testenv.sh's containerd
// ($TUG_TESTENV_DIR/containerd.pid).
func TestenvContainerdPID() (int, error) {
	dir := os.Getenv("TUG_TESTENV_DIR")
	if dir == "" {
		return 0, errors.New("$TUG_TESTENV_DIR is empty")
	}
	data, err := os.ReadFile(filepath.Join(dir, "containerd.pid"))
	if err != nil {
		return 0, err
	}
	return strconv.Atoi(strings.TrimSpace(string(data)))
}

// WorkDir makes a temporary work directory tug-<name>-*, and says where.
func WorkDir(name string) (string, error) {
	dir, err := os.MkdirTemp("", "tug-"+name+"-")
	if err != nil {
		return "", fmt.Errorf("work directory: %w", err)
	}
	fmt.Fprintf(os.Stderr, "%s: work directory %s\n", name, dir)
	return dir, nil
}

// RemoveWorkDir unmounts what is mounted below dir (tug's namespace pins)
// and removes it; with keep, or when unmounting failed, it leaves it and
// says so.
func RemoveWorkDir(name, dir string, keep bool) error {
	err := UnmountUnder(dir)
	switch {
	case keep:
		fmt.Fprintf(os.Stderr, "%s: kept %s\n", name, dir)
	case err != nil:
		fmt.Fprintf(os.Stderr, "%s: clean-up failed, kept %s\n", name, dir)
	default:
		err = os.RemoveAll(dir)
	}
	return err
}

// UnmountUnder detaches every mount at or below dir, deepest first (tug's
// namespace pins under <run>/ns, and <run>/ns itself, stacked as often as
// they are).
func UnmountUnder(dir string) error {
	for range 10 {
		ms, err := mountinfo.GetMounts(mountinfo.PrefixFilter(dir))
		if err != nil {
			return err
		}
		if len(ms) == 0 {
			return nil
		}
		slices.SortFunc(ms, func(a, b *mountinfo.Info) int { return len(b.Mountpoint) - len(a.Mountpoint) })
		for _, m := range ms {
			if err := unix.Unmount(m.Mountpoint, unix.MNT_DETACH); err != nil && !errors.Is(err, unix.EINVAL) && !errors.Is(err, unix.ENOENT) {
				return fmt.Errorf("unmount %s: %w", m.Mountpoint, err)
			}
		}
	}
	return fmt.Errorf("mounts left under %s", dir)
}

// CopyFile copies src to dst.
func CopyFile(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.Create(dst)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

// Sleep waits d, or until ctx ends.
func Sleep(ctx context.Context, d time.Duration) error {
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(d):
		return nil
	}
}

// Run is the end of a benchmark's main: unless err (what checking the
// flags found) is set, it runs f with a context that ends on SIGINT or
// SIGTERM; an error of either is printed after name and exits 1.
func Run(name string, err error, f func(ctx context.Context) error) {
	if err == nil {
		ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
		err = f(ctx)
		stop()
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, name+":", err)
		os.Exit(1)
	}
}
