package schema

import "bytes"

// StripGatewayFields removes the gateway-only fields strict_reference_compliance
// and strict_open_ai_compliance (every occurrence) from a JSON object body.
// Every other byte of the body is kept as it was: members, their order,
// spacing and number spelling. A body without those fields is returned
// unchanged (the same slice). It fails on a body that is not one JSON object.
func StripGatewayFields(body []byte) ([]byte, error) {
	obj, off, err := jsonObject(body)
	if err != nil {
		return nil, err
	}
	open := off + 1 // just after '{'
	type span struct{ start, end int }
	var keep []span
	removed := false
	lastEnd := open // end of the last member, kept or not
	for ms := (memberScan{b: obj, i: 1}); ms.next(); {
		start := lastEnd // just after '{' or the previous value
		end := off + ms.valueEnd
		lastEnd = end
		if _, ok := wanted(ms.key, []string{fieldStrict, fieldStrictAlias}); ok {
			removed = true
			continue
		}
		keep = append(keep, span{start, end})
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
