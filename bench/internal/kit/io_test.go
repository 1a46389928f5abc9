package kit

import (
	"strings"
	"testing"
)

func TestParseIO(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		want    IO
		wantErr bool
	}{
		{"proc", "rchar: 1\nwchar: 2\nsyscr: 3\nsyscw: 4\nread_bytes: 5\nwrite_bytes: 4096\ncancelled_write_bytes: 512\n", IO{4096, 512, 4}, false},
		{"missing", "rchar: 1\nwrite_bytes: 4096\n", IO{}, true},
		{"not a number", "syscw: 4\nwrite_bytes: x\ncancelled_write_bytes: 0\n", IO{}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseIO(strings.NewReader(tt.in))
			if (err != nil) != tt.wantErr || got != tt.want {
				t.Errorf("ParseIO = %+v, %v; want %+v, error %v", got, err, tt.want, tt.wantErr)
			}
		})
	}
}
