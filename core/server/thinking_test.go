package server_test

import (
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/llm-gateway/gateway/core"
	"github.com/llm-gateway/gateway/core/awsstream/awsstreamtest"
)

// fakeThinkingClaude answers as Claude does with extended thinking and a
// tool call: thinking (in two pieces, then its signature), redacted
// thinking, text and a tool_use, whole or streamed, through Anthropic's
// Messages API (Anthropic's own, Vertex AI's rawPredict and
// streamRawPredict) or Bedrock's Converse (converse, converse-stream).
func fakeThinkingClaude() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct{ Stream bool }
		json.NewDecoder(r.Body).Decode(&req)
		switch p := r.URL.Path; {
		case strings.HasSuffix(p, "/converse-stream"):
			w.Header().Set("Content-Type", core.ContentTypeAWSEventStream)
			for _, f := range [][2]string{
				{"messageStart", `{"role":"assistant"}`},
				{"contentBlockDelta", `{"contentBlockIndex":0,"delta":{"reasoningContent":{"text":"Let me "}}}`},
				{"contentBlockDelta", `{"contentBlockIndex":0,"delta":{"reasoningContent":{"text":"check."}}}`},
				{"contentBlockDelta", `{"contentBlockIndex":0,"delta":{"reasoningContent":{"signature":"sig-1"}}}`},
				{"contentBlockStop", `{"contentBlockIndex":0}`},
				{"contentBlockDelta", `{"contentBlockIndex":1,"delta":{"reasoningContent":{"redactedContent":"ZW5j"}}}`},
				{"contentBlockStop", `{"contentBlockIndex":1}`},
				{"contentBlockDelta", `{"contentBlockIndex":2,"delta":{"text":"Checking."}}`},
				{"contentBlockStop", `{"contentBlockIndex":2}`},
				{"contentBlockStart", `{"contentBlockIndex":3,"start":{"toolUse":{"toolUseId":"t1","name":"now"}}}`},
				{"contentBlockDelta", `{"contentBlockIndex":3,"delta":{"toolUse":{"input":"{}"}}}`},
				{"contentBlockStop", `{"contentBlockIndex":3}`},
				{"messageStop", `{"stopReason":"tool_use"}`},
				{"metadata", `{"usage":{"inputTokens":6,"outputTokens":9,"totalTokens":15}}`},
			} {
				w.Write(awsstreamtest.Event(f[0], f[1]))
			}
		case strings.HasSuffix(p, "/converse"):
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, `{"output":{"message":{"role":"assistant","content":[{"reasoningContent":{"reasoningText":{"text":"Let me check.","signature":"sig-1"}}},`+
				`{"reasoningContent":{"redactedContent":"ZW5j"}},{"text":"Checking."},{"toolUse":{"toolUseId":"t1","name":"now","input":{}}}]}},`+
				`"stopReason":"tool_use","usage":{"inputTokens":6,"outputTokens":9,"totalTokens":15}}`)
		case req.Stream:
			w.Header().Set("Content-Type", "text/event-stream")
			for _, data := range []string{
				`{"type":"message_start","message":{"id":"msg_t","model":"claude-x","usage":{"input_tokens":6,"output_tokens":1}}}`,
				`{"type":"content_block_start","index":0,"content_block":{"type":"thinking","thinking":"","signature":""}}`,
				`{"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"Let me "}}`,
				`{"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"check."}}`,
				`{"type":"content_block_delta","index":0,"delta":{"type":"signature_delta","signature":"sig-1"}}`,
				`{"type":"content_block_stop","index":0}`,
				`{"type":"content_block_start","index":1,"content_block":{"type":"redacted_thinking","data":"ZW5j"}}`,
				`{"type":"content_block_stop","index":1}`,
				`{"type":"content_block_start","index":2,"content_block":{"type":"text","text":""}}`,
				`{"type":"content_block_delta","index":2,"delta":{"type":"text_delta","text":"Checking."}}`,
				`{"type":"content_block_stop","index":2}`,
				`{"type":"content_block_start","index":3,"content_block":{"type":"tool_use","id":"t1","name":"now","input":{}}}`,
				`{"type":"content_block_delta","index":3,"delta":{"type":"input_json_delta","partial_json":"{}"}}`,
				`{"type":"content_block_stop","index":3}`,
				`{"type":"message_delta","delta":{"stop_reason":"tool_use"},"usage":{"output_tokens":9}}`,
				`{"type":"message_stop"}`,
			} {
				var ev struct{ Type string }
				json.Unmarshal([]byte(data), &ev)
				fmt.Fprintf(w, "event: %s\ndata: %s\n\n", ev.Type, data)
			}
		default:
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, `{"id":"msg_t","type":"message","role":"assistant","model":"claude-x","content":[{"type":"thinking","thinking":"Let me check.","signature":"sig-1"},`+
				`{"type":"redacted_thinking","data":"ZW5j"},{"type":"text","text":"Checking."},{"type":"tool_use","id":"t1","name":"now","input":{}}],`+
				`"stop_reason":"tool_use","usage":{"input_tokens":6,"output_tokens":9}}`)
		}
	})
}

