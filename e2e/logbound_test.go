//go:build e2e

package e2e

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// diskUsed returns the bytes allocated on disk to the regular files under
// the given directories (missing ones count nothing).
func diskUsed(dirs ...string) int64 {
	var total int64
	for _, d := range dirs {
		filepath.WalkDir(d, func(path string, e fs.DirEntry, err error) error {
			if err != nil || !e.Type().IsRegular() {
				return nil
			}
			var st syscall.Stat_t
			if syscall.Lstat(path, &st) == nil {
				total += st.Blocks * 512
			}
			return nil
		})
	}
	return total
}

// TestLogOutputDiskBound: a container writes 400 MB to stdout as fast as
// it can, 1,000-byte lines, with max-size 1 MiB and max-files 2. While tug
// runs, its raw and converted log files together never hold more than a
// few MiB beyond the caps, and tug says that it dropped output (its log
// and an OutputDropped event). While tug is down, the shim stops writing
// the raw file at its limit (64 MiB) and the container waits; tug, started
// again, brings the files back under the bound, stops the container (an
// OutputLimit event), and the numbered lines its next attempt writes all
// reach the log, in order.
func TestLogOutputDiskBound(t *testing.T) {
	const (
		maxSize  = 1 << 20
		maxFiles = 2
		// bound: the CRI files' caps, the raw backlog tug keeps (2 MiB),
		// converted raw bytes not punched yet (up to 1 MiB), and what the
		// container writes while tug waits for a CPU: `yes`, head and the
		// shim keep the 2 cores busy, and at 150 MB/s a 30 ms wait is
		// 4.5 MB (peaks of 4-10 MB measured; twice that allowed for a
		// machine busier still, against 200 MB held without the bound).
		bound = maxSize*maxFiles + 16<<20
		// boundDown: with tug down, the raw file up to the length at which
		// the shim stops writing it, and the CRI files' caps.
		boundDown = 64<<20 + maxSize*maxFiles + 1<<20
	)
	tg := startTug(t, tugOpts{args: []string{
		"--container-log-driver", "file",
		"--container-log-max-size", strconv.Itoa(maxSize), "--container-log-max-files", strconv.Itoa(maxFiles),
	}})
	ctl := filepath.Join(tg.base, "ctl")
	if err := os.MkdirAll(ctl, 0o755); err != nil {
		t.Fatal(err)
	}
	flood := `yes "$l" | head -c 200000000; echo`
	// Each phase runs once: the attempt that follows the stop skips the
	// phases its predecessor began.
	script := `l=$(printf '%0999d' 0); ` +
		`if [ ! -f /ctl/done1 ]; then while [ ! -f /ctl/go1 ]; do usleep 50000; done; ` + flood + `; touch /ctl/done1; fi; ` +
		`if [ ! -f /ctl/in2 ]; then while [ ! -f /ctl/go2 ]; do usleep 50000; done; touch /ctl/in2; ` + flood + `; fi; ` +
		`while [ ! -f /ctl/go3 ]; do usleep 50000; done; ` +
		`i=0; while [ $i -lt 2000 ]; do echo "n $i"; i=$((i+1)); done; echo END; ` + idle
	tg.writeManifest("flood.yaml", podYAML{name: "flood", restartPolicy: "Always",
		containers: []ctrYAML{{name: "main", image: tg.image, script: script, mounts: []mountYAML{{name: "ctl", path: "/ctl"}}}},
		volumes:    []volYAML{hostPathVol("ctl", ctl, "Directory")},
	}.String())
	tg.waitRunning(startTimeout, "flood", "main", 0)
	rawDir := filepath.Join(tg.rootDir, "pods", tg.uid("flood"), "logs")
	logDir := tg.podLogGlob("flood")

	// sample keeps the largest usage seen while on is true.
	var mu sync.Mutex
	var peak int64
	on := true
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			case <-time.After(20 * time.Millisecond):
			}
			u := diskUsed(rawDir, logDir)
			mu.Lock()
			if on && u > peak {
				peak = u
			}
			mu.Unlock()
		}
	}()
	stopSampling := func() {
		close(stop)
		wg.Wait()
	}
	defer func() {
		select {
		case <-stop:
		default:
			stopSampling()
		}
	}()
	touch := func(name string) {
		if err := os.WriteFile(filepath.Join(ctl, name), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	waitFile := func(name string) {
		// waitFor of the package: tug may be down meanwhile.
		waitFor(t, 3*time.Minute, "the container to write "+name, func() (bool, error) {
			_, err := os.Stat(filepath.Join(ctl, name))
			return err == nil, nil
		})
	}

	// 200 MB with tug running.
	start := time.Now()
	touch("go1")
	waitFile("done1")
	t.Logf("200 MB written with tug running in %v", time.Since(start).Round(time.Millisecond))
	time.Sleep(2 * time.Second) // the pump catches up
	mu.Lock()
	running := peak
	on = false
	mu.Unlock()
	if running > bound {
		t.Errorf("with tug running, the pod's raw and CRI log files held up to %d bytes, want at most %d (raw files: %s)",
			running, bound, tg.rawLogFiles("flood", "main"))
	} else {
		t.Logf("with tug running, the pod's log files held at most %d bytes", running)
	}

	// 200 MB with tug down: the shim stops at the raw file's limit, the
	// container waits, and tug started again stops it.
	tg.Kill()
	touch("go2")
	rawOut := filepath.Join(rawDir, "main", "0.stdout")
	waitFor(t, 3*time.Minute, "the raw file to reach its limit", func() (bool, error) {
		fi, err := os.Stat(rawOut)
		return err == nil && fi.Size() >= 64<<20, nil
	})
	time.Sleep(2 * time.Second) // the container goes on writing, if it can
	down := diskUsed(rawDir, logDir)
	if fi, err := os.Stat(rawOut); err != nil || fi.Size() != 64<<20 {
		t.Errorf("with tug down, the raw file is %v bytes long (%v), want the limit, 67108864", fi.Size(), err)
	}
	if down > boundDown {
		t.Errorf("with tug down, the pod's log files hold %d bytes, want at most %d (raw files: %s)",
			down, boundDown, tg.rawLogFiles("flood", "main"))
	} else {
		t.Logf("with tug down, the pod's log files hold %d bytes", down)
	}
	if _, err := os.Stat(filepath.Join(ctl, "done2")); err == nil {
		t.Errorf("the container finished writing 200 MB while tug was down: nothing held it")
	}
	restarted := time.Now()
	tg.Start()
	tg.waitFor(30*time.Second, "the backlog to be bounded after tug starts", func() (bool, error) {
		if u := diskUsed(rawDir, logDir); u > bound {
			return false, fmt.Errorf("log files hold %d bytes, want at most %d (raw files: %s)", u, bound, tg.rawLogFiles("flood", "main"))
		}
		return true, nil
	})
	t.Logf("bounded %v after tug started", time.Since(restarted).Round(time.Millisecond))
	tg.waitRunning(startTimeout, "flood", "main", 1)
	mu.Lock()
	peak, on = 0, true
	mu.Unlock()

	// Output under the cap is never lost.
	touch("go3")
	tg.waitFor(logTimeout, "END in the log", func() (bool, error) {
		data, err := readLog(logDir, "main", 1)
		return err == nil && strings.Contains(data, " stdout F END\n"), nil
	})
	stopSampling()
	if peak > bound {
		t.Errorf("after tug started again, the pod's log files held up to %d bytes, want at most %d", peak, bound)
	}
	var text strings.Builder
	for n := maxFiles - 1; n >= 0; n-- {
		p := filepath.Join(logDir, "main", "1.log")
		if n > 0 {
			p += "." + strconv.Itoa(n)
		}
		if data, err := os.ReadFile(p); err == nil {
			text.Write(data)
		}
	}
	lines, err := parseCRI(text.String())
	if err != nil {
		t.Fatal(err)
	}
	next := 0
	for _, l := range lines {
		if !strings.HasPrefix(l.Text, "n ") {
			continue
		}
		if l.Text != "n "+strconv.Itoa(next) {
			t.Fatalf("line %q where %q was expected", l.Text, "n "+strconv.Itoa(next))
		}
		next++
	}
	if next != 2000 {
		t.Errorf("the log holds %d of the 2000 numbered lines", next)
	}
	reasons := tg.eventReasons(tg.uid("flood"))
	for _, want := range []string{"OutputDropped", "OutputLimit"} {
		if !slices.Contains(reasons, want) {
			t.Errorf("the pod's events %q have no %s", reasons, want)
		}
	}
	if line := findLine(tg.output(), "dropped"); line == "" {
		t.Errorf("tug's output does not say that output was dropped")
	} else {
		t.Logf("tug says: %s", line)
	}
}

// TestContainersWriteLargeFiles: the limit on the length of the files the
// shim writes (its raw output files) is not handed on to the containers:
// two containers of one pod (one shim), the second started after the shim
// was limited, each write a file longer than the limit, and the shim's own
// limit is the raw files' length.
func TestContainersWriteLargeFiles(t *testing.T) {
	t.Parallel()
	tg := startTug(t, tugOpts{args: []string{"--container-log-driver", "file"}})
	write := `dd if=/dev/zero of=/tmp/big bs=1048576 count=80 2>/dev/null && ls -l /tmp/big | awk '{print "wrote", $5}'; ` + idle
	tg.writeManifest("big.yaml", podYAML{name: "big", restartPolicy: "Never",
		containers: []ctrYAML{{name: "a", image: tg.image, script: write}, {name: "b", image: tg.image, script: write}},
	}.String())
	for _, name := range []string{"a", "b"} {
		tg.waitLog(logTimeout, "big", name, 0, "wrote 83886080")
	}
	c := tg.waitRunning(startTimeout, "big", "b", 0)
	shim := ppidOf(t, c.PID)
	limits, err := os.ReadFile(fmt.Sprintf("/proc/%d/limits", shim))
	if err != nil {
		t.Fatal(err)
	}
	line := findLine(string(limits), "Max file size")
	if f := strings.Fields(line); len(f) < 4 || f[3] != "67108864" {
		t.Errorf("the shim's file size limit: %q, want a soft limit of 67108864", line)
	}
}

// ppidOf returns the parent of process pid.
func ppidOf(t *testing.T, pid uint32) int {
	t.Helper()
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(string(status), "\n") {
		if v, ok := strings.CutPrefix(l, "PPid:"); ok {
			n, err := strconv.Atoi(strings.TrimSpace(v))
			if err != nil {
				t.Fatal(err)
			}
			return n
		}
	}
	t.Fatalf("no PPid in /proc/%d/status", pid)
	return 0
}
