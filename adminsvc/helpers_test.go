package adminsvc_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/llm-gateway/gateway/adminsvc"
	"github.com/llm-gateway/gateway/adminsvc/secrets"
	"github.com/llm-gateway/gateway/core"
	"github.com/llm-gateway/gateway/core/pipeline"
	"github.com/llm-gateway/gateway/core/server"
	"github.com/llm-gateway/gateway/core/transport"
	"github.com/llm-gateway/gateway/hooks"
	"github.com/llm-gateway/gateway/store"
)

// adminKey is the operator-chosen bootstrap key of every test env.
const adminKey = "test-admin-key-0123456789abcdef"

// t0 is the frozen start time of every test clock.
var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// clock is an injectable, race-safe clock.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// testClient is shared by the test pipelines: the data plane is not under
// test here.
var testClient = sync.OnceValue(upstreamClient)

// testPipeline is a pipeline whose hooks resolve with reg, as an app's does.
func testPipeline(reg *hooks.Registry) (*pipeline.Pipeline, error) {
	return pipeline.New(pipeline.Options{Client: testClient(), GuardedClient: testClient(), Hooks: &hooks.Runner{Registry: reg}})
}

// env is one gateway over a real bbolt store in a temp dir.
type env struct {
	t     testing.TB
	dir   string
	st    store.Store
	keys  *adminsvc.Keys
	app   *fiber.App
	clock *clock
	boot  adminsvc.BootstrapResult
	orgID string
	wsID  string // the default workspace
	owner string // the bootstrap owner user
	// wrap, when set, wraps the store the service and the snapshot use.
	wrap func(store.Store) store.Store
	// resolver resolves secret references, as the gateway's does.
	resolver *secrets.Resolver
	// hooks is the registry of the app's hooks (set by start).
	hooks *hooks.Registry
	// prompts is the app's saved-prompt snapshot (set by start).
	prompts *adminsvc.Prompts
	// setup, when set, adjusts the admin deps and the server options
	// before the app is built (audit log, JWT authentication).
	setup func(*adminsvc.Deps, *server.Options)
	// principals are extra credentials with hand-made principals, for
	// role tests (see as).
	principals map[string]*core.Principal
}

// fakeAuth authenticates e.principals' credentials, then the key snapshot.
type fakeAuth struct {
	keys *adminsvc.Keys
	e    *env
}

func (a fakeAuth) Authenticate(secret string) (*core.Principal, *core.Error) {
	if p, ok := a.e.principals[secret]; ok {
		return p, nil
	}
	return a.keys.Authenticate(secret)
}

// as registers a credential acting as principal p with scopes.
func (e *env) as(p core.Principal, scopes ...string) string {
	if e.principals == nil {
		e.principals = map[string]*core.Principal{}
	}
	if p.OrganisationID == "" {
		p.OrganisationID = e.orgID
	}
	if p.KeyID == "" {
		p.KeyID = core.NewID()
	}
	secret := "fake-" + p.KeyID
	e.principals[secret] = core.NewPrincipal(p, scopes)
	return secret
}

func newEnv(t testing.TB) *env {
	t.Helper()
	e := &env{t: t, dir: t.TempDir(), clock: &clock{t: t0}}
	st, err := store.Open(e.dir)
	if err != nil {
		t.Fatal(err)
	}
	e.st = st
	t.Cleanup(func() { e.st.Close() })
	e.boot, err = adminsvc.Bootstrap(st, adminKey, t0)
	if err != nil {
		t.Fatal(err)
	}
	e.orgID, e.wsID = e.boot.OrganisationID, e.boot.WorkspaceID
	users := listBucket[store.User](t, st, store.BucketUsers)
	if len(users) != 1 {
		t.Fatalf("bootstrap made %d users", len(users))
	}
	e.owner = users[0].ID
	e.start()
	return e
}

// start builds the key snapshot, the admin service and the app over e.st.
func (e *env) start() {
	e.t.Helper()
	st := e.st
	if e.wrap != nil {
		st = e.wrap(st)
	}
	keys, err := adminsvc.NewKeys(st, e.clock.Now)
	if err != nil {
		e.t.Fatal(err)
	}
	guardrails := mustGuardrails(e.t, st, nil)
	pl, err := testPipeline(guardrails.Hooks())
	if err != nil {
		e.t.Fatal(err)
	}
	configs, err := adminsvc.NewConfigs(st, guardrails.Hooks())
	if err != nil {
		e.t.Fatal(err)
	}
	prompts, err := adminsvc.NewPrompts(st)
	if err != nil {
		e.t.Fatal(err)
	}
	e.keys, e.hooks, e.prompts = keys, guardrails.Hooks(), prompts
	e.resolver = secrets.NewResolver(st, testCipher, secrets.Options{Now: e.clock.Now})
	deps := adminsvc.Deps{Store: st, Keys: keys, Configs: configs, Prompts: prompts, Guardrails: guardrails,
		Cipher: testCipher, SecretResolver: e.resolver, PublicURL: "http://gw.test", Now: e.clock.Now}
	opts := server.Options{Auth: fakeAuth{keys, e}, Pipeline: pl, Configs: configs, Now: e.clock.Now}
	if e.setup != nil {
		e.setup(&deps, &opts)
	}
	svc := adminsvc.New(deps)
	opts.Admin, opts.Public = svc.Register, svc.RegisterPublic
	e.app = server.New(opts)
}

