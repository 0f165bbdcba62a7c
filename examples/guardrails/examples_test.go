package guardrails_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"unicode/utf8"

	"github.com/llm-gateway/gateway/core"
	"github.com/llm-gateway/gateway/hooks"
	"github.com/llm-gateway/gateway/hooks/wasm"
)

// load reads an example's manifest.json and checked-in module, validates
// them as the upload endpoint does (no problems allowed), loads them into a
// fresh host and returns the check of one function.
func load(t *testing.T, dir, module, function string) hooks.Check {
	t.Helper()
	return loadTB(t, dir, module, function)
}

func loadB(b *testing.B, dir, module, function string) hooks.Check {
	b.Helper()
	return loadTB(b, dir, module, function)
}

func loadTB(t testing.TB, dir, module, function string) hooks.Check {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(dir, "manifest.json"))
	if err != nil {
		t.Fatal(err)
	}
	mod, err := os.ReadFile(filepath.Join(dir, module))
	if err != nil {
		t.Fatal(err)
	}
	m, probs := wasm.ParseManifest(raw)
	if len(probs) > 0 {
		t.Fatalf("manifest problems: %v", probs)
	}
	// The shipped limits must fit a gateway with the default operator caps.
	if l := m.Limits; l.TimeoutMs > 1000 || l.MemoryPages > 1024 || l.OutputBytes > 64<<10 {
		t.Fatalf("limits %+v above the default caps", l)
	}
	// CI machines are small and shared, and -race slows the host's side of
	// a call: a generous timeout keeps these tests about behaviour, not speed.
	m.Limits.TimeoutMs = 1000
	ctx := context.Background()
	host, err := wasm.NewHost(ctx, wasm.Options{
		CacheDir: t.TempDir(),
		Logger:   slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = host.Close(context.Background()) })
	if probs := host.Validate(ctx, m, mod); len(probs) > 0 {
		t.Fatalf("validate problems: %v", probs)
	}
	if err := host.Load(ctx, m, 1, mod); err != nil {
		t.Fatal(err)
	}
	c, ok := host.Check(m.ID + "." + function)
	if !ok {
		t.Fatalf("no check %s.%s", m.ID, function)
	}
	return c
}

// chat is an OpenAI chat completion request body with a system prompt and
// the given user message.
func chat(user string) []byte {
	b, _ := json.Marshal(map[string]any{
		"model":       "gpt-4o-mini",
		"temperature": 0.2,
		"seed":        json.Number("12345678901234567890"),
		"messages": []any{
			map[string]any{"role": "system", "content": "You are a helpful assistant."},
			map[string]any{"role": "user", "content": user},
		},
	})
	return b
}

// answer is an OpenAI chat completion answer body.
func answer(content string) []byte {
	b, _ := json.Marshal(map[string]any{
		"id": "chatcmpl-1", "object": "chat.completion", "created": 1700000000, "model": "gpt-4o-mini",
		"choices": []any{map[string]any{
			"index":         0,
			"message":       map[string]any{"role": "assistant", "content": content},
			"finish_reason": "stop",
		}},
		"usage": map[string]any{"prompt_tokens": 20, "completion_tokens": 9, "total_tokens": 29},
	})
	return b
}

func input(stage hooks.Stage, req, resp []byte, params map[string]any) *hooks.CheckInput {
	in := &hooks.CheckInput{
		Stage: stage,
		Request: &core.Request{
			TraceID:  "trace-1",
			Endpoint: core.EndpointChatComplete,
			Method:   http.MethodPost,
			Path:     "/chat/completions",
			Header:   http.Header{"Content-Type": {"application/json"}, "X-Gateway-Api-Key": {"secret"}},
			Body:     req,
			Model:    "gpt-4o-mini",
			Target:   core.Target{Provider: "openai"},
			Metadata: map[string]string{"user": "u1"},
		},
		Parameters: params,
	}
	if stage == hooks.AfterResponse {
		in.Response = &core.Response{Status: 200, Header: http.Header{"Content-Type": {"application/json"}}, Body: resp, Routing: core.Routing{Provider: "openai"}}
	}
	return in
}

func run(t *testing.T, c hooks.Check, in *hooks.CheckInput) hooks.CheckResult {
	t.Helper()
	res, err := c.Run(context.Background(), in)
	if err != nil {
		t.Fatalf("run: %v", err)
	}
	return res
}

// dataMap is a result's data as a JSON object.
func dataMap(t *testing.T, r hooks.CheckResult) map[string]any {
	t.Helper()
	m, ok := r.Data.(map[string]any)
	if !ok {
		t.Fatalf("data %#v is not an object", r.Data)
	}
	return m
}

