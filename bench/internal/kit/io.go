package kit

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
)

// IO is what /proc/PID/io counts for a process: the bytes it caused to be
// sent to the storage layer (write_bytes: page cache dirtied by its
// writes, counted when dirtied), the part of those it cancelled before
// writeback (cancelled_write_bytes: a file truncated or deleted while
// dirty) and its write system calls (syscw, any descriptor).
type IO struct {
	WriteBytes, CancelledWriteBytes, Syscw int64
}

// Sub is io minus o: the counts of a window.
func (c IO) Sub(o IO) IO {
	return IO{c.WriteBytes - o.WriteBytes, c.CancelledWriteBytes - o.CancelledWriteBytes, c.Syscw - o.Syscw}
}

// ReadIO reads /proc/PID/io (root, or the process's owner).
func ReadIO(pid int) (IO, error) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/io", pid))
	if err != nil {
		return IO{}, err
	}
	defer f.Close()
	return ParseIO(f)
}

// SumIO adds up the IO of pids.
func SumIO(pids []int) (IO, error) {
	var sum IO
	for _, pid := range pids {
		c, err := ReadIO(pid)
		if err != nil {
			return IO{}, err
		}
		sum = IO{sum.WriteBytes + c.WriteBytes, sum.CancelledWriteBytes + c.CancelledWriteBytes, sum.Syscw + c.Syscw}
	}
	return sum, nil
}

// ParseIO reads the "key: value" lines of /proc/PID/io.
func ParseIO(r io.Reader) (IO, error) {
	var c IO
	found := 0
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if !ok {
			continue
		}
		var dst *int64
		switch k {
		case "write_bytes":
			dst = &c.WriteBytes
		case "cancelled_write_bytes":
			dst = &c.CancelledWriteBytes
		case "syscw":
			dst = &c.Syscw
		default:
			continue
		}
		n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
		if err != nil {
			return IO{}, fmt.Errorf("/proc/PID/io %s: %w", k, err)
		}
		*dst = n
		found++
	}
	if err := sc.Err(); err != nil {
		return IO{}, err
	}
	if found != 3 {
		return IO{}, fmt.Errorf("/proc/PID/io: %d of write_bytes, cancelled_write_bytes, syscw", found)
	}
	return c, nil
}