// gatheredStream is the assistant message a client makes of a chat
// completion stream as docs/configuration.md says: the content pieces
// joined, each content_blocks index's delta pieces joined key by key (a
// block of thinking and signature, or of data), in index order, and the
// tool calls by index.
func gatheredStream(t *testing.T, body []byte) map[string]any {
	t.Helper()
	var content string
	blocks := map[int]map[string]string{}
	type call struct {
		ID       string `json:"id"`
		Type     string `json:"type"`
		Function struct {
			Name      string `json:"name"`
			Arguments string `json:"arguments"`
		} `json:"function"`
	}
	calls := map[int]*call{}
	for _, ev := range sseEvents(body) {
		data := strings.TrimPrefix(ev, "data: ")
		if data == "[DONE]" {
			break
		}
		var c struct {
			Choices []struct {
				Delta struct {
					Content       string
					ContentBlocks []struct {
						Index int
						Delta map[string]string
					} `json:"content_blocks"`
					ToolCalls []struct {
						Index int
						call
					} `json:"tool_calls"`
				}
			}
		}
		if err := json.Unmarshal([]byte(data), &c); err != nil {
			t.Fatalf("chunk %s: %v", data, err)
		}
		for _, ch := range c.Choices {
			content += ch.Delta.Content
			for _, b := range ch.Delta.ContentBlocks {
				if blocks[b.Index] == nil {
					blocks[b.Index] = map[string]string{}
				}
				for k, v := range b.Delta {
					blocks[b.Index][k] += v
				}
			}
			for _, tc := range ch.Delta.ToolCalls {
				c := calls[tc.Index]
				if c == nil {
					c = &call{ID: tc.ID, Type: tc.Type}
					c.Function.Name = tc.Function.Name
					calls[tc.Index] = c
				}
				c.Function.Arguments += tc.Function.Arguments
			}
		}
	}
	msg := map[string]any{"role": "assistant", "content": content}
	var list []any
	for _, i := range slices.Sorted(maps.Keys(blocks)) {
		list = append(list, blocks[i])
	}
	if list != nil {
		msg["content_blocks"] = list
	}
	var cl []any
	for _, i := range slices.Sorted(maps.Keys(calls)) {
		cl = append(cl, calls[i])
	}
	if cl != nil {
		msg["tool_calls"] = cl
	}
	return msg
}

