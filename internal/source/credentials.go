package source

import (
	"bufio"
	"bytes"
	"fmt"
	"net/http"
	"os"
	"strings"
)

// ReadHeaderFile reads the headers of --manifest-url-header-file: one
// "Name: Value" per line; blank lines and lines starting with "#" are
// skipped. Errors name the line, never its text (it holds secrets).
func ReadHeaderFile(path string) (http.Header, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("source: header file: %w", err)
	}
	h := http.Header{}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		name, value, ok := strings.Cut(line, ":")
		name = strings.TrimSpace(name)
		if !ok || name == "" || strings.ContainsAny(name, " \t") {
			return nil, fmt.Errorf("source: header file %s:%d: not \"Name: Value\"", path, n)
		}
		h.Add(name, strings.TrimSpace(value))
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("source: header file %s: %w", path, err)
	}
	return h, nil
}
