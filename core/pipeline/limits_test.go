package pipeline_test

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/llm-gateway/gateway/core"
	"github.com/llm-gateway/gateway/core/pipeline"
)

// idManaged resolves every managed reference to the upstream at url, as a
// managed target whose ProviderID is the reference ("@p1" → "p1").
type idManaged struct{ url string }

func (m idManaged) Resolve(_ context.Context, ref string, _ bool, _ *core.Principal) (core.Target, *core.Error) {
	return core.Target{Provider: "openai", BaseURL: m.url, CustomHost: true, APIKey: "stored-" + ref, ProviderID: ref}, nil
}

// targetLimiter refuses the targets in refuse (by ProviderID) and admits
// the others; it records the targets it was asked about. Admit is the
// server's, never called by the pipeline.
type targetLimiter struct {
	refuse map[string]*core.Error
	mu     sync.Mutex
	asked  []string
}

func (l *targetLimiter) Admit(context.Context, *core.Request) (core.Admission, *core.Error) {
	panic("the pipeline called Admit")
}

func (l *targetLimiter) AdmitTarget(_ context.Context, _ *core.Request, t *core.Target) (core.Admission, *core.Error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.asked = append(l.asked, t.ProviderID)
	if err := l.refuse[t.ProviderID]; err != nil {
		return nil, err
	}
	return targetAdmission(t.ProviderID), nil
}

// targetAdmission is the admission of the target it names.
type targetAdmission string

func (targetAdmission) Headers() [][2]string                    { return nil }
func (targetAdmission) Done(core.Usage, string, string, string) {}

var (
	budgetSpent = &core.Error{Status: http.StatusPreconditionFailed, Type: "budget_exceeded_error", Message: "usage limit exhausted: provider @p1"}
	rateLimited = &core.Error{Status: http.StatusTooManyRequests, Type: "rate_limit_error", Message: "rate limit exceeded: provider @p1",
		Header: [][2]string{{"retry-after", "7"}}}
)

