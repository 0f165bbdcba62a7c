package defaults

import (
	"context"
	"fmt"

	"github.com/llm-gateway/gateway/core"
	"github.com/llm-gateway/gateway/hooks"
)

// addPrefix adds text in front of a message: before the request, to the
// last message of applyToRole (for role user in a chat, that is the text
// under check), or to the prompt of a completion, or to a Responses
// string input; after the answer, to the answer's text.

type prefixCfg struct {
	prefix        string
	role          string
	addToExisting bool
	onlyIfEmpty   bool
}

// prefixContent puts prefix in front of a message content: a string, an
// array of parts (the first text part, or a new text part in front), or
// nothing.
func prefixContent(content any, prefix string) any {
	switch c := content.(type) {
	case string:
		return prefix + c
	case []any:
		for _, p := range c {
			if pm, ok := p.(map[string]any); ok {
				if t, ok := pm["text"].(string); ok {
					pm["text"] = prefix + t
					return c
				}
			}
		}
		return append([]any{map[string]any{"type": "text", "text": prefix}}, c...)
	}
	return prefix
}

// prefixMessages applies the prefix to a list of messages and returns the
// new list and what was done.
func prefixMessages(msgs []any, c prefixCfg) ([]any, string) {
	idx := -1
	for i := len(msgs) - 1; i >= 0; i-- {
		if m, ok := msgs[i].(map[string]any); ok && m["role"] == c.role {
			idx = i
			break
		}
	}
	newMsg := map[string]any{"role": c.role, "content": c.prefix}
	switch {
	case idx >= 0 && c.onlyIfEmpty:
		return msgs, ""
	case idx >= 0 && c.addToExisting:
		m := msgs[idx].(map[string]any)
		m["content"] = prefixContent(m["content"], c.prefix)
		return msgs, fmt.Sprintf("Added the prefix to message %d (%s).", idx, c.role)
	case idx >= 0:
		out := append(append(append(make([]any, 0, len(msgs)+1), msgs[:idx]...), newMsg), msgs[idx:]...)
		return out, fmt.Sprintf("Inserted a %s message with the prefix before message %d.", c.role, idx)
	case c.role == "system" || c.role == "developer":
		return append([]any{newMsg}, msgs...), fmt.Sprintf("Added a %s message with the prefix at the start.", c.role)
	default:
		return append(msgs, newMsg), fmt.Sprintf("Added a %s message with the prefix at the end.", c.role)
	}
}

var addPrefix = &check[prefixCfg]{
	parse: func(p *params) prefixCfg {
		return prefixCfg{
			prefix:        p.str("prefix", "", true),
			role:          p.enum("applyToRole", "user", "user", "system", "assistant", "developer"),
			addToExisting: p.boolean("addToExisting", true),
			onlyIfEmpty:   p.boolean("onlyIfEmpty", false),
		}
	},
	run: func(_ context.Context, in *hooks.CheckInput, c prefixCfg) (hooks.CheckResult, error) {
		body, err := subject(in)
		if err != nil {
			return hooks.CheckResult{}, err
		}
		unchanged := func(why string) (hooks.CheckResult, error) {
			return hooks.CheckResult{Verdict: true, Data: map[string]any{"prefix": c.prefix, "explanation": why}}, nil
		}
		if in.Stage == hooks.AfterResponse {
			out, ok := hooks.WithResponseText(body, c.prefix+in.Text())
			if !ok {
				return unchanged("The answer has no text to prefix.")
			}
			return hooks.CheckResult{Verdict: true, Transformed: out, Data: map[string]any{
				"prefix": c.prefix, "explanation": "Added the prefix to the answer's text.",
			}}, nil
		}
		cp := hooks.CloneJSON(body).(map[string]any)
		var what string
		anthropic := in.Request != nil && in.Request.Endpoint == core.EndpointMessages
		if _, hasSystem := cp["system"]; (anthropic || hasSystem) && c.role == "system" {
			// Anthropic keeps the system prompt outside the messages.
			sys, present := cp["system"]
			empty := !present || sys == nil || sys == ""
			switch {
			case !empty && c.onlyIfEmpty:
				return unchanged("A system prompt exists and onlyIfEmpty is set; nothing changed.")
			case empty:
				cp["system"] = c.prefix
			default:
				cp["system"] = prefixContent(sys, c.prefix)
			}
			what = "Added the prefix to the system prompt."
		} else if msgs, ok := cp["messages"].([]any); ok {
			cp["messages"], what = prefixMessages(msgs, c)
			if what == "" {
				return unchanged(fmt.Sprintf("A %s message exists and onlyIfEmpty is set; nothing changed.", c.role))
			}
		} else if items, ok := cp["input"].([]any); ok && c.role != "" && hasRoles(items) {
			cp["input"], what = prefixMessages(items, c)
			if what == "" {
				return unchanged(fmt.Sprintf("A %s message exists and onlyIfEmpty is set; nothing changed.", c.role))
			}
		} else {
			switch pr := cp["prompt"].(type) {
			case string:
				cp["prompt"], what = c.prefix+pr, "Added the prefix to the prompt."
			case []any:
				for i, x := range pr {
					if s, ok := x.(string); ok {
						pr[i] = c.prefix + s
					}
				}
				what = "Added the prefix to each prompt."
			default:
				if s, ok := cp["input"].(string); ok {
					cp["input"], what = c.prefix+s, "Added the prefix to the input."
				} else {
					return unchanged("The request has no messages, prompt or text input to prefix.")
				}
			}
		}
		out, err := jsonMarshal(cp)
		if err != nil {
			return hooks.CheckResult{}, err
		}
		return hooks.CheckResult{Verdict: true, Transformed: out, Data: map[string]any{
			"prefix": c.prefix, "applyToRole": c.role, "explanation": what,
		}}, nil
	},
}

func hasRoles(items []any) bool {
	for _, x := range items {
		if m, ok := x.(map[string]any); ok {
			if _, ok := m["role"]; ok {
				return true
			}
		}
	}
	return false
}
