package main

import (
	"strings"
	"testing"
)

func TestParseTrace(t *testing.T) {
	const dir = "/tmp/w"
	tests := []struct {
		name  string
		trace string
		want  map[string]counts
	}{
		{"atomic write", `
10 openat(AT_FDCWD</>, "/tmp/w/root/remote-write/.00000000000000000007-412.rw.tmp-99", O_RDWR|O_CREAT|O_EXCL|O_CLOEXEC, 0600) = 7</tmp/w/root/remote-write/.00000000000000000007-412.rw.tmp-99>
10 write(7</tmp/w/root/remote-write/.00000000000000000007-412.rw.tmp-99>, ""..., 5000) = 5000
10 fsync(7</tmp/w/root/remote-write/.00000000000000000007-412.rw.tmp-99>) = 0
10 renameat(AT_FDCWD</>, "/tmp/w/root/remote-write/.00000000000000000007-412.rw.tmp-99", AT_FDCWD</>, "/tmp/w/root/remote-write/00000000000000000007-412.rw") = 0
10 fsync(8</tmp/w/root/remote-write>) = 0
11 unlinkat(AT_FDCWD</>, "/tmp/w/root/remote-write/00000000000000000007-412.rw", 0) = 0`,
			map[string]counts{
				"root/remote-write/.#-#.rw.tmp-#": {writes: 1, bytes: 5000, fsyncs: 1, created: 1},
				"root/remote-write/#-#.rw":        {renames: 1, removes: 1},
				"root/remote-write":               {fsyncs: 1},
			}},
		{"split call, sockets and failures left out", `
12 write(3</tmp/w/tug.log>, ""..., 80 <unfinished ...>
13 write(5<socket:[1234]>, ""..., 20) = 20
12 <... write resumed>) = 80
13 openat(AT_FDCWD</>, "/tmp/w/root/x", O_RDONLY|O_CLOEXEC) = 9</tmp/w/root/x>
13 unlinkat(AT_FDCWD</>, "/tmp/w/root/gone", 0) = -1 ENOENT (No such file or directory)`,
			map[string]counts{"tug.log": {writes: 1, bytes: 80}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := parseTrace(strings.NewReader(tt.trace), dir)
			if err != nil {
				t.Fatal(err)
			}
			got := map[string]counts{}
			for k, c := range s.byKey {
				got[k] = *c
			}
			if len(got) != len(tt.want) {
				t.Errorf("keys %v, want %v", got, tt.want)
			}
			for k, want := range tt.want {
				if got[k] != want {
					t.Errorf("%s: %+v, want %+v", k, got[k], want)
				}
			}
		})
	}
}
