package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"tug/bench/internal/kit"
)

// podman runs `podman kube play` in a network namespace of its own (its
// bridge and rules never touch the host's), with podman's default storage
// and the image loaded from the same archive as containerd's.
type podman struct {
	bin   string
	dir   string
	netns *kit.Netns
	wrap  string // the OCI runtime podman runs: runcWrapper
}

// newPodman loads the image into podman and makes its network namespace.
func newPodman(ctx context.Context, bin, dir, archive string) (*podman, error) {
	p := &podman{bin: bin, dir: filepath.Join(dir, "podman")}
	if err := os.MkdirAll(p.dir, 0o700); err != nil {
		return nil, fmt.Errorf("podman work directory: %w", err)
	}
	self, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("podman's runtime wrapper: %w", err)
	}
	p.wrap = filepath.Join(p.dir, runcWrapperName)
	if err := os.Symlink(self, p.wrap); err != nil {
		return nil, fmt.Errorf("podman's runtime wrapper: %w", err)
	}
	if out, err := exec.CommandContext(ctx, bin, "load", "-q", "-i", archive).CombinedOutput(); err != nil {
		return nil, fmt.Errorf("podman load %s: %w: %s", archive, err, bytes.TrimSpace(out))
	}
	if p.netns, err = kit.NewNetns("podman"); err != nil {
		return nil, err
	}
	return p, nil
}

// command runs podman with args in its network namespace.
func (p *podman) command(ctx context.Context, args ...string) *exec.Cmd {
	cmd := p.netns.Command(p.bin, append([]string{"--runtime", p.wrap}, args...)...)
	return exec.CommandContext(ctx, cmd.Path, cmd.Args[1:]...)
}

// podmanMethod measures `podman kube play` of one file holding the n pods,
// on podman's bridge network or, with hostNet, the node's.
func podmanMethod(hostNet bool) method {
	name := "podman bridge"
	if hostNet {
		name = "podman hostNetwork"
	}
	return method{name: name, run: func(ctx context.Context, e *env, n, run int) (sample, error) {
		return e.podman.run(ctx, e.o.Image, hostNet, n, run)
	}}
}

// run is one measurement: t0 just before `podman kube play` starts, ready
// when it returns (it returns once every container has started); then it
// checks that the n pods' containers run and removes the pods (untimed,
// killed at once: `kube play --down` waits 10 s for each `sleep`, which
// ignores SIGTERM as its container's PID 1).
func (p *podman) run(ctx context.Context, image string, hostNet bool, n, run int) (sample, error) {
	prefix, hostLine := "p", ""
	if hostNet {
		prefix, hostLine = "q", "\n  hostNetwork: true"
	}
	var docs []string
	names := podNames(prefix, n, run)
	for _, name := range names {
		docs = append(docs, fmt.Sprintf(manifest, name, hostLine, image))
	}
	file := filepath.Join(p.dir, fmt.Sprintf("%s%d-%d.yaml", prefix, n, run))
	if err := os.WriteFile(file, []byte(strings.Join(docs, "---\n")), 0o600); err != nil {
		return sample{}, fmt.Errorf("write podman's manifest: %w", err)
	}
	mctx, cancel := context.WithTimeout(ctx, runTimeout(n))
	defer cancel()
	t0 := time.Now()
	out, err := p.command(mctx, "kube", "play", "-q", file).CombinedOutput()
	ready := time.Since(t0)
	if err == nil {
		err = p.checkRunning(mctx, strings.TrimSuffix(names[0], "00"), n)
	} else {
		err = fmt.Errorf("podman kube play: %w: %s", err, bytes.TrimSpace(out))
	}
	if derr := p.remove(ctx, names); derr != nil {
		err = errors.Join(err, derr)
	}
	return sample{ready: ready, firstCreate: -1, lastCreate: -1, lastTask: -1, createTask: -1, taskStart: -1, wall: ready, pickup: -1, cpu: -1, ctrdCPU: -1}, err
}

