package gemini

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

// embedRequest is an embeddings request of body, whose model it reads.
func embedRequest(t *testing.T, body string) *core.Request {
	var in struct{ Model string }
	if err := json.Unmarshal([]byte(body), &in); err != nil {
		t.Fatal(err)
	}
	return &core.Request{Endpoint: core.EndpointEmbed, Method: "POST", Path: "/embeddings", Model: in.Model, Body: []byte(body)}
}

// texts is a JSON array of n texts.
func texts(n int) string {
	return `[` + strings.TrimSuffix(strings.Repeat(`"t",`, n), ",") + `]`
}

// TestEmbedBuildRequest: an embeddings request goes to the model's
// batchEmbedContents, one request per text (the model as models/{model}),
// dimensions as each one's outputDimensionality; token ids, no texts, more
// than 100 and a model name leaving its path segment are a 400 naming the
// field, before any call.
func TestEmbedBuildRequest(t *testing.T) {
	p := New()
	const models = "https://generativelanguage.googleapis.com/v1beta/models/"
	one := func(text string, dims string) string {
		r := `{"model":"models/gemini-embedding-001","content":{"parts":[{"text":"` + text + `"}]}`
		if dims != "" {
			r += `,"outputDimensionality":` + dims
		}
		return r + `}`
	}
	for _, tc := range []struct {
		name, body string
		url, want  string // the upstream URL and body
		param      string // of the 400, when refused
	}{
		{"one text", `{"model":"gemini-embedding-001","input":"hi"}`, models + "gemini-embedding-001:batchEmbedContents",
			`{"requests":[` + one("hi", "") + `]}`, ""},
		{"texts, dimensions, models/ prefix, float", `{"model":"models/gemini-embedding-001","input":["a","b"],"dimensions":768,"encoding_format":"float"}`,
			models + "gemini-embedding-001:batchEmbedContents", `{"requests":[` + one("a", "768") + `,` + one("b", "768") + `]}`, ""},
		{"base64", `{"model":"gemini-embedding-001","input":["a"],"encoding_format":"base64"}`, models + "gemini-embedding-001:batchEmbedContents",
			`{"requests":[` + one("a", "") + `]}`, ""},
		{"100 texts", `{"model":"gemini-embedding-001","input":` + texts(100) + `}`, models + "gemini-embedding-001:batchEmbedContents",
			`{"requests":[` + strings.TrimSuffix(strings.Repeat(one("t", "")+",", 100), ",") + `]}`, ""},

		{"token ids", `{"model":"gemini-embedding-001","input":[1,2,3]}`, "", "", "input"},
		{"lists of token ids", `{"model":"gemini-embedding-001","input":[[1,2],[3]]}`, "", "", "input"},
		{"no texts", `{"model":"gemini-embedding-001","input":[]}`, "", "", "input"},
		{"101 texts", `{"model":"gemini-embedding-001","input":` + texts(101) + `}`, "", "", "input"},
		{"no model", `{"input":"hi"}`, "", "", "model"},
		{"model with a segment", `{"model":"gemini-embedding-001/../x","input":"hi"}`, "", "", "model"},
		{"model with a method", `{"model":"gemini-embedding-001:embedContent","input":"hi"}`, "", "", "model"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tg := core.Target{Provider: Name, APIKey: "goog-key"}
			hr, err := p.BuildRequest(context.Background(), embedRequest(t, tc.body), &tg)
			if tc.param != "" {
				ce, ok := err.(*core.Error)
				if !ok || ce.Status != 400 || ce.Param != tc.param {
					t.Fatalf("%v, want a 400 naming %s", err, tc.param)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(hr.Body)
			if hr.Method != "POST" || hr.URL.String() != tc.url || string(body) != tc.want ||
				hr.Header.Get("X-Goog-Api-Key") != "goog-key" || hr.Header.Get("Content-Type") != "application/json" {
				t.Errorf("%s %s %v %s", hr.Method, hr.URL, hr.Header, body)
			}
		})
	}
}

// fakeBatchEmbed answers batchEmbedContents as Gemini does: per request,
// its text's length and -0.5 as its values; model "absent" is Gemini's
// 404, "broken" an answer without embeddings, "short" one embedding
// fewer than asked for.
func fakeBatchEmbed(t *testing.T) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		switch {
		case r.Method != "POST" || !strings.HasSuffix(r.URL.Path, ":batchEmbedContents") || r.Header.Get("X-Goog-Api-Key") != "goog-key":
			w.WriteHeader(400)
			io.WriteString(w, `{"error":{"code":400,"message":"unexpected `+r.Method+` `+r.URL.Path+`","status":"INVALID_ARGUMENT"}}`)
			return
		case strings.Contains(r.URL.Path, "absent"):
			w.WriteHeader(404)
			io.WriteString(w, `{"error":{"code":404,"message":"models/absent is not found for API version v1beta, or is not supported for embedContent.","status":"NOT_FOUND"}}`)
			return
		case strings.Contains(r.URL.Path, "broken"):
			io.WriteString(w, `{}`)
			return
		}
		var in batchEmbedRequest
		if err := json.NewDecoder(r.Body).Decode(&in); err != nil {
			w.WriteHeader(400)
			return
		}
		if strings.Contains(r.URL.Path, "short") {
			in.Requests = in.Requests[1:]
		}
		embs := make([]string, len(in.Requests))
		for i, req := range in.Requests {
			n, _ := json.Marshal(len(req.Content.Parts[0].Text))
			embs[i] = `{"values":[` + string(n) + `,-0.5]}`
		}
		io.WriteString(w, `{"embeddings":[`+strings.Join(embs, ",")+`]}`)
	}))
	t.Cleanup(srv.Close)
	return srv
}

