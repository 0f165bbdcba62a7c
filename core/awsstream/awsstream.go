// Package awsstream reads AWS's binary event stream framing
// (application/vnd.amazon.eventstream: Bedrock's ConverseStream and
// InvokeModelWithResponseStream answers): the one decoder of its frames.
// The bedrock provider reads a stream frame by frame with Reader to
// translate it; the server splits a proxied one as it passes with FrameLen
// and Frame.Decode to read its token usage.
//
// A frame is
//
//	total length (uint32) | headers length (uint32) | prelude CRC32
//	headers | payload | message CRC32
//
// big-endian, the CRCs IEEE CRC32 over the bytes before them (the
// prelude's over its 8 bytes, the message's over everything else). A
// header is its name's length (1 byte), name, type (1 byte) and value;
// type 7 (string) and 6 (bytes) values have a 2-byte length.
package awsstream

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
)

// The sizes of a frame's parts: the prelude (total length, headers length,
// prelude CRC), the message CRC, and the largest frame read (AWS bounds a
// payload at 16 MiB and the headers at 128 KiB).
const (
	PreludeLen = 12
	CRCLen     = 4
	MaxFrame   = 16<<20 + 128<<10 + PreludeLen + CRCLen
)

// Frame is one decoded frame: the string headers its readers look at, and
// the payload. All of them point into the frame's bytes: they are valid
// until those are reused (Reader: until the next frame is read). Compare
// them as string(f.EventType) == "chunk", which does not allocate.
type Frame struct {
	EventType     []byte // :event-type
	MessageType   []byte // :message-type: event, exception or error
	ExceptionType []byte // :exception-type
	ErrorCode     []byte // :error-code
	ErrorMessage  []byte // :error-message
	Payload       []byte
}

// FrameLen reads a frame's prelude, the first PreludeLen bytes of b: the
// frame's total length, prelude and message CRC included. It fails when
// the prelude's CRC does not match or the lengths cannot be a frame's.
func FrameLen(b []byte) (int, error) {
	total := binary.BigEndian.Uint32(b[0:4])
	headersLen := binary.BigEndian.Uint32(b[4:8])
	if crc32.ChecksumIEEE(b[:8]) != binary.BigEndian.Uint32(b[8:12]) {
		return 0, errors.New("AWS event stream: a frame's prelude CRC does not match")
	}
	if total < PreludeLen+CRCLen || total > MaxFrame || uint64(headersLen) > uint64(total)-PreludeLen-CRCLen {
		return 0, fmt.Errorf("AWS event stream: a frame of %d bytes with %d bytes of headers", total, headersLen)
	}
	return int(total), nil
}

// Decode reads the frame b (exactly the FrameLen of its prelude) into f:
// it checks the message CRC and reads the headers; f's fields then point
// into b.
func (f *Frame) Decode(b []byte) error {
	headersLen := binary.BigEndian.Uint32(b[4:8])
	end := len(b) - CRCLen
	if crc32.ChecksumIEEE(b[:end]) != binary.BigEndian.Uint32(b[end:]) {
		return errors.New("AWS event stream: a frame's message CRC does not match")
	}
	*f = Frame{Payload: b[PreludeLen+headersLen : end]}
	return f.readHeaders(b[PreludeLen : PreludeLen+headersLen])
}

// errBadHeaders is a frame whose headers cannot be read.
var errBadHeaders = errors.New("AWS event stream: a frame's headers are malformed")

// valueLen is the fixed value length of header types 0-9 (-1: a 2-byte
// length comes first).
var valueLen = [...]int{0, 0, 1, 2, 4, 8, -1, -1, 8, 16}

// readHeaders reads the string headers Frame keeps out of h.
func (f *Frame) readHeaders(h []byte) error {
	for len(h) > 0 {
		n := int(h[0])
		if len(h) < 1+n+1 {
			return errBadHeaders
		}
		name, typ := h[1:1+n], h[1+n]
		h = h[2+n:]
		if int(typ) >= len(valueLen) {
			return errBadHeaders
		}
		size := valueLen[typ]
		if size < 0 {
			if len(h) < 2 {
				return errBadHeaders
			}
			size, h = int(binary.BigEndian.Uint16(h)), h[2:]
		}
		if len(h) < size {
			return errBadHeaders
		}
		value := h[:size]
		h = h[size:]
		if typ != 7 {
			continue
		}
		switch string(name) {
		case ":event-type":
			f.EventType = value
		case ":message-type":
			f.MessageType = value
		case ":exception-type":
			f.ExceptionType = value
		case ":error-code":
			f.ErrorCode = value
		case ":error-message":
			f.ErrorMessage = value
		}
	}
	return nil
}

// ErrTruncated is a stream that ends inside a frame.
var ErrTruncated = errors.New("AWS event stream ended inside a frame")

// Reader reads the frames of the stream R one at a time, holding no more
// than the frame being read.
type Reader struct {
	R   io.Reader
	buf []byte
	f   Frame
}

// Next reads the next frame, valid until the next call; io.EOF at a frame
// boundary is the stream's clean end.
func (d *Reader) Next() (*Frame, error) {
	if cap(d.buf) < PreludeLen {
		d.buf = make([]byte, 0, 4096)
	}
	d.buf = d.buf[:PreludeLen]
	if n, err := io.ReadFull(d.R, d.buf); err != nil {
		if err == io.EOF && n == 0 {
			return nil, io.EOF
		}
		if err == io.ErrUnexpectedEOF {
			return nil, ErrTruncated
		}
		return nil, err
	}
	total, err := FrameLen(d.buf)
	if err != nil {
		return nil, err
	}
	if cap(d.buf) < total {
		d.buf = append(d.buf[:cap(d.buf)], make([]byte, total-cap(d.buf))...)
	}
	d.buf = d.buf[:total]
	if _, err := io.ReadFull(d.R, d.buf[PreludeLen:]); err != nil {
		if err == io.EOF || err == io.ErrUnexpectedEOF {
			return nil, ErrTruncated
		}
		return nil, err
	}
	if err := d.f.Decode(d.buf); err != nil {
		return nil, err
	}
	return &d.f, nil
}
