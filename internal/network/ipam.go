package network

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
)

// tmpPrefix starts the name of a lease being written. A crash can leave
// one behind; the next load removes it.
const tmpPrefix = ".tmp-"

// leases is tug's host-local IPAM: one file per leased address in dir,
// named by the address ("10.201.0.7") and holding the owner's UID and a
// newline. A lease is written to a temporary file first and then linked to
// its name with link(2), which fails if the name exists: the file appears
// whole or not at all, and two UIDs can never hold the same address, even
// across processes. Leases survive restarts; release removes them.
//
// The network address, the gateway (the first host address, the bridge's)
// and the broadcast address are never leased. Allocation is round-robin:
// the first free address after the one allocated last (after a restart:
// after the highest leased one), wrapping around, so that a released
// address is not handed out again while neighbours' ARP caches and
// conntrack entries may still point to the pod that had it.
//
// The directory is read once, on first use, and then kept in memory: the
// process owning the leases is the only writer. A lease outside the
// prefix (left by a different --pod-cidr) still counts as the UID's for
// list and release, but not for allocate, which gives the UID a new
// address and removes the old file.
//
// A leases is safe for concurrent use.
type leases struct {
	dir    string
	prefix netip.Prefix
	log    *slog.Logger

	mu     sync.Mutex
	loaded bool
	owner  map[netip.Addr]string // every lease file; "" for an unreadable one
	byUID  map[string]netip.Addr // each UID's lease inside prefix
	last   netip.Addr            // allocated last; the search starts after it
}

func newLeases(dir string, prefix netip.Prefix, log *slog.Logger) *leases {
	return &leases{dir: dir, prefix: prefix.Masked(), log: log}
}

// v4 and fromV4 convert between IPv4 addresses and integers.
func v4(a netip.Addr) uint32 { b := a.As4(); return binary.BigEndian.Uint32(b[:]) }

func fromV4(u uint32) netip.Addr {
	var b [4]byte
	binary.BigEndian.PutUint32(b[:], u)
	return netip.AddrFrom4(b)
}

// hostRange returns the first and last leasable address of an IPv4 prefix
// of at most /30: the network address and the gateway come before lo, the
// broadcast address after hi.
func hostRange(p netip.Prefix) (lo, hi uint32) {
	p = p.Masked()
	network := v4(p.Addr())
	broadcast := network | (1<<(32-p.Bits()) - 1)
	return network + 2, broadcast - 1
}

// gateway returns the first host address of p, which the bridge holds.
func gateway(p netip.Prefix) netip.Addr { return p.Masked().Addr().Next() }

// leasable reports whether a can be leased in p.
func leasable(p netip.Prefix, a netip.Addr) bool {
	if !a.Is4() || !p.Contains(a) {
		return false
	}
	lo, hi := hostRange(p)
	return v4(a) >= lo && v4(a) <= hi
}

// load reads the lease directory once. The caller holds l.mu.
func (l *leases) load() error {
	if l.loaded {
		return nil
	}
	if err := os.MkdirAll(l.dir, 0o700); err != nil {
		return fmt.Errorf("create lease dir: %w", err)
	}
	entries, err := os.ReadDir(l.dir)
	if err != nil {
		return fmt.Errorf("read lease dir: %w", err)
	}
	l.owner = make(map[netip.Addr]string)
	l.byUID = make(map[string]netip.Addr)
	l.last = netip.Addr{}
	for _, e := range entries {
		name := e.Name()
		if strings.HasPrefix(name, tmpPrefix) {
			os.Remove(filepath.Join(l.dir, name)) // a crash in the middle of a write
			continue
		}
		a, err := netip.ParseAddr(name)
		if err != nil || !a.Is4() || a.String() != name {
			continue // not ours
		}
		uid, err := l.read(a)
		if err != nil {
			l.log.Warn("unreadable lease; its address stays taken", "file", filepath.Join(l.dir, name), "err", err)
		}
		l.note(a, uid)
	}
	l.loaded = true
	return nil
}

// note records that a is leased to uid ("" when unknown).
func (l *leases) note(a netip.Addr, uid string) {
	l.owner[a] = uid
	if uid == "" || !leasable(l.prefix, a) {
		return
	}
	if old, ok := l.byUID[uid]; !ok || a.Less(old) {
		l.byUID[uid] = a
	}
	if !l.last.IsValid() || l.last.Less(a) {
		l.last = a
	}
}

// errLeaseCutShort is a lease file without its final newline.
var errLeaseCutShort = errors.New("lease cut short")

// read returns the UID in a's lease file.
func (l *leases) read(a netip.Addr) (string, error) {
	b, err := os.ReadFile(filepath.Join(l.dir, a.String()))
	if err != nil {
		return "", err
	}
	// A lease is always written as the UID and a newline: one without its
	// newline was cut short, and its UID may be another pod's prefix.
	uid, whole := strings.CutSuffix(string(b), "\n")
	if !whole {
		return "", errLeaseCutShort
	}
	if err := checkUID(uid); err != nil {
		return "", err
	}
	return uid, nil
}