// TestTargetLimits: the pipeline admits the own limits of each managed
// target a config routes a request to, as it calls it, the headers'
// target included where a leaf keeps it; a request its headers alone
// route (admitted by the server) and unmanaged targets are not asked
// about. A refusal fails the leaf like an answer of its status: a fallback
// moves on (by default, or when on_status_codes lists it) without calling
// the target, and the answer carries the admission of the target that
// gave it.
func TestTargetLimits(t *testing.T) {
	t.Parallel()
	a := newUpstream(t, ok("a"))
	cases := []struct {
		name      string
		config    string
		routed    bool   // a config routes the request (else the headers alone)
		header    string // the headers' managed target's ProviderID, if any
		refuse    map[string]*core.Error
		asked     []string // the targets AdmitTarget was asked about
		status    int
		path      string // the answering (or failing) target
		admission string // the answer's admission; "" for none
		hits      int64
	}{
		{name: "config provider", config: `{"provider":"@p1"}`, routed: true,
			asked: []string{"p1"}, status: 200, path: "config", admission: "p1", hits: 1},
		{name: "config virtual key", config: `{"virtual_key":"vk1"}`, routed: true,
			asked: []string{"vk1"}, status: 200, path: "config", admission: "vk1", hits: 1},
		{name: "headers alone", config: `{}`, header: "p1",
			asked: nil, status: 200, path: "config", hits: 1},
		{name: "headers' target kept by a config leaf", config: `{"retry":{"attempts":1}}`, routed: true, header: "p1",
			asked: []string{"p1"}, status: 200, path: "config", admission: "p1", hits: 1},
		{name: "headers' target replaced by the config", config: `{"provider":"@p2"}`, routed: true, header: "p1",
			asked: []string{"p2"}, status: 200, path: "config", admission: "p2", hits: 1},
		{name: "unmanaged target", config: `{"provider":"openai","custom_host":"$A"}`, routed: true,
			asked: nil, status: 200, path: "config", hits: 1},
		{name: "budget spent", config: `{"provider":"@p1"}`, routed: true, refuse: map[string]*core.Error{"p1": budgetSpent},
			asked: []string{"p1"}, status: 412, path: "config"},
		{name: "rate limited", config: `{"virtual_key":"p1"}`, routed: true, refuse: map[string]*core.Error{"p1": rateLimited},
			asked: []string{"p1"}, status: 429, path: "config"},
		{name: "fallback past a spent budget", config: `{"strategy":{"mode":"fallback"},"targets":[{"provider":"@p1"},{"provider":"@p2"}]}`, routed: true,
			refuse: map[string]*core.Error{"p1": budgetSpent}, asked: []string{"p1", "p2"}, status: 200, path: "config.targets[1]", admission: "p2", hits: 1},
		{name: "fallback past a rate limit to an unmanaged target", config: `{"strategy":{"mode":"fallback"},"targets":[{"virtual_key":"p1"},{"provider":"openai","custom_host":"$A"}]}`, routed: true,
			refuse: map[string]*core.Error{"p1": rateLimited}, asked: []string{"p1"}, status: 200, path: "config.targets[1]", hits: 1},
		{name: "fallback on listed statuses", config: `{"strategy":{"mode":"fallback","on_status_codes":[429]},"targets":[{"provider":"@p1"},{"provider":"@p2"}]}`, routed: true,
			refuse: map[string]*core.Error{"p1": rateLimited}, asked: []string{"p1", "p2"}, status: 200, path: "config.targets[1]", admission: "p2", hits: 1},
		{name: "fallback not on an unlisted status", config: `{"strategy":{"mode":"fallback","on_status_codes":[500]},"targets":[{"provider":"@p1"},{"provider":"@p2"}]}`, routed: true,
			refuse: map[string]*core.Error{"p1": budgetSpent}, asked: []string{"p1"}, status: 412, path: "config.targets[0]"},
		{name: "every target refused", config: `{"strategy":{"mode":"fallback"},"targets":[{"provider":"@p1"},{"provider":"@p2"}]}`, routed: true,
			refuse: map[string]*core.Error{"p1": rateLimited, "p2": budgetSpent}, asked: []string{"p1", "p2"}, status: 412, path: "config.targets[1]"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			lim := &targetLimiter{refuse: tc.refuse}
			e := newEnv(t, func(o *pipeline.Options) { o.Managed, o.Limiter = idManaged{a.URL()}, lim })
			req := chat("hi")
			req.RoutedByConfig = tc.routed
			if tc.header != "" {
				req.Target = core.Target{Provider: "openai", BaseURL: a.URL(), CustomHost: true, APIKey: "stored", Managed: true, ProviderID: tc.header}
			}
			before := a.Hits()
			resp, err := e.pipe.DoRoute(context.Background(), req, route(t, tc.config, "$A", a.URL()))
			if !slices.Equal(lim.asked, tc.asked) {
				t.Errorf("AdmitTarget asked about %q, want %q", lim.asked, tc.asked)
			}
			if n := a.Hits() - before; n != tc.hits {
				t.Errorf("%d upstream calls, want %d", n, tc.hits)
			}
			if tc.status != 200 {
				var re *pipeline.RouteError
				if resp != nil || !asRouteError(err, &re) || re.Err != tc.refuse[tc.asked[len(tc.asked)-1]] || re.OptionPath != tc.path || re.Provider != "openai" {
					t.Fatalf("got %+v %v, want the refusal %d at %s", resp, err, tc.status, tc.path)
				}
				return
			}
			if err != nil || resp.Status != 200 || resp.OptionPath != tc.path {
				t.Fatalf("got %+v %v, want 200 from %s", resp, err, tc.path)
			}
			if got, _ := resp.Admission.(targetAdmission); string(got) != tc.admission {
				t.Errorf("the answer's admission is %v, want %q", resp.Admission, tc.admission)
			}
			if tc.admission != "" && resp.ProviderID != tc.admission {
				t.Errorf("the answer's routing names provider id %q, want %q", resp.ProviderID, tc.admission)
			}
		})
	}
}

