package source

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"tug/internal/manifest"
	"tug/internal/pod"
	"tug/internal/testutil"
)

// fakeSink records every snapshot it is given.
type fakeSink struct {
	mu    sync.Mutex
	all   []snapshot
	snaps chan snapshot
}

type snapshot struct {
	source string
	at     time.Time
	files  []pod.SourceFile
}

func newFakeSink() *fakeSink { return &fakeSink{snaps: make(chan snapshot, 1000)} }

func (s *fakeSink) Set(source string, ms []pod.SourceFile) {
	snap := snapshot{source: source, at: time.Now(), files: slices.Clone(ms)}
	s.mu.Lock()
	s.all = append(s.all, snap)
	s.mu.Unlock()
	s.snaps <- snap
}

func (s *fakeSink) history() []snapshot {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.all)
}

// waitFor returns the first snapshot (received from now on) that ok
// accepts, failing the test after timeout.
func (s *fakeSink) waitFor(t *testing.T, timeout time.Duration, what string, ok func(snapshot) bool) snapshot {
	t.Helper()
	deadline := time.After(timeout)
	for {
		select {
		case snap := <-s.snaps:
			if ok(snap) {
				return snap
			}
		case <-deadline:
			t.Fatalf("no snapshot with %s within %v; last: %s", what, timeout, s.last())
		}
	}
}

func (s *fakeSink) last() string {
	h := s.history()
	if len(h) == 0 {
		return "none"
	}
	return show(h[len(h)-1])
}

// show prints a snapshot as "file: pods or error; ...".
func show(snap snapshot) string {
	var parts []string
	for _, m := range snap.files {
		p := filepath.Base(m.File) + ":"
		if m.Err != nil {
			p += " err=" + m.Err.Error()
		}
		for _, pd := range m.Pods {
			p += " " + pd.Metadata.Name + "=" + pd.Spec.Containers[0].Image
		}
		parts = append(parts, p)
	}
	return "[" + strings.Join(parts, "; ") + "]"
}

// files returns the base names in a snapshot.
func (snap snapshot) names() []string {
	var out []string
	for _, m := range snap.files {
		out = append(out, filepath.Base(m.File))
	}
	return out
}

func (snap snapshot) file(name string) (pod.SourceFile, bool) {
	for _, m := range snap.files {
		if filepath.Base(m.File) == name {
			return m, true
		}
	}
	return pod.SourceFile{}, false
}

// hasPod reports whether file name is in the snapshot, without error, with
// exactly one pod using image.
func (snap snapshot) hasPod(name, image string) bool {
	m, ok := snap.file(name)
	return ok && m.Err == nil && len(m.Pods) == 1 && m.Pods[0].Spec.Containers[0].Image == image
}

func podManifest(name, image string) string {
	return fmt.Sprintf("apiVersion: v1\nkind: Pod\nmetadata:\n  name: %s\nspec:\n  containers:\n  - name: main\n    image: %s\n", name, image)
}

// writeAtomic writes a file the way config management should: a dotfile
// renamed into place.
func writeAtomic(t *testing.T, path, data string) {
	t.Helper()
	tmp := filepath.Join(filepath.Dir(path), "."+filepath.Base(path)+".tmp")
	if err := os.WriteFile(tmp, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

// start runs a Dir until the test ends.
func start(t *testing.T, cfg DirConfig, tweak ...func(*Dir)) (*Dir, *fakeSink) {
	t.Helper()
	sink := newFakeSink()
	d := NewDir(cfg, sink)
	for _, f := range tweak {
		f(d)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- d.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("Run: %v", err)
			}
		case <-time.After(5 * time.Second):
			t.Error("Run did not return after cancel")
		}
		for _, s := range sink.history() {
			if s.source != d.Name() {
				t.Errorf("Set(source=%q), want %q", s.source, d.Name())
			}
			for _, m := range s.files {
				if m.Source != d.Name() || filepath.Dir(m.File) != d.path {
					t.Errorf("origin %+v, want source %q in %s", m.Origin, d.Name(), d.path)
				}
			}
		}
	})
	return d, sink
}

func noInotify(d *Dir) { d.noInotify = true }

