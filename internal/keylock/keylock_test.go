package keylock

import (
	"sync"
	"testing"
	"time"
)

func TestMutex(t *testing.T) {
	var k Mutex
	unlockA := k.Lock("a")
	// Another key is not held up by a.
	done := make(chan struct{})
	go func() { k.Lock("b")(); close(done) }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("lock(b) waited for a")
	}
	// The same key waits until it is unlocked.
	var mu sync.Mutex
	order := []string{}
	got := make(chan struct{})
	go func() {
		unlock := k.Lock("a")
		mu.Lock()
		order = append(order, "second")
		mu.Unlock()
		unlock()
		close(got)
	}()
	time.Sleep(50 * time.Millisecond)
	mu.Lock()
	order = append(order, "first")
	mu.Unlock()
	unlockA()
	<-got
	if len(order) != 2 || order[0] != "first" {
		t.Errorf("order = %v, want the second lock of a after the first's unlock", order)
	}
	if len(k.keys) != 0 {
		t.Errorf("%d keys left after every unlock, want 0", len(k.keys))
	}
}
