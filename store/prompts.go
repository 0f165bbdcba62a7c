package store

import (
	"encoding/json"
	"strings"
	"time"
)

// Prompt is a saved prompt: a mustache template with the settings it runs
// with, kept in numbered versions (BucketPromptVersions). The data plane
// renders the default version; a new version becomes the default only when
// published (the first version is the default from the start).
type Prompt struct {
	ID             string `json:"id"`
	Slug           string `json:"slug"`
	Name           string `json:"name"`
	OrganisationID string `json:"organisation_id"`
	WorkspaceID    string `json:"workspace_id"`
	// CollectionID is the PromptCollection the prompt is in (prompts saved
	// before collections were records may hold any label here).
	CollectionID  string    `json:"collection_id,omitempty"`
	Status        string    `json:"status"`
	CreatedBy     string    `json:"created_by"`
	UpdatedBy     string    `json:"updated_by"`
	CreatedAt     time.Time `json:"created_at"`
	LastUpdatedAt time.Time `json:"last_updated_at"`
	VersionHeads
}

// VersionHeads are the default and the newest version of a record kept in
// numbered versions (a prompt, a partial). The default is the one used;
// the next version is LatestVersion+1, with an id that sorts after
// LatestVersionID.
type VersionHeads struct {
	DefaultVersionID string `json:"default_version_id"`
	DefaultVersion   int    `json:"default_version"`
	LatestVersionID  string `json:"latest_version_id"`
	LatestVersion    int    `json:"latest_version"`
}

// PromptVersion is one version of a saved prompt.
type PromptVersion struct {
	ID       string `json:"id"`
	PromptID string `json:"prompt_id"`
	// Version numbers a prompt's versions 1, 2, ...
	Version int `json:"version"`
	PromptContent
	// LabelID is the PromptLabel on this version, if any.
	LabelID   string    `json:"label_id,omitempty"`
	CreatedAt time.Time `json:"created_at"`
	CreatedBy string    `json:"created_by"`
}

// PromptContent is what a prompt version holds.
type PromptContent struct {
	// Template is the prompt's "string": a mustache template.
	Template string `json:"string"`
	// Parameters is a JSON object of hyperparameters.
	Parameters json.RawMessage `json:"parameters"`
	Model      string          `json:"model,omitempty"`
	// Provider or VirtualKey (never both) choose where the prompt runs.
	Provider           string          `json:"provider,omitempty"`
	VirtualKey         string          `json:"virtual_key,omitempty"`
	Functions          json.RawMessage `json:"functions,omitempty"`
	Tools              json.RawMessage `json:"tools,omitempty"`
	ToolChoice         json.RawMessage `json:"tool_choice,omitempty"`
	VersionDescription string          `json:"version_description,omitempty"`
	TemplateMetadata   json.RawMessage `json:"template_metadata,omitempty"`
}

// VersionKey is the key of one version of a versioned record (a saved
// config, a prompt) in its versions bucket: the record's id, "/", the
// version id. Version ids sort by time, so Versions lists them oldest first.
func VersionKey(recordID, versionID string) string { return recordID + "/" + versionID }

// Versions decodes every version of record recordID kept in bucket b,
// oldest first.
func Versions[T any](tx Tx, b Bucket, recordID string) ([]T, error) {
	var out []T
	err := scanVersions(tx, b, recordID, func(_ string, raw []byte) error {
		var v T
		if err := json.Unmarshal(raw, &v); err != nil {
			return err
		}
		out = append(out, v)
		return nil
	})
	return out, err
}

// DeleteVersions deletes every version of record recordID from bucket b.
func DeleteVersions(tx Tx, b Bucket, recordID string) error {
	var keys []string
	if err := scanVersions(tx, b, recordID, func(k string, _ []byte) error { keys = append(keys, k); return nil }); err != nil {
		return err
	}
	for _, k := range keys {
		if err := tx.Delete(b, k); err != nil {
			return err
		}
	}
	return nil
}

// scanVersions calls fn with every version key of recordID in b, in order.
func scanVersions(tx Tx, b Bucket, recordID string, fn func(key string, raw []byte) error) error {
	prefix := VersionKey(recordID, "")
	return tx.Scan(b, prefix, false, func(k string, raw []byte) (bool, error) {
		if !strings.HasPrefix(k, prefix) {
			return false, nil
		}
		return true, fn(k, raw)
	})
}
