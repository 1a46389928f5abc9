package source

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"tug/internal/atomicfile"
)

// ErrCorruptCheckpoint is the error (wrapped with the reason) of a
// checkpoint file that cannot be trusted: bad JSON, an unknown version, or a
// body whose sha256 is not the recorded one.
var ErrCorruptCheckpoint = errors.New("source: corrupt checkpoint")

const checkpointVersion = 1

// maxCheckpointSize bounds the file read: base64 of a 10 MiB body and the
// rest, with room to spare.
const maxCheckpointSize = 64 << 20

// checkpoint is the last content accepted from a URL or an OCI reference,
// as written to disk (0600). Body is base64 in the JSON (encoding/json's
// []byte encoding). URL is the source's name: the redacted URL (the
// checkpoint holds no secret of the request), or the OCI source's name.
type checkpoint struct {
	Version      int       `json:"version"`
	URL          string    `json:"url"`
	FetchedAt    time.Time `json:"fetchedAt"`
	ETag         string    `json:"etag"`
	LastModified string    `json:"lastModified"`
	// Body is what the URL served: the signed bundle when verify keys are
	// configured, verified again at boot.
	Body   []byte `json:"body"`
	SHA256 string `json:"sha256"` // hex of Body
	// BundleVersion is the version of the signed bundle in Body (0 for a
	// bare body): no older bundle is accepted after a restart.
	BundleVersion uint64 `json:"bundleVersion,omitempty"`
	// Digest is the OCI source's applied artifact manifest digest ("" for
	// a URL).
	Digest string `json:"digest,omitempty"`
}

func sha256Hex(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// writeCheckpoint writes cp to path atomically: a temporary file in the same
// directory (0600), fsync, rename, fsync of the directory (created 0700 if
// missing). Version and SHA256 are filled in.
func writeCheckpoint(path string, cp checkpoint) error {
	cp.Version, cp.SHA256 = checkpointVersion, sha256Hex(cp.Body)
	data, err := json.Marshal(cp)
	if err != nil {
		return fmt.Errorf("checkpoint %s: %w", path, err)
	}
	if err := atomicfile.Write(path, data, 0o600); err != nil {
		return fmt.Errorf("checkpoint: %w", err)
	}
	return nil
}

// readCheckpoint reads and checks the checkpoint at path. A missing file is
// an error wrapping fs.ErrNotExist; a file that cannot be trusted wraps
// ErrCorruptCheckpoint. It does not check the URL or the signature.
func readCheckpoint(path string) (checkpoint, error) {
	f, err := os.Open(path)
	if err != nil {
		return checkpoint{}, err // *fs.PathError; fs.ErrNotExist when missing
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxCheckpointSize+1))
	if err != nil {
		return checkpoint{}, fmt.Errorf("read checkpoint %s: %w", path, err)
	}
	return decodeCheckpoint(path, data)
}

func decodeCheckpoint(path string, data []byte) (checkpoint, error) {
	if len(data) > maxCheckpointSize {
		return checkpoint{}, fmt.Errorf("%w: %s: larger than %d bytes", ErrCorruptCheckpoint, path, maxCheckpointSize)
	}
	var cp checkpoint
	if err := json.Unmarshal(data, &cp); err != nil {
		return checkpoint{}, fmt.Errorf("%w: %s: %v", ErrCorruptCheckpoint, path, err)
	}
	if cp.Version != checkpointVersion {
		return checkpoint{}, fmt.Errorf("%w: %s: version %d, want %d", ErrCorruptCheckpoint, path, cp.Version, checkpointVersion)
	}
	if sum := sha256Hex(cp.Body); sum != cp.SHA256 {
		return checkpoint{}, fmt.Errorf("%w: %s: body sha256 %s, recorded %q", ErrCorruptCheckpoint, path, sum, cp.SHA256)
	}
	return cp, nil
}
