package adminsvc_test

import (
	"errors"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/llm-gateway/gateway/core"
	"github.com/llm-gateway/gateway/core/prompt"
	"github.com/llm-gateway/gateway/store"
)

// mkCollection creates a collection in workspace ws and returns its id.
func (e *env) mkCollection(key, ws, name string) string {
	e.t.Helper()
	r := e.do(http.MethodPost, "/v1/collections", key, map[string]any{"name": name, "workspace_id": ws})
	if r.status != 200 || r.str("id") == "" || !strings.HasPrefix(r.str("slug"), "col-") {
		e.t.Fatalf("create collection: %d %s", r.status, r.raw)
	}
	return r.str("id")
}

// mkPartial creates a partial in workspace ws and returns its slug.
func (e *env) mkPartial(key, ws, name, text string) saved {
	e.t.Helper()
	r := e.do(http.MethodPost, "/v1/prompts/partials", key, map[string]any{"name": name, "string": text, "workspace_id": ws})
	if r.status != 200 || r.str("id") == "" || !strings.HasPrefix(r.str("slug"), "pl-") || r.str("version_id") == "" {
		e.t.Fatalf("create partial: %d %s", r.status, r.raw)
	}
	return saved{r.str("id"), r.str("slug"), r.str("version_id")}
}

// mkLabel creates a label and returns its id.
func (e *env) mkLabel(key string, body map[string]any) string {
	e.t.Helper()
	r := e.do(http.MethodPost, "/v1/labels", key, body)
	if r.status != 200 || r.str("id") == "" {
		e.t.Fatalf("create label: %d %s", r.status, r.raw)
	}
	return r.str("id")
}

// render renders prompt ref through the data plane's snapshot.
func (e *env) render(ref string, vars map[string]any) (string, error) {
	e.t.Helper()
	v, cerr := e.prompts.Prompt(ref, nil)
	if cerr != nil {
		return "", cerr
	}
	body, err := prompt.Render(v, vars, nil)
	return string(body), err
}

// Every field of a partial body is checked, and the 400 names it.
func TestPartialValidation(t *testing.T) {
	e := newEnv(t)
	existing := e.mkPartial(adminKey, "default", "footer", "Bye")
	cases := []struct {
		name, method, path string
		body               any
		field              string
	}{
		{"no name", http.MethodPost, "", map[string]any{"string": "x"}, "name"},
		{"no string", http.MethodPost, "", map[string]any{"name": "x"}, "string"},
		{"string not a string", http.MethodPost, "", map[string]any{"name": "x", "string": 1}, "string"},
		{"blank string", http.MethodPost, "", map[string]any{"name": "x", "string": "  "}, "string"},
		{"bad syntax", http.MethodPost, "", map[string]any{"name": "x", "string": "{{#a}}"}, "string"},
		{"includes a missing partial", http.MethodPost, "", map[string]any{"name": "x", "string": "{{> nope}}", "workspace_id": "default"}, "string"},
		{"unknown field", http.MethodPost, "", map[string]any{"name": "x", "string": "y", "colour": 1}, "colour"},
		{"long description", http.MethodPost, "", map[string]any{"name": "x", "string": "y", "version_description": strings.Repeat("d", 1001)}, "version_description"},
		{"empty update", http.MethodPut, "/" + existing.slug, map[string]any{}, "body"},
		{"blank name on update", http.MethodPut, "/" + existing.slug, map[string]any{"name": ""}, "name"},
		{"moving workspace", http.MethodPut, "/" + existing.slug, map[string]any{"workspace_id": "x"}, "workspace_id"},
		{"includes itself", http.MethodPut, "/" + existing.slug, map[string]any{"string": "{{> " + existing.slug + "}}"}, "string"},
		{"makeDefault without a version", http.MethodPut, "/" + existing.slug + "/makeDefault", map[string]any{}, "version"},
		{"makeDefault of a missing version", http.MethodPut, "/" + existing.slug + "/makeDefault", map[string]any{"version": 9}, "version"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			wantValidation(t, e.do(tc.method, "/v1/prompts/partials"+tc.path, adminKey, tc.body), tc.field)
		})
	}
	r := e.do(http.MethodPost, "/v1/prompts/partials", adminKey, map[string]any{"name": "x", "string": "{{> nope}}", "workspace_id": "default"})
	if !strings.Contains(r.errField("message"), "partial nope: no such partial") {
		t.Fatalf("missing partial: %s", r.raw)
	}
	if n := len(listBucket[store.PromptPartial](t, e.st, store.BucketPromptPartials)); n != 1 {
		t.Fatalf("%d partials stored", n)
	}
}

