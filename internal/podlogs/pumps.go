package podlogs

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"tug/internal/atomicfile"
	"tug/internal/pod"
)

// The "file" log driver (docs/decisions.md, "Container output and the
// disk"): the shim writes the container's stdout and stderr, unchanged, to two regular
// files that tug creates, and tug turns them into the CRI log. No process
// per container besides the shim, and the container never waits for tug:
// the shim copies its output pipes into the files whether tug runs or not.
//
// containerd's runc shim opens a stdio path that is not a FIFO as a regular
// file (O_WRONLY|O_APPEND) and copies the stream into it; the paths are
// <root-dir>/pods/<uid>/logs/<container>/<attempt>.stdout and .stderr (tug's
// own files, not in the pod logs dir that shippers read), next to
// <attempt>.state, the pump's committed progress: how far each raw file has
// been converted and how long the CRI file (<attempt>.log) was after that
// conversion. Every conversion step writes CRI records at the committed CRI
// size and then commits the new (offsets, size) in one pwrite of the state;
// a tug killed between the two leaves records past the committed size,
// which the next tug truncates away before converting the same raw bytes
// again: each line reaches the CRI log exactly once whatever moment tug
// dies. Converted raw bytes are given back with fallocate(PUNCH_HOLE)
// through a descriptor opened for writing (the kernel refuses a punch
// through a read-only one); the raw files and the state are removed once
// the task is deleted (the shim has then written everything) and the rest
// converted.
//
// The disk a container holds through its output is bounded: a raw file
// whose unconverted part grows beyond the larger of rawBacklogMax and the
// log's max-size (the container writes faster than tug converts, or it
// wrote while tug was down) is cut: tug keeps the newest half of that from
// the start of a line, drops the bytes before them, writes one record
// saying how many bytes it dropped, and punches them out. A tug that starts
// does so before converting anything. While tug is down, the shim's file
// size limit bounds each raw file (rawlimit.go). On a file system that
// cannot punch holes, tug says so once (Error) and stops the container
// once its raw file holds rawNoPunchMax bytes: its next attempt starts with
// new raw files (docs/decisions.md, "Container output and the disk").

// Pump tuning.
const (
	pumpChunk  = 128 << 10       // raw bytes read per stream at once
	stepChunks = 8               // reads per stream per step
	punchEvery = 1 << 20         // give back converted raw space by this much
	pumpTick   = 2 * time.Second // steps every pump when inotify is unavailable
	// pumpTickWatched steps every pump with inotify working: a safety net
	// only (output wakes its pump at once), rare enough that an idle agent
	// does not read every container's raw files every two seconds.
	pumpTickWatched = 10 * time.Second
	// pumpTaskCheck: an idle pump asks containerd whether its task is
	// still there this often (and once when adopted). Only a safety net:
	// tug's own task deletions (reap, remove) tell the pump at once, and an
	// idle agent must not poll containerd per container.
	pumpTaskCheck = 5 * time.Minute
	// rawBacklogMax is the least unconverted raw bytes of one stream beyond
	// which the pump drops the oldest, keeping the disk a container holds
	// through its output bounded; the bound is the larger of this and the
	// log's max-size (pump.backlogMax).
	rawBacklogMax = 2 << 20
	// rawNoPunchMax is the size of a raw file beyond which its container
	// is stopped when the file system cannot punch holes.
	rawNoPunchMax = 64 << 20
)

// droppedFmt is the text of the record written where output was dropped.
const droppedFmt = "tug: dropped %d bytes of output: the container wrote faster than its log is converted"

// pumpState is what a pump commits after each step; its encoding is
// stateSize bytes at offset 0 of the state file, then the CRI file's path,
// a newline and the container ID, written once.
type pumpState struct {
	off      [2]int64 // converted raw bytes of stdout, stderr
	criSize  int64    // the CRI file's length after the last commit
	rotating bool     // a rotation was started and may not be complete
	// collapsing is the length of the range at the start of stream i's raw
	// file that is being removed from it (0: none); see pump.collapse.
	collapsing [2]int64
}

// stateSize is the encoding's length: magic, offsets, size, rotating,
// collapsing, crc32. stateSizeV1 is that of the encoding without
// collapsing (magic "tug1"), which a tug that starts still reads.
const (
	stateSize   = 4 + 8*3 + 1 + 8*2 + 4
	stateSizeV1 = 4 + 8*3 + 1 + 4
)

var (
	stateMagic   = [4]byte{'t', 'u', 'g', '2'}
	stateMagicV1 = [4]byte{'t', 'u', 'g', '1'}
)

func (s pumpState) encode() []byte {
	b := make([]byte, 0, stateSize)
	b = append(b, stateMagic[:]...)
	b = binary.LittleEndian.AppendUint64(b, uint64(s.off[0]))
	b = binary.LittleEndian.AppendUint64(b, uint64(s.off[1]))
	b = binary.LittleEndian.AppendUint64(b, uint64(s.criSize))
	r := byte(0)
	if s.rotating {
		r = 1
	}
	b = append(b, r)
	b = binary.LittleEndian.AppendUint64(b, uint64(s.collapsing[0]))
	b = binary.LittleEndian.AppendUint64(b, uint64(s.collapsing[1]))
	return binary.LittleEndian.AppendUint32(b, crc32.ChecksumIEEE(b))
}

