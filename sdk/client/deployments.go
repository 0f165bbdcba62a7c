package client

import (
	"context"
	"encoding/json"
	"net/http"
	"time"
)

// Deployment is a named gateway environment: requests whose metadata
// names its slug in _environment (x-gateway-metadata or the key's default
// metadata) are routed by its config, unless they name a config
// themselves. Provider api_keys in Config are masked.
type Deployment struct {
	ID             string `json:"id"`
	Slug           string `json:"slug"`
	Name           string `json:"name"`
	OrganisationID string `json:"organisation_id"`
	// Type is "production" or "non-production".
	Type   string          `json:"type"`
	Config json.RawMessage `json:"config"`
	// AllowedWorkspaces are workspace ids; empty allows every workspace.
	AllowedWorkspaces []string  `json:"allowed_workspaces"`
	CreatedAt         time.Time `json:"created_at"`
	LastUpdatedAt     time.Time `json:"last_updated_at"`
	Object            string    `json:"object"`
}

// DeploymentInput is the body of Deployments.Create (Name, Type and Config
// are required) and Update (only the fields set are changed).
type DeploymentInput struct {
	Name string `json:"name,omitempty"`
	// Slug is what requests send as _environment; the default is the name,
	// lower-cased, with dashes.
	Slug string `json:"slug,omitempty"`
	Type string `json:"type,omitempty"`
	// Config is a gateway config object (a map, a struct or JSON bytes as
	// json.RawMessage).
	Config any `json:"config,omitempty"`
	// AllowedWorkspaces are workspace ids or slugs: nil leaves them as they
	// are (none on create: every workspace), an empty non-nil slice allows
	// every workspace again.
	AllowedWorkspaces []string `json:"allowed_workspaces,omitzero"`
}

// Deployments is /v1/deployments.
type Deployments struct{ c *Client }

const deploymentsPath = "/deployments"

// Create makes a deployment.
func (r *Deployments) Create(ctx context.Context, in DeploymentInput) (Created, error) {
	var out Created
	return out, r.c.do(ctx, http.MethodPost, deploymentsPath, nil, in, &out)
}

// List lists deployments, newest first; typ ("production" or
// "non-production") narrows the list when set.
func (r *Deployments) List(ctx context.Context, typ string, p Page) (List[Deployment], error) {
	var out List[Deployment]
	return out, r.c.do(ctx, http.MethodGet, deploymentsPath, query(p, "type", typ), nil, &out)
}

// Get reads a deployment by id or slug.
func (r *Deployments) Get(ctx context.Context, id string) (Deployment, error) {
	var out Deployment
	return out, r.c.do(ctx, http.MethodGet, deploymentsPath+"/"+esc(id), nil, nil, &out)
}

// Update changes the fields of in that are set.
func (r *Deployments) Update(ctx context.Context, id string, in DeploymentInput) error {
	return r.c.do(ctx, http.MethodPut, deploymentsPath+"/"+esc(id), nil, in, nil)
}

// Delete deletes a deployment.
func (r *Deployments) Delete(ctx context.Context, id string) error {
	return r.c.do(ctx, http.MethodDelete, deploymentsPath+"/"+esc(id), nil, nil, nil)
}
