package podlogs

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"strconv"
	"strings"
	"time"
)

// Reading a container's output back from the journal, for the "journald"
// driver alone (no CRI file): journalctl -o json, filtered by the
// container's CONTAINER_ID_FULL and by the fields journald itself stamps
// on tug's entries, each entry given to a Sink as the CRI record it would
// have been, so that the log endpoint renders both alike.
//
// Any local user may send an entry with CONTAINER_ID_FULL=<a container's
// ID> to journald's socket: that field is the sender's word. Fields whose
// name starts with "_" are journald's: it drops them from what a client
// sends and writes its own from the sender's credentials (_UID, _PID,
// _SYSTEMD_UNIT from its cgroup). An entry is read only when journald
// stamped it _UID=0 and with tug's own writer (JournalWriter).

// JournalReader reads container output from the journal through
// journalctl. Its zero value runs "journalctl" from PATH and reads the
// entries root (_UID=0) sent.
type JournalReader struct {
	// Journalctl is the journalctl binary; default "journalctl".
	Journalctl string
	// Writer is a trusted match ("_SYSTEMD_UNIT=tug.service" or
	// "_PID=1234", see JournalWriter) that tug's entries carry, besides
	// _UID=0; "" matches on _UID=0 alone.
	Writer string
}

// journalUID is the trusted match every entry read must carry: journald
// stamps an entry with its sender's UID, and tug runs as root.
const journalUID = "_UID=0"

// JournalWriter returns the trusted journal match of the entries tug
// sends, from the content of /proc/self/cgroup and tug's PID:
// _SYSTEMD_UNIT=<unit> when tug runs in a systemd service (the unit
// outlives a restart of tug, so output sent before it stays readable),
// else _PID=<pid> (only the entries this tug process sent).
func JournalWriter(cgroup []byte, pid int) string {
	if unit := serviceUnit(cgroup); unit != "" {
		return "_SYSTEMD_UNIT=" + unit
	}
	return "_PID=" + strconv.Itoa(pid)
}

// serviceUnit returns the systemd service of a /proc/<pid>/cgroup content
// ("" for none): the first component of the systemd hierarchy's path (the
// name=systemd line of cgroup v1, else the unified "0::" line) that is not
// a slice, when it is a .service, as journald derives _SYSTEMD_UNIT.
func serviceUnit(cgroup []byte) string {
	var path string
	for _, line := range strings.Split(string(cgroup), "\n") {
		parts := strings.SplitN(line, ":", 3)
		if len(parts) != 3 {
			continue
		}
		if parts[1] == "name=systemd" {
			path = parts[2]
			break
		}
		if parts[0] == "0" && parts[1] == "" {
			path = parts[2]
		}
	}
	for _, c := range strings.Split(path, "/") {
		if c == "" || strings.HasSuffix(c, ".slice") {
			continue
		}
		if strings.HasSuffix(c, ".service") && len(c) > len(".service") {
			return c
		}
		return ""
	}
	return ""
}

// matches is the journalctl matches of container id's entries: its
// CONTAINER_ID_FULL and the trusted fields of tug's entries (journalctl
// ANDs matches of different fields).
func (j JournalReader) matches(id string) []string {
	m := []string{"CONTAINER_ID_FULL=" + id, journalUID}
	if j.Writer != "" {
		m = append(m, j.Writer)
	}
	return m
}

// journalMaxLine bounds one line of journalctl's JSON output (an entry of
// a line piece is at most maxLogLine bytes, escaped up to six times).
const journalMaxLine = 8 * maxLogLine

func (j JournalReader) command(ctx context.Context, id string, extra ...string) *exec.Cmd {
	bin := j.Journalctl
	if bin == "" {
		bin = "journalctl"
	}
	args := append([]string{"--no-pager", "--all", "--output=json"}, extra...)
	args = append(args, j.matches(id)...)
	return exec.CommandContext(ctx, bin, args...)
}

// Stream gives the journal entries of container id to sink, oldest first,
// as CRI records (PRIORITY 3 is stderr, anything else stdout;
// CONTAINER_PARTIAL_MESSAGE=true a "P" record). With follow, it then gives
// the entries that come, until running reports false (and one second
// more, as Stream does) or ctx ends.
func (j JournalReader) Stream(ctx context.Context, id string, sink Sink, follow bool, running func() bool) error {
	cmd := j.command(ctx, id)
	out, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("read the journal: %w", err)
	}
	cursor, rerr := readJournal(out, j.matches(id), sink.Record)
	if err := cmd.Wait(); err != nil && rerr == nil {
		return fmt.Errorf("read the journal: journalctl: %w", err)
	}
	if rerr != nil {
		return rerr
	}
	if err := sink.EndOfFiles(); err != nil {
		return err
	}
	sink.Flush()
	if !follow {
		return nil
	}
	return j.follow(ctx, id, cursor, sink, running)
}

