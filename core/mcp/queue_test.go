package mcp

import (
	"context"
	"encoding/json"
	"strconv"
	"strings"
	"testing"
)

// The messages nobody reads are bounded in number and in bytes: the
// oldest make room.
func TestSSEConnQueueBounds(t *testing.T) {
	for _, tc := range []struct {
		name      string
		n, size   int
		wantFirst int // the index of the oldest message kept
		wantLen   int
	}{
		{"by number", otherQueue + 44, 10, 44, otherQueue},
		{"by bytes", 5, otherBytes / 4, 2, 3},
		{"one larger than the bound is kept alone", 1, otherBytes + 1, 0, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := &SSEConn{waiting: map[string]chan json.RawMessage{}, done: make(chan struct{}), arrived: make(chan struct{}, 1)}
			for i := range tc.n {
				note := `{"method":"n","params":{"i":` + strconv.Itoa(i) + `,"pad":"` + strings.Repeat("x", tc.size) + `"}}`
				c.deliver(json.RawMessage(note))
			}
			if len(c.other) != tc.wantLen {
				t.Fatalf("%d messages kept, want %d", len(c.other), tc.wantLen)
			}
			m, err := c.Next(context.Background())
			if err != nil || !strings.Contains(string(m), `"i":`+strconv.Itoa(tc.wantFirst)+`,`) {
				t.Fatalf("first %.40s, %v; want message %d", m, err, tc.wantFirst)
			}
		})
	}
}
