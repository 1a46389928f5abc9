package manifest

import (
	"bytes"
	"fmt"
	"os"
	"testing"
)

// BenchmarkParse measures decode, defaults, validation and naming of files
// of growing size, built from testdata/good/full.yaml (one pod with every
// field) repeated as YAML documents.
func BenchmarkParse(b *testing.B) {
	full, err := os.ReadFile("testdata/good/full.yaml")
	if err != nil {
		b.Fatal(err)
	}
	for _, n := range []int{1, 10, 100} {
		var buf bytes.Buffer
		for i := range n {
			fmt.Fprintf(&buf, "---\n%s", bytes.Replace(full, []byte("name: gateway\n"), fmt.Appendf(nil, "name: gateway-%d\n", i), 1))
		}
		data := buf.Bytes()
		opts := testOptions("bench.yaml")
		b.Run(fmt.Sprintf("pods=%d", n), func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(data)))
			for b.Loop() {
				pods, err := Parse(data, opts)
				if err != nil || len(pods) != n {
					b.Fatalf("Parse: %d pods, %v", len(pods), err)
				}
			}
		})
	}
}
