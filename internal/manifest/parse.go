package manifest

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"

	"tug/internal/fieldpath"
	"tug/internal/pod"
	"tug/internal/podvalidate"
)

// ParseOptions says where the bytes came from and how to name the pods.
type ParseOptions struct {
	// Origin names the source (it goes into each pod's UID) and the file (it
	// starts every error message).
	Origin pod.Origin
	// Hostname is appended to each pod name as "-<hostname>", as the kubelet
	// does for static pods. It is lowercased and trimmed first, as the
	// kubelet does with the node name; "" leaves names as written.
	Hostname string
	// Warn, when set, is called with each warning of the file, in order
	// of position: a field or kind accepted but ignored on a node, each
	// reported once per file. It is called also when Parse fails.
	Warn func(*pod.FieldError)
}

// maxErrors bounds the errors Parse reports for one file; the rest are
// counted in a last error.
const maxErrors = 100

// Parse decodes one file's bytes (YAML or JSON; one Pod per document,
// multi-document YAML and "kind: List" or "kind: PodList" accepted), applies
// defaults (pod.SetDefaults), names the pods as static pods (Metadata.Name gets
// "-<hostname>", Metadata.ManifestName keeps the name as written,
// Metadata.UID is pod.UID(Origin.Source, namespace, name)) and validates them.
//
// Decoding is strict: a field Kubernetes has but tug does not implement, and
// a field Kubernetes does not have, are both errors, and so is a non-empty
// top-level status. All problems in the file are returned at once, joined
// with errors.Join and sorted by position; each is a *pod.FieldError reading
// "file:line:col: field.path: message". On error no pods are returned. Empty
// documents are skipped, so a file with no pods yields an empty result and
// no error. The returned pods belong to the caller. Parse is safe for
// concurrent use.
func Parse(data []byte, opts ParseOptions) ([]*pod.Pod, error) {
	p, err := parse(data, opts)
	if err != nil {
		return nil, err
	}
	return p.pods, nil
}

// parse decodes a whole file: pods and objects.
func parse(data []byte, opts ParseOptions) (*parser, error) {
	p := &parser{
		seenObj:  make(map[pod.ObjectKey]int),
		file:     opts.Origin.File,
		source:   opts.Origin.Source,
		hostname: strings.ToLower(strings.TrimSpace(opts.Hostname)),
		seen:     make(map[string]int),
	}
	if fe := jsonSyntax(p.file, data); fe != nil {
		return nil, fe
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	for {
		var doc yaml.Node
		if err := decodeDocument(dec, &doc); err != nil {
			if !errors.Is(err, io.EOF) {
				p.errs = append(p.errs, p.syntaxError(err, data))
			}
			break
		}
		p.document(&doc)
	}
	p.addTemplateClaims()
	if opts.Warn != nil {
		p.reportWarnings(opts.Warn)
	}
	if len(p.errs) > 0 {
		if fe := templateHint(p.file, data); fe != nil {
			p.errs = append(p.errs, fe)
		}
		return nil, sortErrors(p.file, p.errs)
	}
	return p, nil
}

// templateHint returns an error at the first "{{" of a file that holds a
// template's {{ }}: a Helm chart or envsubst template not rendered reads
// as YAML with puzzling errors, which this one explains.
func templateHint(file string, data []byte) *pod.FieldError {
	i := bytes.Index(data, []byte("{{"))
	if i < 0 || !bytes.Contains(data[i:], []byte("}}")) {
		return nil
	}
	line := bytes.Count(data[:i], []byte{'\n'}) + 1
	col := i - bytes.LastIndexByte(data[:i], '\n')
	return &pod.FieldError{File: file, Line: line, Col: col,
		Msg: "this looks like a template that was not rendered ({{ }}): render it first (helm template, envsubst) and give tug the result"}
}

// decodeDocument reads the next YAML document. A panic in the YAML library
// on hostile input becomes an error: manifests also come from the network.
func decodeDocument(dec *yaml.Decoder, doc *yaml.Node) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("yaml: %v", r)
		}
	}()
	return dec.Decode(doc)
}

