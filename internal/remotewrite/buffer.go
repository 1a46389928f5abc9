package remotewrite

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"

	"tug/internal/atomicfile"
)

// batchExt ends the name of every batch file.
const batchExt = ".rw"

// batch is one push interval's request body, the snappy-compressed
// WriteRequest exactly as it is sent: in memory (body) until it has to
// outlive the process, then in a file, <seq, 20 digits>-<samples>.rw.
type batch struct {
	seq     uint64
	samples int
	size    int64
	body    []byte // nil once the batch is on disk
}

// onDisk reports whether the batch is in its file rather than in memory.
func (b batch) onDisk() bool { return b.body == nil }

func (b batch) name() string { return fmt.Sprintf("%020d-%d%s", b.seq, b.samples, batchExt) }

func parseBatchName(name string) (batch, bool) {
	base, ok := strings.CutSuffix(name, batchExt)
	if !ok {
		return batch{}, false
	}
	s, n, ok := strings.Cut(base, "-")
	if !ok {
		return batch{}, false
	}
	seq, err1 := strconv.ParseUint(s, 10, 64)
	samples, err2 := strconv.Atoi(n)
	if err1 != nil || err2 != nil || samples < 0 {
		return batch{}, false
	}
	return batch{seq: seq, samples: samples}, true
}

// buffer is the queue of batches, oldest first, its total size (in memory
// and on disk) capped at max bytes. A batch stays in memory while the
// endpoint takes the batches as they come, and is written to dir when it
// could not go at once: the sender failed (spill, until a send succeeds
// again), a batch before it is still waiting, or the process stops
// (persist). It is safe for concurrent use: the gathering loop appends and
// the sender reads and removes.
type buffer struct {
	dir string
	max int64

	mu      sync.Mutex
	batches []batch // oldest first
	size    int64
	next    uint64
	spill   bool // the last send failed: every batch goes to disk
	// write writes one batch file durably: atomicfile.Write.
	write func(path string, data []byte, perm os.FileMode) error
}

// openBuffer reads the batches a previous run left in dir (created 0700
// if missing) and removes the temporary files of a write a crash cut
// short; lost is the number of samples those held, as their names say.
// Files it does not know are left alone.
func openBuffer(dir string, capBytes int64) (b *buffer, lost int, err error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, 0, fmt.Errorf("remotewrite: buffer dir: %w", err)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, 0, fmt.Errorf("remotewrite: buffer dir: %w", err)
	}
	b = &buffer{dir: dir, max: capBytes, write: atomicfile.Write}
	for _, e := range entries {
		if base, ok := strings.CutPrefix(e.Name(), "."); ok && strings.Contains(base, ".tmp-") {
			if bt, ok := parseBatchName(base[:strings.Index(base, ".tmp-")]); ok {
				lost += bt.samples
			}
			_ = os.Remove(filepath.Join(dir, e.Name()))
			continue
		}
		bt, ok := parseBatchName(e.Name())
		if !ok || !e.Type().IsRegular() {
			continue
		}
		fi, err := e.Info()
		if err != nil {
			continue // removed meanwhile
		}
		bt.size = fi.Size()
		b.batches = append(b.batches, bt)
		b.size += bt.size
		b.next = max(b.next, bt.seq+1)
	}
	slices.SortFunc(b.batches, func(x, y batch) int { return cmpUint(x.seq, y.seq) })
	return b, lost, nil
}

func cmpUint(a, b uint64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// add queues body (holding samples samples) as the newest batch. The
// oldest batches are removed first until it fits under the cap; dropped
// is the number of samples they held (the new batch's own when it alone
// is larger than the cap, and then it is not queued). The batch stays in
// memory unless it cannot go at once (spill, or a batch before it still
// waits): then it, and every batch still only in memory, is written to
// disk. An error is a write that failed; the batches stay queued in
// memory.
func (b *buffer) add(body []byte, samples int) (dropped int, err error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	size := int64(len(body))
	if size > b.max {
		return samples, nil
	}
	for len(b.batches) > 0 && b.size+size > b.max {
		old := b.batches[0]
		if err := b.removeLocked(); err != nil {
			return dropped, err
		}
		dropped += old.samples
	}
	waiting := len(b.batches) > 0
	if body == nil {
		body = []byte{} // in memory: a nil body means on disk
	}
	b.batches = append(b.batches, batch{seq: b.next, samples: samples, size: size, body: body})
	b.next++
	b.size += size
	if b.spill || waiting {
		return dropped, b.persistLocked()
	}
	return dropped, nil
}

// setSpill records whether the last send failed; on a failure the
// batches still only in memory are written at once.
func (b *buffer) setSpill(failed bool) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.spill = failed
	if failed {
		return b.persistLocked()
	}
	return nil
}

// persist writes every batch still only in memory to disk: for the next
// start, when the process stops.
func (b *buffer) persist() (written int, err error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, bt := range b.batches {
		if !bt.onDisk() {
			written++
		}
	}
	return written, b.persistLocked()
}

// persistLocked writes the batches still only in memory, oldest first,
// each atomically (atomicfile: temporary file, fsync, rename, fsync of
// the directory), and then keeps only their names.
func (b *buffer) persistLocked() error {
	for i := range b.batches {
		bt := &b.batches[i]
		if bt.onDisk() {
			continue
		}
		if err := b.write(filepath.Join(b.dir, bt.name()), bt.body, 0o600); err != nil {
			return fmt.Errorf("remotewrite: buffer: %w", err)
		}
		bt.body = nil
	}
	return nil
}

// oldest returns the oldest batch and its body; ok is false when the
// buffer is empty.
func (b *buffer) oldest() (bt batch, body []byte, ok bool, err error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.batches) == 0 {
		return batch{}, nil, false, nil
	}
	bt = b.batches[0]
	if !bt.onDisk() {
		return bt, bt.body, true, nil
	}
	body, err = os.ReadFile(filepath.Join(b.dir, bt.name()))
	if err != nil {
		// An unreadable batch can never be sent: it is forgotten so that
		// it does not hold back the ones after it.
		_ = b.removeLocked()
		return bt, nil, false, fmt.Errorf("remotewrite: buffer: %w", err)
	}
	return bt, body, true, nil
}

// remove forgets bt once it is delivered or refused, deleting its file if
// it has one. It does nothing when bt is gone already (dropped for the cap
// while it was being sent).
func (b *buffer) remove(bt batch) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.batches) == 0 || b.batches[0].seq != bt.seq {
		return nil
	}
	return b.removeLocked()
}

// removeLocked forgets the oldest batch and deletes its file.
func (b *buffer) removeLocked() error {
	bt := b.batches[0]
	b.batches = b.batches[1:]
	b.size -= bt.size
	if !bt.onDisk() {
		return nil
	}
	if err := os.Remove(filepath.Join(b.dir, bt.name())); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("remotewrite: buffer: %w", err)
	}
	return nil
}

// stats returns the number of batches and their total size, and how many
// of them are on disk.
func (b *buffer) stats() (batches int, bytes int64, onDisk int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, bt := range b.batches {
		if bt.onDisk() {
			onDisk++
		}
	}
	return len(b.batches), b.size, onDisk
}

// samplesInMemory is the number of samples of the batches only in memory.
func (b *buffer) samplesInMemory() (n int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, bt := range b.batches {
		if !bt.onDisk() {
			n += bt.samples
		}
	}
	return n
}
