// Package sse reads and writes server-sent events (text/event-stream): the
// one parser of the gateway's event streams. The server forwards a
// provider's events byte for byte, the pipeline retells a held stream for
// an output guardrail's transform, providers' translators read the events
// of their upstreams, and the MCP client reads its servers' streams; all of
// them split events with Scanner and read an event's data with Data.
//
// A line ends in "\r\n", "\n" or a bare "\r"; an event ends with a blank
// line; its data is its "data:" lines' values (one leading space dropped)
// joined by "\n".
package sse

import (
	"bytes"
	"io"
	"iter"
	"slices"
)

// Scanner splits a stream into its events as it is read, each handed out
// as the bytes received, its blank line included. A "\r" that ends one read
// and a "\n" that starts the next are one line end: the event that "\r"
// ends is handed out at once, and the "\n" on its own when it is read (so
// it never counts toward the next event's size). The zero Scanner is ready.
type Scanner struct {
	// Max bounds the buffer: it grows to hold an event of up to Max bytes
	// and one byte more (which the allocator may round up), so a larger
	// event is handed out larger than Max or held past it (Held > Max);
	// telling it is the caller's. 0: no bound.
	Max int

	buf       []byte // bytes read; buf[start:] are not handed out yet
	start     int    // where the event being read starts
	lineStart int    // where the line being read starts
	pos       int    // where the search for the next line end resumes
	afterCR   bool   // the last line end was a "\r" at the end of buf
	// cr and lf are where the next "\r" and "\n" at or after pos are
	// (len(buf): none); below pos (Fill sets -1) they are searched for
	// again. Each byte is searched once however far apart the two kinds of
	// line end are (a bare-CR stream searched to the buffer's end for a
	// "\n" at every line).
	cr, lf int
}

// initialSize is the buffer a Scanner starts with.
const initialSize = 4096

// UseBuffer makes s read into buf's storage (its contents are dropped)
// instead of allocating a buffer on the first Fill, so that a caller
// scanning many streams can reuse one (see Buffer). Call it before the
// first Fill.
func (s *Scanner) UseBuffer(buf []byte) { s.buf = buf[:0] }

// Buffer returns s's buffer, for another stream's UseBuffer once neither s
// nor the events it handed out are used any more.
func (s *Scanner) Buffer() []byte { return s.buf[:0] }

// Fill reads more of the stream from r, after dropping the events handed
// out, and returns the bytes read and r's error.
func (s *Scanner) Fill(r io.Reader) (int, error) {
	if s.start > 0 {
		n := copy(s.buf, s.buf[s.start:])
		s.buf = s.buf[:n]
		s.lineStart -= s.start
		s.pos -= s.start
		s.start = 0
	}
	switch {
	case cap(s.buf) == 0:
		s.buf = make([]byte, 0, initialSize)
	case len(s.buf) == cap(s.buf):
		// The event fills the buffer: room for one up to Max, plus a byte
		// to tell that it is over.
		grow := len(s.buf)
		if s.Max > 0 {
			grow = max(1, min(grow, s.Max+1-len(s.buf)))
		}
		s.buf = slices.Grow(s.buf, grow)
	}
	n, err := r.Read(s.buf[len(s.buf):cap(s.buf)])
	s.buf = s.buf[:len(s.buf)+n]
	s.cr, s.lf = -1, -1 // a "none" found before does not cover the new bytes
	return n, err
}

// Next returns the next complete event read, or nil when there is none
// (then Fill). The event is valid until the next call of Fill.
func (s *Scanner) Next() []byte {
	for s.pos < len(s.buf) {
		if s.afterCR {
			s.afterCR = false
			if s.buf[s.pos] == '\n' { // the rest of a "\r\n"
				s.pos++
				s.lineStart = s.pos
				if s.start == s.pos-1 {
					// The "\r" ended an event, handed out already: the
					// "\n" is that event's last byte, not the next one's.
					end := s.buf[s.start:s.pos]
					s.start = s.pos
					return end
				}
				continue
			}
		}
		eol := min(s.find(&s.cr, '\r'), s.find(&s.lf, '\n'))
		if eol == len(s.buf) {
			s.pos = len(s.buf)
			return nil
		}
		line := s.buf[s.lineStart:eol]
		s.pos = eol + 1
		if s.buf[eol] == '\r' {
			switch {
			case s.pos == len(s.buf):
				s.afterCR = true
			case s.buf[s.pos] == '\n':
				s.pos++
			}
		}
		s.lineStart = s.pos
		if len(line) > 0 {
			continue
		}
		event := s.buf[s.start:s.pos]
		s.start = s.pos
		return event
	}
	return nil
}

