package server_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/llm-gateway/gateway/core"
	"github.com/llm-gateway/gateway/core/awsauth/awsauthtest"
	"github.com/llm-gateway/gateway/core/awsstream/awsstreamtest"
)

// fakeBedrock answers Converse and ConverseStream for requests signed by
// AKIDBEDROCK (secret bedrock-secret) or AKIDSTORED (stored-secret) for
// eu-west-1 (us-east-1 for the stored key); a request whose text is
// "fail" gets Bedrock's validation error.
func fakeBedrock(t *testing.T) http.Handler {
	secrets := map[string][2]string{"AKIDBEDROCK": {"bedrock-secret", "eu-west-1"}, "AKIDSTORED": {"stored-secret", "us-east-1"}}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		keyID := strings.TrimPrefix(strings.SplitN(r.Header.Get("Authorization"), "/", 2)[0], "AWS4-HMAC-SHA256 Credential=")
		s, known := secrets[keyID]
		if err := awsauthtest.Verify(r, body, keyID, s[0], s[1], "bedrock"); !known || err != nil {
			w.Header().Set("X-Amzn-Errortype", "InvalidSignatureException:http://internal.amazon.com/coral/com.amazon.coral.service/")
			w.WriteHeader(403)
			io.WriteString(w, `{"message":"The request signature we calculated does not match the signature you provided."}`)
			return
		}
		w.Header().Set("X-Amzn-Requestid", "req-1")
		if strings.Contains(string(body), `"text":"fail"`) {
			w.Header().Set("Content-Type", "application/json")
			w.Header().Set("X-Amzn-Errortype", "ValidationException:http://internal.amazon.com/coral/com.amazon.bedrock/")
			w.WriteHeader(400)
			io.WriteString(w, `{"message":"A conversation must start with a user message."}`)
			return
		}
		if answerInvoke(w, r, body) {
			return
		}
		if strings.HasSuffix(r.URL.Path, "/converse-stream") {
			w.Header().Set("Content-Type", core.ContentTypeAWSEventStream)
			for _, f := range [][2]string{
				{"messageStart", `{"role":"assistant"}`},
				{"contentBlockDelta", `{"contentBlockIndex":0,"delta":{"text":"Hel"}}`},
				{"contentBlockDelta", `{"contentBlockIndex":0,"delta":{"text":"lo"}}`},
				{"contentBlockStop", `{"contentBlockIndex":0}`},
				{"messageStop", `{"stopReason":"end_turn"}`},
				{"metadata", `{"usage":{"inputTokens":6,"outputTokens":2,"totalTokens":8}}`},
			} {
				w.Write(awsstreamtest.Event(f[0], f[1]))
				w.(http.Flusher).Flush()
			}
			return
		}
		w.Header().Set("Content-Type", "application/json")
		if strings.Contains(string(body), `"additionalModelRequestFields":{"thinking"`) || strings.Contains(r.URL.Path, "deepseek.r1") {
			io.WriteString(w, `{"output":{"message":{"role":"assistant","content":[{"reasoningContent":{"reasoningText":{"text":"Hmm.","signature":"sig-1"}}},{"text":"Hello"}]}},"stopReason":"end_turn","usage":{"inputTokens":6,"outputTokens":2,"totalTokens":8}}`)
			return
		}
		io.WriteString(w, `{"output":{"message":{"role":"assistant","content":[{"text":"Hello"}]}},"stopReason":"max_tokens","usage":{"inputTokens":6,"outputTokens":2,"totalTokens":8}}`)
	})
}

