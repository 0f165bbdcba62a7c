package adminsvc

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/llm-gateway/gateway/core"
	"github.com/llm-gateway/gateway/store"
)

// remoteServerFields are the fields of a server create, besides the
// kind's integration id.
var remoteServerFields = []string{"name", "workspace_id", "description", "slug"}

// serverFields and immutableServerFields are the fields of k's servers:
// all of them, and those refused on update.
func (k *remoteKind[S]) serverFields() []string {
	return append([]string{k.integIDField}, remoteServerFields...)
}

func (k *remoteKind[S]) immutableServerFields() []string {
	return []string{k.integIDField, "workspace_id", "slug"}
}

func createRemoteServer[S any](s *Service, c *fiber.Ctx, k *remoteKind[S]) error {
	caller := principal(c)
	if err := requireScope(caller, k.server.scope+".create"); err != nil {
		return err
	}
	fields, cerr := decodeObject(c.Body())
	if cerr != nil {
		return cerr
	}
	var p problems
	unknownFields(fields, "", k.serverFields(), &p)
	name, _ := strField(fields, "name", true, 255, &p)
	integRef, _ := strField(fields, k.integIDField, true, 255, &p)
	wsRef, _ := strField(fields, "workspace_id", false, 255, &p)
	desc, _ := strField(fields, "description", false, 1024, &p)
	slug := slugField(fields, "slug", &p)
	if err := p.err(); err != nil {
		return err
	}
	now := s.now()
	var rec S
	sv := k.common(&rec)
	*sv = store.RemoteServer{ID: core.NewID(), Slug: slug, Name: name, Description: desc, OrganisationID: caller.OrganisationID,
		Status: store.StatusActive, CreatedAt: now, LastUpdatedAt: now}
	if sv.Slug == "" {
		sv.Slug = autoSlug(name, k.slugFallback)
	}
	return createManaged(s, c, k.server, &rec, wsRef, func(tx store.Tx, ws store.Workspace) error {
		in, ok, err := findBySlug(tx, k.integBucket, integRef, remoteIntegrationIDSlug)
		if err != nil {
			return err
		}
		if !ok || !remoteIntegrationAllows(in, ws.ID) {
			return core.ValidationError(k.integIDField, "%s: no %s %q that workspace %s may use", k.integIDField, k.integNoun, integRef, ws.Slug)
		}
		*k.integrationID(&rec) = in.ID
		if taken, err := slugTaken(tx, k.server.bucket, sv.Slug, k.server.idSlug); err != nil {
			return err
		} else if taken {
			return core.Conflict("an %s with slug %q exists already", k.server.noun, sv.Slug)
		}
		return nil
	})
}

// remoteServerView is an MCP or agent server as the admin API shows it;
// url is where clients reach it through the gateway. Of the integration
// ids, the kind's is set.
type remoteServerView struct {
	ID                 string    `json:"id"`
	Slug               string    `json:"slug"`
	Name               string    `json:"name"`
	Description        string    `json:"description"`
	MCPIntegrationID   string    `json:"mcp_integration_id,omitempty"`
	AgentIntegrationID string    `json:"agent_integration_id,omitempty"`
	OrganisationID     string    `json:"organisation_id"`
	WorkspaceID        string    `json:"workspace_id"`
	Status             string    `json:"status"`
	URL                string    `json:"url"`
	CreatedAt          time.Time `json:"created_at"`
	LastUpdatedAt      time.Time `json:"last_updated_at"`
	Object             string    `json:"object"`
}

// remoteServerViews are the views of k's servers.
func remoteServerViews[S any](s *Service, k *remoteKind[S]) func(context.Context, []S) []remoteServerView {
	return func(_ context.Context, recs []S) []remoteServerView {
		out := make([]remoteServerView, len(recs))
		for i := range recs {
			r := k.common(&recs[i])
			out[i] = remoteServerView{ID: r.ID, Slug: r.Slug, Name: r.Name, Description: r.Description, OrganisationID: r.OrganisationID,
				WorkspaceID: r.WorkspaceID, Status: r.Status, URL: s.publicURL + "/v1/" + k.route + "/" + r.Slug,
				CreatedAt: r.CreatedAt, LastUpdatedAt: r.LastUpdatedAt, Object: k.server.object}
			k.setViewIntegration(&out[i], *k.integrationID(&recs[i]))
		}
		return out
	}
}

