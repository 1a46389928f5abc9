package manifest

import (
	"errors"
	"fmt"
	"math"
	"reflect"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"

	"tug/internal/fieldpath"
	"tug/internal/pod"
)

// The decoder walks a yaml.Node tree into the manifest structs by
// reflection. yaml.v3's own decoder stops at the first problem and, with
// KnownFields, reports unknown keys by line only; this one reports every
// problem with its line, column and field path, and tells a Kubernetes field
// tug does not implement from a field that does not exist.

var (
	quantityType    = reflect.TypeFor[pod.Quantity]()
	intOrStringType = reflect.TypeFor[pod.IntOrString]()
)

// position is a 1-based line and column in the source.
type position struct{ line, col int }

func posOf(n *yaml.Node) position { return position{n.Line, n.Column} }

// nodeIndex records where each decoded value came from, so that validation
// can point at the offending node. Keys are full field paths
// ("items[1].spec.containers[0].image").
type nodeIndex struct {
	values map[string]position // path -> position of the value node
	keys   map[string]position // path -> position of the mapping key naming it
	bad    map[string]bool     // paths with a decode error: validation keeps quiet there
	badIn  map[string]bool     // strict ancestors of the paths in bad
}

func newNodeIndex() *nodeIndex {
	return &nodeIndex{
		values: make(map[string]position),
		keys:   make(map[string]position),
		bad:    make(map[string]bool),
		badIn:  make(map[string]bool),
	}
}

// Find, KeyAt, Has, Quiet and FailedUnder make the index the
// podvalidate.Positions of its document.
func (x *nodeIndex) Find(path string) (line, col int) {
	p := x.find(path)
	return p.line, p.col
}

func (x *nodeIndex) KeyAt(path string) (line, col int, ok bool) {
	p, ok := x.keys[path]
	return p.line, p.col, ok
}

func (x *nodeIndex) Has(path string) bool         { return x.has(path) }
func (x *nodeIndex) Quiet(path string) bool       { return x.quiet(path) }
func (x *nodeIndex) FailedUnder(path string) bool { return x.badIn[path] }

// find returns the position of path's value or, for a value that is not in
// the manifest, of its nearest written ancestor (for a missing field: the
// mapping that should hold it).
func (x *nodeIndex) find(path string) position {
	for {
		if p, ok := x.values[path]; ok {
			return p
		}
		if path == "" {
			return position{}
		}
		path = fieldpath.Parent(path)
	}
}

// has reports whether path was written in the manifest (null included).
func (x *nodeIndex) has(path string) bool {
	_, ok := x.values[path]
	return ok
}

// markBad records a decode error at path.
func (x *nodeIndex) markBad(path string) {
	x.bad[path] = true
	for path != "" {
		path = fieldpath.Parent(path)
		if x.badIn[path] {
			return
		}
		x.badIn[path] = true
	}
}

// quiet reports whether path or one of its ancestors had a decode error,
// so that a validation error there would only repeat it.
func (x *nodeIndex) quiet(path string) bool {
	for {
		if x.bad[path] {
			return true
		}
		if path == "" {
			return false
		}
		path = fieldpath.Parent(path)
	}
}

// decoder decodes one YAML document. Its zero value is not usable; see
// newDecoder.
type decoder struct {
	file   string
	index  *nodeIndex
	errs   []error
	warns  []error // *pod.FieldError: fields accepted and ignored
	budget int     // nodes left to visit; bounds alias expansion
	limit  int     // the initial budget
}

func newDecoder(file string, doc *yaml.Node) *decoder {
	limit := 10000 + 10*countNodes(doc)
	return &decoder{file: file, index: newNodeIndex(), budget: limit, limit: limit}
}

// countNodes counts the nodes of a tree without following aliases.
func countNodes(n *yaml.Node) int {
	c := 1
	for _, child := range n.Content {
		c += countNodes(child)
	}
	return c
}

// fail records a problem with the value of node n at path, and marks path
// so that validation does not report it again.
func (d *decoder) fail(n *yaml.Node, path, format string, args ...any) {
	d.report(n, path, format, args...)
	d.index.markBad(path)
}

// report records a problem at node n that leaves the value at path intact
// (an unknown or duplicate key in the mapping at path). The path is escaped
// here, where every decode error is built, as values are by %q: a key of
// the manifest in it reaches a terminal as text, never as a control
// sequence (fieldpath.Escape).
func (d *decoder) report(n *yaml.Node, path, format string, args ...any) {
	d.errs = append(d.errs, &pod.FieldError{File: d.file, Line: n.Line, Col: n.Column, Path: fieldpath.Escape(path), Msg: fmt.Sprintf(format, pod.TruncateArgs(format, args)...)})
}

