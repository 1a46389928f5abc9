// Package keylock owns a mutex per key: a container's task deletes, a
// pod's shim group, the mount of one image volume of a pod are each
// serialised by key while different keys go on at once.
package keylock

import "sync"

// Mutex is a mutex per key; a key's entry lives while it is locked or
// waited for. The zero value is ready to use.
type Mutex struct {
	mu   sync.Mutex
	keys map[string]*entry
}

type entry struct {
	mu   sync.Mutex
	refs int // holders and waiters
}

// Lock locks key and returns its unlock.
func (k *Mutex) Lock(key string) (unlock func()) {
	k.mu.Lock()
	if k.keys == nil {
		k.keys = map[string]*entry{}
	}
	e := k.keys[key]
	if e == nil {
		e = &entry{}
		k.keys[key] = e
	}
	e.refs++
	k.mu.Unlock()
	e.mu.Lock()
	return func() {
		e.mu.Unlock()
		k.mu.Lock()
		if e.refs--; e.refs == 0 {
			delete(k.keys, key)
		}
		k.mu.Unlock()
	}
}
