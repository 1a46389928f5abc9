package podlogs

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"tug/internal/testutil"
)

// collapsingDir returns a temporary directory on a file system that can
// remove a range from a file.
func collapsingDir(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	ok, err := canCollapse(dir)
	if err != nil {
		t.Fatal(err)
	}
	if !ok {
		testutil.Missing(t, "a temporary directory on a file system with FALLOC_FL_COLLAPSE_RANGE (ext4, XFS), %s is not", dir)
	}
	return dir
}

// TestPumpCollapseAcrossKills: with a raw file limit, a pump keeps the raw
// file's length near its unconverted part, and a pump killed just before
// or just after a collapse, opened again from its files, converts every
// line exactly once, in order.
func TestPumpCollapseAcrossKills(t *testing.T) {
	dir := collapsingDir(t)
	cri := filepath.Join(dir, "ns_p_uid", "c", "0.log")
	base := filepath.Join(dir, "pods", "uid", "logs", "c", "0")
	// max-size (and so the backlog bound) above the 12 MB written: no
	// output is dropped, and one CRI file holds it all.
	cfg := logConfig{rawLimit: 64 << 20, maxSize: 32 << 20}
	p, err := createPump("cid", cri, base, cfg, newScratch())
	if err != nil {
		t.Fatal(err)
	}
	out, _, state := rawPaths(base)
	rng := rand.New(rand.NewPCG(7, 7))
	kills := map[string]int{}
	arm := func(p *pump) {
		p.crashPoint = func(where string) {
			if where != "written" && rng.IntN(2) == 0 {
				kills[where]++
				panic("killed at " + where)
			}
		}
	}
	arm(p)
	const lines = 120000 // 100 bytes each: 12 MB
	next, longest := 0, int64(0)
	for next < lines {
		var b strings.Builder
		for k := 1000 + rng.IntN(20000); k > 0 && next < lines; k-- {
			fmt.Fprintf(&b, "%-98d|\n", next)
			next++
		}
		appendRaw(t, out, b.String())
		stepOrKill(t, &p, state, cfg, arm, func(p *pump) { stepAll(t, p) })
		if fi, err := os.Stat(out); err == nil {
			longest = max(longest, fi.Size())
		}
	}
	if p == nil {
		if p, err = openPump(state, cfg, newScratch()); err != nil {
			t.Fatal(err)
		}
	}
	p.crashPoint = nil
	stepAll(t, p)
	fi, err := os.Stat(out)
	if err != nil {
		t.Fatal(err)
	}
	finishPump(t, p)
	if kills["collapsing"] == 0 || kills["collapsed"] == 0 {
		t.Fatalf("kills %v: want some before and some after a collapse", kills)
	}
	if fi.Size() > 4<<20 || longest > 10<<20 {
		t.Errorf("the raw file is %d bytes long after converting 12 MB (at most %d seen), want it collapsed", fi.Size(), longest)
	}
	recs := readRecords(t, cri)
	if len(recs) != lines {
		t.Fatalf("%d records, want %d (kills %v)", len(recs), lines, kills)
	}
	for i, r := range recs {
		if want := fmt.Sprintf("%-98d|", i); r.text != want {
			t.Fatalf("record %d is %q, want %q (kills %v)", i, r.text, want, kills)
		}
	}
	t.Logf("kills %v; raw file at most %d bytes long", kills, longest)
}

// TestPumpFullRawFile: a raw file that reached the limit (the shim stopped
// writing it) marks its pump full, which is reported as OutputLimit with a
// stop, and is not collapsed any more: a tug that starts again sees it.
func TestPumpFullRawFile(t *testing.T) {
	dir := collapsingDir(t)
	cri := filepath.Join(dir, "ns_p_uid", "c", "0.log")
	base := filepath.Join(dir, "pods", "uid", "logs", "c", "0")
	cfg := logConfig{rawLimit: 4 << 20}
	p, err := createPump("cid", cri, base, cfg, newScratch())
	if err != nil {
		t.Fatal(err)
	}
	defer p.close()
	out, _, _ := rawPaths(base)
	appendRaw(t, out, strings.Repeat(strings.Repeat("y", 99)+"\n", 4<<20/100+1))
	stepAll(t, p)
	if !p.full {
		t.Fatal("a raw file at the limit does not mark its pump full")
	}
	if fi, _ := os.Stat(out); fi.Size() < cfg.rawLimit {
		t.Errorf("a full raw file was collapsed to %d bytes", fi.Size())
	}
	l := newLogPumps(dir, cfg, testutil.Logger(t))
	l.report("cid", p)
	close(l.notices)
	var got []notice
	for n := range l.notices {
		if n.reason == "OutputLimit" && n.stop {
			return
		}
		got = append(got, n)
	}
	t.Errorf("notices %+v, want OutputLimit with a stop", got)
}

// TestPumpStateOfOlderTug: a state in the encoding without collapsing is
// read, and rewritten in the current one with its CRI path and ID kept.
func TestPumpStateOfOlderTug(t *testing.T) {
	dir := t.TempDir()
	p, cri, base := newTestPump(t, dir, logConfig{})
	out, _, state := rawPaths(base)
	appendRaw(t, out, "one\ntwo\n")
	stepAll(t, p)
	p.close()
	// The older encoding: the current one without the collapsing fields.
	cur := p.st.encode()
	old := append(append([]byte{}, stateMagicV1[:]...), cur[4:29]...)
	old = append(old, 0, 0, 0, 0)
	binary.LittleEndian.PutUint32(old[len(old)-4:], crc32.ChecksumIEEE(old[:len(old)-4]))
	if err := os.WriteFile(state, append(old, cri+"\ncid"...), 0o640); err != nil {
		t.Fatal(err)
	}
	p, err := openPump(state, logConfig{}, newScratch())
	if err != nil {
		t.Fatal(err)
	}
	appendRaw(t, out, "three\n")
	stepAll(t, p)
	p.close()
	if p, err = openPump(state, logConfig{}, newScratch()); err != nil {
		t.Fatalf("the rewritten state: %v", err)
	}
	defer p.close()
	if p.id != "cid" || p.cri != cri {
		t.Errorf("rewritten state names %q %q", p.id, p.cri)
	}
	var got []string
	for _, r := range readRecords(t, cri) {
		got = append(got, r.text)
	}
	if strings.Join(got, ",") != "one,two,three" {
		t.Errorf("records %q", got)
	}
}