func strs(v any) []string {
	a, _ := v.([]any)
	out := []string{}
	for _, x := range a {
		s, _ := x.(string)
		out = append(out, s)
	}
	return out
}

func decode(t *testing.T, b []byte) map[string]any {
	t.Helper()
	var m map[string]any
	dec := json.NewDecoder(strings.NewReader(string(b)))
	dec.UseNumber()
	if err := dec.Decode(&m); err != nil {
		t.Fatalf("%s: %v", b, err)
	}
	return m
}

// content is the content of the i-th message of a chat request body.
func content(t *testing.T, body map[string]any, i int) string {
	t.Helper()
	msgs, _ := body["messages"].([]any)
	if i >= len(msgs) {
		t.Fatalf("no message %d in %v", i, body)
	}
	s, _ := msgs[i].(map[string]any)["content"].(string)
	return s
}

func TestWatMinimal(t *testing.T) {
	c := load(t, "wat-minimal", "minimal.wasm", "nonEmpty")

	r := run(t, c, input(hooks.BeforeRequest, chat("hello"), nil, nil))
	if !r.Verdict || r.Data != nil || r.Transformed != nil {
		t.Fatalf("non-empty text: %+v", r)
	}
	empty, _ := json.Marshal(map[string]any{"model": "m", "messages": []any{map[string]any{"role": "user", "content": ""}}})
	r = run(t, c, input(hooks.BeforeRequest, empty, nil, nil))
	if r.Verdict || dataMap(t, r)["reason"] != "empty text" {
		t.Fatalf("empty text: %+v", r)
	}
	r = run(t, c, input(hooks.AfterResponse, chat("hi"), answer(""), nil))
	if r.Verdict {
		t.Fatalf("empty answer: %+v", r)
	}
	r = run(t, c, input(hooks.AfterResponse, chat("hi"), answer("fine"), nil))
	if !r.Verdict {
		t.Fatalf("answer: %+v", r)
	}
}

func TestASBannedWords(t *testing.T) {
	c := load(t, "as-banned-words", "banned-words.wasm", "bannedWords")
	words := map[string]any{"words": []any{"darn", "Top Secret", "café", "ass", " @Here ", "darn"}}

	for _, tc := range []struct {
		text    string
		matched []string
	}{
		{"Here are the TOP  SECRET plans", nil}, // two spaces: not the phrase
		{"Here are the top secret plans, darn!", []string{"darn", "Top Secret"}},
		{"DARN. That was (top secret).", []string{"darn", "Top Secret"}},
		{"darned; darning; a class of glass", nil},
		{"Un CAFÉ, s'il vous plaît", []string{"café"}},
		{"cafés are not the café_x", nil},
		{"Nothing to see here.", nil},
		{"ping @HERE now; top secret", []string{"Top Secret", " @Here "}},
		{"ping @hereafter", nil},
		{"ping@here.", []string{" @Here "}},
	} {
		r := run(t, c, input(hooks.BeforeRequest, chat(tc.text), nil, words))
		got := strs(dataMap(t, r)["matched"])
		if r.Verdict != (len(tc.matched) == 0) || !reflect.DeepEqual(got, append([]string{}, tc.matched...)) {
			t.Errorf("%q: verdict %v, matched %q; want %q", tc.text, r.Verdict, got, tc.matched)
		}
		if !r.Verdict && !strings.Contains(dataMap(t, r)["reason"].(string), "banned words found") {
			t.Errorf("%q: reason %v", tc.text, dataMap(t, r)["reason"])
		}
	}

	// The answer is checked in afterResponseHook.
	r := run(t, c, input(hooks.AfterResponse, chat("hi"), answer("Well, darn."), words))
	if r.Verdict || !reflect.DeepEqual(strs(dataMap(t, r)["matched"]), []string{"darn"}) {
		t.Fatalf("answer: %+v", r)
	}
	// An empty list: everything passes.
	r = run(t, c, input(hooks.BeforeRequest, chat("darn"), nil, map[string]any{"words": []any{}, "failOnError": true}))
	if !r.Verdict {
		t.Fatalf("no words: %+v", r)
	}
	// The manifest's schema requires words and refuses other parameters.
	for _, p := range []map[string]any{nil, {"words": []any{"x"}, "word": "x"}, {"words": []any{""}}} {
		if _, err := c.Run(context.Background(), input(hooks.BeforeRequest, chat("x"), nil, p)); err == nil {
			t.Errorf("%v: want an error", p)
		}
	}
}