// follow runs journalctl --follow after cursor (from the first entry when
// there is none) until running reports false for a second or ctx ends.
func (j JournalReader) follow(ctx context.Context, id, cursor string, sink Sink, running func() bool) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	from := "--lines=all"
	if cursor != "" {
		from = "--after-cursor=" + cursor
	}
	cmd := j.command(ctx, id, "--follow", from)
	out, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("follow the journal: %w", err)
	}
	defer func() {
		cancel() // kills journalctl, which follows until then
		_ = cmd.Wait()
	}()
	lines := make(chan []byte, 64)
	go func() {
		defer close(lines)
		_, _ = readJournal(out, j.matches(id), func(rec []byte) error {
			select {
			case lines <- append([]byte(nil), rec...):
				return nil
			case <-ctx.Done():
				return ctx.Err()
			}
		})
	}()
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	var stopped time.Time
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case rec, ok := <-lines:
			if !ok {
				return nil // journalctl ended
			}
			if err := sink.Record(rec); err != nil {
				return err
			}
			if len(lines) == 0 {
				sink.Flush()
			}
		case <-tick.C:
			if stopped.IsZero() && !running() {
				stopped = time.Now()
			} else if !stopped.IsZero() && time.Since(stopped) >= time.Second {
				return nil
			}
		}
	}
}

// readJournal gives each entry of journalctl's JSON output (one object a
// line) that has every field of want (FIELD=value) to record as a CRI
// record, and returns the last entry's cursor. journalctl was given the
// same matches: checking them again keeps an entry without tug's trusted
// fields out, whatever journalctl does with its arguments.
func readJournal(r io.Reader, want []string, record func([]byte) error) (string, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), journalMaxLine)
	cursor := ""
	var rec []byte
	for sc.Scan() {
		e, err := parseJournalEntry(sc.Bytes(), want)
		if e.cursor != "" {
			cursor = e.cursor
		}
		if err != nil {
			continue // not an entry of ours
		}
		rec = appendRecord(rec[:0], e.time, e.stream, e.partial, e.message)
		if err := record(rec[:len(rec)-1]); err != nil {
			return cursor, err
		}
	}
	return cursor, sc.Err()
}

// journalRecord is what a CRI record needs of a journal entry.
type journalRecord struct {
	cursor, stream string
	time           time.Time
	partial        bool
	message        []byte
}

// errJournalUntrusted marks an entry without tug's trusted fields.
var errJournalUntrusted = errors.New("podlogs: journal entry not sent by tug")

// parseJournalEntry reads one entry of journalctl --output=json: a field
// is a string, or an array of bytes when it is not valid UTF-8. An entry
// lacking a field of want (FIELD=value) is errJournalUntrusted, with its
// cursor.
func parseJournalEntry(line []byte, want []string) (journalRecord, error) {
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(line, &fields); err != nil {
		return journalRecord{}, err
	}
	str := func(name string) []byte {
		raw, ok := fields[name]
		if !ok {
			return nil
		}
		var s string
		if json.Unmarshal(raw, &s) == nil {
			return []byte(s)
		}
		var b []byte
		var ints []int
		if json.Unmarshal(raw, &ints) == nil {
			for _, n := range ints {
				b = append(b, byte(n))
			}
		}
		return b
	}
	for _, m := range want {
		name, value, _ := strings.Cut(m, "=")
		if got := str(name); got == nil || string(got) != value {
			return journalRecord{cursor: string(str("__CURSOR"))}, fmt.Errorf("%w: %s is %q", errJournalUntrusted, name, got)
		}
	}
	usec, err := strconv.ParseInt(string(str("__REALTIME_TIMESTAMP")), 10, 64)
	if err != nil {
		return journalRecord{}, errors.New("journal entry without __REALTIME_TIMESTAMP")
	}
	e := journalRecord{
		cursor:  string(str("__CURSOR")),
		stream:  "stdout",
		time:    time.UnixMicro(usec).UTC(),
		partial: string(str("CONTAINER_PARTIAL_MESSAGE")) == "true",
		message: str("MESSAGE"),
	}
	if string(str("PRIORITY")) == strconv.Itoa(PriorityStderr) {
		e.stream = "stderr"
	}
	return e, nil
}
