package source

import (
	"context"
	"net/http"
	"path/filepath"
	"testing"

	"tug/internal/pod"
)

// FuzzHTTPBody feeds bytes as a 200 body through the accept path (hash,
// parse, checkpoint, report): it must never panic, and the source must stay
// consistent.
func FuzzHTTPBody(f *testing.F) {
	f.Add([]byte(podManifest("web", "nginx:1")))
	f.Add([]byte("apiVersion: v1\nkind: PodList\nitems:\n- metadata: {name: a}\n  spec: {containers: [{name: c, image: i}]}\n"))
	f.Add([]byte(`{"apiVersion":"v1","kind":"List","items":[]}`))
	f.Add([]byte("---\n---\n"))
	f.Add([]byte("<html>"))
	f.Add([]byte{})
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, body []byte) {
		sink := &countingSink{}
		h, err := NewHTTP(HTTPConfig{URL: "http://127.0.0.1:1/pods.yaml", Checkpoint: filepath.Join(dir, "c.json")}, sink)
		if err != nil {
			t.Fatal(err)
		}
		err = h.accept(context.Background(), body, http.Header{"Etag": {`"x"`}})
		if err == nil {
			if !h.hasAcc || h.acc.hash != sha256Hex(body) || sink.n != 1 {
				t.Fatalf("accepted but hasAcc=%v n=%d", h.hasAcc, sink.n)
			}
			// The same bytes again cost nothing.
			if err := h.accept(context.Background(), body, nil); err != nil || sink.n != 1 || h.parses.Load() != 1 {
				t.Fatalf("second accept: %v n=%d parses=%d", err, sink.n, h.parses.Load())
			}
		} else if h.hasAcc || sink.n != 0 {
			t.Fatalf("rejected (%v) but state changed", err)
		}
	})
}

type countingSink struct{ n int }

func (s *countingSink) Set(string, []pod.SourceFile) { s.n++ }
