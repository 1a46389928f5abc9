package podconfig

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"tug/internal/pod"
	"tug/internal/testutil"
)

func mkPod(source, name, image string) *pod.Pod {
	return testutil.Pod(name, testutil.WithUID(pod.UID(source, "default", name)), testutil.WithApps("c"), testutil.WithImage(image))
}

// good returns a parsed file of source holding pods given as "name:image".
func good(source, file string, pods ...string) pod.SourceFile {
	m := pod.SourceFile{Origin: pod.Origin{Source: source, File: file}}
	for _, s := range pods {
		name, image, _ := strings.Cut(s, ":")
		m.Pods = append(m.Pods, mkPod(source, name, image))
	}
	m.Hash = fmt.Sprintf("%x", sha256.Sum256([]byte(strings.Join(pods, ","))))
	return m
}

func bad(source, file string) pod.SourceFile {
	return pod.SourceFile{
		Origin: pod.Origin{Source: source, File: file},
		Err:    fmt.Errorf("%s:1:1: broken", file),
		Hash:   "broken-" + file,
	}
}

func show(changes []Change) []string {
	var out []string
	for _, c := range changes {
		out = append(out, fmt.Sprintf("%s %s %s", c.Op, c.Pod.FullName(), c.Pod.Spec.Containers[0].Image))
	}
	return out
}

