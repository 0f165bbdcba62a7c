package adminsvc

import (
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/llm-gateway/gateway/core"
	"github.com/llm-gateway/gateway/store"
)

// registerCollections adds /collections, which group a workspace's prompts
// (with the prompts.* scopes).
func (s *Service) registerCollections(v1 fiber.Router) {
	v1.Post("/collections", s.createCollection)
	v1.Get("/collections", s.listCollections)
	v1.Get("/collections/:id", s.getCollection)
	v1.Put("/collections/:id", s.updateCollection)
	v1.Delete("/collections/:id", s.deleteCollection)
}

// loadCollection finds a collection by id or slug that caller may see,
// and view (write false) or change (write true): see promptAccess.
func loadCollection(tx store.Tx, caller *core.Principal, ref string, write bool) (store.PromptCollection, error) {
	rec, err := loadVisible(tx, caller, store.BucketCollections, "collection", ref,
		func(r store.PromptCollection) (string, string) { return r.Slug, r.WorkspaceID })
	return withPromptAccess(tx, caller, write, rec, err)
}

// collectionIn finds the collection ref (id or slug) of workspace wsID for
// field: a 400 naming field when there is none.
func collectionIn(tx store.Tx, wsID, field, ref string) (store.PromptCollection, error) {
	col, err := store.ByIDOrSlug(tx, store.BucketCollections, ref, func(r store.PromptCollection) string { return r.Slug })
	if errors.Is(err, store.ErrNotFound) || (err == nil && col.WorkspaceID != wsID) {
		return col, core.ValidationError(field, "%s: no collection %q in this workspace; create it with POST /v1/collections", field, ref)
	}
	return col, err
}

// collectionView is a collection as the API shows it.
type collectionView struct {
	store.PromptCollection
	Object string `json:"object"`
}

func (s *Service) createCollection(c *fiber.Ctx) error {
	caller := principal(c)
	if err := requireScope(caller, scopePromptsCreate); err != nil {
		return err
	}
	fields, cerr := decodeObject(c.Body())
	if cerr != nil {
		return cerr
	}
	var p problems
	unknownFields(fields, "", []string{"name", "workspace_id", "parent_collection_id"}, &p)
	name, _ := strField(fields, "name", true, maxPromptName, &p)
	wsRef, _ := strField(fields, "workspace_id", false, maxPromptIdentifier, &p)
	parent, _ := strField(fields, "parent_collection_id", false, maxPromptIdentifier, &p)
	if err := p.err(); err != nil {
		return err
	}
	now := s.now()
	col := store.PromptCollection{ID: core.NewID(), Slug: newSlug("col", name, "collection"), Name: name, OrganisationID: caller.OrganisationID,
		CreatedBy: actor(caller), CreatedAt: now, LastUpdatedAt: now}
	err := s.st.Update(func(tx store.Tx) error {
		ws, err := s.promptWorkspace(tx, caller, wsRef)
		if err != nil {
			return err
		}
		col.WorkspaceID = ws.ID
		if parent != "" {
			pc, err := collectionIn(tx, ws.ID, "parent_collection_id", parent)
			if err != nil {
				return err
			}
			col.ParentCollectionID = pc.ID
		}
		return tx.Put(store.BucketCollections, col.ID, col)
	})
	if err != nil {
		return err
	}
	return c.JSON(fiber.Map{"id": col.ID, "slug": col.Slug, "object": "collection"})
}

func (s *Service) listCollections(c *fiber.Ctx) error {
	search := strings.ToLower(c.Query("search"))
	return listPromptRecords(s, c, store.BucketCollections, nil, func(r store.PromptCollection, ws string) bool {
		return (ws == "" || r.WorkspaceID == ws) && strings.Contains(strings.ToLower(r.Name), search)
	}, func(r store.PromptCollection) collectionView { return collectionView{r, "collection"} },
		func(v collectionView) (time.Time, string) { return v.CreatedAt, v.Slug })
}

func (s *Service) getCollection(c *fiber.Ctx) error {
	return getPromptRecord(s, c, loadCollection, func(r store.PromptCollection) collectionView { return collectionView{r, "collection"} })
}

// parseCollectionRename reads a PUT /collections body: {name}.
func parseCollectionRename(fields map[string]json.RawMessage, _ bool) (string, *core.Error) {
	var p problems
	unknownFields(fields, "", []string{"name"}, &p)
	name, _ := strField(fields, "name", true, maxPromptName, &p)
	return name, p.err()
}

// updateCollection renames a collection: PUT {name}.
func (s *Service) updateCollection(c *fiber.Ctx) error {
	col, err := updatePromptRecord(s, c, parseCollectionRename, loadCollection, func(tx store.Tx, _ *core.Principal, col *store.PromptCollection, name string) error {
		col.Name, col.LastUpdatedAt = name, s.now()
		return tx.Put(store.BucketCollections, col.ID, *col)
	})
	if err != nil {
		return err
	}
	return c.JSON(collectionView{col, "collection"})
}

// deleteCollection deletes an empty collection: 409 naming the prompts and
// collections still in it.
func (s *Service) deleteCollection(c *fiber.Ctx) error {
	caller := principal(c)
	if err := requireScope(caller, scopePromptsDelete); err != nil {
		return err
	}
	err := s.st.Update(func(tx store.Tx) error {
		col, err := loadCollection(tx, caller, c.Params("id"), true)
		if err != nil {
			return err
		}
		var inside []string
		prompts, err := store.List[store.Prompt](tx, store.BucketPrompts)
		if err != nil {
			return err
		}
		for _, p := range prompts {
			if p.CollectionID == col.ID {
				inside = append(inside, "prompt "+p.Slug)
			}
		}
		cols, err := store.List[store.PromptCollection](tx, store.BucketCollections)
		if err != nil {
			return err
		}
		for _, o := range cols {
			if o.ParentCollectionID == col.ID {
				inside = append(inside, "collection "+o.Slug)
			}
		}
		if len(inside) > 0 {
			slices.Sort(inside)
			return core.Conflict("collection %s is not empty: it holds %s", col.Slug, strings.Join(inside, ", "))
		}
		return tx.Delete(store.BucketCollections, col.ID)
	})
	if err != nil {
		return err
	}
	return c.JSON(fiber.Map{})
}
