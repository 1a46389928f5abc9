package kit

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// TugConfig says how to run the tug under test.
type TugConfig struct {
	// Bin is the tug binary; "" builds ./agent into Dir (BuildTug).
	Bin string
	// Dir is the work directory: tug's directories (manifests, staging,
	// root, run, logs, images) and its log (tug.log) go below it.
	Dir        string
	Containerd string // socket
	Namespace  string // --containerd-namespace
	Hostname   string // --hostname-override: pod names known in advance
	LogLevel   string // --log-level; "" leaves tug's default (info)
	// Healthz turns tug's health port on, on a free loopback port, as in
	// production; off, tug runs without one.
	Healthz bool
	// Netns names tug's network namespace: bench-<Netns>-<pid>.
	Netns string
	// Args are more flags of "tug run", after the kit's own.
	Args []string
	// Env is added to tug's environment (NAME=value), e.g. SSL_CERT_FILE.
	Env []string
	// BeforeStart, when set, is called with tug's network namespace once
	// it exists, before tug starts: upstreams listen there from tug's
	// first request on.
	BeforeStart func(netns string) error
}

// Tug is a tug instance under test, in a network namespace of its own.
type Tug struct {
	Bin       string
	Dir       string
	LogPath   string
	Manifests string
	Staging   string // on the same file system as Manifests: rename from here
	RunDir    string
	LogsDir   string
	ImageDir  string

	cfg    TugConfig
	cmd    *exec.Cmd
	netns  *Netns
	exited chan struct{}
}

// NewTug creates tug's directories under cfg.Dir and builds tug unless
// cfg.Bin names a binary; Start starts it.
func NewTug(ctx context.Context, cfg TugConfig) (*Tug, error) {
	t := &Tug{
		Bin:       cfg.Bin,
		Dir:       cfg.Dir,
		LogPath:   filepath.Join(cfg.Dir, "tug.log"),
		Manifests: filepath.Join(cfg.Dir, "manifests"),
		Staging:   filepath.Join(cfg.Dir, "staging"),
		RunDir:    filepath.Join(cfg.Dir, "run"),
		LogsDir:   filepath.Join(cfg.Dir, "logs"),
		ImageDir:  filepath.Join(cfg.Dir, "images"),
		cfg:       cfg,
	}
	for _, d := range []string{t.Manifests, t.Staging, t.RunDir, t.LogsDir, t.ImageDir, filepath.Join(cfg.Dir, "root")} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return nil, fmt.Errorf("tug directories: %w", err)
		}
	}
	if t.Bin == "" {
		bin, err := BuildTug(ctx, cfg.Dir)
		if err != nil {
			return nil, err
		}
		t.Bin = bin
	}
	return t, nil
}

// BuildTug builds ./agent of the module the benchmark runs in (static, as
// `make build` does) into dir and returns the binary's path.
func BuildTug(ctx context.Context, dir string) (string, error) {
	return Build(ctx, "./agent", filepath.Join(dir, "tug"))
}

// Build builds the package pkg (a path relative to the root of the module
// the benchmark runs in) static, as `make build` builds tug, into bin.
func Build(ctx context.Context, pkg, bin string) (string, error) {
	out, err := exec.CommandContext(ctx, "go", "env", "GOMOD").Output()
	if err != nil {
		return "", fmt.Errorf("find the module: %w", err)
	}
	gomod := strings.TrimSpace(string(out))
	if gomod == "" || gomod == os.DevNull {
		return "", errors.New("find the module: not inside tug's module (run from the repository)")
	}
	cmd := exec.CommandContext(ctx, "go", "build", "-trimpath", "-tags", "grpcnotrace", "-o", bin, pkg)
	cmd.Dir = filepath.Dir(gomod)
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("build %s: %w\n%s", pkg, err, out)
	}
	return bin, nil
}