func TestApply(t *testing.T) {
	const A, B = "file:/a", "http://b"
	type step struct {
		source string
		files  []pod.SourceFile
		want   []string          // the changes, shown by show
		errs   map[string]string // file -> substring of its Err ("" = nil)
	}
	tests := []struct {
		name  string
		steps []step
		pods  []string // the desired pods at the end, "name:image"
	}{
		{
			name: "add update remove ordering",
			steps: []step{
				{source: A, files: []pod.SourceFile{good(A, "a.yaml", "x:v1", "y:v1"), good(A, "b.yaml", "z:v1")},
					want: []string{"ADD default/x v1", "ADD default/y v1", "ADD default/z v1"}},
				{source: A, files: []pod.SourceFile{good(A, "a.yaml", "x:v2"), good(A, "b.yaml", "z:v1"), good(A, "c.yaml", "w:v1", "a:v1")},
					want: []string{"REMOVE default/y v1", "UPDATE default/x v2", "ADD default/a v1", "ADD default/w v1"}},
				{source: A, files: []pod.SourceFile{good(A, "c.yaml", "w:v1", "a:v1")},
					want: []string{"REMOVE default/x v2", "REMOVE default/z v1"}},
			},
			pods: []string{"a:v1", "w:v1"},
		},
		{
			name: "no-op snapshot yields no changes",
			steps: []step{
				{source: A, files: []pod.SourceFile{good(A, "a.yaml", "x:v1")}, want: []string{"ADD default/x v1"}},
				{source: A, files: []pod.SourceFile{good(A, "a.yaml", "x:v1")}}, // same content, new pod values
				{source: A, files: []pod.SourceFile{good(A, "a.yaml", "x:v1")}},
			},
			pods: []string{"x:v1"},
		},
		{
			name: "same pod with other bytes is no update",
			steps: []step{
				{source: A, files: []pod.SourceFile{good(A, "a.yaml", "x:v1")}, want: []string{"ADD default/x v1"}},
				{source: A, files: []pod.SourceFile{func() pod.SourceFile { m := good(A, "a.yaml", "x:v1"); m.Hash = "comment added"; return m }()}},
			},
			pods: []string{"x:v1"},
		},
		{
			name: "broken file keeps last good",
			steps: []step{
				{source: A, files: []pod.SourceFile{good(A, "a.yaml", "x:v1")}, want: []string{"ADD default/x v1"}},
				{source: A, files: []pod.SourceFile{bad(A, "a.yaml")}, errs: map[string]string{"a.yaml": "a.yaml:1:1: broken"}},
				{source: A, files: []pod.SourceFile{bad(A, "a.yaml")}, errs: map[string]string{"a.yaml": "broken"}},
				{source: A, files: []pod.SourceFile{good(A, "a.yaml", "x:v2")}, want: []string{"UPDATE default/x v2"}, errs: map[string]string{"a.yaml": ""}},
			},
			pods: []string{"x:v2"},
		},
		{
			name: "broken new file adds nothing",
			steps: []step{
				{source: A, files: []pod.SourceFile{bad(A, "a.yaml")}, errs: map[string]string{"a.yaml": "broken"}},
				{source: A, files: []pod.SourceFile{good(A, "a.yaml", "x:v1")}, want: []string{"ADD default/x v1"}, errs: map[string]string{"a.yaml": ""}},
			},
			pods: []string{"x:v1"},
		},
		{
			name: "file removed while broken removes its last good pods",
			steps: []step{
				{source: A, files: []pod.SourceFile{good(A, "a.yaml", "x:v1"), good(A, "b.yaml", "y:v1")}, want: []string{"ADD default/x v1", "ADD default/y v1"}},
				{source: A, files: []pod.SourceFile{bad(A, "a.yaml"), good(A, "b.yaml", "y:v1")}},
				{source: A, files: []pod.SourceFile{good(A, "b.yaml", "y:v1")}, want: []string{"REMOVE default/x v1"}},
			},
			pods: []string{"y:v1"},
		},
		{
			name: "sources are independent",
			steps: []step{
				// B has not reported: A's pods are applied at once.
				{source: A, files: []pod.SourceFile{good(A, "a.yaml", "x:v1")}, want: []string{"ADD default/x v1"}},
				{source: B, files: []pod.SourceFile{good(B, "b", "y:v1")}, want: []string{"ADD default/y v1"}},
				{source: B, files: nil, want: []string{"REMOVE default/y v1"}},
				{source: B, files: []pod.SourceFile{bad(B, "b")}},
			},
			pods: []string{"x:v1"},
		},
		{
			name: "duplicate in first snapshot: lexically first file wins",
			steps: []step{
				{source: A, files: []pod.SourceFile{good(A, "b.yaml", "x:v2", "y:v1"), good(A, "a.yaml", "x:v1")},
					want: []string{"ADD default/x v1", "ADD default/y v1"},
					errs: map[string]string{"a.yaml": "", "b.yaml": "pod default/x is already defined in a.yaml"}},
				// a.yaml drops x: b.yaml's copy takes over (same source, same UID).
				{source: A, files: []pod.SourceFile{good(A, "b.yaml", "x:v2", "y:v1"), good(A, "a.yaml")},
					want: []string{"UPDATE default/x v2"}, errs: map[string]string{"b.yaml": ""}},
			},
			pods: []string{"x:v2", "y:v1"},
		},
		{
			name: "duplicate: the first file by name wins, even over the running pod",
			steps: []step{
				{source: A, files: []pod.SourceFile{good(A, "b.yaml", "x:v2")}, want: []string{"ADD default/x v2"}},
				{source: A, files: []pod.SourceFile{good(A, "a.yaml", "x:v1", "w:v1"), good(A, "b.yaml", "x:v2")},
					want: []string{"UPDATE default/x v1", "ADD default/w v1"},
					errs: map[string]string{"a.yaml": "", "b.yaml": "pod default/x is already defined in a.yaml (source file:/a), whose copy runs"}},
				// a.yaml broken: its last good x keeps running.
				{source: A, files: []pod.SourceFile{bad(A, "a.yaml"), good(A, "b.yaml", "x:v2")},
					errs: map[string]string{"a.yaml": "broken", "b.yaml": "already defined in a.yaml"}},
			},
			pods: []string{"w:v1", "x:v1"},
		},
		{
			name: "duplicate across sources: the file source wins",
			steps: []step{
				{source: B, files: []pod.SourceFile{good(B, "b", "x:vB")}, want: []string{"ADD default/x vB"}},
				{source: A, files: []pod.SourceFile{good(A, "a.yaml", "x:vA", "y:vA")},
					want: []string{"REMOVE default/x vB", "ADD default/x vA", "ADD default/y vA"},
					errs: map[string]string{"a.yaml": "", "b": "pod default/x is already defined in a.yaml (source file:/a)"}},
				{source: B, files: []pod.SourceFile{good(B, "b", "x:vB2")}, errs: map[string]string{"a.yaml": "", "b": "already defined in a.yaml"}},
				// The file drops x: the URL's copy runs.
				{source: A, files: []pod.SourceFile{good(A, "a.yaml", "y:vA")}, want: []string{"REMOVE default/x vA", "ADD default/x vB2"},
					errs: map[string]string{"b": ""}},
			},
			pods: []string{"x:vB2", "y:vA"},
		},
		{
			name: "duplicate within one file",
			steps: []step{
				{source: A, files: []pod.SourceFile{good(A, "a.yaml", "x:v1", "x:v2")}, want: []string{"ADD default/x v1"},
					errs: map[string]string{"a.yaml": "pod default/x is already defined in a.yaml"}},
			},
			pods: []string{"x:v1"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := New()
			s.SetSourceOrder(A, B)
			for i, st := range tt.steps {
				got := show(s.Apply(st.source, st.files))
				if !slices.Equal(got, st.want) {
					t.Fatalf("step %d: changes\n got %q\nwant %q", i, got, st.want)
				}
				files := map[string]FileState{}
				for _, f := range s.Files() {
					files[f.Origin.File] = f
				}
				for file, want := range st.errs {
					f, ok := files[file]
					if !ok {
						t.Fatalf("step %d: no state for %s", i, file)
					}
					switch {
					case want == "" && f.Err != nil:
						t.Errorf("step %d: %s: err %v, want nil", i, file, f.Err)
					case want != "" && (f.Err == nil || !strings.Contains(f.Err.Error(), want)):
						t.Errorf("step %d: %s: err %v, want %q", i, file, f.Err, want)
					}
				}
			}
			var pods []string
			for _, p := range s.Pods() {
				pods = append(pods, p.Metadata.Name+":"+p.Spec.Containers[0].Image)
			}
			if !slices.Equal(pods, tt.pods) {
				t.Errorf("Pods() = %q, want %q", pods, tt.pods)
			}
		})
	}
}

