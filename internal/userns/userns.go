// Package userns hands out the host ID ranges of pods in their own user
// namespace (spec.hostUsers: false), as the kubelet's user namespace
// manager does: one block of 65536 IDs per pod UID, taken from the node's
// range (--user-namespace-range), recorded in a file under tug's state
// directory so that a pod keeps its block across a restart of tug, never
// given to a second pod while the first holds it, and freed when the pod
// is removed.
package userns

import (
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"

	"tug/internal/atomicfile"
	"tug/internal/pod"
)

// BlockSize is the number of IDs (UIDs and GIDs alike) of one pod's user
// namespace: container IDs 0-65535, as in Kubernetes.
const BlockSize = 65536

// DefaultRange is the node range tug uses when neither
// --user-namespace-range nor an entry of user tug in /etc/subuid and
// /etc/subgid gives one: 0x70000000 to 0x7FFDFFFF (1879048192 to
// 2147352575), 4094 blocks. It lies above shadow's default
// SUB_UID_MAX/SUB_GID_MAX (600100000), so useradd never gives a user
// these IDs; in the IDs systemd leaves unused (above the container range
// of systemd-nspawn, 524288-1879048191, below its foreign range, from
// 2147352576); and below 2^31, which some tools still read as a negative
// number.
const DefaultRange = "1879048192/268304384"

// ErrExhausted is returned when every block of the range is held.
var ErrExhausted = errors.New("userns: no free block of IDs left in the user namespace range")

// ErrInvalidRange is returned for a range that is not FIRST/LENGTH with
// both multiples of 65536 and at least one block.
var ErrInvalidRange = errors.New("userns: invalid user namespace range")

// Range is the node's IDs given to pods: First, then Length IDs.
type Range struct {
	First  uint32
	Length uint64
}

// ParseRange reads "FIRST/LENGTH", the first host ID and the number of
// IDs, both multiples of 65536 (the kubelet's rule for its /etc/subuid
// entry), FIRST at least 65536 (host IDs below stay the host's) and the
// range below 4294967295.
func ParseRange(s string) (Range, error) {
	first, length, ok := strings.Cut(s, "/")
	if !ok {
		return Range{}, fmt.Errorf("%w %q: want FIRST/LENGTH, e.g. %s", ErrInvalidRange, s, DefaultRange)
	}
	f, err := strconv.ParseUint(first, 10, 32)
	if err != nil {
		return Range{}, fmt.Errorf("%w %q: first ID: %w", ErrInvalidRange, s, err)
	}
	l, err := strconv.ParseUint(length, 10, 64)
	if err != nil {
		return Range{}, fmt.Errorf("%w %q: length: %w", ErrInvalidRange, s, err)
	}
	switch {
	case f < BlockSize || f%BlockSize != 0:
		return Range{}, fmt.Errorf("%w %q: the first ID must be a multiple of %d, at least %d", ErrInvalidRange, s, BlockSize, BlockSize)
	case l < BlockSize || l%BlockSize != 0:
		return Range{}, fmt.Errorf("%w %q: the length must be a multiple of %d, at least %d", ErrInvalidRange, s, BlockSize, BlockSize)
	case f+l > 1<<32-BlockSize:
		return Range{}, fmt.Errorf("%w %q: the range must end below %d", ErrInvalidRange, s, uint64(1<<32-BlockSize))
	}
	return Range{First: uint32(f), Length: l}, nil
}

// String is the range as ParseRange reads it.
func (r Range) String() string {
	return strconv.FormatUint(uint64(r.First), 10) + "/" + strconv.FormatUint(r.Length, 10)
}

func (r Range) blocks() uint64 { return r.Length / BlockSize }

// stateVersion is the version of the allocation file's format.
const stateVersion = 1

// state is the allocation file: each pod UID with the first host ID of
// its block.
type state struct {
	Version int               `json:"version"`
	Pods    map[string]uint32 `json:"pods"`
}

// Allocator gives each pod UID its block. It is safe for concurrent use.
type Allocator struct {
	path  string
	rng   Range
	files *HostIDFiles
	log   *slog.Logger
	// damaged is set when the file could not be read: Restore rewrites it.
	damaged bool

	mu   sync.Mutex
	pods map[string]uint32 // pod UID -> first host ID
	used map[uint32]string // first host ID -> pod UID
	// reserved is the blocks a running container's mapping covers that
	// are not its pod's recorded block (a mapping not on a block
	// boundary, or longer than a block): never handed out.
	reserved map[uint32]string
	// warned is the claims already logged as overlapping the range.
	warned map[string]bool
}

// Open reads the allocations of path (none when it does not exist) for
// range rng. A recorded block outside rng (the range was changed) stays
// with its pod, which keeps running with it, and is never handed to
// another pod while recorded. A file a power cut damaged (empty,
// NUL-filled, cut short, not the format) is logged (Warn, with its path)
// and read as no allocation: Restore then gives the running pods their
// blocks back before any block is handed out, and rewrites the file. Only
// an error reading the file stops Open.
//
// files are read again each time a pod is given a new block: a block
// that overlaps IDs a local user may map by then (HostIDs.Conflict) is
// not handed out. Nil files check nothing (tests). A nil log discards.
func Open(path string, rng Range, files *HostIDFiles, log *slog.Logger) (*Allocator, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	a := &Allocator{path: path, rng: rng, files: files, log: log, pods: map[string]uint32{}, used: map[uint32]string{},
		reserved: map[uint32]string{}, warned: map[string]bool{}}
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return a, nil
	} else if err != nil {
		return nil, fmt.Errorf("userns: read allocations: %w", err)
	}
	pods, err := decode(data)
	if err != nil {
		log.Warn("user namespace allocations damaged: rebuilt from the running pods", "file", path, "err", err)
		a.damaged = true
		return a, nil
	}
	for uid, base := range pods {
		a.pods[uid], a.used[base] = base, uid
	}
	return a, nil
}

