package sse

import (
	"bytes"
	"errors"
	"io"
	"slices"
	"strings"
	"testing"
)

// reads hands out one chunk a Read, then io.EOF.
type reads struct{ chunks []string }

func (r *reads) Read(p []byte) (int, error) {
	if len(r.chunks) == 0 {
		return 0, io.EOF
	}
	n := copy(p, r.chunks[0])
	if r.chunks[0] = r.chunks[0][n:]; r.chunks[0] == "" {
		r.chunks = r.chunks[1:]
	}
	return n, nil
}

// scanAll reads every chunk with a Scanner: the events handed out, in
// order, and the rest at the end.
func scanAll(t *testing.T, s *Scanner, chunks ...string) (events []string, rest string) {
	t.Helper()
	r := &reads{chunks: slices.Clone(chunks)} // reads consumes its chunks
	for {
		_, err := s.Fill(r)
		for ev := s.Next(); ev != nil; ev = s.Next() {
			events = append(events, string(ev))
		}
		if errors.Is(err, io.EOF) {
			return events, string(s.Rest())
		}
		if err != nil {
			t.Fatal(err)
		}
	}
}

func TestScanner(t *testing.T) {
	cases := []struct {
		name   string
		chunks []string
		want   []string
		rest   string
	}{
		{"lf", []string{"data: a\n\ndata: b\n\n"}, []string{"data: a\n\n", "data: b\n\n"}, ""},
		{"crlf", []string{"event: x\r\ndata: a\r\n\r\n"}, []string{"event: x\r\ndata: a\r\n\r\n"}, ""},
		{"bare cr", []string{"data: a\r\rdata: b\r\r"}, []string{"data: a\r\r", "data: b\r\r"}, ""},
		{"an event a byte at a time", strings.Split("data: a\r\n\r\ndata: b\n\n", ""), []string{"data: a\r\n\r", "\n", "data: b\n\n"}, ""},
		// The "\r" ending one read ends the event at once; the "\n" that
		// follows in the next read is that event's, handed out alone.
		{"crlf split over reads", []string{"data: a\r\n\r", "\ndata: b\n\n"}, []string{"data: a\r\n\r", "\n", "data: b\n\n"}, ""},
		{"unfinished last event", []string{"data: a\n\ndata: b\n"}, []string{"data: a\n\n"}, "data: b\n"},
		{"comments and fields", []string{": ping\n\nid: 7\nretry: 10\ndata: a\n\n"}, []string{": ping\n\n", "id: 7\nretry: 10\ndata: a\n\n"}, ""},
		{"nothing", nil, nil, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			// A new Scanner, and one reading into a buffer an earlier
			// stream left bytes in (small, so that it grows too).
			used := []byte("data: stale\n\n")
			var fresh, reused Scanner
			reused.UseBuffer(used)
			for _, s := range []*Scanner{&fresh, &reused} {
				got, rest := scanAll(t, s, tc.chunks...)
				if !slices.Equal(got, tc.want) || rest != tc.rest {
					t.Fatalf("got %q rest %q, want %q rest %q", got, rest, tc.want, tc.rest)
				}
			}
		})
	}
}

// A Scanner's buffer grows to hold an event of Max bytes and a byte more
// (rounded up by the allocator), so a larger event shows: handed out
// larger than Max, or held past it. It grows no further.
func TestScannerMax(t *testing.T) {
	const max = 8192
	for _, size := range []int{5000, 9000, 20000} {
		big := "data: " + strings.Repeat("x", size) + "\n\n"
		s := Scanner{Max: max}
		r := &reads{chunks: []string{big}}
		var event []byte
		for event == nil && s.Held() <= max {
			if _, err := s.Fill(r); err != nil {
				t.Fatalf("%d: %v", size, err)
			}
			event = s.Next()
		}
		if over := len(event) > max || s.Held() > max; over != (len(big) > max) || cap(s.buf) > 2*max {
			t.Fatalf("event of %d bytes: handed out %d, held %d, buffer %d", len(big), len(event), s.Held(), cap(s.buf))
		}
	}
}

