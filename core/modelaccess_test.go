package core

import (
	"bytes"
	"mime/multipart"
	"net/http"
	"strings"
	"testing"
)

func TestNewModelAccessNilWhenUnrestricted(t *testing.T) {
	for _, tc := range []struct {
		name        string
		onlyEnabled bool
		models      map[string]bool
		wantNil     bool
	}{
		{"no models", false, nil, true},
		{"every listed model enabled", false, map[string]bool{"gpt-4o": true}, true},
		{"a disabled model", false, map[string]bool{"gpt-4o": true, "o3": false}, false},
		{"allow-list, empty", true, nil, false},
		{"allow-list", true, map[string]bool{"gpt-4o": true}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := NewModelAccess("provider @p", "integ", tc.onlyEnabled, tc.models) == nil; got != tc.wantNil {
				t.Fatalf("nil = %v, want %v", got, tc.wantNil)
			}
		})
	}
}

// multipartBody is a form with a file part and a model field after it
// (where the OpenAI SDKs may put it) for each of models that is not "".
func multipartBody(t *testing.T, models ...string) (body []byte, contentType string) {
	t.Helper()
	var b bytes.Buffer
	w := multipart.NewWriter(&b)
	f, err := w.CreateFormFile("file", "speech.mp3")
	if err != nil {
		t.Fatal(err)
	}
	f.Write(bytes.Repeat([]byte{0xff, 0xfb, 0x90}, 4096))
	for _, model := range models {
		if model != "" {
			w.WriteField("model", model)
		}
	}
	w.Close()
	return b.Bytes(), w.FormDataContentType()
}