func TestDuplicateErrorIs(t *testing.T) {
	s := New()
	s.Apply("s", []pod.SourceFile{good("s", "a.yaml", "x:v1"), good("s", "b.yaml", "x:v1")})
	var de *DuplicateError
	f := s.Files()[1]
	if !errors.As(f.Err, &de) || de.Pod != "default/x" || de.File != "a.yaml" {
		t.Fatalf("b.yaml: err %v, want *DuplicateError for default/x in a.yaml", f.Err)
	}
}

func TestFiles(t *testing.T) {
	now := time.Unix(1000, 0)
	s := New(WithClock(func() time.Time { return now }))
	const src = "file:/m"
	tick := func() time.Time { now = now.Add(time.Second); return now }

	t0 := now
	s.Apply(src, []pod.SourceFile{good(src, "a.yaml", "x:v1", "y:v1")})
	goodHash := good(src, "a.yaml", "x:v1", "y:v1").Hash
	check := func(step string, want FileState) {
		t.Helper()
		fs := s.Files()
		if len(fs) != 1 {
			t.Fatalf("%s: %d files, want 1", step, len(fs))
		}
		f := fs[0]
		if f.Origin != want.Origin || (f.Err == nil) != (want.Err == nil) || !slices.Equal(f.UIDs, want.UIDs) ||
			f.AppliedHash != want.AppliedHash || f.Hash != want.Hash || !f.LastChange.Equal(want.LastChange) {
			t.Errorf("%s: Files()[0] = %+v\nwant %+v", step, f, want)
		}
	}
	uids := slices.Sorted(slices.Values([]string{pod.UID(src, "default", "x"), pod.UID(src, "default", "y")}))
	want := FileState{Origin: pod.Origin{Source: src, File: "a.yaml"}, UIDs: uids, AppliedHash: goodHash, Hash: goodHash, LastChange: t0}
	check("first", want)

	tick()
	s.Apply(src, []pod.SourceFile{good(src, "a.yaml", "x:v1", "y:v1")})
	check("no-op keeps LastChange", want)

	t2 := tick()
	s.Apply(src, []pod.SourceFile{bad(src, "a.yaml")})
	want.Err, want.Hash, want.LastChange = errors.New("broken"), "broken-a.yaml", t2
	check("broken", want)

	tick()
	s.Apply(src, []pod.SourceFile{bad(src, "a.yaml")})
	check("still broken", want)

	t4 := tick()
	s.Apply(src, []pod.SourceFile{good(src, "a.yaml", "x:v1", "y:v1")})
	want.Err, want.Hash, want.LastChange = nil, goodHash, t4
	check("fixed", want)
}

// TestSetQueuesForRun: Set and SetPins never wait for the loop; Run sends
// their change lists one by one in the order they were computed (a remove
// and a re-add are never merged into one list), and returns when ctx is
// done.
func TestSetQueuesForRun(t *testing.T) {
	s := New()
	if s.Ready("a") {
		t.Fatal("Ready before any report")
	}
	s.Set("a", nil) // no changes: nothing queued
	if !s.Ready("a") || s.Ready("b") {
		t.Fatalf("Ready(a)=%v Ready(b)=%v, want true false", s.Ready("a"), s.Ready("b"))
	}
	// Nobody receives yet: none of these may block.
	s.Set("a", []pod.SourceFile{good("a", "f", "x:v1")})
	s.Set("a", nil)
	s.Set("a", []pod.SourceFile{good("a", "f", "x:v2")})
	s.SetPins(nil, nil) // no pins: no changes

	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error)
	go func() { done <- s.Run(ctx) }()
	for i, want := range [][]string{{"ADD default/x v1"}, {"REMOVE default/x v1"}, {"ADD default/x v2"}} {
		select {
		case got := <-s.Updates():
			if !slices.Equal(show(got), want) {
				t.Errorf("list %d: %q, want %q", i, show(got), want)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("list %d: nothing sent", i)
		}
	}
	select {
	case got := <-s.Updates():
		t.Errorf("a fourth list: %q", show(got))
	case <-time.After(50 * time.Millisecond):
	}
	s.Set("a", nil) // queued while the loop is away
	cancel()
	if err := <-done; err != nil {
		t.Errorf("Run: %v", err)
	}
	if len(s.Pods()) != 0 {
		t.Errorf("Pods() = %v after removal", s.Pods())
	}
}

