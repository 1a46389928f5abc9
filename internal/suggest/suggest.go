// Package suggest owns the "did you mean" of tug's messages: the edit
// distance between a misspelt name (a manifest field or kind, a config
// key) and the names tug knows. It is a leaf of the standard library.
package suggest

// Distance is the Levenshtein distance between a and b, in bytes. Names
// longer than 64 bytes are no typo of a name tug knows: their distance is
// the longer length, without the work.
func Distance(a, b string) int {
	if len(a) > 64 || len(b) > 64 {
		return max(len(a), len(b))
	}
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
