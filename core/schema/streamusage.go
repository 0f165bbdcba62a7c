package schema

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
)

// AskStreamUsage returns a JSON object body with stream_options.include_usage
// set to true, so an OpenAI-shaped provider ends its stream with a usage
// chunk the gateway can count. A body without stream_options gets the
// member added first; a null one is replaced; an object keeps its other
// members. Every other byte of the body is kept as it was. It fails on a
// body that is not one JSON object, or whose stream_options is neither an
// object nor null.
func AskStreamUsage(body []byte) ([]byte, error) {
	trimmed, off, err := jsonObject(body)
	if err != nil {
		return nil, err
	}
	open := off + 1 // just after '{'
	members := 0
	for ms := (memberScan{b: trimmed, i: 1}); ms.next(); members++ {
		if _, ok := wanted(ms.key, []string{"stream_options"}); !ok {
			continue
		}
		start, end := off+ms.valueStart, off+ms.valueEnd
		raw := body[start:end]
		options := map[string]json.RawMessage{}
		if !bytes.Equal(raw, []byte("null")) {
			if err := json.Unmarshal(raw, &options); err != nil || options == nil {
				return nil, errors.New("stream_options must be an object")
			}
		}
		options["include_usage"] = json.RawMessage("true")
		merged, err := json.Marshal(options)
		if err != nil {
			return nil, err
		}
		return bytes.Join([][]byte{body[:start], merged, body[end:]}, nil), nil
	}
	added := `"stream_options":{"include_usage":true}`
	if members > 0 {
		added += ","
	}
	return bytes.Join([][]byte{body[:open], []byte(added), body[open:]}, nil), nil
}

// jsonObject checks that body is one JSON object (what memberScan walks)
// and returns it from its '{', at offset off of body; the error says what
// is wrong otherwise.
func jsonObject(body []byte) (obj []byte, off int, err error) {
	if !json.Valid(body) {
		dec := json.NewDecoder(bytes.NewReader(body))
		var v any
		if err := dec.Decode(&v); err != nil {
			return nil, 0, fmt.Errorf("request body is not valid JSON: %s", describeJSONError(err))
		}
		return nil, 0, errors.New("request body is not valid JSON: unexpected data after the top-level value")
	}
	obj = bytes.TrimLeft(body, " \t\r\n")
	if obj[0] != '{' {
		return nil, 0, errors.New("request body must be a JSON object")
	}
	return obj, len(body) - len(obj), nil
}
