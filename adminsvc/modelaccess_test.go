package adminsvc_test

import (
	"bytes"
	"io"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/llm-gateway/gateway/core"
)

// transcriptionForm is a multipart transcription body naming model ("" for
// none) after the file, and its content type.
func transcriptionForm(t *testing.T, model string) (string, string) {
	t.Helper()
	var b bytes.Buffer
	w := multipart.NewWriter(&b)
	f, err := w.CreateFormFile("file", "a.mp3")
	if err != nil {
		t.Fatal(err)
	}
	f.Write([]byte("ID3 not really audio"))
	if model != "" {
		w.WriteField("model", model)
	}
	w.Close()
	return b.String(), w.FormDataContentType()
}

// TestIntegrationModelsAPI: allow_all_models is set with the models, shown
// with them, validated, and kept across a restart.
func TestIntegrationModelsAPI(t *testing.T) {
	m := newMgEnv(t)
	m.integration("openai-prod", providerKey, nil)
	path := "/v1/integrations/openai-prod/models"
	if r := m.ok(http.MethodGet, path, adminKey, nil); r.body["allow_all_models"] != true || r.total() != 0 {
		t.Fatalf("default: %s", r.raw)
	}
	for _, tc := range []struct {
		name  string
		body  map[string]any
		field string
	}{
		{"nothing", map[string]any{}, "models: is required (unless allow_all_models is given)"},
		{"not a boolean", map[string]any{"allow_all_models": "no"}, "allow_all_models: must be true or false"},
		{"models not an array", map[string]any{"allow_all_models": false, "models": "gpt-4o"}, "models: must be an array"},
		{"unknown field", map[string]any{"allow_all": false}, "allow_all: unknown field"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := m.do(http.MethodPut, path, adminKey, tc.body)
			wantErr(t, r, http.StatusBadRequest, core.CodeValidation)
			if !strings.Contains(r.errField("message"), tc.field) {
				t.Fatalf("%q not named: %s", tc.field, r.raw)
			}
		})
	}
	if r := m.ok(http.MethodGet, path, adminKey, nil); r.body["allow_all_models"] != true {
		t.Fatalf("a refused PUT changed it: %s", r.raw)
	}
	m.ok(http.MethodPut, path, adminKey, map[string]any{"allow_all_models": false})
	m.ok(http.MethodPut, path, adminKey, map[string]any{"models": []any{map[string]any{"slug": "gpt-4o-mini"}}}) // leaves allow_all_models
	m.reopenManaged()
	r := m.ok(http.MethodGet, path, adminKey, nil)
	if r.body["allow_all_models"] != false || r.total() != 1 || r.list()[0]["enabled"] != true {
		t.Fatalf("after restart: %s", r.raw)
	}
	// The rules still hold after the restart.
	if r := m.send(http.MethodPost, "/v1/chat/completions", "application/json", `{"model":"o3","messages":[{"role":"user","content":"hi"}]}`, adminKey, "x-gateway-provider", "@openai-prod"); r.status != http.StatusForbidden {
		t.Fatalf("after restart, an unlisted model: %d %s", r.status, r.raw)
	}
}

