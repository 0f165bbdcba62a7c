package adminsvc

import (
	"fmt"
	"time"

	"github.com/llm-gateway/gateway/core"
	"github.com/llm-gateway/gateway/store"
)

// minAdminKeyLength keeps operator-chosen bootstrap keys from being guessable.
const minAdminKeyLength = 16

// BootstrapResult says what Bootstrap did.
type BootstrapResult struct {
	// Created is true on the first start, when the store was empty.
	Created bool
	// GeneratedKey is the owner key when Bootstrap made one up; it is shown
	// once and never stored in plain text.
	GeneratedKey   string
	OrganisationID string
	WorkspaceID    string
}

// Bootstrap prepares an empty store on first start: the organisation, the
// default workspace (slug "default"), its owner user and an owner admin key
// carrying every scope. The key is adminKey when given, else a random one
// returned in the result. A store that already has an organisation is left
// untouched.
func Bootstrap(st store.Store, adminKey string, now time.Time) (BootstrapResult, error) {
	var res BootstrapResult
	if adminKey != "" && len(adminKey) < minAdminKeyLength {
		return res, fmt.Errorf("GATEWAY_ADMIN_API_KEY must be at least %d characters long", minAdminKeyLength)
	}
	err := st.Update(func(tx store.Tx) error {
		orgs, err := store.List[store.Organisation](tx, store.BucketOrganisations)
		if err != nil {
			return err
		}
		if len(orgs) > 0 {
			res.OrganisationID = orgs[0].ID
			return nil
		}
		res.Created = true
		secret := adminKey
		if secret == "" {
			secret = newKeySecret()
			res.GeneratedKey = secret
		}
		org := store.Organisation{ID: core.NewID(), Name: "Default organisation", CreatedAt: now}
		ws := store.Workspace{ID: core.NewID(), Slug: "default", Name: "Default", OrganisationID: org.ID,
			Status: store.StatusActive, CreatedAt: now, LastUpdatedAt: now}
		owner := store.User{ID: core.NewID(), Email: "owner@localhost", FirstName: "Owner", Role: "owner",
			OrganisationID: org.ID, CreatedAt: now, LastUpdatedAt: now}
		key := store.APIKey{
			ID: core.NewID(), Name: "Bootstrap owner key", Type: core.KeyTypeOrganisationService,
			OrganisationID: org.ID, UserID: owner.ID, Role: "owner",
			Hash: hashKey(secret), MaskedKey: maskKey(secret), Status: store.StatusActive,
			Scopes: core.AllScopes, CreationMode: "bootstrap", CreatedAt: now, LastUpdatedAt: now,
		}
		member := store.Member{WorkspaceID: ws.ID, UserID: owner.ID, Role: core.RoleAdmin, CreatedAt: now, LastUpdatedAt: now}
		res.OrganisationID, res.WorkspaceID = org.ID, ws.ID
		for _, put := range []struct {
			b   store.Bucket
			id  string
			rec any
		}{
			{store.BucketOrganisations, org.ID, org},
			{store.BucketWorkspaces, ws.ID, ws},
			{store.BucketUsers, owner.ID, owner},
			{store.BucketAPIKeys, key.ID, key},
			{store.BucketMembers, store.MemberKey(ws.ID, owner.ID), member},
		} {
			if err := tx.Put(put.b, put.id, put.rec); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return res, fmt.Errorf("bootstrap the store: %w", err)
	}
	return res, nil
}
