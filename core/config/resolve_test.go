package config

import (
	"context"
	"encoding/json"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/llm-gateway/gateway/core"
	"github.com/llm-gateway/gateway/hooks"
)

func mustResolve(t *testing.T, s string) *Node {
	t.Helper()
	c, err := Parse([]byte(s), nil)
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	return Resolve(c)
}

// leafAt finds the node with path p.
func nodeAt(t *testing.T, n *Node, p string) *Node {
	t.Helper()
	var found *Node
	var walk func(*Node)
	walk = func(n *Node) {
		if n.Path == p {
			found = n
		}
		for _, c := range n.Children {
			walk(c)
		}
	}
	walk(n)
	if found == nil {
		t.Fatalf("no node %s", p)
	}
	return found
}

func TestResolveTree(t *testing.T) {
	n := mustResolve(t, `{"strategy":{"mode":"fallback","on_status_codes":[429]},"targets":[
		{"provider":"a","name":"first"},
		{"targets":[{"provider":"b","weight":2},{"provider":"c","weight":0},
			{"strategy":{"mode":"loadbalance"},"targets":[{"provider":"d"},{"provider":"e","weight":0.5}]}]}]}`)
	if n.Path != "config" || n.Strategy.Mode != ModeFallback || !reflect.DeepEqual(n.Strategy.OnStatusCodes, []int{429}) || n.Leaf != nil || n.Weight != 1 {
		t.Errorf("root = %+v", n)
	}
	g := nodeAt(t, n, "config.targets[1]")
	if g.Strategy.Mode != ModeSingle || len(g.Children) != 3 || g.IsLeaf() {
		t.Errorf("group without strategy = %+v", g)
	}
	var paths []string
	var weights []float64
	var providers []string
	for _, l := range n.Leaves() {
		paths = append(paths, l.Path)
		weights = append(weights, l.Weight)
		providers = append(providers, l.Leaf.Provider)
		if !l.IsLeaf() || l.Children != nil || l.Strategy.Mode != "" {
			t.Errorf("leaf %s = %+v", l.Path, l)
		}
	}
	wantPaths := []string{"config.targets[0]", "config.targets[1].targets[0]", "config.targets[1].targets[1]",
		"config.targets[1].targets[2].targets[0]", "config.targets[1].targets[2].targets[1]"}
	if !reflect.DeepEqual(paths, wantPaths) {
		t.Errorf("paths = %q", paths)
	}
	if !reflect.DeepEqual(weights, []float64{1, 2, 0, 1, 0.5}) {
		t.Errorf("weights = %v", weights)
	}
	if !reflect.DeepEqual(providers, []string{"a", "b", "c", "d", "e"}) {
		t.Errorf("providers = %v", providers)
	}
	if c := n.Child("first"); c == nil || c.Path != "config.targets[0]" {
		t.Errorf("Child(first) = %+v", c)
	}
	if n.Child("none") != nil {
		t.Error("Child(none) found something")
	}

	// A root without targets is itself the leaf.
	leafRoot := mustResolve(t, `{"provider":"openai","weight":3}`)
	if !leafRoot.IsLeaf() || leafRoot.Path != "config" || leafRoot.Weight != 3 || leafRoot.Leaf.Provider != "openai" {
		t.Errorf("leaf root = %+v", leafRoot)
	}
	if ls := leafRoot.Leaves(); len(ls) != 1 || ls[0] != leafRoot {
		t.Errorf("Leaves = %v", ls)
	}
	if Resolve(nil) != nil {
		t.Error("Resolve(nil) != nil")
	}
}

