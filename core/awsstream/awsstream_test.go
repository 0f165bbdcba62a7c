package awsstream

import (
	"bytes"
	"encoding/binary"
	"hash/crc32"
	"io"
	"reflect"
	"strings"
	"testing"
)

// header is one event stream header of type string (7).
type header struct{ name, value string }

// encodeFrame is one frame of the headers and payload, with both CRCs.
func encodeFrame(payload string, headers ...header) []byte {
	var h []byte
	for _, hd := range headers {
		h = append(append(h, byte(len(hd.name))), hd.name...)
		h = binary.BigEndian.AppendUint16(append(h, 7), uint16(len(hd.value)))
		h = append(h, hd.value...)
	}
	b := binary.BigEndian.AppendUint32(nil, uint32(PreludeLen+len(h)+len(payload)+CRCLen))
	b = binary.BigEndian.AppendUint32(b, uint32(len(h)))
	b = binary.BigEndian.AppendUint32(b, crc32.ChecksumIEEE(b))
	b = append(append(b, h...), payload...)
	return binary.BigEndian.AppendUint32(b, crc32.ChecksumIEEE(b))
}

// event is an event frame of type typ.
func event(typ, payload string) []byte {
	return encodeFrame(payload, header{":event-type", typ}, header{":content-type", "application/json"}, header{":message-type", "event"})
}

// TestFrameReader: frames decode with their headers and payload (headers
// of other types skipped); a bad CRC, a truncated frame and a bad length
// are errors; a clean end is io.EOF.
func TestFrameReader(t *testing.T) {
	good := event("messageStart", `{"role":"assistant"}`)
	// A frame with a non-string header (type 4, int32) before the strings.
	var mixed []byte
	{
		h := []byte{3}
		h = append(h, "ver"...)
		h = append(h, 4, 0, 0, 0, 1)
		f := encodeFrame(`{}`, header{":event-type", "metadata"}, header{":message-type", "event"})
		// Splice the int header in front of the others: rebuild the frame.
		hdrLen := binary.BigEndian.Uint32(f[4:8])
		strHeaders := f[PreludeLen : PreludeLen+hdrLen]
		all := append(append([]byte{}, h...), strHeaders...)
		total := PreludeLen + len(all) + 2 + CRCLen
		mixed = binary.BigEndian.AppendUint32(nil, uint32(total))
		mixed = binary.BigEndian.AppendUint32(mixed, uint32(len(all)))
		mixed = binary.BigEndian.AppendUint32(mixed, crc32.ChecksumIEEE(mixed))
		mixed = append(append(mixed, all...), "{}"...)
		mixed = binary.BigEndian.AppendUint32(mixed, crc32.ChecksumIEEE(mixed))
	}
	badPrelude := append([]byte{}, good...)
	badPrelude[8] ^= 1
	badMessage := append([]byte{}, good...)
	badMessage[len(badMessage)-6] ^= 1 // a payload byte
	tooLong := append([]byte{}, good...)
	binary.BigEndian.PutUint32(tooLong[0:4], MaxFrame+1)
	binary.BigEndian.PutUint32(tooLong[8:12], crc32.ChecksumIEEE(tooLong[:8]))
	for _, tc := range []struct {
		name   string
		stream []byte
		events []string // event types read before the end
		err    string   // "" for a clean io.EOF
	}{
		{"two frames", append(append([]byte{}, good...), mixed...), []string{"messageStart", "metadata"}, ""},
		{"empty", nil, nil, ""},
		{"bad prelude CRC", badPrelude, nil, "prelude CRC"},
		{"bad message CRC", badMessage, nil, "message CRC"},
		{"truncated in the prelude", good[:5], nil, "inside a frame"},
		{"truncated in the payload", append(append([]byte{}, good...), good[:len(good)-1]...), []string{"messageStart"}, "inside a frame"},
		{"too long", tooLong, nil, "bytes"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := Reader{R: bytes.NewReader(tc.stream)}
			var got []string
			for {
				f, err := d.Next()
				if err == io.EOF && tc.err == "" {
					break
				}
				if err != nil {
					if tc.err == "" || !strings.Contains(err.Error(), tc.err) {
						t.Fatalf("error %v, want %q", err, tc.err)
					}
					break
				}
				if string(f.MessageType) != "event" {
					t.Fatalf("message type %q", f.MessageType)
				}
				got = append(got, string(f.EventType))
			}
			if !reflect.DeepEqual(got, tc.events) {
				t.Fatalf("events %v, want %v", got, tc.events)
			}
		})
	}
	f, err := (&Reader{R: bytes.NewReader(good)}).Next()
	if err != nil || string(f.Payload) != `{"role":"assistant"}` {
		t.Fatalf("%v %q", err, f.Payload)
	}
}

// TestFrameLenAndDecode: a stream split into frames by FrameLen and read
// by Decode gives the frames Reader reads; a frame's headers of other
// types are skipped, and malformed headers are an error.
func TestFrameLenAndDecode(t *testing.T) {
	stream := append(event("metadata", `{"usage":{}}`), encodeFrame(`{"message":"x"}`, header{":exception-type", "throttlingException"}, header{":message-type", "exception"})...)
	var got []string
	for b := stream; len(b) > 0; {
		n, err := FrameLen(b)
		if err != nil {
			t.Fatal(err)
		}
		var f Frame
		if err := f.Decode(b[:n]); err != nil {
			t.Fatal(err)
		}
		got = append(got, string(f.MessageType)+" "+string(f.EventType)+string(f.ExceptionType)+" "+string(f.Payload))
		b = b[n:]
	}
	if want := []string{`event metadata {"usage":{}}`, `exception throttlingException {"message":"x"}`}; !reflect.DeepEqual(got, want) {
		t.Fatalf("frames %q, want %q", got, want)
	}
	bad := encodeFrame(`{}`, header{":event-type", "x"})
	bad[PreludeLen] = 200 // a header name longer than the headers
	bad = binary.BigEndian.AppendUint32(bad[:len(bad)-CRCLen], crc32.ChecksumIEEE(bad[:len(bad)-CRCLen]))
	var f Frame
	if err := f.Decode(bad); err == nil || !strings.Contains(err.Error(), "headers") {
		t.Fatalf("malformed headers: %v", err)
	}
	if _, err := (&Reader{R: bytes.NewReader(bad)}).Next(); err == nil || err == io.EOF {
		t.Fatalf("Reader on malformed headers: %v", err)
	}
}
