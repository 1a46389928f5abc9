// Command benchfootprint measures what running pods costs in memory beside
// the containers themselves ("make bench"), tug against podman in the same
// run: tug with N one-container pods (pod networking), then
// `podman kube play` of the same N pods. It reports PSS (from
// /proc/PID/smaps_rollup) of tug, of every process tug caused that is not
// a container's (shims, log drivers, whatever the design of the day runs),
// and of podman's conmons, with the per-pod figure of each and their
// ratio. Beside tug it runs the floor (./floor: a Go containerd client
// making only the PLEG's calls, with tug's runtime settings and page-out), measured
// in the same moment: the least any agent written against containerd's
// Go client would cost, so that what tug adds to it is plain.
//
//	go run ./bench/benchfootprint [-pods 30] [-settle 60s] [-podman=false] [-floor=false] [-shim-grouping pod|node] [-tug ./tug] [-keep] [-markdown]
//
// The processes tug caused are found without assuming a design: the
// containerd shims of the benchmark's namespace on its containerd, and
// every descendant of those shims and of tug that is not a container's
// process (not a task nor below one). podman runs as root with its own
// storage, run and network directories under the work directory, in a
// network namespace of its own: it touches neither tug's containerd nor
// the host's network. Debian's podman (and catatonit, for its pause image)
// are installed with apt-get if missing; the image comes from the test
// image archive.
//
// It needs root and a containerd (scripts/testenv.sh up). It prints
// PASS/FAIL against its targets (tug's total under 100 MiB at
// 30 pods; per pod within 1.5x of podman's) and exits 0 either way: it is a
// measurement.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	containerd "github.com/containerd/containerd/v2/client"
	specs "github.com/opencontainers/runtime-spec/specs-go"
	"golang.org/x/sys/unix"

	"tug/bench/internal/kit"
	"tug/internal/api"
	"tug/internal/pod"
)

const (
	namespace = "bench-footprint"
	hostname  = "bench"
)

// Targets: tug's footprint with 30 pods.
const (
	targetTotal    = 100 // MiB, tug and what it caused, at 30 pods
	targetPerPodX  = 1.5 // tug's per-pod cost / podman's
	podmanPackages = "podman catatonit"
)

type options struct {
	kit.Options
	pods         int
	settle       time.Duration
	shimGrouping string
	podman       bool
	floor        bool
}

func main() {
	if filepath.Base(os.Args[0]) == runcWrapper {
		if err := wrapRunc(os.Args[1:]); err != nil {
			fmt.Fprintln(os.Stderr, "benchfootprint runc wrapper:", err)
			os.Exit(1)
		}
	}
	var o options
	o.Flags(flag.CommandLine)
	flag.IntVar(&o.pods, "pods", 30, "number of running one-container pods")
	flag.DurationVar(&o.settle, "settle", 60*time.Second, "wait after all pods run, before measuring (tug at rest: past the rollout watch of new pods and the page-out of start-up pages)")
	flag.StringVar(&o.shimGrouping, "shim-grouping", "", "tug's --shim-grouping (default: tug's default)")
	flag.BoolVar(&o.podman, "podman", true, "also run podman (false: tug's figures alone, for tuning; no verdict on the per-pod ratio)")
	flag.BoolVar(&o.floor, "floor", true, "also run the floor beside tug (./bench/benchfootprint/floor: a Go containerd client making only the PLEG's calls)")
	flag.Parse()

	err := o.Check()
	if err == nil && (o.pods < 1 || o.pods > 200) {
		err = errors.New("-pods: from 1 to 200")
	}
	kit.Run("benchfootprint", err, func(ctx context.Context) error { return run(ctx, o) })
}

// errNoPodman is the comparison's error when -podman=false skipped it.
var errNoPodman = errors.New("not run (-podman=false)")

// tugRun is what runTug measured.
type tugRun struct {
	groups []group // tug's process first, then what it caused, by kind
	floor  *group  // the floor program, measured in the same moment (-floor)
}

// group is the processes of one kind and their summed memory.
type group struct {
	name string
	pids []int
	mem  kit.Memory
}