func TestResolveInheritance(t *testing.T) {
	retry1 := &Retry{Attempts: 1, OnStatusCodes: []int{500}}
	tests := []struct {
		name   string
		config string
		path   string
		want   Leaf
	}{
		{"nothing set", `{"targets":[{}]}`, "config.targets[0]", Leaf{}},
		{"provider, api_key and virtual_key inherited together",
			`{"provider":"openai","api_key":"k","virtual_key":"v","targets":[{"targets":[{}]}]}`, "config.targets[0].targets[0]",
			Leaf{Provider: "openai", APIKey: "k", VirtualKey: "v"}},
		{"child provider drops the parent's key",
			`{"provider":"openai","api_key":"k","virtual_key":"v","targets":[{"provider":"groq"}]}`, "config.targets[0]",
			Leaf{Provider: "groq"}},
		{"child virtual key drops the parent's provider",
			`{"provider":"openai","api_key":"k","targets":[{"virtual_key":"vk"}]}`, "config.targets[0]",
			Leaf{VirtualKey: "vk"}},
		{"child api_key alone keeps the parent's provider",
			`{"provider":"openai","api_key":"k","targets":[{"api_key":"k2"}]}`, "config.targets[0]",
			Leaf{Provider: "openai", APIKey: "k2"}},
		{"override_params merged, child wins",
			`{"override_params":{"model":"a","temperature":0},"targets":[{"override_params":{"model":"b","top_p":1},"targets":[{"override_params":{"seed":7}}]}]}`,
			"config.targets[0].targets[0]",
			Leaf{OverrideParams: map[string]any{"model": "b", "temperature": json.Number("0"), "top_p": json.Number("1"), "seed": json.Number("7")}}},
		{"override_params inherited as is",
			`{"override_params":{"model":"a"},"targets":[{}]}`, "config.targets[0]",
			Leaf{OverrideParams: map[string]any{"model": "a"}}},
		{"retry inherited with default codes",
			`{"retry":{"attempts":2},"targets":[{}]}`, "config.targets[0]",
			Leaf{Retry: &Retry{Attempts: 2, OnStatusCodes: DefaultRetryStatusCodes}}},
		{"retry replaced whole",
			`{"retry":{"attempts":3,"use_retry_after_header":true,"on_status_codes":[429]},"targets":[{"retry":{"attempts":1,"on_status_codes":[500]}}]}`,
			"config.targets[0]", Leaf{Retry: retry1}},
		{"cache inherited, semantic threshold defaulted",
			`{"cache":{"mode":"semantic","max_age":60,"embedding":{"provider":"openai","model":"e"}},"targets":[{}]}`, "config.targets[0]",
			Leaf{Cache: &Cache{Mode: CacheSemantic, MaxAge: 60, SimilarityThreshold: ptr(DefaultSimilarityThreshold), Embedding: &EmbeddingProvider{Provider: "openai", Model: "e"}}}},
		{"cache replaced whole",
			`{"cache":{"mode":"semantic","max_age":60,"similarity_threshold":0.8,"embedding":{"provider":"openai","model":"e"}},"targets":[{"cache":{"mode":"simple"}}]}`,
			"config.targets[0]", Leaf{Cache: &Cache{Mode: CacheSimple}}},
		{"request_timeout inherited", `{"request_timeout":1500,"targets":[{"targets":[{}]}]}`, "config.targets[0].targets[0]",
			Leaf{Timeout: 1500 * time.Millisecond}},
		{"request_timeout overridden", `{"request_timeout":1500,"targets":[{"request_timeout":20}]}`, "config.targets[0]",
			Leaf{Timeout: 20 * time.Millisecond}},
		{"custom_host inherited", `{"custom_host":"http://vllm:8000/v1","targets":[{}]}`, "config.targets[0]",
			Leaf{CustomHost: "http://vllm:8000/v1"}},
		{"custom_host overridden", `{"custom_host":"http://a","targets":[{"custom_host":"https://b"}]}`, "config.targets[0]",
			Leaf{CustomHost: "https://b"}},
		{"forward_headers inherited", `{"forward_headers":["x-a"],"targets":[{}]}`, "config.targets[0]",
			Leaf{ForwardHeaders: []string{"x-a"}}},
		{"forward_headers replaced", `{"forward_headers":["x-a"],"targets":[{"forward_headers":["x-b"]}]}`, "config.targets[0]",
			Leaf{ForwardHeaders: []string{"x-b"}}},
		{"forward_headers cleared by []", `{"forward_headers":["x-a"],"targets":[{"forward_headers":[]}]}`, "config.targets[0]",
			Leaf{ForwardHeaders: []string{}}},
		{"circuit_breaker inherited", `{"circuit_breaker":{"failure_threshold":3},"targets":[{}]}`, "config.targets[0]",
			Leaf{CircuitBreaker: &CircuitBreaker{FailureThreshold: 3}}},
		{"circuit_breaker replaced", `{"circuit_breaker":{"failure_threshold":3},"targets":[{"circuit_breaker":{"cooldown_ms":5}}]}`, "config.targets[0]",
			Leaf{CircuitBreaker: &CircuitBreaker{CooldownMs: 5}}},
		{"strict inherited", `{"strict_open_ai_compliance":false,"targets":[{}]}`, "config.targets[0]", Leaf{Strict: ptr(false)}},
		{"azure fields inherited one by one",
			`{"azure_resource_name":"res","azure_api_version":"2024-10-21","targets":[{"azure_deployment_id":"d1","azure_api_version":"2025-01-01-preview","azure_model_name":"gpt-4o"}]}`,
			"config.targets[0]", Leaf{Azure: core.AzureSettings{ResourceName: "res", DeploymentID: "d1", APIVersion: "2025-01-01-preview", ModelName: "gpt-4o"}}},
		{"azure resource overridden", `{"azure_resource_name":"a1","targets":[{"azure_resource_name":"a2"}]}`, "config.targets[0]",
			Leaf{Azure: core.AzureSettings{ResourceName: "a2"}}},
		{"vertex fields inherited one by one", `{"vertex_project_id":"proj-01","vertex_region":"us-central1","targets":[{"vertex_region":"global"}]}`, "config.targets[0]",
			Leaf{Vertex: core.VertexSettings{ProjectID: "proj-01", Region: "global"}}},
		{"strict overridden", `{"strict_reference_compliance":false,"targets":[{"strict_reference_compliance":true}]}`, "config.targets[0]", Leaf{Strict: ptr(true)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n := nodeAt(t, mustResolve(t, tt.config), tt.path)
			if n.Leaf == nil {
				t.Fatalf("%s is not a leaf", tt.path)
			}
			if !reflect.DeepEqual(*n.Leaf, tt.want) {
				g, _ := json.Marshal(n.Leaf)
				w, _ := json.Marshal(tt.want)
				t.Errorf("leaf\ngot  %s\nwant %s", g, w)
			}
		})
	}
}