// checkRunning checks that n containers of the run (named <prefix>…)
// besides the pods' infra containers run.
func (p *podman) checkRunning(ctx context.Context, prefix string, n int) error {
	out, err := p.command(ctx, "ps", "--format", "json", "--filter", "name=^"+prefix).Output()
	if err != nil {
		return fmt.Errorf("podman ps: %w", err)
	}
	var cs []struct {
		IsInfra bool
		State   string
	}
	if err := json.Unmarshal(out, &cs); err != nil {
		return fmt.Errorf("podman ps: %w", err)
	}
	running := 0
	for _, c := range cs {
		if !c.IsInfra && c.State == "running" {
			running++
		}
	}
	if running != n {
		return fmt.Errorf("podman: %d containers running, want %d", running, n)
	}
	return nil
}

// remove kills and removes the named pods (those that exist).
func (p *podman) remove(ctx context.Context, names []string) error {
	args := append([]string{"pod", "rm", "--ignore", "--force", "--time", "0"}, names...)
	if out, err := p.command(ctx, args...).CombinedOutput(); err != nil {
		return fmt.Errorf("podman pod rm: %w: %s", err, bytes.TrimSpace(out))
	}
	return nil
}

// close removes podman's network namespace; each run removed its pods.
func (p *podman) close(context.Context) error {
	p.netns.Delete()
	return nil
}

// runcWrapperName is the name under which benchstart runs as podman's OCI
// runtime (a symlink to itself).
const runcWrapperName = "runc-rlimits"

// runcWrapper runs runc with args, after lowering the rlimits of a
// bundle's config.json (on create) to this process's hard limits. podman
// gives every container, its pods' infra containers too, 1048576 open
// files and 4194304 processes; a machine without CAP_SYS_RESOURCE (a
// container, a CI sandbox) cannot raise its own hard limits to that, and
// runc then fails. Decoding and writing the config is about a millisecond
// per container.
func runcWrapper(args []string) error {
	for i, a := range args {
		if a == "--bundle" && i+1 < len(args) {
			if err := lowerRlimits(filepath.Join(args[i+1], "config.json")); err != nil {
				return err
			}
		}
	}
	return unix.Exec(findRunc(), append([]string{"runc"}, args...), os.Environ())
}

// findRunc finds runc on PATH or, as podman runs its runtime with a PATH
// that may lack the sbin directories, where packages install it.
func findRunc() string {
	if p, err := exec.LookPath("runc"); err == nil {
		return p
	}
	for _, p := range []string{"/usr/local/sbin/runc", "/usr/sbin/runc", "/usr/local/bin/runc", "/usr/bin/runc"} {
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	return "runc"
}

// rlimitTypes maps the OCI names of the limits podman sets to their
// resources.
var rlimitTypes = map[string]int{"RLIMIT_NOFILE": unix.RLIMIT_NOFILE, "RLIMIT_NPROC": unix.RLIMIT_NPROC}

func lowerRlimits(path string) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	var spec map[string]any
	if err := json.Unmarshal(b, &spec); err != nil {
		return err
	}
	proc, _ := spec["process"].(map[string]any)
	rls, _ := proc["rlimits"].([]any)
	for _, r := range rls {
		rl, _ := r.(map[string]any)
		typ, _ := rl["type"].(string)
		res, ok := rlimitTypes[typ]
		if !ok {
			continue
		}
		var have unix.Rlimit
		if err := unix.Getrlimit(res, &have); err != nil {
			return err
		}
		for _, k := range []string{"hard", "soft"} {
			if v, ok := rl[k].(float64); ok && uint64(v) > have.Max {
				rl[k] = have.Max
			}
		}
	}
	if b, err = json.Marshal(spec); err != nil {
		return err
	}
	return os.WriteFile(path, b, 0o600)
}
