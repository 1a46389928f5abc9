package podlogs

import (
	"errors"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// fakeJournal keeps the entries sent (their messages copied, as journald
// has them once Send returns); fail makes the next sends fail.
type fakeJournal struct {
	entries []JournalEntry
	fail    int
}

func (j *fakeJournal) Send(e JournalEntry) error {
	if j.fail > 0 {
		j.fail--
		return errors.New("journald is away")
	}
	e.Message = append([]byte(nil), e.Message...)
	j.entries = append(j.entries, e)
	return nil
}

func TestNewJournalFields(t *testing.T) {
	f := newJournalFields("web_0123456789abcdef_2", "/var/log/pods/prod_web-node1_9f1c-uid/app/2.log")
	want := map[string]string{
		"CONTAINER_NAME":    "app",
		"CONTAINER_ID":      "219ba50982e8", // sha256 of the full ID
		"CONTAINER_ID_FULL": "web_0123456789abcdef_2",
		"CONTAINER_TAG":     "web-node1/app",
		"SYSLOG_IDENTIFIER": "web-node1/app",
		"TUG_POD_NAMESPACE": "prod",
		"TUG_POD_NAME":      "web-node1",
		"TUG_POD_UID":       "9f1c-uid",
	}
	if !maps.Equal(f.full, want) {
		t.Errorf("fields = %v, want %v", f.full, want)
	}
	want["CONTAINER_PARTIAL_MESSAGE"] = "true"
	if !maps.Equal(f.partial, want) {
		t.Errorf("partial fields = %v, want %v", f.partial, want)
	}
}

func TestPumpJournal(t *testing.T) {
	long := strings.Repeat("x", maxLogLine+10)
	tests := []struct {
		name    string
		noFile  bool
		maxSize int64
	}{
		{name: "file+journald", maxSize: 1 << 20},
		{name: "file+journald rotating within a step", maxSize: 100},
		{name: "journald", noFile: true, maxSize: 1 << 20},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			cri := filepath.Join(dir, "default_web_uid1", "app", "0.log")
			base := filepath.Join(dir, "pods", "uid1", "logs", "app", "0")
			j := &fakeJournal{}
			cfg := logConfig{maxSize: tt.maxSize, maxFiles: 40, journal: j, noFile: tt.noFile}
			p, err := createPump("cid", cri, base, cfg, newScratch())
			if err != nil {
				t.Fatal(err)
			}
			out, errp, _ := rawPaths(base)
			appendRaw(t, out, "hello\nwindows\r\n"+long+"\nunfinished")
			appendRaw(t, errp, "oops\n")
			if _, err := p.step(); err != nil {
				t.Fatal(err)
			}
			appendRaw(t, out, " line\nno newline at the end")
			finishPump(t, p)

			type entry struct {
				msg     string
				prio    int
				partial bool
			}
			var got []entry
			for _, e := range j.entries {
				if e.Fields["CONTAINER_ID_FULL"] != "cid" || e.Fields["TUG_POD_UID"] != "uid1" ||
					e.Fields["CONTAINER_NAME"] != "app" || e.Fields["TUG_POD_NAME"] != "web" {
					t.Errorf("entry %q has fields %v", e.Message, e.Fields)
				}
				got = append(got, entry{string(e.Message), e.Priority, e.Fields["CONTAINER_PARTIAL_MESSAGE"] == "true"})
			}
			want := []entry{
				{"hello", 6, false},
				{"windows", 6, false},
				{long[:maxLogLine], 6, true},
				{"xxxxxxxxxx", 6, false},
				{"oops", 3, false},
				{"unfinished line", 6, false},
				{"no newline at the end", 6, false},
			}
			if len(got) != len(want) {
				t.Fatalf("got %d entries, want %d: %v", len(got), len(want), got)
			}
			for i := range want {
				if got[i] != want[i] {
					t.Errorf("entry %d = %.40v, want %.40v", i, got[i], want[i])
				}
			}
			_, err = os.Stat(cri)
			switch {
			case tt.noFile && err == nil:
				t.Errorf("journald alone wrote %s", cri)
			case !tt.noFile:
				if recs := attemptRecords(t, cri, 40); len(recs) != len(want) {
					t.Errorf("CRI file has %d records, want %d", len(recs), len(want))
				}
			}
		})
	}
}