// TestThinkingRoundTrip: with strict compliance off, the thinking that
// Claude's answer gives the client, through Anthropic's API, Vertex AI's
// or Bedrock's, whole (message.content_blocks) or streamed (content_blocks
// deltas, gathered as the docs say), is taken back as it came on the
// assistant message of the next turn, and reaches the model as the
// signed thinking and the redacted thinking it was, first in the turn,
// then the text and the tool call.
func TestThinkingRoundTrip(t *testing.T) {
	t.Parallel()
	g := newGateway(t, fakeThinkingClaude())
	anthropicTurn := `{"role":"assistant","content":[{"type":"thinking","thinking":"Let me check.","signature":"sig-1"},{"type":"redacted_thinking","data":"ZW5j"},` +
		`{"type":"text","text":"Checking."},{"type":"tool_use","id":"t1","name":"now","input":{}}]}`
	for _, p := range []struct {
		name, model string
		hdr         []string
		turn        string // the assistant turn the model gets back
	}{
		{"anthropic", "claude-x", []string{"x-gateway-provider", "anthropic"}, anthropicTurn},
		{"vertex-ai", "claude-sonnet-4@20250514", []string{"x-gateway-provider", "vertex-ai", "x-gateway-custom-host", g.up.URL,
			"x-gateway-vertex-project-id", "my-project-1", "x-gateway-vertex-region", "us-east5"}, anthropicTurn},
		{"bedrock", "anthropic.claude-sonnet-4-v1:0", []string{"x-gateway-provider", "bedrock", "x-gateway-custom-host", g.up.URL, "Authorization", "",
			"x-gateway-aws-region", "eu-west-1", "x-gateway-aws-access-key-id", "AKIDBEDROCK", "x-gateway-aws-secret-access-key", "bedrock-secret"},
			`{"role":"assistant","content":[{"reasoningContent":{"reasoningText":{"text":"Let me check.","signature":"sig-1"}}},{"reasoningContent":{"redactedContent":"ZW5j"}},` +
				`{"text":"Checking."},{"toolUse":{"toolUseId":"t1","name":"now","input":{}}}]}`},
	} {
		for _, stream := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s, stream %v", p.name, stream), func(t *testing.T) {
				hdr := append([]string{"x-gateway-strict-open-ai-compliance", "false"}, p.hdr...)
				const thinking = `"thinking":{"type":"enabled","budget_tokens":1024},"max_tokens":2048`
				user := `{"role":"user","content":"What time is it?"}`
				r := g.do(t, "POST", "/v1/chat/completions", fmt.Appendf(nil, `{"model":%q,%s,"stream":%v,"tools":[{"type":"function","function":{"name":"now"}}],"messages":[%s]}`,
					p.model, thinking, stream, user), hdr...)
				if r.status != 200 {
					t.Fatalf("first turn: %d %s", r.status, r.body)
				}
				var msg any
				if stream {
					msg = gatheredStream(t, r.body)
				} else {
					var answer struct {
						Choices []struct{ Message json.RawMessage }
					}
					if err := json.Unmarshal(r.body, &answer); err != nil || len(answer.Choices) != 1 {
						t.Fatalf("answer %s", r.body)
					}
					msg = answer.Choices[0].Message // as it came
				}
				back, _ := json.Marshal(msg)
				if !strings.Contains(string(back), `"content_blocks"`) || !strings.Contains(string(back), "sig-1") {
					t.Fatalf("the answer's message holds no signed thinking: %s", back)
				}

				second := fmt.Appendf(nil, `{"model":%q,%s,"tools":[{"type":"function","function":{"name":"now"}}],"messages":[%s,%s,{"role":"tool","tool_call_id":"t1","content":"noon"}]}`,
					p.model, thinking, user, back)
				if r := g.do(t, "POST", "/v1/chat/completions", second, hdr...); r.status != 200 {
					t.Fatalf("second turn, the message sent back %s: %d %s", back, r.status, r.body)
				}
				var sent struct{ Messages []json.RawMessage }
				if up := g.up.last(t); json.Unmarshal(up.Body, &sent) != nil || len(sent.Messages) != 3 || !jsonSame(t, sent.Messages[1], p.turn) {
					t.Errorf("the message sent back %s reached the model as %s", back, up.Body)
				}
			})
		}
	}
}
