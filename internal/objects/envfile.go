package objects

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"strings"

	"tug/internal/pod"
)

// EnvFiles reads the env files of env valueFrom.fileKeyRef: the file at
// path in the pod's emptyDir volume. A missing file is an error wrapping
// fs.ErrNotExist.
type EnvFiles interface {
	ReadEnvFile(p *pod.Pod, volume, path string) ([]byte, error)
}

// EnvFileError says what is wrong with an env file, or that it or its key
// is missing. It wraps pod.ErrCreateContainerConfig: the container does not
// start, as with the kubelet.
type EnvFileError struct {
	Volume, Path string
	Msg          string
}

func (e *EnvFileError) Error() string {
	return fmt.Sprintf("env file %s in volume %s: %s", e.Path, e.Volume, e.Msg)
}

// Unwrap makes errors.Is(err, pod.ErrCreateContainerConfig) true.
func (e *EnvFileError) Unwrap() error { return pod.ErrCreateContainerConfig }

// fileValue reads one fileKeyRef; ok is false for an optional file or key
// that is missing.
func fileValue(p *pod.Pod, fk *pod.FileKeySelector, files EnvFiles) (string, bool, error) {
	fail := func(format string, args ...any) (string, bool, error) {
		return "", false, &EnvFileError{Volume: fk.VolumeName, Path: fk.Path, Msg: fmt.Sprintf(format, args...)}
	}
	if files == nil {
		return fail("no env files on this runtime")
	}
	data, err := files.ReadEnvFile(p, fk.VolumeName, fk.Path)
	switch {
	case errors.Is(err, fs.ErrNotExist) && optional(fk.Optional):
		return "", false, nil
	case errors.Is(err, fs.ErrNotExist):
		return fail("not found")
	case err != nil:
		return fail("%v", err)
	}
	vars, err := ParseEnvFile(data)
	if err != nil {
		return fail("%v", err)
	}
	v, ok := vars[fk.Key]
	switch {
	case ok:
		return v, true, nil
	case optional(fk.Optional):
		return "", false, nil
	}
	return fail("no key %s", fk.Key)
}

// ParseEnvFile reads an env file as Kubernetes does: one KEY=VALUE a line,
// the value everything after the first '=' as written (no quotes removed,
// no expansion); blank lines and lines starting with '#' are skipped; a
// key given twice has its last value. A key must be a valid variable name
// of at most 128 characters, and the file at most 64 KiB.
func ParseEnvFile(data []byte) (map[string]string, error) {
	if len(data) > pod.MaxEnvFileSize {
		return nil, fmt.Errorf("%d bytes, more than %d", len(data), pod.MaxEnvFileSize)
	}
	vars := make(map[string]string)
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 0, 4096), pod.MaxEnvFileSize+1)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSuffix(sc.Text(), "\r")
		trimmed := strings.TrimSpace(line)
		if trimmed == "" || strings.HasPrefix(trimmed, "#") {
			continue
		}
		key, value, ok := strings.Cut(line, "=")
		key = strings.TrimSpace(key)
		switch {
		case !ok:
			return nil, fmt.Errorf("line %d: no '=': want KEY=VALUE", n)
		case len(key) > pod.MaxEnvFileKeyLen:
			return nil, fmt.Errorf("line %d: key of %d characters, more than %d", n, len(key), pod.MaxEnvFileKeyLen)
		case !pod.IsEnvVarName(key):
			return nil, fmt.Errorf("line %d: invalid key %.40q: %s", n, key, pod.EnvVarNameMsg)
		}
		vars[key] = value
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	return vars, nil
}