// decode reads the allocation file's content.
func decode(data []byte) (map[string]uint32, error) {
	var st state
	if err := json.Unmarshal(data, &st); err != nil {
		return nil, err
	}
	if st.Version != stateVersion {
		return nil, fmt.Errorf("unknown version %d", st.Version)
	}
	used := map[uint32]string{}
	for uid, base := range st.Pods {
		if base%BlockSize != 0 {
			return nil, fmt.Errorf("pod %s: host ID %d is not a multiple of %d", uid, base, BlockSize)
		}
		if other, dup := used[base]; dup {
			return nil, fmt.Errorf("pods %s and %s hold the same block %d", uid, other, base)
		}
		used[base] = uid
	}
	return st.Pods, nil
}

// Restore records the blocks the pods of tug's containers are given
// (pod UID → its mapping, read back from the containers), before any pod
// is given a block: a block a container uses is its pod's, whatever the
// file said, so that a lost or damaged file never hands a running pod's
// IDs to another pod. Each block the file did not record is logged (Warn,
// with the file's path); the file is rewritten when anything changed or
// it was damaged.
func (a *Allocator) Restore(running map[string]pod.IDMapping) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	changed := a.damaged
	for _, uid := range sortedKeys(running) {
		m := running[uid]
		base := m.HostID
		if base%BlockSize != 0 || m.Size != BlockSize {
			// Not a block of tug's: every block it covers stays out of
			// use while tug runs (the next start reads it again).
			first := uint64(base) / BlockSize * BlockSize
			for b := first; b < uint64(base)+uint64(max(m.Size, 1)) && b < 1<<32; b += BlockSize {
				a.reserved[uint32(b)] = uid
			}
			a.log.Warn("a container's user namespace is not a block of the range: not recorded, the blocks it covers not handed out", "file", a.path, "pod", uid, "host_id", base, "size", m.Size)
			continue
		}
		if a.pods[uid] == base && a.used[base] == uid {
			continue
		}
		if other, ok := a.used[base]; ok && other != uid {
			delete(a.pods, other) // the file's word loses to a running container
		}
		if old, ok := a.pods[uid]; ok {
			delete(a.used, old)
		}
		a.pods[uid], a.used[base] = base, uid
		changed = true
		if !a.damaged {
			a.log.Warn("user namespace block of a running pod was not recorded: recorded", "file", a.path, "pod", uid, "host_id", base)
		}
	}
	if !changed {
		return nil
	}
	if err := a.save(); err != nil {
		return err
	}
	a.damaged = false
	return nil
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// Mapping returns the block of pod uid, giving it the lowest free block
// of the range (and recording it) when it has none. A new block is one
// that no pod holds and that overlaps no ID a local user may map as the
// host ID files say now (a block that does is skipped, and the claim
// logged once); the files unreadable, no block is given.
func (a *Allocator) Mapping(uid string) (pod.IDMapping, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if base, ok := a.pods[uid]; ok {
		return pod.IDMapping{HostID: base, Size: BlockSize}, nil
	}
	var ids HostIDs
	if a.files != nil {
		var err error
		if ids, err = a.files.Read(); err != nil {
			return pod.IDMapping{}, err
		}
	}
	skipped := 0
	for i := uint64(0); i < a.rng.blocks(); i++ {
		base := a.rng.First + uint32(i*BlockSize)
		if _, held := a.used[base]; held {
			continue
		}
		if _, held := a.reserved[base]; held {
			continue
		}
		if c, lo, hi, ok := ids.Conflict(uint64(base), BlockSize); ok {
			skipped++
			if key := c.String(); !a.warned[key] {
				a.warned[key] = true
				a.log.Warn("user namespace blocks overlap IDs a local user may map: not handed out", "file", c.File, "entry", c.Entry, "ids", fmt.Sprintf("%d-%d", lo, hi))
			}
			continue
		}
		a.pods[uid], a.used[base] = base, uid
		if err := a.save(); err != nil {
			delete(a.pods, uid)
			delete(a.used, base)
			return pod.IDMapping{}, err
		}
		return pod.IDMapping{HostID: base, Size: BlockSize}, nil
	}
	if skipped > 0 {
		return pod.IDMapping{}, fmt.Errorf("%w: %d blocks overlap IDs local users may map (%s, %s, %s)", ErrExhausted, skipped, a.files.SubUID, a.files.SubGID, a.files.LoginDefs)
	}
	return pod.IDMapping{}, ErrExhausted
}

// Release frees the block of pod uid; a pod with none is not an error.
func (a *Allocator) Release(uid string) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	base, ok := a.pods[uid]
	if !ok {
		return nil
	}
	delete(a.pods, uid)
	delete(a.used, base)
	if err := a.save(); err != nil {
		a.pods[uid], a.used[base] = base, uid
		return err
	}
	return nil
}

// Held returns the UIDs of the pods that hold a block, sorted.
func (a *Allocator) Held() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	uids := make([]string, 0, len(a.pods))
	for uid := range a.pods {
		uids = append(uids, uid)
	}
	sort.Strings(uids)
	return uids
}

// save writes the allocations atomically (atomicfile.Write): a crash
// leaves the old file or the new one, never a mix.
func (a *Allocator) save() error {
	data, err := json.Marshal(state{Version: stateVersion, Pods: a.pods})
	if err == nil {
		err = atomicfile.Write(a.path, data, 0o600)
	}
	if err != nil {
		return fmt.Errorf("userns: write allocations: %w", err)
	}
	return nil
}
