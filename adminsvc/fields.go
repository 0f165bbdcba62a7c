package adminsvc

import (
	"encoding/json"
	"errors"
	"net/mail"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/llm-gateway/gateway/adminsvc/alerts"
	"github.com/llm-gateway/gateway/core"
	"github.com/llm-gateway/gateway/store"
)

// strField reads a string field of a request body: trimmed, at most maxLen
// characters, required or not. ok is false when it is absent or null.
func strField(fields map[string]json.RawMessage, name string, required bool, maxLen int, p *problems) (v string, ok bool) {
	return strFieldAt(fields, "", name, required, maxLen, p)
}

// strFieldAt is strField for a field of a nested object at (a field path
// such as "workspaces[0]").
func strFieldAt(fields map[string]json.RawMessage, at, name string, required bool, maxLen int, p *problems) (v string, ok bool) {
	param := fieldPath(at, name)
	raw, present := fields[name]
	if !present || string(raw) == "null" {
		if required {
			p.add(param, "is required")
		}
		return "", false
	}
	if json.Unmarshal(raw, &v) != nil {
		p.add(param, "must be a string")
		return "", false
	}
	v = strings.TrimSpace(v)
	switch {
	case required && v == "":
		p.add(param, "must not be empty")
	case len(v) > maxLen:
		p.add(param, "must be at most %d characters", maxLen)
	}
	return v, true
}

// strInto is strFieldAt storing the value into dst; it reports whether the
// field was present and a string.
func strInto(fields map[string]json.RawMessage, at, name string, dst *string, required bool, maxLen int, p *problems) bool {
	v, ok := strFieldAt(fields, at, name, required, maxLen, p)
	if ok {
		*dst = v
	}
	return ok
}

// slugField reads an optional slug (^[a-zA-Z0-9_-]+$, at most 255).
func slugField(fields map[string]json.RawMessage, name string, p *problems) string {
	s, ok := strField(fields, name, false, 255, p)
	if ok && !reSlug.MatchString(s) {
		p.add(name, "must match ^[a-zA-Z0-9_-]+$, got %q", s)
		return ""
	}
	return s
}

// expiresField reads an optional expires_at (see futureTime); set reports
// whether the field was sent (null clears it).
func expiresField(fields map[string]json.RawMessage, now time.Time, p *problems) (t *time.Time, set bool) {
	raw, ok := fields["expires_at"]
	if !ok {
		return nil, false
	}
	return futureTime(raw, "expires_at", now, p), true
}

// futureTime reads an RFC 3339 date-time after now; null gives nil.
func futureTime(raw json.RawMessage, param string, now time.Time, p *problems) *time.Time {
	if string(raw) == "null" {
		return nil
	}
	var t time.Time
	if json.Unmarshal(raw, &t) != nil {
		p.add(param, "must be an RFC 3339 date-time such as \"2027-01-31T00:00:00Z\"")
		return nil
	}
	if !t.After(now) {
		p.add(param, "must be in the future")
		return nil
	}
	return &t
}

// parseScopes reads a non-empty array of known scope strings at param,
// sorted and without duplicates; anything else is a problem.
func parseScopes(raw json.RawMessage, param string, p *problems) []string {
	var scopes []string
	if json.Unmarshal(raw, &scopes) != nil || len(scopes) == 0 {
		p.add(param, "must be a non-empty array of scope strings")
		return nil
	}
	for i, sc := range scopes {
		if !core.KnownScope(sc) {
			p.add(param+"["+strconv.Itoa(i)+"]", "unknown scope %q", sc)
		}
	}
	slices.Sort(scopes)
	return slices.Compact(scopes)
}

// objectField reads an optional JSON object kept as sent.
func objectField(fields map[string]json.RawMessage, name string, p *problems) json.RawMessage {
	raw, ok := fields[name]
	if !ok || string(raw) == "null" {
		return nil
	}
	var obj map[string]json.RawMessage
	if json.Unmarshal(raw, &obj) != nil || obj == nil {
		p.add(name, "must be an object")
		return nil
	}
	return compactJSON(raw)
}

// slugTaken reports whether a record of bucket b has id or slug ref.
func slugTaken[T any](tx store.Tx, b store.Bucket, ref string, idSlug func(T) (string, string)) (bool, error) {
	all, err := store.List[T](tx, b)
	if err != nil {
		return false, err
	}
	return slices.ContainsFunc(all, func(r T) bool { id, slug := idSlug(r); return id == ref || slug == ref }), nil
}

// findBySlug finds the record of bucket b with id or slug ref.
func findBySlug[T any](tx store.Tx, b store.Bucket, ref string, idSlug func(T) (string, string)) (T, bool, error) {
	r, err := store.ByIDOrSlug(tx, b, ref, func(v T) string { _, slug := idSlug(v); return slug })
	if errors.Is(err, store.ErrNotFound) {
		return r, false, nil
	}
	return r, err == nil, err
}

// autoSlug is a slug made from name when the caller sends none.
func autoSlug(name, fallback string) string {
	return strings.TrimPrefix(newSlug("x", name, fallback), "x-")
}

// plainEmail reports whether s is a bare e-mail address ("ops@example.com",
// no display name) that the alert outbox will accept, with a dotted domain.
func plainEmail(s string) bool {
	a, err := mail.ParseAddress(s)
	return err == nil && a.Address == s && alerts.ValidAddress(s) == nil &&
		strings.Contains(s[strings.LastIndexByte(s, '@')+1:], ".")
}
