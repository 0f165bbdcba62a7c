package adminsvc

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/llm-gateway/gateway/core"
	"github.com/llm-gateway/gateway/store"
)

// This file holds what the provider and virtual key handlers share: both
// are credentials of one workspace, managed by its admins and managers,
// with a name, a note, limits, an expiry and reset_usage.

// managedKind describes providers or virtual keys to the shared handlers.
type managedKind[T any] struct {
	bucket store.Bucket
	noun   string // "provider", in messages
	plural string // "providers", in the role message
	scope  string // the scope prefix: "providers" for providers.create...
	entity string // the limits entity kind, for reset_usage
	object string // the object of the create answer
	idSlug func(T) (string, string)
	fields func(*T) managedFields
	// reload rebuilds the snapshot that serves the kind after a change;
	// nil: Service.reloadManaged.
	reload func(*Service) error
}

// reloaded rebuilds the kind's snapshot after a change.
func (k managedKind[T]) reloaded(s *Service) error {
	if k.reload != nil {
		return k.reload(s)
	}
	return s.reloadManaged()
}

// managedFields points at the fields of a record the shared handlers read
// and set.
type managedFields struct {
	id, workspaceID, name, note *string
	usageLimits                 **store.UsageLimits
	rateLimits                  *[]store.RateLimit
	expiresAt                   **time.Time
	lastResetAt                 **time.Time // nil: the kind keeps no reset time
	lastUpdatedAt               *time.Time
}

var providerKind = managedKind[store.Provider]{bucket: store.BucketProviders, noun: "provider", plural: "providers",
	scope: "providers", entity: "provider", object: "provider", idSlug: providerIDSlug,
	fields: func(r *store.Provider) managedFields {
		return managedFields{id: &r.ID, workspaceID: &r.WorkspaceID, name: &r.Name, note: &r.Note,
			usageLimits: &r.UsageLimits, rateLimits: &r.RateLimits, expiresAt: &r.ExpiresAt, lastResetAt: &r.LastResetAt,
			lastUpdatedAt: &r.LastUpdatedAt}
	}}

var virtualKeyKind = managedKind[store.VirtualKey]{bucket: store.BucketVirtualKeys, noun: "virtual key", plural: "virtual keys",
	scope: "virtual_keys", entity: "virtual_key", object: "virtual-key", idSlug: virtualKeyIDSlug,
	fields: func(r *store.VirtualKey) managedFields {
		return managedFields{id: &r.ID, workspaceID: &r.WorkspaceID, name: &r.Name, note: &r.Note,
			usageLimits: &r.UsageLimits, rateLimits: &r.RateLimits, expiresAt: &r.ExpiresAt, lastUpdatedAt: &r.LastUpdatedAt}
	}}

// canManageInWorkspace is the role rule for providers and virtual keys:
// organisation admins, and admins and managers of the workspace.
func canManageInWorkspace(p *core.Principal, ws, what string) *core.Error {
	if !p.IsWorkspaceManager(ws) {
		return core.Forbidden("only admins and managers of the workspace manage its %s", what)
	}
	return nil
}

// providerStatus is a provider's or virtual key's status at now: expired
// once expires_at has passed, else what is stored (active; the views show
// exhausted from the limits engine's count, see withUsage).
func providerStatus(status string, expires *time.Time, now time.Time) string {
	if expires != nil && !now.Before(*expires) {
		return store.StatusExpired
	}
	if status == "" {
		return store.StatusActive
	}
	return status
}

// load finds a record by id or slug in a workspace the caller may see.
func (k managedKind[T]) load(tx store.Tx, caller *core.Principal, ref string) (T, error) {
	rec, ok, err := findBySlug(tx, k.bucket, ref, k.idSlug)
	if err != nil {
		return rec, err
	}
	if !ok || (!caller.IsOrganisationKey() && *k.fields(&rec).workspaceID != caller.WorkspaceID) {
		return rec, core.NotFound("no %s %q", k.noun, ref)
	}
	return rec, nil
}

// loadToManage is load for a change: the caller must also manage the
// record's workspace.
func (k managedKind[T]) loadToManage(tx store.Tx, caller *core.Principal, ref string) (T, error) {
	rec, err := k.load(tx, caller, ref)
	if err != nil {
		return rec, err
	}
	if err := canManageInWorkspace(caller, *k.fields(&rec).workspaceID, k.plural); err != nil {
		return rec, err
	}
	return rec, nil
}

// createManaged stores *rec, a new record, in workspace wsRef after check
// (the kind's own checks in the same transaction, given the workspace), and
// answers its id and slug.
func createManaged[T any](s *Service, c *fiber.Ctx, k managedKind[T], rec *T, wsRef string, check func(store.Tx, store.Workspace) error) error {
	caller := principal(c)
	f := k.fields(rec)
	err := s.st.Update(func(tx store.Tx) error {
		ws, err := s.resolveWorkspace(tx, caller, wsRef, true)
		if err != nil {
			return err
		}
		if err := canManageInWorkspace(caller, ws.ID, k.plural); err != nil {
			return err
		}
		if err := check(tx, ws); err != nil {
			return err
		}
		*f.workspaceID = ws.ID
		return tx.Put(k.bucket, *f.id, *rec)
	})
	if err != nil {
		return err
	}
	if err := k.reloaded(s); err != nil {
		return err
	}
	id, slug := k.idSlug(*rec)
	return c.JSON(fiber.Map{"id": id, "slug": slug, "object": k.object})
}