func TestName(t *testing.T) {
	t.Chdir(t.TempDir())
	wd, _ := os.Getwd()
	d := NewDir(DirConfig{Path: "manifests"}, newFakeSink())
	if want := "file:" + filepath.Join(wd, "manifests"); d.Name() != want {
		t.Errorf("Name() = %q, want %q", d.Name(), want)
	}
}

func TestRenameReachesSinkFast(t *testing.T) {
	dir := t.TempDir()
	_, sink := start(t, DirConfig{Path: dir, Rescan: time.Hour})
	sink.waitFor(t, 5*time.Second, "the first report", func(snapshot) bool { return true })

	const trials = 20
	var lat []time.Duration
	for i := range trials {
		name := fmt.Sprintf("web%d.yaml", i)
		writeAtomic(t, filepath.Join(dir, name), podManifest(fmt.Sprintf("web%d", i), "busybox:1"))
		t0 := time.Now()
		snap := sink.waitFor(t, time.Second, name, func(s snapshot) bool { return s.hasPod(name, "busybox:1") })
		lat = append(lat, snap.at.Sub(t0))
	}
	slices.Sort(lat)
	t.Logf("rename -> sink: min %v, median %v, max %v over %d renames", lat[0], lat[trials/2], lat[trials-1], trials)
	// The median, not the maximum: a loaded CI machine may stall one
	// rename, while a debounce or a rescan wait would delay them all.
	if med := lat[trials/2]; med > 100*time.Millisecond {
		t.Errorf("renamed files took a median %v to reach the sink, want <= 100ms (no debounce)", med)
	}
}

