package anthropic

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"reflect"
	"testing"

	"github.com/llm-gateway/gateway/core"
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
// Messages request.
func TestTranslateRequest(t *testing.T) {
	const user = `{"role":"user","content":"hi"}`
	const userTurn = `{"role":"user","content":[{"type":"text","text":"hi"}]}`
	for _, tc := range []struct {
		name, in, want string
	}{
		{"minimal: default max_tokens",
			`{"model":"claude-x","messages":[` + user + `]}`,
			`{"model":"claude-x","max_tokens":4096,"messages":[` + userTurn + `]}`},
		{"max_tokens",
			`{"model":"m","max_tokens":12,"messages":[` + user + `]}`,
			`{"model":"m","max_tokens":12,"messages":[` + userTurn + `]}`},
		{"max_completion_tokens wins over max_tokens",
			`{"model":"m","max_tokens":12,"max_completion_tokens":34,"messages":[` + user + `]}`,
			`{"model":"m","max_tokens":34,"messages":[` + userTurn + `]}`},
		{"sampling, stream, user; numbers as written",
			`{"model":"m","temperature":0.70,"top_p":1e-1,"top_k":5,"stream":true,"stream_options":{"include_usage":true},"user":"u-1","messages":[` + user + `]}`,
			`{"model":"m","max_tokens":4096,"temperature":0.70,"top_p":1e-1,"top_k":5,"stream":true,"metadata":{"user_id":"u-1"},"messages":[` + userTurn + `]}`},
		{"null fields are absent",
			`{"model":"m","temperature":null,"stop":null,"tool_choice":null,"n":null,"messages":[` + user + `]}`,
			`{"model":"m","max_tokens":4096,"messages":[` + userTurn + `]}`},
		{"stop string",
			`{"model":"m","stop":"END","messages":[` + user + `]}`,
			`{"model":"m","max_tokens":4096,"stop_sequences":["END"],"messages":[` + userTurn + `]}`},
		{"stop list",
			`{"model":"m","stop":["a","b"],"messages":[` + user + `]}`,
			`{"model":"m","max_tokens":4096,"stop_sequences":["a","b"],"messages":[` + userTurn + `]}`},
		{"dropped fields, n 1",
			`{"model":"m","n":1,"seed":3,"frequency_penalty":1,"presence_penalty":1,"logit_bias":{"1":2},"logprobs":false,"response_format":{"type":"text"},"store":true,"metadata":{"a":"b"},"service_tier":"auto","messages":[` + user + `]}`,
			`{"model":"m","max_tokens":4096,"messages":[` + userTurn + `]}`},
		{"system and developer messages, in order, to system",
			`{"model":"m","messages":[{"role":"system","content":"be brief"},` + user + `,{"role":"developer","content":[{"type":"text","text":"no lists"},{"type":"text","text":""}]}]}`,
			`{"model":"m","max_tokens":4096,"system":[{"type":"text","text":"be brief"},{"type":"text","text":"no lists"}],"messages":[` + userTurn + `]}`},
		{"one system text is a string",
			`{"model":"m","messages":[{"role":"system","content":[{"type":"text","text":"be brief"}]},` + user + `]}`,
			`{"model":"m","max_tokens":4096,"system":"be brief","messages":[` + userTurn + `]}`},
		{"user text and images",
			`{"model":"m","messages":[{"role":"user","content":[{"type":"text","text":"what is it?"},` +
				`{"type":"image_url","image_url":{"url":"data:image/png;base64,iVBORw0K","detail":"low"}},` +
				`{"type":"image_url","image_url":{"url":"https://example.test/cat.jpg"}},{"type":"image_url","image_url":{"url":"HTTP://example.test/dog.jpg"}}]}]}`,
			`{"model":"m","max_tokens":4096,"messages":[{"role":"user","content":[{"type":"text","text":"what is it?"},` +
				`{"type":"image","source":{"type":"base64","media_type":"image/png","data":"iVBORw0K"}},` +
				`{"type":"image","source":{"type":"url","url":"https://example.test/cat.jpg"}},{"type":"image","source":{"type":"url","url":"HTTP://example.test/dog.jpg"}}]}]}`},
		{"assistant text, tool calls and tool results merged",
			`{"model":"m","messages":[` + user + `,` +
				`{"role":"assistant","content":"checking","tool_calls":[{"id":"call_1","type":"function","function":{"name":"weather","arguments":"{\"city\": \"Paris\"}"}},{"id":"call_2","type":"function","function":{"name":"time","arguments":""}}]},` +
				`{"role":"tool","tool_call_id":"call_1","content":"sunny"},{"role":"tool","tool_call_id":"call_2","content":[{"type":"text","text":"noon"},{"type":"text","text":"UTC"}]},` +
				`{"role":"assistant","content":null,"tool_calls":[{"id":"call_3","type":"function","function":{"name":"time","arguments":"{}"}}]},` +
				`{"role":"tool","tool_call_id":"call_3","content":""},{"role":"user","content":"thanks"}]}`,
			`{"model":"m","max_tokens":4096,"messages":[` + userTurn + `,` +
				`{"role":"assistant","content":[{"type":"text","text":"checking"},{"type":"tool_use","id":"call_1","name":"weather","input":{"city":"Paris"}},{"type":"tool_use","id":"call_2","name":"time","input":{}}]},` +
				`{"role":"user","content":[{"type":"tool_result","tool_use_id":"call_1","content":"sunny"},{"type":"tool_result","tool_use_id":"call_2","content":[{"type":"text","text":"noon"},{"type":"text","text":"UTC"}]}]},` +
				`{"role":"assistant","content":[{"type":"tool_use","id":"call_3","name":"time","input":{}}]},` +
				`{"role":"user","content":[{"type":"tool_result","tool_use_id":"call_3"}]},{"role":"user","content":[{"type":"text","text":"thanks"}]}]}`},
		{"tools, tool_choice auto",
			`{"model":"m","messages":[` + user + `],"tool_choice":"auto","tools":[{"type":"function","function":{"name":"weather","description":"the weather","parameters":{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]},"strict":true}},{"type":"function","function":{"name":"now"}}]}`,
			`{"model":"m","max_tokens":4096,"messages":[` + userTurn + `],"tool_choice":{"type":"auto"},"tools":[{"name":"weather","description":"the weather","input_schema":{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}},{"name":"now","input_schema":{"type":"object","properties":{}}}]}`},
		{"tool_choice none",
			`{"model":"m","messages":[` + user + `],"tool_choice":"none","parallel_tool_calls":false,"tools":[{"type":"function","function":{"name":"now"}}]}`,
			`{"model":"m","max_tokens":4096,"messages":[` + userTurn + `],"tool_choice":{"type":"none"},"tools":[{"name":"now","input_schema":{"type":"object","properties":{}}}]}`},
		{"tool_choice required",
			`{"model":"m","messages":[` + user + `],"tool_choice":"required","tools":[{"type":"function","function":{"name":"now"}}]}`,
			`{"model":"m","max_tokens":4096,"messages":[` + userTurn + `],"tool_choice":{"type":"any"},"tools":[{"name":"now","input_schema":{"type":"object","properties":{}}}]}`},
		{"tool_choice named, no parallel calls",
			`{"model":"m","messages":[` + user + `],"tool_choice":{"type":"function","function":{"name":"now"}},"parallel_tool_calls":false,"tools":[{"type":"function","function":{"name":"now"}}]}`,
			`{"model":"m","max_tokens":4096,"messages":[` + userTurn + `],"tool_choice":{"type":"tool","name":"now","disable_parallel_tool_use":true},"tools":[{"name":"now","input_schema":{"type":"object","properties":{}}}]}`},
		{"no parallel calls without tool_choice",
			`{"model":"m","messages":[` + user + `],"parallel_tool_calls":false,"tools":[{"type":"function","function":{"name":"now"}}]}`,
			`{"model":"m","max_tokens":4096,"messages":[` + userTurn + `],"tool_choice":{"type":"auto","disable_parallel_tool_use":true},"tools":[{"name":"now","input_schema":{"type":"object","properties":{}}}]}`},
		{"an assistant's thinking is sent back, in order, before its tool_use",
			`{"model":"m","messages":[` + user + `,{"role":"assistant","content":[{"type":"thinking","thinking":"hm","signature":"sig"},{"type":"redacted_thinking","data":"enc"},{"type":"text","text":"Checking."}],` +
				`"tool_calls":[{"id":"t1","type":"function","function":{"name":"now","arguments":"{}"}}]},{"role":"tool","tool_call_id":"t1","content":"noon"}]}`,
			`{"model":"m","max_tokens":4096,"messages":[` + userTurn + `,{"role":"assistant","content":[{"type":"thinking","thinking":"hm","signature":"sig"},{"type":"redacted_thinking","data":"enc"},` +
				`{"type":"text","text":"Checking."},{"type":"tool_use","id":"t1","name":"now","input":{}}]},{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":"noon"}]}]}`},
		{"an assistant's content_blocks are its turn, not its content",
			`{"model":"m","messages":[` + user + `,{"role":"assistant","content":"4","content_blocks":[{"type":"thinking","thinking":"hm","signature":"sig"},{"type":"text","text":"4"}]}]}`,
			`{"model":"m","max_tokens":4096,"messages":[` + userTurn + `,{"role":"assistant","content":[{"type":"thinking","thinking":"hm","signature":"sig"},{"type":"text","text":"4"}]}]}`},
		{"content_blocks from a stream (thinking only) are followed by the content's text",
			`{"model":"m","messages":[` + user + `,{"role":"assistant","content":"4","content_blocks":[{"type":"thinking","thinking":"hm","signature":"sig"}],` +
				`"tool_calls":[{"id":"t1","type":"function","function":{"name":"now","arguments":"{}"}}]}]}`,
			`{"model":"m","max_tokens":4096,"messages":[` + userTurn + `,{"role":"assistant","content":[{"type":"thinking","thinking":"hm","signature":"sig"},{"type":"text","text":"4"},` +
				`{"type":"tool_use","id":"t1","name":"now","input":{}}]}]}`},
		{"an assistant's thinking given after its text goes first",
			`{"model":"m","messages":[` + user + `,{"role":"assistant","content":[{"type":"text","text":"Checking."},{"type":"thinking","thinking":"hm","signature":"sig"}],` +
				`"tool_calls":[{"id":"t1","type":"function","function":{"name":"now","arguments":"{}"}}]}]}`,
			`{"model":"m","max_tokens":4096,"messages":[` + userTurn + `,{"role":"assistant","content":[{"type":"thinking","thinking":"hm","signature":"sig"},{"type":"text","text":"Checking."},` +
				`{"type":"tool_use","id":"t1","name":"now","input":{}}]}]}`},
		{"content_blocks merged from a stream's deltas, without type",
			`{"model":"m","messages":[` + user + `,{"role":"assistant","content":"4","content_blocks":[{"index":0,"thinking":"hm","signature":"sig"},{"index":1,"data":"enc"}]}]}`,
			`{"model":"m","max_tokens":4096,"messages":[` + userTurn + `,{"role":"assistant","content":[{"type":"thinking","thinking":"hm","signature":"sig"},{"type":"redacted_thinking","data":"enc"},{"type":"text","text":"4"}]}]}`},
		{"whitespace-only texts are left out (Anthropic refuses them)",
			`{"model":"m","messages":[{"role":"system","content":"  "},{"role":"system","content":"s"},{"role":"user","content":[{"type":"text","text":" \n "},{"type":"text","text":"hi"}]},{"role":"assistant","content":" ","tool_calls":[{"id":"c","type":"function","function":{"name":"f","arguments":"{}"}}]},{"role":"tool","tool_call_id":"c","content":"ok"}]}`,
			`{"model":"m","max_tokens":4096,"system":"s","messages":[{"role":"user","content":[{"type":"text","text":"hi"}]},{"role":"assistant","content":[{"type":"tool_use","id":"c","name":"f","input":{}}]},{"role":"user","content":[{"type":"tool_result","tool_use_id":"c","content":"ok"}]}]}`},
		{"an empty last assistant message, prefilling nothing, is left out",
			`{"model":"m","messages":[` + user + `,{"role":"assistant","content":""}]}`,
			`{"model":"m","max_tokens":4096,"messages":[` + userTurn + `]}`},
		{"thinking passes through",
			`{"model":"m","thinking":{"type":"enabled","budget_tokens":1024},"messages":[` + user + `]}`,
			`{"model":"m","max_tokens":4096,"thinking":{"type":"enabled","budget_tokens":1024},"messages":[` + userTurn + `]}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := translateRequest([]byte(tc.in))
			if err != nil {
				t.Fatal(err)
			}
			if !jsonEqual(t, got, []byte(tc.want)) {
				t.Errorf("got  %s\nwant %s", got, tc.want)
			}
		})
	}
}

// TestTranslateRequestRefused: what Anthropic cannot take is a 400 naming
// the field.
func TestTranslateRequestRefused(t *testing.T) {
	const msgs = `"messages":[{"role":"user","content":"hi"}]`
	for _, tc := range []struct{ name, in, param string }{
		{"n", `{"model":"m","n":2,` + msgs + `}`, "n"},
		{"logprobs", `{"model":"m","logprobs":true,"top_logprobs":2,` + msgs + `}`, "logprobs"},
		{"json_object", `{"model":"m","response_format":{"type":"json_object"},` + msgs + `}`, "response_format"},
		{"json_schema", `{"model":"m","response_format":{"type":"json_schema","json_schema":{"name":"x"}},` + msgs + `}`, "response_format"},
		{"functions", `{"model":"m","functions":[{"name":"f"}],` + msgs + `}`, "functions"},
		{"audio", `{"model":"m","modalities":["text","audio"],"audio":{"voice":"alloy","format":"mp3"},` + msgs + `}`, "audio"},
		{"function role", `{"model":"m","messages":[{"role":"function","name":"f","content":"x"}]}`, "messages[0].role"},
		{"audio part", `{"model":"m","messages":[{"role":"user","content":[{"type":"input_audio","input_audio":{"data":"x","format":"wav"}}]}]}`, "messages[0].content[0].type"},
		{"thinking in a user message", `{"model":"m","messages":[{"role":"user","content":[{"type":"thinking","thinking":"x","signature":"s"}]}]}`, "messages[0].content[0].type"},
		{"redacted thinking without data", `{"model":"m","messages":[{"role":"user","content":"hi"},{"role":"assistant","content":[{"type":"redacted_thinking"}]}]}`, "messages[1].content[0].data"},
		{"content_blocks part", `{"model":"m","messages":[{"role":"user","content":"hi"},{"role":"assistant","content_blocks":[{"type":"input_audio"}]}]}`, "messages[1].content_blocks[0].type"},
		{"content_blocks not a list", `{"model":"m","messages":[{"role":"user","content":"hi"},{"role":"assistant","content_blocks":3}]}`, "messages[1].content_blocks"},
		{"image in a system message", `{"model":"m","messages":[{"role":"system","content":[{"type":"image_url","image_url":{"url":"https://x.test/a.png"}}]},{"role":"user","content":"hi"}]}`, "messages[0].content[0].type"},
		{"image URL scheme", `{"model":"m","messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"ftp://x.test/a.png"}}]}]}`, "messages[0].content[0].image_url.url"},
		{"data URL not base64", `{"model":"m","messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"data:image/png,abc"}}]}]}`, "messages[0].content[0].image_url.url"},
		{"arguments not an object", `{"model":"m","messages":[{"role":"user","content":"hi"},{"role":"assistant","tool_calls":[{"id":"c","type":"function","function":{"name":"f","arguments":"[1"}}]}]}`, "messages[1].tool_calls[0].function.arguments"},
		{"tool type", `{"model":"m",` + msgs + `,"tools":[{"type":"custom","custom":{"name":"x"}}]}`, "tools[0].type"},
		{"tool_choice", `{"model":"m",` + msgs + `,"tool_choice":{"type":"allowed_tools"},"tools":[{"type":"function","function":{"name":"f"}}]}`, "tool_choice"},
		// Anthropic refuses a request without messages, and a message without
		// content but for a last assistant one.
		{"system message alone", `{"model":"claude-x","messages":[{"role":"system","content":"s"}]}`, "messages"},
		{"system and developer messages alone", `{"model":"m","messages":[{"role":"system","content":"s"},{"role":"developer","content":[{"type":"text","text":"d"}]}]}`, "messages"},
		{"system and an empty last assistant message", `{"model":"m","messages":[{"role":"system","content":"s"},{"role":"assistant","content":""}]}`, "messages"},
		{"empty user content", `{"model":"m","messages":[{"role":"user","content":""}]}`, "messages[0].content"},
		{"whitespace-only user content", `{"model":"m","messages":[{"role":"user","content":" \t\n"}]}`, "messages[0].content"},
		{"user content of empty texts", `{"model":"m","messages":[{"role":"system","content":"s"},{"role":"user","content":[{"type":"text","text":""}]}]}`, "messages[1].content"},
		{"empty user content before others", `{"model":"m","messages":[{"role":"user","content":[]},{"role":"user","content":"hi"}]}`, "messages[0].content"},
		{"empty assistant content before the last message", `{"model":"m","messages":[{"role":"user","content":"hi"},{"role":"assistant","content":""},{"role":"user","content":"hi"}]}`, "messages[1].content"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := translateRequest([]byte(tc.in))
			var ce *core.Error
			if !errors.As(err, &ce) || ce.Status != http.StatusBadRequest || ce.Param != tc.param {
				t.Fatalf("error %#v, want a 400 naming %s", err, tc.param)
			}
		})
	}
}

// TestBuildRequest: a chat completion goes to /messages with the
// translated body and Anthropic's headers; its own routes pass unchanged.
func TestBuildRequest(t *testing.T) {
	p := New()
	client := http.Header{"Content-Type": {"text/plain"}, "Authorization": {"Bearer client"}, "Anthropic-Beta": {"b1"}}
	body := []byte(`{"model":"m","messages":[{"role":"user","content":"hi"}]}`)
	for _, tc := range []struct {
		name     string
		endpoint core.Endpoint
		path     string
		wantURL  string
		wantBody string
	}{
		{"chat", core.EndpointChatComplete, "/chat/completions", "https://api.anthropic.com/v1/messages",
			`{"model":"m","messages":[{"role":"user","content":[{"type":"text","text":"hi"}]}],"max_tokens":4096}`},
		{"messages", core.EndpointMessages, "/messages", "https://api.anthropic.com/v1/messages", string(body)},
		{"proxy", core.EndpointProxy, "/models", "https://api.anthropic.com/v1/models", string(body)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if !p.Supports(tc.endpoint) {
				t.Fatalf("%s not supported", tc.endpoint)
			}
			req := &core.Request{Endpoint: tc.endpoint, Method: http.MethodPost, Path: tc.path, Header: client, Body: body}
			hr, err := p.BuildRequest(context.Background(), req, &core.Target{APIKey: "ak"})
			if err != nil {
				t.Fatal(err)
			}
			got, _ := io.ReadAll(hr.Body)
			if hr.URL.String() != tc.wantURL || !jsonEqual(t, got, []byte(tc.wantBody)) || hr.ContentLength != int64(len(got)) {
				t.Errorf("%s %s (length %d), want %s %s", hr.URL, got, hr.ContentLength, tc.wantURL, tc.wantBody)
			}
			if tc.endpoint == core.EndpointChatComplete {
				if again, _ := hr.GetBody(); again != nil {
					if b, _ := io.ReadAll(again); !bytes.Equal(b, got) {
						t.Errorf("GetBody %s, want %s", b, got)
					}
				}
			}
			wantCT := "text/plain"
			if tc.endpoint == core.EndpointChatComplete {
				wantCT = "application/json"
			}
			want := http.Header{"Content-Type": {wantCT}, "X-Api-Key": {"ak"}, "Anthropic-Version": {"2023-06-01"}, "Anthropic-Beta": {"b1"}}
			if !reflect.DeepEqual(hr.Header, want) {
				t.Errorf("headers %v, want %v", hr.Header, want)
			}
		})
	}
	for _, e := range []core.Endpoint{core.EndpointEmbed, core.EndpointResponses, core.EndpointComplete} {
		if p.Supports(e) {
			t.Errorf("supports %s", e)
		}
	}
	if _, err := p.BuildRequest(context.Background(), &core.Request{Endpoint: core.EndpointChatComplete, Method: http.MethodPost, Path: "/chat/completions",
		Body: []byte(`{"model":"m","n":3,"messages":[{"role":"user","content":"hi"}]}`)}, &core.Target{}); err == nil {
		t.Error("n=3 accepted")
	}
}