// bedrockEvents are the Anthropic stream events (type, JSON) of the
// chunks fakeBedrock streams for invoke-with-response-stream.
var bedrockEvents = [][2]string{
	{"message_start", `{"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","content":[],"usage":{"input_tokens":3,"output_tokens":1}}}`},
	{"content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hi"}}`},
	{"message_delta", `{"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":2}}`},
	{"message_stop", `{"type":"message_stop","amazon-bedrock-invocationMetrics":{"inputTokenCount":3,"outputTokenCount":2}}`},
}

// bedrockFrames are the frames fakeBedrock streams for
// invoke-with-response-stream: a chunk of each of bedrockEvents.
var bedrockFrames = func() (fs [][2]string) {
	for _, ev := range bedrockEvents {
		fs = append(fs, [2]string{"chunk", `{"bytes":"` + base64.StdEncoding.EncodeToString([]byte(ev[1])) + `","p":"abc"}`})
	}
	return fs
}()

// answerInvoke answers InvokeModel like Bedrock: an embedding of a Titan
// model (its token count in the body) or of a Cohere one (in the header),
// the model's own body for any other, and an event stream for
// invoke-with-response-stream, and ranks documents 1 and 0 for /rerank. It
// reports whether r was one of those.
func answerInvoke(w http.ResponseWriter, r *http.Request, body []byte) bool {
	switch p := r.URL.Path; {
	case p == "/rerank":
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"results":[{"index":1,"relevanceScore":0.9},{"index":0,"relevanceScore":0.125}]}`)
	case strings.HasSuffix(p, "/count-tokens"):
		// The count is the length of the InvokeModel body counted.
		var c struct {
			Input struct{ InvokeModel struct{ Body []byte } }
		}
		json.Unmarshal(body, &c)
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"inputTokens":%d}`, len(c.Input.InvokeModel.Body))
	case strings.HasSuffix(p, "/invoke-with-response-stream"):
		w.Header().Set("Content-Type", core.ContentTypeAWSEventStream)
		for _, f := range bedrockFrames {
			w.Write(awsstreamtest.Event(f[0], f[1]))
		}
	case !strings.HasSuffix(p, "/invoke"):
		return false
	case strings.Contains(p, "titan-embed"):
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"embedding":[0.5,-1.25],"inputTextTokenCount":3}`)
	case strings.Contains(p, "cohere.embed"):
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("X-Amzn-Bedrock-Input-Token-Count", "7")
		io.WriteString(w, `{"embeddings":[[0.5],[1]],"id":"e-1","response_type":"embeddings_floats","texts":["a","b"]}`)
	default:
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("X-Raw", "1")
		io.WriteString(w, `{"echo":`+string(body)+`}`)
	}
	return true
}

// bedrockManaged knows @bedrock-prod: bedrock at the test upstream with
// the integration's stored key pair (region us-east-1).
type bedrockManaged struct{ url string }

func (m *bedrockManaged) Resolve(_ context.Context, ref string, _ bool, _ *core.Principal) (core.Target, *core.Error) {
	if ref != "bedrock-prod" {
		return core.Target{}, core.BadRequest("x-gateway-provider", "no provider @%s in this workspace", ref)
	}
	return core.Target{Provider: "bedrock", BaseURL: m.url, CustomHost: true,
		AWS: core.AWSSettings{AccessKeyID: "AKIDSTORED", SecretAccessKey: "stored-secret"}}, nil
}