// decodeState decodes a state and returns the length of its encoding.
func decodeState(b []byte) (pumpState, int, error) {
	size := 0
	switch {
	case len(b) >= 4 && bytes.Equal(b[:4], stateMagic[:]):
		size = stateSize
	case len(b) >= 4 && bytes.Equal(b[:4], stateMagicV1[:]):
		size = stateSizeV1
	}
	if size == 0 || len(b) < size ||
		crc32.ChecksumIEEE(b[:size-4]) != binary.LittleEndian.Uint32(b[size-4:size]) {
		return pumpState{}, 0, errors.New("bad log pump state")
	}
	s := pumpState{
		off:      [2]int64{int64(binary.LittleEndian.Uint64(b[4:])), int64(binary.LittleEndian.Uint64(b[12:]))},
		criSize:  int64(binary.LittleEndian.Uint64(b[20:])),
		rotating: b[28] == 1,
	}
	if size == stateSize {
		s.collapsing = [2]int64{int64(binary.LittleEndian.Uint64(b[29:])), int64(binary.LittleEndian.Uint64(b[37:]))}
	}
	return s, size, nil
}

// rawPaths returns the raw stdout, stderr and state files of base
// (<root-dir>/pods/<uid>/logs/<container>/<attempt>).
func rawPaths(base string) (stdout, stderr, state string) {
	return base + ".stdout", base + ".stderr", base + ".state"
}

var streamNames = [2]string{"stdout", "stderr"}

// pump converts one container attempt's raw files into its CRI log.
type pump struct {
	id      string
	cri     string
	base    string // of the raw files
	cfg     logConfig
	raw     [2]*os.File // nil: missing (nothing to read)
	state   *os.File
	w       *os.File // the CRI file, nil until opened
	st      pumpState
	punched [2]int64
	// finish is set once the task is deleted: the next step converts what
	// is left, unfinished lines included, and removes the raw files.
	finish   bool
	lastData time.Time
	sc       *scratch
	jf       journalFields // the fields of its journal entries, with cfg.journal
	lastErr  string        // the last error logged
	// noPunch is set when the file system cannot punch holes.
	noPunch bool
	// dropped counts the raw bytes dropped and not yet reported.
	dropped int64
	// tooBig is set when noPunch and a raw file outgrew rawNoPunchMax.
	tooBig bool
	// full is set when a raw file reached cfg.rawLimit: the shim stopped
	// writing it (rawlimit.go).
	full bool
	// collapseErr is the first collapse that failed, saidCollapse set
	// once it is logged.
	collapseErr  error
	saidCollapse bool
	// saidNoPunch, stopped and droppedAt are the pump's reports:
	// noPunch logged, container stopped, last drop logged.
	saidNoPunch, stopped bool
	droppedAt            time.Time
	// crashPoint, set by tests only, is called at the points where a kill
	// matters; it panics to stand for the kill.
	crashPoint func(where string)
}

func (p *pump) crash(where string) {
	if p.crashPoint != nil {
		p.crashPoint(where)
	}
}

// scratch is the buffers of a step, shared by the pumps of one Pumps
// (they step one at a time): the agent's memory does not grow with the
// number of containers.
type scratch struct {
	buf []byte // raw bytes read, pumpChunk long
	rec []byte // records of the step not yet written
	one []byte // one record
	// entries are the journal entries of the step not yet sent; their
	// messages point into buf.
	entries []JournalEntry
}

func newScratch() *scratch { return &scratch{buf: make([]byte, pumpChunk)} }

// openPump opens an existing attempt's raw files and state and recovers:
// it completes a rotation that was under way and truncates the CRI file to
// its committed size.
func openPump(statePath string, cfg logConfig, sc *scratch) (*pump, error) {
	sf, err := os.OpenFile(statePath, os.O_RDWR, 0)
	if err != nil {
		return nil, err
	}
	data, err := io.ReadAll(io.LimitReader(sf, 4096))
	if err != nil {
		sf.Close()
		return nil, err
	}
	st, size, err := decodeState(data)
	if err != nil {
		sf.Close()
		return nil, fmt.Errorf("%s: %w", statePath, err)
	}
	cri, id, ok := strings.Cut(string(data[size:]), "\n")
	if !ok || !filepath.IsAbs(cri) {
		sf.Close()
		return nil, fmt.Errorf("%s: bad log pump state", statePath)
	}
	if size == stateSizeV1 {
		// A state an older tug wrote: rewritten whole in the current
		// encoding, which is longer than the old one.
		sf.Close()
		if err := writeState(statePath, st, cri, id); err != nil {
			return nil, err
		}
		if sf, err = os.OpenFile(statePath, os.O_RDWR, 0); err != nil {
			return nil, err
		}
	}
	p := &pump{id: id, cri: cri, base: strings.TrimSuffix(statePath, ".state"), cfg: cfg, state: sf, st: st,
		sc: sc}
	p.cfg.path = p.cri
	if p.cfg.journal != nil {
		p.jf = newJournalFields(p.id, p.cri)
	}
	out, errp, _ := rawPaths(p.base)
	for i, path := range []string{out, errp} {
		// Read-write: fallocate(PUNCH_HOLE) needs a descriptor open for
		// writing. tug never writes the raw files otherwise.
		f, err := os.OpenFile(path, os.O_RDWR, 0)
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			p.close()
			return nil, err
		}
		p.raw[i] = f
		// From 0: the first punch also gives back what an earlier tug
		// converted and could not punch.
		p.punched[i] = 0
	}
	if err := p.recover(); err != nil {
		p.close()
		return nil, err
	}
	return p, nil
}

