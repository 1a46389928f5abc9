package userns

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"tug/internal/pod"
	"tug/internal/testutil"
)

// hostFiles writes subuid, subgid and login.defs (a nil content: no such
// file) into a directory of the test's.
func hostFiles(t *testing.T, subuid, subgid, loginDefs *string) HostIDFiles {
	t.Helper()
	dir := t.TempDir()
	f := HostIDFiles{SubUID: filepath.Join(dir, "subuid"), SubGID: filepath.Join(dir, "subgid"), LoginDefs: filepath.Join(dir, "login.defs")}
	for path, data := range map[string]*string{f.SubUID: subuid, f.SubGID: subgid, f.LoginDefs: loginDefs} {
		if data == nil {
			continue
		}
		if err := os.WriteFile(path, []byte(*data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return f
}

func ptr(s string) *string { return &s }

// debianLoginDefs is what Debian 12's /etc/login.defs says of subordinate
// IDs.
const debianLoginDefs = `# comment
UID_MIN			 1000
SUB_UID_MIN		   100000
SUB_UID_MAX		600100000
SUB_UID_COUNT		    65536
SUB_GID_MIN		   100000
SUB_GID_MAX		600100000
SUB_GID_COUNT		    65536
`

// TestDefaultRangeAvoidsUseradd: tug starts on a stock Debian machine,
// whatever users useradd adds.
func TestDefaultRangeAvoidsUseradd(t *testing.T) {
	for name, defs := range map[string]*string{"Debian's login.defs": ptr(debianLoginDefs), "no login.defs": nil} {
		t.Run(name, func(t *testing.T) {
			ids, err := hostFiles(t, ptr(""), nil, defs).Read()
			if err != nil {
				t.Fatal(err)
			}
			r, from, err := ids.NodeRange("")
			if err != nil || r.String() != DefaultRange || !strings.Contains(from, "default") {
				t.Fatalf("NodeRange = %v, %q, %v; want the default range", r, from, err)
			}
			if err := ids.Check(r, from); err != nil {
				t.Errorf("the default range: %v", err)
			}
			if r.First < 1<<31 && uint64(r.First)+r.Length > 1<<31 {
				t.Errorf("the default range %v crosses 2^31", r)
			}
		})
	}
}

func TestCheck(t *testing.T) {
	tests := []struct {
		name                   string
		subuid, subgid, defs   *string
		rng                    string
		wantFile, wantEntry    string
		wantIDs                string
		wantOK                 bool
		wantUseraddExplanation bool
	}{
		{name: "the first useradd user's IDs reach a block", subuid: ptr("alice:100000:65536\nbob:165536:65536\n"), defs: ptr(debianLoginDefs),
			rng: "65536/4294836224", wantFile: "subuid", wantEntry: `:1: "alice:100000:65536"`, wantIDs: "100000-165535"},
		{name: "a subgid entry", subuid: ptr(""), subgid: ptr("#x\nbad line\ncarol:2000000000:65536\n"), defs: ptr("SUB_UID_MAX 1\nSUB_GID_MAX 1\n"),
			rng: "1879048192/268304384", wantFile: "subgid", wantEntry: `:3: "carol:2000000000:65536"`, wantIDs: "2000000000-2000065535"},
		{name: "login.defs' range, no entry yet", subuid: ptr(""), defs: ptr(debianLoginDefs),
			rng: "65536/4294836224", wantFile: "login.defs", wantEntry: `:4: "SUB_UID_MIN..SUB_UID_MAX = 100000..600100000"`, wantIDs: "100000-600100000", wantUseraddExplanation: true},
		{name: "login.defs' defaults when it is missing", defs: nil,
			rng: "65536/65536", wantFile: "login.defs", wantEntry: ": SUB_UID_MIN..SUB_UID_MAX = 100000..600100000 (shadow's default where not set)", wantIDs: "100000-131071", wantUseraddExplanation: true},
		{name: "login.defs in hex, moved up", defs: ptr("SUB_UID_MIN 0x80000000\nSUB_UID_MAX 0x90000000\nSUB_GID_MAX 1\n"),
			rng: "4294836224/65536", wantOK: true},
		{name: "login.defs moved onto the range", defs: ptr("SUB_UID_MIN 0x80000000\nSUB_UID_MAX 0x90000000\nSUB_GID_MIN 0x80000000\nSUB_GID_MAX 0x90000000\n"),
			rng: "2415853568/65536", wantFile: "login.defs", wantEntry: `:2: "SUB_UID_MIN..SUB_UID_MAX = 2147483648..2415919104"`, wantIDs: "2415853568-2415919103", wantUseraddExplanation: true},
		{name: "login.defs MAX below MIN: useradd gives none", defs: ptr("SUB_UID_MIN 200000\nSUB_UID_MAX 100000\nSUB_GID_MIN 200000\nSUB_GID_MAX 100000\n"),
			rng: "65536/4294836224", wantOK: true},
		{name: "an entry elsewhere", subuid: ptr("dave:65536:65536\n"), defs: ptr(debianLoginDefs),
			rng: "1879048192/65536", wantOK: true},
		{name: "a numeric owner counts", subuid: ptr("1000:1879048192:65536\n"), defs: ptr(debianLoginDefs),
			rng: "1879048192/65536", wantFile: "subuid", wantEntry: `:1: "1000:1879048192:65536"`, wantIDs: "1879048192-1879113727"},
		{name: "tug's own entry inside useradd's range", subuid: ptr("alice:100000:65536\ntug:983040:655360\n"), subgid: ptr("tug:983040:655360\n"), defs: ptr(debianLoginDefs),
			rng: "983040/655360", wantOK: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			files := hostFiles(t, tt.subuid, tt.subgid, tt.defs)
			ids, err := files.Read()
			if err != nil {
				t.Fatal(err)
			}
			r, err := ParseRange(tt.rng)
			if err != nil {
				t.Fatal(err)
			}
			err = ids.Check(r, "--user-namespace-range "+tt.rng)
			if tt.wantOK {
				if err != nil {
					t.Fatalf("Check: %v", err)
				}
				return
			}
			if !errors.Is(err, ErrOverlap) {
				t.Fatalf("Check = %v, want ErrOverlap", err)
			}
			msg := err.Error()
			for _, want := range []string{filepath.Join(filepath.Dir(files.SubUID), tt.wantFile) + tt.wantEntry, tt.wantIDs, tt.rng} {
				if !strings.Contains(msg, want) {
					t.Errorf("error does not name %q:\n%s", want, msg)
				}
			}
			if got := strings.Contains(msg, "useradd gives"); got != tt.wantUseraddExplanation {
				t.Errorf("error explains useradd: %v, want %v:\n%s", got, tt.wantUseraddExplanation, msg)
			}
		})
	}
}

func TestNodeRange(t *testing.T) {
	tests := []struct {
		name           string
		subuid, subgid string
		configured     string
		want           string
		wantErr        string
	}{
		{name: "configured wins", subuid: "tug:1000000:655360\n", subgid: "tug:1000000:655360\n", configured: "131072/65536", want: "131072/65536"},
		{name: "tug's entries", subuid: "alice:100000:65536\ntug:655360:655360\n", subgid: "tug:655360:655360\nalice:100000:65536\n", want: "655360/655360"},
		{name: "no entry of tug's", subuid: "alice:100000:65536\n", subgid: "alice:100000:65536\n", want: DefaultRange},
		{name: "tug in subuid only", subuid: "tug:655360:655360\n", wantErr: "none in"},
		{name: "tug in subgid only", subgid: "tug:655360:655360\n", wantErr: "none in"},
		{name: "two entries", subuid: "tug:655360:65536\ntug:786432:65536\n", subgid: "tug:655360:65536\n", wantErr: "2 entries"},
		{name: "entries differ", subuid: "tug:655360:65536\n", subgid: "tug:786432:65536\n", wantErr: "differ"},
		{name: "not on a block boundary", subuid: "tug:100000:65536\n", subgid: "tug:100000:65536\n", wantErr: "multiple of 65536"},
		{name: "not whole blocks", subuid: "tug:655360:1000\n", subgid: "tug:655360:1000\n", wantErr: "multiple of 65536"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ids, err := hostFiles(t, &tt.subuid, &tt.subgid, ptr(debianLoginDefs)).Read()
			if err != nil {
				t.Fatal(err)
			}
			r, from, err := ids.NodeRange(tt.configured)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("NodeRange = %v, %v; want an error saying %q", r, err, tt.wantErr)
				}
				return
			}
			if err != nil || r.String() != tt.want {
				t.Fatalf("NodeRange = %v (%s), %v; want %s", r, from, err, tt.want)
			}
			// tug's own entry is its own: useradd hands none of it out.
			if err := ids.Check(r, from); err != nil && tt.configured == "" {
				t.Errorf("Check of %s: %v", from, err)
			}
		})
	}
}

