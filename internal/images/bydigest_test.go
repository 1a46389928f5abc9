package images

import (
	"fmt"
	"testing"
)

func TestByDigest(t *testing.T) {
	var c byDigest[string]
	if _, ok := c.get("sha256:a"); ok {
		t.Fatal("an empty cache has a value")
	}
	c.put("sha256:a", "chain-a")
	if v, ok := c.get("sha256:a"); !ok || v != "chain-a" {
		t.Fatalf("get = %q, %v; want the value put", v, ok)
	}
	c.drop("sha256:a")
	if _, ok := c.get("sha256:a"); ok {
		t.Fatal("a dropped value is still there")
	}
	c.put("sha256:a", "chain-a")
	for i := range maxByDigest {
		c.put(fmt.Sprint("sha256:other", i), "")
	}
	if n := len(c.m); n > maxByDigest {
		t.Fatalf("%d values kept, want at most %d", n, maxByDigest)
	}
	if _, ok := c.get("sha256:a"); ok {
		t.Error("a full cache kept its oldest value: it never starts empty again")
	}
}
