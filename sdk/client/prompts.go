package client

import (
	"context"
	"net/http"
)

// Prompts is /v1/prompts: saved prompts (mustache templates with their
// model settings), versioned. A prompt's first version is its default;
// later versions are rendered once MakeDefault publishes them.
type Prompts struct{ c *Client }

func (r *Prompts) res() resource { return resource{r.c, "/prompts"} }

// PromptInput is the body of a prompt create. Name, String and Parameters
// are required (nil Parameters are sent as {}); set Provider or
// VirtualKey, not both.
type PromptInput struct {
	Name       string         `json:"name"`
	String     string         `json:"string"`
	Parameters map[string]any `json:"parameters"`
	// WorkspaceID (id or slug) is required with an organisation key.
	WorkspaceID        string           `json:"workspace_id,omitempty"`
	CollectionID       string           `json:"collection_id,omitempty"`
	Model              string           `json:"model,omitempty"`
	Provider           string           `json:"provider,omitempty"`
	VirtualKey         string           `json:"virtual_key,omitempty"`
	Functions          []map[string]any `json:"functions,omitempty"`
	Tools              []map[string]any `json:"tools,omitempty"`
	ToolChoice         any              `json:"tool_choice,omitempty"`
	VersionDescription string           `json:"version_description,omitempty"`
	TemplateMetadata   map[string]any   `json:"template_metadata,omitempty"`
}

// PromptFilter narrows a prompt list; empty fields do not filter.
type PromptFilter struct {
	// WorkspaceID is a workspace id or slug.
	WorkspaceID  string
	CollectionID string
	// Search keeps the prompts whose name contains it, ignoring case.
	Search string
}

// PromptVersionRef names one version of a prompt: the answer of Update
// (the new version) and of MakeDefault (the published one).
type PromptVersionRef struct {
	ID              string `json:"id"`
	Slug            string `json:"slug"`
	PromptVersion   int    `json:"prompt_version"`
	PromptVersionID string `json:"prompt_version_id"`
}

// Create saves a prompt; its first version is its default.
func (r *Prompts) Create(ctx context.Context, in PromptInput) (Created, error) {
	if in.Parameters == nil {
		in.Parameters = map[string]any{}
	}
	return r.res().Create(ctx, in)
}

// List lists prompts, newest first.
func (r *Prompts) List(ctx context.Context, f PromptFilter, p Page) (List[Object], error) {
	return r.res().List(ctx, query(Page{}, "workspace_id", f.WorkspaceID, "collection_id", f.CollectionID, "search", f.Search), p)
}

// Get reads a prompt (id or slug) with its default version's content.
func (r *Prompts) Get(ctx context.Context, id string) (Object, error) { return r.res().Get(ctx, id) }

// Update saves a new version; it is not the default until MakeDefault.
// fields are those of PromptInput (but workspace_id) and status; with
// "patch": true the version fields left out are kept from the latest
// version, else string and parameters are required.
func (r *Prompts) Update(ctx context.Context, id string, fields map[string]any) (PromptVersionRef, error) {
	var out PromptVersionRef
	return out, r.c.do(ctx, http.MethodPut, "/prompts/"+esc(id), nil, fields, &out)
}

// Delete deletes a prompt and every version of it.
func (r *Prompts) Delete(ctx context.Context, id string) error { return r.res().Delete(ctx, id) }

// Versions lists a prompt's versions, newest first.
func (r *Prompts) Versions(ctx context.Context, id string, p Page) (List[Object], error) {
	var out List[Object]
	return out, r.c.do(ctx, http.MethodGet, "/prompts/"+esc(id)+"/versions", query(p), nil, &out)
}

// Version reads one version of a prompt by the version's id.
func (r *Prompts) Version(ctx context.Context, id, versionID string) (Object, error) {
	var out Object
	return out, r.c.do(ctx, http.MethodGet, "/prompts/"+esc(id)+"/versions/"+esc(versionID), nil, nil, &out)
}

// MakeDefault publishes version number version: the data plane renders it
// from now on.
func (r *Prompts) MakeDefault(ctx context.Context, id string, version int) (PromptVersionRef, error) {
	var out PromptVersionRef
	return out, r.c.do(ctx, http.MethodPut, "/prompts/"+esc(id)+"/makeDefault", nil, map[string]int{"version": version}, &out)
}
