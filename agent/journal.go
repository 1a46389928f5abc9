package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"strings"
	"syscall"

	"github.com/coreos/go-systemd/v22/journal"

	"tug/internal/api"
	"tug/internal/podlogs"
)

// journald: the container log drivers that send container output to the
// journal, and tug's own log lines with sd-daemon priorities when its
// stderr is the journal (docs/decisions.md, "journald").

// journalSocket is journald's native protocol socket (go-systemd's).
const journalSocket = "/run/systemd/journal/socket"

// journalSender sends container output to journald through go-systemd's
// journal package (native protocol datagrams; an entry too big for one
// datagram goes as the descriptor of an unlinked file in /dev/shm).
type journalSender struct{}

func (journalSender) Send(e podlogs.JournalEntry) error {
	return journal.Send(string(e.Message), journal.Priority(e.Priority), e.Fields)
}

// containerJournal returns the journal sender of a log driver that uses
// journald (nil for the others), or an error saying journald's socket
// (journalSocket) is not there.
func containerJournal(driver, socket string) (podlogs.JournalSender, error) {
	if !strings.Contains(driver, "journald") {
		return nil, nil
	}
	fi, err := os.Stat(socket)
	if err == nil && fi.Mode().Type() != os.ModeSocket {
		err = fmt.Errorf("not a socket")
	}
	if err != nil {
		return nil, fmt.Errorf("container-log-driver %s: journald's socket %s: %w (is systemd-journald running?)", driver, socket, err)
	}
	return journalSender{}, nil
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

// logsJournal returns where the log endpoint reads container output with
// the "journald" driver alone (nil: the CRI files), and says when tug logs
// cannot read it.
func logsJournal(driver string, log *slog.Logger) api.JournalLogs {
	if driver != "journald" {
		return nil
	}
	if _, err := exec.LookPath("journalctl"); err != nil {
		log.Warn("tug logs cannot read container output from the journal: journalctl not found", "err", err)
	}
	return podlogs.JournalReader{}
}