// TestReadUnreadable: a file that cannot be read (not merely absent) is
// an error: the IDs local users may map are unknown.
func TestReadUnreadable(t *testing.T) {
	f := hostFiles(t, nil, nil, nil)
	if _, err := f.Read(); err != nil {
		t.Fatalf("absent files: %v", err)
	}
	if err := os.Mkdir(f.SubGID, 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := f.Read(); err == nil || !strings.Contains(err.Error(), f.SubGID) {
		t.Errorf("Read with %s a directory: %v, want an error naming it", f.SubGID, err)
	}
}

// TestMappingChecksEachAllocation: a user added after the allocator
// opened never gets a block handed out that overlaps its subordinate IDs;
// a pod that already holds such a block keeps it; the overlap is logged
// once; unreadable files give no block.
func TestMappingChecksEachAllocation(t *testing.T) {
	files := hostFiles(t, ptr(""), ptr(""), ptr(debianLoginDefs))
	rng := Range{First: 0x70000000, Length: 3 * BlockSize}
	log := testutil.NewWarnLog(t)
	a, err := Open(filepath.Join(t.TempDir(), "userns.json"), rng, &files, log.Logger)
	if err != nil {
		t.Fatal(err)
	}
	m1, err := a.Mapping("pod-1")
	if err != nil || m1.HostID != 0x70000000 {
		t.Fatalf("pod-1: %v, %v", m1, err)
	}
	// A user whose IDs cover the first two blocks arrives.
	if err := os.WriteFile(files.SubUID, []byte("mallory:1879048192:131072\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if got, err := a.Mapping("pod-1"); got != m1 || err != nil {
		t.Errorf("pod-1 again: %v, %v; want its block %v", got, err, m1)
	}
	m2, err := a.Mapping("pod-2")
	if err != nil || m2.HostID != 0x70000000+2*BlockSize {
		t.Fatalf("pod-2: %v, %v; want the third block, past mallory's IDs", m2, err)
	}
	if _, err := a.Mapping("pod-3"); !errors.Is(err, ErrExhausted) || !strings.Contains(err.Error(), "overlap") {
		t.Errorf("pod-3: %v, want ErrExhausted naming the overlap", err)
	}
	if got := log.Files(); !slices.Equal(got, []string{files.SubUID}) {
		t.Errorf("warnings name %q, want %s once", got, files.SubUID)
	}
	if err := a.Release("pod-1"); err != nil {
		t.Fatal(err)
	}
	if got, err := a.Mapping("pod-4"); !errors.Is(err, ErrExhausted) {
		t.Errorf("pod-4 after pod-1's block (in mallory's IDs) was freed: %v, %v; want ErrExhausted", got, err)
	}
	// The files unreadable: no block.
	if err := os.Remove(files.SubGID); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(files.SubGID, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(files.SubUID, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if got, err := a.Mapping("pod-5"); err == nil {
		t.Errorf("pod-5 with %s unreadable: %v, want an error", files.SubGID, got)
	}
}

// TestRestoreReservesForeignMappings: a running container whose mapping
// is not a block of the range (another tool's, or another range's) keeps
// every block it covers from being handed out.
func TestRestoreReservesForeignMappings(t *testing.T) {
	rng := Range{First: 65536, Length: 4 * BlockSize}
	a, err := Open(filepath.Join(t.TempDir(), "userns.json"), rng, nil, testutil.Logger(t))
	if err != nil {
		t.Fatal(err)
	}
	// One covers the first block's end and the second block's start, the
	// other the fourth block and the one past the range.
	if err := a.Restore(map[string]pod.IDMapping{
		"odd":  {HostID: 65536 + 100, Size: BlockSize},
		"long": {HostID: 65536 + 3*BlockSize, Size: 2 * BlockSize},
	}); err != nil {
		t.Fatal(err)
	}
	if got, err := a.Mapping("new"); err != nil || got.HostID != 65536+2*BlockSize {
		t.Errorf("new pod: %v, %v; want the third block, the only one no mapping covers", got, err)
	}
	if got, err := a.Mapping("newer"); !errors.Is(err, ErrExhausted) {
		t.Errorf("newer pod: %v, %v; want ErrExhausted", got, err)
	}
}