// writeState writes a new state file at path durably (atomicfile.Write:
// temporary file, fsync, rename, fsync of the directory), once per
// attempt: a power cut leaves the old file or the new one. The commits of
// each step that follow are one pwrite of stateSize bytes in place,
// without an fsync (an fsync per step would cost the log path a disk
// flush per burst of output): a cut leaves an older commit, from which
// recover converts the same raw bytes again, or a torn one, which the
// CRC refuses (the attempt's output then stops being converted, with a
// Warn naming the file).
func writeState(path string, st pumpState, cri, id string) error {
	return atomicfile.Write(path, append(st.encode(), cri+"\n"+id...), 0o640)
}

// createPump creates the raw files (empty) at base and the state of a new
// attempt whose CRI file is cri; what cri already holds is kept.
func createPump(id, cri, base string, cfg logConfig, sc *scratch) (*pump, error) {
	out, errp, state := rawPaths(base)
	if err := os.MkdirAll(filepath.Dir(state), 0o750); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(filepath.Dir(cri), 0o755); err != nil {
		return nil, err
	}
	size := int64(0)
	if fi, err := os.Stat(cri); err == nil {
		size = fi.Size()
	}
	for _, path := range []string{out, errp} {
		f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o640)
		if err != nil {
			return nil, err
		}
		f.Close()
	}
	if err := writeState(state, pumpState{criSize: size}, cri, id); err != nil {
		return nil, err
	}
	cfg.path = cri
	return openPump(state, cfg, sc)
}

// recover undoes what a killed pump wrote past its last commit and settles
// a collapse it may have left half done.
func (p *pump) recover() error {
	for i := range p.st.collapsing {
		if err := p.settleCollapse(i); err != nil {
			return err
		}
	}
	if p.cfg.noFile {
		return nil // no CRI file: nothing to recover there
	}
	if p.st.rotating {
		if err := p.completeRotation(); err != nil {
			return err
		}
	}
	f, err := os.OpenFile(p.cri, os.O_WRONLY|os.O_CREATE, 0o640)
	if err != nil {
		return err
	}
	p.w = f
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	switch {
	case fi.Size() > p.st.criSize:
		return f.Truncate(p.st.criSize)
	case fi.Size() < p.st.criSize:
		// Only an outside hand shortens the file; go on at its end.
		p.st.criSize = fi.Size()
		return p.commit()
	}
	return nil
}

// commit writes the state in one pwrite: a process killed around it leaves
// either the old state or the new one.
func (p *pump) commit() error {
	if _, err := p.state.WriteAt(p.st.encode(), 0); err != nil {
		return fmt.Errorf("commit log state: %w", err)
	}
	return nil
}

// step converts what the raw files hold now, up to stepChunks reads per
// stream (so that one container's backlog does not hold the others, nor a
// container start, for long). more reports that a stream had more.
func (p *pump) step() (more bool, err error) {
	progress := false
	for i := range p.raw {
		for k := 0; ; k++ {
			if k == stepChunks {
				more = true
				break
			}
			n, err := p.stepStream(i)
			if err != nil {
				return more, err
			}
			if n == 0 {
				break
			}
			progress = true
		}
	}
	if progress {
		p.lastData = time.Now()
	}
	return more, nil
}

// stepStream reads up to pumpChunk raw bytes of stream i from its
// committed offset, writes their whole lines as CRI records (a line longer
// than 16 KiB as partial records; when finishing, an unfinished last line
// too) and commits. An unfinished line stays unconverted until its newline
// comes. It returns the raw bytes converted.
func (p *pump) stepStream(i int) (int, error) {
	f := p.raw[i]
	if f == nil {
		return 0, nil
	}
	if err := p.bound(i); err != nil {
		return 0, err
	}
	n, err := f.ReadAt(p.sc.buf, p.st.off[i])
	if err != nil && !errors.Is(err, io.EOF) {
		return 0, fmt.Errorf("read raw %s: %w", streamNames[i], err)
	}
	data := p.sc.buf[:n]
	atEOF := n < len(p.sc.buf)
	now := time.Now()
	p.sc.rec, p.sc.entries = p.sc.rec[:0], p.sc.entries[:0]
	pos, committed := 0, 0
	for pos < len(data) {
		rest := data[pos:]
		j := bytes.IndexByte(rest, '\n')
		var text []byte
		partial, used := false, 0
		switch {
		case j >= 0 && j <= maxLogLine:
			text, used = bytes.TrimSuffix(rest[:j], []byte{'\r'}), j+1
		case len(rest) >= maxLogLine:
			text, partial, used = rest[:maxLogLine], true, maxLogLine
		case p.finish && atEOF:
			text, used = rest, len(rest)
		}
		if used == 0 {
			break // an unfinished line
		}
		if p.cfg.noFile {
			p.sc.entries = append(p.sc.entries, p.jf.entry(i, partial, text))
			pos += used
			continue
		}
		p.sc.one = appendRecord(p.sc.one[:0], now, streamNames[i], partial, text)
		if p.cfg.maxSize > 0 && p.st.criSize+int64(len(p.sc.rec)) > 0 &&
			p.st.criSize+int64(len(p.sc.rec)+len(p.sc.one)) > p.cfg.maxSize {
			if err := p.writeCommit(i, pos-committed); err != nil {
				return 0, err
			}
			committed = pos
			if err := p.rotate(); err != nil {
				return 0, err
			}
		}
		p.sc.rec = append(p.sc.rec, p.sc.one...)
		if p.cfg.journal != nil {
			p.sc.entries = append(p.sc.entries, p.jf.entry(i, partial, text))
		}
		pos += used
	}
	if pos == committed {
		return 0, nil
	}
	if err := p.writeCommit(i, pos-committed); err != nil {
		return 0, err
	}
	return pos, nil
}

