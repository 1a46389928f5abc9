package main

import (
	"bufio"
	"context"
	"fmt"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// madvPageout is MADV_PAGEOUT (Linux 5.4), which package syscall lacks.
const madvPageout = 21

// codeTrimmer gives back, once, the pages of tug's own executable that
// start-up mapped and an idle agent does not use. Reading the binary at
// start maps far more of it than runs afterwards: the kernel reads ahead
// in large blocks (up to read_ahead_kb, megabytes on some disks) and maps
// whole neighbourhoods of every page touched, so most of a 20 MiB binary
// stays resident for good. After the start-up (image import, the first
// sync of every pod) the trimmer tells the kernel that the binary's
// read-only mappings are read at random (no read-ahead on a later fault)
// and pages them out (MADV_PAGEOUT); what the agent still runs comes back
// page by page. See docs/decisions.md, "The agent's own pages".
type codeTrimmer struct {
	after time.Duration // how long after start; 0: never
	log   *slog.Logger
}

// Run waits for t.after, trims, and waits for ctx to end (a component
// that returns stops the agent).
func (t codeTrimmer) Run(ctx context.Context) error {
	if t.after > 0 {
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(t.after):
		}
		if n, err := adviseExecutable(syscall.MADV_RANDOM, madvPageout); err != nil {
			// Kernels before 5.4 have no MADV_PAGEOUT: nothing is lost.
			t.log.Info("executable pages not given back", "err", err)
		} else {
			t.log.Debug("executable pages given back", "bytes", n)
		}
	}
	<-ctx.Done()
	return nil
}

// adviseExecutable applies the advices, in order, to every read-only
// mapping of the running executable and returns the bytes they span. The
// writable ones (data, bss) are left alone: advice such as MADV_PAGEOUT is
// harmless there, but this is about code and constant data.
func adviseExecutable(advices ...int) (int64, error) {
	exe, err := os.Readlink("/proc/self/exe")
	if err != nil {
		return 0, err
	}
	f, err := os.Open("/proc/self/maps")
	if err != nil {
		return 0, err
	}
	defer f.Close()
	var total int64
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		// start-end perms offset dev inode path
		fields := strings.Fields(sc.Text())
		if len(fields) != 6 || fields[5] != exe || strings.Contains(fields[1], "w") {
			continue
		}
		lo, hi, _ := strings.Cut(fields[0], "-")
		start, err1 := strconv.ParseUint(lo, 16, 64)
		end, err2 := strconv.ParseUint(hi, 16, 64)
		if err1 != nil || err2 != nil || end <= start {
			return total, fmt.Errorf("/proc/self/maps: bad range %q", fields[0])
		}
		for _, a := range advices {
			// A raw syscall: the range is the process's own mapping, not
			// Go memory, so it is passed as numbers, not as a slice.
			if _, _, errno := syscall.Syscall(syscall.SYS_MADVISE, uintptr(start), uintptr(end-start), uintptr(a)); errno != 0 {
				return total, fmt.Errorf("madvise(%s, %d): %w", fields[0], a, errno)
			}
		}
		total += int64(end - start)
	}
	return total, sc.Err()
}
