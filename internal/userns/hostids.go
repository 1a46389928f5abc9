package userns

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
)

// Host IDs that local users may map. newuidmap and newgidmap are setuid
// root: they let each user map the subordinate IDs /etc/subuid and
// /etc/subgid give it into a user namespace of its own, where it is root
// over processes and files of those IDs. useradd gives each user it adds
// such IDs from SUB_UID_MIN..SUB_UID_MAX and SUB_GID_MIN..SUB_GID_MAX of
// /etc/login.defs. A pod's block must be none of them, or that user could
// signal, trace or enter the pod's processes and own its files.

// Owner is the user whose entries of /etc/subuid and /etc/subgid are
// tug's range (the kubelet reads the entries of a user named "kubelet").
// The entries reserve the IDs: useradd hands none of them to a user it
// adds, and nobody else's newuidmap may map them.
const Owner = "tug"

// The login.defs settings' defaults (shadow's), used when a setting or
// the file is absent.
const (
	defaultSubIDMin = 100000
	defaultSubIDMax = 600100000
)

// ErrOverlap is returned for a range that holds host IDs a local user may
// map.
var ErrOverlap = errors.New("userns: the user namespace range overlaps IDs local users may map")

// ErrOwnEntry is returned for tug's entries of /etc/subuid and /etc/subgid
// that cannot be its range.
var ErrOwnEntry = errors.New("userns: tug's subordinate ID entries")

// HostIDFiles names the files that say which host IDs local users may
// map: by default /etc/subuid, /etc/subgid and /etc/login.defs. A file
// that does not exist gives no entry (login.defs: its defaults).
type HostIDFiles struct {
	SubUID, SubGID, LoginDefs string
}

// Claim is host IDs a local user may map: an entry of /etc/subuid or
// /etc/subgid, or the range useradd hands out (login.defs).
type Claim struct {
	// File is the file that says so, Line its line (0: a default).
	File string
	Line int
	// Entry is the line as written, or the login.defs settings and their
	// values.
	Entry string
	// First and Count are the IDs.
	First, Count uint64
	// owner is the entry's user (name or UID); "" for login.defs.
	owner string
	// gid is set for the IDs of groups (subgid, SUB_GID_*).
	gid bool
	// useradd is set for login.defs' range.
	useradd bool
}

// String names the claim: file, line and entry.
func (c Claim) String() string {
	if c.Line == 0 {
		return fmt.Sprintf("%s: %s", c.File, c.Entry)
	}
	return fmt.Sprintf("%s:%d: %q", c.File, c.Line, c.Entry)
}

// HostIDs is what the files said when they were read: the claims of
// everyone but tug, and tug's own entries.
type HostIDs struct {
	files  HostIDFiles
	claims []Claim
	ownUID []Claim
	ownGID []Claim
}

// Read reads the three files. An error reading one (but its absence) is
// returned: the IDs local users may map are then unknown.
func (f HostIDFiles) Read() (HostIDs, error) {
	ids := HostIDs{files: f}
	for _, file := range []struct {
		path string
		gid  bool
		own  *[]Claim
	}{{f.SubUID, false, &ids.ownUID}, {f.SubGID, true, &ids.ownGID}} {
		data, err := readOptional(file.path)
		if err != nil {
			return HostIDs{}, err
		}
		for _, c := range parseSubIDs(file.path, data, file.gid) {
			if c.owner == Owner {
				*file.own = append(*file.own, c)
			} else {
				ids.claims = append(ids.claims, c)
			}
		}
	}
	data, err := readOptional(f.LoginDefs)
	if err != nil {
		return HostIDs{}, err
	}
	ids.claims = append(ids.claims, parseLoginDefs(f.LoginDefs, data)...)
	return ids, nil
}

func readOptional(path string) ([]byte, error) {
	if path == "" {
		return nil, nil
	}
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("userns: read %s: %w", path, err)
	}
	return data, nil
}

// parseSubIDs reads /etc/subuid or /etc/subgid: "name-or-UID:first:count"
// lines. A line that is not one is skipped, as newuidmap skips it.
func parseSubIDs(path string, data []byte, gid bool) []Claim {
	var out []Claim
	sc := bufio.NewScanner(bytes.NewReader(data))
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		f := strings.Split(line, ":")
		if len(f) != 3 || f[0] == "" || strings.HasPrefix(line, "#") {
			continue
		}
		first, err1 := strconv.ParseUint(f[1], 10, 32)
		count, err2 := strconv.ParseUint(f[2], 10, 32)
		if err1 != nil || err2 != nil || count == 0 {
			continue
		}
		out = append(out, Claim{File: path, Line: n, Entry: line, First: first, Count: count, owner: f[0], gid: gid})
	}
	return out
}