// writeCommit sends p.sc.entries to the journal, appends p.sc.rec to the
// CRI file at the committed size, then commits stream i's offset moved on
// by consumed raw bytes. The journal has no commit of its own: a tug
// killed (or a send that fails) before the commit sends the step's
// entries again, so a line reaches the journal at least once.
func (p *pump) writeCommit(i, consumed int) error {
	for k, e := range p.sc.entries {
		if err := p.cfg.journal.Send(e); err != nil {
			n := len(p.sc.entries)
			clear(p.sc.entries)
			p.sc.entries, p.sc.rec = p.sc.entries[:0], p.sc.rec[:0]
			return fmt.Errorf("send to the journal (%d of %d entries sent): %w", k, n, err)
		}
	}
	clear(p.sc.entries) // no reference to buf kept
	p.sc.entries = p.sc.entries[:0]
	if len(p.sc.rec) > 0 {
		if _, err := p.w.WriteAt(p.sc.rec, p.st.criSize); err != nil {
			return fmt.Errorf("write %s: %w", p.cri, err)
		}
		p.st.criSize += int64(len(p.sc.rec))
		p.sc.rec = p.sc.rec[:0]
		p.crash("written")
	}
	p.st.off[i] += int64(consumed)
	if err := p.commit(); err != nil {
		return err
	}
	p.punch(i)
	return nil
}

// backlogMax is how many unconverted raw bytes of a stream the pump lets
// stay on disk.
func (p *pump) backlogMax() int64 { return max(rawBacklogMax, p.cfg.maxSize) }

// bound drops the unconverted bytes of stream i once they pass backlogMax:
// it moves the committed offset to the first line that starts in the
// newest backlogMax/2 bytes (to their start if no line starts in the first
// 128 KiB of them), writes a record saying how many bytes were dropped,
// commits both, and punches the dropped bytes out.
func (p *pump) bound(i int) error {
	f := p.raw[i]
	fi, err := f.Stat()
	if err != nil {
		return fmt.Errorf("stat raw %s: %w", streamNames[i], err)
	}
	size := fi.Size()
	if p.cfg.rawLimit > 0 && size >= p.cfg.rawLimit {
		p.full = true
	}
	if p.noPunch && !p.tooBig {
		if st, ok := fi.Sys().(*syscall.Stat_t); ok && st.Blocks*512 > rawNoPunchMax {
			p.tooBig = true
		}
	}
	if size-p.st.off[i] <= p.backlogMax() {
		return nil
	}
	to := size - p.backlogMax()/2
	n, err := f.ReadAt(p.sc.buf, to-1)
	if err != nil && !errors.Is(err, io.EOF) {
		return fmt.Errorf("read raw %s: %w", streamNames[i], err)
	}
	if j := bytes.IndexByte(p.sc.buf[:n], '\n'); j >= 0 {
		to += int64(j) // the byte after the newline
	}
	drop := to - p.st.off[i]
	text := fmt.Appendf(nil, droppedFmt, drop)
	p.sc.entries = p.sc.entries[:0]
	if p.cfg.journal != nil {
		p.sc.entries = append(p.sc.entries, p.jf.entry(i, false, text))
	}
	p.sc.rec = p.sc.rec[:0]
	if !p.cfg.noFile {
		p.sc.one = appendRecord(p.sc.one[:0], time.Now(), streamNames[i], false, text)
		if p.cfg.maxSize > 0 && p.st.criSize > 0 && p.st.criSize+int64(len(p.sc.one)) > p.cfg.maxSize {
			if err := p.rotate(); err != nil {
				return err
			}
		}
		p.sc.rec = append(p.sc.rec, p.sc.one...)
	}
	if err := p.writeCommit(i, int(drop)); err != nil {
		return err
	}
	p.dropped += drop
	p.punchTo(i, p.st.off[i]&^4095)
	return nil
}

// punch gives back the disk space of converted raw bytes, by punchEvery
// at least.
func (p *pump) punch(i int) {
	if to := p.st.off[i] &^ 4095; to-p.punched[i] >= punchEvery {
		p.punchTo(i, to)
	}
}

// punchTo punches stream i's raw file from what is punched up to to. A file
// system that does not support punching (EOPNOTSUPP) sets noPunch; any
// other error is tried again at the next punch.
func (p *pump) punchTo(i int, to int64) {
	if p.noPunch || p.raw[i] == nil || to <= p.punched[i] {
		return
	}
	err := unix.Fallocate(int(p.raw[i].Fd()), unix.FALLOC_FL_PUNCH_HOLE|unix.FALLOC_FL_KEEP_SIZE, p.punched[i], to-p.punched[i])
	if errors.Is(err, unix.EOPNOTSUPP) {
		p.noPunch = true
		return
	}
	if err == nil {
		p.punched[i] = to
		p.collapse(i)
	}
}

// rotate starts a new CRI file as logWriter.rotate does, recoverably: the
// state says "rotating" while files are being renamed, and a new file is
// only created after the rotation is committed.
func (p *pump) rotate() error {
	if p.cfg.maxFiles == 0 {
		p.st.criSize = 0
		if err := p.commit(); err != nil {
			return err
		}
		return p.w.Truncate(0)
	}
	p.st.rotating = true
	if err := p.commit(); err != nil {
		return err
	}
	p.crash("rotating")
	p.w.Close()
	p.w = nil
	if err := p.completeRotation(); err != nil {
		return err
	}
	f, err := os.OpenFile(p.cri, os.O_WRONLY|os.O_CREATE, 0o640)
	if err != nil {
		return fmt.Errorf("rotate %s: %w", p.cri, err)
	}
	p.w = f
	return nil
}