func run(ctx context.Context, o options) error {
	dir, err := kit.WorkDir("benchfootprint")
	if err != nil {
		return err
	}
	tugRes, err := runTug(ctx, o, filepath.Join(dir, "tug"))
	if err == nil {
		// tug's figures are worth printing even when podman cannot run
		// here; the run then fails.
		var podGroups []group
		perr := errNoPodman
		if o.podman {
			podGroups, perr = runPodman(ctx, o, filepath.Join(dir, "podman"))
			err = perr
		}
		report(os.Stdout, o, tugRes, podGroups, perr)
	}
	keep := o.Keep || err != nil
	return errors.Join(err, kit.RemoveWorkDir("benchfootprint", dir, keep))
}

// runTug runs tug with the pods (and the floor beside it), measures it
// and what it caused, and removes everything again.
func runTug(ctx context.Context, o options, dir string) (res tugRun, err error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return res, err
	}
	client, err := kit.Connect(o.Containerd)
	if err != nil {
		return res, err
	}
	var tug *kit.Tug
	var floor *exec.Cmd
	defer func() { err = errors.Join(err, stopFloor(floor), teardownTug(client, tug)) }()
	if err := kit.Purge(ctx, client, namespace, nil); err != nil {
		return res, fmt.Errorf("remove leftovers of an earlier run: %w", err)
	}
	var args []string
	if o.shimGrouping != "" {
		args = append(args, "--shim-grouping", o.shimGrouping)
	}
	tug, err = kit.NewTug(ctx, kit.TugConfig{
		Bin: o.Tug, Dir: dir, Containerd: o.Containerd, Namespace: namespace, Hostname: hostname,
		Healthz: true, Netns: "footprint", Args: args,
	})
	if err != nil {
		return res, err
	}
	if err := tug.WriteSleepPods("fp", o.pods, o.Image, "IfNotPresent"); err != nil {
		return res, err
	}
	if err := tug.AddImage(o.Archive); err != nil {
		return res, err
	}
	if o.floor {
		// Built before tug starts, started right after it: both are the
		// same age when measured, past the same page-out.
		bin, err := kit.Build(ctx, "./bench/benchfootprint/floor", filepath.Join(dir, "floor"))
		if err != nil {
			return res, err
		}
		floor = exec.Command(bin, "-address", o.Containerd, "-namespace", namespace)
		floor.Stderr = os.Stderr
	}
	if err := tug.Start(); err != nil {
		return res, err
	}
	if floor != nil {
		if err := floor.Start(); err != nil {
			floor = nil
			return res, fmt.Errorf("start the floor: %w", err)
		}
	}
	fmt.Fprintf(os.Stderr, "benchfootprint: tug started (pid %d); waiting for %d pods\n", tug.PID(), o.pods)
	if err := waitTugPods(ctx, tug, o.pods, 3*time.Minute); err != nil {
		return res, err
	}
	if err := kit.Sleep(ctx, o.settle); err != nil {
		return res, err
	}
	tasks, err := kit.TaskPIDs(ctx, client, namespace)
	if err != nil {
		return res, err
	}
	if len(tasks) != o.pods {
		return res, fmt.Errorf("%d tasks in namespace %s, want %d", len(tasks), namespace, o.pods)
	}
	procs, err := readProcs()
	if err != nil {
		return res, err
	}
	var roots, containers []int
	roots = append(roots, tug.PID())
	for pid, p := range procs {
		if kit.IsShim(p.exe, p.args, o.Containerd, namespace) {
			roots = append(roots, pid)
		}
	}
	for _, pid := range tasks {
		containers = append(containers, pid)
	}
	caused := causedBy(procs, roots, containers)
	res.groups = []group{{name: "tug run", pids: []int{tug.PID()}}}
	res.groups = append(res.groups, byKind(procs, caused)...)
	if err := measure(res.groups); err != nil {
		return res, err
	}
	if floor != nil {
		fl := []group{{name: "floor", pids: []int{floor.Process.Pid}}}
		if err := measure(fl); err != nil {
			return res, err
		}
		res.floor = &fl[0]
		if res.floor.mem.PSS == 0 {
			return res, errors.New("the floor is not running (its error is above)")
		}
	}
	return res, nil
}

// stopFloor ends the floor program, if it was started.
func stopFloor(floor *exec.Cmd) error {
	if floor == nil || floor.Process == nil {
		return nil
	}
	_ = floor.Process.Signal(syscall.SIGTERM)
	if err := floor.Wait(); err != nil {
		return fmt.Errorf("floor: %w", err)
	}
	return nil
}

func teardownTug(client *containerd.Client, tug *kit.Tug) error {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	return errors.Join(kit.TeardownTug(ctx, "benchfootprint", client, tug, namespace, nil), client.Close())
}

