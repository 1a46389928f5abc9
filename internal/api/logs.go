package api

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"tug/internal/pod"
)

// GET /pods/{namespace}/{name}/log streams a container's output as
// "kubectl logs" prints it: the text of each CRI record of the container's
// log files, a partial ("P") record joined to the next one, optionally
// prefixed with the record's time. The files are
// <LogsDir>/<namespace>_<pod>_<uid>/<container>/<attempt>.log and its rotated
// <attempt>.log.N, written by podruntime; the current attempt is the
// highest number there, the previous one the next highest. Unlike the
// kubelet, which reads only the newest file, the rotated files of the
// attempt are read too, oldest first.

// followPoll is how often a follow looks for new output, a rotation and
// whether the container still runs.
const followPoll = 100 * time.Millisecond

// logOptions are the query parameters of the log endpoint.
type logOptions struct {
	container  string
	follow     bool
	previous   bool
	tailLines  int   // -1: all
	since      int64 // sinceSeconds, 0: all
	timestamps bool
}

func parseLogOptions(r *http.Request) (logOptions, error) {
	q := r.URL.Query()
	o := logOptions{container: q.Get("container"), tailLines: -1}
	var err error
	for _, b := range []struct {
		key string
		dst *bool
	}{{"follow", &o.follow}, {"previous", &o.previous}, {"timestamps", &o.timestamps}} {
		if s := q.Get(b.key); s != "" {
			if *b.dst, err = strconv.ParseBool(s); err != nil {
				return o, fmt.Errorf("%s=%q is not a boolean: %w", b.key, s, ErrBadRequest)
			}
		}
	}
	if s := q.Get("tailLines"); s != "" {
		if o.tailLines, err = strconv.Atoi(s); err != nil || o.tailLines < 0 {
			return o, fmt.Errorf("tailLines=%q is not a number of lines: %w", s, ErrBadRequest)
		}
	}
	if s := q.Get("sinceSeconds"); s != "" {
		if o.since, err = strconv.ParseInt(s, 10, 64); err != nil || o.since < 1 {
			return o, fmt.Errorf("sinceSeconds=%q is not a positive number of seconds: %w", s, ErrBadRequest)
		}
	}
	return o, nil
}

// logContainer returns the container named name of v, or v's only
// container when name is empty, and whether it runs now.
func logContainer(v pod.View, name string) (string, error) {
	var names, inits []string
	for _, c := range v.Spec.Containers {
		names = append(names, c.Name)
	}
	for _, c := range v.Spec.InitContainers {
		inits = append(inits, c.Name)
	}
	if name == "" {
		if len(names) == 1 && len(inits) == 0 {
			return names[0], nil
		}
		msg := fmt.Sprintf("a container name must be specified for pod %s, choose one of: [%s]", v.Metadata.Name, strings.Join(names, " "))
		if len(inits) > 0 {
			msg += fmt.Sprintf(" or one of the init containers: [%s]", strings.Join(inits, " "))
		}
		return "", fmt.Errorf("%s: %w", msg, ErrBadRequest)
	}
	if !slices.Contains(names, name) && !slices.Contains(inits, name) {
		return "", fmt.Errorf("container %s is not valid for pod %s: %w", name, v.Metadata.Name, ErrBadRequest)
	}
	return name, nil
}

// containerRunning reports whether container name of v runs.
func containerRunning(v pod.View, name string) bool {
	for _, cs := range slices.Concat(v.Status.InitContainerStatuses, v.Status.ContainerStatuses) {
		if cs.Name == name {
			return cs.State.Running != nil
		}
	}
	return false
}

// logAttempts returns the attempts that have log files in dir, highest
// first.
func logAttempts(dir string) ([]int, error) {
	entries, err := os.ReadDir(dir)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, err
	}
	var as []int
	for _, e := range entries {
		num, rest, ok := strings.Cut(e.Name(), ".log")
		if !ok || (rest != "" && (rest[0] != '.' || !digits(rest[1:]))) || !digits(num) {
			continue
		}
		if a, err := strconv.Atoi(num); err == nil && !slices.Contains(as, a) {
			as = append(as, a)
		}
	}
	slices.Sort(as)
	slices.Reverse(as)
	return as, nil
}