// TestIntegrationModelsEnforced: the models an integration disables, or
// does not enable under allow_all_models: false, are refused (403 on
// model) on requests through its providers, before any call; the other
// models, and other targets, go through.
func TestIntegrationModelsEnforced(t *testing.T) {
	m := newMgEnv(t)
	m.integration("openai-prod", providerKey, nil)
	vk := m.ok(http.MethodPost, "/v1/virtual-keys", adminKey, map[string]any{"name": "vk", "provider": "openai", "key": "sk-virtual-key-5678",
		"workspace_id": "default", "configurations": map[string]any{"custom_host": m.up.srv.URL + "/v1"}}).str("slug")
	_, wsKey := m.wsKey(m.wsID, core.ScopeCompletionsWrite)
	models := "/v1/integrations/openai-prod/models"
	m.ok(http.MethodPut, models, adminKey, map[string]any{"models": []any{
		map[string]any{"slug": "gpt-4o", "enabled": false}, map[string]any{"slug": "gpt-4o-mini"}}})

	const jsonCT = "application/json"
	chatOf := func(model string) string {
		return `{"model":"` + model + `","messages":[{"role":"user","content":"hi"}]}`
	}
	type call struct {
		method, path, contentType, body string
		headers                         []string
	}
	via := []string{"x-gateway-provider", "@openai-prod"}
	chat := func(model string, headers ...string) call {
		if headers == nil {
			headers = via
		}
		return call{http.MethodPost, "/v1/chat/completions", jsonCT, chatOf(model), headers}
	}
	form := func(model string) call {
		body, ct := transcriptionForm(t, model)
		return call{http.MethodPost, "/v1/audio/transcriptions", ct, body, via}
	}
	cfg := func(config string) []string { return []string{"x-gateway-config", config} }
	check := func(t *testing.T, c call, refuse string) {
		t.Helper()
		before := m.up.count()
		r := m.send(c.method, c.path, c.contentType, c.body, wsKey, c.headers...)
		if refuse == "" {
			if r.status != http.StatusOK || m.up.count() != before+1 {
				t.Fatalf("want it through: %d %s", r.status, r.raw)
			}
			return
		}
		if r.status != http.StatusForbidden || r.errField("param") != "model" || !strings.Contains(r.errField("message"), refuse) || m.up.count() != before {
			t.Fatalf("want a 403 on model with %q before any call: %d %s (%d calls)", refuse, r.status, r.raw, m.up.count()-before)
		}
	}

	t.Run("deny-list", func(t *testing.T) {
		for _, tc := range []struct {
			name   string
			call   call
			refuse string
		}{
			{"enabled model", chat("gpt-4o-mini"), ""},
			{"unlisted model", chat("o3"), ""},
			{"disabled model", chat("gpt-4o"), "model gpt-4o cannot be used through provider @openai-prod: it is disabled on integration openai-prod"},
			{"disabled model in a config", chat("gpt-4o", cfg(`{"provider":"@openai-prod"}`)...), "disabled"},
			{"disabled model set by override_params", chat("gpt-4o-mini", cfg(`{"provider":"@openai-prod","override_params":{"model":"gpt-4o"}}`)...), "disabled"},
			{"override_params naming an enabled model", chat("gpt-4o", cfg(`{"provider":"@openai-prod","override_params":{"model":"gpt-4o-mini"}}`)...), ""},
			{"fallback past a disabled model", chat("gpt-4o", cfg(`{"strategy":{"mode":"fallback"},"targets":[{"provider":"@openai-prod"},{"provider":"@openai-prod","override_params":{"model":"gpt-4o-mini"}}]}`)...), ""},
			{"a virtual key has no rules", chat("gpt-4o", "x-gateway-virtual-key", vk), ""},
			{"the caller's own key has no rules", chat("gpt-4o", "x-gateway-provider", "openai", "x-gateway-custom-host", m.up.srv.URL+"/v1", "Authorization", "Bearer sk-own"), ""},
			{"multipart, disabled model", form("gpt-4o"), "disabled"},
			{"multipart, no model", form(""), ""},
			{"proxy POST", call{http.MethodPost, "/v1/assistants", jsonCT, `{"model":"gpt-4o"}`, via}, ""},
		} {
			t.Run(tc.name, func(t *testing.T) { check(t, tc.call, tc.refuse) })
		}
	})

	m.ok(http.MethodPut, models, adminKey, map[string]any{"allow_all_models": false})
	t.Run("allow-list", func(t *testing.T) {
		for _, tc := range []struct {
			name   string
			call   call
			refuse string
		}{
			{"enabled model", chat("gpt-4o-mini"), ""},
			{"disabled model", chat("gpt-4o"), "disabled on integration openai-prod"},
			{"unlisted model", chat("o3"), "integration openai-prod only serves the models enabled on it (allow_all_models is false)"},
			{"embeddings, unlisted", call{http.MethodPost, "/v1/embeddings", jsonCT, `{"model":"text-embedding-3-small","input":"hi"}`, via}, "only serves"},
			{"moderation without a model", call{http.MethodPost, "/v1/moderations", jsonCT, `{"input":"hi"}`, via}, "model is required"},
			{"moderation, enabled model", call{http.MethodPost, "/v1/moderations", jsonCT, `{"input":"hi","model":"gpt-4o-mini"}`, via}, ""},
			{"speech, unlisted", call{http.MethodPost, "/v1/audio/speech", jsonCT, `{"model":"tts-1","input":"hi","voice":"alloy"}`, via}, "only serves"},
			{"multipart, enabled model", form("gpt-4o-mini"), ""},
			{"multipart, unlisted model", form("whisper-1"), "only serves"},
			{"multipart, no model", form(""), "model is required"},
			{"proxy GET", call{http.MethodGet, "/v1/models", "", "", via}, ""},
			{"proxy DELETE", call{http.MethodDelete, "/v1/files/file-1", "", "", via}, ""},
			{"proxy POST", call{http.MethodPost, "/v1/assistants", jsonCT, `{"model":"gpt-4o-mini"}`, via}, "the gateway does not read which model a POST to /v1/assistants through the generic proxy uses"},
			{"input items", call{http.MethodGet, "/v1/responses/resp_1/input_items", "", "", via}, ""},
		} {
			t.Run(tc.name, func(t *testing.T) { check(t, tc.call, tc.refuse) })
		}
	})

	m.ok(http.MethodPut, models, adminKey, map[string]any{"allow_all_models": true})
	t.Run("allow_all_models again", func(t *testing.T) { check(t, chat("o3"), "") })
	m.ok(http.MethodDelete, models+"?slugs=gpt-4o", adminKey, nil)
	t.Run("disabled model removed", func(t *testing.T) { check(t, chat("gpt-4o"), "") })
}

