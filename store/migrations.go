package store

import (
	"errors"

	"github.com/llm-gateway/gateway/core"
	bolt "go.etcd.io/bbolt"
)

// migrations is the release's ordered migration list; append only, never
// edit a released entry. Version 1 is the first release's layout.
var migrations = []Migration{
	{Version: 2, Name: "explicit roles: admin role on organisation keys, admin memberships for organisation owners and admins", Apply: migrateRoles},
}

// migrateRoles gives the version-1 records the roles the admin API now
// checks: an organisation-service key without a role gets admin (the
// bootstrap key already says owner), and every organisation owner or admin
// becomes an admin member of every workspace of their organisation, unless
// already a member. A membership dates from when both user and workspace
// existed.
func migrateRoles(btx *bolt.Tx) error {
	tx := boltTx{btx}
	keys, err := List[APIKey](tx, BucketAPIKeys)
	if err != nil {
		return err
	}
	for _, k := range keys {
		if k.Type == core.KeyTypeOrganisationService && k.Role == "" {
			k.Role = core.RoleAdmin
			if err := tx.Put(BucketAPIKeys, k.ID, k); err != nil {
				return err
			}
		}
	}
	users, err := List[User](tx, BucketUsers)
	if err != nil {
		return err
	}
	workspaces, err := List[Workspace](tx, BucketWorkspaces)
	if err != nil {
		return err
	}
	for _, u := range users {
		if u.Role != core.RoleOwner && u.Role != core.RoleAdmin {
			continue
		}
		for _, w := range workspaces {
			if w.OrganisationID != u.OrganisationID {
				continue
			}
			key := MemberKey(w.ID, u.ID)
			var existing Member
			switch err := tx.Get(BucketMembers, key, &existing); {
			case err == nil:
				continue
			case !errors.Is(err, ErrNotFound):
				return err
			}
			since := u.CreatedAt
			if w.CreatedAt.After(since) {
				since = w.CreatedAt
			}
			m := Member{WorkspaceID: w.ID, UserID: u.ID, Role: core.RoleAdmin, CreatedAt: since, LastUpdatedAt: since}
			if err := tx.Put(BucketMembers, key, m); err != nil {
				return err
			}
		}
	}
	return nil
}
