package adminsvc_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/llm-gateway/gateway/adminsvc"
	"github.com/llm-gateway/gateway/core"
	"github.com/llm-gateway/gateway/core/server"
	"github.com/llm-gateway/gateway/store"

	_ "github.com/llm-gateway/gateway/plugins/all"
)

// startWithConfigs rebuilds the env's app like start does, and returns the
// config snapshot the app routes by, so a test can read it directly.
func (e *env) startWithConfigs() *adminsvc.Configs {
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
	pl, err := testPipeline(guardrails.Hooks())
	if err != nil {
		e.t.Fatal(err)
	}
	e.keys = keys
	e.app = server.New(server.Options{
		Auth: keys, Pipeline: pl, Configs: configs, Admin: adminsvc.New(adminsvc.Deps{Store: e.st, Keys: keys, Configs: configs, Guardrails: guardrails, Now: e.clock.Now}).Register, Now: e.clock.Now,
	})
	return configs
}

// newCfgEnv is a test env and its config snapshot.
func newCfgEnv(t *testing.T) (*env, *adminsvc.Configs) {
	t.Helper()
	e := newEnv(t)
	return e, e.startWithConfigs()
}

// reopenWithConfigs closes the store and opens it again, as a restart does.
func (e *env) reopenWithConfigs() *adminsvc.Configs {
	e.t.Helper()
	if err := e.st.Close(); err != nil {
		e.t.Fatal(err)
	}
	st, err := store.Open(e.dir)
	if err != nil {
		e.t.Fatal(err)
	}
	e.st = st
	return e.startWithConfigs()
}

// Sample configs; mode says which one the snapshot holds.
func fallbackCfg() map[string]any {
	return map[string]any{"strategy": map[string]any{"mode": "fallback"},
		"targets": []any{map[string]any{"provider": "openai", "override_params": map[string]any{"model": "a"}}, map[string]any{"provider": "anthropic", "override_params": map[string]any{"model": "b"}}}}
}

func loadbalanceCfg() map[string]any {
	return map[string]any{"strategy": map[string]any{"mode": "loadbalance"},
		"targets": []any{map[string]any{"provider": "openai", "weight": 0.7}, map[string]any{"provider": "anthropic", "weight": 0.3}}}
}

func singleCfg() map[string]any {
	return map[string]any{"provider": "openai", "retry": map[string]any{"attempts": 2}}
}

// saved is a created config.
type saved struct{ id, slug, version string }

func (e *env) mkConfig(key string, body map[string]any) saved {
	e.t.Helper()
	r := e.do(http.MethodPost, "/v1/configs", key, body)
	if r.status != http.StatusOK || r.str("id") == "" || r.str("slug") == "" || r.str("version_id") == "" {
		e.t.Fatalf("create config: %d %s", r.status, r.raw)
	}
	return saved{r.str("id"), r.str("slug"), r.str("version_id")}
}

func (e *env) putConfig(key, ref string, body map[string]any) string {
	e.t.Helper()
	r := e.do(http.MethodPut, "/v1/configs/"+ref, key, body)
	if r.status != http.StatusOK || r.str("version_id") == "" || len(r.body) != 1 {
		e.t.Fatalf("update config %s: %d %s", ref, r.status, r.raw)
	}
	return r.str("version_id")
}

func (e *env) getConfig(key, ref string) resp {
	e.t.Helper()
	r := e.do(http.MethodGet, "/v1/configs/"+ref, key, nil)
	if r.status != http.StatusOK {
		e.t.Fatalf("get config %s: %d %s", ref, r.status, r.raw)
	}
	return r
}

// sameJSON reports whether a and b encode the same JSON value.
func sameJSON(t *testing.T, a, b any) bool {
	t.Helper()
	norm := func(v any) any {
		raw, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		var out any
		if err := json.Unmarshal(raw, &out); err != nil {
			t.Fatal(err)
		}
		return out
	}
	return reflect.DeepEqual(norm(a), norm(b))
}

// wsPrincipal acts in workspace ws, as a workspace key does.
func wsPrincipal(ws string) *core.Principal {
	return core.NewPrincipal(core.Principal{KeyID: "k", KeyType: core.KeyTypeWorkspaceService, WorkspaceID: ws}, nil)
}

// orgPrincipal acts on every workspace.
var orgPrincipal = core.NewPrincipal(core.Principal{KeyID: "o", KeyType: core.KeyTypeOrganisationService}, nil)

// savedMode is the strategy mode of the saved config ref as the data plane
// sees it, or the error message.
func savedMode(c *adminsvc.Configs, ref string, p *core.Principal) (string, string) {
	sv, err := c.SavedConfig(ref, p)
	if err != nil {
		return "", err.Message
	}
	node := sv.Node
	if sv.Config == nil || node == nil {
		return "", "nil config"
	}
	if node.IsLeaf() {
		return "leaf", ""
	}
	return node.Strategy.Mode, ""
}

// defaultMode is the strategy mode of the workspace default, or "".
func defaultMode(c *adminsvc.Configs, p *core.Principal) string {
	sv, ok := c.WorkspaceDefault(p)
	node := sv.Node
	if !ok {
		return ""
	}
	if node.IsLeaf() {
		return "leaf"
	}
	return node.Strategy.Mode
}

func TestCreateConfig(t *testing.T) {
	e, _ := newCfgEnv(t)
	ws2 := e.addWorkspace("team-two")
	_, wsSecret := e.wsKey("default", "configs.create", "configs.read")
	longName := strings.Repeat("Very long name ", 10)
	cases := []struct {
		name     string
		key      string
		body     map[string]any
		slugBase string
		wantWS   string
		wantDef  int
		wantOwn  string // owner_id; "" means the ws key's id
	}{
		{"workspace by slug", adminKey, map[string]any{"name": "Support Bot", "config": fallbackCfg(), "workspace_id": "default"}, "support-bot", e.wsID, 0, e.owner},
		{"workspace by id, is_default 1", adminKey, map[string]any{"name": "two", "config": singleCfg(), "workspace_id": ws2, "is_default": 1}, "two", ws2, 1, e.owner},
		{"isDefault alias", adminKey, map[string]any{"name": "alias", "config": singleCfg(), "workspace_id": "default", "isDefault": 1}, "alias", e.wsID, 1, e.owner},
		{"is_default and isDefault agree", adminKey, map[string]any{"name": "both", "config": singleCfg(), "workspace_id": "default", "is_default": 1, "isDefault": 1}, "both", e.wsID, 1, e.owner},
		{"is_default 0", adminKey, map[string]any{"name": "zero", "config": singleCfg(), "workspace_id": "default", "is_default": 0}, "zero", e.wsID, 0, e.owner},
		{"name trimmed, punctuation folded", adminKey, map[string]any{"name": "  A/B test: v2!  ", "config": singleCfg(), "workspace_id": "default"}, "a-b-test-v2", e.wsID, 0, e.owner},
		{"non-latin name", adminKey, map[string]any{"name": "日本語", "config": singleCfg(), "workspace_id": "default"}, "config", e.wsID, 0, e.owner},
		{"long name", adminKey, map[string]any{"name": longName, "config": singleCfg(), "workspace_id": "default"}, "very-long-name-very-long-name-ve", e.wsID, 0, e.owner},
		{"empty config object", adminKey, map[string]any{"name": "empty", "config": map[string]any{}, "workspace_id": "default"}, "empty", e.wsID, 0, e.owner},
		{"workspace key defaults to its workspace", wsSecret, map[string]any{"name": "mine", "config": singleCfg()}, "mine", e.wsID, 0, ""},
		{"workspace key names its workspace", wsSecret, map[string]any{"name": "mine too", "config": singleCfg(), "workspace_id": e.wsID}, "mine-too", e.wsID, 0, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e.clock.Advance(time.Second)
			r := e.do(http.MethodPost, "/v1/configs", tc.key, tc.body)
			if r.status != http.StatusOK || r.str("object") != "config" || len(r.body) != 4 {
				t.Fatalf("create: %d %s", r.status, r.raw)
			}
			id, slug, ver := r.str("id"), r.str("slug"), r.str("version_id")
			if id == "" || ver == "" {
				t.Fatalf("create: %s", r.raw)
			}
			if !regexp.MustCompile(`^pc-` + regexp.QuoteMeta(tc.slugBase) + `-[a-z0-9]{6}$`).MatchString(slug) {
				t.Fatalf("slug %q, want pc-%s-<6>", slug, tc.slugBase)
			}
			got := e.getConfig(adminKey, id)
			if got.str("id") != id || got.str("slug") != slug || got.str("version_id") != ver ||
				got.str("name") != strings.TrimSpace(tc.body["name"].(string)) || got.str("workspace_id") != tc.wantWS ||
				got.str("organisation_id") != e.orgID || got.str("status") != "active" ||
				got.body["is_default"] != float64(tc.wantDef) || !sameJSON(t, got.body["config"], tc.body["config"]) {
				t.Fatalf("get: %s", got.raw)
			}
			owner := tc.wantOwn
			if owner == "" { // a workspace service key has no user: the key owns it
				owner = got.str("owner_id")
				if owner == "" || owner == e.owner {
					t.Fatalf("owner_id %q: want the workspace key's id", owner)
				}
			}
			if got.str("owner_id") != owner || got.str("updated_by") != owner {
				t.Fatalf("owner_id %q updated_by %q, want %q", got.str("owner_id"), got.str("updated_by"), owner)
			}
			if ts := got.str("created_at"); ts != e.clock.Now().Format(time.RFC3339Nano) || got.str("last_updated_at") != ts {
				t.Fatalf("created_at %q last_updated_at %q, want %s", ts, got.str("last_updated_at"), e.clock.Now())
			}
		})
	}
	if n := len(listBucket[store.SavedConfig](t, e.st, store.BucketConfigs)); n != len(cases) {
		t.Fatalf("%d configs stored, want %d", n, len(cases))
	}
}