func TestRustPromptLength(t *testing.T) {
	c := load(t, "rust-prompt-length", "prompt-length.wasm", "promptLength")

	check := func(user string, params map[string]any, want bool) {
		t.Helper()
		in := input(hooks.BeforeRequest, chat(user), nil, params)
		// The text under check is every message's content joined by "\n".
		chars := utf8.RuneCountInString(in.AllText())
		r := run(t, c, in)
		d := dataMap(t, r)
		if r.Verdict != want || d["chars"] != json.Number(itoa(chars)) || d["tokens"] != json.Number(itoa((chars+3)/4)) {
			t.Fatalf("%q %v: %+v (chars %d)", user, params, r, chars)
		}
	}
	system := utf8.RuneCountInString("You are a helpful assistant.\n")
	check("héllo wörld", nil, true)
	check("héllo wörld", map[string]any{"maxChars": system + 11}, true)
	check("héllo wörld", map[string]any{"maxChars": system + 10}, false)
	tokens := (system + 11 + 3) / 4
	check("héllo wörld", map[string]any{"maxTokens": tokens}, true)
	check("héllo wörld", map[string]any{"maxTokens": tokens - 1}, false)
	check(strings.Repeat("a", 4000), map[string]any{"maxChars": 100000, "maxTokens": 1000}, false)

	r := run(t, c, input(hooks.AfterResponse, chat("hi"), answer("12345678"), map[string]any{"maxTokens": 2}))
	if d := dataMap(t, r); !r.Verdict || d["chars"] != json.Number("8") || d["tokens"] != json.Number("2") {
		t.Fatalf("answer: %+v", r)
	}
	if _, err := c.Run(context.Background(), input(hooks.BeforeRequest, chat("x"), nil, map[string]any{"maxChars": -1})); err == nil {
		t.Fatal("maxChars -1: want a plugin error")
	}
}

func itoa(n int) string {
	b, _ := json.Marshal(n)
	return string(b)
}

