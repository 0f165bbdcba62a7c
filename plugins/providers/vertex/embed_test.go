package vertex

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/llm-gateway/gateway/core"
)

// embedTarget is a vertex-ai target with a caller's token, at base.
func embedTarget(base string) *core.Target {
	return &core.Target{Provider: Name, BaseURL: base, APIKey: "ya29.token",
		Vertex: core.VertexSettings{ProjectID: "my-project-1", Region: "us-central1"}}
}

// embedRequest is an embeddings request of body, whose model it reads.
func embedRequest(t *testing.T, body string) *core.Request {
	var in struct{ Model string }
	if err := json.Unmarshal([]byte(body), &in); err != nil {
		t.Fatal(err)
	}
	return &core.Request{Endpoint: core.EndpointEmbed, Model: in.Model, Body: []byte(body)}
}

// texts is a JSON array of n texts.
func texts(n int) string {
	return `[` + strings.TrimSuffix(strings.Repeat(`"t",`, n), ",") + `]`
}

// TestEmbedBuildRequest: an embeddings request goes to the model's predict
// method of publisher google, one instance per text, dimensions as
// outputDimensionality; what Vertex AI cannot take is a 400 naming the
// field: a model that is not one of Google's text embedding models (a chat
// model, another publisher's, multimodalembedding), a model name leaving
// its path segment, token ids, no texts or too many.
func TestEmbedBuildRequest(t *testing.T) {
	p := New()
	const models = "https://us-central1-aiplatform.googleapis.com/v1/projects/my-project-1/locations/us-central1/publishers/google/models/"
	for _, tc := range []struct {
		name, body string
		url, want  string // the upstream URL and body
		param      string // of the 400, when refused
	}{
		{"one text", `{"model":"text-embedding-005","input":"hi"}`, models + "text-embedding-005:predict", `{"instances":[{"content":"hi"}]}`, ""},
		{"texts and dimensions", `{"model":"text-multilingual-embedding-002","input":["a","b"],"dimensions":256}`, models + "text-multilingual-embedding-002:predict",
			`{"instances":[{"content":"a"},{"content":"b"}],"parameters":{"outputDimensionality":256}}`, ""},
		{"gemini-embedding, one text", `{"model":"gemini-embedding-001","input":["x"],"encoding_format":"base64"}`, models + "gemini-embedding-001:predict",
			`{"instances":[{"content":"x"}]}`, ""},
		{"textembedding-gecko", `{"model":"textembedding-gecko@003","input":"hi"}`, models + "textembedding-gecko@003:predict", `{"instances":[{"content":"hi"}]}`, ""},
		{"250 texts", `{"model":"text-embedding-005","input":` + texts(250) + `}`, models + "text-embedding-005:predict",
			`{"instances":[` + strings.TrimSuffix(strings.Repeat(`{"content":"t"},`, 250), ",") + `]}`, ""},

		{"a chat model", `{"model":"gemini-2.5-flash","input":"hi"}`, "", "", "model"},
		{"a claude model", `{"model":"claude-sonnet-4@20250514","input":"hi"}`, "", "", "model"},
		{"another publisher's embedding model", `{"model":"claude-embedding-1","input":"hi"}`, "", "", "model"},
		{"an open embedding model", `{"model":"multilingual-e5-embedding","input":"hi"}`, "", "", "model"},
		{"multimodalembedding", `{"model":"multimodalembedding@001","input":"hi"}`, "", "", "model"},
		{"model with a segment", `{"model":"text-embedding-005/../../x","input":"hi"}`, "", "", "model"},
		{"model with a method", `{"model":"text-embedding-005:streamPredict","input":"hi"}`, "", "", "model"},
		{"model with an escape", `{"model":"text-embedding-005%2F..","input":"hi"}`, "", "", "model"},
		{"token ids", `{"model":"text-embedding-005","input":[1,2,3]}`, "", "", "input"},
		{"lists of token ids", `{"model":"text-embedding-005","input":[[1,2],[3]]}`, "", "", "input"},
		{"no texts", `{"model":"text-embedding-005","input":[]}`, "", "", "input"},
		{"251 texts", `{"model":"text-embedding-005","input":` + texts(251) + `}`, "", "", "input"},
		{"two texts to gemini-embedding", `{"model":"gemini-embedding-001","input":["a","b"]}`, "", "", "input"},
	} {
		hr, err := p.BuildRequest(context.Background(), embedRequest(t, tc.body), embedTarget(""))
		if tc.param != "" {
			ce, ok := err.(*core.Error)
			if !ok || ce.Status != 400 || ce.Param != tc.param {
				t.Errorf("%s: %v, want a 400 naming %s", tc.name, err, tc.param)
			}
			continue
		}
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		body, _ := io.ReadAll(hr.Body)
		if hr.Method != "POST" || hr.URL.String() != tc.url || string(body) != tc.want || hr.Header.Get("Authorization") != "Bearer ya29.token" {
			t.Errorf("%s: %s %s %v %s", tc.name, hr.Method, hr.URL, hr.Header, body)
		}
	}
}