func TestCreateConfigRefused(t *testing.T) {
	e, _ := newCfgEnv(t)
	ws2 := e.addWorkspace("team-two")
	archived := store.Workspace{ID: core.NewID(), Slug: "old", Name: "old", OrganisationID: e.orgID, Status: store.StatusArchived, CreatedAt: t0, LastUpdatedAt: t0}
	if err := e.st.Update(func(tx store.Tx) error { return tx.Put(store.BucketWorkspaces, archived.ID, archived) }); err != nil {
		t.Fatal(err)
	}
	_, wsSecret := e.wsKey("default", "configs.create")
	ok := func(extra ...any) map[string]any {
		b := map[string]any{"name": "n", "config": singleCfg(), "workspace_id": "default"}
		for i := 0; i < len(extra); i += 2 {
			if extra[i+1] == nil {
				delete(b, extra[i].(string))
			} else {
				b[extra[i].(string)] = extra[i+1]
			}
		}
		return b
	}
	badCfg := map[string]any{
		"strategy":        map[string]any{"mode": "bogus"},
		"targets":         []any{map[string]any{"provider": ""}, map[string]any{"custom_host": "ftp://x"}},
		"request_timeout": 0,
		"colour":          "red",
	}
	cases := []struct {
		name      string
		key       string
		body      any
		status    int
		code      string
		param     string
		wantInMsg []string
	}{
		{"missing name", adminKey, ok("name", nil), 400, core.CodeValidation, "name", []string{"name: is required"}},
		{"blank name", adminKey, ok("name", "   "), 400, core.CodeValidation, "name", []string{"name: must be a non-empty string"}},
		{"name not a string", adminKey, ok("name", 7), 400, core.CodeValidation, "name", []string{"name: must be"}},
		{"name too long", adminKey, ok("name", strings.Repeat("x", 256)), 400, core.CodeValidation, "name", []string{"at most 255"}},
		{"missing config", adminKey, ok("config", nil), 400, core.CodeValidation, "config", []string{"config: is required"}},
		{"missing name and config", adminKey, map[string]any{"workspace_id": "default"}, 400, core.CodeValidation, "config", []string{"config: is required", "name: is required"}},
		{"unknown field", adminKey, ok("colour", "red"), 400, core.CodeValidation, "colour", []string{"colour: unknown field"}},
		{"status on create", adminKey, ok("status", "active"), 400, core.CodeValidation, "status", []string{"status:"}},
		{"invalid config, every problem with its path", adminKey, ok("config", badCfg), 400, core.CodeValidation, "config.strategy.mode",
			[]string{`config.strategy.mode: unknown mode "bogus"`, "config.targets[0].provider", "config.targets[1].custom_host", "config.request_timeout", "config.colour"}},
		{"unknown provider", adminKey, ok("config", map[string]any{"provider": "nosuch"}), 400, core.CodeValidation, "config.provider",
			[]string{`config.provider: unknown provider "nosuch"; known providers:`}},
		{"unknown provider of a fallback target", adminKey, ok("config", map[string]any{"strategy": map[string]any{"mode": "fallback"},
			"targets": []any{map[string]any{"provider": "nosuch"}, map[string]any{"provider": "openai"}}}), 400, core.CodeValidation, "config.targets[0].provider",
			[]string{`config.targets[0].provider: unknown provider "nosuch"`}},
		{"override_params beyond the body's bounds", adminKey, ok("config", map[string]any{"strategy": map[string]any{"mode": "fallback"},
			"targets": []any{map[string]any{"provider": "openai", "override_params": map[string]any{"temperature": 5}}, map[string]any{"provider": "openai", "override_params": map[string]any{"n": 500}}}}),
			400, core.CodeValidation, "config.targets[0].override_params.temperature",
			[]string{"config.targets[0].override_params.temperature: must be between 0 and 2, got 5", "config.targets[1].override_params.n: must be between 1 and 128, got 500"}},
		{"config not an object", adminKey, ok("config", "fallback"), 400, core.CodeValidation, "config", []string{"config:"}},
		{"config null", adminKey, ok("config", json.RawMessage("null")), 400, core.CodeValidation, "config", []string{"config:"}},
		{"config array", adminKey, ok("config", []any{1}), 400, core.CodeValidation, "config", []string{"config:"}},
		{"body and config problems together", adminKey, ok("name", "", "is_default", 3, "config", map[string]any{"strategy": map[string]any{"mode": "x"}, "targets": []any{map[string]any{}}}),
			400, core.CodeValidation, "is_default", []string{"is_default: must be 0 or 1", "name: must be", "config.strategy.mode"}},
		{"is_default 2", adminKey, ok("is_default", 2), 400, core.CodeValidation, "is_default", []string{"is_default: must be 0 or 1"}},
		{"is_default -1", adminKey, ok("is_default", -1), 400, core.CodeValidation, "is_default", []string{"must be 0 or 1"}},
		{"is_default true", adminKey, ok("is_default", true), 400, core.CodeValidation, "is_default", []string{"must be 0 or 1"}},
		{"is_default string", adminKey, ok("is_default", "1"), 400, core.CodeValidation, "is_default", []string{"must be 0 or 1"}},
		{"is_default fraction", adminKey, ok("is_default", 0.5), 400, core.CodeValidation, "is_default", []string{"must be 0 or 1"}},
		{"is_default and isDefault disagree", adminKey, ok("is_default", 1, "isDefault", 0), 400, core.CodeValidation, "isDefault", []string{"conflicts with is_default"}},
		{"is_default and isDefault disagree the other way", adminKey, ok("is_default", 0, "isDefault", 1), 400, core.CodeValidation, "isDefault", []string{"conflicts with is_default"}},
		{"isDefault 2", adminKey, ok("isDefault", 2), 400, core.CodeValidation, "isDefault", []string{"isDefault: must be 0 or 1"}},
		{"workspace_id not a string", adminKey, ok("workspace_id", 5), 400, core.CodeValidation, "workspace_id", []string{"workspace_id: must be a string"}},
		{"organisation key without workspace_id", adminKey, ok("workspace_id", nil), 400, core.CodeValidation, "workspace_id", []string{"required"}},
		{"unknown workspace", adminKey, ok("workspace_id", "nope"), 404, core.CodeNotFound, "", []string{"nope"}},
		{"archived workspace", adminKey, ok("workspace_id", "old"), 400, core.CodeValidation, "workspace_id", []string{"archived"}},
		{"workspace key, other workspace by id", wsSecret, ok("workspace_id", ws2), 403, core.CodeForbidden, "", nil},
		{"workspace key, other workspace by slug", wsSecret, ok("workspace_id", "team-two"), 403, core.CodeForbidden, "", nil},
		{"not JSON", adminKey, `{"name":`, 400, core.CodeValidation, "body", nil},
		{"empty body", adminKey, "", 400, core.CodeValidation, "body", nil},
		{"JSON array body", adminKey, `[]`, 400, core.CodeValidation, "body", nil},
		{"no key", "", ok(), 401, core.CodeUnauthorized, "", nil},
		{"unknown key", "gw-nope", ok(), 401, core.CodeUnauthorized, "", nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := e.do(http.MethodPost, "/v1/configs", tc.key, tc.body)
			wantErr(t, r, tc.status, tc.code)
			if tc.param != "" && r.errField("param") != tc.param {
				t.Fatalf("param %q, want %q: %s", r.errField("param"), tc.param, r.raw)
			}
			for _, s := range tc.wantInMsg {
				if !strings.Contains(r.errField("message"), s) {
					t.Fatalf("message lacks %q: %s", s, r.raw)
				}
			}
		})
	}
	if n := len(listBucket[store.SavedConfig](t, e.st, store.BucketConfigs)); n != 0 {
		t.Fatalf("%d configs stored by refused requests", n)
	}
	if n := len(listBucket[store.ConfigVersion](t, e.st, store.BucketConfigVersions)); n != 0 {
		t.Fatalf("%d config versions stored by refused requests", n)
	}
}