// A partial's life: versions, makeDefault, and the data plane includes
// its default version, reloaded on every change.
func TestPartialVersionsAndRender(t *testing.T) {
	e := newEnv(t)
	sig := e.mkPartial(adminKey, "default", "Signature", "-- {{team}}")
	p := e.mkPrompt(adminKey, newPrompt("mail", map[string]any{"workspace_id": "default", "string": "Hi {{name}} {{> " + sig.slug + "}}"}))
	vars := map[string]any{"name": "Ada", "team": "ops"}
	if got, err := e.render(p.slug, vars); err != nil || !strings.Contains(got, `"Hi Ada -- ops"`) {
		t.Fatalf("render: %s %v", got, err)
	}
	for _, ref := range []string{sig.id, sig.slug} {
		r := e.do(http.MethodGet, "/v1/prompts/partials/"+ref, adminKey, nil)
		if r.status != 200 || r.str("string") != "-- {{team}}" || r.body["version"] != 1.0 || r.str("object") != "prompt_partial" || r.str("workspace_id") != e.wsID {
			t.Fatalf("get %s: %d %s", ref, r.status, r.raw)
		}
	}
	r := e.do(http.MethodPut, "/v1/prompts/partials/"+sig.slug, adminKey, map[string]any{"string": "Regards, {{team}}", "name": "Sig"})
	if r.status != 200 || r.body["version"] != 2.0 {
		t.Fatalf("update: %d %s", r.status, r.raw)
	}
	// Version 2 is not the default yet.
	if got, _ := e.render(p.slug, vars); !strings.Contains(got, "-- ops") {
		t.Fatalf("render before makeDefault: %s", got)
	}
	versions := e.do(http.MethodGet, "/v1/prompts/partials/"+sig.slug+"/versions", adminKey, nil)
	if rows := versions.list(); len(rows) != 2 || rows[0]["version"] != 2.0 || rows[0]["is_default"] != false || rows[1]["is_default"] != true {
		t.Fatalf("versions: %s", versions.raw)
	}
	if r := e.do(http.MethodPut, "/v1/prompts/partials/"+sig.slug+"/makeDefault", adminKey, map[string]any{"version": 2}); r.status != 200 || r.body["version"] != 2.0 {
		t.Fatalf("makeDefault: %d %s", r.status, r.raw)
	}
	if got, _ := e.render(p.slug, vars); !strings.Contains(got, `"Hi Ada Regards, ops"`) {
		t.Fatalf("render after makeDefault: %s", got)
	}
	if l := e.do(http.MethodGet, "/v1/prompts/partials?search=SI", adminKey, nil); l.total() != 1 || l.list()[0]["name"] != "Sig" {
		t.Fatalf("list: %s", l.raw)
	}
}

// Nested partials render; a cycle, a missing partial or one of another
// workspace is refused at save time, naming string and the partial.
func TestPartialIncludesChecked(t *testing.T) {
	e := newEnv(t)
	e.addWorkspace("team-b")
	inner := e.mkPartial(adminKey, "default", "inner", "[{{x}}]")
	outer := e.mkPartial(adminKey, "default", "outer", "({{> "+inner.slug+"}})")
	other := e.mkPartial(adminKey, "team-b", "other", "b")
	p := e.mkPrompt(adminKey, newPrompt("nest", map[string]any{"workspace_id": "default", "string": "{{#xs}}{{> " + outer.slug + "}}{{/xs}}"}))
	if got, err := e.render(p.id, map[string]any{"xs": []any{map[string]any{"x": "1"}, map[string]any{"x": "2"}}}); err != nil || !strings.Contains(got, `"([1])([2])"`) {
		t.Fatalf("nested: %s %v", got, err)
	}
	cases := []struct {
		name, method, path string
		body               map[string]any
		msg                string
	}{
		{"cycle through an update", http.MethodPut, "/v1/prompts/partials/" + inner.slug, map[string]any{"string": "{{> " + outer.slug + "}}"}, "includes itself"},
		{"prompt with a missing partial", http.MethodPost, "/v1/prompts", newPrompt("x", map[string]any{"workspace_id": "default", "string": "{{> gone}}"}), "partial gone: no such partial"},
		{"prompt with another workspace's partial", http.MethodPost, "/v1/prompts", newPrompt("x", map[string]any{"workspace_id": "default", "string": "{{> " + other.slug + "}}"}), "partial " + other.slug + ": no such partial"},
		{"prompt update with a missing partial", http.MethodPut, "/v1/prompts/" + p.slug, map[string]any{"patch": true, "string": "{{> gone}}"}, "partial gone"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := e.do(tc.method, tc.path, adminKey, tc.body)
			wantValidation(t, r, "string")
			if !strings.Contains(r.errField("message"), tc.msg) {
				t.Fatalf("message %s, want %q", r.raw, tc.msg)
			}
		})
	}
}

