package podconfig

import "fmt"

// DuplicateError is recorded on a file that defines a pod (namespace/name)
// which another file already defines. The other file's pod keeps running;
// this file's copy is not applied. Find it with errors.As.
type DuplicateError struct {
	Pod  string // "namespace/name"
	File string // the file whose pod is applied
}

func (e *DuplicateError) Error() string {
	return fmt.Sprintf("pod %s is already defined in %s", e.Pod, e.File)
}