// Configs and guardrails created in the same instant list by slug, not in
// the store's order (by id, here the reverse).
func TestListsBreakTiesBySlug(t *testing.T) {
	e := newEnv(t)
	at := e.clock.Now()
	recs := []struct{ id, slug string }{{"id-1", "c"}, {"id-2", "b"}, {"id-3", "a"}}
	cases := []struct {
		path string
		put  func(tx store.Tx, id, slug string) error
	}{
		{"/v1/configs", func(tx store.Tx, id, slug string) error {
			return tx.Put(store.BucketConfigs, id, store.SavedConfig{ID: id, Slug: slug, Name: slug, OrganisationID: e.orgID,
				WorkspaceID: e.wsID, Status: store.StatusActive, CreatedAt: at, LastUpdatedAt: at, Config: json.RawMessage(`{}`)})
		}},
		{"/v1/guardrails", func(tx store.Tx, id, slug string) error {
			return tx.Put(store.BucketGuardrails, id, store.Guardrail{ID: id, Slug: slug, Name: slug, OrganisationID: e.orgID,
				Checks: json.RawMessage(`[]`), Actions: json.RawMessage(`{}`), CreatedAt: at, LastUpdatedAt: at})
		}},
	}
	for _, tc := range cases {
		t.Run(tc.path, func(t *testing.T) {
			if err := e.st.Update(func(tx store.Tx) error {
				for _, r := range recs {
					if err := tc.put(tx, r.id, r.slug); err != nil {
						return err
					}
				}
				return nil
			}); err != nil {
				t.Fatal(err)
			}
			r := e.do(http.MethodGet, tc.path, adminKey, nil)
			if r.status != http.StatusOK {
				t.Fatalf("list: %d %s", r.status, r.raw)
			}
			var got []string
			for _, it := range r.list() {
				got = append(got, it["slug"].(string))
			}
			if want := []string{"a", "b", "c"}; !slices.Equal(got, want) {
				t.Fatalf("slugs %v, want %v", got, want)
			}
		})
	}
}

func TestListConfigs(t *testing.T) {
	e, _ := newCfgEnv(t)
	ws2 := e.addWorkspace("team-two")
	var mine, theirs []saved // newest last
	for i := range 5 {
		e.clock.Advance(time.Minute)
		mine = append(mine, e.mkConfig(adminKey, map[string]any{"name": fmt.Sprint("mine ", i), "config": singleCfg(), "workspace_id": "default", "is_default": i % 2}))
	}
	for i := range 2 {
		e.clock.Advance(time.Minute)
		theirs = append(theirs, e.mkConfig(adminKey, map[string]any{"name": fmt.Sprint("theirs ", i), "config": singleCfg(), "workspace_id": ws2}))
	}
	_, wsSecret := e.wsKey("default", "configs.list")
	newestFirst := func(s []saved) []string {
		var ids []string
		for _, c := range slices.Backward(s) {
			ids = append(ids, c.id)
		}
		return ids
	}
	all := newestFirst(append(slices.Clone(mine), theirs...))
	cases := []struct {
		name  string
		key   string
		query string
		total int
		want  []string
	}{
		{"organisation key, every workspace", adminKey, "", 7, all},
		{"organisation key, workspace by slug", adminKey, "?workspace_id=default", 5, newestFirst(mine)},
		{"organisation key, workspace by id", adminKey, "?workspace_id=" + ws2, 2, newestFirst(theirs)},
		{"first page", adminKey, "?workspace_id=default&page_size=2", 5, newestFirst(mine)[:2]},
		{"second page", adminKey, "?workspace_id=default&page_size=2&current_page=1", 5, newestFirst(mine)[2:4]},
		{"last page", adminKey, "?workspace_id=default&page_size=2&current_page=2", 5, newestFirst(mine)[4:]},
		{"past the end", adminKey, "?workspace_id=default&page_size=2&current_page=9", 5, nil},
		{"workspace key sees its own", wsSecret, "", 5, newestFirst(mine)},
		{"workspace key names its own", wsSecret, "?workspace_id=" + e.wsID, 5, newestFirst(mine)},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := e.do(http.MethodGet, "/v1/configs"+tc.query, tc.key, nil)
			if r.status != http.StatusOK || r.str("object") != "list" || r.total() != tc.total {
				t.Fatalf("list: %d %s", r.status, r.raw)
			}
			if _, ok := r.body["data"].([]any); !ok {
				t.Fatalf("data is not an array: %s", r.raw)
			}
			var got []string
			for _, it := range r.list() {
				got = append(got, it["id"].(string))
			}
			if !slices.Equal(got, tc.want) {
				t.Fatalf("ids %v, want %v", got, tc.want)
			}
		})
	}

	t.Run("item fields", func(t *testing.T) {
		r := e.do(http.MethodGet, "/v1/configs?workspace_id=default&page_size=1", adminKey, nil)
		items := r.list()
		if len(items) != 1 {
			t.Fatalf("list: %s", r.raw)
		}
		it := items[0]
		var keys []string
		for k := range it {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		want := []string{"created_at", "id", "is_default", "last_updated_at", "name", "object", "organisation_id", "owner_id", "slug", "status", "updated_by", "workspace_id"}
		if !slices.Equal(keys, want) {
			t.Fatalf("fields %v, want %v (no config or version_id in a list)", keys, want)
		}
		last := mine[len(mine)-1]
		if it["id"] != last.id || it["slug"] != last.slug || it["name"] != "mine 4" || it["workspace_id"] != e.wsID ||
			it["organisation_id"] != e.orgID || it["is_default"] != float64(0) || it["status"] != "active" ||
			it["owner_id"] != e.owner || it["object"] != "config" {
			t.Fatalf("item %v", it)
		}
		// "mine 3" was the last default of the workspace.
		r = e.do(http.MethodGet, "/v1/configs?workspace_id=default&page_size=1&current_page=1", adminKey, nil)
		if it := r.list(); len(it) != 1 || it[0]["id"] != mine[3].id || it[0]["is_default"] != float64(1) {
			t.Fatalf("second item: %s", r.raw)
		}
		var defaults int
		for _, c := range listBucket[store.SavedConfig](t, e.st, store.BucketConfigs) {
			if c.WorkspaceID == e.wsID && c.IsDefault == 1 {
				defaults++
			}
		}
		if defaults != 1 {
			t.Fatalf("%d defaults in the workspace, want 1", defaults)
		}
	})

	for _, bad := range []struct {
		name, key, query string
		status           int
		code             string
	}{
		{"page_size 0", adminKey, "?page_size=0", 400, core.CodeValidation},
		{"page_size too big", adminKey, "?page_size=1001", 400, core.CodeValidation},
		{"page_size not a number", adminKey, "?page_size=ten", 400, core.CodeValidation},
		{"current_page negative", adminKey, "?current_page=-1", 400, core.CodeValidation},
		{"unknown workspace", adminKey, "?workspace_id=nope", 404, core.CodeNotFound},
		{"workspace key, other workspace", wsSecret, "?workspace_id=" + ws2, 403, core.CodeForbidden},
		{"workspace key, other workspace slug", wsSecret, "?workspace_id=team-two", 403, core.CodeForbidden},
	} {
		t.Run(bad.name, func(t *testing.T) {
			wantErr(t, e.do(http.MethodGet, "/v1/configs"+bad.query, bad.key, nil), bad.status, bad.code)
		})
	}

	t.Run("empty workspace lists []", func(t *testing.T) {
		e.addWorkspace("empty")
		r := e.do(http.MethodGet, "/v1/configs?workspace_id=empty", adminKey, nil)
		if r.status != http.StatusOK || r.total() != 0 || !strings.Contains(string(r.raw), `"data":[]`) {
			t.Fatalf("list: %d %s", r.status, r.raw)
		}
	})
}

func TestGetConfig(t *testing.T) {
	e, _ := newCfgEnv(t)
	ws2 := e.addWorkspace("team-two")
	c := e.mkConfig(adminKey, map[string]any{"name": "mine", "config": fallbackCfg(), "workspace_id": "default"})
	other := e.mkConfig(adminKey, map[string]any{"name": "theirs", "config": singleCfg(), "workspace_id": ws2})
	_, wsSecret := e.wsKey("default", "configs.read")
	cases := []struct {
		name, key, ref string
		want           *saved
		status         int
		code           string
	}{
		{"by slug", adminKey, c.slug, &c, 200, ""},
		{"by id", adminKey, c.id, &c, 200, ""},
		{"workspace key, own config by slug", wsSecret, c.slug, &c, 200, ""},
		{"workspace key, own config by id", wsSecret, c.id, &c, 200, ""},
		{"organisation key, any workspace", adminKey, other.slug, &other, 200, ""},
		{"workspace key, other workspace by slug", wsSecret, other.slug, nil, 404, core.CodeNotFound},
		{"workspace key, other workspace by id", wsSecret, other.id, nil, 404, core.CodeNotFound},
		{"unknown slug", adminKey, "pc-nope-abcdef", nil, 404, core.CodeNotFound},
		{"unknown id", adminKey, core.NewID(), nil, 404, core.CodeNotFound},
		{"unknown, url-escaped", adminKey, url.PathEscape("a b/c"), nil, 404, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := e.do(http.MethodGet, "/v1/configs/"+tc.ref, tc.key, nil)
			if tc.want == nil {
				if r.status != tc.status || (tc.code != "" && r.errField("code") != tc.code) {
					t.Fatalf("got %d %s, want %d %s", r.status, r.raw, tc.status, tc.code)
				}
				return
			}
			if r.status != http.StatusOK || r.str("id") != tc.want.id || r.str("slug") != tc.want.slug ||
				r.str("version_id") != tc.want.version || r.body["config"] == nil || r.str("object") != "config" {
				t.Fatalf("get: %d %s", r.status, r.raw)
			}
		})
	}
	got := e.getConfig(adminKey, c.slug)
	if !sameJSON(t, got.body["config"], fallbackCfg()) {
		t.Fatalf("config %s", got.raw)
	}
	// The message of a refused lookup does not tell whether the config exists elsewhere.
	a := e.do(http.MethodGet, "/v1/configs/"+other.slug, wsSecret, nil)
	b := e.do(http.MethodGet, "/v1/configs/pc-nope-abcdef", wsSecret, nil)
	if strings.ReplaceAll(a.errField("message"), other.slug, "X") != strings.ReplaceAll(b.errField("message"), "pc-nope-abcdef", "X") {
		t.Fatalf("other workspace %q vs unknown %q", a.errField("message"), b.errField("message"))
	}
}