// A partial that any version of a prompt, or the default version of
// another partial, includes cannot be deleted (409 naming them); once
// unused it can. A partial deleted behind the API's back makes rendering
// fail, naming it.
func TestDeletePartialInUse(t *testing.T) {
	e := newEnv(t)
	leaf := e.mkPartial(adminKey, "default", "leaf", "leaf")
	mid := e.mkPartial(adminKey, "default", "mid", "{{> "+leaf.slug+"}}")
	p := e.mkPrompt(adminKey, newPrompt("user", map[string]any{"workspace_id": "default", "string": "{{> " + leaf.slug + "}}"}))
	r := e.do(http.MethodDelete, "/v1/prompts/partials/"+leaf.slug, adminKey, nil)
	wantErr(t, r, http.StatusConflict, core.CodeConflict)
	if msg := r.errField("message"); !strings.Contains(msg, "prompt "+p.slug+"@1") || !strings.Contains(msg, "partial "+mid.slug) {
		t.Fatalf("409 does not name the users: %s", msg)
	}
	e.putPrompt(adminKey, p.slug, map[string]any{"patch": true, "string": "plain"})
	if r := e.do(http.MethodPut, "/v1/prompts/"+p.slug+"/makeDefault", adminKey, map[string]any{"version": 2}); r.status != 200 {
		t.Fatalf("makeDefault: %s", r.raw)
	}
	if r := e.do(http.MethodDelete, "/v1/prompts/partials/"+mid.slug, adminKey, nil); r.status != 200 {
		t.Fatalf("delete mid: %d %s", r.status, r.raw)
	}
	// Version 1, no longer the default, still renders with the leaf
	// ({slug}@1): it keeps the leaf from deletion.
	r = e.do(http.MethodDelete, "/v1/prompts/partials/"+leaf.slug, adminKey, nil)
	wantErr(t, r, http.StatusConflict, core.CodeConflict)
	if msg := r.errField("message"); !strings.Contains(msg, "prompt "+p.slug+"@1") || strings.Contains(msg, "@2") {
		t.Fatalf("409 does not name version 1 alone: %s", msg)
	}
	if got, err := e.render(p.slug+"@1", nil); err != nil || !strings.Contains(got, `"leaf"`) {
		t.Fatalf("render @1: %s %v", got, err)
	}
	if r := e.do(http.MethodDelete, "/v1/prompts/"+p.slug, adminKey, nil); r.status != 200 {
		t.Fatalf("delete prompt: %d %s", r.status, r.raw)
	}
	if r := e.do(http.MethodDelete, "/v1/prompts/partials/"+leaf.slug, adminKey, nil); r.status != 200 {
		t.Fatalf("delete leaf: %d %s", r.status, r.raw)
	}
	if n := len(listBucket[store.PartialVersion](t, e.st, store.BucketPartialVersions)); n != 0 {
		t.Fatalf("%d partial versions left", n)
	}

	// Behind the API's back: render names the missing partial.
	gone := e.mkPartial(adminKey, "default", "gone", "g")
	q := e.mkPrompt(adminKey, newPrompt("q", map[string]any{"workspace_id": "default", "string": "{{> " + gone.slug + "}}"}))
	if err := e.st.Update(func(tx store.Tx) error { return tx.Delete(store.BucketPromptPartials, gone.id) }); err != nil {
		t.Fatal(err)
	}
	if err := e.prompts.Reload(); err != nil {
		t.Fatal(err)
	}
	var pe *prompt.PartialError
	if _, err := e.render(q.slug, nil); !errors.As(err, &pe) || pe.Partial != gone.slug {
		t.Fatalf("render with a deleted partial: %v", err)
	}
	// A version including the missing partial is not published again.
	e.putPrompt(adminKey, q.slug, map[string]any{"patch": true, "string": "plain"})
	if r := e.do(http.MethodPut, "/v1/prompts/"+q.slug+"/makeDefault", adminKey, map[string]any{"version": 2}); r.status != 200 {
		t.Fatalf("makeDefault: %s", r.raw)
	}
	wantValidation(t, e.do(http.MethodPut, "/v1/prompts/"+q.slug+"/makeDefault", adminKey, map[string]any{"version": 1}), "version")
}