func TestOpString(t *testing.T) {
	for op, want := range map[Op]string{Add: "ADD", Update: "UPDATE", Remove: "REMOVE", 0: "Op(0)"} {
		if op.String() != want {
			t.Errorf("%d.String() = %q, want %q", int(op), op.String(), want)
		}
	}
}

// BenchmarkApply measures one snapshot of n files of one pod each, where
// every pod changes (update) or nothing does (noop).
func BenchmarkApply(b *testing.B) {
	for _, n := range []int{10, 100, 1000} {
		snap := func(image string) []pod.SourceFile {
			ms := make([]pod.SourceFile, n)
			for i := range ms {
				ms[i] = good("file:/m", fmt.Sprintf("p%04d.yaml", i), fmt.Sprintf("p%04d:%s", i, image))
			}
			return ms
		}
		v1, v2 := snap("v1"), snap("v2")
		b.Run(fmt.Sprintf("pods=%d", n), func(b *testing.B) {
			b.Run("update", func(b *testing.B) {
				s := New()
				b.ReportAllocs()
				i := 0
				for b.Loop() {
					snap := v1
					if i%2 == 1 {
						snap = v2
					}
					i++
					s.Apply("file:/m", snap)
				}
			})
			b.Run("noop", func(b *testing.B) {
				s := New()
				s.Apply("file:/m", v1)
				b.ReportAllocs()
				for b.Loop() {
					s.Apply("file:/m", v1)
				}
			})
		})
	}
}

func TestOwns(t *testing.T) {
	s := New()
	if ready, wanted := s.Owns("file:/a", "uid"); ready || wanted {
		t.Fatalf("empty store: ready=%v wanted=%v", ready, wanted)
	}
	p := &pod.Pod{Metadata: pod.ObjectMeta{Name: "web", Namespace: "default", UID: "uid-web"}}
	s.Apply("file:/a", []pod.SourceFile{{Origin: pod.Origin{Source: "file:/a", File: "/a/web.yaml"}, Pods: []*pod.Pod{p}}})
	tests := []struct {
		source, uid         string
		wantReady, wantWant bool
	}{
		{"file:/a", "uid-web", true, true},
		{"file:/a", "uid-gone", true, false},
		{"http://b", "uid-web", false, true},
	}
	for _, tt := range tests {
		if ready, wanted := s.Owns(tt.source, tt.uid); ready != tt.wantReady || wanted != tt.wantWant {
			t.Errorf("Owns(%s, %s) = %v, %v; want %v, %v", tt.source, tt.uid, ready, wanted, tt.wantReady, tt.wantWant)
		}
	}
}

// TestSourceOrderDecidesDuplicates: the source listed first by
// SetSourceOrder wins a duplicate, whatever the names sort as and
// whichever reported first.
func TestSourceOrderDecidesDuplicates(t *testing.T) {
	const file, url = "z-file", "a-url"
	for _, first := range []string{file, url} {
		t.Run(first+" reports first", func(t *testing.T) {
			s := New()
			s.SetSourceOrder(file, url)
			snaps := map[string][]pod.SourceFile{file: {good(file, "web.yaml", "x:file")}, url: {good(url, "u", "x:url")}}
			second := map[string]string{file: url, url: file}[first]
			s.Apply(first, snaps[first])
			s.Apply(second, snaps[second])
			pods := s.Pods()
			if len(pods) != 1 || pods[0].Spec.Containers[0].Image != "file" {
				t.Fatalf("pods %v, want only the file source's x", pods)
			}
			for _, f := range s.Files() {
				var de *DuplicateError
				if f.Origin.Source == url && (!errors.As(f.Err, &de) || de.Source != file || de.File != "web.yaml") {
					t.Errorf("the URL's manifest: err %v, want a *DuplicateError naming web.yaml of %s", f.Err, file)
				}
			}
		})
	}
}