func TestUpdateConfig(t *testing.T) {
	e, cfgs := newCfgEnv(t)
	c := e.mkConfig(adminKey, map[string]any{"name": "support", "config": fallbackCfg(), "workspace_id": "default"})
	_, wsSecret := e.wsKey("default", "configs.update", "configs.read")
	wsKeyID := ""
	versions := []string{c.version}
	steps := []struct {
		name  string
		key   string
		ref   string
		body  map[string]any
		check func(t *testing.T, got resp)
	}{
		{"rename", adminKey, c.slug, map[string]any{"name": "  support v2 "}, func(t *testing.T, got resp) {
			if got.str("name") != "support v2" || got.str("slug") != c.slug || !sameJSON(t, got.body["config"], fallbackCfg()) {
				t.Fatalf("after rename: %s", got.raw)
			}
		}},
		{"new config by id", adminKey, c.id, map[string]any{"config": loadbalanceCfg()}, func(t *testing.T, got resp) {
			if !sameJSON(t, got.body["config"], loadbalanceCfg()) || got.str("name") != "support v2" {
				t.Fatalf("after config: %s", got.raw)
			}
			if m, msg := savedMode(cfgs, c.slug, orgPrincipal); m != modeLoadbalance {
				t.Fatalf("snapshot mode %q %s", m, msg)
			}
		}},
		{"archive", adminKey, c.slug, map[string]any{"status": "archived"}, func(t *testing.T, got resp) {
			if got.str("status") != "archived" || !sameJSON(t, got.body["config"], loadbalanceCfg()) {
				t.Fatalf("after archive: %s", got.raw)
			}
		}},
		{"reactivate with the workspace key, several fields", wsSecret, c.slug, map[string]any{"status": "active", "name": "support v3", "config": singleCfg(), "is_default": 1},
			func(t *testing.T, got resp) {
				if got.str("status") != "active" || got.str("name") != "support v3" || got.body["is_default"] != float64(1) ||
					!sameJSON(t, got.body["config"], singleCfg()) {
					t.Fatalf("after reactivate: %s", got.raw)
				}
				wsKeyID = got.str("updated_by")
				if wsKeyID == "" || wsKeyID == e.owner || got.str("owner_id") != e.owner {
					t.Fatalf("updated_by %q owner_id %q", wsKeyID, got.str("owner_id"))
				}
			}},
		{"no change still makes a version", adminKey, c.slug, map[string]any{}, func(t *testing.T, got resp) {
			if got.str("name") != "support v3" || got.str("updated_by") != e.owner {
				t.Fatalf("after empty update: %s", got.raw)
			}
		}},
	}
	for _, st := range steps {
		t.Run(st.name, func(t *testing.T) {
			e.clock.Advance(time.Minute)
			v := e.putConfig(st.key, st.ref, st.body)
			if slices.Contains(versions, v) {
				t.Fatalf("version %s reused; versions %v", v, versions)
			}
			versions = append(versions, v)
			got := e.getConfig(adminKey, c.slug)
			if got.str("version_id") != v || got.str("last_updated_at") != e.clock.Now().Format(time.RFC3339Nano) ||
				got.str("created_at") != t0.Format(time.RFC3339Nano) {
				t.Fatalf("version_id %s (want %s), times: %s", got.str("version_id"), v, got.raw)
			}
			st.check(t, got)
		})
	}
	if n := len(listBucket[store.ConfigVersion](t, e.st, store.BucketConfigVersions)); n != len(versions) {
		t.Fatalf("%d versions stored, want %d", n, len(versions))
	}

	ws2 := e.addWorkspace("team-two")
	other := e.mkConfig(adminKey, map[string]any{"name": "theirs", "config": singleCfg(), "workspace_id": ws2})
	refused := []struct {
		name      string
		key, ref  string
		body      any
		status    int
		code      string
		param     string
		wantInMsg []string
	}{
		{"invalid config", adminKey, c.slug, map[string]any{"config": map[string]any{"strategy": map[string]any{"mode": "nope"}, "targets": []any{map[string]any{"weight": -1}}}},
			400, core.CodeValidation, "config.strategy.mode", []string{"config.strategy.mode", "config.targets[0].weight"}},
		{"config null", adminKey, c.slug, map[string]any{"config": json.RawMessage("null")}, 400, core.CodeValidation, "config", nil},
		{"override_params beyond the body's bounds", adminKey, c.slug, map[string]any{"config": map[string]any{"provider": "openai", "override_params": map[string]any{"top_p": 1.5, "stop": []any{"a", "b", "c", "d", "e"}}}},
			400, core.CodeValidation, "config.override_params.stop", []string{"config.override_params.stop: must contain at most 4 sequences, got 5", "config.override_params.top_p: must be between 0 and 1, got 1.5"}},
		{"workspace_id", adminKey, c.slug, map[string]any{"workspace_id": ws2}, 400, core.CodeValidation, "workspace_id", []string{"another workspace"}},
		{"workspace_id, same workspace", adminKey, c.slug, map[string]any{"workspace_id": e.wsID}, 400, core.CodeValidation, "workspace_id", nil},
		{"unknown status", adminKey, c.slug, map[string]any{"status": "deleted"}, 400, core.CodeValidation, "status", []string{"active or archived"}},
		{"is_default 2", adminKey, c.slug, map[string]any{"is_default": 2}, 400, core.CodeValidation, "is_default", nil},
		{"empty name", adminKey, c.slug, map[string]any{"name": ""}, 400, core.CodeValidation, "name", nil},
		{"unknown field", adminKey, c.slug, map[string]any{"slug": "pc-mine-aaaaaa"}, 400, core.CodeValidation, "slug", []string{"unknown field"}},
		{"not JSON", adminKey, c.slug, "{", 400, core.CodeValidation, "body", nil},
		{"unknown config", adminKey, "pc-nope-abcdef", map[string]any{"name": "x"}, 404, core.CodeNotFound, "", nil},
		{"workspace key, other workspace", wsSecret, other.slug, map[string]any{"name": "x"}, 404, core.CodeNotFound, "", nil},
	}
	for _, tc := range refused {
		t.Run(tc.name, func(t *testing.T) {
			r := e.do(http.MethodPut, "/v1/configs/"+tc.ref, tc.key, tc.body)
			wantErr(t, r, tc.status, tc.code)
			if tc.param != "" && r.errField("param") != tc.param {
				t.Fatalf("param %q, want %q: %s", r.errField("param"), tc.param, r.raw)
			}
			for _, s := range tc.wantInMsg {
				if !strings.Contains(r.errField("message"), s) {
					t.Fatalf("message lacks %q: %s", s, r.raw)
				}
			}
		})
	}
	got := e.getConfig(adminKey, c.slug)
	if got.str("version_id") != versions[len(versions)-1] || got.str("name") != "support v3" || !sameJSON(t, got.body["config"], singleCfg()) {
		t.Fatalf("a refused update changed the config: %s", got.raw)
	}
	if got := e.getConfig(adminKey, other.slug); got.str("name") != "theirs" || got.str("version_id") != other.version {
		t.Fatalf("other workspace's config changed: %s", got.raw)
	}
	if n := len(listBucket[store.ConfigVersion](t, e.st, store.BucketConfigVersions)); n != len(versions)+1 {
		t.Fatalf("%d versions stored, want %d", n, len(versions)+1)
	}
}

// modeLoadbalance etc. name the modes the tests check.
const (
	modeSingle      = "single"
	modeFallback    = "fallback"
	modeLoadbalance = "loadbalance"
)

func TestConfigDefaultPerWorkspace(t *testing.T) {
	e, cfgs := newCfgEnv(t)
	ws2 := e.addWorkspace("team-two")
	a := e.mkConfig(adminKey, map[string]any{"name": "a", "config": fallbackCfg(), "workspace_id": "default", "is_default": 1})
	b := e.mkConfig(adminKey, map[string]any{"name": "b", "config": loadbalanceCfg(), "workspace_id": "default"})
	x := e.mkConfig(adminKey, map[string]any{"name": "x", "config": singleCfg(), "workspace_id": ws2, "is_default": 1})
	isDefault := func(ref string) float64 {
		t.Helper()
		v, _ := e.getConfig(adminKey, ref).body["is_default"].(float64)
		return v
	}
	home, away := wsPrincipal(e.wsID), wsPrincipal(ws2)
	steps := []struct {
		name       string
		do         func()
		wantA      float64
		wantB      float64
		wantHome   string
		wantAwayOK bool
	}{
		{"created", func() {}, 1, 0, modeFallback, true},
		{"b becomes default", func() { e.putConfig(adminKey, b.slug, map[string]any{"is_default": 1}) }, 0, 1, modeLoadbalance, true},
		{"a becomes default again (isDefault)", func() { e.putConfig(adminKey, a.id, map[string]any{"isDefault": 1}) }, 1, 0, modeFallback, true},
		{"a's new config is the default at once", func() { e.putConfig(adminKey, a.id, map[string]any{"config": singleCfg()}) }, 1, 0, "leaf", true},
		{"default archived: no default", func() { e.putConfig(adminKey, a.id, map[string]any{"status": "archived"}) }, 1, 0, "", true},
		{"default active again", func() { e.putConfig(adminKey, a.id, map[string]any{"status": "active"}) }, 1, 0, "leaf", true},
		{"default unset", func() { e.putConfig(adminKey, a.id, map[string]any{"is_default": 0}) }, 0, 0, "", true},
		{"new config created as default", func() {
			b = e.mkConfig(adminKey, map[string]any{"name": "b2", "config": loadbalanceCfg(), "workspace_id": "default", "is_default": 1})
		}, 0, 1, modeLoadbalance, true},
		{"default deleted: no default", func() {
			if r := e.do(http.MethodDelete, "/v1/configs/"+b.slug, adminKey, nil); r.status != 200 {
				t.Fatalf("delete: %d %s", r.status, r.raw)
			}
		}, 0, -1, "", true},
	}
	for _, st := range steps {
		t.Run(st.name, func(t *testing.T) {
			e.clock.Advance(time.Second)
			st.do()
			if got := isDefault(a.slug); got != st.wantA {
				t.Fatalf("a.is_default %v, want %v", got, st.wantA)
			}
			if st.wantB >= 0 {
				if got := isDefault(b.slug); got != st.wantB {
					t.Fatalf("b.is_default %v, want %v", got, st.wantB)
				}
			}
			if got := defaultMode(cfgs, home); got != st.wantHome {
				t.Fatalf("workspace default mode %q, want %q", got, st.wantHome)
			}
			// The other workspace's default is never touched.
			if isDefault(x.slug) != 1 || defaultMode(cfgs, away) != "leaf" {
				t.Fatalf("the other workspace's default changed")
			}
			if _, ok := cfgs.WorkspaceDefault(orgPrincipal); ok {
				t.Fatal("an organisation key has no workspace default")
			}
			if _, ok := cfgs.WorkspaceDefault(nil); ok {
				t.Fatal("no principal, no default")
			}
		})
	}
}