// Partials saved one at a time cannot nest deeper than rendering allows:
// a chain as deep as allowed takes no further partial, neither when its
// innermost partial is changed to include one, nor when a new partial
// includes its outermost (400 naming the chain). Publishing a version
// (makeDefault) is checked by the same checkPartialIncludes.
func TestPartialChainDepthSavedPiecewise(t *testing.T) {
	e := newEnv(t)
	extra := e.mkPartial(adminKey, "default", "extra", "e")
	slugs := make([]string, prompt.MaxPartialDepth) // innermost first
	text := "leaf"
	for i := range slugs {
		slugs[i] = e.mkPartial(adminKey, "default", "p"+strconv.Itoa(i), text).slug
		text = "{{> " + slugs[i] + "}}"
	}
	p := e.mkPrompt(adminKey, newPrompt("deep", map[string]any{"workspace_id": "default", "string": text}))
	if got, err := e.render(p.slug, nil); err != nil || !strings.Contains(got, `"leaf"`) {
		t.Fatalf("render of the deepest chain allowed: %s %v", got, err)
	}
	more := "leaf{{> " + extra.slug + "}}"
	r := e.do(http.MethodPut, "/v1/prompts/partials/"+slugs[0], adminKey, map[string]any{"string": more})
	wantValidation(t, r, "string")
	if msg := r.errField("message"); !strings.Contains(msg, slugs[len(slugs)-1]+" > ") || !strings.Contains(msg, "more than") {
		t.Fatalf("400 does not name the chain: %s", msg)
	}
	r = e.do(http.MethodPost, "/v1/prompts/partials", adminKey, map[string]any{"name": "top", "string": text, "workspace_id": "default"})
	wantValidation(t, r, "string")
}