// warn records a field that is accepted and ignored.
func (d *decoder) warn(n *yaml.Node, path, msg string) {
	d.warns = append(d.warns, &pod.FieldError{File: d.file, Line: n.Line, Col: n.Column, Path: fieldpath.Escape(path), Msg: msg})
}

// exhausted reports whether the node budget ran out: the document was cut
// short and its decoded values are incomplete.
func (d *decoder) exhausted() bool { return d.budget < 0 }

// resolve follows an alias and charges the visit to the budget. It returns
// false once the budget is spent (reported once).
func (d *decoder) resolve(n *yaml.Node, path string) (*yaml.Node, bool) {
	d.budget--
	if d.budget < 0 {
		if d.budget == -1 {
			d.fail(n, path, "aliases expand the document beyond %d values; decoding stopped here", d.limit)
		}
		return nil, false
	}
	if n.Kind == yaml.AliasNode {
		if n.Alias == nil {
			d.fail(n, path, "alias to nothing")
			return nil, false
		}
		return n.Alias, true
	}
	return n, true
}

// decode decodes node n into v (a settable value), recording its position
// under path. A null leaves v unset.
func (d *decoder) decode(n *yaml.Node, v reflect.Value, path string) {
	d.index.values[path] = posOf(n)
	n, ok := d.resolve(n, path)
	if !ok || isNull(n) {
		return
	}
	d.into(n, v, path)
}

func (d *decoder) into(n *yaml.Node, v reflect.Value, path string) {
	t := v.Type()
	if t == quantityType {
		d.quantity(n, v, path)
		return
	}
	if t == intOrStringType {
		d.intOrString(n, v, path)
		return
	}
	switch t.Kind() {
	case reflect.Pointer:
		p := reflect.New(t.Elem())
		d.into(n, p.Elem(), path)
		v.Set(p)
	case reflect.Struct:
		d.structure(n, v, path)
	case reflect.Slice:
		d.sequence(n, v, path)
	case reflect.Map:
		d.mapping(n, v, path)
	case reflect.String:
		if s, ok := d.str(n, path); ok {
			v.SetString(s)
		}
	case reflect.Bool:
		if b, ok := d.boolean(n, path); ok {
			v.SetBool(b)
		}
	case reflect.Int32, reflect.Int64:
		if i, ok := d.integer(n, path, t.Bits()); ok {
			v.SetInt(i)
		}
	default:
		// A manifest type with a field kind the decoder does not know: a
		// programming error, caught by TestDecoderCoversTypes.
		panic("pod: decode: unsupported field type " + t.String())
	}
}

// structure decodes a mapping into a struct, field by field.
func (d *decoder) structure(n *yaml.Node, v reflect.Value, path string) {
	if n.Kind != yaml.MappingNode {
		d.fail(n, path, "expected a mapping, got %s", describe(n))
		return
	}
	t := v.Type()
	info := structInfos[t]
	d.pairs(n, path, func(k, val *yaml.Node, name string) {
		fpath := fieldpath.Join(path, name)
		msg, ignored := ignoredFields[t][name]
		if i, ok := info.fields[name]; ok {
			if ignored { // kept, yet warned about (serviceAccountName: for the downward API only)
				d.warn(k, fpath, msg)
			}
			d.index.keys[fpath] = posOf(k)
			d.decode(val, v.Field(i), fpath)
			return
		}
		if t == reflect.TypeFor[pod.Pod]() && name == "status" {
			if !isEmpty(val) {
				d.fail(k, fpath, msgStatus)
			}
			return
		}
		if t == reflect.TypeFor[pod.ObjectMeta]() && name == "creationTimestamp" && isNull(val) {
			return // written as null by kubeadm and kubectl --dry-run=client
		}
		if ignored {
			d.warn(k, fpath, msg)
			return
		}
		if msg, ok := notImplemented[t][name]; ok {
			d.fail(k, fpath, "%s", msg)
			return
		}
		d.unknownField(k, path, name, info)
	})
}

// unknownField reports a key that is not a Kubernetes field of this type,
// at the path the field would have.
func (d *decoder) unknownField(k *yaml.Node, path, name string, info *structInfo) {
	fpath := fieldpath.Join(path, name)
	if s := info.suggest(name); s != "" {
		d.report(k, fpath, "unknown field %q (did you mean %q?)", name, s)
		return
	}
	d.report(k, fpath, "unknown field %q", name)
}