// A send that fails leaves the step uncommitted: the lines are sent again
// at the next step (at least once), none is lost.
func TestPumpJournalSendFails(t *testing.T) {
	dir := t.TempDir()
	cri := filepath.Join(dir, "default_web_uid1", "app", "0.log")
	base := filepath.Join(dir, "pods", "uid1", "logs", "app", "0")
	j := &fakeJournal{}
	p, err := createPump("cid", cri, base, logConfig{journal: j, noFile: true}, newScratch())
	if err != nil {
		t.Fatal(err)
	}
	out, _, _ := rawPaths(base)
	appendRaw(t, out, "one\ntwo\n")
	j.fail = 1
	if _, err := p.step(); err == nil {
		t.Fatal("step with journald away: no error")
	}
	appendRaw(t, out, "three\n")
	if _, err := p.step(); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range j.entries {
		got = append(got, string(e.Message))
	}
	if strings.Join(got, ",") != "one,two,three" {
		t.Errorf("entries = %q, want one, two, three", got)
	}
}

// gotRecords keeps the records a stream gives, and where the files (here:
// the entries there were) ended.
type gotRecords struct {
	records []string
	end     int // records before EndOfFiles, -1: not called
}

func (s *gotRecords) Record(line []byte) error {
	s.records = append(s.records, string(line))
	return nil
}
func (s *gotRecords) EndOfFiles() error { s.end = len(s.records); return nil }
func (s *gotRecords) Flush()            {}

// fakeJournalctl writes a journalctl that prints entries, and with
// --follow the followed ones and then waits to be killed, recording its
// arguments in args.
func fakeJournalctl(t *testing.T, entries, followed string) (bin, args string) {
	t.Helper()
	dir := t.TempDir()
	bin, args = filepath.Join(dir, "journalctl"), filepath.Join(dir, "args")
	script := "#!/bin/sh\necho \"$@\" >>" + args + "\ncase \"$*\" in *--follow*) cat <<'EOF'\n" + followed + "\nEOF\nexec sleep 60;;\n" +
		"*) cat <<'EOF'\n" + entries + "\nEOF\n;; esac\n"
	if err := os.WriteFile(bin, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return bin, args
}

func TestJournalReaderStream(t *testing.T) {
	// tug's entries carry the trusted fields journald stamps on what root
	// sends from tug.service; the others (a local user's, another root
	// unit's, one without _UID) claim the same container but are not
	// shown, even from a journalctl that ignored its matches (this fake).
	const tug = `"_UID":"0","_SYSTEMD_UNIT":"tug.service","CONTAINER_ID_FULL":"web_1_0"`
	entries := `{"__CURSOR":"c1","__REALTIME_TIMESTAMP":"1700000000000001","PRIORITY":"6","MESSAGE":"hello",` + tug + `}
{"__CURSOR":"c2","__REALTIME_TIMESTAMP":"1700000000000002","PRIORITY":"3","MESSAGE":"oops",` + tug + `}
{"__CURSOR":"f1","__REALTIME_TIMESTAMP":"1700000000000002","PRIORITY":"3","MESSAGE":"forged by uid 1000","_UID":"1000","_SYSTEMD_UNIT":"tug.service","CONTAINER_ID_FULL":"web_1_0"}
{"__CURSOR":"f2","__REALTIME_TIMESTAMP":"1700000000000002","PRIORITY":"3","MESSAGE":"forged by another unit","_UID":"0","_SYSTEMD_UNIT":"cron.service","CONTAINER_ID_FULL":"web_1_0"}
{"__CURSOR":"f3","__REALTIME_TIMESTAMP":"1700000000000002","PRIORITY":"3","MESSAGE":"no _UID","_SYSTEMD_UNIT":"tug.service","CONTAINER_ID_FULL":"web_1_0"}
{"__CURSOR":"c3","__REALTIME_TIMESTAMP":"1700000000000003","PRIORITY":"6","MESSAGE":"part","CONTAINER_PARTIAL_MESSAGE":"true",` + tug + `}
{"__CURSOR":"c4","__REALTIME_TIMESTAMP":"1700000000000004","PRIORITY":"6","MESSAGE":[104,105,255],` + tug + `}
not json`
	followed := `{"__CURSOR":"f4","__REALTIME_TIMESTAMP":"1700000001000000","PRIORITY":"6","MESSAGE":"forged later","_UID":"65534","_SYSTEMD_UNIT":"tug.service","CONTAINER_ID_FULL":"web_1_0"}
{"__CURSOR":"c5","__REALTIME_TIMESTAMP":"1700000001000000","PRIORITY":"6","MESSAGE":"later",` + tug + `}`
	tests := []struct {
		name   string
		follow bool
		want   []string
		args   string
	}{
		{name: "entries", want: []string{
			"2023-11-14T22:13:20.000001Z stdout F hello",
			"2023-11-14T22:13:20.000002Z stderr F oops",
			"2023-11-14T22:13:20.000003Z stdout P part",
			"2023-11-14T22:13:20.000004Z stdout F hi\xff",
		}, args: "--no-pager --all --output=json CONTAINER_ID_FULL=web_1_0 _UID=0 _SYSTEMD_UNIT=tug.service\n"},
		{name: "follow", follow: true, want: []string{
			"2023-11-14T22:13:20.000001Z stdout F hello",
			"2023-11-14T22:13:20.000002Z stderr F oops",
			"2023-11-14T22:13:20.000003Z stdout P part",
			"2023-11-14T22:13:20.000004Z stdout F hi\xff",
			"2023-11-14T22:13:21Z stdout F later",
		}, args: "--no-pager --all --output=json CONTAINER_ID_FULL=web_1_0 _UID=0 _SYSTEMD_UNIT=tug.service\n" +
			"--no-pager --all --output=json --follow --after-cursor=c4 CONTAINER_ID_FULL=web_1_0 _UID=0 _SYSTEMD_UNIT=tug.service\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			bin, args := fakeJournalctl(t, entries, followed)
			s := &gotRecords{end: -1}
			err := JournalReader{Journalctl: bin, Writer: "_SYSTEMD_UNIT=tug.service"}.Stream(t.Context(), "web_1_0", s, tt.follow, func() bool { return false })
			if err != nil {
				t.Fatal(err)
			}
			if strings.Join(s.records, "\n") != strings.Join(tt.want, "\n") {
				t.Errorf("records:\n%s\nwant:\n%s", strings.Join(s.records, "\n"), strings.Join(tt.want, "\n"))
			}
			if s.end != 4 {
				t.Errorf("EndOfFiles after %d records, want 4", s.end)
			}
			if got, _ := os.ReadFile(args); string(got) != tt.args {
				t.Errorf("journalctl ran with:\n%s\nwant:\n%s", got, tt.args)
			}
		})
	}
}

