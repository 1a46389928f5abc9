package offline

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"

	"tug/internal/manifest"
	"tug/internal/pod"
)

// checkRefs checks the references of the pods to ConfigMaps, Secrets and
// claims: a file given by name is checked alone, and a
// reference to an object it does not hold is a warning (the object may be
// in another file of the directory or the bundle); the files of a
// directory are checked together, as the agent reads them, and a missing
// object is an error there. It also prints the objects' own warnings
// (an ignored storage class). It returns false when there was an error.
func checkRefs(args []string, parsed map[string]manifest.Parsed, stderr io.Writer) bool {
	ok := true
	for _, arg := range args {
		st, err := os.Stat(arg)
		if err != nil {
			continue // reported already
		}
		var scope []string
		if st.IsDir() {
			for path := range parsed {
				if filepath.Dir(path) == filepath.Clean(arg) {
					scope = append(scope, path)
				}
			}
		} else if _, seen := parsed[arg]; seen {
			scope = []string{arg}
		}
		slices.Sort(scope)
		objects := map[pod.ObjectKey]*pod.Object{}
		for _, path := range scope {
			for _, o := range parsed[path].Objects {
				if _, taken := objects[o.Key()]; !taken {
					objects[o.Key()] = o
				}
				for _, w := range o.Warnings {
					fmt.Fprintln(stderr, "warning: "+w)
				}
			}
		}
		for _, path := range scope {
			for _, p := range parsed[path].Pods {
				bound, _ := pod.Bind(p, func(k pod.ObjectKey) *pod.Object { return objects[k] })
				if bound.Bound == nil {
					continue
				}
				for _, r := range bound.Bound.Missing {
					if st.IsDir() {
						fmt.Fprintf(stderr, "%s: pod %s: %s: %s is not defined in %s: the pod would wait (CreateContainerConfigError)\n",
							path, p.Metadata.ManifestName, r.Path, r.Key, arg)
						ok = false
						continue
					}
					fmt.Fprintf(stderr, "warning: %s: pod %s: %s: %s is not in this file; it must be in another file of the directory or the bundle\n",
						path, p.Metadata.ManifestName, r.Path, r.Key)
				}
			}
		}
	}
	return ok
}