func TestResolveSharesNothingMutable(t *testing.T) {
	c, err := Parse([]byte(`{"override_params":{"a":1},"forward_headers":["x-a"],"retry":{"attempts":1},"targets":[{},{}]}`), nil)
	if err != nil {
		t.Fatal(err)
	}
	n := Resolve(c)
	l0, l1 := n.Children[0].Leaf, n.Children[1].Leaf
	l0.OverrideParams["a"] = "changed"
	l0.ForwardHeaders[0] = "x-changed"
	l0.Retry.Attempts = 9
	l0.Retry.OnStatusCodes[0] = 1
	if l1.OverrideParams["a"] != json.Number("1") || l1.ForwardHeaders[0] != "x-a" || l1.Retry.Attempts != 1 || l1.Retry.OnStatusCodes[0] != 429 {
		t.Errorf("leaves share state: %+v", l1)
	}
	if c.OverrideParams["a"] != json.Number("1") || c.Retry.Attempts != 1 || c.Retry.OnStatusCodes != nil || DefaultRetryStatusCodes[0] != 429 {
		t.Errorf("config changed: %+v", c)
	}
}

func TestResolveHandBuilt(t *testing.T) {
	// A config built in Go, with a nil target and no strategy mode.
	n := Resolve(&Config{Strategy: &Strategy{}, Targets: []*Config{nil, {Provider: "a", RequestTimeout: ptr(int64(1 << 62))}}})
	if n.Strategy.Mode != ModeSingle || len(n.Children) != 1 || n.Children[0].Path != "config.targets[1]" {
		t.Fatalf("tree = %+v", n)
	}
	if n.Children[0].Leaf.Timeout <= 0 {
		t.Errorf("timeout overflowed: %v", n.Children[0].Leaf.Timeout)
	}
}

func TestSingle(t *testing.T) {
	n := Single(Leaf{Provider: "openai", APIKey: "k", Timeout: time.Second})
	if n.Path != "config" || n.Weight != 1 || !n.IsLeaf() || n.Leaf.Provider != "openai" || n.Leaf.Timeout != time.Second {
		t.Errorf("Single = %+v", n)
	}
	if ls := n.Leaves(); len(ls) != 1 || ls[0] != n {
		t.Errorf("Leaves = %v", ls)
	}
}