// TestIntegrationModelsAzureDeployment: a body without model sent to an
// azure-openai integration's deployment is checked against the
// integration's rules by the deployment's model name
// (x-gateway-azure-model-name); under allow_all_models: false, a deployment
// whose model is not known is refused, never let through.
func TestIntegrationModelsAzureDeployment(t *testing.T) {
	m := newMgEnv(t)
	m.integration("azure-prod", providerKey, map[string]any{"ai_provider_id": "azure-openai", "configurations": map[string]any{
		"custom_host": m.up.srv.URL, "azure_resource_name": "my-res", "azure_deployment_id": "dep-1"}})
	m.ok(http.MethodPut, "/v1/integrations/azure-prod/models", adminKey, map[string]any{"allow_all_models": false, "models": []any{
		map[string]any{"slug": "gpt-4o-mini"}, map[string]any{"slug": "gpt-4o", "enabled": false}}})
	const noModel = `{"messages":[{"role":"user","content":"hi"}]}`
	for _, tc := range []struct {
		name, body, modelName, refuse string
	}{
		{"an enabled model's deployment", noModel, "gpt-4o-mini", ""},
		{"a disabled model's deployment", noModel, "gpt-4o", "model gpt-4o cannot be used through provider @azure-prod: it is disabled"},
		{"an unlisted model's deployment", noModel, "o3", "only serves the models enabled on it"},
		{"a deployment whose model is not known", noModel, "", "which model the Azure deployment serves is not known"},
		{"the body's model, as ever", `{"model":"gpt-4o-mini","messages":[{"role":"user","content":"hi"}]}`, "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := m.up.count()
			r := m.send(http.MethodPost, "/v1/chat/completions", "application/json", tc.body, adminKey,
				"x-gateway-provider", "@azure-prod", "x-gateway-azure-model-name", tc.modelName)
			if tc.refuse == "" {
				if r.status != http.StatusOK || m.up.count() != before+1 || m.up.last(t).URL.Path != "/openai/deployments/dep-1/chat/completions" {
					t.Fatalf("want it through: %d %s", r.status, r.raw)
				}
				return
			}
			if r.status != http.StatusForbidden || r.errField("param") != "model" || !strings.Contains(r.errField("message"), tc.refuse) || m.up.count() != before {
				t.Fatalf("want a 403 on model with %q before any call: %d %s", tc.refuse, r.status, r.raw)
			}
		})
	}
}

// TestIntegrationModelsList: GET /v1/models through a provider whose
// integration has model rules lists only the models they allow.
func TestIntegrationModelsList(t *testing.T) {
	m := newMgEnv(t)
	lister := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"object":"list","data":[{"id":"gpt-4o","object":"model"},{"id":"gpt-4o-mini","object":"model"},{"id":"o3","object":"model"}]}`)
	}))
	t.Cleanup(lister.Close)
	m.ok(http.MethodPost, "/v1/integrations", adminKey, map[string]any{"name": "Lister", "ai_provider_id": "openai", "slug": "lister", "key": providerKey,
		"configurations": map[string]any{"custom_host": lister.URL + "/v1"}})
	list := func() []string {
		t.Helper()
		r := m.send(http.MethodGet, "/v1/models", "", "", adminKey, "x-gateway-provider", "@lister")
		if r.status != http.StatusOK || r.header.Get("Content-Length") != strconv.Itoa(len(r.raw)) {
			t.Fatalf("list: %d %q %s", r.status, r.header.Get("Content-Length"), r.raw)
		}
		var ids []string
		for _, d := range r.list() {
			ids = append(ids, d["id"].(string))
		}
		return ids
	}
	if got := list(); !slices.Equal(got, []string{"gpt-4o", "gpt-4o-mini", "o3"}) {
		t.Fatalf("without rules: %v", got)
	}
	m.ok(http.MethodPut, "/v1/integrations/lister/models", adminKey, map[string]any{"models": []any{map[string]any{"slug": "gpt-4o", "enabled": false}}})
	if got := list(); !slices.Equal(got, []string{"gpt-4o-mini", "o3"}) {
		t.Fatalf("gpt-4o disabled: %v", got)
	}
	m.ok(http.MethodPut, "/v1/integrations/lister/models", adminKey, map[string]any{"models": []any{map[string]any{"slug": "o3"}}, "allow_all_models": false})
	if got := list(); !slices.Equal(got, []string{"o3"}) {
		t.Fatalf("allow-list: %v", got)
	}
}