// Start starts tug on its directories, logging to LogPath, in a new
// network namespace and its own process group (a ^C to the benchmark
// reaches tug only through Stop).
func (t *Tug) Start() error {
	args := []string{"run",
		"--pod-manifest-path", t.Manifests,
		"--root-dir", filepath.Join(t.Dir, "root"),
		"--run-dir", t.RunDir,
		"--pod-logs-dir", t.LogsDir,
		"--image-dir", t.ImageDir,
		"--containerd-address", t.cfg.Containerd,
		"--containerd-namespace", t.cfg.Namespace,
		"--hostname-override", t.cfg.Hostname,
	}
	if t.cfg.LogLevel != "" {
		args = append(args, "--log-level", t.cfg.LogLevel)
	}
	if t.cfg.Healthz {
		port, err := FreePort()
		if err != nil {
			return err
		}
		args = append(args, "--healthz-port", strconv.Itoa(port))
	}
	args = append(args, t.cfg.Args...)
	logf, err := os.Create(t.LogPath)
	if err != nil {
		return fmt.Errorf("tug log: %w", err)
	}
	defer logf.Close()
	if t.netns, err = NewNetns(t.cfg.Netns); err != nil {
		return err
	}
	if t.cfg.BeforeStart != nil {
		if err := t.cfg.BeforeStart(t.netns.Name); err != nil {
			t.netns.Delete()
			return err
		}
	}
	t.cmd = t.netns.Command(t.Bin, args...)
	t.cmd.Stdout, t.cmd.Stderr = logf, logf
	if len(t.cfg.Env) > 0 {
		t.cmd.Env = append(os.Environ(), t.cfg.Env...)
	}
	t.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := t.cmd.Start(); err != nil {
		t.netns.Delete()
		return fmt.Errorf("start tug: %w", err)
	}
	t.exited = make(chan struct{})
	go func() {
		_ = t.cmd.Wait()
		t.netns.Delete(filepath.Join(t.RunDir, "node-net"))
		close(t.exited)
	}()
	return nil
}

// NetnsName is the network namespace tug runs in (under /run/netns), once
// Start made it.
func (t *Tug) NetnsName() (string, error) {
	if t.netns == nil {
		return "", errors.New("tug not started: no network namespace yet")
	}
	return t.netns.Name, nil
}

// PID is the pid of tug's process (nsenter execs tug).
func (t *Tug) PID() int { return t.cmd.Process.Pid }

// Exited reports whether tug has exited (or never started).
func (t *Tug) Exited() bool {
	if t.exited == nil {
		return true
	}
	select {
	case <-t.exited:
		return true
	default:
		return false
	}
}

// Alive fails, with the end of tug's log, if tug has exited.
func (t *Tug) Alive() error {
	if !t.Exited() {
		return nil
	}
	state := "not started"
	if t.cmd != nil {
		state = t.cmd.ProcessState.String()
	}
	return fmt.Errorf("tug exited (%s); its log ends:\n%s", state, t.Tail(20))
}

// WaitLogged waits until tug's log holds substr or wait has passed, and
// fails if tug exited meanwhile.
func (t *Tug) WaitLogged(ctx context.Context, substr string, wait time.Duration) error {
	deadline := time.Now().Add(wait)
	for time.Now().Before(deadline) {
		if err := t.Alive(); err != nil {
			return err
		}
		if err := Sleep(ctx, 20*time.Millisecond); err != nil {
			return err
		}
		if data, err := os.ReadFile(t.LogPath); err == nil && strings.Contains(string(data), substr) {
			return nil
		}
	}
	return nil
}

// Stop stops tug with SIGTERM (its pods keep running), and kills it if it
// has not exited after grace; that is an error.
func (t *Tug) Stop(grace time.Duration) error {
	if t.Exited() {
		return nil
	}
	if err := t.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		return fmt.Errorf("stop tug: %w", err)
	}
	select {
	case <-t.exited:
		return nil
	case <-time.After(grace):
	}
	if err := t.cmd.Process.Kill(); err != nil {
		return fmt.Errorf("kill tug: %w", err)
	}
	<-t.exited
	return fmt.Errorf("tug did not stop within %v of SIGTERM; killed it", grace)
}

// Tail returns the last n lines of tug's log.
func (t *Tug) Tail(n int) string {
	data, err := os.ReadFile(t.LogPath)
	if err != nil {
		return err.Error()
	}
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// LogSize returns the current size of tug's log: where the next lines
// begin.
func (t *Tug) LogSize() int64 {
	fi, err := os.Stat(t.LogPath)
	if err != nil {
		return 0
	}
	return fi.Size()
}

// FreePort picks a TCP port free on the host's loopback.
func FreePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}
