package store

import (
	"encoding/json"
	"time"
)

// Deployment types.
const (
	DeploymentProduction    = "production"
	DeploymentNonProduction = "non-production"
)

// Deployment is a named gateway environment: requests whose metadata names
// its slug in _environment are routed by its Config.
type Deployment struct {
	ID             string `json:"id"`
	Slug           string `json:"slug"`
	Name           string `json:"name"`
	OrganisationID string `json:"organisation_id"`
	// Type is DeploymentProduction or DeploymentNonProduction.
	Type string `json:"type"`
	// Config is the gateway config object, as the client sent it (compacted).
	Config json.RawMessage `json:"config"`
	// AllowedWorkspaces are the ids of the workspaces whose keys may use the
	// deployment; empty allows every workspace.
	AllowedWorkspaces []string  `json:"allowed_workspaces,omitempty"`
	CreatedBy         string    `json:"created_by,omitempty"`
	CreatedAt         time.Time `json:"created_at"`
	LastUpdatedAt     time.Time `json:"last_updated_at"`
}

// DeploymentByIDOrSlug finds a deployment by its id or its slug.
func DeploymentByIDOrSlug(tx Tx, ref string) (Deployment, error) {
	return ByIDOrSlug(tx, BucketDeployments, ref, func(d Deployment) string { return d.Slug })
}
