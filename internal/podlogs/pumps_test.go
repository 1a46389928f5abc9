package podlogs

import (
	"context"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// appendRaw appends data to a raw file as the shim does.
func appendRaw(t *testing.T, path, data string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString(data); err != nil {
		t.Fatal(err)
	}
}

// attemptRecords reads every file of the attempt of cri, oldest first.
func attemptRecords(t *testing.T, cri string, maxFiles int) []record {
	t.Helper()
	var recs []record
	for n := maxFiles; n >= 0; n-- {
		p := cri
		if n > 0 {
			p += "." + strconv.Itoa(n)
		}
		if _, err := os.Stat(p); err != nil {
			continue
		}
		recs = append(recs, readRecords(t, p)...)
	}
	return recs
}

// finishPump calls done until it has finished.
func finishPump(t *testing.T, p *pump) {
	t.Helper()
	for {
		finished, err := p.done()
		if err != nil {
			t.Fatal(err)
		}
		if finished {
			return
		}
	}
}

func TestPumpFormat(t *testing.T) {
	dir := t.TempDir()
	cri := filepath.Join(dir, "default_web_uid", "app", "0.log")
	base := filepath.Join(dir, "pods", "uid", "logs", "app", "0")
	p, err := createPump("cid", cri, base, logConfig{maxSize: 1 << 20, maxFiles: 4}, newScratch())
	if err != nil {
		t.Fatal(err)
	}
	out, errp, state := rawPaths(base)
	long := strings.Repeat("x", maxLogLine+10)
	appendRaw(t, out, "hello\n\nwindows\r\n"+long+"\nunfinished")
	appendRaw(t, errp, "oops\n")
	if _, err := p.step(); err != nil {
		t.Fatal(err)
	}
	appendRaw(t, out, " line\nno newline at the end")
	if _, err := p.step(); err != nil {
		t.Fatal(err)
	}
	finishPump(t, p)
	var got []string
	for _, r := range readRecords(t, cri) {
		tag := "F"
		if r.partial {
			tag = "P"
		}
		got = append(got, fmt.Sprintf("%s %s %d:%.10s", r.stream, tag, len(r.text), r.text))
	}
	want := []string{
		"stdout F 5:hello", "stdout F 0:", "stdout F 7:windows",
		fmt.Sprintf("stdout P %d:xxxxxxxxxx", maxLogLine), "stdout F 10:xxxxxxxxxx",
		"stderr F 4:oops", "stdout F 15:unfinished", "stdout F 21:no newline",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("records\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	for _, f := range []string{out, errp, state} {
		if _, err := os.Stat(f); !os.IsNotExist(err) {
			t.Errorf("%s left after done: %v", f, err)
		}
	}
}

// TestPumpExactlyOnceAcrossKills: a pump killed at random points (after
// writing records but before committing them, in the middle of a
// rotation's renames, after the rotation's commit) and opened again from
// its files converts every line exactly once, in order, across the
// rotated files.
func TestPumpExactlyOnceAcrossKills(t *testing.T) {
	for _, maxFiles := range []int{0, 3, 200} {
		t.Run(fmt.Sprintf("max-files %d", maxFiles), func(t *testing.T) {
			dir := t.TempDir()
			cri := filepath.Join(dir, "ns_p_uid", "c", "0.log")
			base := filepath.Join(dir, "pods", "uid", "logs", "c", "0")
			cfg := logConfig{maxSize: 4096, maxFiles: maxFiles}
			p, err := createPump("cid", cri, base, cfg, newScratch())
			if err != nil {
				t.Fatal(err)
			}
			out, _, state := rawPaths(base)
			rng := rand.New(rand.NewPCG(1, uint64(maxFiles)))
			kills, next := 0, 0
			arm := func(p *pump) {
				p.crashPoint = func(where string) {
					if rng.IntN(8) == 0 {
						kills++
						panic("killed at " + where)
					}
				}
			}
			arm(p)
			const lines = 5000
			for next <= lines {
				for k := rng.IntN(60); k > 0 && next < lines; k-- {
					appendRaw(t, out, fmt.Sprintf("line %d\n", next))
					next++
				}
				stepOrKill(t, &p, state, cfg, arm, func(p *pump) {
					if _, err := p.step(); err != nil {
						t.Fatal(err)
					}
				})
				if p != nil && next == lines {
					p.crashPoint = nil
					finishPump(t, p)
					p = nil
					next++ // done
				}
			}
			if kills < 10 {
				t.Fatalf("only %d kills", kills)
			}
			recs := attemptRecords(t, cri, maxFiles)
			if maxFiles < 200 {
				// Rotation drops the oldest files: what is left is a
				// contiguous tail ending with the last line.
				if len(recs) == 0 {
					t.Fatal("no records")
				}
				first, _ := strconv.Atoi(strings.TrimPrefix(recs[0].text, "line "))
				for i, r := range recs {
					if r.text != fmt.Sprintf("line %d", first+i) {
						t.Fatalf("record %d is %q, want line %d (after %d kills)", i, r.text, first+i, kills)
					}
				}
				if last := recs[len(recs)-1].text; last != fmt.Sprintf("line %d", lines-1) {
					t.Fatalf("last record %q", last)
				}
				return
			}
			if len(recs) != lines {
				seen := map[string]int{}
				for _, r := range recs {
					seen[r.text]++
				}
				var missing []int
				for i := range lines {
					if seen[fmt.Sprintf("line %d", i)] != 1 {
						missing = append(missing, i)
					}
				}
				t.Errorf("%d records, want %d (after %d kills); not once: %v", len(recs), lines, kills, missing)
			}
			for i, r := range recs {
				if r.text != fmt.Sprintf("line %d", i) {
					t.Fatalf("record %d is %q (after %d kills)", i, r.text, kills)
				}
			}
			t.Logf("%d kills, %d records", kills, len(recs))
		})
	}
}

// newTestPump creates the pump of a new attempt under dir and returns it
// with its CRI file and the base of its raw files.
func newTestPump(t *testing.T, dir string, cfg logConfig) (p *pump, cri, base string) {
	t.Helper()
	cri = filepath.Join(dir, "ns_p_uid", "c", "0.log")
	base = filepath.Join(dir, "pods", "uid", "logs", "c", "0")
	p, err := createPump("cid", cri, base, cfg, newScratch())
	if err != nil {
		t.Fatal(err)
	}
	return p, cri, base
}

// stepOrKill opens the pump at state again when the last step killed it
// (*p nil), arming it, then runs step on it; a kill (a panic of its crash
// point) closes it and leaves *p nil.
func stepOrKill(t *testing.T, p **pump, state string, cfg logConfig, arm func(*pump), step func(*pump)) {
	t.Helper()
	if *p == nil {
		var err error
		if *p, err = openPump(state, cfg, newScratch()); err != nil {
			t.Fatalf("reopen after a kill: %v", err)
		}
		arm(*p)
	}
	defer func() {
		if r := recover(); r != nil {
			(*p).close()
			*p = nil
		}
	}()
	step(*p)
}

// TestPumpBoundedStep: a backlog larger than one step's share is converted
// over several steps, each saying there is more, with nothing lost.
func TestPumpBoundedStep(t *testing.T) {
	dir := t.TempDir()
	p, cri, base := newTestPump(t, dir, logConfig{})
	out, _, _ := rawPaths(base)
	const lines = 40000 // 40 bytes each: 1.6 MB, more than stepChunks*pumpChunk
	var b strings.Builder
	for i := range lines {
		fmt.Fprintf(&b, "%-38d|\n", i)
	}
	appendRaw(t, out, b.String())
	steps := 0
	for {
		more, err := p.step()
		if err != nil {
			t.Fatal(err)
		}
		steps++
		if !more {
			break
		}
	}
	if steps < 2 {
		t.Errorf("%d steps for %d bytes, want the backlog split", steps, b.Len())
	}
	recs := readRecords(t, cri)
	if len(recs) != lines {
		t.Fatalf("%d records, want %d", len(recs), lines)
	}
	for i, r := range recs {
		if want := fmt.Sprintf("%-38d|", i); r.text != want {
			t.Fatalf("record %d = %q, want %q", i, r.text, want)
		}
	}
}

// allocated returns the bytes allocated on disk to path.
func allocated(t *testing.T, path string) int64 {
	t.Helper()
	var st syscall.Stat_t
	if err := syscall.Stat(path, &st); err != nil {
		t.Fatal(err)
	}
	return st.Blocks * 512
}

// stepAll steps p until it has nothing more to convert now.
func stepAll(t *testing.T, p *pump) {
	t.Helper()
	for {
		more, err := p.step()
		if err != nil {
			t.Fatal(err)
		}
		if !more {
			return
		}
	}
}

// TestPumpPunchesConverted: the raw bytes a pump has converted are given
// back to the file system, also by a pump that adopted the files (an
// earlier tug's), which first gives back what was converted before it.
func TestPumpPunchesConverted(t *testing.T) {
	dir := t.TempDir()
	p, _, base := newTestPump(t, dir, logConfig{maxSize: 1 << 20, maxFiles: 1})
	out, _, state := rawPaths(base)
	line := strings.Repeat("x", 99) + "\n"
	appendRaw(t, out, strings.Repeat(line, 15000)) // 1.5 MB
	stepAll(t, p)
	if a := allocated(t, out); a > 1<<20 {
		t.Errorf("after converting 1.5 MB, the raw file holds %d bytes on disk", a)
	}
	p.noPunch = true // an earlier tug that could not punch
	appendRaw(t, out, strings.Repeat(line, 15000))
	stepAll(t, p)
	p.close()

	p, err := openPump(state, logConfig{maxSize: 1 << 20, maxFiles: 1}, newScratch())
	if err != nil {
		t.Fatal(err)
	}
	defer p.close()
	appendRaw(t, out, strings.Repeat(line, 11000))
	stepAll(t, p)
	if a := allocated(t, out); a > 1<<20 {
		t.Errorf("after an adopted pump converted 4.1 MB, the raw file holds %d bytes on disk", a)
	}
	if p.noPunch {
		t.Errorf("the pump says the file system cannot punch")
	}
}

// TestPumpBacklogBound: a raw backlog up to the bound is converted whole; a
// larger one is cut to the newest half of the bound from the start of a
// line, after one record saying how many bytes were dropped, and the
// dropped bytes leave the disk.
func TestPumpBacklogBound(t *testing.T) {
	const lineLen = 100
	tests := []struct {
		name    string
		maxSize int64
		lines   int
		dropped bool
	}{
		{name: "under the bound", lines: rawBacklogMax / lineLen, dropped: false},
		{name: "over the bound", lines: 5 * rawBacklogMax / lineLen, dropped: true},
		{name: "max-size above the bound", maxSize: 8 << 20, lines: 3 * rawBacklogMax / lineLen, dropped: false},
		{name: "over max-size", maxSize: 4 << 20, lines: 5 * rawBacklogMax / lineLen, dropped: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			p, cri, base := newTestPump(t, dir, logConfig{maxSize: tt.maxSize, maxFiles: 9})
			defer p.close()
			out, _, _ := rawPaths(base)
			var b strings.Builder
			for i := range tt.lines {
				fmt.Fprintf(&b, "%-*d|\n", lineLen-2, i)
			}
			appendRaw(t, out, b.String())
			stepAll(t, p)
			recs := attemptRecords(t, cri, 9)
			first := 0
			if tt.dropped {
				// Up to the first line that starts in the newest half.
				drop := (int64(b.Len()) - p.backlogMax()/2 + lineLen - 1) / lineLen * lineLen
				want := fmt.Sprintf(droppedFmt, drop)
				if len(recs) == 0 || recs[0].text != want {
					t.Fatalf("first record %v, want %q", recs[:min(1, len(recs))], want)
				}
				recs = recs[1:]
				first = int(drop / lineLen)
				if p.dropped != drop {
					t.Errorf("pump counts %d bytes dropped, want %d", p.dropped, drop)
				}
				if a := allocated(t, out); a > p.backlogMax() {
					t.Errorf("the raw file holds %d bytes on disk, want at most %d", a, p.backlogMax())
				}
			}
			if len(recs) != tt.lines-first {
				t.Fatalf("%d line records, want %d", len(recs), tt.lines-first)
			}
			for k, r := range recs {
				if want := fmt.Sprintf("%-*d|", lineLen-2, first+k); r.text != want {
					t.Fatalf("record %d = %q, want %q", k, r.text, want)
				}
			}
		})
	}
}

// TestReportNotices: what a pump's step did to bound the disk becomes
// notices for the notifier (events, and a stop for a raw file that cannot
// be punched and outgrew its limit), each said once.
func TestReportNotices(t *testing.T) {
	tests := []struct {
		name  string
		pump  pump
		want  []string // reasons, in order
		stops int
		bytes int64
	}{
		{name: "nothing", want: nil},
		{name: "dropped", pump: pump{dropped: 5000}, want: []string{"OutputDropped"}, bytes: 5000},
		{name: "cannot punch", pump: pump{noPunch: true}, want: []string{"LogPunchUnsupported"}},
		{name: "cannot punch and too big", pump: pump{noPunch: true, tooBig: true},
			want: []string{"LogPunchUnsupported", "OutputLimit"}, stops: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := newLogPumps(t.TempDir(), logConfig{}, slog.New(slog.DiscardHandler))
			p := tt.pump
			l.report("cid", &p)
			l.report("cid", &p) // said once
			var got []string
			stops := 0
			for len(l.notices) > 0 {
				n := <-l.notices
				got = append(got, n.reason)
				if n.stop {
					stops++
				}
			}
			if !slices.Equal(got, tt.want) || stops != tt.stops {
				t.Errorf("notices %q with %d stops, want %q with %d", got, stops, tt.want, tt.stops)
			}
			if b := l.droppedBytes.Load(); b != tt.bytes {
				t.Errorf("dropped bytes counted %d, want %d", b, tt.bytes)
			}
		})
	}
}

// TestRunWaitsForItsGoroutines: Run returns only once the notifier has
// finished what it was doing (a Warning event under way when ctx ends).
func TestRunWaitsForItsGoroutines(t *testing.T) {
	l := newLogPumps(t.TempDir(), logConfig{}, slog.New(slog.DiscardHandler))
	entered, release := make(chan struct{}), make(chan struct{})
	notify := func(context.Context, string, string, string) {
		close(entered)
		<-release
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- l.Run(ctx, Tasks{Notify: notify}) }()
	l.notices <- notice{id: "c1", reason: "OutputDropped"}
	<-entered
	cancel()
	select {
	case <-done:
		t.Fatal("Run returned while its notifier was still sending an event")
	case <-time.After(100 * time.Millisecond):
	}
	close(release)
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("Run: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Run did not return after its notifier ended")
	}
}