// Held is the size of the event being read.
func (s *Scanner) Held() int { return len(s.buf) - s.start }

// Rest hands out the bytes after the last complete event, at the stream's
// end.
func (s *Scanner) Rest() []byte {
	rest := s.buf[s.start:]
	s.start, s.lineStart, s.pos = len(s.buf), len(s.buf), len(s.buf)
	return rest
}

// find is the index of the next c at or after s.pos (len(s.buf): none),
// kept in *at so it is searched for again only once passed.
func (s *Scanner) find(at *int, c byte) int {
	if *at < s.pos {
		*at = len(s.buf)
		if i := bytes.IndexByte(s.buf[s.pos:], c); i >= 0 {
			*at = s.pos + i
		}
	}
	return *at
}

// Events are the events of a whole stream held in memory, as Scanner hands
// them out; an unfinished last one too.
func Events(stream []byte) iter.Seq[[]byte] {
	return func(yield func([]byte) bool) {
		s := Scanner{buf: stream, cr: -1, lf: -1}
		for ev := s.Next(); ev != nil; ev = s.Next() {
			if !yield(ev) {
				return
			}
		}
		if rest := s.Rest(); len(rest) > 0 {
			yield(rest)
		}
	}
}

// Lines are the lines of an event, without their line ends; blank lines
// are left out.
func Lines(event []byte) iter.Seq[[]byte] {
	return func(yield func([]byte) bool) {
		for i := 0; i < len(event); {
			j := i
			for j < len(event) && event[j] != '\n' && event[j] != '\r' {
				j++
			}
			if j > i && !yield(event[i:j]) {
				return
			}
			i = j + 1
		}
	}
}

// dataValue is a line's data value: what follows "data:" and one space;
// ok is false when it is not a data line.
func dataValue(line []byte) (v []byte, ok bool) {
	v, ok = bytes.CutPrefix(line, []byte("data:"))
	return bytes.TrimPrefix(v, []byte(" ")), ok
}

// Data is an event's data; ok is false when it has no data line. The data
// of one data line is a part of event, so reading the usual event does not
// allocate; the data of several is a new slice.
func Data(event []byte) (data []byte, ok bool) {
	lines := 0
	for line := range Lines(event) {
		v, isData := dataValue(line)
		if !isData {
			continue
		}
		switch lines {
		case 0:
			data = v // a part of event: not appended to
		case 1:
			data = append(append(bytes.Clone(data), '\n'), v...)
		default:
			data = append(append(data, '\n'), v...)
		}
		lines++
	}
	return data, lines > 0
}

// AppendData appends an event's data to dst; ok is false (dst unchanged)
// when it has no data line.
func AppendData(dst, event []byte) (out []byte, ok bool) {
	out = dst
	for line := range Lines(event) {
		if v, isData := dataValue(line); isData {
			if ok {
				out = append(out, '\n')
			}
			out, ok = append(out, v...), true
		}
	}
	return out, ok
}

// AppendWithData appends event to dst with its data replaced by data:
// written as data lines (one per line of data) where its first data line
// was, its other lines kept as they were; lines end in "\n", and the event
// with a blank line.
func AppendWithData(dst, event, data []byte) []byte {
	wrote := false
	for line := range Lines(event) {
		if _, isData := dataValue(line); !isData {
			dst = append(append(dst, line...), '\n')
			continue
		}
		if wrote {
			continue
		}
		wrote = true
		dst = AppendDataLines(dst, data)
	}
	return append(dst, '\n')
}

// AppendDataLines appends data as data lines, one per line of it, each
// ending in "\n" (no blank line).
func AppendDataLines(dst, data []byte) []byte {
	for {
		line, rest, more := bytes.Cut(data, []byte("\n"))
		dst = append(append(append(dst, "data: "...), line...), '\n')
		if !more {
			return dst
		}
		data = rest
	}
}

// Field is the value of an event's last field called name ("event",
// "id", ...): what follows "name:" and one space; ok is false when it has
// none.
func Field(event []byte, name string) (value []byte, ok bool) {
	for line := range Lines(event) {
		if v, found := bytes.CutPrefix(line, []byte(name)); found && len(v) > 0 && v[0] == ':' {
			value, ok = bytes.TrimPrefix(v[1:], []byte(" ")), true
		}
	}
	return value, ok
}
