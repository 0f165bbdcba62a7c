package chat

import (
	"bytes"
	"fmt"
	"io"
)

// MaxEvent bounds one upstream event held while it is read.
const MaxEvent = 8 << 20

// Events reads the data of an upstream's server-sent events, one whole
// event at a time, holding back no more than the event being read. Lines
// may end in "\n" or "\r\n"; an event's data lines are joined by "\n";
// events without data are skipped.
type Events struct {
	Src  io.Reader
	Name string // the upstream's name, for errors ("Anthropic")

	in      []byte // read from Src; in[start:] is not handed out yet
	start   int
	scanned int    // in[start:scanned] are whole lines of the event being read
	data    []byte // the event's data lines, joined by "\n"
	srcErr  error  // Src's error, returned by Fill once the bytes read with it are handed out
}

// Next returns the data of the next whole event read; ok is false when
// none is whole yet (then call Fill). The data is valid until the next
// call of Next or Fill.
func (e *Events) Next() (data []byte, ok bool) {
	for {
		i := bytes.IndexByte(e.in[e.scanned:], '\n')
		if i < 0 {
			return nil, false
		}
		line := e.in[e.scanned : e.scanned+i]
		e.scanned += i + 1
		line = bytes.TrimSuffix(line, []byte{'\r'})
		if len(line) == 0 {
			e.start = e.scanned
			if len(e.data) > 0 {
				data, e.data = e.data, e.data[:0]
				return data, true
			}
			continue
		}
		if v, isData := bytes.CutPrefix(line, []byte("data:")); isData {
			if len(e.data) > 0 {
				e.data = append(e.data, '\n')
			}
			e.data = append(e.data, bytes.TrimPrefix(v, []byte{' '})...)
		}
	}
}

// Fill reads more of Src. Its error is Src's (io.EOF at the end), returned
// only once the events the bytes read with it complete have been handed
// out by Next; an event larger than MaxEvent is an error too.
func (e *Events) Fill() error {
	if e.start > 0 {
		n := copy(e.in, e.in[e.start:])
		e.in, e.scanned, e.start = e.in[:n], e.scanned-e.start, 0
	}
	if len(e.in) > MaxEvent {
		return fmt.Errorf("an event of %s's stream is larger than %d bytes", e.Name, MaxEvent)
	}
	if len(e.in) == cap(e.in) {
		e.in = append(e.in, make([]byte, max(4096, len(e.in)))...)[:len(e.in)]
	}
	if err := e.srcErr; err != nil {
		return err
	}
	n, err := e.Src.Read(e.in[len(e.in):cap(e.in)])
	e.in = e.in[:len(e.in)+n]
	if err != nil && n > 0 {
		// The events those bytes complete are handed out first.
		e.srcErr, err = err, nil
	}
	return err
}
