// Package tuglog owns tug's own log lines: log/slog text lines on stderr,
// each prefixed with its sd-daemon priority ("<3>" ... "<7>") when stderr
// is the journal's stream, so that "journalctl -u tug -p err" shows tug's
// errors (docs/decisions.md, "journald").
package tuglog

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"syscall"
)

// New returns tug's logger at level (a slog level name, validated by the
// caller's configuration), writing text lines to w; when w is the file
// journalStream names (JOURNAL_STREAM, "<device>:<inode>"), each line
// carries its priority.
func New(w io.Writer, level, journalStream string) *slog.Logger {
	var l slog.Level
	_ = l.UnmarshalText([]byte(level)) // validated by config
	opts := &slog.HandlerOptions{Level: l}
	if f, ok := w.(*os.File); ok && isJournalStream(f, journalStream) {
		return slog.New(newPriorityHandler(w, opts))
	}
	return slog.New(slog.NewTextHandler(w, opts))
}

// isJournalStream reports whether f is the stream JOURNAL_STREAM (env)
// names, "<device>:<inode>": systemd sets it when it connects the
// service's stdout or stderr to the journal (systemd.exec(5)), and a
// process that redirects its stderr elsewhere keeps the variable but not
// the file.
func isJournalStream(f *os.File, env string) bool {
	var dev, ino uint64
	if env == "" {
		return false
	}
	if _, err := fmt.Sscanf(env, "%d:%d", &dev, &ino); err != nil {
		return false
	}
	var st syscall.Stat_t
	if err := syscall.Fstat(int(f.Fd()), &st); err != nil {
		return false
	}
	return uint64(st.Dev) == dev && st.Ino == ino
}

// journalPriority is the sd-daemon priority of a slog level: err, warning,
// info, debug.
func journalPriority(l slog.Level) int {
	switch {
	case l >= slog.LevelError:
		return 3
	case l >= slog.LevelWarn:
		return 4
	case l >= slog.LevelInfo:
		return 6
	}
	return 7
}

// priorityHandler prefixes each line of a text handler with its level's
// sd-daemon priority, "<3>" ... "<7>" (sd-daemon(3)): journald strips the
// prefix and files the line at that priority, so that "journalctl -u tug
// -p err" shows tug's errors. One text handler per priority, each writing
// through its own prefix.
type priorityHandler struct {
	hs map[int]slog.Handler
}

func newPriorityHandler(w io.Writer, opts *slog.HandlerOptions) priorityHandler {
	h := priorityHandler{hs: map[int]slog.Handler{}}
	for _, p := range []int{3, 4, 6, 7} {
		h.hs[p] = slog.NewTextHandler(prefixWriter{w: w, prefix: fmt.Sprintf("<%d>", p)}, opts)
	}
	return h
}

func (h priorityHandler) Enabled(ctx context.Context, l slog.Level) bool {
	return h.hs[6].Enabled(ctx, l)
}

func (h priorityHandler) Handle(ctx context.Context, r slog.Record) error {
	return h.hs[journalPriority(r.Level)].Handle(ctx, r)
}

func (h priorityHandler) WithAttrs(as []slog.Attr) slog.Handler {
	n := priorityHandler{hs: map[int]slog.Handler{}}
	for p, s := range h.hs {
		n.hs[p] = s.WithAttrs(as)
	}
	return n
}

func (h priorityHandler) WithGroup(name string) slog.Handler {
	n := priorityHandler{hs: map[int]slog.Handler{}}
	for p, s := range h.hs {
		n.hs[p] = s.WithGroup(name)
	}
	return n
}

// prefixWriter writes prefix and then each line a text handler gives it,
// in one write (the handler writes a whole line at a time).
type prefixWriter struct {
	w      io.Writer
	prefix string
}

func (p prefixWriter) Write(b []byte) (int, error) {
	if _, err := p.w.Write(append([]byte(p.prefix), b...)); err != nil {
		return 0, err
	}
	return len(b), nil
}
