package testutil

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// recorder is a testing.TB that records Skipf, Fatalf, Errorf and Log
// instead of acting on them. Unlike the real ones, its Skipf and Fatalf return, so the
// helpers must return right after calling missing.
type recorder struct {
	testing.TB
	skipped, fatal string
	logs           []string
	errs           []string
}

func (r *recorder) Helper()                     {}
func (r *recorder) Skipf(f string, args ...any) { r.skipped = fmt.Sprintf(f, args...) }
func (r *recorder) Fatalf(f string, args ...any) {
	r.fatal = fmt.Sprintf(f, args...)
}
func (r *recorder) Errorf(f string, args ...any) { r.errs = append(r.errs, fmt.Sprintf(f, args...)) }
func (r *recorder) Logf(f string, args ...any)   { r.logs = append(r.logs, fmt.Sprintf(f, args...)) }
func (r *recorder) Log(args ...any)              { r.logs = append(r.logs, fmt.Sprint(args...)) }

func TestMissingSkipsOrFails(t *testing.T) {
	tests := []struct {
		ci       string
		wantFail bool
	}{
		{ci: "", wantFail: false},
		{ci: "false", wantFail: false},
		{ci: "0", wantFail: false},
		{ci: "yes please", wantFail: false},
		{ci: "true", wantFail: true},
		{ci: "TRUE", wantFail: true},
		{ci: "1", wantFail: true},
	}
	for _, tt := range tests {
		t.Run("CI="+tt.ci, func(t *testing.T) {
			t.Setenv("CI", tt.ci)
			r := &recorder{TB: t}
			Missing(r, "needs %s", "thing")
			got := r.skipped
			if tt.wantFail {
				got = r.fatal
			}
			if !strings.Contains(got, "needs thing") {
				t.Errorf("skipped=%q fatal=%q, want the reason in %s", r.skipped, r.fatal,
					map[bool]string{true: "Fatalf", false: "Skipf"}[tt.wantFail])
			}
			if tt.wantFail && r.skipped != "" || !tt.wantFail && r.fatal != "" {
				t.Errorf("skipped=%q fatal=%q: called both or the wrong one", r.skipped, r.fatal)
			}
		})
	}
}

// TestRequireGoesThroughMissing checks that the helpers report a missing
// prerequisite through missing (so CI fails) and pass when it is present.
func TestRequireGoesThroughMissing(t *testing.T) {
	noSocket := filepath.Join(t.TempDir(), "containerd.sock")
	tests := []struct {
		name    string
		env     map[string]string
		require func(testing.TB)
		want    string // "" when the prerequisite is present
	}{
		{
			name:    "command missing",
			require: func(t testing.TB) { RequireCommand(t, "tug-no-such-command") },
			want:    `requires command "tug-no-such-command"`,
		},
		{
			name:    "command present",
			require: func(t testing.TB) { RequireCommand(t, "sh") },
		},
		{
			name:    "containerd not configured",
			env:     map[string]string{EnvContainerd: ""},
			require: func(t testing.TB) { RequireContainerd(t) },
			want:    EnvContainerd + " is not set",
		},
		{
			name:    "containerd socket missing",
			env:     map[string]string{EnvContainerd: noSocket},
			require: func(t testing.TB) { RequireContainerd(t) },
			want:    "containerd",
		},
		{
			name:    "image not configured",
			env:     map[string]string{EnvImage: "", EnvImageArchive: ""},
			require: func(t testing.TB) { TestImage(t) },
			want:    EnvImage,
		},
		{
			name:    "image archive missing",
			env:     map[string]string{EnvImage: "docker.io/library/busybox:1.35", EnvImageArchive: noSocket},
			require: func(t testing.TB) { TestImage(t) },
			want:    "test image archive",
		},
		{
			name:    "registry not configured",
			env:     map[string]string{EnvRegistry: "", EnvRegistryImage: ""},
			require: func(t testing.TB) { RegistryImage(t) },
			want:    EnvRegistryImage,
		},
	}
	for _, tt := range tests {
		for _, ci := range []string{"", "true"} {
			t.Run(tt.name+"/CI="+ci, func(t *testing.T) {
				t.Setenv("CI", ci)
				for k, v := range tt.env {
					t.Setenv(k, v)
				}
				r := &recorder{TB: t}
				tt.require(r)
				got, other := r.skipped, r.fatal
				if ci == "true" {
					got, other = r.fatal, r.skipped
				}
				if other != "" {
					t.Errorf("CI=%q: wrong action, got %q", ci, other)
				}
				switch {
				case tt.want == "" && got != "":
					t.Errorf("prerequisite present, but got %q", got)
				case tt.want != "" && !strings.Contains(got, tt.want):
					t.Errorf("got %q, want it to contain %q", got, tt.want)
				}
			})
		}
	}
}

