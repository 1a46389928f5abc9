package podlogs

import (
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// readyCloser records that the logger said it is ready.
type readyCloser struct {
	once sync.Once
	ch   chan struct{}
}

func newReady() *readyCloser { return &readyCloser{ch: make(chan struct{})} }

func (r *readyCloser) Close() error {
	r.once.Do(func() { close(r.ch) })
	return nil
}

// loggerRun runs RunLogger on pipes; write feeds the streams after the
// logger is ready and must close them.
type loggerRun struct {
	stdout, stderr *io.PipeWriter
	done           chan error
}

func startLogger(t *testing.T, settings string) *loggerRun {
	t.Helper()
	outR, outW := io.Pipe()
	errR, errW := io.Pipe()
	ready := newReady()
	run := &loggerRun{stdout: outW, stderr: errW, done: make(chan error, 1)}
	go func() { run.done <- RunLogger(settings, outR, errR, ready) }()
	select {
	case <-ready.ch:
	case <-time.After(5 * time.Second):
		t.Fatal("logger never closed ready")
	}
	return run
}

func (l *loggerRun) finish(t *testing.T) error {
	t.Helper()
	l.stdout.Close()
	l.stderr.Close()
	select {
	case err := <-l.done:
		return err
	case <-time.After(5 * time.Second):
		t.Fatal("logger did not return after both streams ended")
		return nil
	}
}

func settings(path string, maxSize int64, maxFiles int) string {
	return url.Values{"path": {path}, "max-size": {fmt.Sprint(maxSize)}, "max-files": {fmt.Sprint(maxFiles)}}.Encode()
}

var criLine = regexp.MustCompile(`^(\S+) (stdout|stderr) ([FP]) (.*)$`)

type record struct {
	time    time.Time
	stream  string
	partial bool
	text    string
}

func readRecords(t *testing.T, path string) []record {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(b) > 0 && b[len(b)-1] != '\n' {
		t.Errorf("%s does not end in a newline", path)
	}
	var out []record
	for _, line := range strings.Split(strings.TrimSuffix(string(b), "\n"), "\n") {
		if line == "" && len(b) == 0 {
			break
		}
		m := criLine.FindStringSubmatch(line)
		if m == nil {
			t.Fatalf("%s: not a CRI log line: %q", path, line)
		}
		ts, err := time.Parse(time.RFC3339Nano, m[1])
		if err != nil {
			t.Fatalf("bad timestamp in %q: %v", line, err)
		}
		out = append(out, record{ts, m[2], m[3] == "P", m[4]})
	}
	return out
}

func TestRunLoggerFormat(t *testing.T) {
	path := filepath.Join(t.TempDir(), "default_web_uid", "app", "0.log")
	l := startLogger(t, settings(path, 1<<20, 5))
	before := time.Now().Add(-time.Second)
	io.WriteString(l.stdout, "hello\n\nwindows\r\n")
	io.WriteString(l.stderr, "oops\n")
	io.WriteString(l.stdout, "no newline at the end")
	if err := l.finish(t); err != nil {
		t.Fatal(err)
	}
	recs := readRecords(t, path)
	var stdout, stderr []string
	for _, r := range recs {
		if r.partial {
			t.Errorf("unexpected partial record %+v", r)
		}
		if r.time.Before(before) || r.time.After(time.Now()) {
			t.Errorf("timestamp %v out of range", r.time)
		}
		if r.stream == "stdout" {
			stdout = append(stdout, r.text)
		} else {
			stderr = append(stderr, r.text)
		}
	}
	if want := []string{"hello", "", "windows", "no newline at the end"}; fmt.Sprint(stdout) != fmt.Sprint(want) {
		t.Errorf("stdout = %q, want %q", stdout, want)
	}
	if want := []string{"oops"}; fmt.Sprint(stderr) != fmt.Sprint(want) {
		t.Errorf("stderr = %q, want %q", stderr, want)
	}
	for _, p := range []string{path, filepath.Dir(path)} {
		fi, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		want := os.FileMode(0o640)
		if fi.IsDir() {
			want = 0o755 | os.ModeDir
		}
		if fi.Mode() != want {
			t.Errorf("%s mode %v, want %v", p, fi.Mode(), want)
		}
	}
}

func TestRunLoggerLongLine(t *testing.T) {
	path := filepath.Join(t.TempDir(), "0.log")
	l := startLogger(t, settings(path, 0, 0))
	long := strings.Repeat("x", 2*maxLogLine+100)
	io.WriteString(l.stdout, long+"\nshort\n")
	if err := l.finish(t); err != nil {
		t.Fatal(err)
	}
	recs := readRecords(t, path)
	if len(recs) != 4 {
		t.Fatalf("got %d records, want 4 (P, P, F, F)", len(recs))
	}
	var joined strings.Builder
	for i, r := range recs[:3] {
		if wantP := i < 2; r.partial != wantP {
			t.Errorf("record %d partial = %v, want %v", i, r.partial, wantP)
		}
		if i < 2 && len(r.text) != maxLogLine {
			t.Errorf("partial record %d has %d bytes, want %d", i, len(r.text), maxLogLine)
		}
		joined.WriteString(r.text)
	}
	if joined.String() != long {
		t.Error("partial records do not join to the long line")
	}
	if recs[3].text != "short" || recs[3].partial {
		t.Errorf("last record = %+v", recs[3])
	}
}

func TestRunLoggerStreamsDoNotInterleave(t *testing.T) {
	path := filepath.Join(t.TempDir(), "0.log")
	l := startLogger(t, settings(path, 0, 0))
	const n = 2000
	var wg sync.WaitGroup
	for _, w := range []struct {
		w    *io.PipeWriter
		name string
	}{{l.stdout, "out"}, {l.stderr, "err"}} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range n {
				fmt.Fprintf(w.w, "%s line %d %s\n", w.name, i, strings.Repeat("z", i%100))
			}
		}()
	}
	wg.Wait()
	if err := l.finish(t); err != nil {
		t.Fatal(err)
	}
	recs := readRecords(t, path)
	if len(recs) != 2*n {
		t.Fatalf("got %d records, want %d", len(recs), 2*n)
	}
	next := map[string]int{}
	for _, r := range recs {
		name := map[string]string{"stdout": "out", "stderr": "err"}[r.stream]
		want := fmt.Sprintf("%s line %d %s", name, next[name], strings.Repeat("z", next[name]%100))
		if r.text != want {
			t.Fatalf("record %q, want %q", r.text, want)
		}
		next[name]++
	}
}

