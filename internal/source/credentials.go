package source

import (
	"bufio"
	"bytes"
	"crypto/ed25519"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
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

// LoadPublicKeys reads the verify keys: each path is a key file (see
// ParsePublicKey) or a directory whose *.pem files are each one key. Any of
// the keys verifies a bundle, so a fleet can roll to a new key without a
// device refusing what it is sent in between.
func LoadPublicKeys(paths []string) ([]ed25519.PublicKey, error) {
	var keys []ed25519.PublicKey
	for _, p := range paths {
		files := []string{p}
		if fi, err := os.Stat(p); err == nil && fi.IsDir() {
			if files, err = filepath.Glob(filepath.Join(p, "*.pem")); err != nil {
				return nil, fmt.Errorf("source: verify keys %s: %w", p, err)
			}
			if len(files) == 0 {
				return nil, fmt.Errorf("source: verify keys %s: no *.pem file", p)
			}
		}
		for _, f := range files {
			data, err := os.ReadFile(f)
			if err != nil {
				return nil, fmt.Errorf("source: verify key: %w", err)
			}
			k, err := ParsePublicKey(data)
			if err != nil {
				return nil, fmt.Errorf("source: verify key %s: %w", f, err)
			}
			keys = append(keys, k)
		}
	}
	return keys, nil
}
