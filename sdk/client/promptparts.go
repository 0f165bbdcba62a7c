package client

import (
	"context"
	"maps"
	"net/http"
)

// PromptPartials is /v1/prompts/partials: reusable template pieces a
// prompt includes as {{> slug}}, versioned like prompts (a new version is
// included once MakeDefault publishes it).
type PromptPartials struct{ c *Client }

func (r *PromptPartials) res() resource { return resource{r.c, "/prompts/partials"} }

// PartialInput is the body of a partial create; Name and String are
// required, WorkspaceID too with an organisation key.
type PartialInput struct {
	Name               string `json:"name"`
	String             string `json:"string"`
	WorkspaceID        string `json:"workspace_id,omitempty"`
	VersionDescription string `json:"version_description,omitempty"`
}

// PartialVersionRef names one version of a partial: the answer of Update
// (the latest version) and of MakeDefault (the published one).
type PartialVersionRef struct {
	ID        string `json:"id"`
	Slug      string `json:"slug"`
	Version   int    `json:"version"`
	VersionID string `json:"version_id"`
}

// Create saves a partial; its first version is its default.
func (r *PromptPartials) Create(ctx context.Context, in PartialInput) (Created, error) {
	return r.res().Create(ctx, in)
}

// List lists partials, newest first; workspaceID (id or slug) and search
// (in the name, ignoring case) filter when not empty.
func (r *PromptPartials) List(ctx context.Context, workspaceID, search string, p Page) (List[Object], error) {
	return r.res().List(ctx, query(Page{}, "workspace_id", workspaceID, "search", search), p)
}

// Get reads a partial (id or slug) with its default version's string.
func (r *PromptPartials) Get(ctx context.Context, id string) (Object, error) {
	return r.res().Get(ctx, id)
}

// Update renames a partial ("name") and, with "string", saves a new
// version (not the default until MakeDefault); "version_description"
// describes that version.
func (r *PromptPartials) Update(ctx context.Context, id string, fields map[string]any) (PartialVersionRef, error) {
	var out PartialVersionRef
	return out, r.c.do(ctx, http.MethodPut, "/prompts/partials/"+esc(id), nil, fields, &out)
}

// Delete deletes a partial no prompt's or partial's default version
// includes (a 409 *Error names them otherwise).
func (r *PromptPartials) Delete(ctx context.Context, id string) error { return r.res().Delete(ctx, id) }

// Versions lists a partial's versions, newest first.
func (r *PromptPartials) Versions(ctx context.Context, id string, p Page) (List[Object], error) {
	var out List[Object]
	return out, r.c.do(ctx, http.MethodGet, "/prompts/partials/"+esc(id)+"/versions", query(p), nil, &out)
}

// MakeDefault publishes version number version: prompts include it from
// now on.
func (r *PromptPartials) MakeDefault(ctx context.Context, id string, version int) (PartialVersionRef, error) {
	var out PartialVersionRef
	return out, r.c.do(ctx, http.MethodPut, "/prompts/partials/"+esc(id)+"/makeDefault", nil, map[string]int{"version": version}, &out)
}

// Labels is /v1/labels: names ("production", "staging") put on prompt
// versions with Prompts.LabelVersion, selected as {prompt}@{label}.
type Labels struct{ c *Client }

func (r *Labels) res() resource { return resource{r.c, "/labels"} }

// LabelInput is the body of a label create; Name is required. Without
// WorkspaceID an organisation key makes an organisation-wide label.
type LabelInput struct {
	Name           string `json:"name"`
	OrganisationID string `json:"organisation_id,omitempty"`
	WorkspaceID    string `json:"workspace_id,omitempty"`
	Description    string `json:"description,omitempty"`
	ColorCode      string `json:"color_code,omitempty"`
}

// Create makes a label.
func (r *Labels) Create(ctx context.Context, in LabelInput) (Created, error) {
	return r.res().Create(ctx, in)
}

// List lists labels, newest first; a workspace filter keeps that
// workspace's labels and the organisation's.
func (r *Labels) List(ctx context.Context, workspaceID, search string, p Page) (List[Object], error) {
	return r.res().List(ctx, query(Page{}, "workspace_id", workspaceID, "search", search), p)
}

// Get reads a label by id.
func (r *Labels) Get(ctx context.Context, id string) (Object, error) { return r.res().Get(ctx, id) }

// Update changes a label's name, description or color_code.
func (r *Labels) Update(ctx context.Context, id string, fields map[string]any) (Object, error) {
	return r.res().Update(ctx, id, fields)
}

// Delete deletes a label no prompt version carries.
func (r *Labels) Delete(ctx context.Context, id string) error { return r.res().Delete(ctx, id) }

// Collections is /v1/collections: groups of a workspace's prompts.
type Collections struct{ c *Client }

func (r *Collections) res() resource { return resource{r.c, "/collections"} }

// CollectionInput is the body of a collection create; Name is required,
// WorkspaceID too with an organisation key.
type CollectionInput struct {
	Name               string `json:"name"`
	WorkspaceID        string `json:"workspace_id,omitempty"`
	ParentCollectionID string `json:"parent_collection_id,omitempty"`
}

// Create makes a collection.
func (r *Collections) Create(ctx context.Context, in CollectionInput) (Created, error) {
	return r.res().Create(ctx, in)
}

// List lists collections, newest first.
func (r *Collections) List(ctx context.Context, workspaceID, search string, p Page) (List[Object], error) {
	return r.res().List(ctx, query(Page{}, "workspace_id", workspaceID, "search", search), p)
}

// Get reads a collection by id or slug.
func (r *Collections) Get(ctx context.Context, id string) (Object, error) {
	return r.res().Get(ctx, id)
}

// Rename renames a collection.
func (r *Collections) Rename(ctx context.Context, id, name string) (Object, error) {
	return r.res().Update(ctx, id, map[string]string{"name": name})
}

// Delete deletes a collection that holds no prompt and no collection.
func (r *Collections) Delete(ctx context.Context, id string) error { return r.res().Delete(ctx, id) }

// LabelVersion puts label labelID on version versionID of prompt id (off
// any other version of the prompt); "" takes the version's label off.
func (r *Prompts) LabelVersion(ctx context.Context, id, versionID, labelID string) (Object, error) {
	body := map[string]any{"label_id": nil}
	if labelID != "" {
		body["label_id"] = labelID
	}
	var out Object
	return out, r.c.do(ctx, http.MethodPut, "/prompts/"+esc(id)+"/versions/"+esc(versionID), nil, body, &out)
}

// Render renders a prompt on the data plane and returns the chat
// completion request it makes. ref is the prompt's id or slug (its default
// version), or that with "@<version number>", "@latest" or "@<label>";
// hyper holds hyperparameters over the prompt's.
func (r *Prompts) Render(ctx context.Context, ref string, variables, hyper map[string]any) (Object, error) {
	body := map[string]any{}
	maps.Copy(body, hyper)
	if variables == nil {
		variables = map[string]any{}
	}
	body["variables"] = variables
	var out struct {
		Data Object `json:"data"`
	}
	return out.Data, r.c.do(ctx, http.MethodPost, "/prompts/"+esc(ref)+"/render", nil, body, &out)
}
