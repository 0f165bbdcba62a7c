package mcp

import (
	"errors"
	"io"
	"strings"
	"testing"
)

// NextEvent names each event with data by its event field; events past
// the bound are an error, after the ones before them.
func TestNextEvent(t *testing.T) {
	in := "event: endpoint\r\ndata: /messages?s=1\r\n\r\n: ping\n\ndata: {}\n\nevent: message\ndata: " + strings.Repeat("x", 100) + "\n\n"
	r := newBoundedEventReader(strings.NewReader(in), 64)
	for _, want := range [][2]string{{"endpoint", "/messages?s=1"}, {"", "{}"}} {
		name, data, err := r.NextEvent()
		if err != nil || name != want[0] || string(data) != want[1] {
			t.Fatalf("got %q %q %v, want %q", name, data, err, want)
		}
	}
	if _, _, err := r.NextEvent(); err == nil || !strings.Contains(err.Error(), "larger than 64 bytes") {
		t.Fatalf("an event past the bound: %v", err)
	}
	r = NewEventReader(strings.NewReader("data: a\n\n"))
	if data, err := r.Next(); string(data) != "a" || err != nil {
		t.Fatalf("got %q %v", data, err)
	}
	if _, err := r.Next(); !errors.Is(err, io.EOF) {
		t.Fatalf("at the end: %v", err)
	}
}
