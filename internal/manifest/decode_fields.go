package manifest

import (
	"reflect"
	"slices"
	"strings"

	"tug/internal/pod"
	"tug/internal/suggest"
)

// structInfo is what the decoder knows about one manifest struct type.
type structInfo struct {
	fields map[string]int // yaml field name -> struct field index
	names  []string       // every name a user may have meant: fields and known Kubernetes fields, sorted
}

// structInfos describes every struct type reachable from Pod. It is built
// once at package initialisation and only read afterwards.
var structInfos = buildStructInfos(reflect.TypeFor[pod.Pod](), reflect.TypeFor[pod.ConfigMap](),
	reflect.TypeFor[pod.Secret](), reflect.TypeFor[pod.PersistentVolumeClaim]())

// buildStructInfos walks t and the types of its fields and describes each
// struct type found (Quantity excepted: it is a scalar in a manifest).
func buildStructInfos(roots ...reflect.Type) map[reflect.Type]*structInfo {
	infos := make(map[reflect.Type]*structInfo)
	var walk func(t reflect.Type)
	walk = func(t reflect.Type) {
		for t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice || t.Kind() == reflect.Map {
			t = t.Elem()
		}
		if t.Kind() != reflect.Struct || t == quantityType || t == intOrStringType || infos[t] != nil {
			return
		}
		info := &structInfo{fields: make(map[string]int)}
		infos[t] = info
		for i := range t.NumField() {
			f := t.Field(i)
			name, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
			if !f.IsExported() || name == "-" {
				continue // never read from input
			}
			if name == "" {
				name = f.Name
			}
			info.fields[name] = i
			info.names = append(info.names, name)
			walk(f.Type)
		}
		for name := range notImplemented[t] {
			info.names = append(info.names, name)
		}
		slices.Sort(info.names)
	}
	for _, t := range roots {
		walk(t)
	}
	return infos
}

// suggest returns the known field name closest to a misspelt one, or "" if
// none is close: a name differing only in case, or within an edit distance
// of about a third of its length.
func (info *structInfo) suggest(name string) string {
	best, bestDist := "", len(name)/3+1
	if bestDist > 3 {
		bestDist = 3
	}
	for _, known := range info.names {
		if strings.EqualFold(known, name) {
			return known
		}
		if d := suggest.Distance(strings.ToLower(name), strings.ToLower(known)); d < bestDist || (d == bestDist && best == "") {
			best, bestDist = known, d
		}
	}
	return best
}