// Labels name versions: {prompt}@{label}, @{number} and @latest select a
// version; a label moves between versions and is refused where it clashes.
func TestPromptLabels(t *testing.T) {
	e := newEnv(t)
	wsB := e.addWorkspace("team-b")
	p := e.mkPrompt(adminKey, newPrompt("labelled", map[string]any{"workspace_id": "default", "string": "v1"}))
	e.putPrompt(adminKey, p.slug, map[string]any{"patch": true, "string": "v2"})
	e.putPrompt(adminKey, p.slug, map[string]any{"patch": true, "string": "v3"})
	versions := e.do(http.MethodGet, "/v1/prompts/"+p.slug+"/versions", adminKey, nil).list() // newest first
	vid := func(n int) string { return versions[3-n]["id"].(string) }
	staging := e.mkLabel(adminKey, map[string]any{"name": "staging", "description": "pre-prod", "color_code": "#ff0"})
	wsLabel := e.mkLabel(adminKey, map[string]any{"name": "canary", "workspace_id": "default"})
	otherWS := e.mkLabel(adminKey, map[string]any{"name": "elsewhere", "workspace_id": "team-b"})

	label := func(n int, id any) resp {
		return e.do(http.MethodPut, "/v1/prompts/"+p.slug+"/versions/"+vid(n), adminKey, map[string]any{"label_id": id})
	}
	if r := label(2, staging); r.status != 200 || r.str("label_id") != staging {
		t.Fatalf("label v2: %d %s", r.status, r.raw)
	}
	if r := label(3, wsLabel); r.status != 200 {
		t.Fatalf("label v3: %d %s", r.status, r.raw)
	}
	wantValidation(t, label(1, otherWS), "label_id")
	wantValidation(t, label(1, "nope"), "label_id")
	wantValidation(t, label(1, 7), "label_id")
	wantValidation(t, e.do(http.MethodPut, "/v1/prompts/"+p.slug+"/versions/"+vid(1), adminKey, map[string]any{}), "label_id")

	renders := []struct{ ref, want string }{
		{p.slug, `"v1"`}, {p.slug + "@staging", `"v2"`}, {p.id + "@STAGING", `"v2"`}, {p.slug + "@canary", `"v3"`},
		{p.slug + "@1", `"v1"`}, {p.slug + "@3", `"v3"`}, {p.slug + "@latest", `"v3"`},
	}
	for _, tc := range renders {
		if got, err := e.render(tc.ref, nil); err != nil || !strings.Contains(got, tc.want) {
			t.Fatalf("render %s: %s %v, want %s", tc.ref, got, err, tc.want)
		}
	}
	for _, ref := range []string{p.slug + "@9", p.slug + "@nolabel", p.slug + "@elsewhere", p.slug + "@"} {
		if _, err := e.render(ref, nil); err == nil || err.(*core.Error).Status != 404 {
			t.Fatalf("render %s: %v, want 404", ref, err)
		}
	}
	// The label moves; null takes it off.
	if r := label(1, staging); r.status != 200 {
		t.Fatalf("move: %s", r.raw)
	}
	if got, _ := e.render(p.slug+"@staging", nil); !strings.Contains(got, `"v1"`) {
		t.Fatalf("after the move: %s", got)
	}
	if v := e.do(http.MethodGet, "/v1/prompts/"+p.slug+"/versions/"+vid(2), adminKey, nil); v.str("label_id") != "" {
		t.Fatalf("the label stayed on v2: %s", v.raw)
	}
	// A label in use cannot be deleted.
	r := e.do(http.MethodDelete, "/v1/labels/"+staging, adminKey, nil)
	wantErr(t, r, http.StatusConflict, core.CodeConflict)
	if !strings.Contains(r.errField("message"), p.slug+"@1") {
		t.Fatalf("409 does not name the version: %s", r.raw)
	}
	if r := label(1, nil); r.status != 200 || r.str("label_id") != "" {
		t.Fatalf("clear: %s", r.raw)
	}
	if r := e.do(http.MethodDelete, "/v1/labels/"+staging, adminKey, nil); r.status != 200 {
		t.Fatalf("delete: %d %s", r.status, r.raw)
	}

	// Workspace keys: they see the organisation's labels and their own
	// workspace's, and change only their workspace's.
	_, keyB := e.wsKey(wsB, promptScopes...)
	if l := e.do(http.MethodGet, "/v1/labels", keyB, nil); l.total() != 1 || l.list()[0]["name"] != "elsewhere" {
		t.Fatalf("team-b list: %s", l.raw)
	}
	org := e.mkLabel(adminKey, map[string]any{"name": "production"})
	if r := e.do(http.MethodGet, "/v1/labels/"+org, keyB, nil); r.status != 200 || r.str("workspace_id") != "" {
		t.Fatalf("org label from team-b: %d %s", r.status, r.raw)
	}
	wantErr(t, e.do(http.MethodPut, "/v1/labels/"+org, keyB, map[string]any{"description": "x"}), 403, core.CodeForbidden)
	wantErr(t, e.do(http.MethodGet, "/v1/labels/"+wsLabel, keyB, nil), 404, core.CodeNotFound)
	if r := e.do(http.MethodPost, "/v1/labels", keyB, map[string]any{"name": "mine"}); r.status != 200 {
		t.Fatalf("team-b create: %s", r.raw)
	} else if got := e.do(http.MethodGet, "/v1/labels/"+r.str("id"), adminKey, nil); got.str("workspace_id") != wsB {
		t.Fatalf("a workspace key's label is its workspace's: %s", got.raw)
	}
}