// TestWithheldAnswers: an answer an output guardrail with deny withholds
// (446) was produced, and billed, all the same: the pipeline reports it
// (the whole answer, or the held stream's bytes), its target and its
// target's admission, on the refusal and, when a fallback moves on past
// it, on the answer it ends with, for the server to count its usage; the
// refusal names the withheld answer it stands for. An answer the
// guardrails let through is reported as no withheld one.
func TestWithheldAnswers(t *testing.T) {
	t.Parallel()
	// Every answer says "bad words"; its usage tells the targets apart.
	usage := map[string]string{
		"Bearer stored-p1": `{"prompt_tokens":3,"completion_tokens":4,"total_tokens":7}`,
		"Bearer stored-p2": `{"prompt_tokens":5,"completion_tokens":6,"total_tokens":11}`,
	}
	whole := func(_ int, w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"id":"x","choices":[{"index":0,"message":{"role":"assistant","content":"bad words"}}],"usage":%s}`, usage[r.Header.Get("Authorization")])
	}
	streamOf := func(broken bool) script {
		return func(n int, w http.ResponseWriter, r *http.Request) {
			sse([]string{
				`{"object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":"bad words"}}]}`,
				`{"object":"chat.completion.chunk","choices":[],"usage":` + usage[r.Header.Get("Authorization")] + `}`,
			}, 0, 0, broken)(n, w, r)
		}
	}
	const deny = `"output_guardrails":[{"test.word":{"word":"bad"},"deny":true}]`
	for _, tc := range []struct {
		name     string
		config   string
		stream   bool
		broken   bool // the stream breaks off after its usage event
		status   int
		withheld []string // admission, option path, stream or whole and tokens of each answer reported withheld
		refused  string   // the one the refusal stands for
	}{
		{name: "whole answer withheld", config: `{"provider":"@p1",` + deny + `}`,
			status: 446, withheld: []string{"p1 config whole 7"}, refused: "p1 config whole 7"},
		{name: "stream withheld", config: `{"provider":"@p1",` + deny + `}`, stream: true,
			status: 446, withheld: []string{"p1 config stream 7"}, refused: "p1 config stream 7"},
		{name: "fallback past a withheld answer", config: `{"strategy":{"mode":"fallback"},"targets":[{"provider":"@p1",` + deny + `},{"provider":"@p2"}]}`,
			status: 200, withheld: []string{"p1 config.targets[0] whole 7"}},
		{name: "fallback past a withheld stream", config: `{"strategy":{"mode":"fallback"},"targets":[{"provider":"@p1",` + deny + `},{"provider":"@p2"}]}`, stream: true,
			status: 200, withheld: []string{"p1 config.targets[0] stream 7"}},
		{name: "every answer withheld", config: `{"strategy":{"mode":"fallback"},"targets":[{"provider":"@p1",` + deny + `},{"provider":"@p2",` + deny + `}]}`,
			status: 446, withheld: []string{"p1 config.targets[0] whole 7", "p2 config.targets[1] whole 11"}, refused: "p2 config.targets[1] whole 11"},
		{name: "a group's guardrail", config: `{"strategy":{"mode":"fallback"},` + deny + `,"targets":[{"provider":"@p2"},{"provider":"@p1"}]}`,
			status: 446, withheld: []string{"p2 config.targets[0] whole 11"}, refused: "p2 config.targets[0] whole 11"},
		{name: "stream broken while held", config: `{"provider":"@p1",` + deny + `}`, stream: true, broken: true,
			status: 502, withheld: []string{"p1 config stream 7"}, refused: "p1 config stream 7"},
		{name: "answer let through", config: `{"provider":"@p1","output_guardrails":[{"test.word":{"word":"nasty"},"deny":true}]}`,
			status: 200},
		{name: "stream let through", config: `{"provider":"@p1","output_guardrails":[{"test.word":{"word":"nasty"},"deny":true}]}`, stream: true,
			status: 200},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s := whole
			if tc.stream {
				s = streamOf(tc.broken)
			}
			a := newUpstream(t, s)
			e := newEnv(t, func(o *pipeline.Options) { o.Managed, o.Limiter = idManaged{a.URL()}, &targetLimiter{} })
			req := chat("hi")
			if tc.stream {
				req = streamChat("hi")
			}
			req.RoutedByConfig = true
			resp, err := e.pipe.DoRoute(context.Background(), req, route(t, tc.config))
			var withheld []core.Withheld
			var refused *core.Withheld
			if tc.status == 200 {
				if err != nil || resp.Status != 200 {
					t.Fatalf("got %+v %v, want 200", resp, err)
				}
				if resp.Stream != nil {
					resp.Stream.Close()
				}
				withheld = resp.Withheld
			} else {
				var re *pipeline.RouteError
				if resp != nil || !asRouteError(err, &re) || re.Err.Status != tc.status {
					t.Fatalf("got %+v %v, want %d", resp, err, tc.status)
				}
				withheld, refused = re.Withheld, re.Refused
			}
			// An answer as reported: its target, and the usage its bytes hold.
			describe := func(w *core.Withheld) string {
				adm, _ := w.Admission.(targetAdmission)
				kind, tokens := "whole", "?"
				if w.Stream {
					kind = "stream"
				}
				for _, n := range []string{"7", "11"} {
					if strings.Contains(string(w.Body), `"total_tokens":`+n+`}`) {
						tokens = n
					}
				}
				return fmt.Sprintf("%s %s %s %s", adm, w.OptionPath, kind, tokens)
			}
			var got []string
			for i := range withheld {
				got = append(got, describe(&withheld[i]))
			}
			if !slices.Equal(got, tc.withheld) {
				t.Errorf("withheld %q, want %q", got, tc.withheld)
			}
			if refused != nil && (len(withheld) == 0 || refused != &withheld[len(withheld)-1] || describe(refused) != tc.refused) || refused == nil && tc.refused != "" {
				t.Errorf("the refusal stands for %+v, want %q", refused, tc.refused)
			}
		})
	}
}