// parser holds the state of one Parse call.
type parser struct {
	file     string
	source   string
	hostname string
	pods     []*pod.Pod
	where    []podWhere // of each pod
	errs     []error
	seen     map[string]int // namespace/name -> line of its first definition
	objects  []*pod.Object
	seenObj  map[pod.ObjectKey]int // line of each object's first definition
	warns    []error               // *pod.FieldError
	// templateClaims are the claims of the StatefulSets' volumeClaimTemplates,
	// added to objects once the whole file is read (see addTemplateClaims).
	templateClaims []*pod.Object
}

// reportWarnings calls warn for each warning in order of position, once
// per field name and message.
func (p *parser) reportWarnings(warn func(*pod.FieldError)) {
	slices.SortStableFunc(p.warns, func(a, b error) int {
		fa, fb := a.(*pod.FieldError), b.(*pod.FieldError)
		return cmp.Or(cmp.Compare(fa.Line, fb.Line), cmp.Compare(fa.Col, fb.Col))
	})
	seen := make(map[string]bool)
	for _, w := range p.warns {
		fe := w.(*pod.FieldError)
		name := fe.Path
		if i := strings.LastIndexAny(name, ".]"); i >= 0 {
			name = name[i+1:]
		}
		if key := name + "\x00" + fe.Msg; !seen[key] {
			seen[key] = true
			warn(fe)
		}
	}
}

var yamlLineError = regexp.MustCompile(`^yaml: line (\d+): (.*)$`)

// syntaxError turns a YAML parser error into a *pod.FieldError. The parser
// gives a line but no column, and its line is often not where the mistake
// is: a tab in an indentation (YAML indents with spaces) is reported where
// the tab is.
func (p *parser) syntaxError(err error, data []byte) error {
	if line, col, ok := indentTab(data); ok && (strings.Contains(err.Error(), "tab") || strings.Contains(err.Error(), "cannot start any token")) {
		return &pod.FieldError{File: p.file, Line: line, Col: col, Msg: "invalid YAML: a tab in the indentation (YAML indents with spaces)"}
	}
	fe := &pod.FieldError{File: p.file, Msg: "invalid YAML: " + strings.TrimPrefix(err.Error(), "yaml: ")}
	if m := yamlLineError.FindStringSubmatch(err.Error()); m != nil {
		fe.Line, _ = strconv.Atoi(m[1])
		fe.Msg = "invalid YAML: " + m[2]
	}
	return fe
}

// indentTab finds the first tab in the indentation of a line.
func indentTab(data []byte) (line, col int, ok bool) {
	for n, l := range bytes.Split(data, []byte{'\n'}) {
		for c, b := range l {
			if b == '\t' {
				return n + 1, c + 1, true
			}
			if b != ' ' {
				break
			}
		}
	}
	return 0, 0, false
}

// jsonSyntax checks a file named .json as JSON: YAML, which reads it
// otherwise, accepts what JSON does not (a trailing comma, comments,
// single quotes, keys without quotes).
func jsonSyntax(file string, data []byte) *pod.FieldError {
	if !strings.EqualFold(filepath.Ext(file), ".json") {
		return nil
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	for {
		var v json.RawMessage
		err := dec.Decode(&v)
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			off := dec.InputOffset()
			var se *json.SyntaxError
			if errors.As(err, &se) {
				off = se.Offset
			}
			off = min(max(off, 1), int64(len(data)))
			line := bytes.Count(data[:off-1], []byte{'\n'}) + 1
			col := int(off) - bytes.LastIndexByte(data[:off-1], '\n') - 1
			return &pod.FieldError{File: file, Line: line, Col: col, Msg: "invalid JSON: " + err.Error()}
		}
	}
}

