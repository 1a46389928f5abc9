package kit

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	containerd "github.com/containerd/containerd/v2/client"

	"tug/internal/api"
	"tug/internal/pod"
	"tug/internal/podview"
)

// API returns a client of tug's API socket.
func (t *Tug) API() *api.Client { return &api.Client{SocketPath: filepath.Join(t.RunDir, "tug.sock")} }

// AllRunning reports whether pod v is Running with every one of its n
// containers running.
func AllRunning(n int) func(v *podview.View) bool {
	return func(v *podview.View) bool {
		if v.Status.Phase != pod.PhaseRunning || len(v.Status.ContainerStatuses) != n {
			return false
		}
		for _, cs := range v.Status.ContainerStatuses {
			if cs.State.Running == nil {
				return false
			}
		}
		return true
	}
}

// WaitPods waits until tug's API lists want pods for which ok holds (every
// pod but none when want is 0), polling every 100 ms; it fails at once
// when tug exits.
func (t *Tug) WaitPods(ctx context.Context, want int, timeout time.Duration, ok func(v *podview.View) bool) error {
	c := t.API()
	deadline := time.Now().Add(timeout)
	last := "no answer yet"
	for time.Now().Before(deadline) {
		if err := t.Alive(); err != nil {
			return err
		}
		if list, err := c.Pods(ctx); err != nil {
			last = err.Error()
		} else {
			n := 0
			for i := range list.Items {
				if ok(&list.Items[i]) {
					n++
				}
			}
			if n == want {
				return nil
			}
			last = fmt.Sprintf("%d of %d pods as wanted", n, want)
		}
		if err := Sleep(ctx, 100*time.Millisecond); err != nil {
			return err
		}
	}
	return fmt.Errorf("pods not as wanted within %v: %s", timeout, last)
}

// Teardown is the end of a benchmark with one tug: TeardownTug, then the
// work directory dir (kept when keep is set or anything failed). It uses
// its own context, so it also runs after an interrupt. name prefixes its
// messages.
func Teardown(name string, client *containerd.Client, tug *Tug, namespace, dir string, keep bool, remove func(ctx context.Context) error) error {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	err := TeardownTug(ctx, name, client, tug, namespace, remove)
	if err != nil {
		keep = true
		fmt.Fprintf(os.Stderr, "%s: clean-up failed, keeping %s\n", name, dir)
	}
	return errors.Join(err, RemoveWorkDir(name, dir, keep))
}

// TeardownTug removes the pods through tug (remove, or else deleting
// every manifest and waiting for the containers to go), stops tug (nil:
// none was made) and removes what is left in namespace. name prefixes its
// messages.
func TeardownTug(ctx context.Context, name string, client *containerd.Client, tug *Tug, namespace string, remove func(ctx context.Context) error) error {
	var errs []error
	if tug != nil && !tug.Exited() {
		if remove == nil {
			remove = func(ctx context.Context) error {
				ms, _ := filepath.Glob(filepath.Join(tug.Manifests, "*.yaml"))
				for _, m := range ms {
					errs = append(errs, os.Remove(m))
				}
				return WaitGone(ctx, client, namespace, time.Minute, nil)
			}
		}
		if err := remove(ctx); err != nil {
			fmt.Fprintf(os.Stderr, "%s: tug did not remove its pods: %v; removing them directly\n", name, err)
		}
		errs = append(errs, tug.Stop(20*time.Second))
	}
	errs = append(errs, Purge(ctx, client, namespace, nil), RemoveNamespace(ctx, client, namespace))
	return errors.Join(errs...)
}