// TestBedrockEndToEnd: chat completions through the server reach the fake
// Bedrock (the custom host standing in for bedrock-runtime) at
// /model/{id}/converse or /converse-stream, signed with the credentials
// of the x-gateway-aws-* headers, a config target's aws_* fields or a
// managed integration; the answer, the stream (as server-sent events) and
// Bedrock's errors reach the client in the OpenAI shape, and the log
// counts the tokens. Bad or missing settings are 400s naming the header,
// before any upstream call, and never show the credential.
func TestBedrockEndToEnd(t *testing.T) {
	t.Parallel()
	m := &bedrockManaged{}
	g := newGateway(t, fakeBedrock(t), func(c *gatewayConfig) { c.managed = m })
	m.url = g.up.URL
	const body = `{"model":"anthropic.claude-v2:1","messages":[{"role":"user","content":"hi"}]}`
	aws := []string{"x-gateway-provider", "bedrock", "x-gateway-custom-host", g.up.URL, "Authorization", "",
		"x-gateway-aws-region", "eu-west-1", "x-gateway-aws-access-key-id", "AKIDBEDROCK", "x-gateway-aws-secret-access-key", "bedrock-secret"}
	config := `{"provider":"bedrock","custom_host":"` + g.up.URL + `","aws_region":"eu-west-1","aws_access_key_id":"AKIDBEDROCK","aws_secret_access_key":"bedrock-secret"}`
	for _, tc := range []struct {
		name string
		hdr  []string
	}{
		{"headers", aws},
		{"x-portkey- headers, session token", []string{"x-gateway-provider", "bedrock", "x-gateway-custom-host", g.up.URL, "Authorization", "",
			"x-portkey-aws-region", "eu-west-1", "x-portkey-aws-access-key-id", "AKIDBEDROCK", "x-portkey-aws-secret-access-key", "bedrock-secret", "x-portkey-aws-session-token", "tok"}},
		{"config target", []string{"x-gateway-config", config, "x-gateway-provider", "", "x-gateway-custom-host", "", "Authorization", ""}},
		{"integration", []string{"x-gateway-provider", "@bedrock-prod", "x-gateway-custom-host", "", "Authorization", ""}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			trace := "bedrock-" + strings.ReplaceAll(tc.name, " ", "-")
			r := g.do(t, "POST", "/v1/chat/completions", []byte(body), append([]string{"x-gateway-trace-id", trace}, tc.hdr...)...)
			if r.status != 200 || r.header.Get("X-Gateway-Provider") != "bedrock" || !strings.HasPrefix(r.header.Get("Content-Type"), "application/json") {
				t.Fatalf("status %d headers %v: %s", r.status, r.header, r.body)
			}
			if !strings.Contains(string(r.body), `"id":"chatcmpl-req-1","object":"chat.completion"`) || !strings.Contains(string(r.body), `"content":"Hello"`) ||
				!strings.Contains(string(r.body), `"finish_reason":"length"`) {
				t.Errorf("answer %s", r.body)
			}
			up := g.up.last(t)
			if up.RawPath != "/model/anthropic.claude-v2%3A1/converse" || !jsonSame(t, up.Body, `{"messages":[{"role":"user","content":[{"text":"hi"}]}]}`) {
				t.Errorf("upstream got %s %s", up.RawPath, up.Body)
			}
			if strings.Contains(tc.name, "session token") && up.Header.Get("X-Amz-Security-Token") != "tok" {
				t.Errorf("upstream headers %v", up.Header)
			}
			if rec := g.logs.one(t, trace); rec.Usage != (core.Usage{PromptTokens: 6, CompletionTokens: 2, TotalTokens: 8}) || rec.Status != 200 {
				t.Errorf("log record %+v", rec)
			}
		})
	}

	t.Run("stream", func(t *testing.T) {
		r := g.do(t, "POST", "/v1/chat/completions", []byte(`{"model":"anthropic.claude-v2:1","stream":true,"messages":[{"role":"user","content":"hi"}]}`),
			append([]string{"x-gateway-trace-id", "bedrock-stream"}, aws...)...)
		if r.status != 200 || !strings.HasPrefix(r.header.Get("Content-Type"), "text/event-stream") {
			t.Fatalf("status %d headers %v: %s", r.status, r.header, r.body)
		}
		events := sseEvents(r.body)
		if len(events) != 5 || !strings.Contains(events[0], `"role":"assistant"`) || !strings.Contains(events[1], `"content":"Hel"`) ||
			!strings.Contains(events[2], `"content":"lo"`) || !strings.Contains(events[3], `"finish_reason":"stop"`) ||
			!strings.Contains(events[3], `"usage":{"prompt_tokens":6,"completion_tokens":2,"total_tokens":8`) || events[4] != "data: [DONE]" {
			t.Errorf("events %q", events)
		}
		if up := g.up.last(t); up.RawPath != "/model/anthropic.claude-v2%3A1/converse-stream" || up.Header.Get("Accept") != core.ContentTypeAWSEventStream {
			t.Errorf("upstream got %s %v", up.RawPath, up.Header)
		}
		if rec := g.logs.one(t, "bedrock-stream"); rec.Usage != (core.Usage{PromptTokens: 6, CompletionTokens: 2, TotalTokens: 8}) || !rec.Stream || rec.Error != "" {
			t.Errorf("log record %+v", rec)
		}
	})

	t.Run("thinking", func(t *testing.T) {
		// strict_open_ai_compliance false lets thinking in and the
		// reasoning out, as content_blocks; the thinking block goes back
		// as reasoningContent.
		r := g.do(t, "POST", "/v1/chat/completions", []byte(`{"model":"anthropic.claude-v2:1","strict_open_ai_compliance":false,"thinking":{"type":"enabled","budget_tokens":1024},`+
			`"messages":[{"role":"user","content":"hi"},{"role":"assistant","content":[{"type":"thinking","thinking":"Hmm.","signature":"sig-0"},{"type":"text","text":"Hi"}]},{"role":"user","content":"again"}]}`), aws...)
		if r.status != 200 || !strings.Contains(string(r.body), `"content":"Hello"`) ||
			!strings.Contains(string(r.body), `"content_blocks":[{"type":"thinking","thinking":"Hmm.","signature":"sig-1"},{"type":"text","text":"Hello"}]`) {
			t.Fatalf("status %d: %s", r.status, r.body)
		}
		if up := g.up.last(t); !jsonSame(t, up.Body, `{"additionalModelRequestFields":{"thinking":{"type":"enabled","budget_tokens":1024}},"messages":[{"role":"user","content":[{"text":"hi"}]},`+
			`{"role":"assistant","content":[{"reasoningContent":{"reasoningText":{"text":"Hmm.","signature":"sig-0"}}},{"text":"Hi"}]},{"role":"user","content":[{"text":"again"}]}]}`) {
			t.Errorf("upstream got %s", up.Body)
		}
	})

	t.Run("errors", func(t *testing.T) {
		r := g.do(t, "POST", "/v1/chat/completions", []byte(`{"model":"m","messages":[{"role":"user","content":"fail"}]}`), aws...)
		if e := errorOf(t, r); r.status != 400 || e.Type != "ValidationException" || !strings.Contains(e.Message, "start with a user message") {
			t.Errorf("status %d error %+v", r.status, e)
		}
		r = g.do(t, "POST", "/v1/chat/completions", []byte(body), append(append([]string{}, aws...), "x-gateway-aws-secret-access-key", "wrong-secret")...)
		if e := errorOf(t, r); r.status != 403 || e.Type != "InvalidSignatureException" {
			t.Errorf("status %d error %+v", r.status, e)
		}
	})

	for _, tc := range []struct {
		name  string
		hdr   []string
		param string
	}{
		{"bad region", append(append([]string{}, aws...), "x-gateway-aws-region", "evil.example/x"), "x-gateway-aws-region"},
		{"bad secret", append(append([]string{}, aws...), "x-gateway-aws-secret-access-key", "bad secret value"), "x-gateway-aws-secret-access-key"},
		{"no secret", append(append([]string{}, aws...), "x-gateway-aws-secret-access-key", ""), "x-gateway-aws-secret-access-key"},
		{"no credentials", []string{"x-gateway-provider", "bedrock", "x-gateway-custom-host", g.up.URL, "Authorization", ""}, "x-gateway-aws-access-key-id"},
		{"integration with a region", []string{"x-gateway-provider", "@bedrock-prod", "x-gateway-custom-host", "", "Authorization", "", "x-gateway-aws-region", "eu-west-1"}, "x-gateway-aws-region"},
		{"integration with a key", []string{"x-gateway-provider", "@bedrock-prod", "x-gateway-custom-host", "", "Authorization", "", "x-gateway-aws-access-key-id", "AKIDBEDROCK"}, "x-gateway-aws-access-key-id"},
		{"config target with a bad region", []string{"x-gateway-config", strings.Replace(config, "eu-west-1", "eu_west", 1), "x-gateway-provider", "", "x-gateway-custom-host", "", "Authorization", ""}, "config.aws_region"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := g.up.hits()
			r := g.do(t, "POST", "/v1/chat/completions", []byte(body), tc.hdr...)
			e := errorOf(t, r)
			if r.status != 400 || deref(e.Param) != tc.param || strings.Contains(e.Message, "secret value") {
				t.Errorf("status %d error %+v", r.status, e)
			}
			if g.up.hits() != before {
				t.Error("the request was sent")
			}
		})
	}
}