// parseLoginDefs returns the ranges useradd hands out: SUB_UID_MIN to
// SUB_UID_MAX and SUB_GID_MIN to SUB_GID_MAX, both ends included, each
// setting's default when it is absent or not a number (as shadow reads
// it).
func parseLoginDefs(path string, data []byte) []Claim {
	type setting struct {
		value uint64
		line  int
	}
	set := map[string]setting{}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for n := 1; sc.Scan(); n++ {
		f := strings.Fields(sc.Text())
		if len(f) < 2 || strings.HasPrefix(f[0], "#") {
			continue
		}
		switch f[0] {
		case "SUB_UID_MIN", "SUB_UID_MAX", "SUB_GID_MIN", "SUB_GID_MAX":
			if v, err := strconv.ParseUint(f[1], 0, 64); err == nil {
				set[f[0]] = setting{v, n}
			}
		}
	}
	var out []Claim
	for _, kind := range []string{"UID", "GID"} {
		lo, hi := "SUB_"+kind+"_MIN", "SUB_"+kind+"_MAX"
		first, ok1 := set[lo]
		last, ok2 := set[hi]
		if !ok1 {
			first.value = defaultSubIDMin
		}
		if !ok2 {
			last.value = defaultSubIDMax
		}
		if last.value < first.value {
			continue // useradd refuses to add subordinate IDs then
		}
		entry := fmt.Sprintf("%s..%s = %d..%d", lo, hi, first.value, last.value)
		if !ok1 || !ok2 {
			entry += " (shadow's default where not set)"
		}
		out = append(out, Claim{File: path, Line: max(first.line, last.line), Entry: entry,
			First: first.value, Count: last.value - first.value + 1, gid: kind == "GID", useradd: true})
	}
	return out
}

// own returns tug's entries of the claim's kind.
func (ids HostIDs) own(gid bool) []Claim {
	if gid {
		return ids.ownGID
	}
	return ids.ownUID
}

// Conflict returns the first claim that IDs first..first+n-1 overlap, and
// the IDs they share. useradd's range does not count where the IDs lie
// within one of tug's own entries of the same file: useradd hands out
// nothing an entry holds.
func (ids HostIDs) Conflict(first, n uint64) (c Claim, lo, hi uint64, ok bool) {
	end := first + n
	for _, c := range ids.claims {
		cend := c.First + c.Count
		if first >= cend || c.First >= end {
			continue
		}
		if c.useradd && within(first, end, ids.own(c.gid)) {
			continue
		}
		return c, max(first, c.First), min(end, cend) - 1, true
	}
	return Claim{}, 0, 0, false
}

func within(first, end uint64, entries []Claim) bool {
	for _, e := range entries {
		if first >= e.First && end <= e.First+e.Count {
			return true
		}
	}
	return false
}

// NodeRange returns the node's range and where it comes from: configured
// (--user-namespace-range) when it is set; else tug's entries of
// /etc/subuid and /etc/subgid when it has any, which must be one in each
// file, the same IDs, and a range ParseRange accepts; else DefaultRange.
func (ids HostIDs) NodeRange(configured string) (Range, string, error) {
	if configured != "" {
		r, err := ParseRange(configured)
		return r, "--user-namespace-range", err
	}
	if len(ids.ownUID) == 0 && len(ids.ownGID) == 0 {
		r, err := ParseRange(DefaultRange)
		return r, "the default range " + DefaultRange, err
	}
	for _, f := range []struct {
		path    string
		entries []Claim
	}{{ids.files.SubUID, ids.ownUID}, {ids.files.SubGID, ids.ownGID}} {
		switch len(f.entries) {
		case 0:
			return Range{}, "", fmt.Errorf("%w: user %s has subordinate IDs in one file but none in %s: give it the same entry in both", ErrOwnEntry, Owner, f.path)
		case 1:
		default:
			return Range{}, "", fmt.Errorf("%w: user %s has %d entries in %s (%s and %s): give it one", ErrOwnEntry, Owner, len(f.entries), f.path, f.entries[0], f.entries[1])
		}
	}
	u, g := ids.ownUID[0], ids.ownGID[0]
	if u.First != g.First || u.Count != g.Count {
		return Range{}, "", fmt.Errorf("%w: %s and %s differ: a pod's user and group IDs are one block, give both the same IDs", ErrOwnEntry, u, g)
	}
	r, err := ParseRange(fmt.Sprintf("%d/%d", u.First, u.Count))
	if err != nil {
		return Range{}, "", fmt.Errorf("%w: %s: %w", ErrOwnEntry, u, err)
	}
	return r, fmt.Sprintf("user %s's entries %s and %s", Owner, u, g), nil
}

// Check returns an error wrapping ErrOverlap, naming the file, the entry
// and the IDs shared, when r (which comes from from) holds IDs a local
// user may map.
func (ids HostIDs) Check(r Range, from string) error {
	c, lo, hi, ok := ids.Conflict(uint64(r.First), r.Length)
	if !ok {
		return nil
	}
	what := "a local user's subordinate IDs, which that user may map"
	if c.useradd {
		what = "where useradd gives each user it adds subordinate IDs, which that user may map"
	}
	return fmt.Errorf("%w: the range %s (%s) and %s share host IDs %d-%d: %s, and so reach the pods' processes and files; "+
		"give tug IDs of its own: one entry for user %q in both %s and %s (the range then comes from it), or a --user-namespace-range that overlaps no entry and neither SUB_UID_MIN..SUB_UID_MAX nor SUB_GID_MIN..SUB_GID_MAX of login.defs",
		ErrOverlap, r, from, c, lo, hi, what, Owner, ids.files.SubUID, ids.files.SubGID)
}
