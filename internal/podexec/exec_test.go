package podexec

import (
	"bytes"
	"errors"
	"testing"
)

func TestStartFailureCode(t *testing.T) {
	tests := []struct {
		err  string
		want int
	}{
		{`exec: "nope": executable file not found in $PATH`, 127},
		{"stat /bin/nope: no such file or directory", 127},
		{"exec: /etc: permission denied", 126},
		{"exec format error", 126},
	}
	for _, tt := range tests {
		if got := startFailureCode(errors.New(tt.err)); got != tt.want {
			t.Errorf("startFailureCode(%q) = %d, want %d", tt.err, got, tt.want)
		}
	}
}

func TestLimitedBuffer(t *testing.T) {
	var b limitedBuffer
	chunk := bytes.Repeat([]byte("x"), 40<<10)
	for range 3 {
		if n, err := b.Write(chunk); n != len(chunk) || err != nil {
			t.Fatalf("Write = %d, %v; want all of it taken", n, err)
		}
	}
	if got := len(b.Bytes()); got != execOutputMax {
		t.Errorf("kept %d bytes of %d, want the first %d", got, 3*len(chunk), execOutputMax)
	}
}