// pairs calls fn for each key of mapping n, reporting keys that are not
// strings, merge keys and duplicate keys instead.
func (d *decoder) pairs(n *yaml.Node, path string, fn func(k, v *yaml.Node, name string)) {
	var seen map[string]int // key -> line of its first use
	if len(n.Content) > 16 {
		seen = make(map[string]int, len(n.Content)/2)
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, val := n.Content[i], n.Content[i+1]
		k, ok := d.resolve(k, path)
		if !ok {
			return
		}
		if k.Kind != yaml.ScalarNode {
			d.report(k, path, "expected a string key, got %s", describe(k))
			continue
		}
		if k.ShortTag() == "!!merge" {
			d.report(k, path, "merge keys (<<) are not supported by tug")
			continue
		}
		name := k.Value
		if first, dup := d.firstUse(n, i, seen, name); dup {
			d.report(k, path, "duplicate key %q (first at line %d)", name, first)
			continue
		}
		if seen != nil {
			seen[name] = k.Line
		}
		fn(k, val, name)
	}
}

// firstUse reports whether key name already appears before index i of
// mapping n, and the line where. Small mappings are scanned; large ones use
// seen.
func (d *decoder) firstUse(n *yaml.Node, i int, seen map[string]int, name string) (int, bool) {
	if seen != nil {
		line, ok := seen[name]
		return line, ok
	}
	for j := 0; j < i; j += 2 {
		k := n.Content[j]
		if k.Kind == yaml.AliasNode && k.Alias != nil {
			k = k.Alias
		}
		if k.Kind == yaml.ScalarNode && k.Value == name && k.ShortTag() != "!!merge" {
			return n.Content[j].Line, true
		}
	}
	return 0, false
}

// sequence decodes a list into a slice.
func (d *decoder) sequence(n *yaml.Node, v reflect.Value, path string) {
	if n.Kind != yaml.SequenceNode {
		d.fail(n, path, "expected a list, got %s", describe(n))
		return
	}
	s := reflect.MakeSlice(v.Type(), len(n.Content), len(n.Content))
	for i, item := range n.Content {
		d.decode(item, s.Index(i), fieldpath.Index(path, i))
	}
	v.Set(s)
}

// mapping decodes a mapping into a map with string keys.
func (d *decoder) mapping(n *yaml.Node, v reflect.Value, path string) {
	if n.Kind != yaml.MappingNode {
		d.fail(n, path, "expected a mapping, got %s", describe(n))
		return
	}
	m := reflect.MakeMapWithSize(v.Type(), len(n.Content)/2)
	elem := v.Type().Elem()
	d.pairs(n, path, func(k, val *yaml.Node, key string) {
		kpath := fieldpath.Key(path, key)
		d.index.keys[kpath] = posOf(k)
		e := reflect.New(elem).Elem()
		d.decode(val, e, kpath)
		m.SetMapIndex(reflect.ValueOf(key).Convert(v.Type().Key()), e)
	})
	v.Set(m)
}

// str decodes a string scalar. Numbers and booleans are not strings, as in
// Kubernetes (whose YAML reader also takes a plain yes, no, on, off, y or n
// as a boolean).
func (d *decoder) str(n *yaml.Node, path string) (string, bool) {
	if n.Kind == yaml.ScalarNode {
		switch n.ShortTag() {
		case "!!str":
			if isPlain(n) && isYAML11Bool(n.Value) {
				d.fail(n, path, "expected a string, got a boolean (Kubernetes reads %s as a boolean; quote it: %q)", n.Value, n.Value)
				return "", false
			}
			return n.Value, true
		case "!!timestamp":
			return n.Value, true
		case "!!int", "!!float", "!!bool":
			d.fail(n, path, "expected a string, got %s (quote it: %q)", describe(n), n.Value)
			return "", false
		}
	}
	d.fail(n, path, "expected a string, got %s", describe(n))
	return "", false
}

// boolean decodes true or false (and the YAML 1.1 spellings Kubernetes
// accepts: yes, no, on, off, y, n).
func (d *decoder) boolean(n *yaml.Node, path string) (bool, bool) {
	if n.Kind == yaml.ScalarNode {
		switch n.ShortTag() {
		case "!!bool":
			return strings.EqualFold(n.Value, "true"), true
		case "!!str":
			if isPlain(n) && isYAML11Bool(n.Value) {
				switch n.Value {
				case "y", "Y", "yes", "Yes", "YES", "on", "On", "ON":
					return true, true
				}
				return false, true
			}
		}
	}
	d.fail(n, path, "expected a boolean (true or false), got %s", describe(n))
	return false, false
}