// waitTugPods waits until tug's API lists every pod Running.
func waitTugPods(ctx context.Context, tug *kit.Tug, pods int, timeout time.Duration) error {
	c := &api.Client{SocketPath: filepath.Join(tug.RunDir, "tug.sock")}
	last := "no answer yet"
	for deadline := time.Now().Add(timeout); time.Now().Before(deadline); {
		if err := tug.Alive(); err != nil {
			return err
		}
		if list, err := c.Pods(ctx); err != nil {
			last = err.Error()
		} else {
			running := 0
			for _, v := range list.Items {
				if v.Status.Phase == pod.PhaseRunning && len(v.Status.ContainerStatuses) == 1 && v.Status.ContainerStatuses[0].State.Running != nil {
					running++
				}
			}
			if running == pods {
				return nil
			}
			last = fmt.Sprintf("%d of %d pods running", running, pods)
		}
		if err := kit.Sleep(ctx, 200*time.Millisecond); err != nil {
			return err
		}
	}
	return fmt.Errorf("tug's pods not running within %v: %s", timeout, last)
}

// runPodman plays the same pods with podman, measures its conmons and
// removes everything again.
func runPodman(ctx context.Context, o options, dir string) (groups []group, err error) {
	if err := ensurePodman(ctx); err != nil {
		return nil, err
	}
	netns, err := kit.NewNetns("podman")
	if err != nil {
		return nil, err
	}
	defer netns.Delete()
	root := filepath.Join(dir, "root")
	podman := func(args ...string) (string, error) {
		all := append([]string{"podman", "--runtime", filepath.Join(dir, runcWrapper), "--root", root, "--runroot", filepath.Join(dir, "run"),
			"--tmpdir", filepath.Join(dir, "tmp"), "--network-config-dir", filepath.Join(dir, "net"),
			"--cgroup-manager", "cgroupfs", "--events-backend", "file"}, args...)
		cmd := netns.Command(all[0], all[1:]...)
		out, err := cmd.CombinedOutput()
		if err != nil {
			return string(out), fmt.Errorf("%s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(string(out)))
		}
		return string(out), nil
	}
	for _, d := range []string{"root", "run", "tmp", "net"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
			return nil, err
		}
	}
	defer func() {
		_, derr := podman("pod", "rm", "--all", "--force", "--time", "0")
		_, ierr := podman("system", "reset", "--force")
		err = errors.Join(err, derr, ierr, kit.UnmountUnder(dir))
	}()
	// podman gives its pause (infra) containers nofile and nproc limits of
	// 1048576 whatever containers.conf says; where the benchmark's hard
	// limits are lower (no CAP_SYS_RESOURCE, in a container) runc cannot set
	// them. podman's runtime is therefore this program under another name,
	// which caps the limits at its own and runs runc: podman's containers
	// then get the limits tug's get from containerd.
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	wrapper := filepath.Join(dir, runcWrapper)
	if err := os.Symlink(self, wrapper); err != nil {
		return nil, err
	}
	if _, err := podman("load", "-i", o.Archive); err != nil {
		return nil, err
	}
	var docs []string
	for i := range o.pods {
		docs = append(docs, kit.SleepPod(fmt.Sprintf("fp-%02d", i), o.Image, "IfNotPresent"))
	}
	kube := filepath.Join(dir, "pods.yaml")
	if err := os.WriteFile(kube, []byte(strings.Join(docs, "---\n")), 0o644); err != nil {
		return nil, err
	}
	t0 := time.Now()
	if _, err := podman("kube", "play", kube); err != nil {
		return nil, err
	}
	fmt.Fprintf(os.Stderr, "benchfootprint: podman kube play of %d pods took %v\n", o.pods, time.Since(t0).Round(time.Millisecond))
	out, err := podman("pod", "ps", "--format", "{{.Status}}")
	if err != nil {
		return nil, err
	}
	if n := strings.Count(out, "Running"); n != o.pods {
		return nil, fmt.Errorf("podman: %d of %d pods running:\n%s", n, o.pods, out)
	}
	if err := kit.Sleep(ctx, o.settle); err != nil {
		return nil, err
	}
	procs, err := readProcs()
	if err != nil {
		return nil, err
	}
	var conmons []int
	for pid, p := range procs {
		if p.exe == "conmon" && slices.Contains(p.args, root) {
			conmons = append(conmons, pid)
		}
	}
	groups = []group{{name: "conmon", pids: conmons}}
	return groups, measure(groups)
}

