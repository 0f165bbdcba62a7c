package chat

import (
	"fmt"
	"io"

	"github.com/llm-gateway/gateway/core/sse"
)

// MaxEvent bounds one upstream event held while it is read.
const MaxEvent = 8 << 20

// Events reads the data of an upstream's server-sent events, one whole
// event at a time, holding back no more than the event being read (lines
// and data as package sse reads them); events without data are skipped.
type Events struct {
	Src  io.Reader
	Name string // the upstream's name, for errors ("Anthropic")

	scan   sse.Scanner
	data   []byte // the data handed out last
	srcErr error  // Src's error, returned by Fill once the bytes read with it are handed out
}

// Next returns the data of the next whole event read; ok is false when
// none is whole yet (then call Fill). The data is valid until the next
// call of Next or Fill.
func (e *Events) Next() (data []byte, ok bool) {
	for event := e.scan.Next(); event != nil; event = e.scan.Next() {
		if data, ok := sse.AppendData(e.data[:0], event); ok && len(data) > 0 {
			e.data = data
			return data, true
		}
	}
	return nil, false
}

// Fill reads more of Src. Its error is Src's (io.EOF at the end), returned
// only once the events the bytes read with it complete have been handed
// out by Next; an event larger than MaxEvent is an error too.
func (e *Events) Fill() error {
	if e.scan.Held() > MaxEvent {
		return fmt.Errorf("an event of %s's stream is larger than %d bytes", e.Name, MaxEvent)
	}
	if err := e.srcErr; err != nil {
		return err
	}
	e.scan.Max = MaxEvent
	n, err := e.scan.Fill(e.Src)
	if err != nil && n > 0 {
		// The events those bytes complete are handed out first.
		e.srcErr, err = err, nil
	}
	return err
}
