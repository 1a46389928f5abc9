package podconfig

import (
	"slices"
	"testing"
	"time"

	"tug/internal/pod"
)

// TestPins: a pin replaces the pod the source wants while the source wants
// the failed spec, and goes as soon as the source's spec changes; Wanted
// shows what the source wants, pins left out.
func TestPins(t *testing.T) {
	const src = "file:/a"
	s := New()
	go s.Run(t.Context()) //nolint:errcheck // returns nil
	// changes runs f, which sets pins that cause changes, and returns them.
	changes := func(f func()) []string {
		go f()
		select {
		case c := <-s.Updates():
			return show(c)
		case <-time.After(5 * time.Second):
			return nil
		}
	}
	v1 := good(src, "web.yaml", "web:v1", "db:d1")
	if got := show(s.Apply(src, []pod.SourceFile{v1})); len(got) != 2 {
		t.Fatalf("first apply: %v", got)
	}
	goodWeb := s.Pods()[1] // default/web
	goodHash := s.Wanted()[1].Hash
	v2 := good(src, "web.yaml", "web:v2", "db:d1")
	s.Apply(src, []pod.SourceFile{v2})
	failed := s.Wanted()[1]
	if failed.Pod.Spec.Containers[0].Image != "v2" || failed.Pinned {
		t.Fatalf("wanted %+v", failed)
	}

	got := changes(func() {
		s.SetPins(map[string]Pin{failed.Pod.Metadata.UID: {Failed: failed.Hash, Good: goodWeb, GoodHash: goodHash}}, nil)
	})
	if want := []string{"UPDATE default/web v1"}; !slices.Equal(got, want) {
		t.Fatalf("pinning: %v, want %v", got, want)
	}
	if w := s.Wanted()[1]; !w.Pinned || w.Pod.Spec.Containers[0].Image != "v2" {
		t.Errorf("Wanted while pinned: %+v", w)
	}
	if img := s.Pods()[1].Spec.Containers[0].Image; img != "v1" {
		t.Errorf("applied image %s while pinned, want v1", img)
	}
	// The same content again changes nothing; a new content is applied.
	if got := show(s.Apply(src, []pod.SourceFile{v2})); len(got) != 0 {
		t.Errorf("same content: %v", got)
	}
	if got, want := show(s.Apply(src, []pod.SourceFile{good(src, "web.yaml", "web:v3", "db:d1")})), []string{"UPDATE default/web v3"}; !slices.Equal(got, want) {
		t.Errorf("new content: %v, want %v", got, want)
	}
	// A pin with no good pod removes the pod while it applies.
	w := s.Wanted()[0] // default/db
	got = changes(func() { s.SetPins(map[string]Pin{w.Pod.Metadata.UID: {Failed: w.Hash}}, nil) })
	if want := []string{"REMOVE default/db d1"}; !slices.Equal(got, want) {
		t.Errorf("pin without a good pod: %v, want %v", got, want)
	}
}

// TestFilePins: a file pin applies the pods of the file's good content
// while the file holds the failed content: a pod the failed content added
// goes, one it dropped comes back; a new content lifts it.
func TestFilePins(t *testing.T) {
	const src = "http://bundle"
	s := New()
	go s.Run(t.Context()) //nolint:errcheck // returns nil
	v1 := good(src, src, "web:v1", "db:d1")
	s.Apply(src, []pod.SourceFile{v1})
	goodPods, goodHashes := s.Pods(), []string{}
	for _, d := range s.Wanted() {
		goodHashes = append(goodHashes, d.Hash)
	}
	v2 := good(src, src, "web:v2", "extra:x1") // db dropped, extra added
	s.Apply(src, []pod.SourceFile{v2})
	done := make(chan []string)
	go func() { done <- show(<-s.Updates()) }()
	s.SetPins(nil, []FilePin{{Origin: pod.Origin{Source: src, File: src}, Failed: v2.Hash, Pods: goodPods, Hashes: goodHashes}})
	if got, want := <-done, []string{"REMOVE default/extra x1", "UPDATE default/web v1", "ADD default/db d1"}; !slices.Equal(got, want) {
		t.Fatalf("file pin: %v, want %v", got, want)
	}
	files := s.Files()
	if len(files) != 1 || !files[0].Pinned {
		t.Errorf("FileState %+v, want pinned", files)
	}
	for _, d := range s.Wanted() {
		if !d.Pinned {
			t.Errorf("Wanted %s not pinned", d.Pod.FullName())
		}
	}
	if got, want := show(s.Apply(src, []pod.SourceFile{good(src, src, "web:v3", "db:d3")})), []string{"UPDATE default/db d3", "UPDATE default/web v3"}; !slices.Equal(got, want) {
		t.Errorf("new content: %v, want %v", got, want)
	}
}
