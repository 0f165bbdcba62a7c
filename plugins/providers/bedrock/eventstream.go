package bedrock

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
)

// The sizes of an event stream frame's parts: the prelude (total length,
// headers length, prelude CRC), the message CRC, and the largest frame
// read (AWS bounds a payload at 16 MiB and the headers at 128 KiB).
const (
	preludeLen = 12
	crcLen     = 4
	maxFrame   = 16<<20 + 128<<10 + preludeLen + crcLen
)

// frame is one decoded event stream message: the headers the stream
// translation reads, and the payload. Its strings and payload are valid
// until the next frame is read.
type frame struct {
	EventType     string // :event-type
	MessageType   string // :message-type: event, exception or error
	ExceptionType string // :exception-type
	ErrorCode     string // :error-code
	ErrorMessage  string // :error-message
	Payload       []byte
}

// frameReader reads the frames of an AWS event stream, one at a time,
// holding no more than the frame being read. Each frame is
//
//	total length (uint32) | headers length (uint32) | prelude CRC32
//	headers | payload | message CRC32
//
// big-endian, the CRCs IEEE CRC32 over the bytes before them (the
// prelude's over its 8 bytes, the message's over everything else). A
// header is its name's length (1 byte), name, type (1 byte) and value;
// type 7 (string) and 6 (bytes) values have a 2-byte length.
type frameReader struct {
	r   io.Reader
	buf []byte
	f   frame
}

// errTruncated is a stream that ends inside a frame.
var errTruncated = errors.New("Bedrock's event stream ended inside a frame")

// next reads the next frame; io.EOF at a frame boundary is the stream's
// clean end.
func (d *frameReader) next() (*frame, error) {
	if cap(d.buf) < preludeLen {
		d.buf = make([]byte, 0, 4096)
	}
	d.buf = d.buf[:preludeLen]
	if n, err := io.ReadFull(d.r, d.buf); err != nil {
		if err == io.EOF && n == 0 {
			return nil, io.EOF
		}
		if err == io.ErrUnexpectedEOF {
			return nil, errTruncated
		}
		return nil, err
	}
	total := binary.BigEndian.Uint32(d.buf[0:4])
	headersLen := binary.BigEndian.Uint32(d.buf[4:8])
	if crc32.ChecksumIEEE(d.buf[:8]) != binary.BigEndian.Uint32(d.buf[8:12]) {
		return nil, errors.New("Bedrock's event stream: a frame's prelude CRC does not match")
	}
	if total < preludeLen+crcLen || total > maxFrame || uint64(headersLen) > uint64(total)-preludeLen-crcLen {
		return nil, fmt.Errorf("Bedrock's event stream: a frame of %d bytes with %d bytes of headers", total, headersLen)
	}
	if cap(d.buf) < int(total) {
		d.buf = append(d.buf[:cap(d.buf)], make([]byte, int(total)-cap(d.buf))...)
	}
	d.buf = d.buf[:total]
	if _, err := io.ReadFull(d.r, d.buf[preludeLen:]); err != nil {
		if err == io.EOF || err == io.ErrUnexpectedEOF {
			return nil, errTruncated
		}
		return nil, err
	}
	end := total - crcLen
	if crc32.ChecksumIEEE(d.buf[:end]) != binary.BigEndian.Uint32(d.buf[end:]) {
		return nil, errors.New("Bedrock's event stream: a frame's message CRC does not match")
	}
	d.f = frame{Payload: d.buf[preludeLen+headersLen : end]}
	if err := d.f.readHeaders(d.buf[preludeLen : preludeLen+headersLen]); err != nil {
		return nil, err
	}
	return &d.f, nil
}

// errBadHeaders is a frame whose headers cannot be read.
var errBadHeaders = errors.New("Bedrock's event stream: a frame's headers are malformed")

// valueLen is the fixed value length of header types 0-9 (-1: a 2-byte
// length comes first).
var valueLen = [...]int{0, 0, 1, 2, 4, 8, -1, -1, 8, 16}

// readHeaders reads the headers the translation needs out of h.
func (f *frame) readHeaders(h []byte) error {
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
			f.EventType = known(value)
		case ":message-type":
			f.MessageType = known(value)
		case ":exception-type":
			f.ExceptionType = string(value)
		case ":error-code":
			f.ErrorCode = string(value)
		case ":error-message":
			f.ErrorMessage = string(value)
		}
	}
	return nil
}

// knownTypes are the message and event types every stream repeats:
// ConverseStream's, InvokeModelWithResponseStream's chunk, and the types of
// the Anthropic events chunks carry.
var knownTypes = [...]string{"event", "exception", "error", "messageStart", "contentBlockStart",
	"contentBlockDelta", "contentBlockStop", "messageStop", "metadata", "chunk",
	"content_block_delta", "message_start", "content_block_start", "content_block_stop", "message_delta", "message_stop", "ping"}

// known is v as a string, without allocating when it is one of knownTypes.
func known(v []byte) string {
	for _, k := range knownTypes {
		if string(v) == k {
			return k
		}
	}
	return string(v)
}