// document decodes one YAML document: a Pod or a List of Pods.
func (p *parser) document(doc *yaml.Node) {
	if len(doc.Content) == 0 || isNull(doc.Content[0]) {
		return // an empty document
	}
	root := doc.Content[0]
	d := newDecoder(p.file, doc)
	defer func() {
		p.errs = append(p.errs, d.errs...)
		p.warns = append(p.warns, d.warns...)
	}()
	if root.Kind != yaml.MappingNode {
		d.fail(root, "", "expected a Pod manifest (a mapping), got %s", describe(root))
		return
	}
	kind := scalarField(root, "kind")
	switch {
	case kind == nil || kind.Value == "Pod":
		p.pod(d, root, "", nil)
	case kind.Value == "List" || kind.Value == "PodList":
		p.list(d, root)
	case isWorkloadKind(kind.Value):
		p.workload(d, root, kind.Value)
	case kind.Value == "CronJob":
		p.cronJob(d, root)
	case isObjectKind(kind.Value):
		p.object(d, root, kind.Value, "")
	case skippedKind(kind.Value, apiVersionOf(root)):
		// Service, ServiceAccount, Ingress, custom resources: cluster
		// objects beside the pod, which mean nothing on a node.
		d.warn(kind, "kind", skippedKindWarning(kind.Value))
	default:
		d.fail(kind, "kind", "%s", unknownKindMessage(kind.Value))
	}
}

// apiVersionOf returns the apiVersion of mapping n ("" if none).
func apiVersionOf(n *yaml.Node) string {
	if v := scalarField(n, "apiVersion"); v != nil {
		return v.Value
	}
	return ""
}

// scalarField returns the scalar value of key name in mapping n, or nil.
func scalarField(n *yaml.Node, name string) *yaml.Node {
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if k.Kind == yaml.ScalarNode && k.Value == name {
			if v.Kind == yaml.AliasNode {
				v = v.Alias
			}
			if v != nil && v.Kind == yaml.ScalarNode && !isNull(v) {
				return v
			}
			return nil
		}
	}
	return nil
}

// listInfo describes the fields of a List, for suggestions.
var listInfo = &structInfo{names: []string{"apiVersion", "items", "kind", "metadata"}}

// list decodes a List (or PodList) of Pods. Its metadata (ListMeta) only
// means something to an API server and is ignored.
func (p *parser) list(d *decoder, root *yaml.Node) {
	d.index.values[""] = posOf(root)
	var apiVersion string
	var items *yaml.Node
	d.pairs(root, "", func(k, v *yaml.Node, name string) {
		d.index.values[name] = posOf(v)
		switch name {
		case "apiVersion":
			if v, ok := d.resolve(v, name); ok && !isNull(v) {
				apiVersion, _ = d.str(v, name)
			}
		case "kind":
		case "metadata":
			if v, ok := d.resolve(v, name); ok && !isNull(v) && v.Kind != yaml.MappingNode {
				d.fail(v, name, "expected a mapping, got %s", describe(v))
			}
		case "items":
			items = v
		default:
			d.unknownField(k, "", name, listInfo)
		}
	})
	p.checkAPIVersion(d, "", apiVersion)
	if items == nil {
		return
	}
	items, ok := d.resolve(items, "items")
	if !ok || isNull(items) {
		return
	}
	if items.Kind != yaml.SequenceNode {
		d.fail(items, "items", "expected a list, got %s", describe(items))
		return
	}
	for i, item := range items.Content {
		path := fieldpath.Index("items", i)
		item, ok := d.resolve(item, path)
		if !ok {
			return
		}
		if item.Kind != yaml.MappingNode {
			d.fail(item, path, "expected a Pod manifest (a mapping), got %s", describe(item))
			continue
		}
		if kind := scalarField(item, "kind"); kind != nil && isObjectKind(kind.Value) {
			p.object(d, item, kind.Value, path)
			continue
		} else if kind != nil && kind.Value != "Pod" {
			d.fail(kind, fieldpath.Join(path, "kind"), "unsupported kind %q: the items of a List must be Pods", kind.Value)
			continue
		}
		p.pod(d, item, path, nil)
	}
}