func TestModelAccessCheck(t *testing.T) {
	denyList := NewModelAccess("provider @prod", "openai-prod", false, map[string]bool{"gpt-4o": false, "gpt-4o-mini": true})
	allowList := NewModelAccess("provider @prod", "openai-prod", true, map[string]bool{"gpt-4o": false, "gpt-4o-mini": true})
	form := func(models ...string) *Request {
		body, ct := multipartBody(t, models...)
		return &Request{Endpoint: EndpointTranscription, Method: http.MethodPost, Body: body, Header: http.Header{"Content-Type": {ct}}}
	}
	chat := func(model string) *Request {
		return &Request{Endpoint: EndpointChatComplete, Method: http.MethodPost, Model: model}
	}
	proxy := func(method string) *Request {
		return &Request{Endpoint: EndpointProxy, Method: method, Path: "/assistants"}
	}
	// azure is a chat completion without model to an Azure OpenAI
	// deployment whose model name is modelName.
	azure := func(endpoint Endpoint, modelName string) *Request {
		return &Request{Endpoint: endpoint, Method: http.MethodPost,
			Target: Target{Provider: AzureProvider, Azure: AzureSettings{DeploymentID: "dep-1", ModelName: modelName}}}
	}
	for _, tc := range []struct {
		name   string
		access *ModelAccess
		req    *Request
		refuse string // "" when allowed, else a part of the message
	}{
		{"no rules", nil, chat("anything"), ""},
		{"deny-list: enabled", denyList, chat("gpt-4o-mini"), ""},
		{"deny-list: unlisted", denyList, chat("o3"), ""},
		{"deny-list: disabled", denyList, chat("gpt-4o"), "model gpt-4o cannot be used through provider @prod: it is disabled on integration openai-prod"},
		{"deny-list: no model", denyList, chat(""), ""},
		{"deny-list: proxy POST", denyList, proxy(http.MethodPost), ""},
		{"deny-list: multipart disabled", denyList, form("gpt-4o"), "disabled on integration openai-prod"},
		{"deny-list: multipart without model", denyList, form(""), ""},
		{"allow-list: enabled", allowList, chat("gpt-4o-mini"), ""},
		{"allow-list: disabled", allowList, chat("gpt-4o"), "disabled on integration openai-prod"},
		{"allow-list: unlisted", allowList, chat("o3"), "only serves the models enabled on it (allow_all_models is false)"},
		{"allow-list: model is case-sensitive", allowList, chat("GPT-4o-mini"), "only serves"},
		{"allow-list: no model", allowList, chat(""), "model is required"},
		{"allow-list: multipart enabled", allowList, form("gpt-4o-mini"), ""},
		{"allow-list: multipart unlisted", allowList, form("whisper-1"), "only serves"},
		{"allow-list: multipart without model", allowList, form(""), "model is required"},
		{"allow-list: proxy GET", allowList, proxy(http.MethodGet), ""},
		{"allow-list: proxy DELETE", allowList, proxy(http.MethodDelete), ""},
		{"allow-list: proxy POST", allowList, proxy(http.MethodPost), "a POST to /v1/assistants through the generic proxy"},
		{"allow-list: proxy PUT", allowList, proxy(http.MethodPut), "generic proxy"},
		{"allow-list: input items", allowList, &Request{Endpoint: EndpointResponseItems, Method: http.MethodGet}, ""},
		// A body without model sent to an Azure deployment: its model name decides.
		{"allow-list: deployment of an enabled model", allowList, azure(EndpointChatComplete, "gpt-4o-mini"), ""},
		{"allow-list: deployment of an unlisted model", allowList, azure(EndpointEmbed, "o3"), "model o3 cannot be used through provider @prod: integration openai-prod only serves"},
		{"allow-list: deployment of a disabled model", allowList, azure(EndpointChatComplete, "gpt-4o"), "disabled on integration openai-prod"},
		{"allow-list: deployment of an unknown model", allowList, azure(EndpointChatComplete, ""), "which model the Azure deployment serves is not known: name it in the body's model or in x-gateway-azure-model-name"},
		{"allow-list: no deployment", allowList, &Request{Endpoint: EndpointChatComplete, Method: http.MethodPost, Target: Target{Provider: AzureProvider, Azure: AzureSettings{ModelName: "gpt-4o-mini"}}}, "model is required"},
		{"allow-list: another provider's model name", allowList, &Request{Endpoint: EndpointChatComplete, Method: http.MethodPost, Target: Target{Provider: "openai", Azure: AzureSettings{DeploymentID: "d", ModelName: "gpt-4o-mini"}}}, "model is required"},
		{"allow-list: deployment, generic proxy", allowList, azure(EndpointProxy, "gpt-4o-mini"), "through the generic proxy"},
		{"deny-list: deployment of a disabled model", denyList, azure(EndpointChatComplete, "gpt-4o"), "disabled on integration openai-prod"},
		{"deny-list: deployment of an unknown model", denyList, azure(EndpointChatComplete, ""), ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.access.Check(tc.req)
			switch {
			case tc.refuse == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case tc.refuse != "" && err == nil:
				t.Fatal("allowed")
			case err != nil && (err.Status != http.StatusForbidden || err.Param != "model" || !strings.Contains(err.Message, tc.refuse)):
				t.Fatalf("got %d %q %q, want 403 on model with %q", err.Status, err.Param, err.Message, tc.refuse)
			}
		})
	}
}

// TestModelAccessCheckModelTwice: a form whose first model field is
// allowed and another is not is refused whatever the rules, since a
// server that takes the last model would serve the other.
func TestModelAccessCheckModelTwice(t *testing.T) {
	body, ct := multipartBody(t, "gpt-4o-mini", "gpt-4o")
	for _, tc := range []struct {
		name   string
		access *ModelAccess
		req    *Request
	}{
		{"deny-list", NewModelAccess("provider @prod", "openai-prod", false, map[string]bool{"gpt-4o": false}), &Request{Endpoint: EndpointTranscription, Method: http.MethodPost}},
		{"allow-list", NewModelAccess("provider @prod", "openai-prod", true, map[string]bool{"gpt-4o-mini": true}), &Request{Endpoint: EndpointImageEdit, Method: http.MethodPost}},
		{"allow-list, generic proxy", NewModelAccess("provider @prod", "openai-prod", true, map[string]bool{"gpt-4o-mini": true}), &Request{Endpoint: EndpointProxy, Method: http.MethodPost, Path: "/images/variations"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.req.Body, tc.req.Header = body, http.Header{"Content-Type": {ct}}
			err := tc.access.Check(tc.req)
			if err == nil || err.Status != http.StatusBadRequest || err.Param != "model" || !strings.Contains(err.Message, "model is given more than once; give it once") {
				t.Fatalf("got %v, want a 400 naming model", err)
			}
		})
	}
}

