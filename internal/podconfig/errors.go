package podconfig

import "fmt"

// DuplicateError is recorded on a file that defines a pod (namespace/name)
// which another file defines too, and whose copy is applied instead (see
// Store for the rule). Find it with errors.As.
type DuplicateError struct {
	Pod    string // "namespace/name"
	File   string // the file whose pod is applied
	Source string // that file's source
}

func (e *DuplicateError) Error() string {
	return fmt.Sprintf("pod %s is already defined in %s (source %s), whose copy runs: a pod defined twice runs from the file source before the URL, then from the first file by name", e.Pod, e.File, e.Source)
}
