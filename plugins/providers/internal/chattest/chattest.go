// Package chattest holds what the tests of the translated streams share.
package chattest

import (
	"io"
	"strings"
	"testing"
	"testing/iotest"
)

// Chunk is the chat.completion.chunk event of model expected for delta
// and finish ("null" or a quoted reason), with usage when not empty.
func Chunk(id, model, delta, finish, usage string) string {
	s := `data: {"id":"` + id + `","object":"chat.completion.chunk","created":1700000000,"model":"` + model +
		`","choices":[{"index":0,"delta":` + delta + `,"logprobs":null,"finish_reason":` + finish + `}]`
	if usage != "" {
		s += `,"usage":` + usage
	}
	return s + "}\n\n"
}

// ReadsAs checks, in subtests named after name, that translate makes of
// in read whole, then a byte at a time, the stream want without error.
func ReadsAs(t *testing.T, name, in, want string, translate func(io.Reader) io.ReadCloser) {
	t.Helper()
	for _, oneByte := range []bool{false, true} {
		sub := name
		if oneByte {
			sub += ", a byte at a time"
		}
		t.Run(sub, func(t *testing.T) {
			var src io.Reader = strings.NewReader(in)
			if oneByte {
				src = iotest.OneByteReader(src)
			}
			got, err := io.ReadAll(translate(src))
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != want {
				t.Errorf("got\n%s\nwant\n%s", got, want)
			}
		})
	}
}

// FailsAfter checks that s hands out want, then fails with an error
// wantErr accepts.
func FailsAfter(t *testing.T, s io.Reader, want string, wantErr func(error) bool) {
	t.Helper()
	got, err := io.ReadAll(s)
	if !wantErr(err) {
		t.Errorf("error %v", err)
	}
	if string(got) != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
}

// ScriptedReader hands out one piece per Read and counts the reads.
type ScriptedReader struct {
	Pieces []string
	Reads  int
}

func (r *ScriptedReader) Read(p []byte) (int, error) {
	if r.Reads == len(r.Pieces) {
		return 0, io.EOF
	}
	r.Reads++
	return copy(p, r.Pieces[r.Reads-1]), nil
}
