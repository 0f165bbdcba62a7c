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
	dec := json.NewDecoder(bytes.NewReader(body))
	tok, err := dec.Token()
	if err != nil {
		return nil, fmt.Errorf("request body is not valid JSON: %s", describeJSONError(err))
	}
	if d, ok := tok.(json.Delim); !ok || d != '{' {
		return nil, errors.New("request body must be a JSON object")
	}
	open := int(dec.InputOffset()) // just after '{'
	members := 0
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, fmt.Errorf("request body is not valid JSON: %s", describeJSONError(err))
		}
		members++
		key, _ := tok.(string)
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return nil, fmt.Errorf("request body is not valid JSON: %s", describeJSONError(err))
		}
		if key != "stream_options" {
			continue
		}
		end := int(dec.InputOffset())
		start := end - len(raw)
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