func TestChoose(t *testing.T) {
	n := mustResolve(t, `{"strategy":{"mode":"conditional","conditions":[
			{"query":{"metadata.tier":"pro"},"then":"big"},
			{"query":{"$or":[{"params.max_tokens":{"$gt":1000}},{"url.pathname":"/v1/embeddings"}]},"then":"long"}],
		"default":"small"},
		"targets":[{"name":"big","provider":"a"},{"name":"small","provider":"b"},{"name":"long","provider":"c"}]}`)
	tests := []struct {
		data QueryData
		want string
	}{
		{QueryData{Metadata: map[string]string{"tier": "pro"}, Params: map[string]any{"max_tokens": json.Number("5000")}}, "config.targets[0]"},
		{QueryData{Params: map[string]any{"max_tokens": json.Number("5000")}}, "config.targets[2]"},
		{QueryData{URL: map[string]string{"pathname": "/v1/embeddings"}}, "config.targets[2]"},
		{QueryData{Metadata: map[string]string{"tier": "free"}}, "config.targets[1]"},
		{QueryData{}, "config.targets[1]"},
	}
	for i, tt := range tests {
		got, err := n.Choose(tt.data)
		if err != nil || got.Path != tt.want {
			t.Errorf("%d: Choose = %v, %v; want %s", i, got, err, tt.want)
		}
	}

	noDefault := mustResolve(t, `{"strategy":{"mode":"conditional","conditions":[{"query":{"metadata.tier":"pro"},"then":"a"}]},
		"targets":[{"strategy":{"mode":"conditional","conditions":[{"query":{"metadata.x":"y"},"then":"b"}]},"targets":[{"name":"b"}]},{"name":"a"}]}`)
	got, err := noDefault.Choose(QueryData{})
	if err == nil || got != nil || err.Status != http.StatusBadRequest || err.Param != "config.strategy" {
		t.Errorf("no match: %v, %+v", got, err)
	}
	inner := noDefault.Children[0]
	if _, err := inner.Choose(QueryData{}); err == nil || err.Param != "config.targets[0].strategy" {
		t.Errorf("nested no match: %+v", err)
	}
}

type okCheck struct{}

func (okCheck) Run(context.Context, *hooks.CheckInput) (hooks.CheckResult, error) {
	return hooks.CheckResult{Verdict: true}, nil
}

func (okCheck) ValidateParams(p map[string]any) []string {
	if _, ok := p["bad"]; ok {
		return []string{"bad: not allowed"}
	}
	return nil
}

func init() { hooks.RegisterCheck("default.testOK", okCheck{}) }

// TestHooksAreOwnedByTheirNode checks that hooks are parsed into specs,
// checked against the checks that exist, and kept on the node that sets
// them rather than copied to its targets.
func TestHooksAreOwnedByTheirNode(t *testing.T) {
	n := mustResolve(t, `{"before_request_hooks":[{"id":"b","checks":[{"id":"default.testOK"}]}],
		"input_guardrails":[{"testOK":{},"deny":true}],"output_guardrails":[{"default.testOK":{}}],
		"targets":[{"provider":"a","after_request_hooks":[{"id":"x","checks":[{"id":"default.testOK"}]}]},{"provider":"b"}]}`)
	if len(n.Before) != 2 || n.Before[0].ID != "b" || !n.Before[1].Deny || n.Before[1].Checks[0].ID != "default.testOK" {
		t.Fatalf("root before hooks: %+v", n.Before)
	}
	if len(n.After) != 1 {
		t.Fatalf("root after hooks: %+v", n.After)
	}
	if c := n.Children[0]; len(c.Before) != 0 || len(c.After) != 1 || c.After[0].ID != "x" {
		t.Fatalf("target hooks: %+v %+v", c.Before, c.After)
	}
	if c := n.Children[1]; len(c.Before)+len(c.After) != 0 {
		t.Fatalf("hooks were inherited: %+v %+v", c.Before, c.After)
	}
	for cfg, want := range map[string]string{
		`{"input_guardrails":[{"testOK":{"bad":1}}]}`:                        "config.input_guardrails[0].testOK.bad: not allowed",
		`{"targets":[{"before_request_hooks":[{"checks":[{"id":"x.y"}]}]}]}`: `config.targets[0].before_request_hooks[0].checks[0].id: unknown check "x.y"`,
	} {
		_, err := Parse([]byte(cfg), nil)
		if err == nil || !strings.Contains(err.Message, want) {
			t.Errorf("%s: %v, want %q", cfg, err, want)
		}
	}
}