func TestConfigVersions(t *testing.T) {
	for _, frozen := range []bool{false, true} {
		t.Run(fmt.Sprint("frozen clock ", frozen), func(t *testing.T) {
			e, _ := newCfgEnv(t)
			tick := func() {
				if !frozen {
					e.clock.Advance(time.Millisecond)
				}
			}
			bodies := []map[string]any{fallbackCfg(), loadbalanceCfg(), singleCfg(), {"provider": "mistral-ai"}, {"provider": "groq"}}
			c := e.mkConfig(adminKey, map[string]any{"name": "v", "config": bodies[0], "workspace_id": "default"})
			ids := []string{c.version}
			for _, b := range bodies[1:] {
				tick()
				ids = append(ids, e.putConfig(adminKey, c.slug, map[string]any{"config": b}))
			}
			// A change without a new config keeps the config in the new version.
			tick()
			ids = append(ids, e.putConfig(adminKey, c.slug, map[string]any{"name": "renamed"}))
			bodies = append(bodies, bodies[len(bodies)-1])
			slices.Reverse(ids)
			slices.Reverse(bodies)

			r := e.do(http.MethodGet, "/v1/configs/"+c.slug+"/versions", adminKey, nil)
			if r.status != 200 || r.str("object") != "list" || r.total() != len(ids) {
				t.Fatalf("versions: %d %s", r.status, r.raw)
			}
			items := r.list()
			for i, it := range items {
				if it["version_id"] != ids[i] || !sameJSON(t, it["config"], bodies[i]) || it["created_at"] == nil {
					t.Fatalf("version %d: %v, want %s with %v (newest first)", i, it, ids[i], bodies[i])
				}
			}
			if len(items) != len(ids) {
				t.Fatalf("%d versions, want %d", len(items), len(ids))
			}
			for i := 1; i < len(items) && !frozen; i++ {
				a, _ := time.Parse(time.RFC3339Nano, items[i-1]["created_at"].(string))
				b, _ := time.Parse(time.RFC3339Nano, items[i]["created_at"].(string))
				if !a.After(b) {
					t.Fatalf("created_at not newest first: %v", items)
				}
			}
			if got := e.getConfig(adminKey, c.id); got.str("version_id") != ids[0] {
				t.Fatalf("current version %s, want the newest %s", got.str("version_id"), ids[0])
			}
			pages := []struct {
				query string
				want  []string
			}{
				{"?page_size=2", ids[:2]},
				{"?page_size=2&current_page=1", ids[2:4]},
				{"?page_size=4&current_page=1", ids[4:]},
				{"?page_size=4&current_page=5", nil},
			}
			for _, pg := range pages {
				r := e.do(http.MethodGet, "/v1/configs/"+c.id+"/versions"+pg.query, adminKey, nil)
				var got []string
				for _, it := range r.list() {
					got = append(got, it["version_id"].(string))
				}
				if r.status != 200 || r.total() != len(ids) || !slices.Equal(got, pg.want) {
					t.Fatalf("%s: %v, want %v: %s", pg.query, got, pg.want, r.raw)
				}
			}
			wantErr(t, e.do(http.MethodGet, "/v1/configs/"+c.id+"/versions?page_size=0", adminKey, nil), 400, core.CodeValidation)
			wantErr(t, e.do(http.MethodGet, "/v1/configs/pc-nope-abcdef/versions", adminKey, nil), 404, core.CodeNotFound)

			// Another config's versions are not mixed in, even when its id
			// shares a prefix with this one's.
			d := e.mkConfig(adminKey, map[string]any{"name": "other", "config": singleCfg(), "workspace_id": "default"})
			r = e.do(http.MethodGet, "/v1/configs/"+d.slug+"/versions", adminKey, nil)
			if r.total() != 1 || r.list()[0]["version_id"] != d.version || r.list()[0]["config_id"] != d.id {
				t.Fatalf("other versions: %s", r.raw)
			}
		})
	}

	t.Run("workspace key, other workspace", func(t *testing.T) {
		e, _ := newCfgEnv(t)
		ws2 := e.addWorkspace("team-two")
		other := e.mkConfig(adminKey, map[string]any{"name": "theirs", "config": singleCfg(), "workspace_id": ws2})
		mine := e.mkConfig(adminKey, map[string]any{"name": "mine", "config": singleCfg(), "workspace_id": "default"})
		_, wsSecret := e.wsKey("default", "configs.read")
		wantErr(t, e.do(http.MethodGet, "/v1/configs/"+other.slug+"/versions", wsSecret, nil), 404, core.CodeNotFound)
		if r := e.do(http.MethodGet, "/v1/configs/"+mine.slug+"/versions", wsSecret, nil); r.status != 200 || r.total() != 1 {
			t.Fatalf("own versions: %d %s", r.status, r.raw)
		}
	})
}

// TestConfigNumbersKept checks that a saved config keeps its numbers as
// written: a seed beyond 2^53 must not be rounded through float64.
func TestConfigNumbersKept(t *testing.T) {
	e, cfgs := newCfgEnv(t)
	raw := `{"name":"seeded","workspace_id":"default","config":{"provider":"openai","override_params":{"seed":9007199254740993,"temperature":0.10}}}`
	r := e.do(http.MethodPost, "/v1/configs", adminKey, raw)
	if r.status != http.StatusOK {
		t.Fatalf("create: %d %s", r.status, r.raw)
	}
	slug := r.str("slug")
	for _, path := range []string{"/v1/configs/" + slug, "/v1/configs/" + slug + "/versions"} {
		got := e.do(http.MethodGet, path, adminKey, nil)
		if !strings.Contains(string(got.raw), "9007199254740993") {
			t.Fatalf("%s: the seed changed: %s", path, got.raw)
		}
	}
	sv, err := cfgs.SavedConfig(slug, orgPrincipal)
	if err != nil {
		t.Fatal(err)
	}
	node := sv.Node
	if seed := fmt.Sprint(node.Leaf.OverrideParams["seed"]); seed != "9007199254740993" {
		t.Fatalf("snapshot seed %s", seed)
	}
}

