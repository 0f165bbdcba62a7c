package memo

import (
	"fmt"
	"sync"
	"testing"
)

func TestMapRemembersAndStaysBounded(t *testing.T) {
	m := New[string, int](4)
	if _, ok := m.Load("a"); ok {
		t.Fatal("an empty map remembers a")
	}
	m.Store("a", 1)
	if v, ok := m.Load("a"); !ok || v != 1 {
		t.Fatalf("a = %d, %v", v, ok)
	}
	if v, loaded := m.LoadOrStore("a", 2); !loaded || v != 1 {
		t.Fatalf("LoadOrStore(a) = %d, %v; want the stored 1", v, loaded)
	}
	if v, loaded := m.LoadOrStore("b", 2); loaded || v != 2 {
		t.Fatalf("LoadOrStore(b) = %d, %v; want a new 2", v, loaded)
	}
	for i := range 100 {
		m.Store(fmt.Sprint(i), i)
	}
	n := 0
	m.m.Range(func(any, any) bool { n++; return true })
	if n > 4 {
		t.Fatalf("%d entries, bound 4", n)
	}
	if v, ok := m.Load("99"); !ok || v != 99 {
		t.Fatalf("the newest entry is gone: %d, %v", v, ok)
	}
}

// TestLoadOrStoreOnce: of concurrent callers with one new key, exactly one
// stores it.
func TestLoadOrStoreOnce(t *testing.T) {
	m := New[string, int](1024)
	var wg sync.WaitGroup
	var mu sync.Mutex
	stored := 0
	for i := range 50 {
		wg.Go(func() {
			if _, loaded := m.LoadOrStore("k", i); !loaded {
				mu.Lock()
				stored++
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if stored != 1 {
		t.Fatalf("%d callers stored the key, want 1", stored)
	}
}
