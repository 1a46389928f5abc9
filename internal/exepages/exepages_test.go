package exepages

import "testing"

// The advice reaches the test binary's own read-only mappings, and paging
// them out leaves the process running: the code and the maps reader run
// again and find the same mappings.
func TestGiveBack(t *testing.T) {
	n, err := GiveBack()
	if err != nil {
		t.Fatal(err)
	}
	if n < 1<<20 {
		t.Errorf("advised %d bytes of the executable, want its text and read-only data (MiBs)", n)
	}
	again, err := advise()
	if err != nil {
		t.Fatal(err)
	}
	if again != n {
		t.Errorf("after the page-out the read-only mappings span %d bytes, before %d", again, n)
	}
}