// runcWrapper is the name under which this program is podman's runtime.
const runcWrapper = "runc-capped-rlimits"

// wrapRunc runs runc with args; before a create, it caps the rlimits of
// the bundle's config.json at this process's hard limits.
func wrapRunc(args []string) error {
	for i, a := range args {
		if (a == "--bundle" || a == "-b") && i+1 < len(args) && slices.Contains(args, "create") {
			if err := capRlimits(filepath.Join(args[i+1], "config.json")); err != nil {
				return err
			}
		}
	}
	// podman runs its runtime with a short PATH.
	runc := "/usr/sbin/runc"
	if p, err := exec.LookPath("runc"); err == nil {
		runc = p
	}
	return syscall.Exec(runc, append([]string{"runc"}, args...), os.Environ())
}

func capRlimits(config string) error {
	raw, err := os.ReadFile(config)
	if err != nil {
		return err
	}
	var spec specs.Spec
	if err := json.Unmarshal(raw, &spec); err != nil {
		return err
	}
	if spec.Process == nil {
		return nil
	}
	for i, l := range spec.Process.Rlimits {
		var res int
		switch l.Type {
		case "RLIMIT_NOFILE":
			res = unix.RLIMIT_NOFILE
		case "RLIMIT_NPROC":
			res = unix.RLIMIT_NPROC
		default:
			continue
		}
		var lim unix.Rlimit
		if err := unix.Getrlimit(res, &lim); err != nil {
			return err
		}
		spec.Process.Rlimits[i].Hard = min(l.Hard, lim.Max)
		spec.Process.Rlimits[i].Soft = min(l.Soft, lim.Max)
	}
	// Unknown fields of config.json would be lost through specs.Spec; the
	// rlimits are patched into the original document instead.
	var doc map[string]json.RawMessage
	if err := json.Unmarshal(raw, &doc); err != nil {
		return err
	}
	var process map[string]json.RawMessage
	if err := json.Unmarshal(doc["process"], &process); err != nil {
		return err
	}
	if process["rlimits"], err = json.Marshal(spec.Process.Rlimits); err != nil {
		return err
	}
	if doc["process"], err = json.Marshal(process); err != nil {
		return err
	}
	out, err := json.Marshal(doc)
	if err != nil {
		return err
	}
	return os.WriteFile(config, out, 0o600)
}

// ensurePodman installs Debian's podman (and catatonit, which its pause
// image needs) when podman is missing.
func ensurePodman(ctx context.Context) error {
	if _, err := exec.LookPath("podman"); err == nil {
		if _, err := os.Stat("/usr/libexec/podman/catatonit"); err == nil {
			return nil
		}
	}
	fmt.Fprintf(os.Stderr, "benchfootprint: installing %s\n", podmanPackages)
	cmd := exec.CommandContext(ctx, "apt-get", append([]string{"install", "-y", "--no-install-recommends"}, strings.Fields(podmanPackages)...)...)
	cmd.Env = append(os.Environ(), "DEBIAN_FRONTEND=noninteractive")
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("apt-get install %s: %w: %s", podmanPackages, err, out)
	}
	return nil
}

// proc is what readProcs knows of a process.
type proc struct {
	ppid int
	exe  string // base name of /proc/PID/exe
	args []string
}

func readProcs() (map[int]proc, error) {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil, err
	}
	out := map[int]proc{}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			continue
		}
		i := strings.LastIndexByte(string(stat), ')')
		f := strings.Fields(string(stat[i+1:]))
		if len(f) < 2 {
			continue
		}
		ppid, _ := strconv.Atoi(f[1])
		raw, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
		exe, _ := os.Readlink(fmt.Sprintf("/proc/%d/exe", pid))
		out[pid] = proc{ppid: ppid, exe: filepath.Base(exe), args: strings.Split(strings.TrimRight(string(raw), "\x00"), "\x00")}
	}
	return out, nil
}

