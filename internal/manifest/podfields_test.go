package manifest

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"reflect"
	"strings"
	"testing"

	"tug/internal/pod"
)

// kubernetesFields reads testdata/podv1-fields.txt: the set of "Type field"
// of the Kubernetes Pod v1 types.
func kubernetesFields(t *testing.T) map[string]bool {
	t.Helper()
	data, err := os.ReadFile("testdata/podv1-fields.txt")
	if err != nil {
		t.Fatal(err)
	}
	fields := make(map[string]bool)
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		fields[line] = true
	}
	return fields
}

func TestPodFieldsMatchDecoder(t *testing.T) {
	k8s := kubernetesFields(t)
	decoded := buildStructInfos(reflect.TypeFor[pod.Pod]())

	// Every struct the decoder reaches from Pod answers to a Kubernetes
	// type of the table, and every type of the table is reached.
	named := make(map[reflect.Type][]string)
	for name, typ := range podTypes {
		named[typ] = append(named[typ], name)
	}
	for typ := range decoded {
		if len(named[typ]) == 0 {
			t.Errorf("pod.%s is decoded but no Kubernetes type of podTypes maps to it", typ.Name())
		}
	}
	for name, typ := range podTypes {
		if decoded[typ] == nil {
			t.Errorf("podTypes[%s]: pod.%s is not reached from Pod by the decoder", name, typ.Name())
		}
	}

	answers := make(map[string]podField)
	for _, f := range podFields {
		key := f.Type + " " + f.Field
		if _, dup := answers[key]; dup {
			t.Errorf("%s: answered twice", key)
		}
		answers[key] = f
		info := decoded[podTypes[f.Type]]
		if info == nil {
			t.Errorf("%s: type %s is not in podTypes", key, f.Type)
			continue
		}
		if !k8s[key] {
			t.Errorf("%s: not a Kubernetes Pod v1 field (testdata/podv1-fields.txt)", key)
		}
		_, isDecoded := info.fields[f.Field]
		switch {
		case f.Answer == runs && !isDecoded:
			t.Errorf("%s: answered runs but the decoder does not read it", key)
		case (f.Answer == refused || f.Answer == apiServer) && isDecoded:
			t.Errorf("%s: answered %s but the decoder reads it", key, f.Answer)
		case f.Answer == runs && f.Reason != "":
			t.Errorf("%s: runs, yet has a reason %q", key, f.Reason)
		case f.Answer != runs && f.Reason == "":
			t.Errorf("%s: %s without a reason", key, f.Answer)
		}
	}

	// Every field the decoder reads, and every Kubernetes field of a type
	// it decodes, is answered.
	for name, typ := range podTypes {
		for field := range decoded[typ].fields {
			if _, ok := answers[name+" "+field]; !ok {
				t.Errorf("%s %s: decoded but not in podFields", name, field)
			}
		}
	}
	for key := range k8s {
		typ, _, _ := strings.Cut(key, " ")
		if _, ok := podTypes[typ]; !ok {
			continue // a type tug refuses as a whole, by its parent field
		}
		if _, ok := answers[key]; !ok {
			t.Errorf("%s: a Kubernetes field with no answer in podFields", key)
		}
	}
}

// podFieldsDoc renders docs/podfields.md from podFields.
func podFieldsDoc() []byte {
	var b bytes.Buffer
	b.WriteString(`# Pod v1 fields

What tug does with each field of a Kubernetes 1.37 Pod manifest, type by
type. Generated from internal/manifest/podfields.go by
` + "`go test ./internal/manifest -run TestPodFieldsDoc -update`" + `; do not edit.

- **runs**: decoded, validated and applied on the node.
- **ignored on a node (warning)**: accepted; tug warns that it has no effect.
- **refused: needs an API server**: an error; only a cluster can satisfy it.
- **refused**: an error; tug does not implement it.

The fields of a type refused as a whole (an ephemeral container, an NFS
volume) are not listed: the field that holds it is. A field that is not a
Kubernetes field is reported as unknown.
`)
	typ := ""
	for _, f := range podFields {
		if f.Type != typ {
			typ = f.Type
			fmt.Fprintf(&b, "\n## %s\n\n| field | answer | reason |\n| --- | --- | --- |\n", typ)
		}
		fmt.Fprintf(&b, "| `%s` | %s | %s |\n", f.Field, f.Answer, strings.ReplaceAll(f.Reason, "|", `\|`))
	}
	return b.Bytes()
}

func TestPodFieldsDoc(t *testing.T) {
	golden(t, "../../docs/podfields.md", podFieldsDoc())
}