func TestMultipartModel(t *testing.T) {
	body, ct := multipartBody(t, " whisper-1 \r\n")
	twice, twiceCT := multipartBody(t, "whisper-1", "gpt-4o-transcribe")
	same, sameCT := multipartBody(t, "whisper-1", "whisper-1")
	// A model field before the file, the body cut inside the file.
	var b bytes.Buffer
	w := multipart.NewWriter(&b)
	w.WriteField("model", "whisper-1")
	f, _ := w.CreateFormFile("file", "speech.mp3")
	f.Write(bytes.Repeat([]byte{0xff, 0xfb, 0x90}, 4096))
	w.Close()
	first, firstCT := b.Bytes(), w.FormDataContentType()
	// A file part named model next to the field.
	b = bytes.Buffer{}
	w = multipart.NewWriter(&b)
	w.WriteField("model", "whisper-1")
	f, _ = w.CreateFormFile("model", "model.bin")
	f.Write([]byte("gpt-4o-transcribe"))
	w.Close()
	fileModel, fileModelCT := b.Bytes(), w.FormDataContentType()
	for _, tc := range []struct {
		name, contentType string
		body              []byte
		want              string
		twice             bool // refused: more than one model field
	}{
		{"after the file", ct, body, "whisper-1", false},
		{"no boundary", "multipart/form-data", body, "", false},
		{"another boundary", "multipart/form-data; boundary=nope", body, "", false},
		{"truncated", ct, body[:len(body)/2], "", false},
		{"truncated after the model", firstCT, first[:len(first)/2], "", false},
		{"before the file", firstCT, first, "whisper-1", false},
		{"not multipart", "application/json", []byte(`{"model":"whisper-1"}`), "", false},
		{"two models", twiceCT, twice, "", true},
		{"the same model twice", sameCT, same, "", true},
		{"a file part named model", fileModelCT, fileModel, "", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req := &Request{Body: tc.body, Header: http.Header{"Content-Type": {tc.contentType}}}
			got, err := MultipartModel(req)
			if tc.twice {
				if err == nil || err.Status != http.StatusBadRequest || err.Param != "model" || !strings.Contains(err.Message, "model is given more than once; give it once") {
					t.Fatalf("got %q, %v; want a 400 naming model", got, err)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("got %q, %v; want %q", got, err, tc.want)
			}
		})
	}
}

func TestModelListFiltered(t *testing.T) {
	rules := NewModelAccess("provider @prod", "openai-prod", true, map[string]bool{"gpt-4o": false, "gpt-4o-mini": true, "o3": true})
	for _, tc := range []struct {
		name, body, want string
	}{
		{"OpenAI shape", `{"object":"list","data":[{"id":"gpt-4o","object":"model"},{"id":"gpt-4o-mini","object":"model"},{"id":"whisper-1"},{"id":"o3"}]}`,
			`{"data":[{"id":"gpt-4o-mini","object":"model"},{"id":"o3"}],"object":"list"}`},
		{"nothing allowed", `{"data":[{"id":"gpt-4o"}],"has_more":false}`, `{"data":[],"has_more":false}`},
		{"another shape", `{"models":[{"name":"models/gemini-2.5-pro"}]}`, `{"models":[{"name":"models/gemini-2.5-pro"}]}`},
		{"an entry without an id", `{"data":[{"name":"x"},{"id":"gpt-4o"}]}`, `{"data":[{"name":"x"},{"id":"gpt-4o"}]}`},
		{"not JSON", `<html>`, `<html>`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := string(rules.FilterList([]byte(tc.body))); got != tc.want {
				t.Fatalf("got %s, want %s", got, tc.want)
			}
		})
	}
	for _, tc := range []struct {
		name   string
		access *ModelAccess
		req    Request
		want   bool
	}{
		{"GET /models", rules, Request{Endpoint: EndpointProxy, Method: http.MethodGet, Path: "/models"}, true},
		{"GET /models/", rules, Request{Endpoint: EndpointProxy, Method: http.MethodGet, Path: "/models/"}, true},
		{"one model", rules, Request{Endpoint: EndpointProxy, Method: http.MethodGet, Path: "/models/gpt-4o"}, false},
		{"no rules", nil, Request{Endpoint: EndpointProxy, Method: http.MethodGet, Path: "/models"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.access.FiltersList(&tc.req); got != tc.want {
				t.Fatalf("got %v", got)
			}
		})
	}
}
