package store

import (
	"time"
)

// SecretReference points at a secret held in an external secret manager
// (AWS Secrets Manager, Azure Key Vault, HashiCorp Vault). AuthConfig is the
// manager credentials as a JSON object sealed by a Cipher: it is never
// stored in clear.
type SecretReference struct {
	ID             string `json:"id"`
	Slug           string `json:"slug"`
	Name           string `json:"name"`
	Description    string `json:"description,omitempty"`
	OrganisationID string `json:"organisation_id"`
	ManagerType    string `json:"manager_type"`
	// AuthConfig is the sealed JSON object of the manager credentials.
	AuthConfig string `json:"auth_config"`
	SecretPath string `json:"secret_path"`
	SecretKey  string `json:"secret_key,omitempty"`
	// AllowAllWorkspaces lets every workspace use the reference; otherwise
	// only AllowedWorkspaces (workspace ids) may.
	AllowAllWorkspaces bool              `json:"allow_all_workspaces"`
	AllowedWorkspaces  []string          `json:"allowed_workspaces,omitempty"`
	Tags               map[string]string `json:"tags,omitempty"`
	CreatedBy          string            `json:"created_by,omitempty"`
	CreatedAt          time.Time         `json:"created_at"`
	LastUpdatedAt      time.Time         `json:"last_updated_at"`
}

// SecretReferenceByIDOrSlug finds a secret reference by its id or its slug.
func SecretReferenceByIDOrSlug(tx Tx, ref string) (SecretReference, error) {
	return ByIDOrSlug(tx, BucketSecretReferences, ref, func(r SecretReference) string { return r.Slug })
}