func listRemoteServers[S any](s *Service, c *fiber.Ctx, k *remoteKind[S]) error {
	return listManaged(s, c, k.server, func(S) bool { return true }, remoteServerViews(s, k),
		func(v remoteServerView) (time.Time, string) { return v.CreatedAt, v.Slug })
}

// changeRemoteServer loads the server of the route for a change the
// caller must manage, applies change and stores it.
func changeRemoteServer[S any](s *Service, c *fiber.Ctx, k *remoteKind[S], change func(*store.RemoteServer, *problems)) error {
	caller := principal(c)
	if err := requireScope(caller, k.server.scope+".update"); err != nil {
		return err
	}
	err := s.st.Update(func(tx store.Tx) error {
		rec, err := k.server.loadToManage(tx, caller, c.Params("slug"))
		if err != nil {
			return err
		}
		sv := k.common(&rec)
		var p problems
		change(sv, &p)
		if err := p.err(); err != nil {
			return err
		}
		sv.LastUpdatedAt = s.now()
		return tx.Put(k.server.bucket, sv.ID, rec)
	})
	if err != nil {
		return err
	}
	if err := k.reloaded(s); err != nil {
		return err
	}
	return c.JSON(fiber.Map{})
}

func updateRemoteServer[S any](s *Service, c *fiber.Ctx, k *remoteKind[S]) error {
	fields, cerr := decodeObject(c.Body())
	if cerr != nil {
		return cerr
	}
	return changeRemoteServer(s, c, k, func(rec *store.RemoteServer, p *problems) {
		for _, f := range k.immutableServerFields() {
			if _, ok := fields[f]; ok {
				p.add(f, "cannot be changed after the %s is created", k.server.noun)
			}
		}
		unknownFields(fields, "", k.serverFields(), p)
		if v, ok := strField(fields, "name", false, 255, p); ok {
			if v == "" {
				p.add("name", "must not be empty")
			}
			rec.Name = v
		}
		if v, ok := strField(fields, "description", false, 1024, p); ok {
			rec.Description = v
		}
	})
}

func putRemoteServerCapabilities[S any](s *Service, c *fiber.Ctx, k *remoteKind[S]) error {
	fields, cerr := decodeObject(c.Body())
	if cerr != nil {
		return cerr
	}
	return changeRemoteServer(s, c, k, func(rec *store.RemoteServer, p *problems) { rec.Capabilities = k.parseCapabilities(fields, p) })
}

// readRemoteServer loads the server of the route and its integration for
// reading.
func readRemoteServer[S any](s *Service, c *fiber.Ctx, k *remoteKind[S]) (sv S, in store.RemoteIntegration, err error) {
	caller := principal(c)
	if err := requireScope(caller, k.server.scope+".read"); err != nil {
		return sv, in, err
	}
	err = s.st.View(func(tx store.Tx) error {
		if sv, err = k.server.load(tx, caller, c.Params("slug")); err != nil {
			return err
		}
		return tx.Get(k.integBucket, *k.integrationID(&sv), &in)
	})
	return sv, in, err
}

func getRemoteServerCapabilities[S any](s *Service, c *fiber.Ctx, k *remoteKind[S]) error {
	sv, in, err := readRemoteServer(s, c, k)
	if err != nil {
		return err
	}
	return sendCapabilities(c, in.Metadata.Offered, k.common(&sv).Capabilities)
}

// getRemoteServerMetadata answers the metadata of the server's
// integration: what the last test of any server on it learnt.
func getRemoteServerMetadata[S any](s *Service, c *fiber.Ctx, k *remoteKind[S]) error {
	_, in, err := readRemoteServer(s, c, k)
	if err != nil {
		return err
	}
	return c.JSON(metadataViewOf(in.Metadata))
}

// DefaultRemoteTestTimeout bounds one test of a server, all its requests
// together, unless Deps.RemoteTestTimeout says otherwise: a test only asks
// what the server is and offers, a few small answers, and the admin waits
// for it.
const DefaultRemoteTestTimeout = 30 * time.Second

// errRemoteTestTimeout is why a test's context ends when its time is up.
var errRemoteTestTimeout = errors.New("the test's time limit was reached")