func TestLabelValidation(t *testing.T) {
	e := newEnv(t)
	id := e.mkLabel(adminKey, map[string]any{"name": "prod", "workspace_id": "default"})
	cases := []struct {
		name, method, path string
		body               any
		status             int
		field              string
	}{
		{"no name", http.MethodPost, "", map[string]any{}, 400, "name"},
		{"name with a space", http.MethodPost, "", map[string]any{"name": "a b"}, 400, "name"},
		{"name with @", http.MethodPost, "", map[string]any{"name": "a@b"}, 400, "name"},
		{"numeric name", http.MethodPost, "", map[string]any{"name": "12"}, 400, "name"},
		{"latest", http.MethodPost, "", map[string]any{"name": "Latest"}, 400, "name"},
		{"long name", http.MethodPost, "", map[string]any{"name": strings.Repeat("a", 65)}, 400, "name"},
		{"unknown field", http.MethodPost, "", map[string]any{"name": "x", "colour": "red"}, 400, "colour"},
		{"another organisation", http.MethodPost, "", map[string]any{"name": "x", "organisation_id": "other"}, 400, "organisation_id"},
		{"unknown workspace", http.MethodPost, "", map[string]any{"name": "x", "workspace_id": "nope"}, 404, ""},
		{"moving", http.MethodPut, "/" + id, map[string]any{"workspace_id": "x"}, 400, "workspace_id"},
		{"same name as a workspace label", http.MethodPost, "", map[string]any{"name": "PROD"}, 409, ""},
		{"unknown label", http.MethodGet, "/nope", nil, 404, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := e.do(tc.method, "/v1/labels"+tc.path, adminKey, tc.body)
			if tc.field != "" {
				wantValidation(t, r, tc.field)
			} else if r.status != tc.status {
				t.Fatalf("got %d %s, want %d", r.status, r.raw, tc.status)
			}
		})
	}
	// An empty name is said to be empty, not taken for a number.
	for _, r := range []resp{
		e.do(http.MethodPost, "/v1/labels", adminKey, map[string]any{"name": " "}),
		e.do(http.MethodPut, "/v1/labels/"+id, adminKey, map[string]any{"name": ""}),
	} {
		if wantValidation(t, r, "name"); !strings.Contains(r.errField("message"), "must not be empty") || strings.Contains(r.errField("message"), "number") {
			t.Fatalf("empty name: %s", r.raw)
		}
	}
	if r := e.do(http.MethodPut, "/v1/labels/"+id, adminKey, map[string]any{"name": "prod-2", "description": "d"}); r.status != 200 || r.str("name") != "prod-2" || r.str("description") != "d" {
		t.Fatalf("update: %d %s", r.status, r.raw)
	}
}

// Collections: a prompt's collection_id must name one of its workspace's
// collections; parents are in the same workspace; a collection in use
// cannot be deleted.
func TestCollections(t *testing.T) {
	e := newEnv(t)
	wsB := e.addWorkspace("team-b")
	parent := e.mkCollection(adminKey, "default", "Support")
	r := e.do(http.MethodPost, "/v1/collections", adminKey, map[string]any{"name": "Billing", "workspace_id": "default", "parent_collection_id": parent})
	if r.status != 200 {
		t.Fatalf("child: %d %s", r.status, r.raw)
	}
	child, childSlug := r.str("id"), r.str("slug")
	colB := e.mkCollection(adminKey, "team-b", "B")
	cases := []struct {
		name, method, path string
		body               any
		field              string
	}{
		{"no name", http.MethodPost, "/v1/collections", map[string]any{"workspace_id": "default"}, "name"},
		{"unknown field", http.MethodPost, "/v1/collections", map[string]any{"name": "x", "workspace_id": "default", "x": 1}, "x"},
		{"parent of another workspace", http.MethodPost, "/v1/collections", map[string]any{"name": "x", "workspace_id": "default", "parent_collection_id": colB}, "parent_collection_id"},
		{"no workspace with an organisation key", http.MethodPost, "/v1/collections", map[string]any{"name": "x"}, "workspace_id"},
		{"rename to nothing", http.MethodPut, "/v1/collections/" + child, map[string]any{"name": ""}, "name"},
		{"prompt in another workspace's collection", http.MethodPost, "/v1/prompts", newPrompt("p", map[string]any{"workspace_id": "default", "collection_id": colB}), "collection_id"},
		{"prompt in an unknown collection", http.MethodPost, "/v1/prompts", newPrompt("p", map[string]any{"workspace_id": "default", "collection_id": "nope"}), "collection_id"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			wantValidation(t, e.do(tc.method, tc.path, adminKey, tc.body), tc.field)
		})
	}
	// A prompt may name its collection by slug; the id is kept.
	p := e.mkPrompt(adminKey, newPrompt("in billing", map[string]any{"workspace_id": "default", "collection_id": childSlug}))
	if g := e.do(http.MethodGet, "/v1/prompts/"+p.id, adminKey, nil); g.str("collection_id") != child {
		t.Fatalf("collection_id: %s", g.raw)
	}
	if l := e.do(http.MethodGet, "/v1/prompts?collection_id="+childSlug, adminKey, nil); l.total() != 1 {
		t.Fatalf("filter by slug: %s", l.raw)
	}
	wantErr(t, e.do(http.MethodDelete, "/v1/collections/"+parent, adminKey, nil), 409, core.CodeConflict)
	r = e.do(http.MethodDelete, "/v1/collections/"+child, adminKey, nil)
	wantErr(t, r, 409, core.CodeConflict)
	if !strings.Contains(r.errField("message"), "prompt "+p.slug) {
		t.Fatalf("409 does not name the prompt: %s", r.raw)
	}
	if u := e.do(http.MethodPut, "/v1/prompts/"+p.slug, adminKey, map[string]any{"patch": true, "collection_id": nil}); u.status != 200 {
		t.Fatalf("leave the collection: %s", u.raw)
	}
	for _, id := range []string{child, parent} {
		if r := e.do(http.MethodDelete, "/v1/collections/"+id, adminKey, nil); r.status != 200 {
			t.Fatalf("delete %s: %d %s", id, r.status, r.raw)
		}
	}
	if r := e.do(http.MethodPut, "/v1/collections/"+colB, adminKey, map[string]any{"name": "B2"}); r.status != 200 || r.str("name") != "B2" {
		t.Fatalf("rename: %s", r.raw)
	}
	_, keyB := e.wsKey(wsB, promptScopes...)
	if l := e.do(http.MethodGet, "/v1/collections", keyB, nil); l.total() != 1 || l.list()[0]["id"] != colB {
		t.Fatalf("team-b list: %s", l.raw)
	}
}

