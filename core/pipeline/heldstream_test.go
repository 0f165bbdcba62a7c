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

// TestRetextStream: a held stream told anew with a transform's text: the
// first piece of a choice's text carries all of it, later pieces are
// removed (their events dropped when nothing else is left), logprobs go,
// and what is not text passes unchanged.
func TestRetextStream(t *testing.T) {
	for _, tc := range []struct {
		name, stream string
		texts        map[int]string
		want         string
	}{
		{"chat chunks",
			"data: {\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"\"}}]}\n\n" +
				"data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"my ssn\"},\"logprobs\":{\"content\":[]}}]}\n\n" +
				"data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\" is 123\"}}]}\n\n" +
				"data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"!\"},\"finish_reason\":\"stop\"}]}\n\n" +
				"data: {\"choices\":[],\"usage\":{\"total_tokens\":3}}\n\ndata: [DONE]\n\n",
			map[int]string{0: "my ssn is [REDACTED]!"},
			"data: {\"choices\":[{\"delta\":{\"content\":\"my ssn is [REDACTED]!\",\"role\":\"assistant\"},\"index\":0}]}\n\n" +
				"data: {\"choices\":[{\"delta\":{},\"finish_reason\":\"stop\",\"index\":0}]}\n\n" +
				"data: {\"choices\":[],\"usage\":{\"total_tokens\":3}}\n\ndata: [DONE]\n\n"},
		{"a choice the transform left out stays",
			"data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"a\"}},{\"index\":1,\"delta\":{\"content\":\"b\"}}]}\n\n" +
				"data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"c\"}},{\"index\":1,\"delta\":{\"content\":\"d\"}}]}\n\n",
			map[int]string{0: "X"},
			"data: {\"choices\":[{\"delta\":{\"content\":\"X\"},\"index\":0},{\"delta\":{\"content\":\"b\"},\"index\":1}]}\n\n" +
				"data: {\"choices\":[{\"delta\":{},\"index\":0},{\"delta\":{\"content\":\"d\"},\"index\":1}]}\n\n"},
		{"text completion, CRLF",
			"data: {\"choices\":[{\"index\":0,\"text\":\"x\"}]}\r\n\r\ndata: {\"choices\":[{\"index\":0,\"text\":\"y\"}]}\r\n\r\n",
			map[int]string{0: "Z"},
			"data: {\"choices\":[{\"index\":0,\"text\":\"Z\"}]}\n\n"},
		{"anthropic, event lines kept",
			"event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0}\n\n" +
				"event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"Hi \"}}\n\n" +
				"event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"Bob\"}}\n\n" +
				"event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n",
			map[int]string{0: "Hi [NAME]"},
			"event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0}\n\n" +
				"event: content_block_delta\ndata: {\"delta\":{\"text\":\"Hi [NAME]\",\"type\":\"text_delta\"},\"index\":0,\"type\":\"content_block_delta\"}\n\n" +
				"event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n"},
		{"responses",
			"event: response.output_text.delta\ndata: {\"type\":\"response.output_text.delta\",\"delta\":\"Bob \"}\n\n" +
				"event: response.output_text.delta\ndata: {\"type\":\"response.output_text.delta\",\"delta\":\"here\"}\n\n" +
				"event: response.output_text.done\ndata: {\"type\":\"response.output_text.done\",\"text\":\"Bob here\"}\n\n" +
				"event: response.completed\ndata: {\"type\":\"response.completed\",\"response\":{\"output\":[{\"type\":\"message\",\"content\":[{\"type\":\"output_text\",\"text\":\"Bob here\"}]}],\"usage\":{\"total_tokens\":7}}}\n\n",
			map[int]string{0: "[NAME] here"},
			"event: response.output_text.delta\ndata: {\"delta\":\"[NAME] here\",\"type\":\"response.output_text.delta\"}\n\n" +
				"event: response.output_text.done\ndata: {\"text\":\"[NAME] here\",\"type\":\"response.output_text.done\"}\n\n" +
				"event: response.completed\ndata: {\"response\":{\"output\":[{\"content\":[{\"text\":\"[NAME] here\",\"type\":\"output_text\"}],\"type\":\"message\"}],\"usage\":{\"total_tokens\":7}},\"type\":\"response.completed\"}\n\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := string(retextStream([]byte(tc.stream), tc.texts)); got != tc.want {
				t.Errorf("got\n%s\nwant\n%s", got, tc.want)
			}
		})
	}
}