func TestDeleteConfig(t *testing.T) {
	e, cfgs := newCfgEnv(t)
	ws2 := e.addWorkspace("team-two")
	_, wsSecret := e.wsKey("default", "configs.delete", "configs.read")
	mk := func(ws string) saved {
		c := e.mkConfig(adminKey, map[string]any{"name": "doomed", "config": fallbackCfg(), "workspace_id": ws})
		e.clock.Advance(time.Second)
		e.putConfig(adminKey, c.slug, map[string]any{"config": loadbalanceCfg()})
		return c
	}
	versionsOf := func(id string) int {
		n := 0
		for _, v := range listBucket[store.ConfigVersion](t, e.st, store.BucketConfigVersions) {
			if v.ConfigID == id {
				n++
			}
		}
		return n
	}
	keep := mk("default")
	cases := []struct {
		name  string
		key   string
		ws    string
		bySlg bool
	}{
		{"by slug", adminKey, "default", true},
		{"by id", adminKey, "default", false},
		{"workspace key, own config", wsSecret, "default", true},
		{"organisation key, other workspace", adminKey, ws2, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := mk(tc.ws)
			if versionsOf(c.id) != 2 {
				t.Fatalf("%d versions before delete", versionsOf(c.id))
			}
			ref := c.id
			if tc.bySlg {
				ref = c.slug
			}
			r := e.do(http.MethodDelete, "/v1/configs/"+ref, tc.key, nil)
			if r.status != http.StatusOK || string(r.raw) != "{}" {
				t.Fatalf("delete: %d %s", r.status, r.raw)
			}
			if n := versionsOf(c.id); n != 0 {
				t.Fatalf("%d versions left", n)
			}
			for _, ref := range []string{c.id, c.slug} {
				wantErr(t, e.do(http.MethodGet, "/v1/configs/"+ref, adminKey, nil), 404, core.CodeNotFound)
				wantErr(t, e.do(http.MethodGet, "/v1/configs/"+ref+"/versions", adminKey, nil), 404, core.CodeNotFound)
				wantErr(t, e.do(http.MethodPut, "/v1/configs/"+ref, adminKey, map[string]any{"name": "x"}), 404, core.CodeNotFound)
				wantErr(t, e.do(http.MethodDelete, "/v1/configs/"+ref, adminKey, nil), 404, core.CodeNotFound)
				if _, msg := savedMode(cfgs, ref, orgPrincipal); msg == "" {
					t.Fatalf("the snapshot still has deleted config %s", ref)
				}
			}
			if versionsOf(keep.id) != 2 {
				t.Fatalf("another config's versions were deleted")
			}
		})
	}

	t.Run("workspace key, other workspace", func(t *testing.T) {
		c := mk(ws2)
		wantErr(t, e.do(http.MethodDelete, "/v1/configs/"+c.slug, wsSecret, nil), 404, core.CodeNotFound)
		if versionsOf(c.id) != 2 {
			t.Fatal("versions deleted by a refused delete")
		}
	})

	for _, byID := range []bool{true, false} {
		t.Run(fmt.Sprint("still a key's default, named by id ", byID), func(t *testing.T) {
			c := mk("default")
			ref := c.slug
			if byID {
				ref = c.id
			}
			keyID, _ := e.createKey(adminKey, "workspace/service", map[string]any{"name": "uses it", "workspace_id": "default",
				"scopes": []string{core.ScopeCompletionsWrite}, "defaults": map[string]any{"config_id": ref}})
			for _, del := range []string{c.id, c.slug} {
				r := e.do(http.MethodDelete, "/v1/configs/"+del, adminKey, nil)
				wantErr(t, r, http.StatusConflict, core.CodeConflict)
				if !strings.Contains(r.errField("message"), keyID) {
					t.Fatalf("the message does not name the key: %s", r.raw)
				}
			}
			// Archiving would leave the key's requests refused too.
			r := e.do(http.MethodPut, "/v1/configs/"+c.slug, adminKey, map[string]any{"status": "archived"})
			wantErr(t, r, http.StatusConflict, core.CodeConflict)
			if !strings.Contains(r.errField("message"), keyID) {
				t.Fatalf("the archive message does not name the key: %s", r.raw)
			}
			if versionsOf(c.id) != 2 || e.getConfig(adminKey, c.id).str("id") != c.id || e.getConfig(adminKey, c.id).str("status") != "active" {
				t.Fatal("a refused delete or archive changed something")
			}
			if m, msg := savedMode(cfgs, c.slug, orgPrincipal); m != modeLoadbalance {
				t.Fatalf("snapshot: %q %s", m, msg)
			}
			if r := e.do(http.MethodDelete, "/v1/api-keys/"+keyID, adminKey, nil); r.status != 200 {
				t.Fatalf("delete key: %d %s", r.status, r.raw)
			}
			if r := e.do(http.MethodDelete, "/v1/configs/"+c.slug, adminKey, nil); r.status != 200 {
				t.Fatalf("delete after the key is gone: %d %s", r.status, r.raw)
			}
		})
	}
}

func TestConfigScopes(t *testing.T) {
	e, _ := newCfgEnv(t)
	all := []string{"configs.create", "configs.read", "configs.update", "configs.delete", "configs.list"}
	var victims []saved
	for range 2 * len(all) {
		victims = append(victims, e.mkConfig(adminKey, map[string]any{"name": "v", "config": singleCfg(), "workspace_id": "default"}))
	}
	type call struct{ method, path string }
	routes := func(c saved) map[string][]call {
		return map[string][]call{
			"configs.create": {{http.MethodPost, "/v1/configs"}},
			"configs.list":   {{http.MethodGet, "/v1/configs"}},
			"configs.read":   {{http.MethodGet, "/v1/configs/" + c.slug}, {http.MethodGet, "/v1/configs/" + c.id + "/versions"}},
			"configs.update": {{http.MethodPut, "/v1/configs/" + c.slug}},
			"configs.delete": {{http.MethodDelete, "/v1/configs/" + c.slug}},
		}
	}
	body := func(m string) any {
		switch m {
		case http.MethodPost:
			return map[string]any{"name": "s", "config": singleCfg()}
		case http.MethodPut:
			return map[string]any{"name": "renamed"}
		}
		return nil
	}
	for i, scope := range all {
		t.Run(scope, func(t *testing.T) {
			_, lacking := e.wsKey("default", slices.DeleteFunc(slices.Clone(all), func(s string) bool { return s == scope })...)
			_, only := e.wsKey("default", scope)
			for _, cl := range routes(victims[2*i])[scope] {
				r := e.do(cl.method, cl.path, lacking, body(cl.method))
				wantErr(t, r, http.StatusForbidden, core.CodeForbidden)
				if !strings.Contains(r.errField("message"), scope) {
					t.Fatalf("message does not name %s: %s", scope, r.raw)
				}
			}
			for _, cl := range routes(victims[2*i+1])[scope] {
				if r := e.do(cl.method, cl.path, only, body(cl.method)); r.status != http.StatusOK {
					t.Fatalf("%s %s with %s: %d %s", cl.method, cl.path, scope, r.status, r.raw)
				}
			}
		})
	}
	// The refused calls changed nothing.
	for i := range all {
		c := e.getConfig(adminKey, victims[2*i].id)
		if c.str("name") != "v" || c.str("version_id") != victims[2*i].version {
			t.Fatalf("a refused call changed %s: %s", victims[2*i].slug, c.raw)
		}
	}
}

func TestConfigSnapshot(t *testing.T) {
	e, cfgs := newCfgEnv(t)
	ws2 := e.addWorkspace("team-two")
	home, away := wsPrincipal(e.wsID), wsPrincipal(ws2)
	c := e.mkConfig(adminKey, map[string]any{"name": "live", "config": fallbackCfg(), "workspace_id": "default"})
	check := func(t *testing.T, wantMode, wantMsg string) {
		t.Helper()
		for _, ref := range []string{c.id, c.slug} {
			for _, p := range []*core.Principal{home, orgPrincipal, nil} {
				m, msg := savedMode(cfgs, ref, p)
				if m != wantMode || !strings.Contains(msg, wantMsg) || (wantMsg == "") != (msg == "") {
					t.Fatalf("SavedConfig(%s): mode %q msg %q, want %q %q", ref, m, msg, wantMode, wantMsg)
				}
			}
			// Never for another workspace's keys.
			if _, msg := savedMode(cfgs, ref, away); !strings.Contains(msg, "no saved config") {
				t.Fatalf("another workspace sees %s: %q", ref, msg)
			}
		}
	}
	steps := []struct {
		name     string
		body     map[string]any
		wantMode string
		wantMsg  string
		wantDef  string
	}{
		{"created", nil, modeFallback, "", ""},
		{"config changed", map[string]any{"config": loadbalanceCfg()}, modeLoadbalance, "", ""},
		{"made the default", map[string]any{"is_default": 1}, modeLoadbalance, "", modeLoadbalance},
		{"config changed again", map[string]any{"config": map[string]any{"strategy": map[string]any{"mode": "single"}, "targets": []any{map[string]any{"provider": "openai"}}}}, modeSingle, "", modeSingle},
		{"archived", map[string]any{"status": "archived"}, "", "archived", ""},
		{"archived, config changed", map[string]any{"config": fallbackCfg()}, "", "archived", ""},
		{"active", map[string]any{"status": "active"}, modeFallback, "", modeFallback},
	}
	for _, st := range steps {
		t.Run(st.name, func(t *testing.T) {
			if st.body != nil {
				e.putConfig(adminKey, c.slug, st.body)
			}
			check(t, st.wantMode, st.wantMsg)
			if got := defaultMode(cfgs, home); got != st.wantDef {
				t.Fatalf("workspace default %q, want %q", got, st.wantDef)
			}
			if got := defaultMode(cfgs, away); got != "" {
				t.Fatalf("the other workspace has default %q", got)
			}
		})
	}
	t.Run("unknown", func(t *testing.T) {
		if _, msg := savedMode(cfgs, "pc-nope-abcdef", orgPrincipal); !strings.Contains(msg, "pc-nope-abcdef") {
			t.Fatalf("msg %q", msg)
		}
	})

	// Through the data plane: a key whose default config is archived is
	// refused before any provider is called, and a key that may not
	// override its default config cannot send x-gateway-config.
	t.Run("data plane", func(t *testing.T) {
		_, secret := e.createKey(adminKey, "workspace/service", map[string]any{"name": "dp", "workspace_id": "default",
			"scopes": []string{core.ScopeCompletionsWrite}, "defaults": map[string]any{"config_id": c.slug, "allow_config_override": false}})
		chat := map[string]any{"model": "gpt-4o", "messages": []any{map[string]any{"role": "user", "content": "hi"}}}
		send := func(hdr map[string]string) resp {
			raw, _ := json.Marshal(chat)
			req, _ := http.NewRequest(http.MethodPost, "/v1/chat/completions", strings.NewReader(string(raw)))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("x-gateway-api-key", secret)
			for k, v := range hdr {
				req.Header.Set(k, v)
			}
			res, err := e.app.Test(req, -1)
			if err != nil {
				t.Fatal(err)
			}
			defer res.Body.Close()
			r := resp{status: res.StatusCode}
			if r.raw, err = io.ReadAll(res.Body); err != nil {
				t.Fatal(err)
			}
			_ = json.Unmarshal(r.raw, &r.body)
			return r
		}
		r := send(map[string]string{"x-gateway-config": `{"provider":"openai"}`})
		if r.status != http.StatusForbidden || !strings.Contains(r.errField("message"), "x-gateway-config") {
			t.Fatalf("override: %d %s", r.status, r.raw)
		}
		// The admin API no longer archives a key's default config (409);
		// one archived before that rule is refused on the request path.
		err := e.st.Update(func(tx store.Tx) error {
			var rec store.SavedConfig
			if err := tx.Get(store.BucketConfigs, c.id, &rec); err != nil {
				return err
			}
			rec.Status = store.StatusArchived
			return tx.Put(store.BucketConfigs, rec.ID, rec)
		})
		if err != nil {
			t.Fatal(err)
		}
		if err := cfgs.Reload(); err != nil {
			t.Fatal(err)
		}
		r = send(nil)
		if r.status != http.StatusBadRequest || !strings.Contains(r.errField("message"), "archived") {
			t.Fatalf("archived default: %d %s", r.status, r.raw)
		}
	})
}

