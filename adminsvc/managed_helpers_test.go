package adminsvc_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/llm-gateway/gateway/adminsvc"
	"github.com/llm-gateway/gateway/adminsvc/secrets"
	"github.com/llm-gateway/gateway/core/limits"
	"github.com/llm-gateway/gateway/core/limits/counters"
	"github.com/llm-gateway/gateway/core/pipeline"
	"github.com/llm-gateway/gateway/core/server"
	"github.com/llm-gateway/gateway/hooks"
	"github.com/llm-gateway/gateway/store"
)

// upstream is an httptest provider that records what it received. It
// answers 2 tokens' worth, whole, or streamed when the request asks for a
// stream.
type upstream struct {
	srv *httptest.Server
	mu  sync.Mutex
	got []*http.Request
}

func newUpstream(t *testing.T) *upstream {
	u := &upstream{}
	u.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		u.mu.Lock()
		u.got = append(u.got, r.Clone(context.Background()))
		u.mu.Unlock()
		if strings.Contains(string(body), `"stream":true`) {
			w.Header().Set("Content-Type", "text/event-stream")
			io.WriteString(w, "data: {\"id\":\"c1\",\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"hi\"}}]}\n\n"+
				"data: {\"id\":\"c1\",\"object\":\"chat.completion.chunk\",\"choices\":[],\"usage\":{\"prompt_tokens\":1,\"completion_tokens\":1,\"total_tokens\":2}}\n\n"+
				"data: [DONE]\n\n")
			return
		}
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"id":"c1","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"hi"},"finish_reason":"stop"}],"usage":{"prompt_tokens":1,"completion_tokens":1,"total_tokens":2}}`)
	}))
	t.Cleanup(u.srv.Close)
	return u
}

// last is the last request the upstream received.
func (u *upstream) last(t *testing.T) *http.Request {
	t.Helper()
	u.mu.Lock()
	defer u.mu.Unlock()
	if len(u.got) == 0 {
		t.Fatal("the upstream received no request")
	}
	return u.got[len(u.got)-1]
}

func (u *upstream) count() int {
	u.mu.Lock()
	defer u.mu.Unlock()
	return len(u.got)
}

// mgEnv is a test env whose app resolves managed providers.
type mgEnv struct {
	*env
	cipher  *store.Cipher
	managed *adminsvc.Managed
	up      *upstream
	// secrets is what the fake secret lookup answers; a missing entry fails.
	secrets sync.Map
	lookups atomic.Int64
	// limiter, when set, is the app's limits engine (see withEngine).
	limiter *limits.Engine
}

func newMgEnv(t *testing.T) *mgEnv {
	t.Helper()
	c, err := store.NewCipher([]byte("0123456789abcdef0123456789abcdef"))
	if err != nil {
		t.Fatal(err)
	}
	m := &mgEnv{env: newEnv(t), cipher: c, up: newUpstream(t)}
	m.startManaged()
	return m
}

func (m *mgEnv) lookup(_ context.Context, workspace, ref, key string) (string, error) {
	m.lookups.Add(1)
	var rec store.SecretReference
	if m.st.View(func(tx store.Tx) error { return tx.Get(store.BucketSecretReferences, ref, &rec) }) == nil && !secrets.Allows(rec, workspace) {
		return "", fmt.Errorf("%w: %s", secrets.ErrNotShared, ref)
	}
	if v, ok := m.secrets.Load(ref + "/" + key); ok {
		return v.(string), nil
	}
	return "", errors.New("vault answered 403 permission denied")
}

// startManaged builds the app with the cipher and the managed snapshot.
func (m *mgEnv) startManaged() {
	e := m.env
	e.t.Helper()
	keys, err := adminsvc.NewKeys(e.st, e.clock.Now)
	if err != nil {
		e.t.Fatal(err)
	}
	guardrails := mustGuardrails(e.t, e.st, nil)
	configs, err := adminsvc.NewConfigs(e.st, guardrails.Hooks())
	if err != nil {
		e.t.Fatal(err)
	}
	m.managed, err = adminsvc.NewManaged(adminsvc.ManagedOptions{Store: e.st, Cipher: m.cipher, Lookup: m.lookup, Now: e.clock.Now})
	if err != nil {
		e.t.Fatal(err)
	}
	po := pipeline.Options{Client: upstreamClient(), GuardedClient: upstreamClient(), Managed: m.managed,
		Hooks: &hooks.Runner{Registry: guardrails.Hooks()}}
	if m.limiter != nil {
		po.Limiter = m.limiter
	}
	pl, err := pipeline.New(po)
	if err != nil {
		e.t.Fatal(err)
	}
	e.keys = keys
	deps := adminsvc.Deps{Store: e.st, Keys: keys, Configs: configs, Guardrails: guardrails,
		Cipher: m.cipher, Managed: m.managed, Now: e.clock.Now}
	opts := server.Options{Auth: keys, Pipeline: pl, Configs: configs, Managed: m.managed, Now: e.clock.Now}
	if m.limiter != nil {
		deps.Limits, opts.Limiter = m.limiter, m.limiter
	}
	if e.setup != nil { // e.g. withMCP's
		e.setup(&deps, &opts)
	}
	opts.Admin = adminsvc.New(deps).Register
	e.app = server.New(opts)
}