// reopen closes the store and opens it again, as a restart does.
func (e *env) reopen() {
	e.t.Helper()
	if err := e.st.Close(); err != nil {
		e.t.Fatal(err)
	}
	st, err := store.Open(e.dir)
	if err != nil {
		e.t.Fatal(err)
	}
	e.st = st
	e.start()
}

func listBucket[T any](t testing.TB, st store.Store, b store.Bucket) []T {
	t.Helper()
	var out []T
	if err := st.View(func(tx store.Tx) (err error) { out, err = store.List[T](tx, b); return }); err != nil {
		t.Fatal(err)
	}
	return out
}

// addWorkspace stores another workspace (there is no workspace route yet).
func (e *env) addWorkspace(slug string) string {
	e.t.Helper()
	ws := store.Workspace{ID: core.NewID(), Slug: slug, Name: slug, OrganisationID: e.orgID,
		Status: store.StatusActive, CreatedAt: t0, LastUpdatedAt: t0}
	if err := e.st.Update(func(tx store.Tx) error { return tx.Put(store.BucketWorkspaces, ws.ID, ws) }); err != nil {
		e.t.Fatal(err)
	}
	return ws.ID
}

// addUser stores another organisation member.
func (e *env) addUser(email string) string {
	e.t.Helper()
	u := store.User{ID: core.NewID(), Email: email, Role: "member", OrganisationID: e.orgID, CreatedAt: t0, LastUpdatedAt: t0}
	if err := e.st.Update(func(tx store.Tx) error { return tx.Put(store.BucketUsers, u.ID, u) }); err != nil {
		e.t.Fatal(err)
	}
	return u.ID
}

// resp is a decoded answer.
type resp struct {
	status int
	raw    []byte
	body   map[string]any
	header http.Header // set by mgEnv.chat and env.doHeaders
}

func (r resp) str(field string) string {
	s, _ := r.body[field].(string)
	return s
}

func (r resp) errField(field string) string {
	e, _ := r.body["error"].(map[string]any)
	s, _ := e[field].(string)
	return s
}

func (r resp) list() []map[string]any {
	items, _ := r.body["data"].([]any)
	out := make([]map[string]any, len(items))
	for i, it := range items {
		out[i], _ = it.(map[string]any)
	}
	return out
}

func (r resp) total() int {
	n, _ := r.body["total"].(float64)
	return int(n)
}

// do sends one request; body is nil, a string sent as is, or a value
// encoded as JSON.
func (e *env) do(method, path, key string, body any) resp {
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		rd = strings.NewReader(b)
	default:
		raw, err := json.Marshal(b)
		if err != nil {
			panic(err)
		}
		rd = bytes.NewReader(raw)
	}
	req := httptest.NewRequest(method, path, rd)
	if rd != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if key != "" {
		req.Header.Set("x-gateway-api-key", key)
	}
	// No Fatal here: do runs in subtests and goroutines; a transport
	// failure shows as status 0 with the error as the body.
	res, err := e.app.Test(req, -1)
	if err != nil {
		return resp{raw: []byte(fmt.Sprintf("%s %s: %v", method, path, err))}
	}
	defer res.Body.Close()
	raw, err := io.ReadAll(res.Body)
	if err != nil {
		return resp{raw: []byte(err.Error())}
	}
	r := resp{status: res.StatusCode, raw: raw}
	_ = json.Unmarshal(raw, &r.body)
	return r
}

// wantErr checks an error answer's status and code.
func wantErr(t *testing.T, r resp, status int, code string) {
	t.Helper()
	if r.status != status || r.errField("code") != code {
		t.Fatalf("got %d %s, want %d %s", r.status, r.raw, status, code)
	}
}

// createKey creates a key with caller and fails the test unless it works.
func (e *env) createKey(caller, path string, body map[string]any) (id, secret string) {
	e.t.Helper()
	r := e.do(http.MethodPost, "/v1/api-keys/"+path, caller, body)
	if r.status != http.StatusOK {
		e.t.Fatalf("create %s: %d %s", path, r.status, r.raw)
	}
	return r.str("id"), r.str("key")
}

// wsKey creates a workspace service key in workspace ws with scopes.
func (e *env) wsKey(ws string, scopes ...string) (id, secret string) {
	e.t.Helper()
	return e.createKey(adminKey, "workspace/service", map[string]any{"name": "ws key", "workspace_id": ws, "scopes": scopes})
}

// mustGuardrails loads the saved-guardrail snapshot, whose checks not
// built in come from checks, as the gateway does at start.
func mustGuardrails(t testing.TB, st store.Store, checks hooks.CheckSource) *adminsvc.Guardrails {
	t.Helper()
	g, err := adminsvc.NewGuardrails(st, checks)
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// upstreamClient is the gateway's provider client.
func upstreamClient() *http.Client {
	return &http.Client{Transport: transport.New(transport.Provider())}
}
