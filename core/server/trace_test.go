package server

import (
	"testing"

	"github.com/google/uuid"

	"github.com/llm-gateway/gateway/core"
)

// TestNewTraceID checks generated trace ids are version 4 UUIDs, written as
// core.NewID writes them, and distinct.
func TestNewTraceID(t *testing.T) {
	seen := map[string]bool{}
	for range 10000 {
		id := newTraceID()
		u, err := uuid.Parse(id)
		if err != nil || u.Version() != 4 || u.Variant() != uuid.RFC4122 || u.String() != id || len(id) != len(core.NewID()) {
			t.Fatalf("trace id %q: %v, version %v, variant %v", id, err, u.Version(), u.Variant())
		}
		if seen[id] {
			t.Fatalf("trace id %q generated twice", id)
		}
		seen[id] = true
	}
}