// TestBedrockEmbeddingsAndProxy: embeddings through the server reach the
// fake Bedrock as signed InvokeModel calls in the model family's shape and
// come back as OpenAI's embeddings list (floats or base64) with the token
// count in the log; a rerank reaches the Rerank API with the model's ARN;
// what Bedrock cannot take is a 400 naming the field, before any call. Any other path is proxied signed and unchanged, an
// event stream included.
func TestBedrockEmbeddingsAndProxy(t *testing.T) {
	t.Parallel()
	g := newGateway(t, fakeBedrock(t))
	aws := []string{"x-gateway-provider", "bedrock", "x-gateway-custom-host", g.up.URL, "Authorization", "",
		"x-gateway-aws-region", "eu-west-1", "x-gateway-aws-access-key-id", "AKIDBEDROCK", "x-gateway-aws-secret-access-key", "bedrock-secret"}
	for _, tc := range []struct {
		name, body, upPath, upBody, answer string
		tokens                             int
	}{
		{"titan", `{"model":"amazon.titan-embed-text-v2:0","input":"hi","dimensions":256}`,
			"/model/amazon.titan-embed-text-v2%3A0/invoke", `{"inputText":"hi","dimensions":256}`,
			`{"object":"list","data":[{"object":"embedding","index":0,"embedding":[0.5,-1.25]}],"model":"amazon.titan-embed-text-v2:0","usage":{"prompt_tokens":3,"total_tokens":3}}`, 3},
		{"cohere, base64", `{"model":"cohere.embed-english-v3","input":["a","b"],"encoding_format":"base64","input_type":"search_query"}`,
			"/model/cohere.embed-english-v3/invoke", `{"texts":["a","b"],"input_type":"search_query"}`,
			`{"object":"list","data":[{"object":"embedding","index":0,"embedding":"AAAAPw=="},{"object":"embedding","index":1,"embedding":"AACAPw=="}],"model":"cohere.embed-english-v3","usage":{"prompt_tokens":7,"total_tokens":7}}`, 7},
	} {
		t.Run(tc.name, func(t *testing.T) {
			trace := "bedrock-embed-" + strings.ReplaceAll(tc.name, ", ", "-")
			r := g.do(t, "POST", "/v1/embeddings", []byte(tc.body), append([]string{"x-gateway-trace-id", trace}, aws...)...)
			if r.status != 200 || !jsonSame(t, r.body, tc.answer) {
				t.Fatalf("status %d: %s", r.status, r.body)
			}
			if up := g.up.last(t); up.RawPath != tc.upPath || !jsonSame(t, up.Body, tc.upBody) {
				t.Errorf("upstream got %s %s", up.RawPath, up.Body)
			}
			if rec := g.logs.one(t, trace); rec.Usage.PromptTokens != tc.tokens || rec.Status != 200 {
				t.Errorf("log record %+v", rec)
			}
		})
	}

	t.Run("rerank", func(t *testing.T) {
		r := g.do(t, "POST", "/v1/rerank", []byte(`{"model":"amazon.rerank-v1:0","query":"q","documents":["a",{"text":"b"}],"top_n":2,"return_documents":true}`),
			append([]string{"x-gateway-trace-id", "bedrock-rerank"}, aws...)...)
		if r.status != 200 || !jsonSame(t, r.body, `{"id":"req-1","model":"amazon.rerank-v1:0","results":[{"index":1,"relevance_score":0.9,"document":{"text":"b"}},{"index":0,"relevance_score":0.125,"document":{"text":"a"}}]}`) {
			t.Fatalf("status %d: %s", r.status, r.body)
		}
		up := g.up.last(t)
		if up.RawPath != "/rerank" || !jsonSame(t, up.Body, `{"queries":[{"type":"TEXT","textQuery":{"text":"q"}}],`+
			`"sources":[{"type":"INLINE","inlineDocumentSource":{"type":"TEXT","textDocument":{"text":"a"}}},{"type":"INLINE","inlineDocumentSource":{"type":"TEXT","textDocument":{"text":"b"}}}],`+
			`"rerankingConfiguration":{"type":"BEDROCK_RERANKING_MODEL","bedrockRerankingConfiguration":{"numberOfResults":2,"modelConfiguration":{"modelArn":"arn:aws:bedrock:eu-west-1::foundation-model/amazon.rerank-v1:0"}}}}`) {
			t.Errorf("upstream got %s %s", up.RawPath, up.Body)
		}
	})

	for _, tc := range []struct{ name, body, param string }{
		{"titan takes one text", `{"model":"amazon.titan-embed-text-v2:0","input":["a","b"]}`, "input"},
		{"titan v1 has no dimensions", `{"model":"amazon.titan-embed-text-v1","input":"a","dimensions":8}`, "dimensions"},
		{"token ids", `{"model":"cohere.embed-english-v3","input":[1,2]}`, "input"},
		{"bad input_type", `{"model":"cohere.embed-english-v3","input":"a","input_type":"poem"}`, "input_type"},
		{"not an embedding model", `{"model":"anthropic.claude-v2:1","input":"a"}`, "model"},
		{"rerank without chunks", `{"model":"amazon.rerank-v1:0","query":"q","documents":["a"],"max_chunks_per_doc":2}`, "max_chunks_per_doc"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := g.up.hits()
			path := "/v1/embeddings"
			if strings.Contains(tc.body, `"query"`) {
				path = "/v1/rerank"
			}
			r := g.do(t, "POST", path, []byte(tc.body), aws...)
			if e := errorOf(t, r); r.status != 400 || deref(e.Param) != tc.param {
				t.Errorf("status %d error %+v", r.status, e)
			}
			if g.up.hits() != before {
				t.Error("the request was sent")
			}
		})
	}

	t.Run("proxy", func(t *testing.T) {
		const body = `{"anthropic_version":"bedrock-2023-05-31","max_tokens":5}`
		r := g.do(t, "POST", "/v1/model/anthropic.claude-v2%3A1/invoke?trace=1", []byte(body), aws...)
		if r.status != 200 || string(r.body) != `{"echo":`+body+`}` || r.header.Get("X-Raw") != "1" {
			t.Fatalf("status %d headers %v: %s", r.status, r.header, r.body)
		}
		if up := g.up.last(t); up.RawPath != "/model/anthropic.claude-v2%3A1/invoke" || string(up.Body) != body {
			t.Errorf("upstream got %s %s", up.RawPath, up.Body)
		}
	})

	t.Run("proxied event stream", func(t *testing.T) {
		r := g.do(t, "POST", "/v1/model/anthropic.claude-v2%3A1/invoke-with-response-stream", []byte(`{"max_tokens":5}`), aws...)
		var want []byte
		for _, f := range bedrockFrames {
			want = append(want, awsstreamtest.Event(f[0], f[1])...)
		}
		// Not taken for server-sent events: those are flushed at blank
		// lines (a binary frame has none) and get Cache-Control no-cache.
		if r.status != 200 || r.header.Get("Content-Type") != core.ContentTypeAWSEventStream || string(r.body) != string(want) ||
			r.header.Get("Cache-Control") != "" {
			t.Errorf("status %d headers %v: %q", r.status, r.header, r.body)
		}
	})
}

