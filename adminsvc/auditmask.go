package adminsvc

import (
	"bytes"
	"encoding/json"
	"strings"
)

// masked replaces a secret value in an audit record.
const masked = "****"

// maxAuditBody is the largest request body recorded field by field; a
// larger one is recorded as a summary only.
const maxAuditBody = 256 << 10

// nameSeparators drops the separators sensitiveName ignores.
var nameSeparators = strings.NewReplacer("-", "", "_", "", ".", "")

// sensitiveName reports whether a body field, query parameter or header
// with this name carries a secret: api_key, x-gateway-api-key, secret,
// client_secret, token, access_token, password, auth_config, credentials,
// Authorization, Cookie... ("max_tokens" and "key_id" are not).
func sensitiveName(name string) bool {
	n := nameSeparators.Replace(strings.ToLower(name))
	switch n {
	case "authconfig", "authorization", "proxyauthorization", "auth", "cookie", "setcookie":
		return true
	}
	for _, suffix := range []string{"key", "secret", "token", "password", "passwd", "credential", "credentials", "privatekey"} {
		if strings.HasSuffix(n, suffix) {
			return true
		}
	}
	return false
}

// headerMaps are fields whose object maps header names to values sent
// upstream (an integration's or MCP server's custom_headers): every value
// is a credential, whatever the header's name ("X-Custom-Auth" too).
var headerMaps = map[string]bool{"customheaders": true, "headers": true}

// maskJSON masks, at any depth, the values of sensitive fields and every
// value of a header map.
func maskJSON(v any) any {
	switch t := v.(type) {
	case map[string]any:
		for k, val := range t {
			if sensitiveName(k) {
				t[k] = masked
			} else if hm, ok := val.(map[string]any); ok && headerMaps[nameSeparators.Replace(strings.ToLower(k))] {
				for h := range hm {
					hm[h] = masked
				}
			} else {
				t[k] = maskJSON(val)
			}
		}
	case []any:
		for i := range t {
			t[i] = maskJSON(t[i])
		}
	}
	return v
}

// maskedBody is the request body as the audit log keeps it: JSON with
// its secrets masked, or a summary for anything else.
func maskedBody(contentType string, body []byte) json.RawMessage {
	body = bytes.TrimSpace(body)
	if len(body) == 0 {
		return nil
	}
	summary := func(note string) json.RawMessage {
		b, _ := json.Marshal(map[string]any{"content_type": contentType, "size": len(body), "note": note})
		return b
	}
	if len(body) > maxAuditBody {
		return summary("body too large to record")
	}
	b, ok := maskJSONBytes(body)
	if !ok {
		return summary("not JSON; not recorded")
	}
	return b
}

// maskJSONBytes re-encodes a JSON document with its secrets masked; false
// when it is not one JSON document.
func maskJSONBytes(raw []byte) ([]byte, bool) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil || dec.More() {
		return nil, false
	}
	b, err := json.Marshal(maskJSON(v))
	return b, err == nil
}

// maskedPairs copies name/value pairs (headers, query parameters), masking
// the sensitive ones: a key keeps its recognisable ends as API keys do on
// read ("gw-A****wxyz"), so an operator can tell which key failed.
func maskedPairs(visit func(func(name, value string))) map[string]string {
	out := map[string]string{}
	visit(func(name, value string) {
		switch {
		case sensitiveName(name):
			value = maskKey(value)
		case strings.HasPrefix(value, "{") || strings.HasPrefix(value, "["):
			// An inline x-gateway-config carries provider keys.
			if m, ok := maskJSONBytes([]byte(value)); ok {
				value = string(m)
			} else {
				value = masked
			}
		}
		out[strings.ToLower(name)] = strings.Clone(value)
	})
	if len(out) == 0 {
		return nil
	}
	return out
}
