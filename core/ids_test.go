package core

import (
	"encoding/hex"
	"fmt"
	"strings"
	"testing"
	"time"
)

func TestNewLogID(t *testing.T) {
	at := time.Date(2026, 1, 2, 3, 4, 5, 6, time.UTC)
	id := NewLogID(at)
	if len(id) != 24 || !strings.HasPrefix(id, LogIDPrefix(at)) || LogIDPrefix(at) != fmt.Sprintf("%016x", at.UnixNano()) {
		t.Fatalf("id %q, prefix %q", id, LogIDPrefix(at))
	}
	if _, err := hex.DecodeString(id); err != nil {
		t.Fatalf("id %q is not hex: %v", id, err)
	}
	if NewLogID(at) == id {
		t.Fatal("two ids for one time are equal")
	}
	if later := NewLogID(at.Add(time.Nanosecond)); later <= id[:16]+"ffffffff" {
		t.Fatalf("%q does not sort after %q", later, id)
	}
}
