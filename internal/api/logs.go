package api

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"tug/internal/pod"
	"tug/internal/podlogs"
	"tug/internal/podview"
)

// GET /pods/{namespace}/{name}/log streams a container's output as
// "kubectl logs" prints it: the text of each CRI record of the container's
// log files, a partial ("P") record joined to the next one, optionally
// prefixed with the record's time. podlogs reads the files: the current
// attempt is the highest number there, the previous one the next highest.
// Unlike the kubelet, which reads only the newest file, the rotated files
// of the attempt are read too, oldest first.

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
func logContainer(v podview.View, name string) (string, error) {
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
func containerRunning(v podview.View, name string) bool {
	for _, cs := range slices.Concat(v.Status.InitContainerStatuses, v.Status.ContainerStatuses) {
		if cs.Name == name {
			return cs.State.Running != nil
		}
	}
	return false
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
	if s.Journal != nil {
		s.getJournalLog(w, r, v, opts)
		return
	}
	dir := podlogs.ContainerDir(s.LogsDir, v.Metadata, opts.container)
	attempts, err := podlogs.Attempts(dir)
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
	lw := newLogWriter(w, opts)
	running := func() bool {
		if as, _ := podlogs.Attempts(dir); len(as) > 0 && as[0] != attempt {
			return false
		}
		p, err := findPod(s.pods(), ns, name)
		return err == nil && p.Metadata.UID == v.Metadata.UID && containerRunning(p, opts.container)
	}
	if err := podlogs.Stream(r.Context(), dir, attempt, lw, follow, running); err != nil && r.Context().Err() == nil {
		s.logger().Debug("stream log", "pod", ns+"/"+name, "container", opts.container, "err", err)
	}
}

// JournalLogs reads a container's output from the journal (the
// "journald" log driver alone), as podlogs.Stream reads its files:
// podlogs.JournalReader.
type JournalLogs interface {
	Stream(ctx context.Context, id string, sink podlogs.Sink, follow bool, running func() bool) error
}

// getJournalLog serves the log of container opts.container of v from the
// journal: the current attempt is the container the status names, the
// previous one the container of its last termination.
func (s *Server) getJournalLog(w http.ResponseWriter, r *http.Request, v podview.View, opts logOptions) {
	var cs pod.ContainerStatus
	for _, c := range slices.Concat(v.Status.InitContainerStatuses, v.Status.ContainerStatuses) {
		if c.Name == opts.container {
			cs = c
		}
	}
	id := cs.ContainerID
	if opts.previous {
		id = ""
		if t := cs.LastTerminationState.Terminated; t != nil {
			id = t.ContainerID
		}
	}
	id = strings.TrimPrefix(id, "containerd://")
	if id == "" {
		what := fmt.Sprintf("container %q in pod %q is waiting to start", opts.container, v.Metadata.Name)
		if opts.previous {
			what = fmt.Sprintf("previous terminated container %q in pod %q not found", opts.container, v.Metadata.Name)
		}
		s.writeError(w, fmt.Errorf("%s: %w", what, ErrBadRequest))
		return
	}
	follow := opts.follow && !opts.previous
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusOK)
	lw := newLogWriter(w, opts)
	ns, name := v.Metadata.Namespace, v.Metadata.Name
	running := func() bool {
		p, err := findPod(s.pods(), ns, name)
		if err != nil || p.Metadata.UID != v.Metadata.UID {
			return false
		}
		for _, c := range slices.Concat(p.Status.InitContainerStatuses, p.Status.ContainerStatuses) {
			if c.Name == opts.container {
				return c.State.Running != nil && strings.TrimPrefix(c.ContainerID, "containerd://") == id
			}
		}
		return false
	}
	if err := s.Journal.Stream(r.Context(), id, lw, follow, running); err != nil && r.Context().Err() == nil {
		s.logger().Debug("stream log from the journal", "pod", ns+"/"+name, "container", opts.container, "err", err)
	}
}

// newLogWriter returns the writer of a log response with opts.
func newLogWriter(w http.ResponseWriter, opts logOptions) *logWriter {
	lw := &logWriter{w: w, opts: opts, tailing: opts.tailLines >= 0}
	if opts.since > 0 {
		lw.since = time.Now().Add(-time.Duration(opts.since) * time.Second)
	}
	if f, ok := w.(http.Flusher); ok {
		lw.flush = f.Flush
	}
	return lw
}

// logWriter turns CRI records into kubectl's output (a podlogs.Sink).
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

// Record renders one CRI record line (without its newline) and writes it,
// or keeps it for the tail.
func (lw *logWriter) Record(line []byte) error {
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

// EndOfFiles writes the kept lines and leaves tail mode.
func (lw *logWriter) EndOfFiles() error {
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

func (lw *logWriter) Flush() {
	if lw.flush != nil {
		lw.flush()
	}
}
