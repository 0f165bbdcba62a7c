package server

import (
	"bytes"
	"encoding/json"
	"math"
	"testing"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/valyala/fasthttp"

	"github.com/llm-gateway/gateway/core/pipeline"
	"github.com/llm-gateway/gateway/hooks"
)

func TestAppendHookResults(t *testing.T) {
	res := map[string]any{"a": 1}
	cases := []struct {
		name, body string
		results    any
		want       string // "" when the body is sent unchanged
	}{
		{"object", `{"id":"x"}`, res, `{"id":"x","hook_results":{"a":1}}`},
		{"empty object", `{}`, res, `{"hook_results":{"a":1}}`},
		{"empty object with space", "{ \n }", res, "{ \n \"hook_results\":{\"a\":1}}"},
		{"surrounding space", " \n{\"id\":1}\r\n ", res, `{"id":1,"hook_results":{"a":1}}`},
		{"space before the brace", "{\"id\":1 \n}", res, "{\"id\":1 \n,\"hook_results\":{\"a\":1}}"},
		{"array", `[1,2]`, res, ""},
		{"string", `"{}"`, res, ""},
		{"empty", ``, res, ""},
		{"space", `  `, res, ""},
		{"one brace", `{`, res, ""},
		{"not closed", `{"a":1`, res, ""},
		{"text", `upstream error`, res, ""},
		{"unencodable results", `{"id":"x"}`, math.NaN(), ""},
		{"typed results", `{"id":"x"}`, &pipeline.HookResults{Before: []hooks.HookResult{}, After: []hooks.HookResult{}},
			`{"id":"x","hook_results":{"before_request_hooks":[],"after_request_hooks":[]}}`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			prefix := []byte("keep")
			got, ok := appendHookResults(prefix, []byte(tc.body), tc.results)
			if tc.want == "" {
				if ok || string(got) != "keep" {
					t.Fatalf("got %q, %v; want the body unchanged", got, ok)
				}
				return
			}
			if !ok || string(got) != "keep"+tc.want {
				t.Fatalf("got %q, %v; want %q", got, ok, tc.want)
			}
			if !json.Valid(got[len("keep"):]) {
				t.Fatalf("invalid JSON %q", got)
			}
		})
	}
}

// hookResultsSample holds every field of the hook results, with values
// that exercise the encoder's escaping and number formats.
func hookResultsSample() *pipeline.HookResults {
	return &pipeline.HookResults{
		Before: []hooks.HookResult{{
			ID: "input_guardrails[0]", Type: "guardrail", Verdict: true, Deny: true, Async: false, Transformed: true,
			ExecutionTime: 1e-7, CreatedAt: time.Date(2026, 1, 2, 3, 4, 5, 678900000, time.UTC), Feedback: json.RawMessage(` {"msg": "<b>&</b>"} `),
			Checks: []hooks.CheckResultView{
				{ID: "default.wordCount", Verdict: true, ExecutionTime: 0.0123, Data: map[string]any{
					"count": 2, "big": int64(1) << 60, "ratio": 1e21, "small": -2.5e-9, "zero": 0.0, "words": []string{"a", "<b>"},
					"nilWords": []string(nil), "list": []any{nil, true, "x\u2028y", json.Number("12.5"), map[string]any{}},
					"nilList": []any(nil), "nilMap": map[string]any(nil), "text": "tab\t\"q\" \\ \x01 \x7f é \xff",
					"other": struct{ A int }{3},
				}},
				{ID: "wat.nonEmpty", Verdict: false, Error: "failed: <x>", CreatedAt: time.Date(2026, 1, 2, 3, 4, 5, 0, time.FixedZone("", 3600))},
			},
		}},
		After: nil,
	}
}