// allocate returns uid's lease, making one if it has none. It wraps
// ErrNoAddress when every address is taken.
//
// The address is reserved in memory under l.mu and its file written (and
// fsync'd) outside it, so that pods set up at once write their leases at
// once and share the file system's journal commits instead of queueing
// for one each.
func (l *leases) allocate(uid string) (netip.Addr, error) {
	for {
		a, fresh, err := l.reserve(uid)
		if err != nil || !fresh {
			return a, err
		}
		err = l.write(a, uid)
		l.mu.Lock()
		switch {
		case errors.Is(err, fs.ErrExist): // written behind our back
			l.unreserve(a, uid)
			other, _ := l.read(a)
			l.note(a, other)
			l.mu.Unlock()
			continue
		case err != nil:
			l.unreserve(a, uid)
			l.mu.Unlock()
			return netip.Addr{}, err
		}
		l.dropOthers(uid, a)
		l.mu.Unlock()
		return a, nil
	}
}

// reserve returns uid's lease if it has one (fresh false), or else
// reserves the first free address after the one allocated last and
// returns it with fresh true: the caller writes its file, or unreserves
// it.
func (l *leases) reserve(uid string) (a netip.Addr, fresh bool, err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.load(); err != nil {
		return netip.Addr{}, false, err
	}
	if a, ok := l.byUID[uid]; ok {
		return a, false, nil
	}
	lo, hi := hostRange(l.prefix)
	count := hi - lo + 1
	start := lo
	if l.last.IsValid() && leasable(l.prefix, l.last) {
		start = v4(l.last) + 1
	}
	for i := range count {
		a := fromV4(lo + (start-lo+i)%count)
		if _, taken := l.owner[a]; taken {
			continue
		}
		l.note(a, uid)
		l.last = a
		return a, true, nil
	}
	return netip.Addr{}, false, fmt.Errorf("%w in %s", ErrNoAddress, l.prefix)
}

// unreserve forgets a reservation of a for uid whose file was not
// written. The caller holds l.mu.
func (l *leases) unreserve(a netip.Addr, uid string) {
	if l.owner[a] == uid {
		delete(l.owner, a)
	}
	if l.byUID[uid] == a {
		delete(l.byUID, uid)
	}
}

// adopt makes a, the address a running pod already has, uid's lease when
// uid has none: its lease file was lost or is unreadable, and the pod must
// keep its address rather than be given another. It reports whether uid's
// lease is now a; it is not when a is outside the prefix or another UID's
// readable lease holds it.
func (l *leases) adopt(uid string, a netip.Addr) (bool, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.load(); err != nil {
		return false, err
	}
	if have, ok := l.byUID[uid]; ok {
		return have == a, nil
	}
	if !leasable(l.prefix, a) {
		return false, nil
	}
	owner, taken := l.owner[a]
	switch {
	case taken && owner != "":
		return false, nil // another pod's
	case taken:
		// The unreadable lease of this very address: replace it.
		if err := os.Remove(filepath.Join(l.dir, a.String())); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return false, fmt.Errorf("replace unreadable lease %s: %w", a, err)
		}
		delete(l.owner, a)
	}
	if err := l.write(a, uid); err != nil {
		return false, err
	}
	l.note(a, uid)
	return true, nil
}

// dropOthers removes uid's leases other than keep (left outside the
// prefix by an earlier --pod-cidr). The caller holds l.mu.
func (l *leases) dropOthers(uid string, keep netip.Addr) {
	for a, u := range l.owner {
		if u == uid && a != keep {
			if err := os.Remove(filepath.Join(l.dir, a.String())); err != nil && !errors.Is(err, fs.ErrNotExist) {
				l.log.Warn("remove old lease", "uid", uid, "file", filepath.Join(l.dir, a.String()), "err", err)
				continue
			}
			delete(l.owner, a)
		}
	}
}

// write creates a's lease file for uid, atomically and exclusively: it
// fails with an error wrapping fs.ErrExist if the address is taken.
func (l *leases) write(a netip.Addr, uid string) error {
	f, err := os.CreateTemp(l.dir, tmpPrefix+"*")
	if err != nil {
		return fmt.Errorf("write lease %s: %w", a, err)
	}
	tmp := f.Name()
	defer os.Remove(tmp)
	_, err = f.WriteString(uid + "\n")
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("write lease %s: %w", a, err)
	}
	if err := os.Link(tmp, filepath.Join(l.dir, a.String())); err != nil {
		return fmt.Errorf("write lease %s: %w", a, err)
	}
	l.syncDir()
	return nil
}

// syncDir makes the directory's entries durable (best effort: a lost
// lease after a power cut is found again from the pod's veth).
func (l *leases) syncDir() {
	if d, err := os.Open(l.dir); err == nil {
		d.Sync()
		d.Close()
	}
}

// lookup returns uid's lease inside the prefix, if any.
func (l *leases) lookup(uid string) (netip.Addr, bool, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.load(); err != nil {
		return netip.Addr{}, false, err
	}
	a, ok := l.byUID[uid]
	return a, ok, nil
}

// release removes every lease of uid. A UID with none is not an error.
func (l *leases) release(uid string) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.load(); err != nil {
		return err
	}
	var errs []error
	for a, u := range l.owner {
		if u != uid {
			continue
		}
		if err := os.Remove(filepath.Join(l.dir, a.String())); err != nil && !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, fmt.Errorf("release lease %s: %w", a, err))
			continue
		}
		delete(l.owner, a)
	}
	if a, ok := l.byUID[uid]; ok {
		if _, still := l.owner[a]; !still {
			delete(l.byUID, uid)
		}
	}
	l.syncDir()
	return errors.Join(errs...)
}

// list returns the UIDs holding a lease, sorted.
func (l *leases) list() ([]string, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.load(); err != nil {
		return nil, err
	}
	var uids []string
	for _, u := range l.owner {
		if u != "" {
			uids = append(uids, u)
		}
	}
	slices.Sort(uids)
	return slices.Compact(uids), nil
}
