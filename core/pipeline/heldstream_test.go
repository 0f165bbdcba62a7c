package pipeline

import (
	"encoding/json"
	"reflect"
	"testing"
)

// TestStreamAnswer: the answer the output guardrails check of a held
// stream holds each choice's text, for the stream shapes the gateway
// passes on.
func TestStreamAnswer(t *testing.T) {
	for _, tc := range []struct {
		name, stream string
		want         []string // each choice's content, by index
	}{
		{"chat chunks", "data: {\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"\"}}]}\n\n" +
			"data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Hel\"}}]}\n\ndata: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"lo\"},\"finish_reason\":\"stop\"}]}\n\n" +
			"data: {\"choices\":[],\"usage\":{\"total_tokens\":3}}\n\ndata: [DONE]\n\n", []string{"Hello"}},
		{"two choices, CRLF", "data: {\"choices\":[{\"index\":1,\"delta\":{\"content\":\"b\"}}]}\r\n\r\ndata: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"a\"}}]}\r\n\r\n",
			[]string{"a", "b"}},
		{"text completion, bare CR", "data: {\"choices\":[{\"index\":0,\"text\":\"x\"}]}\r\rdata: {\"choices\":[{\"index\":0,\"text\":\"y\"}]}\r\r", []string{"xy"}},
		{"anthropic", "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"Hi \"}}\n\n" +
			"event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"there\"}}\n\n", []string{"Hi there"}},
		{"responses", "event: response.output_text.delta\ndata: {\"type\":\"response.output_text.delta\",\"delta\":\"ok\"}\n\n", []string{"ok"}},
		{"data over two lines", "data: {\"choices\":[{\"index\":0,\ndata: \"delta\":{\"content\":\"z\"}}]}\n\n", []string{"z"}},
		{"nothing", "data: [DONE]\n\n", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got struct {
				Choices []struct {
					Index   int
					Message struct{ Content string }
				}
			}
			if err := json.Unmarshal(streamAnswer([]byte(tc.stream)), &got); err != nil {
				t.Fatal(err)
			}
			var texts []string
			for i, c := range got.Choices {
				if c.Index != i {
					t.Errorf("choice %d has index %d", i, c.Index)
				}
				texts = append(texts, c.Message.Content)
			}
			if !reflect.DeepEqual(texts, tc.want) {
				t.Errorf("texts %q, want %q", texts, tc.want)
			}
		})
	}
}