// withEngine restarts m's app with a real limits engine over its store, with
// the embedded counter on m's clock (not kept across reopenManaged).
func (m *mgEnv) withEngine() *limits.Engine {
	m.t.Helper()
	ctr, err := counters.NewMemory(counters.MemoryOptions{Now: m.clock.Now})
	if err != nil {
		m.t.Fatal(err)
	}
	m.t.Cleanup(func() { ctr.Close() })
	eng, err := limits.New(limits.Options{Store: m.st, Counter: ctr, Now: m.clock.Now, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		m.t.Fatal(err)
	}
	m.t.Cleanup(eng.Close)
	m.limiter = eng
	m.startManaged()
	return eng
}

// reopenManaged closes the store and opens it again, as a restart does.
func (m *mgEnv) reopenManaged() {
	m.t.Helper()
	if err := m.st.Close(); err != nil {
		m.t.Fatal(err)
	}
	st, err := store.Open(m.dir)
	if err != nil {
		m.t.Fatal(err)
	}
	m.st = st
	m.startManaged()
}

// post sends a request and fails unless it answers 200.
func (m *mgEnv) ok(method, path, key string, body any) resp {
	m.t.Helper()
	r := m.do(method, path, key, body)
	if r.status != http.StatusOK {
		m.t.Fatalf("%s %s: %d %s", method, path, r.status, r.raw)
	}
	return r
}

// chat sends a chat completion with the given extra headers ("name", "value", ...).
func (m *mgEnv) chat(key string, headers ...string) resp {
	m.t.Helper()
	return m.send(http.MethodPost, "/v1/chat/completions", "application/json", `{"model":"gpt-4o-mini","messages":[{"role":"user","content":"hi"}]}`, key, headers...)
}

// send sends a data-plane request with the given body ("" for none) and
// extra headers ("name", "value", ...).
func (m *mgEnv) send(method, path, contentType, body, key string, headers ...string) resp {
	m.t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req := httptest.NewRequest(method, path, rd)
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	req.Header.Set("x-gateway-api-key", key)
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	res, err := m.app.Test(req, -1)
	if err != nil {
		m.t.Fatal(err)
	}
	defer res.Body.Close()
	raw, _ := io.ReadAll(res.Body)
	r := resp{status: res.StatusCode, raw: raw, header: res.Header}
	_ = json.Unmarshal(raw, &r.body)
	return r
}

// rawBucket returns every raw record of bucket b, concatenated.
func (m *mgEnv) rawBucket(b store.Bucket) string {
	m.t.Helper()
	var sb strings.Builder
	err := m.st.View(func(tx store.Tx) error {
		return tx.ForEach(b, func(_ string, raw []byte) error { sb.Write(raw); return nil })
	})
	if err != nil {
		m.t.Fatal(err)
	}
	return sb.String()
}

// addSecretRef stores a secret reference record (the secret references
// routes are another part of the admin API).
// addSecretRef stores a secret reference shared with the workspaces
// (ids) given, or with every workspace.
func (m *mgEnv) addSecretRef(id, slug string, workspaces ...string) {
	m.t.Helper()
	rec := map[string]any{"id": id, "slug": slug, "name": slug, "manager_type": "hashicorp_vault",
		"allow_all_workspaces": len(workspaces) == 0, "allowed_workspaces": workspaces}
	if err := m.st.Update(func(tx store.Tx) error { return tx.Put(store.BucketSecretReferences, id, rec) }); err != nil {
		m.t.Fatal(err)
	}
}

// integration creates an organisation integration with the upstream as
// custom host and returns its id and slug.
func (m *mgEnv) integration(slug, key string, extra map[string]any) (string, string) {
	m.t.Helper()
	body := map[string]any{"name": "OpenAI " + slug, "ai_provider_id": "openai", "slug": slug, "key": key,
		"configurations": map[string]any{"custom_host": m.up.srv.URL + "/v1", "custom_headers": map[string]any{"x-team": "secret-team-token"}}}
	for k, v := range extra {
		body[k] = v
	}
	r := m.ok(http.MethodPost, "/v1/integrations", adminKey, body)
	return r.str("id"), r.str("slug")
}
