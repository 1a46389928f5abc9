package podlogs

import (
	"bytes"
	"fmt"
	"time"
)

// Record is one record of a CRI log file:
//
//	<RFC3339Nano time> <stdout|stderr> <F|P> <text>
type Record struct {
	Time    time.Time
	Stream  string // "stdout" or "stderr"
	Partial bool   // P: the line goes on in the next record
	Text    []byte
}

// ParseRecord parses one record line, without its newline.
func ParseRecord(line []byte) (Record, error) {
	ts, rest, ok1 := bytes.Cut(line, []byte{' '})
	stream, rest, ok2 := bytes.Cut(rest, []byte{' '})
	tag, text, ok3 := bytes.Cut(rest, []byte{' '})
	if !ok1 || !ok2 || !ok3 || (string(stream) != "stdout" && string(stream) != "stderr") ||
		(string(tag) != "F" && string(tag) != "P") {
		return Record{}, fmt.Errorf("not a CRI log record: %q", line)
	}
	t, err := time.Parse(time.RFC3339Nano, string(ts))
	if err != nil {
		return Record{}, fmt.Errorf("not a CRI log record: %q: %w", line, err)
	}
	return Record{Time: t, Stream: string(stream), Partial: string(tag) == "P", Text: text}, nil
}
