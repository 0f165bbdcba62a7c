package secrets

import (
	"fmt"
	"net/url"
	"slices"
	"sort"
	"strings"
)

// Problem is one thing wrong with an auth_config; Field is the field name
// inside auth_config.
type Problem struct{ Field, Msg string }

// variant lists the fields one authentication variant requires and allows.
type variant struct{ required, optional []string }

// The auth_config variants of every manager type, selected by auth_type.
var variants = map[string]map[string]variant{
	TypeAWS: {
		"accessKey":   {required: []string{"access_key_id", "secret_access_key", "region"}, optional: []string{"session_token", "endpoint"}},
		"assumedRole": {required: []string{"role_arn", "region"}, optional: []string{"external_id", "role_session_name", "access_key_id", "secret_access_key", "session_token", "endpoint", "sts_endpoint"}},
		"serviceRole": {optional: []string{"region", "endpoint"}},
	},
	TypeAzure: {
		"entra":   {required: []string{"vault_url", "tenant_id", "client_id", "client_secret"}, optional: []string{"authority_host"}},
		"managed": {required: []string{"vault_url"}, optional: []string{"client_id", "imds_endpoint"}},
		"default": {required: []string{"vault_url"}, optional: []string{"authority_host"}},
	},
	TypeVault: {
		"token":      {required: []string{"address", "token"}, optional: []string{"namespace"}},
		"approle":    {required: []string{"address", "role_id", "secret_id"}, optional: []string{"namespace", "auth_mount"}},
		"kubernetes": {required: []string{"address", "role"}, optional: []string{"jwt", "jwt_path", "namespace", "auth_mount"}},
	},
}

// urlFields must be absolute http(s) URLs.
var urlFields = []string{"endpoint", "sts_endpoint", "vault_url", "authority_host", "imds_endpoint", "address"}

// secretFields are masked on read.
var secretFields = []string{"secret_access_key", "session_token", "client_secret", "token", "secret_id", "jwt"}

// aliases maps other spellings to the canonical field names: the
// manager-prefixed names of the reference API (aws_access_key_id,
// vault_token...) and a few common ones.
var aliases = map[string]string{"vault_addr": "address", "auth_mode": "auth_type"}

// prefixes are stripped from a field name when what is left is a known field.
var prefixes = map[string]string{TypeAWS: "aws_", TypeAzure: "azure_", TypeVault: "vault_"}

// Variants returns the auth_type values of a manager type, sorted.
func Variants(manager string) []string {
	var out []string
	for k := range variants[manager] {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// known reports whether field belongs to any variant of manager.
func known(manager, field string) bool {
	if field == "auth_type" {
		return true
	}
	for _, v := range variants[manager] {
		if slices.Contains(v.required, field) || slices.Contains(v.optional, field) {
			return true
		}
	}
	return false
}

// CanonicalField is the canonical name of an auth_config field.
func CanonicalField(manager, field string) string {
	if a, ok := aliases[field]; ok {
		return a
	}
	if known(manager, field) {
		return field
	}
	if p := prefixes[manager]; p != "" {
		if rest, ok := strings.CutPrefix(field, p); ok && known(manager, rest) {
			return rest
		}
		if rest, ok := strings.CutPrefix(field, p); ok && aliases[rest] != "" {
			return aliases[rest]
		}
	}
	return field
}

// NormalizeAuth validates an auth_config for manager and returns it with
// canonical field names. Every problem is reported: a missing auth_type,
// every missing required field of the variant, fields the variant does not
// use, values that are not strings, URLs that are not http(s).
func NormalizeAuth(manager string, in map[string]any) (map[string]string, []Problem) {
	var ps []Problem
	add := func(f, format string, args ...any) { ps = append(ps, Problem{f, fmt.Sprintf(format, args...)}) }
	out := map[string]string{}
	keys := make([]string, 0, len(in))
	for k := range in {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		ck := CanonicalField(manager, k)
		s, ok := in[k].(string)
		if !ok {
			add(k, "must be a string")
			continue
		}
		if _, dup := out[ck]; dup {
			add(k, "is given twice (as %s and another spelling); send one", ck)
			continue
		}
		out[ck] = strings.TrimSpace(s)
	}
	vs := variants[manager]
	if vs == nil {
		return out, ps // the manager_type problem is reported by the caller
	}
	at, ok := out["auth_type"]
	v, known := vs[at]
	switch {
	case !ok || at == "":
		add("auth_type", "is required: one of %v", Variants(manager))
		return out, ps
	case !known:
		add("auth_type", "must be one of %v for %s, got %q", Variants(manager), manager, at)
		return out, ps
	}
	for _, f := range v.required {
		if out[f] == "" {
			add(f, "is required for %s auth_type %s", manager, at)
		}
	}
	for _, k := range keys {
		ck := CanonicalField(manager, k)
		if ck != "auth_type" && !slices.Contains(v.required, ck) && !slices.Contains(v.optional, ck) {
			add(k, "is not a field of %s auth_type %s (fields: %s)", manager, at, strings.Join(append(append([]string{}, v.required...), v.optional...), ", "))
		}
	}
	for _, f := range urlFields {
		if s := out[f]; s != "" {
			if u, err := url.Parse(s); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
				add(f, "must be an http(s) URL")
			}
		}
	}
	if at == "assumedRole" && (out["access_key_id"] == "") != (out["secret_access_key"] == "") {
		add("secret_access_key", "access_key_id and secret_access_key go together: send both or neither (neither: the environment's credentials)")
	}
	return out, ps
}

// MergeAuth applies an auth_config sent on update to the stored one, field
// by field: a field set to null is removed, a field sent back as its mask
// keeps the stored value, any other value replaces it. A patch that switches
// to another auth_type replaces the stored config as a whole.
func MergeAuth(manager string, stored map[string]string, patch map[string]any) map[string]any {
	canon := map[string]any{}
	for k, v := range patch {
		canon[CanonicalField(manager, k)] = v
	}
	if at, ok := canon["auth_type"].(string); ok && at != stored["auth_type"] {
		return canon
	}
	out := map[string]any{}
	for k, v := range stored {
		out[k] = v
	}
	for k, v := range canon {
		switch s, isStr := v.(string); {
		case v == nil:
			delete(out, k)
		case isStr && IsSecretField(k) && stored[k] != "" && s == Mask(stored[k]):
			// sent back as read: keep the stored value
		default:
			out[k] = v
		}
	}
	return out
}

// IsSecretField reports whether an auth_config field holds a credential.
func IsSecretField(field string) bool { return slices.Contains(secretFields, field) }

// Mask shows a credential as "****" and its last 4 characters (only "****"
// when it is shorter than 8, so a mask never gives half of it away).
func Mask(v string) string {
	if len(v) < 8 {
		return "****"
	}
	return "****" + v[len(v)-4:]
}

// MaskAuth returns auth with every credential field masked.
func MaskAuth(auth map[string]string) map[string]string {
	out := make(map[string]string, len(auth))
	for k, v := range auth {
		if IsSecretField(k) {
			v = Mask(v)
		}
		out[k] = v
	}
	return out
}
