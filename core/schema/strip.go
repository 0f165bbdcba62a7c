package schema

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
)

// StripGatewayFields removes the gateway-only fields strict_reference_compliance
// and strict_open_ai_compliance (every occurrence) from a JSON object body.
// Every other byte of the body is kept as it was: members, their order,
// spacing and number spelling. A body without those fields is returned
// unchanged (the same slice). It fails on a body that is not one JSON object.
func StripGatewayFields(body []byte) ([]byte, error) {
	dec := json.NewDecoder(bytes.NewReader(body))
	tok, err := dec.Token()
	if err != nil {
		return nil, fmt.Errorf("request body is not valid JSON: %s", describeJSONError(err))
	}
	if d, ok := tok.(json.Delim); !ok || d != '{' {
		return nil, errors.New("request body must be a JSON object")
	}
	open := int(dec.InputOffset()) // just after '{'
	type span struct{ start, end int }
	var keep []span
	removed := false
	lastEnd := open // end of the last member, kept or not
	for dec.More() {
		start := lastEnd // just after '{' or the previous value (More skips spacing)
		tok, err := dec.Token()
		if err != nil {
			return nil, fmt.Errorf("request body is not valid JSON: %s", describeJSONError(err))
		}
		key, _ := tok.(string)
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return nil, fmt.Errorf("request body is not valid JSON: %s", describeJSONError(err))
		}
		end := int(dec.InputOffset())
		lastEnd = end
		if key == fieldStrict || key == fieldStrictAlias {
			removed = true
			continue
		}
		keep = append(keep, span{start, end})
	}
	if _, err := dec.Token(); err != nil { // the closing '}'
		return nil, fmt.Errorf("request body is not valid JSON: %s", describeJSONError(err))
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("request body is not valid JSON: unexpected data after the top-level value")
	}
	if !removed {
		return body, nil
	}
	// Each member's span is "<ws>,<ws>key:value" except the first member's,
	// which has no comma. The first kept member loses its comma, if any.
	out := make([]byte, 0, len(body))
	out = append(out, body[:open]...)
	for i, s := range keep {
		seg := body[s.start:s.end]
		if i == 0 {
			trimmed := bytes.TrimLeft(seg, " \t\r\n")
			if len(trimmed) > 0 && trimmed[0] == ',' {
				seg = trimmed[1:]
			}
		}
		out = append(out, seg...)
	}
	out = append(out, body[lastEnd:]...) // spacing, '}' and trailing spacing
	return out, nil
}
