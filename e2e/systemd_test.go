//go:build e2e

package e2e

import (
	"net"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// notifySocket is the receiving end of the sd_notify protocol, as systemd
// holds it for a Type=notify service: a unixgram socket whose datagrams are
// kept with the time they came.
type notifySocket struct {
	path string
	mu   sync.Mutex
	msgs []notifyMsg
}

type notifyMsg struct {
	at   time.Time
	text string
}

func newNotifySocket(t *testing.T) *notifySocket {
	t.Helper()
	n := &notifySocket{path: filepath.Join(t.TempDir(), "notify.sock")}
	conn, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: n.path, Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	go func() {
		buf := make([]byte, 4096)
		for {
			k, err := conn.Read(buf)
			if err != nil {
				return
			}
			n.mu.Lock()
			n.msgs = append(n.msgs, notifyMsg{time.Now(), string(buf[:k])})
			n.mu.Unlock()
		}
	}()
	return n
}

// since returns the messages received after t0 that contain sub.
func (n *notifySocket) since(t0 time.Time, sub string) []notifyMsg {
	n.mu.Lock()
	defer n.mu.Unlock()
	var out []notifyMsg
	for _, m := range n.msgs {
		if m.at.After(t0) && strings.Contains(m.text, sub) {
			out = append(out, m)
		}
	}
	return out
}

// TestSystemdNotify drives tug's sd_notify side through the protocol's
// socket, as systemd does for Type=notify with WatchdogSec=2: READY=1
// with a STATUS= line once the file source has reported and the loop has
// synced, WATCHDOG=1 every second, STOPPING=1 on SIGTERM; with the sync
// loop wedged (the hidden test fault) the watchdog pings stop and STATUS
// says why; a tug started again after the kill adopts the pod's
// container instead of restarting it.
func TestSystemdNotify(t *testing.T) {
	t.Parallel()
	n := newNotifySocket(t)
	tg := startTug(t, tugOpts{
		env: []string{"NOTIFY_SOCKET=" + n.path, "WATCHDOG_USEC=2000000"},
		beforeStart: func(tg *tug) {
			tg.writeManifest("web.yaml", shPod("web", tg.image, idle))
		},
	})
	first := tg.waitRunning(startTimeout, "web", "main", 0)
	t0 := tg.startedAt
	waitFor(t, 30*time.Second, "READY=1 with STATUS=", func() (bool, error) {
		r := n.since(t0, "READY=1")
		return len(r) == 1 && strings.Contains(r[0].text, "STATUS=") && strings.Contains(r[0].text, "pods:"), nil
	})
	waitFor(t, 10*time.Second, "three WATCHDOG=1", func() (bool, error) {
		return len(n.since(t0, "WATCHDOG=1")) >= 3, nil
	})
	stopAt := time.Now()
	if err := tg.Stop(); err != nil {
		t.Fatalf("stop tug: %v", err)
	}
	if len(n.since(stopAt, "STOPPING=1")) != 1 {
		t.Errorf("no STOPPING=1 on SIGTERM; got %v", n.since(stopAt, ""))
	}

	// The sync loop wedges 3 s after the start: the watchdog pings stop
	// once it has not turned for 20 s (2 x --sync-frequency, at least
	// 20 s), and systemd would kill tug.
	tg.args = append(tg.args, "--test-fault-wedge-sync-loop", "3s")
	tg.Start()
	t1 := tg.startedAt
	waitFor(t, 30*time.Second, "READY=1 again", func() (bool, error) { return len(n.since(t1, "READY=1")) == 1, nil })
	var unhealthyAt time.Time
	waitFor(t, 45*time.Second, "STATUS=unhealthy", func() (bool, error) {
		u := n.since(t1, "STATUS=unhealthy")
		if len(u) > 0 {
			unhealthyAt = u[0].at
		}
		return len(u) > 0 && strings.Contains(u[0].text, "sync loop"), nil
	})
	time.Sleep(3 * time.Second) // 3 watchdog periods
	if late := n.since(unhealthyAt, "WATCHDOG=1"); len(late) > 0 {
		t.Errorf("WATCHDOG=1 sent %d times while the sync loop is wedged", len(late))
	}
	if d := unhealthyAt.Sub(t1); d < 20*time.Second {
		t.Errorf("unhealthy after %v, before the loop could be stale (3 s + 20 s)", d)
	}
	tg.Kill() // what systemd's watchdog does (SIGABRT, then the restart)

	tg.args = tg.args[:len(tg.args)-2]
	tg.Start()
	t2 := tg.startedAt
	waitFor(t, 30*time.Second, "READY=1 after the restart", func() (bool, error) { return len(n.since(t2, "READY=1")) == 1, nil })
	again := tg.waitRunning(startTimeout, "web", "main", 0)
	if again.ID != first.ID || again.PID != first.PID {
		t.Errorf("after the restart the container is %s (pid %d), want %s (pid %d) adopted", again.ID, again.PID, first.ID, first.PID)
	}
}