func TestGoPII(t *testing.T) {
	c := load(t, "go-pii", "go-pii.wasm", "pii")
	deny := map[string]any{"action": "deny"}
	redact := map[string]any{"action": "redact"}

	t.Run("deny", func(t *testing.T) {
		text := "My card is 4111 1111 1111 1111, mail bob@example.com"
		r := run(t, c, input(hooks.BeforeRequest, chat(text), nil, deny))
		d := dataMap(t, r)
		if r.Verdict || !reflect.DeepEqual(strs(d["found"]), []string{"card", "email"}) || r.Transformed != nil {
			t.Fatalf("%+v", r)
		}
		b, _ := json.Marshal(d)
		if strings.Contains(string(b), "4111") || strings.Contains(string(b), "bob@") {
			t.Fatalf("data leaks the values: %s", b)
		}
		// Default action is deny.
		if r := run(t, c, input(hooks.BeforeRequest, chat("call me on +1 415 555 0100"), nil, nil)); r.Verdict ||
			!reflect.DeepEqual(strs(dataMap(t, r)["found"]), []string{"phone"}) {
			t.Fatalf("phone: %+v", r)
		}
		// A card number failing the Luhn check is not a card.
		if r := run(t, c, input(hooks.BeforeRequest, chat("order 4111 1111 1111 1112 shipped"), nil, deny)); !r.Verdict {
			t.Fatalf("Luhn failure: %+v", r)
		}
		if r := run(t, c, input(hooks.BeforeRequest, chat("Version 1.2.3 released on 2024-01-15."), nil, deny)); !r.Verdict {
			t.Fatalf("no PII: %+v", r)
		}
		// Only the kinds asked for.
		onlyEmail := map[string]any{"action": "deny", "kinds": []any{"email"}}
		if r := run(t, c, input(hooks.BeforeRequest, chat("card 4111111111111111"), nil, onlyEmail)); !r.Verdict {
			t.Fatalf("kinds: %+v", r)
		}
		// The answer, after the response.
		r = run(t, c, input(hooks.AfterResponse, chat("hi"), answer("Write to alice@example.org."), deny))
		if r.Verdict || !reflect.DeepEqual(strs(dataMap(t, r)["found"]), []string{"email"}) {
			t.Fatalf("answer: %+v", r)
		}
	})

	t.Run("redact request", func(t *testing.T) {
		text := "Card 4111-1111-1111-1111 (not 4111 1111 1111 1112), phone (555) 123-4567, mail bob@example.com."
		r := run(t, c, input(hooks.BeforeRequest, chat(text), nil, redact))
		if !r.Verdict || r.Transformed == nil {
			t.Fatalf("%+v", r)
		}
		body := decode(t, r.Transformed)
		want := "Card [CARD] (not 4111 1111 1111 1112), phone [PHONE], mail [EMAIL]."
		if got := content(t, body, 1); got != want {
			t.Fatalf("content %q, want %q", got, want)
		}
		if content(t, body, 0) != "You are a helpful assistant." || body["model"] != "gpt-4o-mini" ||
			body["temperature"] != json.Number("0.2") || body["seed"] != json.Number("12345678901234567890") {
			t.Fatalf("other fields changed: %s", r.Transformed)
		}
		if d := dataMap(t, r); !reflect.DeepEqual(strs(d["found"]), []string{"card", "email", "phone"}) {
			t.Fatalf("data %v", d)
		}
	})

	t.Run("redact every message", func(t *testing.T) {
		req, _ := json.Marshal(map[string]any{"model": "m", "messages": []any{
			map[string]any{"role": "user", "content": "I am bob@example.com"},
			map[string]any{"role": "assistant", "content": "Hello Bob"},
			map[string]any{"role": "user", "content": []any{map[string]any{"type": "text", "text": "card 5555 5555 5555 4444"}}},
		}})
		r := run(t, c, input(hooks.BeforeRequest, req, nil, redact))
		body := decode(t, r.Transformed)
		msgs := body["messages"].([]any)
		part := msgs[2].(map[string]any)["content"].([]any)[0].(map[string]any)
		if content(t, body, 0) != "I am [EMAIL]" || content(t, body, 1) != "Hello Bob" || part["text"] != "card [CARD]" || part["type"] != "text" {
			t.Fatalf("%s", r.Transformed)
		}
	})

	t.Run("redact answer", func(t *testing.T) {
		r := run(t, c, input(hooks.AfterResponse, chat("hi"), answer("Reach Alice at alice@example.org or +44 20 7946 0958."), redact))
		if !r.Verdict || r.Transformed == nil {
			t.Fatalf("%+v", r)
		}
		body := decode(t, r.Transformed)
		msg := body["choices"].([]any)[0].(map[string]any)["message"].(map[string]any)
		if msg["content"] != "Reach Alice at [EMAIL] or [PHONE]." || body["id"] != "chatcmpl-1" || msg["role"] != "assistant" {
			t.Fatalf("%s", r.Transformed)
		}
	})

	t.Run("redact nothing", func(t *testing.T) {
		r := run(t, c, input(hooks.BeforeRequest, chat("order 4111 1111 1111 1112"), nil, redact))
		if !r.Verdict || r.Transformed != nil {
			t.Fatalf("%+v", r)
		}
	})

	t.Run("bad parameters", func(t *testing.T) {
		for _, p := range []map[string]any{{"action": "mask"}, {"kinds": []any{"ssn"}}, {"actoin": "deny"}} {
			if _, err := c.Run(context.Background(), input(hooks.BeforeRequest, chat("x"), nil, p)); err == nil {
				t.Fatalf("%v: want a plugin error", p)
			}
		}
		// The instance that returned an error is replaced; the next call works.
		if r := run(t, c, input(hooks.BeforeRequest, chat("a@example.com"), nil, nil)); r.Verdict {
			t.Fatalf("%+v", r)
		}
	})

	t.Run("concurrent", func(t *testing.T) {
		var wg sync.WaitGroup
		errs := make(chan string, 64)
		for g := 0; g < 8; g++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := 0; i < 5; i++ {
					r, err := c.Run(context.Background(), input(hooks.BeforeRequest, chat("mail bob@example.com"), nil, redact))
					if err != nil {
						errs <- err.Error()
						return
					}
					if !strings.Contains(string(r.Transformed), `"content":"mail [EMAIL]"`) {
						errs <- string(r.Transformed)
						return
					}
				}
			}()
		}
		wg.Wait()
		close(errs)
		for e := range errs {
			t.Error(e)
		}
	})
}

// BenchmarkChecks times one call of each example on a small chat request
// (go test -run=^$ -bench=. ./examples/guardrails/).
func BenchmarkChecks(b *testing.B) {
	for _, bc := range []struct {
		name, dir, module, function string
		params                      map[string]any
	}{
		{"wat-minimal", "wat-minimal", "minimal.wasm", "nonEmpty", nil},
		{"as-banned-words", "as-banned-words", "banned-words.wasm", "bannedWords", map[string]any{"words": []any{"darn", "top secret"}}},
		{"rust-prompt-length", "rust-prompt-length", "prompt-length.wasm", "promptLength", map[string]any{"maxTokens": 1000}},
		{"go-pii-deny", "go-pii", "go-pii.wasm", "pii", map[string]any{"action": "deny"}},
		{"go-pii-redact", "go-pii", "go-pii.wasm", "pii", map[string]any{"action": "redact"}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			c := loadB(b, bc.dir, bc.module, bc.function)
			req := chat("Please summarise this for bob@example.com: the quarterly numbers look fine. " + strings.Repeat("More text. ", 50))
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if _, err := c.Run(context.Background(), input(hooks.BeforeRequest, req, nil, bc.params)); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
