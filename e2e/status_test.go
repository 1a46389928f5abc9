//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"tug/internal/api"
	"tug/internal/pod"
	"tug/internal/podview"
)

// Helpers that look at tug the way an operator does: its API socket, the
// "tug pods" and "tug inspect" commands, and /healthz on the TCP port.

// apiTimeout bounds one API request or CLI run.
const apiTimeout = 10 * time.Second

// socketPath is tug's API socket, <run-dir>/tug.sock.
func (tg *tug) socketPath() string { return filepath.Join(tg.runDir, "tug.sock") }

// api returns a client of tug's API socket.
func (tg *tug) api() *api.Client { return &api.Client{SocketPath: tg.socketPath()} }

// podView returns GET /pods/default/<static name of the pod named name in
// its manifest>.
func (tg *tug) podView(name string) (podview.View, error) {
	ctx, cancel := context.WithTimeout(context.Background(), apiTimeout)
	defer cancel()
	return tg.api().Pod(ctx, "default", staticName(name))
}

// waitPod waits until the status of the pod named name (in its manifest)
// passes check, and returns it. check returns nil when the pod is as wanted,
// or what is still wrong.
func (tg *tug) waitPod(timeout time.Duration, name, what string, check func(v *podview.View) error) podview.View {
	tg.t.Helper()
	var v podview.View
	tg.waitFor(timeout, fmt.Sprintf("pod %s: %s", name, what), func() (bool, error) {
		var err error
		if v, err = tg.podView(name); err != nil {
			return false, err
		}
		if err := check(&v); err != nil {
			return false, fmt.Errorf("%w (phase %s, %s)", err, v.Status.Phase, describeStatus(&v.Status))
		}
		return true, nil
	})
	return v
}

// phaseIs checks a pod's phase.
func phaseIs(want pod.Phase) func(v *podview.View) error {
	return func(v *podview.View) error {
		if v.Status.Phase != want {
			return fmt.Errorf("phase is %q, want %q", v.Status.Phase, want)
		}
		return nil
	}
}

// describeStatus sums up the containers' states for a failure message.
func describeStatus(st *pod.Status) string {
	var parts []string
	add := func(kind string, cs []pod.ContainerStatus) {
		for _, c := range cs {
			state := "?"
			switch s := c.State; {
			case s.Running != nil:
				state = "running"
			case s.Terminated != nil:
				state = fmt.Sprintf("terminated %s (%d)", s.Terminated.Reason, s.Terminated.ExitCode)
			case s.Waiting != nil:
				state = "waiting " + s.Waiting.Reason
			}
			parts = append(parts, fmt.Sprintf("%s %s: %s, restarts %d", kind, c.Name, state, c.RestartCount))
		}
	}
	add("init", st.InitContainerStatuses)
	add("container", st.ContainerStatuses)
	if len(parts) == 0 {
		return "no container statuses"
	}
	return strings.Join(parts, "; ")
}

// runCLI runs "tug <args>" against this tug's socket and returns its
// stdout, stderr and exit code.
func (tg *tug) runCLI(args ...string) (stdout, stderr string, code int) {
	tg.t.Helper()
	return tg.runCLIInput("", apiTimeout, args...)
}

// runCLIInput runs "tug <args>" against this tug, with --socket right after
// the command's name (so that it stays before a "--" and the command after
// it), stdin as its input, for at most timeout, and returns its stdout,
// stderr and exit code.
func (tg *tug) runCLIInput(stdin string, timeout time.Duration, args ...string) (stdout, stderr string, code int) {
	tg.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, tugBin, append([]string{args[0], "--socket", tg.socketPath()}, args[1:]...)...)
	cmd.Stdin = strings.NewReader(stdin)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit):
		code = exit.ExitCode()
	case err != nil:
		tg.t.Fatalf("tug %s: %v", strings.Join(args, " "), err)
	}
	return out.String(), errOut.String(), code
}

// podRow is one row of the "tug pods" table, by column name.
type podRow map[string]string

// cellSep separates the cells of "tug pods": its tabwriter pads with at
// least 3 spaces, and no cell holds two spaces in a row.
var cellSep = regexp.MustCompile(` {2,}`)

// parsePodTable parses the table "tug pods" prints (up to the first empty
// line) into rows keyed by NAME, and returns the lines after it.
func parsePodTable(out string) (map[string]podRow, []string, error) {
	lines := strings.Split(strings.TrimRight(out, "\n"), "\n")
	if len(lines) == 0 || !strings.HasPrefix(lines[0], "NAME") {
		return nil, nil, fmt.Errorf("no table header in %q", out)
	}
	header := cellSep.Split(strings.TrimSpace(lines[0]), -1)
	rows := map[string]podRow{}
	i := 1
	for ; i < len(lines) && lines[i] != ""; i++ {
		cells := cellSep.Split(strings.TrimSpace(lines[i]), -1)
		if len(cells) != len(header) {
			return nil, nil, fmt.Errorf("row %q has %d cells, the header %d", lines[i], len(cells), len(header))
		}
		r := podRow{}
		for j, h := range header {
			r[h] = cells[j]
		}
		rows[r["NAME"]] = r
	}
	var rest []string
	if i < len(lines) {
		rest = lines[i+1:]
	}
	return rows, rest, nil
}

// podTable runs "tug pods" and parses its table.
func (tg *tug) podTable() (map[string]podRow, []string, error) {
	out, stderr, code := tg.runCLI("pods")
	if code != 0 {
		return nil, nil, fmt.Errorf("tug pods exited %d: %s", code, stderr)
	}
	return parsePodTable(out)
}

// restartsOf returns the count of a RESTARTS cell: "3" or "3 (20s ago)".
func restartsOf(cell string) (int, error) {
	n, _, _ := strings.Cut(cell, " ")
	return strconv.Atoi(n)
}

// healthClient asks /healthz, inside the node, with no connection reuse, so
// that each probe is a fresh connection to the port. Its timeout is longer
// than tug's own bound on a health check (5 s), so that a failing check is
// seen as tug's answer.
func (tg *tug) healthClient() *http.Client { return httpClientIn(tg.netns, 6*time.Second) }

// healthz asks tug's TCP health port for /healthz and returns the status
// code and body.
func (tg *tug) healthz() (int, string, error) {
	if tg.healthzPort == 0 {
		return 0, "", errors.New("tug runs without a health port (set tugOpts.healthzPort)")
	}
	resp, err := tg.healthClient().Get(fmt.Sprintf("http://127.0.0.1:%d/healthz", tg.healthzPort))
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	return resp.StatusCode, strings.TrimSpace(string(body)), err
}

// healthOK returns nil when /healthz answers 200, else why not.
func (tg *tug) healthOK() error {
	code, body, err := tg.healthz()
	switch {
	case err != nil:
		return err
	case code != http.StatusOK:
		return fmt.Errorf("/healthz: %d %s", code, body)
	}
	return nil
}

// waitHealthy waits until /healthz answers 200 and returns how long after
// tug's start that was.
func (tg *tug) waitHealthy(timeout time.Duration) time.Duration {
	tg.t.Helper()
	tg.waitFor(timeout, "/healthz to answer 200", func() (bool, error) {
		err := tg.healthOK()
		return err == nil, err
	})
	return time.Since(tg.startedAt)
}

// freePort returns a TCP port of 127.0.0.1 that nothing listens on now.
func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}