// fakePredict answers predict as Vertex AI does: per instance, its
// content's length as the one number of its embedding and as its token
// count; model "absent-embedding" is Google's 404, "broken-embedding"
// an answer without predictions.
func fakePredict(t *testing.T) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		switch {
		case !strings.HasSuffix(r.URL.Path, ":predict") || r.Header.Get("Authorization") != "Bearer ya29.token":
			w.WriteHeader(400)
			io.WriteString(w, `{"error":{"code":400,"message":"unexpected `+r.URL.Path+`","status":"INVALID_ARGUMENT"}}`)
			return
		case strings.Contains(r.URL.Path, "absent-embedding"):
			w.WriteHeader(404)
			io.WriteString(w, `{"error":{"code":404,"message":"Publisher Model text-embedding-absent was not found.","status":"NOT_FOUND"}}`)
			return
		case strings.Contains(r.URL.Path, "broken-embedding"):
			io.WriteString(w, `{"predictions":[],"metadata":{}}`)
			return
		}
		var in predictRequest
		if err := json.NewDecoder(r.Body).Decode(&in); err != nil {
			w.WriteHeader(400)
			return
		}
		preds := make([]string, len(in.Instances))
		for i, inst := range in.Instances {
			n, _ := json.Marshal(len(inst.Content))
			preds[i] = `{"embeddings":{"values":[` + string(n) + `,-0.5],"statistics":{"token_count":` + string(n) + `,"truncated":false}}}`
		}
		io.WriteString(w, `{"predictions":[`+strings.Join(preds, ",")+`],"metadata":{"billableCharacterCount":1}}`)
	}))
	t.Cleanup(srv.Close)
	return srv
}

// TestEmbedRoundTrip: the request built, sent to a fake Vertex AI and its
// answer translated: OpenAI's list in input order (base64 when asked, as
// little-endian float32s), usage the sum of the token counts; Google's
// error body the gateway's, with its status; an answer without predictions
// an error.
func TestEmbedRoundTrip(t *testing.T) {
	p := New()
	srv := fakePredict(t)
	for _, tc := range []struct {
		name, body string
		status     int
		want       string // the translated answer
		fails      bool   // the translation fails
	}{
		{"one text", `{"model":"text-embedding-005","input":"four"}`, 200,
			`{"object":"list","data":[{"object":"embedding","index":0,"embedding":[4,-0.5]}],"model":"text-embedding-005","usage":{"prompt_tokens":4,"total_tokens":4}}`, false},
		{"texts in order", `{"model":"text-embedding-005","input":["a","bb","ccc"],"encoding_format":"float"}`, 200,
			`{"object":"list","data":[{"object":"embedding","index":0,"embedding":[1,-0.5]},{"object":"embedding","index":1,"embedding":[2,-0.5]},{"object":"embedding","index":2,"embedding":[3,-0.5]}],"model":"text-embedding-005","usage":{"prompt_tokens":6,"total_tokens":6}}`, false},
		{"base64", `{"model":"gemini-embedding-001","input":"ab","encoding_format":"base64"}`, 200,
			`{"object":"list","data":[{"object":"embedding","index":0,"embedding":"AAAAQAAAAL8="}],"model":"gemini-embedding-001","usage":{"prompt_tokens":2,"total_tokens":2}}`, false},
		{"google's error", `{"model":"text-embedding-absent-embedding","input":"hi"}`, 404,
			`{"error":{"message":"Publisher Model text-embedding-absent was not found.","type":"NOT_FOUND","param":null,"code":null}}`, false},
		{"no predictions", `{"model":"text-embedding-broken-embedding","input":"hi"}`, 200, "", true},
	} {
		req := embedRequest(t, tc.body)
		hr, err := p.BuildRequest(context.Background(), req, embedTarget(srv.URL))
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		hresp, err := srv.Client().Do(hr)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		body, _ := io.ReadAll(hresp.Body)
		hresp.Body.Close()
		resp := &core.Response{Status: hresp.StatusCode, Header: hresp.Header, Body: body}
		err = p.TranslateResponse(req, resp)
		if tc.fails {
			if err == nil {
				t.Errorf("%s: translated %s", tc.name, resp.Body)
			}
			continue
		}
		if err != nil || resp.Status != tc.status || string(resp.Body) != tc.want || resp.Header.Get("Content-Type") != "application/json" {
			t.Errorf("%s: %v %d %s\nwant %d %s", tc.name, err, resp.Status, resp.Body, tc.status, tc.want)
		}
	}
}
