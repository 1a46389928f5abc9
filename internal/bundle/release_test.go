package bundle

import (
	"bytes"
	"crypto/ed25519"
	"debug/elf"
	"encoding/binary"
	"encoding/json"
	"errors"
	"os"
	"runtime"
	"testing"
	"time"

	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
)

// testELF returns the test binary's first bytes with its ELF machine set
// to m: enough of an ELF file for its header to be read.
func testELF(t *testing.T, m elf.Machine) []byte {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(exe)
	if err != nil {
		t.Fatal(err)
	}
	data = bytes.Clone(data)
	binary.LittleEndian.PutUint16(data[18:], uint16(m))
	return data
}

func TestELFArch(t *testing.T) {
	tests := []struct {
		name string
		data []byte
		want string
		err  error
	}{
		{"amd64", testELF(t, elf.EM_X86_64), "amd64", nil},
		{"arm64", testELF(t, elf.EM_AARCH64), "arm64", nil},
		{"unknown machine", testELF(t, elf.EM_MIPS), "", ErrWrongArch},
		{"not ELF", []byte("#!/bin/sh\nexit 0\n"), "", ErrWrongArch},
		{"empty", nil, "", ErrWrongArch},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ELFArch(tt.data)
			if got != tt.want || !errors.Is(err, tt.err) {
				t.Fatalf("ELFArch = %q, %v; want %q, %v", got, err, tt.want, tt.err)
			}
		})
	}
	if runtime.GOARCH == "amd64" || runtime.GOARCH == "arm64" {
		exe, _ := os.Executable()
		data, _ := os.ReadFile(exe)
		if got, err := ELFArch(data); got != runtime.GOARCH || err != nil {
			t.Errorf("the test binary: %q, %v", got, err)
		}
	}
}

func TestBuildRelease(t *testing.T) {
	_, priv, _ := ed25519.GenerateKey(nil)
	seal := func(v uint64, body []byte) []byte {
		b, err := SealEnvelope(priv, EnvelopeHeader{Version: v, NotAfter: time.Now().Add(time.Hour)}, body)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	amd, arm := testELF(t, elf.EM_X86_64), testELF(t, elf.EM_AARCH64)
	rel, err := BuildRelease([][]byte{seal(7, amd), seal(7, arm)}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	var idx ocispec.Index
	if err := json.Unmarshal(rel.IndexJSON, &idx); err != nil {
		t.Fatal(err)
	}
	if idx.ArtifactType != ReleaseArtifactType || len(idx.Manifests) != 2 || idx.Manifests[0].Platform.Architecture != "amd64" ||
		idx.Manifests[1].Platform.Architecture != "arm64" || idx.Annotations[ocispec.AnnotationVersion] != "7" {
		t.Fatalf("index %s", rel.IndexJSON)
	}
	for i, a := range rel.Platforms {
		if idx.Manifests[i].Digest != a.Manifest.Digest {
			t.Errorf("platform %d: digest %s, index names %s", i, a.Manifest.Digest, idx.Manifests[i].Digest)
		}
		if l, err := parseArtifactOf(a.ManifestJSON, ReleaseArtifactType); err != nil || l.MediaType != MediaTypeEnvelope {
			t.Errorf("platform %d: %v %+v", i, err, l)
		}
		if _, err := ParseArtifact(a.ManifestJSON); !errors.Is(err, ErrNotBundle) {
			t.Errorf("platform %d read as a bundle: %v", i, err)
		}
	}
	bad := []struct {
		name string
		envs [][]byte
	}{
		{"none", nil},
		{"two amd64", [][]byte{seal(7, amd), seal(7, amd)}},
		{"two versions", [][]byte{seal(7, amd), seal(8, arm)}},
		{"not a binary", [][]byte{seal(7, []byte("apiVersion: v1\n"))}},
		{"not an envelope", [][]byte{amd}},
	}
	for _, tt := range bad {
		if _, err := BuildRelease(tt.envs, time.Now()); err == nil {
			t.Errorf("%s: built", tt.name)
		}
	}
}