func TestBurstIsCoalesced(t *testing.T) {
	dir, stage := t.TempDir(), t.TempDir()
	_, sink := start(t, DirConfig{Path: dir, Rescan: time.Hour})
	sink.waitFor(t, 5*time.Second, "the first report", func(snapshot) bool { return true })
	const n = 30
	for i := range n {
		if err := os.WriteFile(filepath.Join(stage, fmt.Sprintf("p%02d.yaml", i)), []byte(podManifest(fmt.Sprintf("p%02d", i), "busybox:1")), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for i := range n {
		name := fmt.Sprintf("p%02d.yaml", i)
		if err := os.Rename(filepath.Join(stage, name), filepath.Join(dir, name)); err != nil {
			t.Fatal(err)
		}
	}
	sink.waitFor(t, 2*time.Second, "30 files", func(s snapshot) bool { return len(s.files) == n })
	reports := len(sink.history()) - 1
	t.Logf("%d files renamed in: %d reports", n, reports)
	if reports > 5 {
		t.Errorf("%d reports for one burst of %d files, want a few", reports, n)
	}
}

func TestCandidate(t *testing.T) {
	tests := []struct {
		name string
		want bool
	}{
		{"web.yaml", true},
		{"web.yml", true},
		{"web.json", true},
		{"WEB.YAML", true},
		{"web", false},
		{"web.txt", false},
		{".web.yaml", false},
		{".web.yaml.tmp", false},
		{"web.yaml~", false},
		{"web.yaml.swp", false},
		{".web.yaml.swp", false},
		{".web.yaml.swx", false},
		{"web.yaml.bak", false},
		{"web.yaml.tmp", false},
		{"#web.yaml#", false},
		{".#web.yaml", false},
		{"#web.yaml", false},
	}
	for _, tt := range tests {
		if got := IsManifestName(tt.name); got != tt.want {
			t.Errorf("IsManifestName(%q) = %v, want %v", tt.name, got, tt.want)
		}
	}
}

func TestIgnoredNamesNeverBecomeManifests(t *testing.T) {
	t.Parallel()
	ignored := []string{".hidden.yaml", "web.yaml~", "web.yaml.swp", ".web.yaml.swx", "web.yaml.bak",
		"web.yaml.tmp", "#web.yaml#", ".#web.yaml", "notes.txt", "sub/pod.yaml", "dir.yaml/pod.yaml"}
	populate := func(t *testing.T, dir, suffix string) {
		for _, name := range ignored {
			path := filepath.Join(dir, name+suffix)
			if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path, []byte(podManifest("ignored", "busybox:1")), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	dir := t.TempDir()
	populate(t, dir, "")
	writeAtomic(t, filepath.Join(dir, "good.yaml"), podManifest("good", "busybox:1"))
	_, sink := start(t, DirConfig{Path: dir, Rescan: 50 * time.Millisecond})
	snap := sink.waitFor(t, 5*time.Second, "the first report", func(snapshot) bool { return true })
	if got := snap.names(); !slices.Equal(got, []string{"good.yaml"}) {
		t.Fatalf("first report has %q, want only good.yaml", got)
	}

	// The same names appearing while watched.
	populate(t, filepath.Join(dir, "sub2.yaml"), "") // a subdirectory whose name looks like a manifest
	for _, name := range ignored {
		if !strings.Contains(name, "/") {
			if err := os.WriteFile(filepath.Join(dir, name), []byte("changed"), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	writeAtomic(t, filepath.Join(dir, "z.yaml"), podManifest("z", "busybox:1"))
	sink.waitFor(t, time.Second, "z.yaml", func(s snapshot) bool { return s.hasPod("z.yaml", "busybox:1") })
	time.Sleep(200 * time.Millisecond) // a few rescans
	for _, s := range sink.history() {
		for _, name := range s.names() {
			if name != "good.yaml" && name != "z.yaml" {
				t.Errorf("snapshot %s has %s", show(s), name)
			}
		}
	}
}

// TestSlowWriteNeverParsedHalfWay writes a manifest in place in two halves,
// 300 ms apart, while rescans run every 20 ms.
func TestSlowWriteNeverParsedHalfWay(t *testing.T) {
	t.Parallel()
	full := podManifest("web", "busybox:2")
	half := full[:len(full)-len("age: busybox:2\n")] // ends in "    im"
	if _, err := manifest.Parse([]byte(half), manifest.ParseOptions{}); err == nil {
		t.Fatalf("the first half parses; the test would prove nothing:\n%s", half)
	}
	tests := []struct {
		name     string
		existing bool // the file holds busybox:1 before
		inotify  bool
	}{
		{"new file", false, true},
		{"rewrite in place", true, true},
		{"new file, no inotify", false, false},
		{"rewrite in place, no inotify", true, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			path := filepath.Join(dir, "web.yaml")
			if tt.existing {
				if err := os.WriteFile(path, []byte(podManifest("web", "busybox:1")), 0o644); err != nil {
					t.Fatal(err)
				}
				// Old enough to be read at once without inotify.
				old := time.Now().Add(-time.Minute)
				if err := os.Chtimes(path, old, old); err != nil {
					t.Fatal(err)
				}
			}
			var tweaks []func(*Dir)
			if !tt.inotify {
				tweaks = append(tweaks, noInotify)
			}
			_, sink := start(t, DirConfig{Path: dir, Rescan: 20 * time.Millisecond}, tweaks...)
			sink.waitFor(t, 5*time.Second, "the first report", func(s snapshot) bool { return !tt.existing || s.hasPod("web.yaml", "busybox:1") })

			f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := f.WriteString(half); err != nil {
				t.Fatal(err)
			}
			time.Sleep(300 * time.Millisecond)
			if _, err := f.WriteString(full[len(half):]); err != nil {
				t.Fatal(err)
			}
			if err := f.Close(); err != nil {
				t.Fatal(err)
			}
			closed := time.Now()
			snap := sink.waitFor(t, 3*time.Second, "the full pod", func(s snapshot) bool { return s.hasPod("web.yaml", "busybox:2") })
			t.Logf("close -> sink: %v", snap.at.Sub(closed))

			for _, s := range sink.history() {
				m, ok := s.file("web.yaml")
				if ok && !s.hasPod("web.yaml", "busybox:1") && !s.hasPod("web.yaml", "busybox:2") {
					t.Errorf("web.yaml reported half-written: err %v, %d pods", m.Err, len(m.Pods))
				}
			}
		})
	}
}

func TestDeletedFileLeavesSnapshot(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for _, n := range []string{"a", "b"} {
		writeAtomic(t, filepath.Join(dir, n+".yaml"), podManifest(n, "busybox:1"))
	}
	_, sink := start(t, DirConfig{Path: dir, Rescan: time.Hour})
	sink.waitFor(t, 5*time.Second, "a and b", func(s snapshot) bool { return len(s.files) == 2 })
	if err := os.Remove(filepath.Join(dir, "a.yaml")); err != nil {
		t.Fatal(err)
	}
	sink.waitFor(t, time.Second, "only b", func(s snapshot) bool { return slices.Equal(s.names(), []string{"b.yaml"}) })
}

// TestMissingDirectory: a missing directory is reported as empty, then
// picked up when it appears, emptied when it is deleted, and picked up
// again when it is recreated.
func TestMissingDirectory(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		sub     string // the manifest dir, below a temp dir
		rescan  time.Duration
		inotify bool
	}{
		{"parent exists, inotify only", "manifests", time.Hour, true},
		{"parent missing too, rescan", "etc/tug/manifests", 50 * time.Millisecond, true},
		{"no inotify, rescan", "manifests", 50 * time.Millisecond, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			dir := filepath.Join(t.TempDir(), tt.sub)
			var tweaks []func(*Dir)
			if !tt.inotify {
				tweaks = append(tweaks, noInotify)
			}
			_, sink := start(t, DirConfig{Path: dir, Rescan: tt.rescan}, tweaks...)
			snap := sink.waitFor(t, 5*time.Second, "the first report", func(snapshot) bool { return true })
			if len(snap.files) != 0 {
				t.Fatalf("first report %s, want empty", show(snap))
			}
			for round, image := range []string{"busybox:1", "busybox:2"} {
				if err := os.MkdirAll(dir, 0o755); err != nil {
					t.Fatal(err)
				}
				writeAtomic(t, filepath.Join(dir, "web.yaml"), podManifest("web", image))
				t0 := time.Now()
				snap := sink.waitFor(t, 3*time.Second, "web.yaml "+image, func(s snapshot) bool { return s.hasPod("web.yaml", image) })
				t.Logf("round %d: directory created -> sink: %v", round, snap.at.Sub(t0))
				if err := os.RemoveAll(dir); err != nil {
					t.Fatal(err)
				}
				sink.waitFor(t, 2*time.Second, "no files", func(s snapshot) bool { return len(s.files) == 0 })
			}
		})
	}
}

func TestFileErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		content string
		max     int64
		check   func(error) bool
	}{
		{"oversize", podManifest("big", "busybox:1") + "# " + strings.Repeat("x", 200) + "\n", 200, func(err error) bool { return errors.Is(err, ErrTooLarge) }},
		{"unknown field", podManifest("bad", "busybox:1") + "    bogus: 1\n", 0, func(err error) bool {
			var fe *pod.FieldError
			return errors.As(err, &fe)
		}},
		{"not yaml", "{[", 0, func(err error) bool { return err != nil }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			path := filepath.Join(dir, "web.yaml")
			writeAtomic(t, path, tt.content)
			_, sink := start(t, DirConfig{Path: dir, Rescan: time.Hour, MaxFileSize: tt.max})
			snap := sink.waitFor(t, 5*time.Second, "the first report", func(snapshot) bool { return true })
			m, ok := snap.file("web.yaml")
			if !ok {
				t.Fatalf("web.yaml not reported: %s", show(snap))
			}
			if m.Err == nil || !tt.check(m.Err) || !strings.Contains(m.Err.Error(), path) || len(m.Pods) != 0 {
				t.Fatalf("web.yaml: err %v, %d pods; want the %s error naming %s", m.Err, len(m.Pods), tt.name, path)
			}
			// Fixed: reported without the error.
			writeAtomic(t, path, podManifest("web", "busybox:1"))
			sink.waitFor(t, time.Second, "web.yaml fixed", func(s snapshot) bool {
				m, ok := s.file("web.yaml")
				return ok && m.Err == nil
			})
		})
	}
}

// TestRescanCatchesUnwatchedChange rewrites a manifest through a hard link
// in another directory: the kernel reports that write to watchers of the
// other directory only, so only the rescan can see it. The control case,
// with no rescan, shows that the write indeed makes no event here.
func TestRescanCatchesUnwatchedChange(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		rescan time.Duration
		seen   bool
	}{
		{"rescan", 100 * time.Millisecond, true},
		{"control: no rescan, no event", time.Hour, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			dir, elsewhere := t.TempDir(), t.TempDir()
			path := filepath.Join(dir, "web.yaml")
			writeAtomic(t, path, podManifest("web", "busybox:1"))
			link := filepath.Join(elsewhere, "web.yaml")
			if err := os.Link(path, link); err != nil {
				t.Fatal(err)
			}
			_, sink := start(t, DirConfig{Path: dir, Rescan: tt.rescan})
			sink.waitFor(t, 5*time.Second, "busybox:1", func(s snapshot) bool { return s.hasPod("web.yaml", "busybox:1") })

			if err := os.WriteFile(link, []byte(podManifest("web", "busybox:2")), 0o644); err != nil {
				t.Fatal(err)
			}
			t0 := time.Now()
			if tt.seen {
				snap := sink.waitFor(t, 3*time.Second, "busybox:2", func(s snapshot) bool { return s.hasPod("web.yaml", "busybox:2") })
				t.Logf("unwatched write -> sink: %v (rescan, then the quiet period)", snap.at.Sub(t0))
				return
			}
			time.Sleep(1500 * time.Millisecond)
			for _, s := range sink.history() {
				if s.hasPod("web.yaml", "busybox:2") {
					t.Fatal("the write through the other link made an event: this test proves nothing")
				}
			}
		})
	}
}

