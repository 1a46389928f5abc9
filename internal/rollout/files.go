package rollout

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"tug/internal/pod"
	"tug/internal/podconfig"
	"tug/internal/podview"
)

// AnnotationRollout set to "atomic" on a pod makes its whole file (or URL
// bundle) one unit: when one of its pods fails, every pod of it returns
// to the last content in which all of them were good.
const (
	AnnotationRollout = "tug.io/rollout"
	RolloutAtomic     = "atomic"
)

// fileRecord is the persisted rollout state of one manifest file (or URL
// bundle): its last good content (every pod of it good at once) and the
// content that failed, held back when the file is atomic.
type fileRecord struct {
	Source string `json:"source"`
	File   string `json:"file"`

	GoodContent string      `json:"goodContent,omitempty"`
	GoodVersion uint64      `json:"goodVersion,omitempty"`
	GoodAt      time.Time   `json:"goodAt,omitzero"`
	Pods        []*savedPod `json:"pods,omitempty"`
	Hashes      []string    `json:"hashes,omitempty"`

	Failed        string    `json:"failed,omitempty"`
	FailedVersion uint64    `json:"failedVersion,omitempty"`
	Reason        string    `json:"reason,omitempty"`
	FailedAt      time.Time `json:"failedAt,omitzero"`
	// Held reports whether the failed content is held back (an atomic
	// file with a good content to return to).
	Held bool `json:"held,omitempty"`
}

func (fr *fileRecord) origin() pod.Origin { return pod.Origin{Source: fr.Source, File: fr.File} }

// pin is the file pin of a held-back content.
func (fr *fileRecord) pin() podconfig.FilePin {
	fp := podconfig.FilePin{Origin: fr.origin(), Failed: fr.Failed, Hashes: fr.Hashes}
	for _, sp := range fr.Pods {
		fp.Pods = append(fp.Pods, sp.restore())
	}
	return fp
}

// fileName is the name of a file record: a hash of the origin, which
// names a path or a URL (never used as a path itself).
func fileName(o pod.Origin) string {
	h := sha256.Sum256([]byte(o.Source + "\x00" + o.File))
	return hex.EncodeToString(h[:12]) + ".json"
}

func (f files) fileDir() string { return filepath.Join(f.dir, "files") }

func (f files) loadFiles() (map[pod.Origin]*fileRecord, []error) {
	out := map[pod.Origin]*fileRecord{}
	errs := readJSONDir(f.fileDir(), func(name string, data []byte) error {
		var fr fileRecord
		if err := json.Unmarshal(data, &fr); err != nil {
			return err
		}
		if fileName(fr.origin()) != name || len(fr.Pods) != len(fr.Hashes) {
			return errors.New("not a rollout file record")
		}
		for _, sp := range fr.Pods {
			if sp == nil || sp.Pod == nil {
				return errors.New("a pod of the good content is empty")
			}
		}
		out[fr.origin()] = &fr
		return nil
	})
	return out, errs
}

func (f files) storeFile(fr *fileRecord) error {
	data, err := json.Marshal(fr)
	if err != nil {
		return fmt.Errorf("encode rollout state: %w", err)
	}
	return writeAtomic(f.fileDir(), fileName(fr.origin()), data)
}

func (f files) removeFile(o pod.Origin) error {
	if err := os.Remove(filepath.Join(f.fileDir(), fileName(o))); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("remove rollout state: %w", err)
	}
	return nil
}

// File returns the rollout state of the file at o (nil when there is
// none).
func (c *Controller) File(o pod.Origin) *podview.ManifestRollout {
	c.mu.Lock()
	defer c.mu.Unlock()
	fr := c.fileRecs[o]
	if fr == nil {
		return nil
	}
	return &podview.ManifestRollout{Atomic: c.atomic[o], GoodHash: fr.GoodContent, GoodVersion: fr.GoodVersion,
		FailedHash: fr.Failed, FailedVersion: fr.FailedVersion, Reason: fr.Reason, HeldBack: fr.Held}
}
