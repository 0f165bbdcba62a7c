// Package awsstreamtest builds AWS event stream frames for tests: the
// encoding the awsstream package decodes.
package awsstreamtest

import (
	"encoding/binary"
	"hash/crc32"

	"github.com/llm-gateway/gateway/core/awsstream"
)

// Header is one event stream header of type string (7).
type Header struct{ Name, Value string }

// Frame is one frame of the headers and payload, with both CRCs.
func Frame(payload string, headers ...Header) []byte {
	var h []byte
	for _, hd := range headers {
		h = append(append(h, byte(len(hd.Name))), hd.Name...)
		h = binary.BigEndian.AppendUint16(append(h, 7), uint16(len(hd.Value)))
		h = append(h, hd.Value...)
	}
	b := binary.BigEndian.AppendUint32(nil, uint32(awsstream.PreludeLen+len(h)+len(payload)+awsstream.CRCLen))
	b = binary.BigEndian.AppendUint32(b, uint32(len(h)))
	b = binary.BigEndian.AppendUint32(b, crc32.ChecksumIEEE(b))
	b = append(append(b, h...), payload...)
	return binary.BigEndian.AppendUint32(b, crc32.ChecksumIEEE(b))
}

// Event is an event frame of type typ with a JSON payload.
func Event(typ, payload string) []byte {
	return Frame(payload, Header{":event-type", typ}, Header{":content-type", "application/json"}, Header{":message-type", "event"})
}