func TestJournalWriter(t *testing.T) {
	tests := []struct {
		name, cgroup, want string
	}{
		{"cgroup v2 service", "0::/system.slice/tug.service\n", "_SYSTEMD_UNIT=tug.service"},
		{"delegated sub-cgroup", "0::/system.slice/tug.service/agent\n", "_SYSTEMD_UNIT=tug.service"},
		{"nested slices", "0::/system.slice/edge.slice/tug-b.service\n", "_SYSTEMD_UNIT=tug-b.service"},
		{"hybrid: name=systemd wins", "12:pids:/x\n1:name=systemd:/system.slice/tug.service\n0::/system.slice/other.service\n", "_SYSTEMD_UNIT=tug.service"},
		{"v1 without systemd", "4:memory:/\n1:cpu:/\n", "_PID=4242"},
		{"a session scope", "0::/user.slice/user-0.slice/session-3.scope\n", "_PID=4242"},
		{"a container's root", "0::/\n", "_PID=4242"},
		{"unreadable", "", "_PID=4242"},
		{"a bare .service", "0::/.service\n", "_PID=4242"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := JournalWriter([]byte(tt.cgroup), 4242); got != tt.want {
				t.Errorf("JournalWriter(%q) = %q, want %q", tt.cgroup, got, tt.want)
			}
		})
	}
}

// TestJournalReaderZeroValueTrustsRootOnly: a reader given no writer
// still reads only what root sent.
func TestJournalReaderZeroValueTrustsRootOnly(t *testing.T) {
	entries := `{"__CURSOR":"c1","__REALTIME_TIMESTAMP":"1700000000000001","MESSAGE":"root","_UID":"0","CONTAINER_ID_FULL":"c"}
{"__CURSOR":"c2","__REALTIME_TIMESTAMP":"1700000000000002","MESSAGE":"user","_UID":"1000","CONTAINER_ID_FULL":"c"}`
	bin, args := fakeJournalctl(t, entries, "")
	s := &gotRecords{end: -1}
	if err := (JournalReader{Journalctl: bin}).Stream(t.Context(), "c", s, false, nil); err != nil {
		t.Fatal(err)
	}
	if want := []string{"2023-11-14T22:13:20.000001Z stdout F root"}; strings.Join(s.records, "\n") != strings.Join(want, "\n") {
		t.Errorf("records %q, want %q", s.records, want)
	}
	if got, _ := os.ReadFile(args); string(got) != "--no-pager --all --output=json CONTAINER_ID_FULL=c _UID=0\n" {
		t.Errorf("journalctl ran with %q", got)
	}
}
