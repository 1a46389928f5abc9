package manifest

import (
	"errors"
	"os"
	"testing"

	"tug/internal/fieldpath"
	"tug/internal/pod"
	"tug/internal/podvalidate"
)

// FuzzParse checks that Parse never panics, that a failure is made of
// *pod.FieldError values only whose paths are escaped, and that a success is a set of usable pods: each
// has a name, a UID and a container, passes Validate again, and hashes.
func FuzzParse(f *testing.F) {
	for _, dir := range []string{"good", "bad"} {
		for _, file := range manifestFiles(f, dir) {
			data, err := os.ReadFile(file)
			if err != nil {
				f.Fatal(err)
			}
			f.Add(data)
		}
	}
	f.Add([]byte(minimalPod))
	f.Add([]byte("{}"))
	f.Add([]byte("kind: List\nitems: [{}]"))

	f.Fuzz(func(t *testing.T, data []byte) {
		pods, err := Parse(data, testOptions("fuzz.yaml"))
		if err != nil {
			if pods != nil {
				t.Errorf("Parse returned %d pods and an error", len(pods))
			}
			for _, e := range unjoin(err) {
				var fe *pod.FieldError
				if !errors.As(e, &fe) {
					t.Errorf("error %q is a %T, want *FieldError", e, e)
				} else if fieldpath.Escape(fe.Path) != fe.Path {
					t.Errorf("error %q: its path is not escaped", e)
				}
			}
			return
		}
		for i, p := range pods {
			if p.Metadata.Name == "" || p.Metadata.ManifestName == "" || p.Metadata.UID == "" {
				t.Errorf("pod %d: name %q, manifest name %q, UID %q: want all set", i, p.Metadata.Name, p.Metadata.ManifestName, p.Metadata.UID)
			}
			if len(p.Spec.Containers) == 0 {
				t.Errorf("pod %d (%s): no containers", i, p.FullName())
			}
			if err := podvalidate.Validate(p); err != nil {
				t.Errorf("pod %d (%s): Validate after Parse: %v", i, p.FullName(), err)
			}
			_ = p.Hash()
			for j := range p.Spec.Containers {
				if h := pod.ContainerHash(p, &p.Spec.Containers[j]); len(h) != 16 {
					t.Errorf("pod %d (%s): ContainerHash = %q", i, p.FullName(), h)
				}
			}
		}
	})
}