// TestEmbedRoundTrip: the request built, sent to a fake Gemini and its
// answer translated: OpenAI's list in input order (base64 when asked, as
// little-endian float32s), usage zero; Gemini's error body the gateway's,
// with its status; an answer without embeddings, or with fewer than the
// texts, an error.
func TestEmbedRoundTrip(t *testing.T) {
	p := New()
	srv := fakeBatchEmbed(t)
	const usage = `"usage":{"prompt_tokens":0,"total_tokens":0}`
	for _, tc := range []struct {
		name, body string
		status     int
		want       string // the translated answer
		fails      bool   // the translation fails
	}{
		{"one text", `{"model":"gemini-embedding-001","input":"four"}`, 200,
			`{"object":"list","data":[{"object":"embedding","index":0,"embedding":[4,-0.5]}],"model":"gemini-embedding-001",` + usage + `}`, false},
		{"texts in order", `{"model":"gemini-embedding-001","input":["a","bb","ccc"],"dimensions":2}`, 200,
			`{"object":"list","data":[{"object":"embedding","index":0,"embedding":[1,-0.5]},{"object":"embedding","index":1,"embedding":[2,-0.5]},{"object":"embedding","index":2,"embedding":[3,-0.5]}],"model":"gemini-embedding-001",` + usage + `}`, false},
		{"base64", `{"model":"gemini-embedding-001","input":"ab","encoding_format":"base64"}`, 200,
			`{"object":"list","data":[{"object":"embedding","index":0,"embedding":"AAAAQAAAAL8="}],"model":"gemini-embedding-001",` + usage + `}`, false},
		{"gemini's error", `{"model":"absent","input":"hi"}`, 404,
			`{"error":{"message":"models/absent is not found for API version v1beta, or is not supported for embedContent.","type":"NOT_FOUND","param":null,"code":null}}`, false},
		{"no embeddings", `{"model":"broken","input":"hi"}`, 200, "", true},
		{"fewer embeddings than texts", `{"model":"short","input":["a","b"]}`, 200, "", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req := embedRequest(t, tc.body)
			hr, err := p.BuildRequest(context.Background(), req, &core.Target{Provider: Name, APIKey: "goog-key", BaseURL: srv.URL + "/v1beta"})
			if err != nil {
				t.Fatal(err)
			}
			hresp, err := srv.Client().Do(hr)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(hresp.Body)
			hresp.Body.Close()
			resp := &core.Response{Status: hresp.StatusCode, Header: hresp.Header, Body: body}
			err = p.TranslateResponse(req, resp)
			if tc.fails {
				if err == nil {
					t.Errorf("translated %s", resp.Body)
				}
				return
			}
			if err != nil || resp.Status != tc.status || string(resp.Body) != tc.want || resp.Header.Get("Content-Type") != "application/json" {
				t.Errorf("%v %d %s\nwant %d %s", err, resp.Status, resp.Body, tc.status, tc.want)
			}
		})
	}
}