func TestUnchangedDirectoryIsNotReportedAgain(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, "web.yaml")
	writeAtomic(t, path, podManifest("web", "busybox:1"))
	_, sink := start(t, DirConfig{Path: dir, Rescan: 20 * time.Millisecond})
	sink.waitFor(t, 5*time.Second, "the first report", func(snapshot) bool { return true })
	now := time.Now()
	if err := os.Chtimes(path, now, now); err != nil { // an event, same bytes
		t.Fatal(err)
	}
	time.Sleep(1500 * time.Millisecond) // rescans, and the quiet period of the touched file
	if n := len(sink.history()); n != 1 {
		t.Errorf("%d reports of an unchanged directory, want 1", n)
	}
}

// TestEvents checks what a sequence of inotify events makes of a file.
func TestEvents(t *testing.T) {
	const wd = 7
	tests := []struct {
		name                   string
		masks                  []uint32
		writing, unsure, dirty bool
	}{
		{"create, write, close", []uint32{unix.IN_CREATE, unix.IN_MODIFY, unix.IN_CLOSE_WRITE}, false, false, true},
		{"create, write", []uint32{unix.IN_CREATE, unix.IN_MODIFY}, true, true, false},
		{"hard link", []uint32{unix.IN_CREATE}, false, true, false},
		{"rename in", []uint32{unix.IN_MOVED_TO}, false, false, true},
		{"truncate", []uint32{unix.IN_MODIFY}, true, false, false},
		{"chmod while writing", []uint32{unix.IN_MODIFY, unix.IN_ATTRIB}, true, false, false},
		{"delete while writing", []uint32{unix.IN_MODIFY, unix.IN_DELETE}, false, false, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := NewDir(DirConfig{Path: "/m"}, newFakeSink())
			d.dirWd, d.parentWd = wd, -1
			d.writing, d.unsure, d.dirty = map[string]bool{}, map[string]bool{}, map[string]bool{}
			for _, m := range tt.masks {
				d.handle([]event{{wd: wd, mask: m, name: "web.yaml"}})
			}
			if d.writing["web.yaml"] != tt.writing || d.unsure["web.yaml"] != tt.unsure || d.dirty["web.yaml"] != tt.dirty {
				t.Errorf("writing=%v unsure=%v dirty=%v, want %v %v %v", d.writing["web.yaml"], d.unsure["web.yaml"], d.dirty["web.yaml"], tt.writing, tt.unsure, tt.dirty)
			}
			// An overflow: what was being written is no longer known.
			d.handle([]event{{wd: -1, mask: unix.IN_Q_OVERFLOW}})
			if len(d.writing) != 0 || d.unsure["web.yaml"] != (tt.writing || tt.unsure) || !d.recheckAll {
				t.Errorf("after overflow: writing=%v unsure=%v recheckAll=%v", d.writing, d.unsure, d.recheckAll)
			}
		})
	}
}