// TestBedrockMessages: Anthropic's Messages API through the server reaches
// the fake Bedrock as a signed InvokeModel call of the body less model and
// stream and with anthropic_version; the answer comes back as it is, the
// stream (invoke-with-response-stream) as Anthropic's server-sent events
// with the tokens counted in the log, and Bedrock's error in the gateway's
// shape. A model that is not Anthropic's is a 400 before any call.
func TestBedrockMessages(t *testing.T) {
	t.Parallel()
	g := newGateway(t, fakeBedrock(t))
	aws := []string{"x-gateway-provider", "bedrock", "x-gateway-custom-host", g.up.URL, "Authorization", "",
		"x-gateway-aws-region", "eu-west-1", "x-gateway-aws-access-key-id", "AKIDBEDROCK", "x-gateway-aws-secret-access-key", "bedrock-secret"}
	const msgs = `"max_tokens":8,"messages":[{"role":"user","content":"hi"}]`
	const sent = `{"anthropic_version":"bedrock-2023-05-31",` + msgs + `}`

	r := g.do(t, "POST", "/v1/messages", []byte(`{"model":"anthropic.claude-v2:1",`+msgs+`}`), aws...)
	if r.status != 200 || !jsonSame(t, r.body, `{"echo":`+sent+`}`) || r.header.Get("X-Raw") != "1" {
		t.Fatalf("status %d headers %v: %s", r.status, r.header, r.body)
	}
	if up := g.up.last(t); up.RawPath != "/model/anthropic.claude-v2%3A1/invoke" || !jsonSame(t, up.Body, sent) {
		t.Errorf("upstream got %s %s", up.RawPath, up.Body)
	}

	r = g.do(t, "POST", "/v1/messages", []byte(`{"model":"anthropic.claude-v2:1","stream":true,`+msgs+`}`),
		append([]string{"x-gateway-trace-id", "bedrock-messages-stream"}, aws...)...)
	var want []string
	for _, ev := range bedrockEvents {
		want = append(want, "event: "+ev[0]+"\ndata: "+ev[1])
	}
	if got := sseEvents(r.body); r.status != 200 || !strings.HasPrefix(r.header.Get("Content-Type"), "text/event-stream") || strings.Join(got, "\n\n") != strings.Join(want, "\n\n") {
		t.Fatalf("status %d headers %v: %q", r.status, r.header, got)
	}
	if up := g.up.last(t); up.RawPath != "/model/anthropic.claude-v2%3A1/invoke-with-response-stream" || !jsonSame(t, up.Body, sent) ||
		up.Header.Get("Accept") != core.ContentTypeAWSEventStream {
		t.Errorf("upstream got %s %v %s", up.RawPath, up.Header, up.Body)
	}
	if rec := g.logs.one(t, "bedrock-messages-stream"); rec.Usage != (core.Usage{PromptTokens: 3, CompletionTokens: 2, TotalTokens: 5}) || !rec.Stream || rec.Error != "" {
		t.Errorf("log record %+v", rec)
	}

	r = g.do(t, "POST", "/v1/messages", []byte(`{"model":"anthropic.claude-v2:1","max_tokens":8,"messages":[{"role":"user","content":[{"type":"text","text":"fail"}]}]}`), aws...)
	// Bedrock's error comes back in Anthropic's shape, as the client's SDK
	// reads it.
	if r.status != 400 || !jsonSame(t, r.body, `{"type":"error","error":{"type":"invalid_request_error","message":"A conversation must start with a user message."}}`) {
		t.Errorf("status %d: %s", r.status, r.body)
	}

	// Other models' /v1/messages: TestMessagesThroughTranslatedChat. A
	// model that reasons has its reasoning come back as a signed thinking
	// block.
	r = g.do(t, "POST", "/v1/messages", []byte(`{"model":"deepseek.r1-v1:0",`+msgs+`}`), aws...)
	if r.status != 200 || !jsonSame(t, r.body, `{"id":"chatcmpl-req-1","type":"message","role":"assistant","model":"deepseek.r1-v1:0",`+
		`"content":[{"type":"thinking","thinking":"Hmm.","signature":"sig-1"},{"type":"text","text":"Hello"}],"stop_reason":"end_turn","stop_sequence":null,`+
		`"usage":{"input_tokens":6,"output_tokens":2,"cache_read_input_tokens":0}}`) {
		t.Errorf("a reasoning model on /v1/messages: %d %s", r.status, r.body)
	}

	// count_tokens: CountTokens of the InvokeModel body (max_tokens added),
	// answered as Anthropic's count.
	counted := `{"anthropic_version":"bedrock-2023-05-31","max_tokens":1,"messages":[{"role":"user","content":"hi"}]}`
	r = g.do(t, "POST", "/v1/messages/count_tokens", []byte(`{"model":"anthropic.claude-v2:1","messages":[{"role":"user","content":"hi"}]}`), aws...)
	if want := fmt.Sprintf(`{"input_tokens":%d}`, len(counted)); r.status != 200 || string(r.body) != want {
		t.Fatalf("count_tokens: status %d: %s, want %s", r.status, r.body, want)
	}
	if up := g.up.last(t); up.RawPath != "/model/anthropic.claude-v2%3A1/count-tokens" {
		t.Errorf("upstream got %s %s", up.RawPath, up.Body)
	}

	// CountTokens takes foundation models only: an application inference
	// profile, whose model its ARN does not name, is a 400 naming model
	// that says so, before any call.
	hits := g.up.hits()
	r = g.do(t, "POST", "/v1/messages/count_tokens", []byte(`{"model":"arn:aws:bedrock:eu-west-1:123456789012:application-inference-profile/a1b2c3d4e5f6","messages":[{"role":"user","content":"hi"}]}`), aws...)
	if r.status != 400 || !strings.Contains(string(r.body), `"model"`) || !strings.Contains(string(r.body), "foundation model") || g.up.hits() != hits {
		t.Errorf("count_tokens of an application inference profile: %d %s (%d upstream calls)", r.status, r.body, g.up.hits()-hits)
	}
}