func digits(s string) bool {
	return s != "" && strings.Trim(s, "0123456789") == ""
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

// getLog serves GET /pods/{namespace}/{name}/log.
func (s *Server) getLog(w http.ResponseWriter, r *http.Request) {
	opts, err := parseLogOptions(r)
	if err != nil {
		s.writeError(w, err)
		return
	}
	ns, name := r.PathValue("namespace"), r.PathValue("name")
	v, err := findPod(s.pods(), ns, name)
	if err != nil {
		s.writeError(w, err)
		return
	}
	if opts.container, err = logContainer(v, opts.container); err != nil {
		s.writeError(w, err)
		return
	}
	dir := filepath.Join(s.LogsDir, v.Metadata.Namespace+"_"+v.Metadata.Name+"_"+v.Metadata.UID, opts.container)
	attempts, err := logAttempts(dir)
	if err != nil {
		s.writeError(w, fmt.Errorf("read logs of %s/%s: %w", v.Metadata.Name, opts.container, err))
		return
	}
	idx := 0
	if opts.previous {
		idx = 1
	}
	if len(attempts) <= idx {
		what := fmt.Sprintf("container %q in pod %q is waiting to start", opts.container, v.Metadata.Name)
		if opts.previous {
			what = fmt.Sprintf("previous terminated container %q in pod %q not found", opts.container, v.Metadata.Name)
		}
		s.writeError(w, fmt.Errorf("%s: %w", what, ErrBadRequest))
		return
	}
	attempt := attempts[idx]
	// Following stops when the container no longer runs, or when a newer
	// attempt has started; --previous never follows.
	follow := opts.follow && !opts.previous
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusOK)
	lw := &logWriter{w: w, opts: opts}
	if opts.since > 0 {
		lw.since = time.Now().Add(-time.Duration(opts.since) * time.Second)
	}
	if f, ok := w.(http.Flusher); ok {
		lw.flush = f.Flush
	}
	running := func() bool {
		if as, _ := logAttempts(dir); len(as) > 0 && as[0] != attempt {
			return false
		}
		p, err := findPod(s.pods(), ns, name)
		return err == nil && p.Metadata.UID == v.Metadata.UID && containerRunning(p, opts.container)
	}
	if err := streamLog(r.Context(), dir, attempt, lw, follow, running); err != nil && r.Context().Err() == nil {
		s.logger().Debug("stream log", "pod", ns+"/"+name, "container", opts.container, "err", err)
	}
}

// logWriter turns CRI records into kubectl's output.
type logWriter struct {
	w     io.Writer
	opts  logOptions
	since time.Time // zero: all
	flush func()    // nil: none

	// tail holds the last tailLines lines (each possibly several
	// records, rendered) until the end of the existing output.
	tail    [][]byte
	cur     []byte // the line being assembled in tail mode
	tailing bool
}

// record renders one CRI record line (without its newline) and writes it,
// or keeps it for the tail.
func (lw *logWriter) record(line []byte) error {
	ts, rest, ok := bytes.Cut(line, []byte{' '})
	if !ok {
		return nil
	}
	_, rest, ok = bytes.Cut(rest, []byte{' '}) // stream
	if !ok {
		return nil
	}
	tag, text, _ := bytes.Cut(rest, []byte{' '})
	if !lw.since.IsZero() {
		t, err := time.Parse(time.RFC3339Nano, string(ts))
		if err == nil && t.Before(lw.since) {
			return nil
		}
	}
	var out []byte
	if lw.opts.timestamps {
		out = append(append(out, ts...), ' ')
	}
	out = append(out, text...)
	full := !bytes.Equal(tag, []byte("P"))
	if full {
		out = append(out, '\n')
	}
	if !lw.tailing {
		_, err := lw.w.Write(out)
		return err
	}
	lw.cur = append(lw.cur, out...)
	if full {
		lw.tail = append(lw.tail, lw.cur)
		lw.cur = nil
		if len(lw.tail) > lw.opts.tailLines {
			lw.tail = lw.tail[1:]
		}
	}
	return nil
}

// endTail writes the kept lines and leaves tail mode.
func (lw *logWriter) endTail() error {
	if !lw.tailing {
		return nil
	}
	lw.tailing = false
	for _, l := range append(lw.tail, lw.cur) {
		if _, err := lw.w.Write(l); err != nil {
			return err
		}
	}
	lw.tail, lw.cur = nil, nil
	return nil
}

func (lw *logWriter) flushOut() {
	if lw.flush != nil {
		lw.flush()
	}
}

// streamLog writes the records of the files of attempt in dir to lw,
// oldest first. With follow, it then keeps reading the current file,
// re-opening it when it has been rotated (renamed away and created again)
// or truncated, until running reports false (after a last read) or ctx
// ends.
func streamLog(ctx context.Context, dir string, attempt int, lw *logWriter, follow bool, running func() bool) error {
	lw.tailing = lw.opts.tailLines >= 0
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
			return lw.endTail()
		}
		return err
	}
	defer func() { f.Close() }()
	rd := &recordReader{r: f}
	if err := rd.drain(lw); err != nil {
		return err
	}
	if err := lw.endTail(); err != nil {
		return err
	}
	lw.flushOut()
	if !follow {
		return nil
	}
	tick := time.NewTicker(followPoll)
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
		lw.flushOut()
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

func copyFile(path string, lw *logWriter) error {
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
func (rd *recordReader) drain(lw *logWriter) error {
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
			if werr := lw.record(line); werr != nil {
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