// TestPlatformMessages: a native Messages body for Vertex AI keeps stream
// (and the model when counting); for Bedrock it loses model and stream and
// takes the anthropic-beta header's features as anthropic_beta; both get
// the platform's anthropic_version unless the body has one; a body that is
// not an object with a model is a 400.
func TestPlatformMessages(t *testing.T) {
	bedrock := func(beta ...string) func([]byte) (string, []byte, error) {
		return func(b []byte) (string, []byte, error) { return BedrockMessages(b, beta) }
	}
	const msgs = `"max_tokens":8,"messages":[{"role":"user","content":"hi"}]`
	for _, tc := range []struct {
		name, in, want, param string
		build                 func([]byte) (string, []byte, error)
	}{
		{"bedrock", `{"model":"anthropic.claude-v2:1","stream":true,` + msgs + `}`,
			`{"anthropic_version":"bedrock-2023-05-31",` + msgs + `}`, "", bedrock()},
		{"bedrock keeps a version", `{"model":"anthropic.claude-v2:1","anthropic_version":"v0",` + msgs + `}`,
			`{"anthropic_version":"v0",` + msgs + `}`, "", bedrock()},
		{"bedrock takes anthropic-beta into the body", `{"model":"anthropic.claude-v2:1",` + msgs + `}`,
			`{"anthropic_version":"bedrock-2023-05-31","anthropic_beta":["a-1","b-2","c-3"],` + msgs + `}`, "", bedrock("a-1, b-2", " c-3,")},
		{"bedrock keeps the body's anthropic_beta", `{"model":"anthropic.claude-v2:1","anthropic_beta":["x"],` + msgs + `}`,
			`{"anthropic_version":"bedrock-2023-05-31","anthropic_beta":["x"],` + msgs + `}`, "", bedrock("a-1")},
		{"bedrock without model", `{` + msgs + `}`, "", "model", bedrock()},
		{"bedrock not an object", `[1]`, "", "", bedrock()},
		{"vertex", `{"model":"claude-x","stream":true,` + msgs + `}`,
			`{"anthropic_version":"vertex-2023-10-16","stream":true,` + msgs + `}`, "", func(b []byte) (string, []byte, error) { return VertexMessages(b, false) }},
		{"vertex count", `{"model":"claude-x",` + msgs + `}`,
			`{"model":"claude-x","anthropic_version":"vertex-2023-10-16",` + msgs + `}`, "", func(b []byte) (string, []byte, error) { return VertexMessages(b, true) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			model, out, err := tc.build([]byte(tc.in))
			if tc.want == "" {
				var ce *core.Error
				if !errors.As(err, &ce) || ce.Status != 400 || ce.Param != tc.param {
					t.Fatalf("%v, want a 400 naming %q", err, tc.param)
				}
				return
			}
			if err != nil || !jsonEqual(t, out, []byte(tc.want)) || model == "" || !bytes.Contains([]byte(tc.in), []byte(`"`+model+`"`)) {
				t.Fatalf("%q %s %v, want %s", model, out, err, tc.want)
			}
		})
	}
}
