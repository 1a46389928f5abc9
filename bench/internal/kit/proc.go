package kit

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"time"
)

// ReadTicks returns a process's CPU time, utime+stime, in clock ticks
// (/proc/PID/stat, fields 14 and 15).
func ReadTicks(pid int) (uint64, error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	t, err := ParseStatTicks(string(data))
	if err != nil {
		return 0, fmt.Errorf("/proc/%d/stat: %w", pid, err)
	}
	return t, nil
}

// ParseStatTicks returns utime+stime of a /proc/PID/stat line. The command
// name (field 2) may hold spaces and parentheses: the fields are counted
// from its last ')'.
func ParseStatTicks(line string) (uint64, error) {
	i := strings.LastIndexByte(line, ')')
	if i < 0 {
		return 0, fmt.Errorf("no command name in %q", line)
	}
	f := strings.Fields(line[i+1:]) // from field 3, state
	if len(f) < 13 {
		return 0, fmt.Errorf("too few fields in %q", line)
	}
	utime, err1 := strconv.ParseUint(f[11], 10, 64)
	stime, err2 := strconv.ParseUint(f[12], 10, 64)
	if err := errors.Join(err1, err2); err != nil {
		return 0, fmt.Errorf("utime/stime of %q: %w", line, err)
	}
	return utime + stime, nil
}

// SumTicks returns the CPU time of the processes pids, summed.
func SumTicks(pids []int) (uint64, error) {
	var sum uint64
	for _, pid := range pids {
		t, err := ReadTicks(pid)
		if err != nil {
			return 0, err
		}
		sum += t
	}
	return sum, nil
}

// ClockTicks returns the kernel's clock ticks per second (getconf CLK_TCK),
// 100 if getconf fails.
func ClockTicks() uint64 {
	out, err := exec.Command("getconf", "CLK_TCK").Output()
	if err == nil {
		if n, err := strconv.ParseUint(strings.TrimSpace(string(out)), 10, 64); err == nil && n > 0 {
			return n
		}
	}
	return 100
}

// Memory is the memory of a process, or summed over a set, in KiB.
type Memory struct {
	RSS int64 // VmRSS: resident pages, shared ones counted in full
	HWM int64 // VmHWM: the peak of VmRSS
	PSS int64 // Pss of smaps_rollup: shared pages divided among their users
	// PSSAnon and PSSFile split PSS into anonymous memory (heap, stacks)
	// and file pages (the executable and libraries).
	PSSAnon, PSSFile int64
}

// Add returns m + o.
func (m Memory) Add(o Memory) Memory {
	return Memory{RSS: m.RSS + o.RSS, HWM: m.HWM + o.HWM, PSS: m.PSS + o.PSS, PSSAnon: m.PSSAnon + o.PSSAnon, PSSFile: m.PSSFile + o.PSSFile}
}

// MiB converts KiB to MiB.
func MiB(kib int64) float64 { return float64(kib) / 1024 }

// ReadMemory reads a process's VmRSS and VmHWM (/proc/PID/status) and Pss
// with its anonymous and file parts (/proc/PID/smaps_rollup).
func ReadMemory(pid int) (Memory, error) {
	status, err := readKiB(fmt.Sprintf("/proc/%d/status", pid), "VmRSS:", "VmHWM:")
	if err != nil {
		return Memory{}, err
	}
	rollup, err := readKiB(fmt.Sprintf("/proc/%d/smaps_rollup", pid), "Pss:", "Pss_Anon:", "Pss_File:")
	if err != nil {
		return Memory{}, err
	}
	return Memory{RSS: status[0], HWM: status[1], PSS: rollup[0], PSSAnon: rollup[1], PSSFile: rollup[2]}, nil
}

// SumMemory returns the memory of the processes pids, summed.
func SumMemory(pids []int) (Memory, error) {
	var sum Memory
	for _, pid := range pids {
		m, err := ReadMemory(pid)
		if err != nil {
			return sum, err
		}
		sum = sum.Add(m)
	}
	return sum, nil
}

func readKiB(file string, keys ...string) ([]int64, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	v, err := ParseKiB(bytes.NewReader(data), keys...)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	return v, nil
}

// ParseKiB returns the values of the "Key:   123 kB" lines named by keys
// (with their colon, as in /proc/PID/status and smaps_rollup), in the
// order of keys; each must be there.
func ParseKiB(r io.Reader, keys ...string) ([]int64, error) {
	out := make([]int64, len(keys))
	found := make([]bool, len(keys))
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 2 {
			continue
		}
		i := slices.Index(keys, f[0])
		if i < 0 {
			continue
		}
		v, err := strconv.ParseInt(f[1], 10, 64)
		if err != nil {
			return nil, fmt.Errorf("%q: %w", sc.Text(), err)
		}
		out[i], found[i] = v, true
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	for i, ok := range found {
		if !ok {
			return nil, fmt.Errorf("no %s line", keys[i])
		}
	}
	return out, nil
}

// CPUIdle returns the share of CPU time the machine was idle during the
// next second, from /proc/stat ("?" if unreadable): a busy machine makes
// every number noisy.
func CPUIdle() string {
	idle0, total0, err := readCPUTimes()
	if err != nil {
		return "?"
	}
	time.Sleep(time.Second)
	idle1, total1, err := readCPUTimes()
	if err != nil || total1 <= total0 {
		return "?"
	}
	return fmt.Sprintf("%.0f%%", 100*float64(idle1-idle0)/float64(total1-total0))
}

func readCPUTimes() (idle, total uint64, err error) {
	data, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0, 0, err
	}
	line, _, _ := strings.Cut(string(data), "\n")
	return ParseCPUTimes(line)
}

// ParseCPUTimes returns the idle (idle + iowait) and total jiffies of the
// "cpu" line of /proc/stat.
func ParseCPUTimes(line string) (idle, total uint64, err error) {
	f := strings.Fields(line)
	if len(f) < 6 || f[0] != "cpu" {
		return 0, 0, fmt.Errorf("/proc/stat: unexpected first line %q", line)
	}
	for i, v := range f[1:] {
		n, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			return 0, 0, fmt.Errorf("/proc/stat: %w", err)
		}
		total += n
		if i == 3 || i == 4 { // idle, iowait
			idle += n
		}
	}
	return idle, total, nil
}
