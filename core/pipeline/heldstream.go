package pipeline

import (
	"bytes"
	"encoding/json"
	"io"
	"sort"

	"github.com/llm-gateway/gateway/core"
	"github.com/llm-gateway/gateway/core/sse"
)

// maxHeldStream bounds a stream held for the afterResponseHook hooks.
const maxHeldStream = 32 << 20

// holdStream reads resp's event stream whole, so the afterResponseHook
// hooks can check it before the client gets any of it: resp.Stream is
// replaced by the bytes read, unchanged, and the answer the hooks check is
// returned, a chat completion whose choices hold the text of the stream's
// choices (chat and text completion chunks, Anthropic's text deltas, the
// Responses API's output text deltas), with the bytes held. A stream that
// breaks off or is larger than maxHeldStream is an error (502), returned
// with the bytes held until then (their usage is counted).
func holdStream(resp *core.Response) (*core.Response, []byte, *core.Error) {
	held, err := io.ReadAll(io.LimitReader(resp.Stream, maxHeldStream+1))
	resp.Stream.Close()
	resp.Stream = io.NopCloser(bytes.NewReader(held))
	switch {
	case err != nil:
		return nil, held, core.Upstream(err, "the provider's stream broke off before the output guardrails could check it: %v", err)
	case len(held) > maxHeldStream:
		return nil, held, core.Upstream(nil, "the stream is larger than the %d MiB the output guardrails can hold", maxHeldStream>>20)
	}
	return &core.Response{Status: resp.Status, Header: resp.Header, Body: streamAnswer(held), Routing: resp.Routing}, held, nil
}

// streamEvent is what streamAnswer reads of one event's data.
type streamEvent struct {
	Model   string `json:"model"`
	Type    string `json:"type"`
	Choices []struct {
		Index int `json:"index"`
		Delta struct {
			Content *string `json:"content"`
		} `json:"delta"`
		Text         *string `json:"text"`
		FinishReason *string `json:"finish_reason"`
	} `json:"choices"`
	// Delta is Anthropic's text delta ({"type":"text_delta","text":...})
	// or the Responses API's output text (a string).
	Delta json.RawMessage `json:"delta"`
}

// streamAnswer is the chat completion a held event stream amounts to, for
// the hooks: each choice's text in order, as message content.
func streamAnswer(stream []byte) []byte {
	type choice struct {
		text   bytes.Buffer
		finish string
	}
	choices := map[int]*choice{}
	at := func(i int) *choice {
		if choices[i] == nil {
			choices[i] = &choice{}
		}
		return choices[i]
	}
	model := ""
	for _, data := range eventData(stream) {
		var ev streamEvent
		if json.Unmarshal(data, &ev) != nil {
			continue // [DONE], or not JSON
		}
		if ev.Model != "" {
			model = ev.Model
		}
		for _, c := range ev.Choices {
			ch := at(c.Index)
			switch {
			case c.Delta.Content != nil:
				ch.text.WriteString(*c.Delta.Content)
			case c.Text != nil:
				ch.text.WriteString(*c.Text)
			}
			if c.FinishReason != nil {
				ch.finish = *c.FinishReason
			}
		}
		switch ev.Type {
		case "content_block_delta":
			var d struct {
				Text string `json:"text"`
			}
			if json.Unmarshal(ev.Delta, &d) == nil {
				at(0).text.WriteString(d.Text)
			}
		case "response.output_text.delta":
			var s string
			if json.Unmarshal(ev.Delta, &s) == nil {
				at(0).text.WriteString(s)
			}
		}
	}
	type message struct {
		Role    string `json:"role"`
		Content string `json:"content"`
	}
	type outChoice struct {
		Index        int     `json:"index"`
		Message      message `json:"message"`
		FinishReason string  `json:"finish_reason,omitempty"`
	}
	out := struct {
		Object  string      `json:"object"`
		Model   string      `json:"model,omitempty"`
		Choices []outChoice `json:"choices"`
	}{Object: "chat.completion", Model: model, Choices: []outChoice{}}
	for i, c := range choices {
		out.Choices = append(out.Choices, outChoice{Index: i, Message: message{Role: "assistant", Content: c.text.String()}, FinishReason: c.finish})
	}
	sort.Slice(out.Choices, func(a, b int) bool { return out.Choices[a].Index < out.Choices[b].Index })
	b, _ := json.Marshal(out) // plain types: it cannot fail
	return b
}

// eventData is the data of each server-sent event of stream that has any.
func eventData(stream []byte) [][]byte {
	var out [][]byte
	for event := range sse.Events(stream) {
		if data, ok := sse.Data(event); ok {
			out = append(out, data)
		}
	}
	return out
}