// completeRotation shifts the files of a rotation that is committed as
// under way, from wherever it stopped: the renames go from the oldest file
// down, so the first missing name tells how far they got; once the current
// file is gone, they are done. Then it commits an empty current file.
func (p *pump) completeRotation() error {
	name := func(n int) string {
		if n == 0 {
			return p.cri
		}
		return p.cri + "." + strconv.Itoa(n)
	}
	exists := func(n int) bool {
		_, err := os.Lstat(name(n))
		return err == nil
	}
	if exists(0) {
		gap := 1
		for gap <= p.cfg.maxFiles && exists(gap) {
			gap++
		}
		if gap > p.cfg.maxFiles {
			// Nothing shifted yet: drop the oldest.
			gap = p.cfg.maxFiles
			if err := os.Remove(name(gap)); err != nil && !errors.Is(err, os.ErrNotExist) {
				return fmt.Errorf("rotate %s: %w", p.cri, err)
			}
		}
		for n := gap - 1; n >= 0; n-- {
			if err := os.Rename(name(n), name(n+1)); err != nil && !errors.Is(err, os.ErrNotExist) {
				return fmt.Errorf("rotate %s: %w", p.cri, err)
			}
			p.crash("renamed")
		}
	}
	p.st.rotating, p.st.criSize = false, 0
	if err := p.commit(); err != nil {
		return err
	}
	p.crash("rotated")
	return nil
}

// appendRecord appends one CRI record.
func appendRecord(b []byte, t time.Time, stream string, partial bool, text []byte) []byte {
	tag := "F"
	if partial {
		tag = "P"
	}
	b = t.AppendFormat(b, time.RFC3339Nano)
	b = append(b, ' ')
	b = append(b, stream...)
	b = append(b, ' ')
	b = append(b, tag...)
	b = append(b, ' ')
	b = append(b, text...)
	return append(b, '\n')
}

// done converts the rest (the task is deleted: the shim wrote everything)
// and then removes the raw files and the state. It reports whether it got
// that far; if not, it is called again.
func (p *pump) done() (bool, error) {
	p.finish = true
	if more, err := p.step(); err != nil || more {
		return false, err
	}
	out, errp, state := rawPaths(p.base)
	p.close()
	for _, path := range []string{out, errp, state} {
		if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
			return true, err
		}
	}
	return true, nil
}

func (p *pump) close() {
	for _, f := range append(p.raw[:], p.state, p.w) {
		if f != nil {
			f.Close()
		}
	}
}

// Pumps runs the pumps of every container attempt that uses the file
// driver, in one goroutine (Run).
type Pumps struct {
	rootDir string
	cfg     logConfig // maxSize and maxFiles
	log     *slog.Logger
	// taskGone reports whether container id has no task any more (the
	// shim has written its last byte).
	taskGone func(ctx context.Context, id string) (bool, error)
	// stopTask kills container id's task, whose raw output cannot be
	// bounded any more (nil: not stopped).
	stopTask func(ctx context.Context, id string) error
	// notify records a Warning event about container id (nil: none).
	notify func(ctx context.Context, id, reason, message string)
	// identify names the container of an attempt (Tasks.Identify).
	identify func(uid, container string, attempt int) (id, cri string, ok bool)

	notices      chan notice  // to the notifier
	droppedBytes atomic.Int64 // raw bytes dropped, all pumps
	noPunchFiles atomic.Int64 // pumps that found their file system cannot punch

	mu    sync.Mutex
	sc    *scratch         // every pump's, used under mu
	pumps map[string]*pump // by container ID
	ended map[string]bool  // container IDs whose task is deleted
	wake  chan struct{}
}

// PumpsConfig is what the file driver's converter needs.
type PumpsConfig struct {
	// RootDir is tug's root directory: the raw files of pod uid are under
	// <RootDir>/pods/<uid>/logs/.
	RootDir string
	// MaxSize is the size of a CRI log file beyond which it is rotated (0:
	// never); MaxFiles is how many files an attempt keeps, the current one
	// included.
	MaxSize  int64
	MaxFiles int
	Log      *slog.Logger
	// Journal, if not nil, receives every converted line as a journal
	// entry (journal.go); NoFile then leaves the CRI files unwritten (the
	// "journald" driver alone).
	Journal JournalSender
	NoFile  bool
}

// NewPumps returns the converter of the file driver. It finds out whether
// the file system of the raw files can collapse ranges: if it can, the
// raw files are collapsed and LimitsShims is true (rawlimit.go); if not,
// it says so (Warn).
func NewPumps(cfg PumpsConfig) *Pumps {
	lc := logConfig{maxSize: cfg.MaxSize, maxFiles: max(cfg.MaxFiles-1, 0), journal: cfg.Journal,
		noFile: cfg.NoFile && cfg.Journal != nil}
	if lc.noFile {
		lc.maxSize = 0 // no CRI file to rotate
	}
	dir := filepath.Join(cfg.RootDir, "pods")
	switch ok, err := canCollapse(dir); {
	case err != nil:
		cfg.Log.Warn("cannot probe the file system of the raw container logs: what a container writes while tug is down is not bounded", "dir", dir, "err", err)
	case !ok:
		cfg.Log.Warn("the file system of the raw container logs cannot remove a range from a file: what a container writes while tug is down is not bounded", "dir", dir)
	default:
		lc.rawLimit = rawFileMax
	}
	return newLogPumps(cfg.RootDir, lc, cfg.Log)
}

