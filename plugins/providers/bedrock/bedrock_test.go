package bedrock

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/llm-gateway/gateway/core"
	"github.com/llm-gateway/gateway/core/awsauth/awsauthtest"
	"github.com/llm-gateway/gateway/core/awsstream/awsstreamtest"
)

// jsonEqual reports whether two JSON documents hold the same value.
func jsonEqual(t *testing.T, got, want []byte) bool {
	t.Helper()
	var g, w any
	if err := json.Unmarshal(got, &g); err != nil {
		t.Fatalf("not JSON: %v: %s", err, got)
	}
	if err := json.Unmarshal(want, &w); err != nil {
		t.Fatalf("test's want is not JSON: %v: %s", err, want)
	}
	return reflect.DeepEqual(g, w)
}

// TestTranslateRequest: each mapping of an OpenAI chat completion onto a
// Converse request.
func TestTranslateRequest(t *testing.T) {
	const user = `{"role":"user","content":"hi"}`
	const userTurn = `{"role":"user","content":[{"text":"hi"}]}`
	for _, tc := range []struct {
		name, in, want string
	}{
		{"minimal", `{"model":"m","messages":[` + user + `]}`, `{"messages":[` + userTurn + `]}`},
		{"inference config; dropped fields",
			`{"model":"m","max_tokens":12,"max_completion_tokens":34,"temperature":0.5,"top_p":0.9,"top_k":4,"stop":"END","user":"u","seed":1,"n":1,"parallel_tool_calls":false,"stream":true,"stream_options":{"include_usage":true},"messages":[` + user + `]}`,
			`{"inferenceConfig":{"maxTokens":34,"temperature":0.5,"topP":0.9,"stopSequences":["END"]},"messages":[` + userTurn + `]}`},
		{"system and developer to system, in order",
			`{"model":"m","messages":[{"role":"system","content":"be brief"},` + user + `,{"role":"developer","content":[{"type":"text","text":"no lists"},{"type":"text","text":""}]}]}`,
			`{"system":[{"text":"be brief"},{"text":"no lists"}],"messages":[` + userTurn + `]}`},
		{"an empty user message merged with a user message that has content",
			`{"model":"m","messages":[{"role":"user","content":""},` + user + `]}`,
			`{"messages":[` + userTurn + `]}`},
		{"an empty last assistant message, prefilling nothing, is left out",
			`{"model":"m","messages":[` + user + `,{"role":"assistant","content":""}]}`,
			`{"messages":[` + userTurn + `]}`},
		{"images from data: URLs",
			`{"model":"m","messages":[{"role":"user","content":[{"type":"text","text":"what?"},{"type":"image_url","image_url":{"url":"data:image/jpeg;base64,/9j/"}}]}]}`,
			`{"messages":[{"role":"user","content":[{"text":"what?"},{"image":{"format":"jpeg","source":{"bytes":"/9j/"}}}]}]}`},
		{"tools, tool calls and results; turns of one role merged",
			`{"model":"m","tools":[{"type":"function","function":{"name":"weather","description":"d","parameters":{"type":"object"}}},{"type":"function","function":{"name":"time"}}],"tool_choice":"required","messages":[` + user + `,` +
				`{"role":"assistant","content":"checking","tool_calls":[{"id":"c1","type":"function","function":{"name":"weather","arguments":"{\"city\":\"Paris\"}"}},{"id":"c2","type":"function","function":{"name":"time","arguments":""}}]},` +
				`{"role":"tool","tool_call_id":"c1","content":"sunny"},{"role":"tool","tool_call_id":"c2","content":""},{"role":"user","content":"thanks"}]}`,
			`{"messages":[` + userTurn + `,{"role":"assistant","content":[{"text":"checking"},{"toolUse":{"toolUseId":"c1","name":"weather","input":{"city":"Paris"}}},{"toolUse":{"toolUseId":"c2","name":"time","input":{}}}]},` +
				`{"role":"user","content":[{"toolResult":{"toolUseId":"c1","content":[{"text":"sunny"}]}},{"toolResult":{"toolUseId":"c2","content":[]}},{"text":"thanks"}]}],` +
				`"toolConfig":{"tools":[{"toolSpec":{"name":"weather","description":"d","inputSchema":{"json":{"type":"object"}}}},{"toolSpec":{"name":"time","inputSchema":{"json":{"type":"object","properties":{}}}}}],"toolChoice":{"any":{}}}}`},
		{"tool_choice auto and named",
			`{"model":"m","tools":[{"type":"function","function":{"name":"f"}}],"tool_choice":{"type":"function","function":{"name":"f"}},"messages":[` + user + `]}`,
			`{"messages":[` + userTurn + `],"toolConfig":{"tools":[{"toolSpec":{"name":"f","inputSchema":{"json":{"type":"object","properties":{}}}}}],"toolChoice":{"tool":{"name":"f"}}}}`},
		{"thinking to additionalModelRequestFields",
			`{"model":"m","thinking":{"type":"enabled","budget_tokens":1024},"max_tokens":2048,"messages":[` + user + `]}`,
			`{"inferenceConfig":{"maxTokens":2048},"additionalModelRequestFields":{"thinking":{"type":"enabled","budget_tokens":1024}},"messages":[` + userTurn + `]}`},
		{"an assistant's thinking parts to reasoningContent, in order, before text and toolUse",
			`{"model":"m","tools":[{"type":"function","function":{"name":"f"}}],"messages":[` + user + `,{"role":"assistant","content":[{"type":"text","text":"calling"},` +
				`{"type":"thinking","thinking":"first","signature":"sig1"},{"type":"redacted_thinking","data":"ZW5j"},{"type":"thinking","thinking":"unsigned"}],` +
				`"tool_calls":[{"id":"c1","type":"function","function":{"name":"f","arguments":"{}"}}]},{"role":"tool","tool_call_id":"c1","content":"ok"}]}`,
			`{"messages":[` + userTurn + `,{"role":"assistant","content":[{"reasoningContent":{"reasoningText":{"text":"first","signature":"sig1"}}},{"reasoningContent":{"redactedContent":"ZW5j"}},` +
				`{"reasoningContent":{"reasoningText":{"text":"unsigned"}}},{"text":"calling"},{"toolUse":{"toolUseId":"c1","name":"f","input":{}}}]},` +
				`{"role":"user","content":[{"toolResult":{"toolUseId":"c1","content":[{"text":"ok"}]}}]}],` +
				`"toolConfig":{"tools":[{"toolSpec":{"name":"f","inputSchema":{"json":{"type":"object","properties":{}}}}}]}}`},
		{"an assistant's content_blocks are its content",
			`{"model":"m","messages":[` + user + `,{"role":"assistant","content":"4","content_blocks":[{"type":"thinking","thinking":"hm","signature":"s"},{"type":"text","text":"4"}]}]}`,
			`{"messages":[` + userTurn + `,{"role":"assistant","content":[{"reasoningContent":{"reasoningText":{"text":"hm","signature":"s"}}},{"text":"4"}]}]}`},
		{"content_blocks merged from a stream's deltas, without type",
			`{"model":"m","messages":[` + user + `,{"role":"assistant","content":"4","content_blocks":[{"index":0,"thinking":"hm","signature":"s"},{"index":1,"data":"ZW5j"}]}]}`,
			`{"messages":[` + userTurn + `,{"role":"assistant","content":[{"reasoningContent":{"reasoningText":{"text":"hm","signature":"s"}}},{"reasoningContent":{"redactedContent":"ZW5j"}},{"text":"4"}]}]}`},
		{"tool_choice none sends no tools",
			`{"model":"m","tools":[{"type":"function","function":{"name":"f"}}],"tool_choice":"none","messages":[` + user + `]}`,
			`{"messages":[` + userTurn + `]}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			model, got, err := translateRequest([]byte(tc.in))
			if err != nil {
				t.Fatal(err)
			}
			if model != "m" || !jsonEqual(t, got, []byte(tc.want)) {
				t.Fatalf("model %q body\n got %s\nwant %s", model, got, tc.want)
			}
		})
	}
}

// TestTranslateRequestRefused: what Converse cannot take is a 400 naming
// the field.
func TestTranslateRequestRefused(t *testing.T) {
	const user = `{"role":"user","content":"hi"}`
	for _, tc := range []struct{ in, param string }{
		{`{"model":"m","n":2,"messages":[` + user + `]}`, "n"},
		{`{"model":"m","logprobs":true,"messages":[` + user + `]}`, "logprobs"},
		{`{"model":"m","response_format":{"type":"json_object"},"messages":[` + user + `]}`, "response_format"},
		{`{"model":"m","messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"https://example.test/a.png"}}]}]}`, "messages[0].content[0].image_url.url"},
		{`{"model":"m","messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"data:image/tiff;base64,AA"}}]}]}`, "messages[0].content[0].image_url.url"},
		{`{"model":"m","messages":[{"role":"user","content":[{"type":"input_audio"}]}]}`, "messages[0].content[0].type"},
		{`{"model":"m","messages":[{"role":"assistant","tool_calls":[{"id":"c","function":{"name":"f","arguments":"[1]"}}]}]}`, "messages[0].tool_calls[0].function.arguments"},
		{`{"model":"m","tools":[{"type":"function","function":{"name":"f"}}],"tool_choice":"none","messages":[{"role":"tool","tool_call_id":"c","content":"x"}]}`, "tool_choice"},
		{`{"model":"m","tools":[{"type":"web_search"}],"messages":[` + user + `]}`, "tools[0].type"},
		{`{"model":"m","messages":[{"role":"function","content":"x"}]}`, "messages[0].role"},
		{`{"model":"","messages":[` + user + `]}`, "model"},
		{`{"model":"m","thinking":true,"messages":[` + user + `]}`, "thinking"},
		{`{"model":"m","messages":[{"role":"user","content":[{"type":"thinking","thinking":"x"}]}]}`, "messages[0].content[0].type"},
		{`{"model":"m","messages":[` + user + `,{"role":"assistant","content":[{"type":"redacted_thinking"}]}]}`, "messages[1].content[0].data"},
		// Converse refuses a request without messages, and a turn without
		// content.
		{`{"model":"m","messages":[{"role":"system","content":"s"}]}`, "messages"},
		{`{"model":"m","messages":[{"role":"system","content":"s"},{"role":"developer","content":"d"},{"role":"assistant","content":""}]}`, "messages"},
		{`{"model":"m","messages":[{"role":"user","content":""}]}`, "messages[0].content"},
		{`{"model":"m","messages":[{"role":"system","content":"s"},{"role":"user","content":[{"type":"text","text":""}]},{"role":"user","content":[]},{"role":"assistant","content":"a"}]}`, "messages[1].content"},
		{`{"model":"m","messages":[` + user + `,{"role":"assistant","content":""},{"role":"user","content":"more"}]}`, "messages[1].content"},
	} {
		_, _, err := translateRequest([]byte(tc.in))
		var ce *core.Error
		if !errors.As(err, &ce) || ce.Status != 400 || ce.Param != tc.param {
			t.Errorf("%s: %v, want a 400 naming %s", tc.in, err, tc.param)
		}
	}
}

// TestBuildRequest: the URL (region host, model id escaped, converse or
// converse-stream, custom host), the headers, and the signature over the
// exact body with the right scope; a session token is sent; without a
// key pair a Bedrock API key is a bearer token; bad or missing settings
// are 400s naming the header and never showing the credential.
func TestBuildRequest(t *testing.T) {
	p := New()
	p.now = func() time.Time { return time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC) }
	creds := core.AWSSettings{Region: "eu-west-3", AccessKeyID: "AKIDTEST", SecretAccessKey: "s3cr3t/key+x"}
	withToken := creds
	withToken.SessionToken = "session-tok"
	const body = `{"model":"anthropic.claude-v2:1","messages":[{"role":"user","content":"hi"}]}`
	for _, tc := range []struct {
		name   string
		t      core.Target
		stream bool
		url    string
		param  string // of the 400
	}{
		{"signed", core.Target{Provider: Name, AWS: creds}, false, "https://bedrock-runtime.eu-west-3.amazonaws.com/model/anthropic.claude-v2%3A1/converse", ""},
		{"session token, stream", core.Target{Provider: Name, AWS: withToken}, true, "https://bedrock-runtime.eu-west-3.amazonaws.com/model/anthropic.claude-v2%3A1/converse-stream", ""},
		{"default region", core.Target{Provider: Name, AWS: core.AWSSettings{AccessKeyID: "AKIDTEST", SecretAccessKey: "s"}}, false, "https://bedrock-runtime.us-east-1.amazonaws.com/model/anthropic.claude-v2%3A1/converse", ""},
		{"custom host", core.Target{Provider: Name, BaseURL: "http://127.0.0.1:9/base/", CustomHost: true, AWS: creds}, false, "http://127.0.0.1:9/base/model/anthropic.claude-v2%3A1/converse", ""},
		{"API key", core.Target{Provider: Name, APIKey: "br-key"}, false, "https://bedrock-runtime.us-east-1.amazonaws.com/model/anthropic.claude-v2%3A1/converse", ""},
		{"no credentials", core.Target{Provider: Name}, false, "", "x-gateway-aws-access-key-id"},
		{"no secret", core.Target{Provider: Name, AWS: core.AWSSettings{AccessKeyID: "AKIDTEST"}}, false, "", "x-gateway-aws-secret-access-key"},
		{"bad region", core.Target{Provider: Name, AWS: core.AWSSettings{Region: "evil.com/x", AccessKeyID: "AKIDTEST", SecretAccessKey: "s"}}, false, "", "x-gateway-aws-region"},
		{"bad secret", core.Target{Provider: Name, AWS: core.AWSSettings{AccessKeyID: "AKIDTEST", SecretAccessKey: "has space"}}, false, "", "x-gateway-aws-secret-access-key"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req := &core.Request{Endpoint: core.EndpointChatComplete, Method: "POST", Path: "/chat/completions", Body: []byte(body),
				Stream: tc.stream, Header: http.Header{"Accept": {"text/event-stream"}}}
			hr, err := p.BuildRequest(context.Background(), req, &tc.t)
			if tc.param != "" {
				var ce *core.Error
				if !errors.As(err, &ce) || ce.Param != tc.param || strings.Contains(ce.Message, "has space") {
					t.Fatalf("%v, want a 400 naming %s", err, tc.param)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if hr.Method != "POST" || hr.URL.String() != tc.url {
				t.Fatalf("%s %s, want %s", hr.Method, hr.URL, tc.url)
			}
			sent, _ := io.ReadAll(hr.Body)
			if !jsonEqual(t, sent, []byte(`{"messages":[{"role":"user","content":[{"text":"hi"}]}]}`)) || hr.ContentLength != int64(len(sent)) {
				t.Fatalf("body %s (length %d)", sent, hr.ContentLength)
			}
			accept := "application/json"
			if tc.stream {
				accept = core.ContentTypeAWSEventStream
			}
			if hr.Header.Get("Content-Type") != "application/json" || hr.Header.Get("Accept") != accept {
				t.Fatalf("headers %v", hr.Header)
			}
			auth := hr.Header.Get("Authorization")
			if tc.t.APIKey != "" {
				if auth != "Bearer br-key" || hr.Header.Get("X-Amz-Date") != "" {
					t.Fatalf("headers %v", hr.Header)
				}
				return
			}
			region := tc.t.AWS.Region
			if region == "" {
				region = DefaultRegion
			}
			if !strings.HasPrefix(auth, "AWS4-HMAC-SHA256 Credential=AKIDTEST/20260301/"+region+"/bedrock/aws4_request, SignedHeaders=") ||
				hr.Header.Get("X-Amz-Date") != "20260301T120000Z" || hr.Header.Get("X-Amz-Security-Token") != tc.t.AWS.SessionToken {
				t.Fatalf("headers %v", hr.Header)
			}
			// The signature checks out on the server side, over the
			// path as sent.
			server, _ := http.NewRequest("POST", hr.URL.String(), nil)
			server.Host, server.Header = hr.Host, hr.Header
			if err := awsauthtest.Verify(server, sent, "AKIDTEST", tc.t.AWS.SecretAccessKey, region, "bedrock"); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestTranslateResponse: a Converse answer becomes a chat.completion
// (text, tool calls, each stop reason, usage with the prompt cache); a
// Bedrock error body the gateway's error with the status kept.
func TestTranslateResponse(t *testing.T) {
	p := New()
	p.now = func() time.Time { return time.Unix(1700000000, 0) }
	req := &core.Request{Endpoint: core.EndpointChatComplete, Model: "m"}
	for _, tc := range []struct {
		name   string
		status int
		header http.Header
		body   string
		want   string
	}{
		{"text", 200, http.Header{"X-Amzn-Requestid": {"r-1"}},
			`{"output":{"message":{"role":"assistant","content":[{"text":"Hel"},{"text":"lo"}]}},"stopReason":"end_turn","usage":{"inputTokens":5,"outputTokens":2,"totalTokens":7}}`,
			`{"id":"chatcmpl-r-1","object":"chat.completion","created":1700000000,"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"Hello","refusal":null},"logprobs":null,"finish_reason":"stop"}],"usage":{"prompt_tokens":5,"completion_tokens":2,"total_tokens":7,"prompt_tokens_details":{"cached_tokens":0}}}`},
		{"tool use", 200, http.Header{"X-Amzn-Requestid": {"r-2"}},
			`{"output":{"message":{"role":"assistant","content":[{"toolUse":{"toolUseId":"t1","name":"now","input":{ "tz" : "UTC" }}}]}},"stopReason":"tool_use","usage":{"inputTokens":5,"outputTokens":2,"cacheReadInputTokens":3,"cacheWriteInputTokens":1}}`,
			`{"id":"chatcmpl-r-2","object":"chat.completion","created":1700000000,"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":null,"refusal":null,"tool_calls":[{"id":"t1","type":"function","function":{"name":"now","arguments":"{\"tz\":\"UTC\"}"}}]},"logprobs":null,"finish_reason":"tool_calls"}],"usage":{"prompt_tokens":9,"completion_tokens":2,"total_tokens":11,"prompt_tokens_details":{"cached_tokens":3}}}`},
		{"error", 400, http.Header{"X-Amzn-Errortype": {"ValidationException:http://internal.amazon.com/coral/com.amazon.bedrock/"}},
			`{"message":"The provided model identifier is invalid."}`,
			`{"error":{"message":"The provided model identifier is invalid.","type":"ValidationException","param":null,"code":null}}`},
		{"error without a type", 429, nil, `{"Message":"Too many requests"}`,
			`{"error":{"message":"Too many requests","type":"upstream_error","param":null,"code":null}}`},
		{"error of another shape", 502, nil, `<html>bad gateway</html>`, `<html>bad gateway</html>`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp := &core.Response{Status: tc.status, Header: tc.header, Body: []byte(tc.body)}
			if err := p.TranslateResponse(req, resp); err != nil {
				t.Fatal(err)
			}
			if tc.want[0] != '{' {
				if string(resp.Body) != tc.want {
					t.Fatalf("body %s", resp.Body)
				}
				return
			}
			if !jsonEqual(t, resp.Body, []byte(tc.want)) || resp.Header.Get("Content-Type") != "application/json" {
				t.Fatalf("body\n got %s\nwant %s", resp.Body, tc.want)
			}
		})
	}
	for _, s := range []struct{ stop, want string }{{"end_turn", "stop"}, {"stop_sequence", "stop"}, {"max_tokens", "length"},
		{"tool_use", "tool_calls"}, {"guardrail_intervened", "content_filter"}, {"content_filtered", "content_filter"}} {
		if got := finishReason(s.stop); got != s.want {
			t.Errorf("%s: %s, want %s", s.stop, got, s.want)
		}
	}
	if err := p.TranslateResponse(req, &core.Response{Status: 200, Body: []byte(`{"output":{}}`)}); err == nil {
		t.Fatal("an answer without a message was read")
	}
}

// TestTranslateResponseReasoning: with strict reference compliance off,
// an answer's reasoningContent blocks become content_blocks thinking (with
// the signature) and redacted_thinking entries, in order among its text
// blocks, content staying the text only; with it on (and for an answer
// without reasoning) the answer is as before.
func TestTranslateResponseReasoning(t *testing.T) {
	p := New()
	p.now = func() time.Time { return time.Unix(1700000000, 0) }
	const reasoned = `{"output":{"message":{"role":"assistant","content":[{"reasoningContent":{"reasoningText":{"text":"Let me think.","signature":"sig-1"}}},` +
		`{"reasoningContent":{"redactedContent":"ZW5jcnlwdGVk"}},{"text":"Hel"},{"text":"lo"},{"toolUse":{"toolUseId":"t1","name":"now","input":{}}}]}},` +
		`"stopReason":"tool_use","usage":{"inputTokens":5,"outputTokens":2}}`
	const plain = `{"output":{"message":{"role":"assistant","content":[{"text":"Hello"}]}},"stopReason":"end_turn","usage":{"inputTokens":5,"outputTokens":2}}`
	const head = `{"id":"chatcmpl-r-1","object":"chat.completion","created":1700000000,"model":"m","choices":[{"index":0,"message":{"role":"assistant",`
	const calls = `"tool_calls":[{"id":"t1","type":"function","function":{"name":"now","arguments":"{}"}}]`
	const tail = `"logprobs":null,"finish_reason":%q}],"usage":{"prompt_tokens":5,"completion_tokens":2,"total_tokens":7,"prompt_tokens_details":{"cached_tokens":0}}}`
	for _, tc := range []struct {
		name   string
		strict bool
		body   string
		want   string
	}{
		{"not strict", false, reasoned, head + `"content":"Hello","refusal":null,` + calls + `,"content_blocks":[{"type":"thinking","thinking":"Let me think.","signature":"sig-1"},` +
			`{"type":"redacted_thinking","data":"ZW5jcnlwdGVk"},{"type":"text","text":"Hel"},{"type":"text","text":"lo"}]},` + fmt.Sprintf(tail, "tool_calls")},
		{"strict", true, reasoned, head + `"content":"Hello","refusal":null,` + calls + `},` + fmt.Sprintf(tail, "tool_calls")},
		{"not strict, no reasoning", false, plain, head + `"content":"Hello","refusal":null},` + fmt.Sprintf(tail, "stop")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req := &core.Request{Endpoint: core.EndpointChatComplete, Model: "m", StrictCompliance: tc.strict}
			resp := &core.Response{Status: 200, Header: http.Header{"X-Amzn-Requestid": {"r-1"}}, Body: []byte(tc.body)}
			if err := p.TranslateResponse(req, resp); err != nil {
				t.Fatal(err)
			}
			if !jsonEqual(t, resp.Body, []byte(tc.want)) {
				t.Fatalf("body\n got %s\nwant %s", resp.Body, tc.want)
			}
		})
	}
}

// The frame builders of the event stream tests.
var (
	encodeFrame = awsstreamtest.Frame
	event       = awsstreamtest.Event
)

type header = awsstreamtest.Header

func TestTranslateEmbed(t *testing.T) {
	for _, tc := range []struct {
		name, body, wantModel, wantBody string
	}{
		{"titan v1", `{"model":"amazon.titan-embed-text-v1","input":["only"]}`, "amazon.titan-embed-text-v1", `{"inputText":"only"}`},
		{"cohere v4 profile, dimensions, truncate", `{"model":"us.cohere.embed-v4:0","input":"a","dimensions":256,"truncate":"END"}`,
			"us.cohere.embed-v4:0", `{"texts":["a"],"input_type":"search_document","truncate":"END","output_dimension":256}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			model, out, err := translateEmbedRequest([]byte(tc.body))
			if err != nil || model != tc.wantModel || !jsonEqual(t, out, []byte(tc.wantBody)) {
				t.Errorf("got %q %s %v", model, out, err)
			}
		})
	}

	for _, tc := range []struct {
		name, model, answer, want, err string
	}{
		{"cohere by type", "cohere.embed-v4:0", `{"embeddings":{"float":[[1,2]]}}`,
			`{"object":"list","data":[{"object":"embedding","index":0,"embedding":[1,2]}],"model":"cohere.embed-v4:0","usage":{"prompt_tokens":0,"total_tokens":0}}`, ""},
		{"cohere int8 only", "cohere.embed-v4:0", `{"embeddings":{"int8":[[1,2]]}}`, "", "float vectors"},
		{"titan without embedding", "amazon.titan-embed-text-v2:0", `{"inputTextTokenCount":1}`, "", "no embedding"},
		{"not json", "amazon.titan-embed-text-v2:0", `<html>`, "", "reading the Titan embedding answer"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req := &core.Request{Endpoint: core.EndpointEmbed, Model: tc.model, Body: []byte(`{"model":"` + tc.model + `","input":"a"}`)}
			got, err := translateEmbedAnswer(req, &core.Response{Status: 200, Body: []byte(tc.answer), Header: http.Header{}})
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Errorf("error %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil || !jsonEqual(t, got, []byte(tc.want)) {
				t.Errorf("got %s %v", got, err)
			}
		})
	}
}

func TestTranslateRerank(t *testing.T) {
	const arn = "arn:aws:bedrock:us-west-2::foundation-model/cohere.rerank-v3-5:0"
	out, err := translateRerankRequest([]byte(`{"model":"`+arn+`","query":"q","documents":["a"],"top_n":5}`), "eu-west-1")
	want := `{"queries":[{"type":"TEXT","textQuery":{"text":"q"}}],"sources":[{"type":"INLINE","inlineDocumentSource":{"type":"TEXT","textDocument":{"text":"a"}}}],` +
		`"rerankingConfiguration":{"type":"BEDROCK_RERANKING_MODEL","bedrockRerankingConfiguration":{"numberOfResults":1,"modelConfiguration":{"modelArn":"` + arn + `"}}}}`
	if err != nil || !jsonEqual(t, out, []byte(want)) {
		t.Errorf("an ARN is kept, top_n over the documents is their count: %s %v", out, err)
	}
	req := &core.Request{Endpoint: core.EndpointRerank, Model: "m", Body: []byte(`{"model":"m","query":"q","documents":["a"]}`)}
	for _, answer := range []string{`{"results":[{"relevanceScore":1}]}`, `{"results":[{"index":1,"relevanceScore":1}]}`, `[]`} {
		if _, err := translateRerankAnswer(req, &core.Response{Status: 200, Body: []byte(answer), Header: http.Header{}}); err == nil {
			t.Errorf("answer %s: no error", answer)
		}
	}
}
