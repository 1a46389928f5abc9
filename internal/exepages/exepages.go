// Package exepages gives back the pages of the running executable that
// start-up mapped and a process at rest does not use.
//
// Reading a Go binary at start maps far more of it than runs afterwards:
// the kernel reads ahead in large blocks (up to read_ahead_kb, megabytes on
// some disks) and maps whole neighbourhoods of every page touched, so most
// of a 20 MiB binary stays resident for good. GiveBack tells the kernel that
// the executable's read-only mappings are read at random (no read-ahead on
// a later fault) and pages them out (MADV_PAGEOUT); what the process still
// runs comes back page by page. See docs/decisions.md, "The agent's own
// pages".
package exepages

import (
	"bufio"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
)

// madvPageout is MADV_PAGEOUT (Linux 5.4), which package syscall lacks.
const madvPageout = 21

// GiveBack advises every read-only mapping of the running executable
// MADV_RANDOM, then MADV_PAGEOUT, and returns the bytes they span. Kernels
// before 5.4 have no MADV_PAGEOUT and fail it: nothing is lost then.
func GiveBack() (int64, error) {
	return advise(syscall.MADV_RANDOM, madvPageout)
}

// advise applies the advices, in order, to every read-only mapping of the
// running executable and returns the bytes they span. The writable ones
// (data, bss) are left alone: advice such as MADV_PAGEOUT is harmless
// there, but this is about code and constant data.
func advise(advices ...int) (int64, error) {
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