// integer decodes an integer that fits in bits. A float with an integral
// value ("1e3", or "08", which YAML reads as a float) is accepted, as
// Kubernetes' YAML reader does.
func (d *decoder) integer(n *yaml.Node, path string, bits int) (int64, bool) {
	if n.Kind == yaml.ScalarNode {
		var i int64
		var err error
		switch n.ShortTag() {
		case "!!int":
			i, err = strconv.ParseInt(n.Value, 0, 64)
		case "!!float":
			f, ferr := strconv.ParseFloat(n.Value, 64)
			switch {
			case ferr != nil || f != math.Trunc(f):
				d.fail(n, path, "expected an integer, got %s", n.Value)
				return 0, false
			case math.Abs(f) > 1<<53:
				err = strconv.ErrRange
			default:
				i = int64(f)
			}
		default:
			d.fail(n, path, "expected an integer, got %s", describe(n))
			return 0, false
		}
		if errors.Is(err, strconv.ErrRange) || (err == nil && bits == 32 && (i < math.MinInt32 || i > math.MaxInt32)) {
			d.fail(n, path, "%s is out of range for a %d-bit integer", n.Value, bits)
			return 0, false
		}
		if err != nil {
			d.fail(n, path, "invalid integer %q", n.Value)
			return 0, false
		}
		return i, true
	}
	d.fail(n, path, "expected an integer, got %s", describe(n))
	return 0, false
}

// quantity decodes a quantity from a string or a number.
func (d *decoder) quantity(n *yaml.Node, v reflect.Value, path string) {
	if n.Kind == yaml.ScalarNode {
		switch n.ShortTag() {
		case "!!str", "!!int", "!!float":
			s := strings.TrimSpace(n.Value)
			q, err := pod.ParseQuantity(s)
			if qe := (*pod.QuantityError)(nil); errors.As(err, &qe) {
				d.fail(n, path, "invalid quantity %q: %s", n.Value, qe.Reason)
				return
			}
			v.Set(reflect.ValueOf(q))
			return
		}
	}
	d.fail(n, path, "expected a quantity such as \"128Mi\", got %s", describe(n))
}

// intOrString decodes a port given by number or by name.
func (d *decoder) intOrString(n *yaml.Node, v reflect.Value, path string) {
	if n.Kind == yaml.ScalarNode {
		switch n.ShortTag() {
		case "!!int", "!!float":
			if i, ok := d.integer(n, path, 32); ok {
				v.Set(reflect.ValueOf(pod.FromInt(int32(i))))
			}
			return
		case "!!str":
			v.Set(reflect.ValueOf(pod.FromString(n.Value)))
			return
		}
	}
	d.fail(n, path, "expected a number or a name, got %s", describe(n))
}

// isNull reports whether n is a null scalar ("null", "~" or nothing).
func isNull(n *yaml.Node) bool {
	return n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null"
}

// isEmpty reports whether n is null or an empty mapping.
func isEmpty(n *yaml.Node) bool {
	if n.Kind == yaml.AliasNode && n.Alias != nil {
		n = n.Alias
	}
	return isNull(n) || (n.Kind == yaml.MappingNode && len(n.Content) == 0)
}

// isPlain reports whether scalar n is written plain: not quoted, not a block
// scalar, no explicit tag.
func isPlain(n *yaml.Node) bool {
	return n.Style&(yaml.SingleQuotedStyle|yaml.DoubleQuotedStyle|yaml.LiteralStyle|yaml.FoldedStyle|yaml.TaggedStyle) == 0
}

// isYAML11Bool reports whether a plain scalar is a boolean in YAML 1.1, which
// Kubernetes' YAML reader follows.
func isYAML11Bool(s string) bool {
	switch s {
	case "y", "Y", "yes", "Yes", "YES", "on", "On", "ON",
		"n", "N", "no", "No", "NO", "off", "Off", "OFF":
		return true
	}
	return false
}

// describe names a node's kind for a type-mismatch message.
func describe(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.DocumentNode:
		return "a document"
	case yaml.AliasNode:
		return "an alias"
	}
	switch n.ShortTag() {
	case "!!str":
		return "a string"
	case "!!int", "!!float":
		return "a number"
	case "!!bool":
		return "a boolean"
	case "!!null":
		return "null"
	case "!!timestamp":
		return "a timestamp"
	case "!!binary":
		return "binary data"
	}
	return "a value tagged " + n.Tag
}