func TestRunLoggerRotation(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "0.log")
	const maxSize = 400
	l := startLogger(t, settings(path, maxSize, 2))
	const lines = 60
	for i := range lines {
		fmt.Fprintf(l.stdout, "line %02d\n", i) // one record is about 50 bytes
	}
	if err := l.finish(t); err != nil {
		t.Fatal(err)
	}
	var all []record
	for _, p := range []string{path + ".2", path + ".1", path} {
		fi, err := os.Stat(p)
		if err != nil {
			t.Fatalf("rotated file missing: %v", err)
		}
		if fi.Size() > maxSize {
			t.Errorf("%s is %d bytes, over max-size %d", p, fi.Size(), maxSize)
		}
		all = append(all, readRecords(t, p)...)
	}
	if _, err := os.Stat(path + ".3"); !os.IsNotExist(err) {
		t.Errorf("%s.3 exists beyond max-files 2", path)
	}
	// The kept files hold the newest lines, in order, without a gap.
	if len(all) == 0 || all[len(all)-1].text != fmt.Sprintf("line %02d", lines-1) {
		t.Fatalf("newest line missing: %+v", all)
	}
	first := lines - len(all)
	for i, r := range all {
		if want := fmt.Sprintf("line %02d", first+i); r.text != want {
			t.Errorf("record %d = %q, want %q", i, r.text, want)
		}
	}
}