func TestAPIKeyDefaultConfig(t *testing.T) {
	e, _ := newCfgEnv(t)
	ws2 := e.addWorkspace("team-two")
	mine := e.mkConfig(adminKey, map[string]any{"name": "mine", "config": singleCfg(), "workspace_id": "default"})
	theirs := e.mkConfig(adminKey, map[string]any{"name": "theirs", "config": singleCfg(), "workspace_id": ws2})
	gone := e.mkConfig(adminKey, map[string]any{"name": "gone", "config": singleCfg(), "workspace_id": "default"})
	if r := e.do(http.MethodDelete, "/v1/configs/"+gone.slug, adminKey, nil); r.status != 200 {
		t.Fatalf("delete: %d %s", r.status, r.raw)
	}
	f, tr := false, true
	cases := []struct {
		name       string
		path       string
		ws         string
		defaults   any
		status     int
		param      string
		wantConfig string
		wantNoOver bool
	}{
		{"by id", "workspace/service", "default", map[string]any{"config_id": mine.id}, 200, "", mine.id, false},
		{"by slug", "workspace/service", "default", map[string]any{"config_id": mine.slug}, 200, "", mine.slug, false},
		{"user key", "workspace/user", "default", map[string]any{"config_id": mine.slug}, 200, "", mine.slug, false},
		{"override not allowed", "workspace/service", "default", map[string]any{"config_id": mine.id, "allow_config_override": f}, 200, "", mine.id, true},
		{"override allowed", "workspace/service", "default", map[string]any{"config_id": mine.id, "allow_config_override": tr}, 200, "", mine.id, false},
		{"metadata only", "workspace/service", "default", map[string]any{"metadata": map[string]any{"team": "a"}}, 200, "", "", false},
		{"organisation key, any workspace's config", "organisation/service", "", map[string]any{"config_id": theirs.slug, "allow_config_override": f}, 200, "", theirs.slug, true},
		{"other workspace's config by id", "workspace/service", "default", map[string]any{"config_id": theirs.id}, 400, "defaults.config_id", "", false},
		{"other workspace's config by slug", "workspace/service", "default", map[string]any{"config_id": theirs.slug}, 400, "defaults.config_id", "", false},
		{"config of the key's workspace from the other side", "workspace/service", ws2, map[string]any{"config_id": mine.slug}, 400, "defaults.config_id", "", false},
		{"unknown config", "workspace/service", "default", map[string]any{"config_id": "pc-nope-abcdef"}, 400, "defaults.config_id", "", false},
		{"deleted config", "workspace/service", "default", map[string]any{"config_id": gone.id}, 400, "defaults.config_id", "", false},
		{"empty config_id", "workspace/service", "default", map[string]any{"config_id": ""}, 400, "defaults.config_id", "", false},
		{"config_id not a string", "workspace/service", "default", map[string]any{"config_id": 3}, 400, "defaults.config_id", "", false},
		{"allow_config_override not a bool", "workspace/service", "default", map[string]any{"config_id": mine.id, "allow_config_override": "no"}, 400, "defaults.allow_config_override", "", false},
		{"unknown defaults field", "workspace/service", "default", map[string]any{"config": mine.id}, 400, "defaults.config", "", false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			body := map[string]any{"name": "k", "scopes": []string{core.ScopeCompletionsWrite}, "defaults": tc.defaults}
			if tc.ws != "" {
				body["workspace_id"] = tc.ws
			}
			r := e.do(http.MethodPost, "/v1/api-keys/"+tc.path, adminKey, body)
			if tc.status != 200 {
				wantErr(t, r, tc.status, core.CodeValidation)
				if r.errField("param") != tc.param {
					t.Fatalf("param %q, want %q: %s", r.errField("param"), tc.param, r.raw)
				}
				return
			}
			if r.status != 200 {
				t.Fatalf("create: %d %s", r.status, r.raw)
			}
			p, err := e.keys.Authenticate(r.str("key"))
			if err != nil {
				t.Fatal(err)
			}
			if p.DefaultConfig != tc.wantConfig || p.NoConfigOverride != tc.wantNoOver {
				t.Fatalf("principal default %q no-override %v, want %q %v", p.DefaultConfig, p.NoConfigOverride, tc.wantConfig, tc.wantNoOver)
			}
			got := e.do(http.MethodGet, "/v1/api-keys/"+r.str("id"), adminKey, nil)
			d, _ := got.body["defaults"].(map[string]any)
			if tc.wantConfig != "" && d["config_id"] != tc.wantConfig {
				t.Fatalf("defaults %s", got.raw)
			}
		})
	}
}

func TestConfigsPersist(t *testing.T) {
	e, _ := newCfgEnv(t)
	ws2 := e.addWorkspace("team-two")
	a := e.mkConfig(adminKey, map[string]any{"name": "a", "config": fallbackCfg(), "workspace_id": "default", "is_default": 1})
	e.clock.Advance(time.Second)
	v2 := e.putConfig(adminKey, a.slug, map[string]any{"config": loadbalanceCfg()})
	e.clock.Advance(time.Second)
	v3 := e.putConfig(adminKey, a.slug, map[string]any{"name": "a3"})
	b := e.mkConfig(adminKey, map[string]any{"name": "b", "config": singleCfg(), "workspace_id": ws2})
	e.clock.Advance(time.Second)
	e.putConfig(adminKey, b.id, map[string]any{"status": "archived"})
	before := e.getConfig(adminKey, a.slug)

	cfgs := e.reopenWithConfigs()

	after := e.getConfig(adminKey, a.slug)
	if string(after.raw) != string(before.raw) || after.str("version_id") != v3 || after.str("name") != "a3" {
		t.Fatalf("after reopen %s, before %s", after.raw, before.raw)
	}
	r := e.do(http.MethodGet, "/v1/configs/"+a.id+"/versions", adminKey, nil)
	if r.total() != 3 || r.list()[0]["version_id"] != v3 || r.list()[1]["version_id"] != v2 || r.list()[2]["version_id"] != a.version ||
		!sameJSON(t, r.list()[2]["config"], fallbackCfg()) {
		t.Fatalf("versions after reopen: %s", r.raw)
	}
	if l := e.do(http.MethodGet, "/v1/configs", adminKey, nil); l.total() != 2 {
		t.Fatalf("list after reopen: %s", l.raw)
	}
	if m, msg := savedMode(cfgs, a.slug, wsPrincipal(e.wsID)); m != modeLoadbalance {
		t.Fatalf("snapshot after reopen: %q %s", m, msg)
	}
	if m := defaultMode(cfgs, wsPrincipal(e.wsID)); m != modeLoadbalance {
		t.Fatalf("default after reopen: %q", m)
	}
	if _, msg := savedMode(cfgs, b.slug, orgPrincipal); !strings.Contains(msg, "archived") {
		t.Fatalf("archived after reopen: %q", msg)
	}
	// The service keeps working on the reopened store.
	if v := e.putConfig(adminKey, a.slug, map[string]any{"config": singleCfg()}); v == v3 {
		t.Fatal("no new version after reopen")
	}
	if m := defaultMode(cfgs, wsPrincipal(e.wsID)); m != "leaf" {
		t.Fatalf("default after update: %q", m)
	}
}

