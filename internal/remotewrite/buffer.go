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

// batch is one push interval's request body on disk:
// <seq, 20 digits>-<samples>.rw, the snappy-compressed WriteRequest exactly
// as it is sent.
type batch struct {
	seq     uint64
	samples int
	size    int64
}

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

// buffer is the on-disk queue of batches, oldest first, its total size
// capped at max bytes. It is safe for concurrent use: the gathering loop
// appends and the sender reads and removes.
type buffer struct {
	dir string
	max int64

	mu      sync.Mutex
	batches []batch // oldest first
	size    int64
	next    uint64
}

// openBuffer reads the batches a previous run left in dir (created 0700
// if missing) and removes the temporary files of a write a crash cut
// short. Files it does not know are left alone.
func openBuffer(dir string, capBytes int64) (*buffer, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("remotewrite: buffer dir: %w", err)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("remotewrite: buffer dir: %w", err)
	}
	b := &buffer{dir: dir, max: capBytes}
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), ".") && strings.Contains(e.Name(), ".tmp-") {
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
	return b, nil
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

// add writes body (holding samples samples) as the newest batch,
// atomically. The oldest batches are removed first until it fits under
// the cap; dropped is the number of samples they held (the new batch's
// own when it alone is larger than the cap, and then it is not written).
func (b *buffer) add(body []byte, samples int) (dropped int, err error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	size := int64(len(body))
	if size > b.max {
		return samples, nil
	}
	for len(b.batches) > 0 && b.size+size > b.max {
		old := b.batches[0]
		if err := b.removeLocked(old); err != nil {
			return dropped, err
		}
		dropped += old.samples
	}
	bt := batch{seq: b.next, samples: samples, size: size}
	if err := atomicfile.Write(filepath.Join(b.dir, bt.name()), body, 0o600); err != nil {
		return dropped, fmt.Errorf("remotewrite: buffer: %w", err)
	}
	b.next++
	b.batches = append(b.batches, bt)
	b.size += size
	return dropped, nil
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
	body, err = os.ReadFile(filepath.Join(b.dir, bt.name()))
	if err != nil {
		// An unreadable batch can never be sent: it is forgotten so that
		// it does not hold back the ones after it.
		_ = b.removeLocked(bt)
		return bt, nil, false, fmt.Errorf("remotewrite: buffer: %w", err)
	}
	return bt, body, true, nil
}

// remove deletes bt once it is delivered or refused. It does nothing when
// bt is gone already (dropped for the cap while it was being sent).
func (b *buffer) remove(bt batch) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.batches) == 0 || b.batches[0].seq != bt.seq {
		return nil
	}
	return b.removeLocked(bt)
}

func (b *buffer) removeLocked(bt batch) error {
	b.batches = b.batches[1:]
	b.size -= bt.size
	if err := os.Remove(filepath.Join(b.dir, bt.name())); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("remotewrite: buffer: %w", err)
	}
	return nil
}

// stats returns the number of batches and their total size.
func (b *buffer) stats() (batches int, bytes int64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.batches), b.size
}
