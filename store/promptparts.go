package store

import "time"

// PromptPartial is a reusable piece of prompt template: a prompt's
// template includes it as {{> slug}}. Like a prompt it is kept in numbered
// versions (BucketPartialVersions) and the default version is the one
// templates include.
type PromptPartial struct {
	ID             string    `json:"id"`
	Slug           string    `json:"slug"`
	Name           string    `json:"name"`
	OrganisationID string    `json:"organisation_id"`
	WorkspaceID    string    `json:"workspace_id"`
	CreatedBy      string    `json:"created_by"`
	UpdatedBy      string    `json:"updated_by"`
	CreatedAt      time.Time `json:"created_at"`
	LastUpdatedAt  time.Time `json:"last_updated_at"`
	VersionHeads
}

// PartialVersion is one version of a partial.
type PartialVersion struct {
	ID        string `json:"id"`
	PartialID string `json:"prompt_partial_id"`
	Version   int    `json:"version"`
	// Template is the partial's "string": a mustache template.
	Template           string    `json:"string"`
	VersionDescription string    `json:"version_description,omitempty"`
	CreatedAt          time.Time `json:"created_at"`
	CreatedBy          string    `json:"created_by"`
}

// PromptLabel names a prompt version ("production", "staging"): a version
// carries at most one label (PromptVersion.LabelID), and a label is on at
// most one version of each prompt. A label with no WorkspaceID is the
// whole organisation's.
type PromptLabel struct {
	ID             string    `json:"id"`
	Name           string    `json:"name"`
	OrganisationID string    `json:"organisation_id"`
	WorkspaceID    string    `json:"workspace_id,omitempty"`
	Description    string    `json:"description,omitempty"`
	ColorCode      string    `json:"color_code,omitempty"`
	CreatedBy      string    `json:"created_by"`
	CreatedAt      time.Time `json:"created_at"`
	LastUpdatedAt  time.Time `json:"last_updated_at"`
}

// PromptCollection groups a workspace's prompts (Prompt.CollectionID);
// collections may nest (ParentCollectionID).
type PromptCollection struct {
	ID                 string    `json:"id"`
	Slug               string    `json:"slug"`
	Name               string    `json:"name"`
	OrganisationID     string    `json:"organisation_id"`
	WorkspaceID        string    `json:"workspace_id"`
	ParentCollectionID string    `json:"parent_collection_id,omitempty"`
	CreatedBy          string    `json:"created_by"`
	CreatedAt          time.Time `json:"created_at"`
	LastUpdatedAt      time.Time `json:"last_updated_at"`
}
