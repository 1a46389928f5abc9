package main

import (
	"syscall"
	"testing"
)

// The advice reaches the test binary's own read-only mappings, and paging
// them out leaves the process running (the code comes back on use).
func TestAdviseExecutable(t *testing.T) {
	n, err := adviseExecutable(syscall.MADV_RANDOM, madvPageout)
	if err != nil {
		t.Fatal(err)
	}
	if n < 1<<20 {
		t.Errorf("advised %d bytes of the executable, want its text and read-only data (MiBs)", n)
	}
	if got := usage(); got == "" {
		t.Error("usage() empty after the page-out")
	}
}
