package chat

import (
	"fmt"
	"io"
)

// Stream is what a translated stream shares: the upstream it reads and
// the chunks it has translated, handed out by ReadWith. A translation
// embeds it.
type Stream struct {
	Src io.ReadCloser // the upstream's stream
	Out []byte        // translated; Out[off:] is not handed out yet
	off int
	Err error // returned once Out is handed out: the stream's end
}

// ReadWith hands out into p what Out holds, first calling fill (which
// appends to Out or sets Err) for as long as it holds nothing new.
func (s *Stream) ReadWith(p []byte, fill func()) (int, error) {
	for s.off == len(s.Out) {
		s.Out, s.off = s.Out[:0], 0
		if s.Err != nil {
			return 0, s.Err
		}
		fill()
	}
	n := copy(p, s.Out[s.off:])
	s.off += n
	return n, nil
}

// FillFrom is a translation's fill for ReadWith: it translates the next
// whole event of events, reading the upstream when none is whole yet. At
// the upstream's end atEnd says how the stream ends: with io.EOF a clean
// end (after appending the last of Out), with another error a broken one.
func (s *Stream) FillFrom(events *Events, translate func(data []byte) error, atEnd func() error) {
	if data, ok := events.Next(); ok {
		if err := translate(data); err != nil {
			s.Err = err
		}
		return
	}
	if err := events.Fill(); err == io.EOF {
		s.Err = atEnd()
	} else if err != nil {
		s.Err = err
	}
}

// EndedAt is the atEnd (see FillFrom) of a translation whose upstream says
// how the answer finished before it ends: once it has (finished), the
// stream ends cleanly, end appending its last events; before, it is
// broken, with the error broken wrapping io.ErrUnexpectedEOF.
func EndedAt(finished bool, broken string, end func()) error {
	if !finished {
		return fmt.Errorf("%s: %w", broken, io.ErrUnexpectedEOF)
	}
	end()
	return io.EOF
}

// Close closes Src.
func (s *Stream) Close() error { return s.Src.Close() }
