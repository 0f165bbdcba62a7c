package chat

import (
	"errors"
	"io"
	"slices"
	"strings"
	"testing"
)

// chunked hands out one chunk a Read, then err.
type chunked struct {
	chunks []string
	err    error
}

func (c *chunked) Read(p []byte) (int, error) {
	if len(c.chunks) == 0 {
		return 0, c.err
	}
	n := copy(p, c.chunks[0])
	c.chunks[0] = c.chunks[0][n:]
	if c.chunks[0] == "" {
		c.chunks = c.chunks[1:]
		if len(c.chunks) == 0 && c.err != nil {
			return n, c.err // the last bytes come with the error
		}
	}
	return n, nil
}

// Events hands out each event's data, whatever the line ends and however
// the reads cut them, skipping events without data; the source's error
// comes after the events its last bytes complete.
func TestEvents(t *testing.T) {
	broken := errors.New("connection reset")
	cases := []struct {
		name   string
		chunks []string
		err    error
		want   []string
	}{
		{"lf", []string{"data: a\n\n: ping\n\ndata: b\n\n"}, io.EOF, []string{"a", "b"}},
		{"crlf over reads", []string{"event: x\r\nda", "ta: a\r\n\r", "\ndata: b\r\n\r\n"}, io.EOF, []string{"a", "b"}},
		{"bare cr", []string{"data: a\rdata: b\r\r"}, io.EOF, []string{"a\nb"}},
		{"empty data skipped", []string{"data:\n\ndata: c\n\n"}, io.EOF, []string{"c"}},
		{"error with the last bytes", []string{"data: a\n\ndata: b\n\n"}, broken, []string{"a", "b"}},
		{"unfinished event at the end", []string{"data: a\n\ndata: b"}, io.EOF, []string{"a"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := Events{Src: &chunked{chunks: slices.Clone(tc.chunks), err: tc.err}, Name: "Test"}
			var got []string
			var err error
			for err == nil {
				for data, ok := e.Next(); ok; data, ok = e.Next() {
					got = append(got, string(data))
				}
				err = e.Fill()
			}
			if !errors.Is(err, tc.err) || !slices.Equal(got, tc.want) {
				t.Fatalf("got %q then %v, want %q then %v", got, err, tc.want, tc.err)
			}
		})
	}
	e := Events{Src: &chunked{chunks: []string{"data: " + strings.Repeat("x", MaxEvent+10)}, err: io.EOF}, Name: "Test"}
	var err error
	for err == nil {
		e.Next()
		err = e.Fill()
	}
	if err == nil || !strings.Contains(err.Error(), "Test's stream is larger than") {
		t.Fatalf("an event past MaxEvent: %v", err)
	}
}

// TestEndedAt: a stream that finished ends cleanly, after its last events;
// one that did not is broken, with the reason and io.ErrUnexpectedEOF.
func TestEndedAt(t *testing.T) {
	for _, finished := range []bool{true, false} {
		ended := false
		err := EndedAt(finished, "the stream ended early", func() { ended = true })
		switch {
		case finished && (err != io.EOF || !ended):
			t.Errorf("finished: %v, end called %v; want io.EOF after end", err, ended)
		case !finished && (ended || !errors.Is(err, io.ErrUnexpectedEOF) || err.Error() != "the stream ended early: unexpected EOF"):
			t.Errorf("not finished: %v, end called %v; want the reason wrapping io.ErrUnexpectedEOF", err, ended)
		}
	}
}