func TestAppendJSONMatchesMarshal(t *testing.T) {
	for _, v := range []any{hookResultsSample(), (*pipeline.HookResults)(nil), nil, "s", 1.5, []any{1, "a"}, map[string]any{"b": 1, "a": 2},
		&pipeline.HookResults{Before: []hooks.HookResult{{Checks: nil}}}} {
		want, werr := json.Marshal(v)
		got, gerr := appendJSON(nil, v)
		if (werr != nil) != (gerr != nil) || !bytes.Equal(got, want) {
			t.Fatalf("appendJSON(%#v) = %s, %v; json.Marshal: %s, %v", v, got, gerr, want, werr)
		}
	}
	for _, f := range []float64{math.NaN(), math.Inf(1), math.Inf(-1)} {
		bad := &pipeline.HookResults{Before: []hooks.HookResult{{ExecutionTime: f}}}
		if _, err := appendJSON(nil, bad); err == nil {
			t.Fatalf("%v: no error", f)
		}
	}
	cyclic := map[string]any{}
	cyclic["self"] = cyclic
	if _, err := appendJSON(nil, cyclic); err == nil {
		t.Fatal("a cyclic value: no error")
	}
}

// FuzzAppendJSON checks the encoder against json.Marshal on guardrail data
// decoded from arbitrary JSON, strings of arbitrary bytes and floats.
func FuzzAppendJSON(f *testing.F) {
	f.Add([]byte(`{"a":[1,"x",true,null,{"b":2.5e-9}]}`), "<&>\u2028\xff", 0.1)
	f.Add([]byte(`[1e400]`), "", 1e21)
	f.Fuzz(func(t *testing.T, data []byte, s string, x float64) {
		var v any
		if json.Unmarshal(data, &v) != nil {
			v = s
		}
		hr := &pipeline.HookResults{Before: []hooks.HookResult{{ID: s, ExecutionTime: x, CreatedAt: time.Unix(0, int64(x)).UTC(),
			Checks: []hooks.CheckResultView{{ID: s, Data: v, Error: s, ExecutionTime: x}}}}}
		for _, val := range []any{v, hr, map[string]any{s: v, "k": x}} {
			want, werr := json.Marshal(val)
			got, gerr := appendJSON(nil, val)
			if (werr != nil) != (gerr != nil) || (werr == nil && !bytes.Equal(got, want)) {
				t.Fatalf("appendJSON = %s, %v; json.Marshal: %s, %v", got, gerr, want, werr)
			}
		}
	})
}

// sendWithHookResults replaces whatever body the response held, with the
// results spliced in, or with the answer as it is when it is no object.
func TestSendWithHookResultsReplacesBody(t *testing.T) {
	app := fiber.New()
	c := app.AcquireCtx(&fasthttp.RequestCtx{})
	defer app.ReleaseCtx(c)
	for _, tc := range []struct{ body, want string }{
		{`{"a":1}`, `{"a":1,"hook_results":["r"]}`},
		{` {} `, `{"hook_results":["r"]}`},
		{`[1,2]`, `[1,2]`},
		{``, ``},
	} {
		c.Response().SetBodyString("earlier text, longer than the answers")
		sendWithHookResults(c, []byte(tc.body), []string{"r"})
		if got := string(c.Response().Body()); got != tc.want {
			t.Errorf("%q: body %q, want %q", tc.body, got, tc.want)
		}
	}
}

// TestAppendTimeMatchesMarshal checks created_at against json.Marshal of a
// time.Time, errors included.
func TestAppendTimeMatchesMarshal(t *testing.T) {
	for _, at := range []time.Time{
		{},
		time.Date(2026, 11, 22, 3, 4, 5, 0, time.UTC),
		time.Date(2026, 11, 22, 3, 4, 5, 120000000, time.UTC),
		time.Date(2026, 11, 22, 3, 4, 5, 1, time.FixedZone("", -5*3600-30*60)),
		time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC),
		time.Date(-1, 1, 1, 0, 0, 0, 0, time.UTC),
	} {
		want, werr := json.Marshal(at)
		got, gerr := appendTime(nil, at)
		if (werr != nil) != (gerr != nil) || (werr == nil && !bytes.Equal(got, want)) {
			t.Errorf("%v: appendTime = %s, %v; json.Marshal: %s, %v", at, got, gerr, want, werr)
		}
	}
}