func TestConfigsConcurrent(t *testing.T) {
	e, cfgs := newCfgEnv(t)
	const n = 8
	var cs []saved
	for i := range n {
		cs = append(cs, e.mkConfig(adminKey, map[string]any{"name": fmt.Sprint("c", i), "config": singleCfg(), "workspace_id": "default"}))
	}
	// The clock stays frozen: versions made in the same instant still get
	// distinct, ordered ids.
	var wg sync.WaitGroup
	versions := make([][]string, n)
	errs := make(chan string, 4*n)
	for i := range n {
		wg.Go(func() {
			for j := range 3 {
				r := e.do(http.MethodPut, "/v1/configs/"+cs[i].slug, adminKey, map[string]any{"is_default": 1, "config": loadbalanceCfg(), "name": fmt.Sprint("c", i, "-", j)})
				if r.status != 200 {
					errs <- fmt.Sprintf("put: %d %s", r.status, r.raw)
					return
				}
				versions[i] = append(versions[i], r.str("version_id"))
			}
		})
		wg.Go(func() {
			r := e.do(http.MethodPost, "/v1/configs", adminKey, map[string]any{"name": "new", "config": singleCfg(), "workspace_id": "default"})
			if r.status != 200 {
				errs <- fmt.Sprintf("create: %d %s", r.status, r.raw)
			}
			_, _ = cfgs.SavedConfig(cs[i].slug, orgPrincipal)
			_, _ = cfgs.WorkspaceDefault(wsPrincipal(e.wsID))
		})
	}
	wg.Wait()
	close(errs)
	for msg := range errs {
		t.Error(msg)
	}
	var def []store.SavedConfig
	for _, c := range listBucket[store.SavedConfig](t, e.st, store.BucketConfigs) {
		if c.IsDefault == 1 {
			def = append(def, c)
		}
	}
	if len(def) != 1 {
		t.Fatalf("%d defaults after concurrent updates", len(def))
	}
	if m := defaultMode(cfgs, wsPrincipal(e.wsID)); m != modeLoadbalance {
		t.Fatalf("snapshot default %q", m)
	}
	if sv, ok := cfgs.WorkspaceDefault(wsPrincipal(e.wsID)); !ok || sv.Node == nil {
		t.Fatal("no default")
	}
	for i, c := range cs {
		r := e.do(http.MethodGet, "/v1/configs/"+c.slug+"/versions", adminKey, nil)
		want := slices.Clone(versions[i])
		slices.Reverse(want)
		want = append(want, c.version)
		var got []string
		for _, it := range r.list() {
			got = append(got, it["version_id"].(string))
		}
		if !slices.Equal(got, want) {
			t.Fatalf("%s versions %v, want %v (newest first)", c.slug, got, want)
		}
	}
	if l := e.do(http.MethodGet, "/v1/configs?page_size=100", adminKey, nil); l.total() != 2*n {
		t.Fatalf("%d configs, want %d", l.total(), 2*n)
	}
}

// vertexKeyJSON is a service-account key as the checks want one (its
// private key is not a real key).
const vertexKeyJSON = `{"type":"service_account","client_email":"gw@my-project-1.iam.gserviceaccount.com",` +
	`"private_key":"-----BEGIN PRIVATE KEY-----\nTUlJRVNFQ1JFVA==\n-----END PRIVATE KEY-----\n","token_uri":"https://oauth2.example/token"}`

func TestSavedConfigSecretsMaskedOnRead(t *testing.T) {
	e := newEnv(t)
	const secret = "sk-live-0123456789abcdefghijklmnop"
	r := e.do("POST", "/v1/configs", adminKey, map[string]any{"name": "keys", "workspace_id": "default",
		"config": map[string]any{"strategy": map[string]any{"mode": "fallback"}, "targets": []any{
			map[string]any{"provider": "openai", "api_key": secret},
			map[string]any{"provider": "groq", "api_key": "short"},
			map[string]any{"provider": "bedrock", "aws_region": "eu-west-1", "aws_access_key_id": "AKIAIOSFODNN7EXAMPLE",
				"aws_secret_access_key": "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY", "aws_session_token": "FwoGZXIvYXdzEXAMPLETOKEN"},
			map[string]any{"provider": "vertex-ai", "vertex_project_id": "my-project-1", "vertex_region": "us-central1", "vertex_service_account_json": vertexKeyJSON},
			map[string]any{"provider": "azure-openai", "azure_auth_mode": "entra", "azure_entra_tenant_id": "tenant-1", "azure_entra_client_id": "app-1",
				"azure_entra_client_secret": "entra-EXAMPLESECRET-value"}}}})
	if r.status != 200 {
		t.Fatalf("%d %s", r.status, r.raw)
	}
	for _, path := range []string{"/v1/configs/" + r.str("slug"), "/v1/configs/" + r.str("slug") + "/versions"} {
		got := e.do("GET", path, adminKey, nil)
		if got.status != 200 || strings.Contains(string(got.raw), secret) || strings.Contains(string(got.raw), `"short"`) ||
			!strings.Contains(string(got.raw), "sk-l****mnop") || strings.Contains(string(got.raw), "AKIAIOSFODNN7EXAMPLE") ||
			strings.Contains(string(got.raw), "EXAMPLEKEY") || strings.Contains(string(got.raw), "EXAMPLETOKEN") || !strings.Contains(string(got.raw), "eu-west-1") ||
			strings.Contains(string(got.raw), "TUlJRVNFQ1JFVA") || !strings.Contains(string(got.raw), "us-central1") ||
			strings.Contains(string(got.raw), "EXAMPLESECRET") || !strings.Contains(string(got.raw), "app-1") {
			t.Fatalf("%s: %s", path, got.raw)
		}
	}
}

// TestWorkspaceDefaultConfigRoutes checks that a request naming no provider
// and no config is routed by its workspace's default config.
func TestWorkspaceDefaultConfigRoutes(t *testing.T) {
	e := newEnv(t)
	// Nothing listens on 127.0.0.2:9; the answer shows which target was used.
	r := e.do("POST", "/v1/configs", adminKey, map[string]any{"name": "ws-default", "workspace_id": "default", "is_default": 1,
		"config": map[string]any{"provider": "openai", "custom_host": "http://127.0.0.2:9/v1"}})
	if r.status != 200 {
		t.Fatalf("%d %s", r.status, r.raw)
	}
	_, secret := e.createKey(adminKey, "workspace/service", map[string]any{"name": "plain", "workspace_id": "default",
		"scopes": []string{core.ScopeCompletionsWrite}})
	raw, _ := json.Marshal(map[string]any{"model": "m", "messages": []any{map[string]any{"role": "user", "content": "hi"}}})
	req, _ := http.NewRequest(http.MethodPost, "/v1/chat/completions", strings.NewReader(string(raw)))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("x-gateway-api-key", secret)
	res, err := e.app.Test(req, -1)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != http.StatusBadGateway || !strings.Contains(string(body), "127.0.0.2:9") {
		t.Fatalf("the workspace default config was not used: %d %s", res.StatusCode, body)
	}
}

// A config read (its secrets masked), changed and put back keeps its
// stored secrets where the masks were put back; another masked-looking
// value is refused, never stored as the key.
func TestConfigPutBackMaskedSecret(t *testing.T) {
	e, _ := newCfgEnv(t)
	const secret = "sk-config-secret-abcdefgh"
	c := e.mkConfig(adminKey, map[string]any{"name": "keyed", "workspace_id": "default",
		"config": map[string]any{"provider": "openai", "api_key": secret}})
	read := e.getConfig(adminKey, c.slug)
	cfg, _ := read.body["config"].(map[string]any)
	masked, _ := cfg["api_key"].(string)
	if masked == "" || masked == secret {
		t.Fatalf("GET does not mask the key: %s", read.raw)
	}
	cfg["override_params"] = map[string]any{"temperature": 0.5}
	if r := e.do(http.MethodPut, "/v1/configs/"+c.slug, adminKey, map[string]any{"config": cfg}); r.status != 200 {
		t.Fatalf("put back: %d %s", r.status, r.raw)
	}
	var stored store.SavedConfig
	e.st.View(func(tx store.Tx) error { return tx.Get(store.BucketConfigs, c.id, &stored) })
	if !strings.Contains(string(stored.Config), secret) || !strings.Contains(string(stored.Config), "temperature") {
		t.Fatalf("stored config after the put back: %s", stored.Config)
	}
	cfg["api_key"] = "****zzzz"
	r := e.do(http.MethodPut, "/v1/configs/"+c.slug, adminKey, map[string]any{"config": cfg})
	wantErr(t, r, http.StatusBadRequest, core.CodeValidation)
	if r.errField("param") != "config.api_key" {
		t.Fatalf("param %q: %s", r.errField("param"), r.raw)
	}
}

// A config stored before a rule that now refuses it (here cache.max_age 0
// and override_params out of the body's bounds) is still routed after a
// restart; the admin API refuses it on its next write.
func TestConfigStoredBeforeANewerRule(t *testing.T) {
	e, _ := newCfgEnv(t)
	at := e.clock.Now()
	raw := json.RawMessage(`{"provider":"openai","cache":{"mode":"simple","max_age":0},"override_params":{"temperature":5}}`)
	if err := e.st.Update(func(tx store.Tx) error {
		return tx.Put(store.BucketConfigs, "cfg-old", store.SavedConfig{ID: "cfg-old", Slug: "old", Name: "old", OrganisationID: e.orgID,
			WorkspaceID: e.wsID, Status: store.StatusActive, CreatedAt: at, LastUpdatedAt: at, Config: raw})
	}); err != nil {
		t.Fatal(err)
	}
	cfgs := e.reopenWithConfigs()
	saved, err := cfgs.SavedConfig("old", nil)
	if err != nil {
		t.Fatalf("the stored config is not routed: %s", err.Message)
	}
	if saved.Config.OverrideParams["temperature"] == nil {
		t.Errorf("override_params lost: %v", saved.Config.OverrideParams)
	}
	r := e.do(http.MethodPut, "/v1/configs/old", adminKey, map[string]any{"config": json.RawMessage(raw)})
	if r.status != http.StatusBadRequest || !strings.Contains(r.errField("message"), "config.cache.max_age") {
		t.Fatalf("update: %d %s", r.status, r.raw)
	}
}