// causedBy returns roots (tug aside, roots[0]) and every descendant of a
// root that is neither a container process nor below one.
func causedBy(procs map[int]proc, roots, containers []int) []int {
	isRoot := map[int]bool{}
	for _, r := range roots {
		isRoot[r] = true
	}
	isContainer := map[int]bool{}
	for _, c := range containers {
		isContainer[c] = true
	}
	var out []int
	for pid := range procs {
		if pid == roots[0] {
			continue
		}
		for p := pid; p > 1; p = procs[p].ppid {
			if isContainer[p] {
				break
			}
			if isRoot[p] {
				out = append(out, pid)
				break
			}
			if _, ok := procs[p]; !ok {
				break
			}
		}
	}
	return out
}

// byKind groups pids by executable and subcommand ("tug logger",
// "containerd-shim-runc-v2").
func byKind(procs map[int]proc, pids []int) []group {
	m := map[string][]int{}
	for _, pid := range pids {
		p := procs[pid]
		name := p.exe
		if len(p.args) > 1 && !strings.HasPrefix(p.args[1], "-") {
			name += " " + p.args[1]
		}
		m[name] = append(m[name], pid)
	}
	var out []group
	for name, ps := range m {
		out = append(out, group{name: name, pids: ps})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].name < out[j].name })
	return out
}

func measure(groups []group) error {
	for i := range groups {
		mem, err := kit.SumMemory(groups[i].pids)
		if err != nil {
			return fmt.Errorf("%s: %w", groups[i].name, err)
		}
		groups[i].mem = mem
	}
	return nil
}

func report(w io.Writer, o options, tugRes tugRun, podGroups []group, podErr error) {
	tugGroups := tugRes.groups
	grouping := o.shimGrouping
	if grouping == "" {
		grouping = "tug's default"
	}
	fmt.Fprintf(w, "\nbenchfootprint: %d one-container pods, tug (--shim-grouping %s) then podman kube play, same run\n\n", o.pods, grouping)
	t := kit.Table{Header: []string{"runner", "process", "count", "PSS (MiB)", "anon + file (MiB)", "PSS per pod (MiB)"}}
	var tugTotal, tugCaused, podTotal float64
	for i, g := range tugGroups {
		pss := kit.MiB(g.mem.PSS)
		tugTotal += pss
		if i > 0 {
			tugCaused += pss
		}
		t.Row("tug", g.name, len(g.pids), fmt.Sprintf("%.1f", pss), g.split(), fmt.Sprintf("%.2f", pss/float64(o.pods)))
	}
	for _, g := range podGroups {
		pss := kit.MiB(g.mem.PSS)
		podTotal += pss
		t.Row("podman", g.name, len(g.pids), fmt.Sprintf("%.1f", pss), g.split(), fmt.Sprintf("%.2f", pss/float64(o.pods)))
	}
	t.Write(w, o.Markdown)
	n := float64(o.pods)
	fmt.Fprintln(w)
	fmt.Fprintf(w, "tug total (agent + what it caused): %.1f MiB (target < %d MiB at 30 pods)  %s\n", tugTotal, targetTotal, kit.Verdict(tugTotal < targetTotal))
	if f := tugRes.floor; f != nil {
		floor := kit.MiB(f.mem.PSS)
		fmt.Fprintf(w, "floor (a Go containerd client making only the PLEG's calls, same age, same moment): %.1f MiB (%s); tug's agent above it: %.1f MiB\n",
			floor, f.split(), kit.MiB(tugGroups[0].mem.PSS)-floor)
		fmt.Fprintf(w, "floor + what tug caused: %.1f MiB, the least any Go agent on containerd's client could total with the same shims\n", floor+tugCaused)
	}
	if podErr != nil {
		fmt.Fprintf(w, "per pod: tug %.2f MiB (what it caused / pods); podman failed, no comparison: %.300s\n", tugCaused/n, podErr.Error())
		fmt.Fprintf(w, "per pod with the agent shared out: tug %.2f MiB\n", tugTotal/n)
		return
	}
	fmt.Fprintf(w, "per pod: tug %.2f MiB (what it caused / pods), podman %.2f MiB (conmons / pods); tug / podman %s (target <= %gx)  %s\n",
		tugCaused/n, podTotal/n, kit.RatioString(tugCaused, podTotal), targetPerPodX, kit.Verdict(tugCaused <= targetPerPodX*podTotal))
	fmt.Fprintf(w, "per pod with the agent shared out: tug %.2f MiB\n", tugTotal/n)
}

// split is the group's PSS as anonymous + file pages.
func (g group) split() string {
	return fmt.Sprintf("%.1f + %.1f", kit.MiB(g.mem.PSSAnon), kit.MiB(g.mem.PSSFile))
}
