package adminsvc

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/llm-gateway/gateway/core"
)

// lineRecord is a record with every kind of member: strings with escapes,
// a map, nested objects and a raw body holding braces, brackets and quotes
// inside strings, and whitespace.
func lineRecord() *core.LogRecord {
	at := time.Date(2026, 11, 22, 8, 0, 0, 0, time.UTC)
	return &core.LogRecord{
		ID: core.NewLogID(at), CreatedAt: at, TraceID: `t"1\}`, Metadata: map[string]string{"env": "prod", "a{": "]"},
		WorkspaceID: "ws", Provider: "openai", Model: "gpt-4o", Method: "POST", Path: "/v1/chat/completions?x=[1]",
		Status: 200, Stream: true, LatencyMs: 12.5, Usage: core.Usage{PromptTokens: 3, CompletionTokens: 4, TotalTokens: 7},
		Request: &core.LogMessage{Headers: map[string]string{"content-type": "application/json"},
			Body: json.RawMessage(`{ "model" : "gpt-4o", "messages": [ {"role":"user","content":"a } ] \" , b"} ] }`)},
	}
}

func TestExportLine(t *testing.T) {
	r := lineRecord()
	full, err := r.AppendJSON(nil)
	if err != nil {
		t.Fatal(err)
	}
	var members map[string]json.RawMessage
	if err := json.Unmarshal(full, &members); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name   string
		fields []string
		want   string
	}{
		{"first and last", []string{"id", "request"}, `{"id":` + string(members["id"]) + `,"request":` + string(members["request"]) + "}"},
		{"escaped strings and a map", []string{"trace_id", "metadata"}, `{"trace_id":` + string(members["trace_id"]) + `,"metadata":` + string(members["metadata"]) + "}"},
		{"numbers and an object", []string{"status", "latency_ms", "usage"}, `{"status":200,"latency_ms":12.5,"usage":` + string(members["usage"]) + "}"},
		{"a literal", []string{"method", "stream"}, `{"method":"POST","stream":true}`},
		{"left out when empty", []string{"span_id", "error", "response"}, `{}`},
		{"some left out", []string{"span_id", "path", "response"}, `{"path":"/v1/chat/completions?x=[1]"}`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			lines := exportLines{fields: tc.fields}
			got, err := lines.append([]byte("before\n"), r)
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != "before\n"+tc.want+"\n" {
				t.Fatalf("got  %s\nwant %s", got, tc.want)
			}
			if !json.Valid(got[len("before\n"):]) {
				t.Fatalf("not JSON: %s", got)
			}
		})
	}
}

// BenchmarkExportLine is the cost of one exported record's line.
func BenchmarkExportLine(b *testing.B) {
	r := lineRecord()
	fields := []string{"id", "created_at", "trace_id", "status", "usage", "request"}
	lines := exportLines{fields: fields}
	var line []byte
	b.ReportAllocs()
	for b.Loop() {
		var err error
		if line, err = lines.append(line[:0], r); err != nil {
			b.Fatal(err)
		}
	}
}