func TestParseEvents(t *testing.T) {
	var b []byte
	add := func(wd int32, mask uint32, name string, pad int) {
		n := 0
		if name != "" {
			n = len(name) + pad
		}
		h := make([]byte, unix.SizeofInotifyEvent)
		binary.NativeEndian.PutUint32(h[0:], uint32(wd))
		binary.NativeEndian.PutUint32(h[4:], mask)
		binary.NativeEndian.PutUint32(h[12:], uint32(n))
		b = append(b, h...)
		if n > 0 {
			b = append(b, name...)
			b = append(b, make([]byte, pad)...)
		}
	}
	add(1, unix.IN_MOVED_TO, "web.yaml", 8)
	add(-1, unix.IN_Q_OVERFLOW, "", 0)
	got := parseEvents(b)
	want := []event{{1, unix.IN_MOVED_TO, "web.yaml"}, {-1, unix.IN_Q_OVERFLOW, ""}}
	if !slices.Equal(got, want) {
		t.Errorf("parseEvents = %+v, want %+v", got, want)
	}
}

func TestFileErrorLoggedOnChangeOnly(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, "web.yaml")
	var logs testutil.SyncBuffer
	log := slog.New(slog.NewTextHandler(&logs, nil))
	_, sink := start(t, DirConfig{Path: dir, Rescan: 20 * time.Millisecond, Log: log})
	sink.waitFor(t, 5*time.Second, "the first report", func(snapshot) bool { return true })

	writeAtomic(t, path, "kind: [")
	sink.waitFor(t, time.Second, "the error", func(s snapshot) bool { m, ok := s.file("web.yaml"); return ok && m.Err != nil })
	time.Sleep(200 * time.Millisecond) // rescans
	writeAtomic(t, path, podManifest("web", "busybox:1"))
	sink.waitFor(t, time.Second, "the fix", func(s snapshot) bool { return s.hasPod("web.yaml", "busybox:1") })
	time.Sleep(100 * time.Millisecond)

	out := logs.String()
	failing := strings.Count(out, "manifest file failing")
	ok := strings.Count(out, "manifest file ok again")
	if failing != 1 || ok != 1 {
		t.Errorf("logged failing %d times and ok %d times, want once each:\n%s", failing, ok, out)
	}
	for _, key := range []string{"source=file:" + dir, "file=" + path, "err="} {
		if !strings.Contains(out, key) {
			t.Errorf("log lacks %q:\n%s", key, out)
		}
	}
}

