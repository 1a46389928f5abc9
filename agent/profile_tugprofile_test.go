//go:build tugprofile

package main

import (
	"io"
	"os"
	"path/filepath"
	"testing"
)

// TestStartProfiles: the profiling build writes a non-empty CPU profile,
// trace and heap profile to the files its environment names.
func TestStartProfiles(t *testing.T) {
	dir := t.TempDir()
	files := map[string]string{
		"TUG_CPUPROFILE": filepath.Join(dir, "cpu.prof"),
		"TUG_TRACE":      filepath.Join(dir, "trace.out"),
		"TUG_MEMPROFILE": filepath.Join(dir, "mem.prof"),
	}
	for env, path := range files {
		t.Setenv(env, path)
	}
	stop := startProfiles(io.Discard)
	sink := 0
	for i := range 1_000_000 {
		sink += i % 7
	}
	_ = sink
	stop()
	for env, path := range files {
		st, err := os.Stat(path)
		if err != nil {
			t.Fatalf("%s: %v", env, err)
		}
		if st.Size() == 0 {
			t.Errorf("%s: %s is empty", env, path)
		}
	}
}