// The partial, label and collection routes check their prompts.* scope,
// and a workspace key does not reach another workspace's records.
func TestPromptPartsScopesAndWorkspaces(t *testing.T) {
	e := newEnv(t)
	wsB := e.addWorkspace("team-b")
	pl := e.mkPartial(adminKey, "team-b", "b", "b")
	col := e.mkCollection(adminKey, "team-b", "b")
	lbl := e.mkLabel(adminKey, map[string]any{"name": "b", "workspace_id": "team-b"})
	p := e.mkPrompt(adminKey, newPrompt("b", map[string]any{"workspace_id": "team-b"}))
	routes := []struct {
		method, path string
		body         any
		scope        string
		crossStatus  int // what a workspace-A key with every scope gets
	}{
		{http.MethodPost, "/v1/prompts/partials", map[string]any{"name": "x", "string": "x", "workspace_id": "team-b"}, "prompts.create", 403},
		{http.MethodGet, "/v1/prompts/partials?workspace_id=team-b", nil, "prompts.list", 403},
		{http.MethodGet, "/v1/prompts/partials/" + pl.slug, nil, "prompts.read", 404},
		{http.MethodGet, "/v1/prompts/partials/" + pl.slug + "/versions", nil, "prompts.read", 404},
		{http.MethodPut, "/v1/prompts/partials/" + pl.slug, map[string]any{"name": "y"}, "prompts.update", 404},
		{http.MethodPut, "/v1/prompts/partials/" + pl.slug + "/makeDefault", map[string]any{"version": 1}, "prompts.publish", 404},
		{http.MethodDelete, "/v1/prompts/partials/" + pl.slug, nil, "prompts.delete", 404},
		{http.MethodPost, "/v1/collections", map[string]any{"name": "x", "workspace_id": "team-b"}, "prompts.create", 403},
		{http.MethodGet, "/v1/collections?workspace_id=team-b", nil, "prompts.list", 403},
		{http.MethodGet, "/v1/collections/" + col, nil, "prompts.read", 404},
		{http.MethodPut, "/v1/collections/" + col, map[string]any{"name": "y"}, "prompts.update", 404},
		{http.MethodDelete, "/v1/collections/" + col, nil, "prompts.delete", 404},
		{http.MethodPost, "/v1/labels", map[string]any{"name": "x", "workspace_id": "team-b"}, "prompts.create", 403},
		{http.MethodGet, "/v1/labels?workspace_id=team-b", nil, "prompts.list", 403},
		{http.MethodGet, "/v1/labels/" + lbl, nil, "prompts.read", 404},
		{http.MethodPut, "/v1/labels/" + lbl, map[string]any{"description": "y"}, "prompts.update", 404},
		{http.MethodDelete, "/v1/labels/" + lbl, nil, "prompts.delete", 404},
		{http.MethodPut, "/v1/prompts/" + p.slug + "/versions/" + p.version, map[string]any{"label_id": lbl}, "prompts.publish", 404},
	}
	_, allA := e.wsKey(e.wsID, promptScopes...)
	for _, tc := range routes {
		t.Run(tc.method+" "+tc.path, func(t *testing.T) {
			var others []string
			for _, s := range promptScopes {
				if s != tc.scope {
					others = append(others, s)
				}
			}
			_, without := e.wsKey(wsB, others...)
			wantErr(t, e.do(tc.method, tc.path, without, tc.body), 403, core.CodeForbidden)
			if r := e.do(tc.method, tc.path, allA, tc.body); r.status != tc.crossStatus {
				t.Fatalf("workspace A key: %d %s, want %d", r.status, r.raw, tc.crossStatus)
			}
		})
	}
}

