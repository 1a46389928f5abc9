package podruntime

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

func TestParseRuntimeClasses(t *testing.T) {
	tests := []struct {
		name    string
		values  []string
		want    map[string]RuntimeClass
		wantErr bool
	}{
		{"none", nil, map[string]RuntimeClass{}, false},
		{"runc with a binary", []string{"nvidia=io.containerd.runc.v2:/usr/bin/nvidia-container-runtime"},
			map[string]RuntimeClass{"nvidia": {Name: "nvidia", Type: RuncRuntime, BinaryName: "/usr/bin/nvidia-container-runtime"}}, false},
		{"another shim", []string{"kata=io.containerd.kata.v2", "gvisor.node=io.containerd.runsc.v1"},
			map[string]RuntimeClass{
				"kata":        {Name: "kata", Type: "io.containerd.kata.v2"},
				"gvisor.node": {Name: "gvisor.node", Type: "io.containerd.runsc.v1"},
			}, false},
		{"no =", []string{"nvidia"}, nil, true},
		{"name not a subdomain", []string{"NVIDIA=io.containerd.runc.v2"}, nil, true},
		{"empty name", []string{"=io.containerd.runc.v2"}, nil, true},
		{"runtime type not containerd's", []string{"crun=crun"}, nil, true},
		{"runtime type a path", []string{"x=/usr/bin/containerd-shim-runc-v2"}, nil, true},
		{"relative binary", []string{"x=io.containerd.runc.v2:bin/runc"}, nil, true},
		{"unclean binary", []string{"x=io.containerd.runc.v2:/usr/bin/../bin/runc"}, nil, true},
		{"empty binary", []string{"x=io.containerd.runc.v2:"}, nil, true},
		{"binary for another shim", []string{"kata=io.containerd.kata.v2:/usr/bin/kata"}, nil, true},
		{"declared twice", []string{"a=io.containerd.runc.v2", "a=io.containerd.kata.v2"}, nil, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseRuntimeClasses(tt.values)
			if tt.wantErr {
				if !errors.Is(err, ErrRuntimeClass) {
					t.Fatalf("ParseRuntimeClasses(%q) = %v, %v; want ErrRuntimeClass", tt.values, got, err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(tt.want) {
				t.Fatalf("ParseRuntimeClasses(%q) = %v, want %v", tt.values, got, tt.want)
			}
			for k, v := range tt.want {
				if got[k] != v {
					t.Fatalf("class %q = %+v, want %+v", k, got[k], v)
				}
				if back, err := ParseRuntimeClasses([]string{v.String()}); err != nil || back[k] != v {
					t.Fatalf("String %q does not parse back: %v, %v", v.String(), back, err)
				}
			}
		})
	}
}

func TestRuntimeClassCheck(t *testing.T) {
	dir := t.TempDir()
	exe := filepath.Join(dir, "runtime")
	plain := filepath.Join(dir, "plain")
	if err := os.WriteFile(exe, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(plain, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		binary  string
		wantErr bool
	}{
		{"no binary", "", false},
		{"executable", exe, false},
		{"missing", filepath.Join(dir, "missing"), true},
		{"not executable", plain, true},
		{"a directory", dir, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := RuntimeClass{Name: "x", Type: RuncRuntime, BinaryName: tt.binary}.Check()
			if (err != nil) != tt.wantErr || (err != nil && !errors.Is(err, ErrRuntimeClass)) {
				t.Fatalf("Check(%q) = %v, want error %v", tt.binary, err, tt.wantErr)
			}
		})
	}
}