func TestRunLoggerNoRotatedFilesKept(t *testing.T) {
	path := filepath.Join(t.TempDir(), "0.log")
	l := startLogger(t, settings(path, 200, 0))
	for i := range 20 {
		fmt.Fprintf(l.stdout, "line %02d\n", i)
	}
	if err := l.finish(t); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(path + ".1"); !os.IsNotExist(err) {
		t.Error("a rotated file was kept with max-files 0")
	}
	recs := readRecords(t, path)
	if len(recs) == 0 || recs[len(recs)-1].text != "line 19" {
		t.Errorf("records after truncation = %+v", recs)
	}
}

func TestRunLoggerAppends(t *testing.T) {
	path := filepath.Join(t.TempDir(), "0.log")
	for _, text := range []string{"first", "second"} {
		l := startLogger(t, settings(path, 1<<20, 1))
		io.WriteString(l.stdout, text+"\n")
		if err := l.finish(t); err != nil {
			t.Fatal(err)
		}
	}
	if recs := readRecords(t, path); len(recs) != 2 || recs[0].text != "first" || recs[1].text != "second" {
		t.Errorf("records = %+v", recs)
	}
}

func TestRunLoggerBadSettingsStillDrains(t *testing.T) {
	for _, s := range []string{
		"path=relative.log",
		settings("/proc/no/such/dir/0.log", 10, 1),
		"path=/tmp/x.log&max-size=big",
		"%zz",
	} {
		t.Run(s, func(t *testing.T) {
			l := startLogger(t, s) // ready is closed even so
			// Writes must not block: the logger drains what it cannot log.
			wrote := make(chan struct{})
			go func() {
				io.WriteString(l.stdout, strings.Repeat("x\n", 100000))
				close(wrote)
			}()
			select {
			case <-wrote:
			case <-time.After(5 * time.Second):
				t.Fatal("writes blocked")
			}
			if err := l.finish(t); err == nil {
				t.Error("RunLogger returned no error")
			}
		})
	}
}

func TestParseLogSettings(t *testing.T) {
	cfg, err := parseLogSettings(Settings("/var/log/pods/ns_p_u/c/0.log", 1234, 7))
	if err != nil {
		t.Fatal(err)
	}
	// The logger's max-files counts the rotated files; LogMaxFiles counts
	// the current one too.
	if cfg != (logConfig{path: "/var/log/pods/ns_p_u/c/0.log", maxSize: 1234, maxFiles: 6}) {
		t.Errorf("round trip = %+v", cfg)
	}
}

// TestLogMaxFilesCountsCurrent: --container-log-max-files N leaves at most
// N files for an attempt, the current one included (it kept N+1).
func TestLogMaxFilesCountsCurrent(t *testing.T) {
	for _, n := range []int{1, 2, 5} {
		t.Run(fmt.Sprintf("max-files=%d", n), func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "3.log")
			l := startLogger(t, Settings(path, 300, n))
			for i := range 200 {
				fmt.Fprintf(l.stdout, "line %03d\n", i)
			}
			if err := l.finish(t); err != nil {
				t.Fatal(err)
			}
			entries, err := os.ReadDir(dir)
			if err != nil {
				t.Fatal(err)
			}
			if len(entries) != n {
				var names []string
				for _, e := range entries {
					names = append(names, e.Name())
				}
				t.Errorf("%d files %v, want %d (the current one included)", len(entries), names, n)
			}
		})
	}
}

func TestPruneLogs(t *testing.T) {
	dir := t.TempDir()
	files := []string{"0.log", "0.log.1", "1.log", "2.log", "2.log.1", "2.log.2", "3.log", "10.log", "notes.txt", "1.logx", "x.log", "1.log.a"}
	for _, f := range files {
		if err := os.WriteFile(filepath.Join(dir, f), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := Prune(dir, 2); err != nil {
		t.Fatal(err)
	}
	var got []string
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		got = append(got, e.Name())
	}
	want := []string{"1.log.a", "1.logx", "10.log", "2.log", "2.log.1", "2.log.2", "3.log", "notes.txt", "x.log"}
	if !slices.Equal(got, want) {
		t.Errorf("left %v, want %v", got, want)
	}
	if err := Prune(filepath.Join(dir, "missing"), 5); err != nil {
		t.Errorf("missing dir: %v", err)
	}
}
