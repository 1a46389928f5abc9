package podlogs

import (
	"crypto/sha256"
	"encoding/hex"
	"path/filepath"
	"strings"
)

// The journald side of the file driver's converter: with a JournalSender,
// each line the pump converts becomes one journal entry, with the fields
// podman's journald log driver writes (CONTAINER_NAME, CONTAINER_ID,
// CONTAINER_ID_FULL, CONTAINER_TAG, SYSLOG_IDENTIFIER, and
// CONTAINER_PARTIAL_MESSAGE=true on the pieces of a line longer than
// maxLogLine but its last), the pod's TUG_POD_NAMESPACE, TUG_POD_NAME
// and TUG_POD_UID, and PRIORITY 6 (info) for stdout, 3 (err) for stderr.

// Journal priorities of the two streams (syslog levels, as sd-daemon's).
const (
	PriorityStdout = 6 // info
	PriorityStderr = 3 // err
)

// JournalEntry is one journal entry: MESSAGE, PRIORITY and the other
// fields. Fields is shared by every entry of a container's stream and
// must not be changed.
type JournalEntry struct {
	Message  []byte
	Priority int
	Fields   map[string]string
}

// JournalSender sends entries to journald (its native protocol). It is
// called from the pumps' goroutine only.
type JournalSender interface {
	Send(e JournalEntry) error
}

// journalFields are the fields of a container attempt's entries, whole
// lines and partial pieces.
type journalFields struct {
	full, partial map[string]string
}

// newJournalFields returns the fields of container id's entries:
// CONTAINER_ID_FULL is containerd's ID, CONTAINER_ID 12 hex digits as
// podman's, those of the ID's SHA-256 (tug's IDs are not hex, and their
// first 12 characters are mostly the pod's name). It reads
// the pod's namespace, name and UID and the container's name from its CRI
// log path, <logs-dir>/<namespace>_<pod>_<uid>/<container>/<attempt>.log
// (a namespace and a pod name hold no "_": they are DNS names).
func newJournalFields(id, cri string) journalFields {
	container := filepath.Base(filepath.Dir(cri))
	ns, rest, _ := strings.Cut(filepath.Base(filepath.Dir(filepath.Dir(cri))), "_")
	name, uid, _ := strings.Cut(rest, "_")
	sum := sha256.Sum256([]byte(id))
	short := hex.EncodeToString(sum[:6])
	tag := name + "/" + container
	full := map[string]string{
		"CONTAINER_NAME":    container,
		"CONTAINER_ID":      short,
		"CONTAINER_ID_FULL": id,
		"CONTAINER_TAG":     tag,
		"SYSLOG_IDENTIFIER": tag,
		"TUG_POD_NAMESPACE": ns,
		"TUG_POD_NAME":      name,
		"TUG_POD_UID":       uid,
	}
	partial := map[string]string{"CONTAINER_PARTIAL_MESSAGE": "true"}
	for k, v := range full {
		partial[k] = v
	}
	return journalFields{full: full, partial: partial}
}

// entry returns the journal entry of one line (or piece of a line) of
// stream i (0 stdout, 1 stderr).
func (f journalFields) entry(i int, partial bool, text []byte) JournalEntry {
	e := JournalEntry{Message: text, Priority: PriorityStdout, Fields: f.full}
	if i == 1 {
		e.Priority = PriorityStderr
	}
	if partial {
		e.Fields = f.partial
	}
	return e
}
