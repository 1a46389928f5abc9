package qos

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// limitsWant is what a test expects in one cgroup; zero fields are not
// checked, -1 means unlimited.
type limitsWant struct {
	shares uint64 // cpu.shares (v1) or its SharesToWeight (v2)
	quota  int64  // µs per QuotaPeriod
	memory int64  // bytes
	pids   int64
}

// readCgroup returns the trimmed content of a controller's file in dir
// (relative to the hierarchy root).
func readCgroup(t *testing.T, m *Manager, ctrl, dir, name string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(m.ctrl[ctrl], dir, name))
	if err != nil {
		t.Fatalf("read %s: %v", name, err)
	}
	return strings.TrimSpace(string(data))
}

// unlimitedV1 reports whether a v1 limit file reads as unlimited: "-1" as
// written to a stand-in, or the kernel's page-rounded LONG_MAX.
func unlimitedV1(s string) bool {
	v, err := strconv.ParseInt(s, 10, 64)
	return err == nil && (v == -1 || v >= 1<<62)
}

// checkCgroup compares dir's files with w, in the file names of m's cgroup
// version.
func checkCgroup(t *testing.T, m *Manager, dir string, w limitsWant) {
	t.Helper()
	v2 := m.Version() == 2
	if w.shares != 0 {
		if v2 {
			if got, want := readCgroup(t, m, "cpu", dir, "cpu.weight"), strconv.FormatUint(SharesToWeight(w.shares), 10); got != want {
				t.Errorf("%s cpu.weight = %s, want %s (shares %d)", dir, got, want, w.shares)
			}
		} else if got, want := readCgroup(t, m, "cpu", dir, "cpu.shares"), strconv.FormatUint(w.shares, 10); got != want {
			t.Errorf("%s cpu.shares = %s, want %s", dir, got, want)
		}
	}
	if w.quota != 0 {
		if v2 {
			want := "max 100000"
			if w.quota > 0 {
				want = strconv.FormatInt(w.quota, 10) + " 100000"
			}
			if got := readCgroup(t, m, "cpu", dir, "cpu.max"); got != want {
				t.Errorf("%s cpu.max = %q, want %q", dir, got, want)
			}
		} else {
			if got := readCgroup(t, m, "cpu", dir, "cpu.cfs_period_us"); got != "100000" {
				t.Errorf("%s cpu.cfs_period_us = %s, want 100000", dir, got)
			}
			if got, want := readCgroup(t, m, "cpu", dir, "cpu.cfs_quota_us"), strconv.FormatInt(w.quota, 10); got != want {
				t.Errorf("%s cpu.cfs_quota_us = %s, want %s", dir, got, want)
			}
		}
	}
	if w.memory != 0 {
		name := "memory.limit_in_bytes"
		if v2 {
			name = "memory.max"
		}
		got := readCgroup(t, m, "memory", dir, name)
		switch {
		case w.memory < 0 && v2 && got != "max",
			w.memory < 0 && !v2 && !unlimitedV1(got),
			w.memory > 0 && got != strconv.FormatInt(w.memory, 10):
			t.Errorf("%s %s = %s, want %d", dir, name, got, w.memory)
		}
	}
	if w.pids != 0 {
		want := "max"
		if w.pids > 0 {
			want = strconv.FormatInt(w.pids, 10)
		}
		if got := readCgroup(t, m, "pids", dir, "pids.max"); got != want {
			t.Errorf("%s pids.max = %s, want %s", dir, got, want)
		}
	}
}

// checkGone fails unless dir is absent from every hierarchy.
func checkGone(t *testing.T, m *Manager, dir string) {
	t.Helper()
	for _, h := range m.lay.all {
		if _, err := os.Stat(filepath.Join(h, dir)); !os.IsNotExist(err) {
			t.Errorf("%s still exists in %s (stat: %v)", dir, h, err)
		}
	}
}
