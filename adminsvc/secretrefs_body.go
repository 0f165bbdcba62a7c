package adminsvc

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/llm-gateway/gateway/adminsvc/secrets"
	"github.com/llm-gateway/gateway/store"
)

// secretRefBody is a parsed POST or PUT /secret-references body; a nil
// pointer is a field that was not sent.
type secretRefBody struct {
	name, managerType, secretPath, slug *string
	description, secretKey              *string // "" when sent as null
	auth                                map[string]any
	allowAll                            *bool
	allowed                             []string
	allowedSent                         bool
	tags                                map[string]string
	tagsSent                            bool
}

// parseSecretRefBody reads the fields of a body, reporting every problem
// into p; create requires name, manager_type, auth_config and secret_path.
func parseSecretRefBody(fields map[string]json.RawMessage, create bool, p *problems) secretRefBody {
	var b secretRefBody
	str := func(k string, raw json.RawMessage, max int, nullable bool) *string {
		var s string
		if nullable && string(raw) == "null" {
			return &s
		}
		if json.Unmarshal(raw, &s) != nil || strings.TrimSpace(s) == "" || len(s) > max {
			p.add(k, "must be a non-empty string of at most %d characters", max)
			return nil
		}
		s = strings.TrimSpace(s)
		return &s
	}
	for k, raw := range fields {
		switch k {
		case "name":
			b.name = str(k, raw, 255, false)
		case "description":
			b.description = str(k, raw, 1024, true)
		case "secret_key":
			b.secretKey = str(k, raw, 1024, true)
		case "secret_path":
			b.secretPath = str(k, raw, 2048, false)
		case "slug":
			if b.slug = str(k, raw, 255, false); b.slug != nil && !reSlug.MatchString(*b.slug) {
				p.add(k, "must match ^[a-zA-Z0-9_-]+$")
				b.slug = nil
			}
		case "manager_type":
			var s string
			if json.Unmarshal(raw, &s) != nil || !slices.Contains(secrets.ManagerTypes, s) {
				p.add(k, "must be one of %v", secrets.ManagerTypes)
			} else {
				b.managerType = &s
			}
		case "auth_config":
			if json.Unmarshal(raw, &b.auth) != nil || b.auth == nil {
				p.add(k, "must be an object")
			}
		case "allow_all_workspaces":
			var v bool
			if json.Unmarshal(raw, &v) != nil {
				p.add(k, "must be true or false")
			} else {
				b.allowAll = &v
			}
		case "allowed_workspaces":
			b.allowedSent = true
			if string(raw) != "null" && json.Unmarshal(raw, &b.allowed) != nil {
				p.add(k, "must be an array of workspace ids or slugs")
			}
		case "tags":
			b.tagsSent = true
			if string(raw) != "null" && json.Unmarshal(raw, &b.tags) != nil {
				p.add(k, "must be an object of string values")
			}
		default:
			p.add(k, "unknown field")
		}
	}
	if create {
		for _, f := range []string{"name", "manager_type", "auth_config", "secret_path"} {
			if _, ok := fields[f]; !ok {
				p.add(f, "is required")
			}
		}
	}
	if b.allowAll != nil && *b.allowAll && len(b.allowed) > 0 {
		p.add("allowed_workspaces", "cannot be combined with allow_all_workspaces: true")
	}
	return b
}

// apply writes the body's fields over rec: auth_config is merged with the
// stored one (stored, nil on create) and re-validated, the workspaces are
// resolved to ids. It reports every problem into p and returns the
// normalised auth_config.
func (b secretRefBody) apply(tx store.Tx, rec *store.SecretReference, stored map[string]string, p *problems) map[string]string {
	set := func(dst *string, v *string) {
		if v != nil {
			*dst = *v
		}
	}
	set(&rec.Name, b.name)
	set(&rec.Description, b.description)
	set(&rec.SecretKey, b.secretKey)
	set(&rec.SecretPath, b.secretPath)
	set(&rec.Slug, b.slug)
	typeChanged := b.managerType != nil && *b.managerType != rec.ManagerType
	set(&rec.ManagerType, b.managerType)
	if b.tagsSent {
		rec.Tags = b.tags
	}

	// auth_config: merged field by field, replaced when the manager changes.
	var auth map[string]string
	switch {
	case typeChanged && stored != nil && b.auth == nil:
		p.add("auth_config", "is required when manager_type changes")
	case b.auth != nil:
		base := stored
		if typeChanged {
			base = map[string]string{}
		}
		merged := secrets.MergeAuth(rec.ManagerType, base, b.auth)
		var ps []secrets.Problem
		if rec.ManagerType != "" {
			auth, ps = secrets.NormalizeAuth(rec.ManagerType, merged)
		}
		for _, pr := range ps {
			p.add("auth_config."+pr.Field, "%s", pr.Msg)
		}
	default: // unchanged (on create, the missing auth_config is reported already)
		auth = stored
	}

	// Workspaces: allow_all_workspaces defaults to true unless a list is sent.
	switch {
	case b.allowAll != nil:
		rec.AllowAllWorkspaces = *b.allowAll
	case b.allowedSent && len(b.allowed) > 0:
		rec.AllowAllWorkspaces = false
	}
	if b.allowedSent {
		rec.AllowedWorkspaces = nil
		for i, ref := range b.allowed {
			ws, err := store.WorkspaceByIDOrSlug(tx, ref)
			if err != nil {
				p.add(fmt.Sprintf("allowed_workspaces[%d]", i), "no workspace %q", ref)
				continue
			}
			if !slices.Contains(rec.AllowedWorkspaces, ws.ID) {
				rec.AllowedWorkspaces = append(rec.AllowedWorkspaces, ws.ID)
			}
		}
	}
	if rec.AllowAllWorkspaces {
		rec.AllowedWorkspaces = nil
	} else if len(rec.AllowedWorkspaces) == 0 && !hasParam(*p, "allowed_workspaces") {
		p.add("allowed_workspaces", "must list at least one workspace when allow_all_workspaces is false")
	}
	return auth
}

// hasParam reports whether a problem was already reported under param.
func hasParam(p problems, param string) bool {
	return slices.ContainsFunc(p, func(pr problem) bool { return strings.HasPrefix(pr.param, param) })
}