// testRemoteServer connects to the server's integration, stores what it
// learnt and the outcome as the integration's metadata, and answers it. A
// server that cannot be reached is a failed sync (200, sync_status
// failed), not an error of this route.
func testRemoteServer[S any](s *Service, c *fiber.Ctx, k *remoteKind[S]) error {
	caller := principal(c)
	if err := requireScope(caller, k.server.scope+".update"); err != nil {
		return err
	}
	if k.client(s) == nil {
		return core.Internal(nil, "this gateway has no %s client configured", k.remoteNoun)
	}
	var in store.RemoteIntegration
	err := s.st.View(func(tx store.Tx) error {
		sv, err := k.server.loadToManage(tx, caller, c.Params("slug"))
		if err != nil {
			return err
		}
		if err := tx.Get(k.integBucket, *k.integrationID(&sv), &in); err != nil {
			return err
		}
		// A test connects with the integration's credentials: only while
		// the integration is enabled for the server's workspace, as for
		// the proxied requests.
		if common := k.common(&sv); !remoteIntegrationAllows(in, common.WorkspaceID) {
			return core.Forbidden("%s %s cannot be tested: its %s %s is not enabled for this workspace", k.server.noun, common.Slug, k.integNoun, in.Slug)
		}
		return nil
	})
	if err != nil {
		return err
	}
	md := syncRemote(s, c.UserContext(), k, in, s.remoteTestTimeout)
	err = s.st.Update(func(tx store.Tx) error {
		var cur store.RemoteIntegration
		if err := tx.Get(k.integBucket, in.ID, &cur); err != nil {
			return err
		}
		cur.Metadata = md
		return tx.Put(k.integBucket, cur.ID, cur)
	})
	if err != nil {
		return err
	}
	return c.JSON(metadataViewOf(md))
}

// syncRemote asks the server of in what it is and offers, within limit:
// the metadata to store, with sync_status failed and the reason when it
// could not (naming the limit when the server did not answer within it).
func syncRemote[S any](s *Service, ctx context.Context, k *remoteKind[S], in store.RemoteIntegration, limit time.Duration) store.RemoteMetadata {
	ctx, cancel := context.WithTimeoutCause(ctx, limit, errRemoteTestTimeout)
	defer cancel()
	now := s.now()
	md := in.Metadata // a failed sync keeps what the last good one learnt
	md.LastSyncedAt, md.SyncStatus, md.SyncError = &now, syncFailed, ""
	headers, err := openHeaders(s.cipher, in.Configurations.CustomHeaders)
	if err != nil {
		md.SyncError = "the stored headers cannot be opened: " + err.Error()
		return md
	}
	var lookup SecretLookup
	if s.secrets != nil {
		lookup = s.secrets.ResolveFor
	}
	headers, cerr := resolveHeaderMappings(ctx, lookup, "", headers, in.SecretMappings, k.integNoun+" "+in.Slug)
	if cerr != nil {
		md.SyncError = cerr.Message
		return md
	}
	if in.AuthType == authOAuthAuto {
		snap := k.snapshot(s)
		if snap == nil {
			md.SyncError = "this gateway serves no " + k.server.plural + ": it has no OAuth tokens to test with"
			return md
		}
		if headers, cerr = snap.withOAuth(ctx, &in, headers); cerr != nil {
			md.SyncError = cerr.Message
			return md
		}
	}
	learnt := store.RemoteMetadata{SyncStatus: syncOK, LastSyncedAt: &now}
	if err := k.sync(s, ctx, in, remoteEndpoint{URL: in.URL, Header: headers}, &learnt); err != nil {
		md.SyncError = withoutURL(err)
		if errors.Is(context.Cause(ctx), errRemoteTestTimeout) {
			md.SyncError = fmt.Sprintf("the %s did not answer within %s (%s)", k.remoteNoun, limit, md.SyncError)
		}
		return md
	}
	return learnt
}

// withoutURL is err's text less the URL an *url.Error repeats: an
// integration's URL may carry a credential (a token in its path or query),
// and a sync error is shown to whoever may read the server's metadata.
func withoutURL(err error) string {
	msg := err.Error()
	if ue := (*url.Error)(nil); errors.As(err, &ue) {
		msg = strings.Replace(msg, ue.Error(), ue.Op+": "+ue.Err.Error(), 1)
	}
	return msg
}