// Tasks is what the converter asks of the runtime about the containers
// whose output it converts (podruntime.Runtime.LogTasks). A nil function
// is a question not asked.
type Tasks struct {
	// TaskGone reports whether container id has no task any more (the
	// shim has written its last byte).
	TaskGone func(ctx context.Context, id string) (bool, error)
	// StopTask kills container id's task, whose raw output cannot be
	// bounded any more.
	StopTask func(ctx context.Context, id string) error
	// Notify records a Warning event about container id.
	Notify func(ctx context.Context, id, reason, message string)
	// Identify returns the container ID and CRI log path of attempt
	// attempt of container container of pod uid, if tug has that
	// container: a state file a power cut damaged is rebuilt from them.
	// Nil: such an attempt's output is not converted.
	Identify func(uid, container string, attempt int) (id, cri string, ok bool)
}

// LimitsShims reports whether the shims that write raw files are to be
// limited with LimitShim.
func (l *Pumps) LimitsShims() bool { return l.cfg.rawLimit > 0 }

// RawBase is the base of the raw files of a container attempt:
// <root-dir>/pods/<uid>/logs/<container>/<attempt>.
func (l *Pumps) RawBase(uid, container string, attempt int) string {
	return rawBase(l.rootDir, uid, container, attempt)
}

func rawBase(rootDir, uid, container string, attempt int) string {
	return filepath.Join(rootDir, "pods", uid, "logs", container, strconv.Itoa(attempt))
}

// Files returns the files that hold the output of one attempt of a
// container of pod p on disk: its CRI log files, rotated ones included,
// and the file driver's raw files (missing ones too).
func Files(logsDir, rootDir string, p *pod.Pod, container string, attempt int) []string {
	files, _ := filepath.Glob(ContainerPath(logsDir, p, container, attempt) + "*")
	out, errp, _ := rawPaths(rawBase(rootDir, p.Metadata.UID, container, attempt))
	return append(files, out, errp)
}

// DroppedBytes returns the raw output bytes dropped since tug started, to
// keep containers' output within its backlog bound. Safe for concurrent
// use.
func (l *Pumps) DroppedBytes() int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := l.droppedBytes.Load()
	for _, p := range l.pumps {
		n += p.dropped
	}
	return n
}

// NoPunchFiles returns how many container attempts' raw logs were found,
// since tug started, on a file system that cannot punch holes. Safe for
// concurrent use.
func (l *Pumps) NoPunchFiles() int64 { return l.noPunchFiles.Load() }

func newLogPumps(rootDir string, cfg logConfig, log *slog.Logger) *Pumps {
	return &Pumps{rootDir: rootDir, cfg: cfg, log: log,
		sc: newScratch(), pumps: map[string]*pump{}, ended: map[string]bool{}, wake: make(chan struct{}, 1),
		notices: make(chan notice, 64)}
}

// Create sets up the raw files of a new attempt of container id, whose CRI
// log is cri, at base (RawBase), and returns the paths the shim writes the
// container's stdout and stderr to.
//
// The files are made outside l.mu (their state file is fsync'd), so that
// containers started at once do not queue for each other's writes; calls
// for one id do not overlap (one pod worker starts a container).
func (l *Pumps) Create(id, cri, base string) (stdout, stderr string, err error) {
	l.mu.Lock()
	if old := l.pumps[id]; old != nil {
		// A leftover of a failed start of the same attempt.
		for {
			finished, err := old.done()
			if err != nil {
				l.log.Warn("finish container log", "container", id, "err", err)
			}
			if finished || err != nil {
				break
			}
		}
		old.close()
		delete(l.pumps, id)
	}
	delete(l.ended, id)
	l.mu.Unlock()
	p, err := createPump(id, cri, base, l.cfg, l.sc)
	if err != nil {
		return "", "", fmt.Errorf("create log files: %w", err)
	}
	// Its task is about to be created: no task check for a while.
	p.lastData = time.Now()
	l.mu.Lock()
	l.pumps[id] = p
	l.mu.Unlock()
	l.poke() // the next step watches its files: output wakes it from the first line
	stdout, stderr, _ = rawPaths(base)
	return stdout, stderr, nil
}

// TaskDeleted records that container id's task is deleted (the shim has
// written its last byte): its pump converts the rest and ends.
func (l *Pumps) TaskDeleted(id string) {
	l.mu.Lock()
	l.ended[id] = true
	l.mu.Unlock()
	l.poke()
}

func (l *Pumps) poke() {
	select {
	case l.wake <- struct{}{}:
	default:
	}
}