var validNamespace = regexp.MustCompile(`^[a-z0-9]+(-[a-z0-9]+)*$`)

func TestNamespaceFor(t *testing.T) {
	long := strings.Repeat("Abc/", 40)
	tests := []struct {
		name, test, want string
	}{
		{name: "plain", test: "TestStart", want: "teststart-a1b2c3"},
		{name: "subtests", test: "TestPod/restart_policy=Always#01", want: "testpod-restart-policy-always-01-a1b2c3"},
		{name: "runs collapse", test: "Test__x//y  z", want: "test-x-y-z-a1b2c3"},
		{name: "edges trimmed", test: "/_Test_/", want: "test-a1b2c3"},
		{name: "non-ascii dropped", test: "TestÜber-µ", want: "test-ber-a1b2c3"},
		{name: "empty", test: "", want: "test-a1b2c3"},
		{name: "only punctuation", test: "/#/", want: "test-a1b2c3"},
		{name: "long", test: long, want: strings.TrimRight(strings.Repeat("abc-", 14)[:53], "-") + "-a1b2c3"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := namespaceFor(tt.test, "a1b2c3")
			if got != tt.want {
				t.Errorf("namespaceFor(%q) = %q, want %q", tt.test, got, tt.want)
			}
			if len(got) > maxNamespace || !validNamespace.MatchString(got) {
				t.Errorf("namespaceFor(%q) = %q: not a valid namespace of at most %d characters", tt.test, got, maxNamespace)
			}
		})
	}
}

func TestNamespaceUnique(t *testing.T) {
	a, b := newNamespace(t), newNamespace(t)
	if a == b {
		t.Errorf("two calls returned %q", a)
	}
	for _, ns := range []string{a, b} {
		if !strings.HasPrefix(ns, "testnamespaceunique-") || len(ns) > maxNamespace || !validNamespace.MatchString(ns) {
			t.Errorf("Namespace = %q", ns)
		}
	}
}

func TestLogger(t *testing.T) {
	r := &recorder{TB: t}
	var cleanups []func()
	log := Logger(&cleanupRecorder{recorder: r, cleanups: &cleanups})
	log.Info("started", "pod", "web")
	if len(r.logs) != 1 || !strings.Contains(r.logs[0], "msg=started pod=web") || strings.HasSuffix(r.logs[0], "\n") {
		t.Fatalf("logs = %q", r.logs)
	}
	for _, f := range cleanups {
		f()
	}
	log.Info("after the test") // must not reach t.Log (it would panic)
	if len(r.logs) != 1 {
		t.Errorf("logged after cleanup: %q", r.logs)
	}
}

type cleanupRecorder struct {
	*recorder
	cleanups *[]func()
}

func (c *cleanupRecorder) Cleanup(f func()) { *c.cleanups = append(*c.cleanups, f) }

func TestPrebuiltBinary(t *testing.T) {
	dir := t.TempDir()
	exe := filepath.Join(dir, "tug")
	plain := filepath.Join(dir, "notes.txt")
	if err := os.WriteFile(exe, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(plain, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, env, pkg string
		wantOK         bool
		wantPath       string
		wantErr        string
	}{
		{name: "unset", env: "", pkg: "../agent"},
		{name: "agent", env: exe, pkg: "../agent", wantOK: true, wantPath: exe},
		{name: "agent deeper", env: exe, pkg: "../../agent/", wantOK: true, wantPath: exe},
		{name: "import path", env: exe, pkg: "tug/agent", wantOK: true, wantPath: exe},
		{name: "other program is built", env: exe, pkg: "./testdata/logger"},
		{name: "missing", env: filepath.Join(dir, "nope"), pkg: "../agent", wantOK: true, wantErr: "no such file"},
		{name: "not executable", env: plain, pkg: "../agent", wantOK: true, wantErr: "not an executable"},
		{name: "directory", env: dir, pkg: "../agent", wantOK: true, wantErr: "not an executable"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv(EnvBinary, tt.env)
			path, ok, err := prebuiltBinary(tt.pkg)
			if ok != tt.wantOK || path != tt.wantPath {
				t.Errorf("prebuiltBinary(%q) = %q, %v, want %q, %v", tt.pkg, path, ok, tt.wantPath, tt.wantOK)
			}
			switch {
			case tt.wantErr == "" && err != nil:
				t.Errorf("error %v", err)
			case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
				t.Errorf("error %v, want it to contain %q", err, tt.wantErr)
			}
		})
	}
}
