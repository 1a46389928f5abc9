package kit

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	containerd "github.com/containerd/containerd/v2/client"
)

// Session is one run of a benchmark with one tug at a time against
// containerd: the client, the work directory and the benchmark's
// namespace. Open starts it; Close ends it (Teardown, then the client).
// It is not safe for concurrent use.
type Session struct {
	Name      string // the program's name, which prefixes its messages
	Client    *containerd.Client
	Dir       string // the work directory
	Namespace string // the benchmark's containerd namespace
	// Tug is the tug NewTug made last, nil before; Close stops it.
	Tug *Tug
	// Remove, when set, is how Close has tug remove its pods (Teardown's
	// remove); nil deletes every manifest and waits for the containers.
	Remove func(ctx context.Context) error

	opts      Options
	ownClient bool // Close closes Client
}

// Open connects to o.Containerd and starts a session on that client
// (OpenClient); Close closes the client too.
func Open(ctx context.Context, name string, o Options, namespace string) (*Session, error) {
	client, err := Connect(o.Containerd)
	if err != nil {
		return nil, err
	}
	s, err := OpenClient(ctx, name, client, o, namespace)
	if err != nil {
		return nil, errors.Join(err, client.Close())
	}
	s.ownClient = true
	return s, nil
}

// OpenClient makes the work directory tug-<name>-* and removes what an
// earlier run left in namespace, through client, which the caller keeps
// (Close leaves it open). When that removal fails it ends the session
// again (Close) and returns nil.
func OpenClient(ctx context.Context, name string, client *containerd.Client, o Options, namespace string) (*Session, error) {
	dir, err := WorkDir(name)
	if err != nil {
		return nil, err
	}
	s := &Session{Name: name, Client: client, Dir: dir, Namespace: namespace, opts: o}
	if err := Purge(ctx, client, namespace, nil); err != nil {
		return nil, errors.Join(fmt.Errorf("remove leftovers of an earlier run: %w", err), s.Close())
	}
	return s, nil
}

// NewTug makes a tug in the session (NewTug) and makes it s.Tug. Unset
// fields of cfg come from the session: the binary (-tug, or the one an
// earlier NewTug of the session built), the work directory, the
// containerd socket and the namespace. It does not stop s.Tug.
func (s *Session) NewTug(ctx context.Context, cfg TugConfig) (*Tug, error) {
	if cfg.Bin == "" {
		cfg.Bin = s.opts.Tug
	}
	if cfg.Dir == "" {
		cfg.Dir = s.Dir
	}
	if cfg.Containerd == "" {
		cfg.Containerd = s.opts.Containerd
	}
	if cfg.Namespace == "" {
		cfg.Namespace = s.Namespace
	}
	t, err := NewTug(ctx, cfg)
	if err != nil {
		return nil, err
	}
	s.opts.Tug = t.Bin // built once
	s.Tug = t
	return t, nil
}

// Close ends the session: Teardown (tug's pods, tug, the namespace, the
// work directory unless -keep or anything failed), then the client if
// Open made it.
func (s *Session) Close() error {
	err := Teardown(s.Name, s.Client, s.Tug, s.Namespace, s.Dir, s.opts.Keep, s.Remove)
	if s.ownClient {
		err = errors.Join(err, s.Client.Close())
	}
	return err
}

// AddImage puts the image archive into tug's image directory: tug imports
// it at start, as on an offline device.
func (t *Tug) AddImage(archive string) error {
	if err := CopyFile(archive, filepath.Join(t.ImageDir, filepath.Base(archive))); err != nil {
		return fmt.Errorf("image archive: %w", err)
	}
	return nil
}

// WriteSleepPods writes n one-container pods, PREFIX-00, PREFIX-01, ...,
// into tug's manifest directory: each sleeps a day in image, with no grace
// period; pullPolicy, when set, is the container's imagePullPolicy.
func (t *Tug) WriteSleepPods(prefix string, n int, image, pullPolicy string) error {
	for i := range n {
		name := fmt.Sprintf("%s-%02d", prefix, i)
		if err := os.WriteFile(filepath.Join(t.Manifests, name+".yaml"), []byte(SleepPod(name, image, pullPolicy)), 0o644); err != nil {
			return err
		}
	}
	return nil
}

// SleepPod is the manifest of pod name: one container sleeping a day in
// image, no grace period; pullPolicy, when set, is its imagePullPolicy.
func SleepPod(name, image, pullPolicy string) string {
	policy := ""
	if pullPolicy != "" {
		policy = "      imagePullPolicy: " + pullPolicy + "\n"
	}
	return fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata:
  name: %s
spec:
  terminationGracePeriodSeconds: 0
  containers:
    - name: main
      image: %s
%s      command: ["sleep", "86400"]
`, name, image, policy)
}