// adopt opens the pumps of every attempt that has a state file or raw
// files (left by an earlier tug): each recovers to its last commit. One
// whose state file is missing or damaged (a power cut) is rebuilt
// (rebuildState) when Identify knows its container; otherwise it is
// left alone. Either way a Warn names the file.
func (l *Pumps) adopt() {
	states, _ := filepath.Glob(filepath.Join(l.rootDir, "pods", "*", "logs", "*", "*.state"))
	raws, _ := filepath.Glob(filepath.Join(l.rootDir, "pods", "*", "logs", "*", "*.stdout"))
	for _, r := range raws {
		if s := strings.TrimSuffix(r, ".stdout") + ".state"; !slices.Contains(states, s) {
			states = append(states, s)
		}
	}
	for _, s := range states {
		p, err := openPump(s, l.cfg, l.sc)
		if err != nil {
			if p, err = l.rebuildState(s, err); err != nil {
				l.log.Warn("adopt container log", "file", s, "err", err)
				continue
			}
		}
		l.mu.Lock()
		if l.pumps[p.id] == nil {
			l.pumps[p.id] = p // lastData zero: its task is checked at once
		} else {
			p.close()
		}
		l.mu.Unlock()
	}
}

// rebuildState writes a new state file at statePath, whose own could not
// be read (cause), for the attempt Identify names, and opens its pump. The
// conversion goes on from the first raw byte not given back (punched):
// nothing the container wrote is lost, and up to punchEvery bytes of
// output already converted may reach the CRI log a second time.
func (l *Pumps) rebuildState(statePath string, cause error) (*pump, error) {
	if l.identify == nil {
		return nil, cause
	}
	rel, err := filepath.Rel(filepath.Join(l.rootDir, "pods"), strings.TrimSuffix(statePath, ".state"))
	parts := strings.Split(rel, string(filepath.Separator))
	if err != nil || len(parts) != 4 || parts[1] != "logs" {
		return nil, cause
	}
	attempt, err := strconv.Atoi(parts[3])
	if err != nil {
		return nil, cause
	}
	id, cri, ok := l.identify(parts[0], parts[2], attempt)
	if !ok {
		return nil, fmt.Errorf("%w; no container of this attempt", cause)
	}
	var st pumpState
	out, errp, _ := rawPaths(strings.TrimSuffix(statePath, ".state"))
	for i, path := range []string{out, errp} {
		st.off[i] = firstData(path)
	}
	if fi, err := os.Stat(cri); err == nil {
		st.criSize = fi.Size()
	}
	if err := writeState(statePath, st, cri, id); err != nil {
		return nil, fmt.Errorf("%w; rebuild: %w", cause, err)
	}
	l.log.Warn("container log state damaged: rebuilt; output converted before may repeat in the log", "file", statePath, "container", id, "err", cause)
	return openPump(statePath, l.cfg, l.sc)
}

// firstData returns the offset of the first byte of path that is not a
// hole (what the pump punched is converted); 0 when it cannot tell.
func firstData(path string) int64 {
	f, err := os.Open(path)
	if err != nil {
		return 0
	}
	defer f.Close()
	off, err := f.Seek(0, unix.SEEK_DATA)
	if err != nil {
		// ENXIO: no data at all, all of it given back.
		if fi, serr := f.Stat(); serr == nil && errors.Is(err, syscall.ENXIO) {
			return fi.Size()
		}
		return 0
	}
	return off
}

// Run adopts the logs of running containers, then converts their output
// as it comes (inotify on the raw files, a tick as a fallback) until ctx
// ends, asking tasks about the containers.
func (l *Pumps) Run(ctx context.Context, tasks Tasks) error {
	l.taskGone, l.stopTask, l.notify, l.identify = tasks.TaskGone, tasks.StopTask, tasks.Notify, tasks.Identify
	l.adopt()
	var wg sync.WaitGroup
	defer wg.Wait() // after the watch is closed: its reader ends then
	wg.Go(func() { l.notifier(ctx) })
	watch := newRawWatch(l.log)
	defer watch.close()
	wg.Go(func() { watch.run(l.poke) })
	period := pumpTick
	if watch.f != nil {
		period = pumpTickWatched
	}
	tick := time.NewTicker(period)
	defer tick.Stop()
	for {
		l.stepAll(ctx, watch)
		select {
		case <-ctx.Done():
			l.mu.Lock()
			for _, p := range l.pumps {
				p.close()
			}
			l.pumps = map[string]*pump{}
			l.mu.Unlock()
			return nil
		case <-l.wake:
		case <-tick.C:
		}
	}
}

func (l *Pumps) stepAll(ctx context.Context, watch *rawWatch) {
	l.mu.Lock()
	defer l.mu.Unlock()
	ids := make([]string, 0, len(l.pumps))
	for id := range l.pumps {
		ids = append(ids, id)
	}
	again := false
	for _, id := range ids {
		p := l.pumps[id]
		if p == nil {
			continue
		}
		watch.add(p)
		if !l.ended[id] && l.taskGone != nil && time.Since(p.lastData) >= pumpTaskCheck {
			p.lastData = time.Now()
			l.mu.Unlock() // create and taskDeleted need not wait for containerd
			gone, err := l.taskGone(ctx, id)
			l.mu.Lock()
			if err == nil && gone {
				l.ended[id] = true
			}
		}
		if l.pumps[id] != p {
			continue
		}
		var more bool
		var err error
		if l.ended[id] {
			var finished bool
			if finished, err = p.done(); finished {
				delete(l.pumps, id)
				delete(l.ended, id)
				watch.remove(p)
			} else {
				more = err == nil
			}
		} else {
			more, err = p.step()
		}
		again = again || more
		l.report(id, p)
		if err == nil {
			p.lastErr = ""
			continue
		}
		if _, serr := os.Stat(p.base + ".state"); errors.Is(serr, os.ErrNotExist) {
			// The pod's files were removed with it.
			p.close()
			delete(l.pumps, id)
			delete(l.ended, id)
			watch.remove(p)
			continue
		}
		if msg := err.Error(); msg != p.lastErr {
			p.lastErr = msg // said once, tried again at every wake
			l.log.Warn("convert container log", "container", id, "file", p.cri, "err", err)
		}
	}
	if again {
		l.poke()
	}
}

