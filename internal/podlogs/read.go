package podlogs

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Reading a container's log: the files of an attempt, oldest first, and
// following the current one through rotations.

// Sink receives the records Stream reads.
type Sink interface {
	// Record takes one record line, without its newline.
	Record(line []byte) error
	// EndOfFiles says that every record the files held when the stream
	// began has been given; what follows is followed output.
	EndOfFiles() error
	// Flush says that a read is over: what was given may be sent on.
	Flush()
}

// FollowPoll is how often a follow looks for new output, a rotation and
// whether the container still runs.
const FollowPoll = 100 * time.Millisecond

// Attempts returns the attempts that have log files in dir, highest
// first.
func Attempts(dir string) ([]int, error) {
	entries, err := os.ReadDir(dir)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, err
	}
	var as []int
	for _, e := range entries {
		if a, ok := logAttempt(e.Name()); ok && !slices.Contains(as, a) {
			as = append(as, a)
		}
	}
	slices.Sort(as)
	slices.Reverse(as)
	return as, nil
}

// attemptFiles returns the existing files of one attempt, oldest first:
// <attempt>.log.N ... <attempt>.log.1, <attempt>.log.
func attemptFiles(dir string, attempt int) []string {
	base := filepath.Join(dir, strconv.Itoa(attempt)+".log")
	matches, _ := filepath.Glob(base + ".*")
	type rotated struct {
		n    int
		path string
	}
	var rs []rotated
	for _, m := range matches {
		if n, err := strconv.Atoi(strings.TrimPrefix(m, base+".")); err == nil {
			rs = append(rs, rotated{n, m})
		}
	}
	slices.SortFunc(rs, func(a, b rotated) int { return b.n - a.n })
	var files []string
	for _, r := range rs {
		files = append(files, r.path)
	}
	return append(files, base)
}

// Stream gives the records of the files of attempt in dir to lw,
// oldest first. With follow, it then keeps reading the current file,
// re-opening it when it has been rotated (renamed away and created again)
// or truncated, until running reports false (after a last read) or ctx
// ends.
func Stream(ctx context.Context, dir string, attempt int, lw Sink, follow bool, running func() bool) error {
	files := attemptFiles(dir, attempt)
	for _, path := range files[:len(files)-1] {
		if err := copyFile(path, lw); err != nil {
			return err
		}
	}
	current := files[len(files)-1]
	f, err := os.Open(current)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return lw.EndOfFiles()
		}
		return err
	}
	defer func() { f.Close() }()
	rd := &recordReader{r: f}
	if err := rd.drain(lw); err != nil {
		return err
	}
	if err := lw.EndOfFiles(); err != nil {
		return err
	}
	lw.Flush()
	if !follow {
		return nil
	}
	tick := time.NewTicker(FollowPoll)
	defer tick.Stop()
	lastCheck := time.Now()
	var stopped time.Time
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
		}
		// A container seen stopped is read for one more second: what it
		// wrote last may reach its log file a moment after its exit (the
		// file driver converts the rest once the task is deleted).
		stop := false
		if time.Since(lastCheck) >= time.Second {
			if stopped.IsZero() && !running() {
				stopped = time.Now()
			}
			lastCheck = time.Now()
			stop = !stopped.IsZero() && time.Since(stopped) >= time.Second
		}
		if err := rd.drain(lw); err != nil {
			return err
		}
		// Rotated: the path names another file now. What the old file
		// got before the rename has just been read; go on with the new
		// one from its start. Truncated (max-files 0): read it again from
		// its start.
		if nf, reopened := reopenIfRotated(f, current, rd.off); reopened {
			f.Close()
			f = nf
			rd = &recordReader{r: f}
			if err := rd.drain(lw); err != nil {
				return err
			}
		}
		lw.Flush()
		if stop {
			return nil
		}
	}
}

// reopenIfRotated returns the file at path, opened, when it is no longer
// f, or when it is shorter than off (truncated).
func reopenIfRotated(f *os.File, path string, off int64) (*os.File, bool) {
	cur, err := f.Stat()
	if err != nil {
		return nil, false
	}
	nf, err := os.Open(path)
	if err != nil {
		return nil, false
	}
	fi, err := nf.Stat()
	if err == nil {
		a, aok := cur.Sys().(*syscall.Stat_t)
		b, bok := fi.Sys().(*syscall.Stat_t)
		if aok && bok && (a.Ino != b.Ino || a.Dev != b.Dev || fi.Size() < off) {
			return nf, true
		}
	}
	nf.Close()
	return nil, false
}

func copyFile(path string, lw Sink) error {
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil // rotated away meanwhile
	} else if err != nil {
		return err
	}
	defer f.Close()
	rd := &recordReader{r: f}
	return rd.drain(lw)
}

// recordReader reads whole record lines from a file that is still being
// written: a line without its newline yet is kept until the rest comes.
type recordReader struct {
	r       io.Reader
	off     int64 // bytes read from r
	pending []byte
	buf     [32 << 10]byte
}

// drain hands every whole line read until the end of the file to lw.
func (rd *recordReader) drain(lw Sink) error {
	for {
		n, err := rd.r.Read(rd.buf[:])
		rd.off += int64(n)
		data := rd.buf[:n]
		for len(data) > 0 {
			i := bytes.IndexByte(data, '\n')
			if i < 0 {
				rd.pending = append(rd.pending, data...)
				break
			}
			line := data[:i]
			if len(rd.pending) > 0 {
				line = append(rd.pending, line...)
				rd.pending = rd.pending[:0]
			}
			if werr := lw.Record(line); werr != nil {
				return werr
			}
			data = data[i+1:]
		}
		if errors.Is(err, io.EOF) || (err == nil && n == 0) {
			return nil
		}
		if err != nil {
			return err
		}
	}
}
