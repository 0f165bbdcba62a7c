package store

import "time"

// Invite statuses. An invite past its ExpiresAt that was never accepted or
// cancelled reads as expired; that status is computed, not stored.
const (
	InvitePending   = "pending"
	InviteCancelled = "cancelled"
	InviteAccepted  = "accepted"
	InviteExpired   = "expired"
)

// Invite asks a person to join the organisation. Only the SHA-256 hash of
// the link's token is stored.
type Invite struct {
	ID             string            `json:"id"`
	OrganisationID string            `json:"organisation_id"`
	Email          string            `json:"email"`
	Role           string            `json:"role"`
	Workspaces     []InviteWorkspace `json:"workspaces"`
	// KeyScopes, when set, give the invitee one workspace-user API key per
	// workspace on acceptance.
	KeyScopes     []string   `json:"key_scopes,omitempty"`
	TokenHash     string     `json:"token_hash"`
	Status        string     `json:"status"`
	InvitedBy     string     `json:"invited_by"`
	UserID        string     `json:"user_id,omitempty"`
	CreatedAt     time.Time  `json:"created_at"`
	LastUpdatedAt time.Time  `json:"last_updated_at"`
	ExpiresAt     time.Time  `json:"expires_at"`
	AcceptedAt    *time.Time `json:"accepted_at,omitempty"`
}

// InviteWorkspace is a workspace an invitee joins, with the role they get.
type InviteWorkspace struct {
	ID   string `json:"id"`
	Role string `json:"role"`
}

// SettingsKeyOrganisation is the BucketSettings key of an organisation's
// settings: "organisation/" + its id.
func SettingsKeyOrganisation(orgID string) string { return "organisation/" + orgID }

// OrgSettings are an organisation's settings. Security holds the
// data-visibility switches (membersViewAllData, ...); a switch that is
// absent is true.
type OrgSettings struct {
	MaxSessionTTL int             `json:"max_session_ttl"`
	Security      map[string]bool `json:"security"`
	LastUpdatedAt time.Time       `json:"last_updated_at"`
}