// dropLogEvery is how often a pump that keeps dropping output says so.
const dropLogEvery = 10 * time.Second

// report says what the last step of p did to bound the disk: output
// dropped (Warn, at most every dropLogEvery), a file system that cannot
// punch (Error, once), a raw file that outgrew rawNoPunchMax (Error, and
// the container's task is killed). Called under l.mu.
func (l *Pumps) report(id string, p *pump) {
	var notices []notice
	if p.dropped > 0 && time.Since(p.droppedAt) >= dropLogEvery {
		l.log.Warn("dropped container output: it outgrew its raw log backlog", "container", id, "file", p.cri,
			"bytes", p.dropped, "backlog", p.backlogMax())
		l.droppedBytes.Add(p.dropped)
		p.dropped, p.droppedAt = 0, time.Now()
		notices = append(notices, notice{id, "OutputDropped", fmt.Sprintf(
			"output dropped: the container wrote more than %d bytes that its log had not converted yet", p.backlogMax()), false})
	}
	if p.noPunch && !p.saidNoPunch {
		p.saidNoPunch = true
		l.noPunchFiles.Add(1)
		l.log.Error("the file system of the raw container logs cannot punch holes: converted output stays on disk until the container stops",
			"container", id, "file", p.base, "limit", rawNoPunchMax)
		notices = append(notices, notice{id, "LogPunchUnsupported", fmt.Sprintf(
			"the file system of tug's raw container logs cannot punch holes: the container is stopped once its raw output holds %d bytes", rawNoPunchMax), false})
	}
	if p.collapseErr != nil && !p.saidCollapse {
		p.saidCollapse = true
		l.log.Error("cannot remove converted output from a raw container log: the container is stopped once the file reaches its limit",
			"container", id, "file", p.base, "limit", p.cfg.rawLimit, "err", p.collapseErr)
	}
	if p.full && !p.stopped {
		p.stopped = true
		l.log.Error("stopping container: its raw output reached the limit at which the shim stops writing it (tug was not converting it)",
			"container", id, "file", p.base, "limit", p.cfg.rawLimit)
		notices = append(notices, notice{id, "OutputLimit", fmt.Sprintf(
			"container stopped: its raw output reached %d bytes while tug was not converting it, and its output was no longer read", p.cfg.rawLimit), true})
	}
	if p.tooBig && !p.stopped {
		p.stopped = true
		l.log.Error("stopping container: its raw output outgrew the limit on a file system that cannot punch holes",
			"container", id, "file", p.base, "limit", rawNoPunchMax)
		notices = append(notices, notice{id, "OutputLimit", fmt.Sprintf(
			"container stopped: its raw output holds more than %d bytes on a file system that cannot punch holes", rawNoPunchMax), true})
	}
	// containerd is asked by Run's notifier, never by the pumps' loop: a
	// pump waiting for containerd would let its raw file grow meanwhile.
	for _, n := range notices {
		select {
		case l.notices <- n:
		default:
			if n.stop {
				p.stopped = false // tried again at the next step
			}
		}
	}
}

// notice is an event to record about a container, and whether to stop it.
type notice struct {
	id, reason, message string
	stop                bool
}

// notifier records the pumps' notices as events and stops the containers
// they name, until ctx ends.
func (l *Pumps) notifier(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case n := <-l.notices:
			if l.notify != nil {
				l.notify(ctx, n.id, n.reason, n.message)
			}
			if n.stop && l.stopTask != nil {
				if err := l.stopTask(ctx, n.id); err != nil {
					l.log.Warn("stop container", "container", n.id, "err", err)
				}
			}
		}
	}
}

// rawWatch wakes the pumps when the shim writes a raw file.
type rawWatch struct {
	f       *os.File // the inotify fd; nil: polling only
	mu      sync.Mutex
	watched map[*pump]bool
	log     *slog.Logger
}

func newRawWatch(log *slog.Logger) *rawWatch {
	w := &rawWatch{watched: map[*pump]bool{}, log: log}
	fd, err := unix.InotifyInit1(unix.IN_NONBLOCK | unix.IN_CLOEXEC)
	if err != nil {
		log.Warn("inotify unavailable, container logs are polled", "err", err)
		return w
	}
	w.f = os.NewFile(uintptr(fd), "inotify")
	return w
}

func (w *rawWatch) add(p *pump) {
	if w.f == nil {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.watched[p] {
		return
	}
	out, errp, _ := rawPaths(p.base)
	for _, path := range []string{out, errp} {
		// A watch ends by itself when the file is removed. One that cannot
		// be added now is tried again at the next step.
		if _, err := unix.InotifyAddWatch(int(w.f.Fd()), path, unix.IN_MODIFY); err != nil {
			return
		}
	}
	w.watched[p] = true
}

// remove forgets p (its watches ended with its files, or end with the
// pod's).
func (w *rawWatch) remove(p *pump) {
	w.mu.Lock()
	delete(w.watched, p)
	w.mu.Unlock()
}

func (w *rawWatch) run(wake func()) {
	if w.f == nil {
		return
	}
	buf := make([]byte, 64<<10)
	for {
		if _, err := w.f.Read(buf); err != nil {
			return
		}
		wake()
	}
}

func (w *rawWatch) close() {
	if w.f != nil {
		w.f.Close()
	}
}