// TestTotalSizeCap: the manifest files of the directory, counted in name
// order, may not take more than MaxTotalSize bytes together; the files
// past it are reported with ErrTooLarge and no pods.
func TestTotalSizeCap(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	a, b := podManifest("a", "busybox:1"), podManifest("b", "busybox:1")
	writeAtomic(t, filepath.Join(dir, "a.yaml"), a)
	writeAtomic(t, filepath.Join(dir, "b.yaml"), b)
	_, sink := start(t, DirConfig{Path: dir, Rescan: time.Hour, MaxTotalSize: int64(len(a) + len(b) - 1)})
	snap := sink.waitFor(t, 5*time.Second, "the first report", func(snapshot) bool { return true })
	ma, _ := snap.file("a.yaml")
	mb, _ := snap.file("b.yaml")
	if ma.Err != nil || len(ma.Pods) != 1 {
		t.Errorf("a.yaml: %v, %d pods; want its pod (within the cap)", ma.Err, len(ma.Pods))
	}
	if !errors.Is(mb.Err, ErrTooLarge) || len(mb.Pods) != 0 || !strings.Contains(mb.Err.Error(), "limit") {
		t.Errorf("b.yaml: %v, %d pods; want ErrTooLarge past the directory's cap", mb.Err, len(mb.Pods))
	}
	// Room again: b is read.
	writeAtomic(t, filepath.Join(dir, "a.yaml"), "# empty\n")
	sink.waitFor(t, 5*time.Second, "b.yaml within the cap", func(s snapshot) bool {
		m, ok := s.file("b.yaml")
		return ok && m.Err == nil && len(m.Pods) == 1
	})
}
