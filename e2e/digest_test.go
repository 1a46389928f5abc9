//go:build e2e

package e2e

import (
	"archive/tar"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	containerd "github.com/containerd/containerd/v2/client"
)

// TestSideloadedDigestMustMatch: an image archive may call its image
// whatever it likes, including "name@sha256:<digest>". A pod that pins an
// image by digest runs a sideloaded image only if its content has that
// digest; an archive claiming a digest its content does not have satisfied
// the pod before.
func TestSideloadedDigestMustMatch(t *testing.T) {
	t.Parallel()
	tg := startTug(t, tugOpts{noImageArchive: true, noStart: true})
	real := archiveManifestDigest(t, tg.archive)
	wrong := "sha256:" + strings.Repeat("0", 64)
	if real == wrong {
		t.Fatal("the test image has the all-zero digest")
	}
	liar := "docker.io/library/busybox@" + wrong
	honest := "docker.io/library/busybox@" + real
	renameArchive(t, tg.archive, filepath.Join(tg.imageDir, "liar.tar"), liar)
	renameArchive(t, tg.archive, filepath.Join(tg.imageDir, "honest.tar"), honest)
	never := "      imagePullPolicy: Never\n"
	tg.writeManifest("liar.yaml", shPod("liar", liar, "echo ran; "+idle, never))
	tg.writeManifest("honest.yaml", shPod("honest", honest, "echo ran; "+idle, never))
	tg.Start()

	tg.waitRunning(startTimeout, "honest", "main", 0)
	tg.waitForOutput(startTimeout, "image archive names a digest its image does not have", "liar.tar")
	line := tg.waitForOutput(startTimeout, staticName("liar"), "image not present")
	t.Logf("tug says: %s", line)
	cs, err := tg.podContainers(tg.uid("liar"))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range cs {
		if c.Status == containerd.Running {
			t.Errorf("the pod pinned to %s runs an image with digest %s: %v", wrong, real, c)
		}
	}
}

// archiveManifestDigest returns the digest of the (only) manifest in the
// index.json of an OCI archive.
func archiveManifestDigest(t *testing.T, archive string) string {
	t.Helper()
	var index struct {
		Manifests []struct {
			Digest string `json:"digest"`
		} `json:"manifests"`
	}
	if err := json.Unmarshal(readArchiveFile(t, archive, "index.json"), &index); err != nil || len(index.Manifests) != 1 {
		t.Fatalf("index.json of %s: %v (%d manifests)", archive, err, len(index.Manifests))
	}
	return index.Manifests[0].Digest
}

func readArchiveFile(t *testing.T, archive, name string) []byte {
	t.Helper()
	f, err := os.Open(archive)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	tr := tar.NewReader(f)
	for {
		h, err := tr.Next()
		if err != nil {
			t.Fatalf("%s in %s: %v", name, archive, err)
		}
		if strings.TrimPrefix(h.Name, "./") == name {
			b, err := io.ReadAll(tr)
			if err != nil {
				t.Fatal(err)
			}
			return b
		}
	}
}

// renameArchive copies the OCI archive src to dst with the image named
// name (index.json's io.containerd.image.name, and no ref.name), the
// content unchanged.
func renameArchive(t *testing.T, src, dst, name string) {
	t.Helper()
	in, err := os.Open(src)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	out, err := os.Create(dst)
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	tr, tw := tar.NewReader(in), tar.NewWriter(out)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		body, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		if strings.TrimPrefix(h.Name, "./") == "index.json" {
			var index map[string]any
			if err := json.Unmarshal(body, &index); err != nil {
				t.Fatal(err)
			}
			for _, m := range index["manifests"].([]any) {
				m.(map[string]any)["annotations"] = map[string]string{"io.containerd.image.name": name}
			}
			if body, err = json.Marshal(index); err != nil {
				t.Fatal(err)
			}
			h.Size = int64(len(body))
		}
		if err := tw.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write(body); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
}