// Partials, labels and collections survive a restart, and the rebuilt
// snapshot renders with them.
func TestPromptPartsPersistAcrossRestart(t *testing.T) {
	e := newEnv(t)
	pl := e.mkPartial(adminKey, "default", "kept", "partial {{x}}")
	col := e.mkCollection(adminKey, "default", "kept")
	lbl := e.mkLabel(adminKey, map[string]any{"name": "qa"})
	p := e.mkPrompt(adminKey, newPrompt("kept", map[string]any{"workspace_id": "default", "collection_id": col, "string": "v1 {{> " + pl.slug + "}}"}))
	if r := e.do(http.MethodPut, "/v1/prompts/"+p.slug+"/versions/"+p.version, adminKey, map[string]any{"label_id": lbl}); r.status != 200 {
		t.Fatalf("label: %s", r.raw)
	}
	e.reopen()
	for _, ref := range []string{p.slug, p.slug + "@qa"} {
		if got, err := e.render(ref, map[string]any{"x": "1"}); err != nil || !strings.Contains(got, `"v1 partial 1"`) {
			t.Fatalf("render %s after restart: %s %v", ref, got, err)
		}
	}
	for _, path := range []string{"/v1/prompts/partials/" + pl.id, "/v1/collections/" + col, "/v1/labels/" + lbl} {
		if r := e.do(http.MethodGet, path, adminKey, nil); r.status != 200 {
			t.Fatalf("%s after restart: %d %s", path, r.status, r.raw)
		}
	}
}

// Partial, label and collection writes are audited under their own
// resource types.
func TestPromptPartsAreAudited(t *testing.T) {
	a := newAuditEnv(t)
	pl := a.mkPartial(adminKey, "default", "audited", "x")
	a.do(http.MethodPut, "/v1/prompts/partials/"+pl.id+"/makeDefault", adminKey, map[string]any{"version": 1})
	a.mkLabel(adminKey, map[string]any{"name": "audited"})
	a.mkCollection(adminKey, "default", "audited")
	for typ, want := range map[string]string{"prompt-partials": "create update", "labels": "create", "collections": "create"} {
		var got []string
		for _, rec := range a.records("resource_type=" + typ) {
			got = append(got, rec["action"].(string))
		}
		slices.Sort(got)
		if strings.Join(got, " ") != want {
			t.Fatalf("%s audited %q, want %q", typ, got, want)
		}
	}
}

// A label of another organisation is not found, even by an organisation
// key (the list already leaves it out): reading, changing or deleting it.
func TestLabelOfAnotherOrganisation(t *testing.T) {
	e := newEnv(t)
	foreign := store.PromptLabel{ID: "lbl-foreign", Name: "theirs", OrganisationID: "org-other", CreatedBy: "someone"}
	if err := e.st.Update(func(tx store.Tx) error { return tx.Put(store.BucketPromptLabels, foreign.ID, foreign) }); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		method string
		body   map[string]any
	}{{http.MethodGet, nil}, {http.MethodPut, map[string]any{"name": "mine"}}, {http.MethodDelete, nil}} {
		if r := e.do(tc.method, "/v1/labels/"+foreign.ID, adminKey, tc.body); r.status != 404 {
			t.Errorf("%s: %d %s", tc.method, r.status, r.raw)
		}
	}
	if r := e.do(http.MethodGet, "/v1/labels", adminKey, nil); strings.Contains(string(r.raw), foreign.ID) {
		t.Errorf("listed: %s", r.raw)
	}
}
