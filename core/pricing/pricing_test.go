package pricing

import (
	"encoding/json"
	"math"
	"testing"

	"github.com/llm-gateway/gateway/core"
)

func TestLookup(t *testing.T) {
	tab := Default()
	for _, c := range []struct {
		provider, model string
		want            Price
		ok              bool
	}{
		{"openai", "gpt-4o", Price{2.5, 10}, true},
		{"openai", "gpt-4o-mini", Price{0.15, 0.6}, true},
		{"openai", "gpt-4o-mini-2024-07-18", Price{0.15, 0.6}, true}, // longest prefix, not gpt-4o
		{"openai", "gpt-4o-2024-05-13", Price{5, 15}, true},          // exact beats prefix
		{"anthropic", "claude-3-5-sonnet-20241022", Price{3, 15}, true},
		{"groq", "llama-3.1-8b-instant", Price{0.05, 0.08}, true},
		{"mistral-ai", "mistral-large-latest", Price{2, 6}, true},
		{"openai", "gpt-5-mini-2025-08-07", Price{0.25, 2}, true},
		{"anthropic", "claude-opus-4-1-20250805", Price{15, 75}, true},
		{"anthropic", "claude-opus-4-5-20251101", Price{5, 25}, true}, // not Opus 4's
		{"gemini", "gemini-2.5-flash-lite-preview", Price{0.1, 0.4}, true},
		{"gemini", "gemini-2.5-flash", Price{0.3, 2.5}, true},
		{"vertex-ai", "claude-sonnet-4@20250514", Price{3, 15}, true},
		{"vertex-ai", "gemini-2.5-pro", Price{1.25, 10}, true},
		{"bedrock", "anthropic.claude-3-5-haiku-20241022-v1:0", Price{0.8, 4}, true},
		{"bedrock", "us.anthropic.claude-sonnet-4-20250514-v1:0", Price{3, 15}, true}, // a cross-region profile
		{"bedrock", "global.anthropic.claude-haiku-4-5-20251001-v1:0", Price{1, 5}, true},
		{"bedrock", "amazon.nova-lite-v1:0", Price{0.06, 0.24}, true},
		{"bedrock", "xx.anthropic.claude-sonnet-4", Price{}, false}, // not a region group
		{"azure-openai", "gpt-4o-mini", Price{0.15, 0.6}, true},     // Azure's list prices are OpenAI's
		{"openai", "unknown-model", Price{}, false},
		{"nope", "gpt-4o", Price{}, false},
	} {
		got, ok := tab.Lookup(c.provider, c.model)
		if got != c.want || ok != c.ok {
			t.Errorf("%s/%s = %v %v, want %v %v", c.provider, c.model, got, ok, c.want, c.ok)
		}
	}
}

func TestCost(t *testing.T) {
	p := Price{Input: 2, Output: 8}
	for _, c := range []struct {
		u    core.Usage
		want float64
	}{
		{core.Usage{PromptTokens: 1_000_000, CompletionTokens: 500_000, TotalTokens: 1_500_000}, 6},
		{core.Usage{TotalTokens: 500_000}, 1}, // a total alone is priced as input
		{core.Usage{}, 0},
	} {
		if got := p.Cost(c.u); math.Abs(got-c.want) > 1e-9 {
			t.Errorf("Cost(%+v) = %v, want %v", c.u, got, c.want)
		}
	}
}

func TestOverride(t *testing.T) {
	for _, c := range []struct {
		raw  string
		want Price
		ok   bool
	}{
		{`{"input":1.5}`, Price{1.5, 0}, true},
		{`{"input":1,"output":3}`, Price{1, 3}, true},
		{`{"other":1}`, Price{}, false},
		{`{"input":-1}`, Price{}, false},
		{`"x"`, Price{}, false},
		{``, Price{}, false},
	} {
		got, ok := Override(json.RawMessage(c.raw))
		if got != c.want || ok != c.ok {
			t.Errorf("Override(%s) = %v %v, want %v %v", c.raw, got, ok, c.want, c.ok)
		}
	}
}

func TestParseRejects(t *testing.T) {
	for _, raw := range []string{`{`, `{"providers":{"p":{"m":{"input":-1}}}}`} {
		if _, err := Parse([]byte(raw)); err == nil {
			t.Errorf("Parse(%s) accepted", raw)
		}
	}
}
