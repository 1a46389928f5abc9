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
	"time"
)

// Reading a container's output back from the journal, for the "journald"
// driver alone (no CRI file): journalctl -o json, filtered by the
// container's CONTAINER_ID_FULL, each entry given to a Sink as the CRI
// record it would have been, so that the log endpoint renders both alike.

// JournalReader reads container output from the journal through
// journalctl. Its zero value runs "journalctl" from PATH.
type JournalReader struct {
	// Journalctl is the journalctl binary; default "journalctl".
	Journalctl string
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
	args = append(args, "CONTAINER_ID_FULL="+id)
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
	cursor, rerr := readJournal(out, sink.Record)
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
		_, _ = readJournal(out, func(rec []byte) error {
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
// line) to record as a CRI record, and returns the last entry's cursor.
func readJournal(r io.Reader, record func([]byte) error) (string, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), journalMaxLine)
	cursor := ""
	var rec []byte
	for sc.Scan() {
		e, err := parseJournalEntry(sc.Bytes())
		if err != nil {
			continue // not an entry of ours
		}
		cursor = e.cursor
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

// parseJournalEntry reads one entry of journalctl --output=json: a field
// is a string, or an array of bytes when it is not valid UTF-8.
func parseJournalEntry(line []byte) (journalRecord, error) {
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