// listManaged answers the records of the caller's workspace (or of
// ?workspace_id) that keep accepts, as views, newest first.
func listManaged[T, V any](s *Service, c *fiber.Ctx, k managedKind[T], keep func(T) bool, views func(context.Context, []T) []V, order func(V) (time.Time, string)) error {
	caller := principal(c)
	if err := requireScope(caller, k.scope+".list"); err != nil {
		return err
	}
	var p problems
	pg := parsePage(c.Query, 50, 1000, &p)
	if err := p.err(); err != nil {
		return err
	}
	var recs []T
	err := s.st.View(func(tx store.Tx) error {
		ws, err := s.listWorkspace(tx, caller, c.Query("workspace_id"))
		if err != nil {
			return err
		}
		all, err := store.List[T](tx, k.bucket)
		for _, r := range all {
			if (ws == "" || *k.fields(&r).workspaceID == ws) && keep(r) {
				recs = append(recs, r)
			}
		}
		return err
	})
	if err != nil {
		return err
	}
	return newestFirst(c, pg, views(c.UserContext(), recs), order)
}

// newestFirst sorts out newest first, then by key (a slug or an id), and
// answers page pg of it in the list envelope.
func newestFirst[V any](c *fiber.Ctx, pg page, out []V, order func(V) (time.Time, string)) error {
	slices.SortFunc(out, func(a, b V) int {
		ta, ka := order(a)
		tb, kb := order(b)
		if c := tb.Compare(ta); c != 0 {
			return c
		}
		return strings.Compare(ka, kb)
	})
	return sendList(c, pg, out)
}

// getManaged answers one record as a view.
func getManaged[T, V any](s *Service, c *fiber.Ctx, k managedKind[T], views func(context.Context, []T) []V) error {
	caller := principal(c)
	if err := requireScope(caller, k.scope+".read"); err != nil {
		return err
	}
	var rec T
	err := s.st.View(func(tx store.Tx) (err error) { rec, err = k.load(tx, caller, c.Params("slug")); return })
	if err != nil {
		return err
	}
	return c.JSON(views(c.UserContext(), []T{rec})[0])
}

// updateManaged changes a record: name, note, usage_limits, rate_limits,
// expires_at and reset_usage (which zeroes the usage the limits engine
// counts for it, so an exhausted record is active again) are read here, the
// kind's own fields by apply, between note and usage_limits. The fields of
// immutable are refused; known and immutable are every field accepted
// besides reset_usage.
func updateManaged[T any](s *Service, c *fiber.Ctx, k managedKind[T], known, immutable []string,
	apply func(store.Tx, *T, map[string]json.RawMessage, *problems) error) error {
	caller := principal(c)
	if err := requireScope(caller, k.scope+".update"); err != nil {
		return err
	}
	fields, cerr := decodeObject(c.Body())
	if cerr != nil {
		return cerr
	}
	now := s.now()
	var reset bool
	var id string // of the record updated
	err := s.st.Update(func(tx store.Tx) error {
		rec, err := k.loadToManage(tx, caller, c.Params("slug"))
		if err != nil {
			return err
		}
		f := k.fields(&rec)
		var p problems
		for _, name := range immutable {
			if _, ok := fields[name]; ok {
				p.add(name, "cannot be changed after the %s is created", k.noun)
			}
		}
		unknownFields(fields, "", slices.Concat(known, immutable, []string{"reset_usage"}), &p)
		if v, ok := strField(fields, "name", false, 255, &p); ok {
			if v == "" {
				p.add("name", "must not be empty")
			}
			*f.name = v
		}
		if v, ok := strField(fields, "note", false, 1024, &p); ok {
			*f.note = v
		}
		if apply != nil {
			if err := apply(tx, &rec, fields, &p); err != nil {
				return err
			}
		}
		restarts := false
		if raw, ok := fields["usage_limits"]; ok {
			old := *f.usageLimits
			*f.usageLimits = parseUsageLimits(raw, "usage_limits", now, &p)
			restarts = usageRestarts(old, *f.usageLimits)
		}
		if raw, ok := fields["rate_limits"]; ok {
			*f.rateLimits = parseRateLimits(raw, "rate_limits", &p)
		}
		if exp, set := expiresField(fields, now, &p); set {
			*f.expiresAt = exp
		}
		id = *f.id
		if reset = resetUsage(fields, &p) || restarts; reset && f.lastResetAt != nil {
			*f.lastResetAt = &now
		}
		if err := p.err(); err != nil {
			return err
		}
		*f.lastUpdatedAt = now
		return tx.Put(k.bucket, id, rec)
	})
	if err != nil {
		return err
	}
	if err := s.reloadManaged(); err != nil {
		return err
	}
	if reset {
		if err := s.resetEntityUsage(c.UserContext(), k.entity, id); err != nil {
			return err
		}
	}
	return c.JSON(fiber.Map{})
}

// resetUsage reads the reset_usage flag of an update.
func resetUsage(fields map[string]json.RawMessage, p *problems) bool {
	raw, ok := fields["reset_usage"]
	if !ok {
		return false
	}
	var b bool
	if json.Unmarshal(raw, &b) != nil {
		p.add("reset_usage", "must be true or false")
	}
	return b
}

// deleteManaged removes a record.
func deleteManaged[T any](s *Service, c *fiber.Ctx, k managedKind[T]) error {
	caller := principal(c)
	if err := requireScope(caller, k.scope+".delete"); err != nil {
		return err
	}
	err := s.st.Update(func(tx store.Tx) error {
		rec, err := k.loadToManage(tx, caller, c.Params("slug"))
		if err != nil {
			return err
		}
		return tx.Delete(k.bucket, *k.fields(&rec).id)
	})
	if err != nil {
		return err
	}
	if err := k.reloaded(s); err != nil {
		return err
	}
	return c.JSON(fiber.Map{})
}
