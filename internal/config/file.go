package config

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"time"
	"tug/internal/suggest"

	"gopkg.in/yaml.v3"
)

// Load reads a YAML config file over c. Every problem of the file is
// reported at once, each at its line and in the file's own words:
//
//	/etc/tug/config.yaml:12: unknown key "eviction-hardd" (did you mean "eviction-hard"?)
//	/etc/tug/config.yaml:7: max-pods: want an integer, got "ten"
//
// Only the values of boolean, integer and duration keys, the quantities of
// reserved and image-pull-bandwidth and pod-cidr's range are quoted back: any other string may be
// a secret (a URL's credentials, a header).
func (c *Config) Load(path string) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("read config: %w", err)
	}
	return c.decodeFile(path, data)
}

// decodeFile decodes data, the content of the config file path, over c.
// It reads the YAML into a node tree and sets each field from its node
// itself, rather than through yaml.v3's struct decoding, whose errors name
// Go types ("cannot unmarshal !!str `ten` into int").
func (c *Config) decodeFile(path string, data []byte) error {
	if errs := tabIndents(path, data); len(errs) > 0 {
		return errors.Join(errs...)
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	if err := dec.Decode(&doc); errors.Is(err, io.EOF) {
		return nil
	} else if err != nil {
		return syntaxError(path, err)
	}
	var next yaml.Node
	if err := dec.Decode(&next); err == nil {
		return fmt.Errorf("%s:%d: a second YAML document (---): the config is one mapping of keys", path, next.Line)
	} else if !errors.Is(err, io.EOF) {
		return syntaxError(path, err)
	}
	root := &doc
	if root.Kind == yaml.DocumentNode && len(root.Content) > 0 {
		root = root.Content[0]
	}
	switch {
	case root.Kind == yaml.ScalarNode && root.Tag == "!!null":
		return nil // only comments
	case root.Kind == yaml.ScalarNode:
		return fmt.Errorf("%s:%d: want \"key: value\" lines, got a single value", path, root.Line) // not echoed: it may be a pasted secret
	case root.Kind != yaml.MappingNode:
		return fmt.Errorf("%s:%d: want \"key: value\" lines, got %s", path, root.Line, describe(root))
	}

	fields := fileKeys()
	v := reflect.ValueOf(c).Elem()
	seen := map[string]int{}
	var errs []error
	for i := 0; i+1 < len(root.Content); i += 2 {
		k, val := root.Content[i], root.Content[i+1]
		if k.Kind != yaml.ScalarNode {
			errs = append(errs, fmt.Errorf("%s:%d: want a key, got %s", path, k.Line, describe(k)))
			continue
		}
		name := k.Value
		if first, dup := seen[name]; dup {
			errs = append(errs, fmt.Errorf("%s:%d: %s given twice (first on line %d)", path, k.Line, name, first))
			continue
		}
		seen[name] = k.Line
		idx, ok := fields[name]
		if !ok {
			errs = append(errs, fmt.Errorf("%s:%d: unknown key %q%s", path, k.Line, name, didYouMean(name, fields)))
			continue
		}
		if err := setField(v.FieldByIndex(idx), val); err != nil {
			errs = append(errs, fmt.Errorf("%s:%d: %s: %w", path, val.Line, name, err))
			continue
		}
		if err := c.checkSyntax(name); err != nil {
			errs = append(errs, fmt.Errorf("%s:%d: %w", path, val.Line, err))
		}
	}
	if old, ok := seen["pod-pids-limit"]; ok {
		if line, both := seen["pod-max-pids"]; both {
			errs = append(errs, fmt.Errorf("%s:%d: pod-pids-limit is the older name of pod-max-pids (line %d): give one", path, old, line))
		}
	}
	if c.PodPidsLimit != nil {
		c.PodMaxPids, c.PodPidsLimit = *c.PodPidsLimit, nil
	}
	return errors.Join(errs...)
}

// checkSyntax checks the syntax of the string value of key that a file
// error can point at (quantities, CIDRs); Validate checks them again, with
// the flags' values.
func (c *Config) checkSyntax(key string) error {
	var err error
	switch key {
	case "reserved":
		_, err = parseReserved(c.Reserved)
	case "image-pull-bandwidth":
		_, err = parseBandwidth(c.ImagePullBandwidth)
	case "pod-cidr":
		_, err = parsePodCIDR(c.PodCIDR)
	}
	return err
}

// fileKeys maps each config file key (a Config field's yaml tag) to the
// field's index.
func fileKeys() map[string][]int {
	keys := map[string][]int{}
	t := reflect.TypeFor[Config]()
	for i := range t.NumField() {
		if name := yamlKey(t.Field(i)); name != "" {
			keys[name] = t.Field(i).Index
		}
	}
	return keys
}

// yamlKey is the config file key of a Config field, "" for none.
func yamlKey(f reflect.StructField) string {
	name, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
	if name == "-" {
		return ""
	}
	return name
}

var durationType = reflect.TypeFor[time.Duration]()

// setField sets v from the YAML node n. Its errors say what the key
// wants and what it got, never a Go type.
func setField(v reflect.Value, n *yaml.Node) error {
	if v.Kind() == reflect.Pointer {
		p := reflect.New(v.Type().Elem())
		if err := setField(p.Elem(), n); err != nil {
			return err
		}
		v.Set(p)
		return nil
	}
	null := n.Kind == yaml.ScalarNode && n.Tag == "!!null"
	switch {
	case v.Type() == durationType:
		if n.Kind != yaml.ScalarNode || null {
			return fmt.Errorf("want a duration such as 30s, 5m or 1h30m, got %s", describe(n))
		}
		d, err := time.ParseDuration(n.Value)
		if err != nil {
			return fmt.Errorf("want a duration such as 30s, 5m or 1h30m, got %q", n.Value)
		}
		v.SetInt(int64(d))
	case v.Kind() == reflect.String:
		switch {
		case null:
			v.SetString("")
		case n.Kind != yaml.ScalarNode:
			return fmt.Errorf("want a string, got %s", describe(n))
		default:
			v.SetString(n.Value)
		}
	case v.Kind() == reflect.Bool:
		var b bool
		if n.Kind != yaml.ScalarNode || n.Tag != "!!bool" || n.Decode(&b) != nil {
			return fmt.Errorf("want true or false, got %s", describe(n))
		}
		v.SetBool(b)
	case v.Kind() == reflect.Int || v.Kind() == reflect.Int64:
		var i int64
		if n.Kind != yaml.ScalarNode || n.Tag != "!!int" || n.Decode(&i) != nil || v.OverflowInt(i) {
			return fmt.Errorf("want an integer, got %s", describe(n))
		}
		v.SetInt(i)
	case v.Kind() == reflect.Slice && v.Type().Elem().Kind() == reflect.String:
		var list []string
		switch {
		case null:
		case n.Kind == yaml.ScalarNode && v.Type() == reflect.TypeFor[StringList]():
			list = []string{n.Value}
		case n.Kind == yaml.ScalarNode:
			return errors.New("want a list of strings, got a single value") // not echoed: headers hold secrets
		case n.Kind != yaml.SequenceNode:
			return fmt.Errorf("want a list of strings, got %s", describe(n))
		default:
			for i, e := range n.Content {
				if e.Kind != yaml.ScalarNode {
					return fmt.Errorf("entry %d: want a string, got %s", i+1, describe(e))
				}
				list = append(list, e.Value)
			}
		}
		v.Set(reflect.ValueOf(list).Convert(v.Type()))
	default:
		// A field of a kind this function does not know:
		// TestSampleConfigLoads fails for it before it ships.
		return fmt.Errorf("cannot be set from the config file")
	}
	return nil
}

// describe names what a node holds for an error message: its kind, or a
// scalar's text quoted. It quotes only what a boolean, integer or duration
// key was given, never a string key's value.
func describe(n *yaml.Node) string {
	switch n.Kind {
	case yaml.SequenceNode:
		return "a list"
	case yaml.MappingNode:
		return "a mapping"
	case yaml.AliasNode:
		return "an alias"
	}
	if n.Tag == "!!null" {
		return "nothing"
	}
	return strconv.Quote(n.Value)
}

// tabIndents reports each line indented with a tab, which YAML forbids;
// yaml.v3 says only "found character that cannot start any token".
func tabIndents(path string, data []byte) []error {
	var errs []error
	for i, line := range strings.Split(string(data), "\n") {
		rest := strings.TrimLeft(line, " \t")
		if rest == "" || strings.HasPrefix(rest, "#") {
			continue
		}
		if strings.Contains(line[:len(line)-len(rest)], "\t") {
			errs = append(errs, fmt.Errorf("%s:%d: tab in indentation: YAML indents with spaces", path, i+1))
		}
	}
	return errs
}

var yamlLine = regexp.MustCompile(`^yaml: line (\d+): (.*)$`)

// syntaxError puts yaml.v3's "yaml: line N: msg" as "path:N: msg".
func syntaxError(path string, err error) error {
	if m := yamlLine.FindStringSubmatch(err.Error()); m != nil {
		return fmt.Errorf("%s:%s: %s", path, m[1], m[2])
	}
	return fmt.Errorf("%s: %s", path, strings.TrimPrefix(err.Error(), "yaml: "))
}

// didYouMean returns ` (did you mean "key"?)` for the known key closest to
// name: the same key written in camelCase or snake_case (the kubelet's
// config file is camelCase), or one at most two edits away.
func didYouMean(name string, keys map[string][]int) string {
	fold := func(s string) string {
		return strings.ToLower(strings.NewReplacer("-", "", "_", "").Replace(s))
	}
	best, bestDist := "", 3
	for k := range keys {
		d := suggest.Distance(name, k)
		if fold(k) == fold(name) {
			d = 0
		}
		if d < bestDist || (d == bestDist && k < best) {
			best, bestDist = k, d
		}
	}
	if best == "" {
		return ""
	}
	return fmt.Sprintf(" (did you mean %q?)", best)
}

// RootDirOf finds the root directory "tug run" with args would use,
// without parsing the rest of its configuration: --root-dir on the
// command line, else the config file's root-dir key, else the default. A
// key or flag this tug does not know is no error: the launcher of an older
// installed tug reads the configuration of a newer one.
func RootDirOf(args []string) string {
	var root, file string
	for i := 0; i < len(args); i++ {
		a := args[i]
		for _, name := range []string{"root-dir", "config"} {
			var v string
			switch {
			case a == "--"+name && i+1 < len(args):
				v = args[i+1]
			case strings.HasPrefix(a, "--"+name+"="):
				v = strings.TrimPrefix(a, "--"+name+"=")
			default:
				continue
			}
			if name == "root-dir" {
				root = v
			} else {
				file = v
			}
		}
	}
	if root != "" {
		return root
	}
	if file != "" {
		if data, err := os.ReadFile(file); err == nil {
			var m map[string]any
			if yaml.Unmarshal(data, &m) == nil {
				if s, ok := m["root-dir"].(string); ok && s != "" {
					return s
				}
			}
		}
	}
	return Default().RootDir
}
