package main

import (
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"strings"

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

// logsJournal returns where the log endpoint reads container output with
// the "journald" driver alone (nil: the CRI files), and says when tug logs
// cannot read it. It reads only the entries journald stamped as sent by
// root from tug's own unit (or, outside a systemd service, by this
// process): podlogs.JournalWriter.
func logsJournal(driver string, log *slog.Logger) api.JournalLogs {
	if driver != "journald" {
		return nil
	}
	if _, err := exec.LookPath("journalctl"); err != nil {
		log.Warn("tug logs cannot read container output from the journal: journalctl not found", "err", err)
	}
	cgroup, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		log.Warn("tug's own cgroup unknown: tug logs reads the journal entries of this process only", "err", err)
	}
	writer := podlogs.JournalWriter(cgroup, os.Getpid())
	log.Info("tug logs reads container output from the journal", "match", "_UID=0 "+writer)
	return podlogs.JournalReader{Writer: writer}
}