// pod decodes, defaults, names and validates the Pod in mapping n, whose
// field paths start with prefix ("" or "items[2]"). complete, when set,
// adds to the decoded pod what its workload gives it (the volumes of a
// StatefulSet's claim templates) before it is defaulted and validated.
func (p *parser) pod(d *decoder, n *yaml.Node, prefix string, complete func(*pod.Pod)) {
	pd := new(pod.Pod)
	d.decode(n, reflect.ValueOf(pd).Elem(), prefix)
	if complete != nil {
		complete(pd)
	}
	p.checkAPIVersion(d, prefix, pd.APIVersion)
	if kind := fieldpath.Join(prefix, "kind"); pd.Kind == "" && !d.index.quiet(kind) {
		d.errs = append(d.errs, d.errorAt(kind, "required"))
	}
	pod.SetDefaults(pd)
	p.name(pd)
	if d.exhausted() {
		return // cut short: validating the rest would only add noise
	}

	errs, warns := podvalidate.Pod(pd, podvalidate.Where{File: p.file, Prefix: prefix, At: d.index})
	d.errs = append(d.errs, errs...)
	d.warns = append(d.warns, warns...)

	if m := pd.Metadata; m.ManifestName != "" {
		key := m.Namespace + "/" + m.Name
		namePath := fieldpath.Join(prefix, "metadata.name")
		if line, dup := p.seen[key]; dup {
			d.errs = append(d.errs, d.errorAt(namePath, fmt.Sprintf("pod %q is already defined at line %d", pod.Truncate(m.Namespace+"/"+m.ManifestName), line)))
		} else {
			p.seen[key] = d.index.find(namePath).line
		}
	}
	p.pods = append(p.pods, pd)
	p.where = append(p.where, podWhere{index: d.index, prefix: prefix})
}

// checkAPIVersion reports an apiVersion other than v1.
func (p *parser) checkAPIVersion(d *decoder, prefix, apiVersion string) {
	path := fieldpath.Join(prefix, "apiVersion")
	switch {
	case d.index.quiet(path):
	case apiVersion == "":
		d.errs = append(d.errs, d.errorAt(path, "required"))
	case apiVersion != "v1":
		d.errs = append(d.errs, d.errorAt(path, fmt.Sprintf("unsupported apiVersion %q: must be \"v1\"", pod.Truncate(apiVersion))))
	}
}

// errorAt returns a *pod.FieldError at the position recorded for path (or its
// nearest written ancestor).
func (d *decoder) errorAt(path, msg string) error {
	pos := d.index.find(path)
	return &pod.FieldError{File: d.file, Line: pos.line, Col: pos.col, Path: fieldpath.Escape(path), Msg: msg}
}

// name sets the static pod name and the UID.
func (p *parser) name(pd *pod.Pod) {
	m := &pd.Metadata
	m.ManifestName = m.Name
	if m.Name != "" && p.hostname != "" {
		m.Name += "-" + p.hostname
	}
	m.UID = pod.UID(p.source, m.Namespace, m.Name)
	m.Source = p.source
}

// sortErrors orders a file's errors by position, drops exact repeats (an
// anchor used twice fails twice), bounds their number and joins them.
func sortErrors(file string, errs []error) error {
	slices.SortStableFunc(errs, func(a, b error) int {
		fa, _ := a.(*pod.FieldError)
		fb, _ := b.(*pod.FieldError)
		if fa == nil || fb == nil {
			return 0
		}
		return cmp.Or(cmp.Compare(fa.Line, fb.Line), cmp.Compare(fa.Col, fb.Col))
	})
	errs = slices.CompactFunc(errs, func(a, b error) bool { return a.Error() == b.Error() })
	if len(errs) > maxErrors {
		more := len(errs) - maxErrors
		errs = append(errs[:maxErrors:maxErrors], &pod.FieldError{File: file, Msg: fmt.Sprintf("too many errors (%d more)", more)})
	}
	return errors.Join(errs...)
}
