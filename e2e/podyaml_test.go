//go:build e2e

package e2e

import (
	"encoding/json"
	"fmt"
	"strings"
)

// podYAML builds the manifest of a test pod: the fields the tests vary,
// written the way tug's examples are. A field left zero is not written,
// except the grace period (5 s, so that a stop never waits long).
type podYAML struct {
	name          string
	grace         int    // terminationGracePeriodSeconds; 0: 5
	restartPolicy string // "": not written (Always)
	hostNetwork   bool
	init          []ctrYAML // initContainers
	containers    []ctrYAML
	volumes       []volYAML
	// extra are more lines of the spec, each indented by two spaces (what
	// no field here covers).
	extra string
}

// ctrYAML is one container that runs script with sh -c.
type ctrYAML struct {
	name, image, script string
	// asArgs writes the script as args (command ["sh", "-c"]): a spec edit
	// that changes only the args.
	asArgs bool
	mounts []mountYAML
	// extra are more lines of the container, each indented by six spaces
	// (e.g. a resources block).
	extra string
}

// mountYAML is one volumeMounts entry.
type mountYAML struct {
	name, path, subPath string
	readOnly            bool
}

// volYAML is one volume: its name and its source as one flow mapping,
// e.g. `emptyDir: {}`, `emptyDir: {medium: Memory}` or hostPathVol's.
type volYAML struct{ name, source string }

// memoryVol is an emptyDir volume on tmpfs.
func memoryVol(name string) volYAML { return volYAML{name, "emptyDir: {medium: Memory}"} }

// emptyVol is an emptyDir volume on disk.
func emptyVol(name string) volYAML { return volYAML{name, "emptyDir: {}"} }

// hostPathVol is a hostPath volume of path with the given type.
func hostPathVol(name, path, typ string) volYAML {
	return volYAML{name, fmt.Sprintf("hostPath: {path: %s, type: %s}", q(path), typ)}
}

// String returns the manifest.
func (p podYAML) String() string {
	var b strings.Builder
	grace := p.grace
	if grace == 0 {
		grace = 5
	}
	fmt.Fprintf(&b, "apiVersion: v1\nkind: Pod\nmetadata:\n  name: %s\nspec:\n  terminationGracePeriodSeconds: %d\n", p.name, grace)
	if p.restartPolicy != "" {
		fmt.Fprintf(&b, "  restartPolicy: %s\n", p.restartPolicy)
	}
	if p.hostNetwork {
		b.WriteString("  hostNetwork: true\n")
	}
	for _, list := range []struct {
		key  string
		ctrs []ctrYAML
	}{{"initContainers", p.init}, {"containers", p.containers}} {
		if len(list.ctrs) == 0 {
			continue
		}
		fmt.Fprintf(&b, "  %s:\n", list.key)
		for _, c := range list.ctrs {
			c.write(&b)
		}
	}
	if len(p.volumes) > 0 {
		b.WriteString("  volumes:\n")
		for _, v := range p.volumes {
			fmt.Fprintf(&b, "    - name: %s\n      %s\n", v.name, v.source)
		}
	}
	b.WriteString(p.extra)
	return b.String()
}

func (c ctrYAML) write(b *strings.Builder) {
	fmt.Fprintf(b, "    - name: %s\n      image: %s\n", c.name, c.image)
	if c.asArgs {
		fmt.Fprintf(b, "      command: [\"sh\", \"-c\"]\n      args: [%s]\n", q(c.script))
	} else {
		fmt.Fprintf(b, "      command: [\"sh\", \"-c\", %s]\n", q(c.script))
	}
	if len(c.mounts) > 0 {
		b.WriteString("      volumeMounts:\n")
		for _, m := range c.mounts {
			fmt.Fprintf(b, "        - name: %s\n          mountPath: %s\n", m.name, m.path)
			if m.subPath != "" {
				fmt.Fprintf(b, "          subPath: %s\n", m.subPath)
			}
			if m.readOnly {
				b.WriteString("          readOnly: true\n")
			}
		}
	}
	b.WriteString(c.extra)
}

// shPod returns a manifest of a pod with one container, "main", running
// script with sh -c. Extra spec lines (indented by two spaces) may follow.
func shPod(name, image, script string, specExtra ...string) string {
	return podYAML{name: name, containers: []ctrYAML{{name: "main", image: image, script: script}}, extra: strings.Join(specExtra, "")}.String()
}

// q quotes s as a YAML (JSON) double-quoted scalar.
func q(s string) string {
	b, err := json.Marshal(s)
	if err != nil {
		panic(err)
	}
	return string(b)
}
