package store_test

import (
	"testing"

	"github.com/llm-gateway/gateway/store"
	"github.com/llm-gateway/gateway/store/storetest"
)

// TestBoltStoreSuite runs the shared Store behaviour suite on bbolt. It is
// an external test package because storetest imports store.
func TestBoltStoreSuite(t *testing.T) {
	storetest.Run(t, func(t *testing.T, dir string) store.Store {
		t.Helper()
		st, err := store.Open(dir)
		if err != nil {
			t.Fatal(err)
		}
		return st
	})
}
