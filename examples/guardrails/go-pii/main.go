// Command go-pii is a guardrail, built for GOOS=wasip1 as a WebAssembly
// module, that finds e-mail addresses, phone numbers and card numbers (Luhn
// checked) and either denies the request or answer ("action": "deny", the
// default) or replaces them by [EMAIL], [PHONE] and [CARD] ("action":
// "redact"). It works in beforeRequestHook and afterResponseHook.
//
// Build: see build.sh.
package main

import (
	"strings"

	"github.com/llm-gateway/gateway/sdk/guest/go/guardrail"
)

func init() {
	guardrail.Handle(check)
}

// main is not run: a c-shared (reactor) module only runs its init
// functions, from _initialize.
func main() {}

func check(in *guardrail.Input) guardrail.Output {
	want := map[string]bool{}
	for _, k := range in.ParamStrings("kinds") {
		if _, ok := placeholders[k]; !ok {
			return guardrail.Errorf("kinds: unknown kind %q (email, phone, card)", k)
		}
		want[k] = true
	}
	if len(want) == 0 {
		want = map[string]bool{kindEmail: true, kindPhone: true, kindCard: true}
	}
	switch action := in.ParamString("action", "deny"); action {
	case "deny":
		return deny(in, want)
	case "redact":
		return redactBody(in, want)
	default:
		return guardrail.Errorf("action: must be \"deny\" or \"redact\", not %q", action)
	}
}

// deny looks at the text under check only (no JSON is parsed) and fails
// when it holds personal data; data names the kinds, never the values.
func deny(in *guardrail.Input, want map[string]bool) guardrail.Output {
	counts := map[string]int{}
	kindsOf(findPII(in.Text(), want), counts)
	if len(counts) == 0 {
		return guardrail.Output{Verdict: true, Data: map[string]any{"found": []string{}}}
	}
	found := sortedKeys(counts)
	return guardrail.Output{
		Verdict: false,
		Reason:  "personal data found: " + strings.Join(found, ", "),
		Data:    map[string]any{"found": found, "counts": counts},
	}
}

// redactBody replaces personal data in every text of the body of the side
// under check (all messages, not only the text under check), and passes.
func redactBody(in *guardrail.Input, want map[string]bool) guardrail.Output {
	if err := in.EnvelopeError(); err != nil {
		return guardrail.Errorf("envelope: %v", err)
	}
	var body map[string]any
	if in.Hook() == guardrail.AfterResponse {
		if r := in.Response(); r != nil {
			body = r.JSON
		}
	} else {
		body = in.Request().JSON
	}
	counts := map[string]int{}
	if body != nil {
		for _, key := range textFields {
			if v, ok := body[key]; ok {
				body[key] = redactValue(v, want, counts)
			}
		}
	}
	if len(counts) == 0 {
		return guardrail.Output{Verdict: true, Data: map[string]any{"found": []string{}}}
	}
	return guardrail.Output{
		Verdict: true,
		Reason:  "personal data redacted: " + strings.Join(sortedKeys(counts), ", "),
		Data:    map[string]any{"found": sortedKeys(counts), "counts": counts, "redacted": true},
	}.Transformed(in, body)
}

// textFields are the top-level fields of request and answer bodies that
// hold text: chat messages, completions' prompt, embeddings' and
// responses' input, answers' choices, Anthropic's content and system.
var textFields = []string{"messages", "prompt", "input", "instructions", "system", "choices", "content"}

// skipKeys hold identifiers, not text.
var skipKeys = map[string]bool{
	"role": true, "type": true, "id": true, "name": true, "tool_call_id": true,
	"finish_reason": true, "model": true, "object": true, "url": true,
	"image_url": true,
}

func redactValue(v any, want map[string]bool, counts map[string]int) any {
	switch t := v.(type) {
	case string:
		ms := findPII(t, want)
		if len(ms) == 0 {
			return t
		}
		kindsOf(ms, counts)
		return redact(t, ms)
	case []any:
		for i, x := range t {
			t[i] = redactValue(x, want, counts)
		}
	case map[string]any:
		for k, x := range t {
			if !skipKeys[k] {
				t[k] = redactValue(x, want, counts)
			}
		}
	}
	return v
}
