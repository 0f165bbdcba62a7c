package awsstream_test

import (
	"bytes"
	"encoding/binary"
	"hash/crc32"
	"io"
	"reflect"
	"strings"
	"testing"

	"github.com/llm-gateway/gateway/core/awsstream"
	"github.com/llm-gateway/gateway/core/awsstream/awsstreamtest"
)

// TestFrameReader: frames decode with their headers and payload (headers
// of other types skipped); a bad CRC, a truncated frame and a bad length
// are errors; a clean end is io.EOF.
func TestFrameReader(t *testing.T) {
	good := awsstreamtest.Event("messageStart", `{"role":"assistant"}`)
	// A frame with a non-string header (type 4, int32) before the strings.
	var mixed []byte
	{
		h := []byte{3}
		h = append(h, "ver"...)
		h = append(h, 4, 0, 0, 0, 1)
		f := awsstreamtest.Frame(`{}`, awsstreamtest.Header{Name: ":event-type", Value: "metadata"}, awsstreamtest.Header{Name: ":message-type", Value: "event"})
		// Splice the int header in front of the others: rebuild the frame.
		hdrLen := binary.BigEndian.Uint32(f[4:8])
		strHeaders := f[awsstream.PreludeLen : awsstream.PreludeLen+hdrLen]
		all := append(append([]byte{}, h...), strHeaders...)
		total := awsstream.PreludeLen + len(all) + 2 + awsstream.CRCLen
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
	binary.BigEndian.PutUint32(tooLong[0:4], awsstream.MaxFrame+1)
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
			d := awsstream.Reader{R: bytes.NewReader(tc.stream)}
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
	f, err := (&awsstream.Reader{R: bytes.NewReader(good)}).Next()
	if err != nil || string(f.Payload) != `{"role":"assistant"}` {
		t.Fatalf("%v %q", err, f.Payload)
	}
}

// TestFrameLenAndDecode: a stream split into frames by awsstream.FrameLen and read
// by Decode gives the frames awsstream.Reader reads; a frame's headers of other
// types are skipped, and malformed headers are an error.
func TestFrameLenAndDecode(t *testing.T) {
	stream := append(awsstreamtest.Event("metadata", `{"usage":{}}`), awsstreamtest.Frame(`{"message":"x"}`, awsstreamtest.Header{Name: ":exception-type", Value: "throttlingException"}, awsstreamtest.Header{Name: ":message-type", Value: "exception"})...)
	var got []string
	for b := stream; len(b) > 0; {
		n, err := awsstream.FrameLen(b)
		if err != nil {
			t.Fatal(err)
		}
		var f awsstream.Frame
		if err := f.Decode(b[:n]); err != nil {
			t.Fatal(err)
		}
		got = append(got, string(f.MessageType)+" "+string(f.EventType)+string(f.ExceptionType)+" "+string(f.Payload))
		b = b[n:]
	}
	if want := []string{`event metadata {"usage":{}}`, `exception throttlingException {"message":"x"}`}; !reflect.DeepEqual(got, want) {
		t.Fatalf("frames %q, want %q", got, want)
	}
	bad := awsstreamtest.Frame(`{}`, awsstreamtest.Header{Name: ":event-type", Value: "x"})
	bad[awsstream.PreludeLen] = 200 // a header name longer than the headers
	bad = binary.BigEndian.AppendUint32(bad[:len(bad)-awsstream.CRCLen], crc32.ChecksumIEEE(bad[:len(bad)-awsstream.CRCLen]))
	var f awsstream.Frame
	if err := f.Decode(bad); err == nil || !strings.Contains(err.Error(), "headers") {
		t.Fatalf("malformed headers: %v", err)
	}
	if _, err := (&awsstream.Reader{R: bytes.NewReader(bad)}).Next(); err == nil || err == io.EOF {
		t.Fatalf("awsstream.Reader on malformed headers: %v", err)
	}
}
