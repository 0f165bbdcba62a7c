package server

import (
	"bytes"
	"encoding/json"

	"github.com/llm-gateway/gateway/core"
)

// wireUsage covers the usage shapes of OpenAI chat and completions
// (prompt/completion tokens) and of the Responses and Anthropic APIs
// (input/output tokens).
type wireUsage struct {
	PromptTokens     int `json:"prompt_tokens"`
	CompletionTokens int `json:"completion_tokens"`
	TotalTokens      int `json:"total_tokens"`
	InputTokens      int `json:"input_tokens"`
	OutputTokens     int `json:"output_tokens"`
}

// usageHolder is an object with a usage member (Anthropic's message,
// the Responses API's response).
type usageHolder struct {
	Usage *wireUsage `json:"usage"`
}

type usageEnvelope struct {
	Usage    *wireUsage   `json:"usage"`
	Message  *usageHolder `json:"message"`
	Response *usageHolder `json:"response"`
}

var usageKey = []byte(`"usage"`)

// parseUsage reads the token usage of a JSON answer; zero when it has none.
func parseUsage(body []byte) core.Usage {
	var u core.Usage
	if !bytes.Contains(body, usageKey) {
		return u
	}
	var env usageEnvelope
	if json.Unmarshal(body, &env) != nil {
		return u
	}
	env.addTo(&u)
	return u
}

func (env *usageEnvelope) addTo(u *core.Usage) {
	for _, w := range []*wireUsage{env.Usage, msgUsage(env.Message), msgUsage(env.Response)} {
		if w == nil {
			continue
		}
		if p := w.PromptTokens + w.InputTokens; p > 0 {
			u.PromptTokens = p
		}
		if c := w.CompletionTokens + w.OutputTokens; c > 0 {
			u.CompletionTokens = c
		}
		if w.TotalTokens > 0 {
			u.TotalTokens = w.TotalTokens
		}
	}
	if u.TotalTokens < u.PromptTokens+u.CompletionTokens {
		u.TotalTokens = u.PromptTokens + u.CompletionTokens
	}
}

func msgUsage(m *usageHolder) *wireUsage {
	if m == nil {
		return nil
	}
	return m.Usage
}

// eventUsage updates u from one server-sent event when its data carries usage.
func eventUsage(event []byte, u *core.Usage) {
	if !bytes.Contains(event, usageKey) {
		return
	}
	for _, line := range bytes.Split(event, []byte("\n")) {
		data, ok := bytes.CutPrefix(bytes.TrimRight(line, "\r"), []byte("data:"))
		if !ok {
			continue
		}
		var env usageEnvelope
		if json.Unmarshal(bytes.TrimSpace(data), &env) == nil {
			env.addTo(u)
		}
	}
}
