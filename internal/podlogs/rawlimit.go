package podlogs

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// The bound while tug is down (docs/decisions.md, "Container output and
// the disk"). While tug runs, the pump keeps each raw file's length near
// its unconverted part: after punching converted bytes it removes them from
// the file with fallocate(COLLAPSE_RANGE), and the shim, which writes with
// O_APPEND, goes on at the new end. The shim's RLIMIT_FSIZE soft limit is
// then set to rawFileMax: the kernel refuses its writes past that length,
// which only a raw file that nobody converts (tug down) reaches. The shim
// then stops copying that container's output, and the container blocks on
// a full pipe until tug, running again, sees the file at the limit and
// stops the container (an OutputLimit event); its next attempt starts with
// new raw files. The containers themselves get RLIMIT_FSIZE unlimited in
// their spec (runc, the shim's child, would otherwise hand the shim's limit
// on to them).

// rawFileMax is the length at which the shim stops writing a raw file: the
// most disk a container holds through one stream of its output while tug
// is down.
const rawFileMax = 64 << 20

// canCollapse reports whether the file system of dir removes a range from
// a file (FALLOC_FL_COLLAPSE_RANGE: ext4, XFS, F2FS).
func canCollapse(dir string) (bool, error) {
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return false, err
	}
	f, err := os.CreateTemp(dir, ".collapse-probe-")
	if err != nil {
		return false, err
	}
	defer os.Remove(f.Name())
	defer f.Close()
	var st unix.Stat_t
	if err := unix.Fstat(int(f.Fd()), &st); err != nil {
		return false, err
	}
	blk := int64(st.Blksize)
	if _, err := f.Write(make([]byte, 3*blk)); err != nil {
		return false, err
	}
	err = unix.Fallocate(int(f.Fd()), unix.FALLOC_FL_COLLAPSE_RANGE, 0, blk)
	if errors.Is(err, unix.EOPNOTSUPP) || errors.Is(err, unix.EINVAL) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	return true, nil
}

// limitShim sets the RLIMIT_FSIZE soft limit of the shim that is the
// parent of a container's init process pid to rawFileMax (the hard limit
// stays). The parent must be a containerd shim.
func LimitShim(pid uint32) error {
	status, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(int(pid)), "status"))
	if err != nil {
		return err
	}
	ppid := 0
	for _, line := range strings.Split(string(status), "\n") {
		if v, ok := strings.CutPrefix(line, "PPid:"); ok {
			ppid, _ = strconv.Atoi(strings.TrimSpace(v))
		}
	}
	if ppid <= 1 {
		return fmt.Errorf("process %d has no shim parent", pid)
	}
	comm, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(ppid), "comm"))
	if err != nil {
		return err
	}
	if !strings.HasPrefix(string(comm), "containerd-shim") {
		return fmt.Errorf("the parent of process %d is %q, not a containerd shim", pid, strings.TrimSpace(string(comm)))
	}
	var lim unix.Rlimit
	if err := unix.Prlimit(ppid, unix.RLIMIT_FSIZE, nil, &lim); err != nil {
		return fmt.Errorf("read the file size limit of shim %d: %w", ppid, err)
	}
	if lim.Cur == rawFileMax {
		return nil
	}
	lim.Cur = min(uint64(rawFileMax), lim.Max)
	if err := unix.Prlimit(ppid, unix.RLIMIT_FSIZE, &lim, nil); err != nil {
		return fmt.Errorf("limit the file size of shim %d: %w", ppid, err)
	}
	return nil
}

// collapseMin is the least converted length worth removing from the start
// of a raw file.
const collapseMin = 1 << 20

// collapse removes the punched start of stream i's raw file from the file,
// keeping the file's length near its unconverted part, and moves the
// stream's offsets back by as much. The range is committed as collapsing
// first: a tug killed around the collapse finds out at its start whether it
// happened (settleCollapse). Nothing is collapsed once the file reached
// the limit: its length then tells the next tug that the shim stopped.
func (p *pump) collapse(i int) {
	f := p.raw[i]
	if p.cfg.rawLimit == 0 || p.full || f == nil || p.collapseErr != nil {
		return
	}
	fi, err := f.Stat()
	if err != nil {
		return
	}
	blk := int64(4096)
	if st, ok := fi.Sys().(*unix.Stat_t); ok && st.Blksize > 0 {
		blk = int64(st.Blksize)
	}
	c := p.punched[i] / blk * blk
	if c < collapseMin || c >= fi.Size() {
		return // the kernel refuses a range that reaches the end
	}
	p.st.collapsing[i] = c
	if err := p.commit(); err != nil {
		p.st.collapsing[i] = 0
		return
	}
	p.crash("collapsing")
	if err := unix.Fallocate(int(f.Fd()), unix.FALLOC_FL_COLLAPSE_RANGE, 0, c); err != nil {
		p.collapseErr = err
	} else {
		p.crash("collapsed")
		p.st.off[i] -= c
		p.punched[i] -= c
	}
	p.st.collapsing[i] = 0
	p.commit() // a failure leaves collapsing committed: settleCollapse decides
}

// settleCollapse decides whether the collapse committed for stream i took
// place: the range was punched before, so the file started with a hole;
// after the collapse it starts with the bytes that followed the range,
// which the shim wrote (it only appends) and the punch did not reach.
func (p *pump) settleCollapse(i int) error {
	c := p.st.collapsing[i]
	if c == 0 {
		return nil
	}
	if f := p.raw[i]; f != nil {
		at, err := unix.Seek(int(f.Fd()), 0, unix.SEEK_DATA)
		switch {
		case err == nil && at == 0:
			p.st.off[i] -= c
		case err != nil && !errors.Is(err, unix.ENXIO):
			return fmt.Errorf("read raw %s: %w", streamNames[i], err)
		}
	}
	p.st.collapsing[i] = 0
	return p.commit()
}