// A Scanner reads into the buffer UseBuffer gave it while the stream fits,
// and Buffer hands that storage back.
func TestScannerUseBuffer(t *testing.T) {
	buf := make([]byte, 3, 64)
	var s Scanner
	s.UseBuffer(buf)
	got, _ := scanAll(t, &s, "data: a\n\n")
	if want := []string{"data: a\n\n"}; !slices.Equal(got, want) {
		t.Fatalf("got %q, want %q", got, want)
	}
	if b := s.Buffer(); len(b) != 0 || cap(b) != cap(buf) || &b[:1][0] != &buf[:1][0] {
		t.Fatalf("Buffer is not the storage given (len %d, cap %d)", len(b), cap(b))
	}
}

func TestEvents(t *testing.T) {
	var got []string
	for ev := range Events([]byte("data: a\r\n\r\n: c\n\ndata: b")) {
		got = append(got, string(ev))
	}
	if want := []string{"data: a\r\n\r\n", ": c\n\n", "data: b"}; !slices.Equal(got, want) {
		t.Fatalf("got %q, want %q", got, want)
	}
	for range Events(nil) {
		t.Fatal("an event in nothing")
	}
}

func TestData(t *testing.T) {
	cases := []struct {
		event string
		want  string
		ok    bool
	}{
		{"data: a\n\n", "a", true},
		{"data:a\n\n", "a", true},
		{"data:  two spaces\n\n", " two spaces", true},
		{"event: x\r\ndata: a\r\ndata: b\r\n\r\n", "a\nb", true},
		{"data: a\rdata:\rdata: c\r\r", "a\n\nc", true},
		{"data:\n\n", "", true},
		{": comment\nid: 1\n\n", "", false},
		{"database: no\n\n", "", false},
	}
	for _, tc := range cases {
		data, ok := Data([]byte(tc.event))
		if string(data) != tc.want || ok != tc.ok {
			t.Errorf("Data(%q) = %q %v, want %q %v", tc.event, data, ok, tc.want, tc.ok)
		}
		appended, ok := AppendData([]byte("x"), []byte(tc.event))
		if want := "x" + tc.want; string(appended) != want || ok != tc.ok {
			t.Errorf("AppendData(%q) = %q %v, want %q %v", tc.event, appended, ok, want, tc.ok)
		}
	}
	one := []byte("event: x\ndata: {\"a\":1}\n\n")
	if n := testing.AllocsPerRun(100, func() { Data(one) }); n != 0 {
		t.Errorf("Data of one data line: %v allocations", n)
	}
}

func TestAppendWithData(t *testing.T) {
	cases := []struct{ event, data, want string }{
		{"data: a\n\n", "b", "data: b\n\n"},
		{"event: x\r\ndata: a\r\nid: 1\r\n\r\n", "b", "event: x\ndata: b\nid: 1\n\n"},
		{"data: a\ndata: b\nid: 1\n\n", "c\nd", "data: c\ndata: d\nid: 1\n\n"},
		{"data: a", "", "data: \n\n"},
	}
	for _, tc := range cases {
		if got := AppendWithData([]byte("> "), []byte(tc.event), []byte(tc.data)); string(got) != "> "+tc.want {
			t.Errorf("AppendWithData(%q, %q) = %q, want %q", tc.event, tc.data, got, "> "+tc.want)
		}
	}
}

func TestField(t *testing.T) {
	event := []byte("event: first\r\neventual: no\r\nevent:last\r\ndata: x\r\n\r\n")
	if v, ok := Field(event, "event"); string(v) != "last" || !ok {
		t.Errorf("event = %q %v", v, ok)
	}
	if v, ok := Field(event, "id"); v != nil || ok {
		t.Errorf("id = %q %v", v, ok)
	}
	if v, ok := Field([]byte("id:\n\n"), "id"); !bytes.Equal(v, []byte{}) || !ok {
		t.Errorf("empty id = %q %v", v, ok)
	}
}
