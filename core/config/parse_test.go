package config

import (
	"encoding/json"
	"fmt"
	"net/http"
	"reflect"
	"strings"
	"testing"

	"github.com/llm-gateway/gateway/core"

	"github.com/llm-gateway/gateway/hooks"
)

// want is one expected problem: its exact path and a part of its message.
type want struct{ path, msg string }

func checkProblems(t *testing.T, input string, wants []want) {
	t.Helper()
	checkProblemsWith(t, nil, input, wants)
}

// checkProblemsWith is checkProblems with the checks and saved guardrails
// resolved with reg.
func checkProblemsWith(t *testing.T, reg *hooks.Registry, input string, wants []want) {
	t.Helper()
	_, got := parse([]byte(input), reg)
	if len(got) != len(wants) {
		t.Fatalf("input %s\ngot %d problems, want %d:\n%s", input, len(got), len(wants), strings.Join(got.list(), "\n"))
	}
	for i, w := range wants {
		if got[i].path != w.path || !strings.Contains(got[i].msg, w.msg) {
			t.Errorf("problem %d = %q: %q, want %q: ...%q...", i, got[i].path, got[i].msg, w.path, w.msg)
		}
	}
}

func TestParseProblems(t *testing.T) {
	tests := []struct {
		name  string
		input string
		want  []want
	}{
		// The value itself.
		{"empty input", ``, []want{{"config", "must be a JSON object, got nothing"}}},
		{"blank input", " \n\t", []want{{"config", "got nothing"}}},
		{"invalid JSON", `{"provider":`, []want{{"config", "is not valid JSON"}}},
		{"array", `[]`, []want{{"config", "must be a JSON object, got array"}}},
		{"string", `"pc-abc"`, []want{{"config", "got string"}}},
		{"number", `42`, []want{{"config", "got number"}}},
		{"null", `null`, []want{{"config", "got null"}}},
		{"trailing data", `{} {}`, []want{{"config", "unexpected data after the JSON object"}}},
		{"trailing garbage", `{}x`, []want{{"config", "unexpected data"}}},

		// Unknown fields at every level.
		{"unknown root field", `{"foo":1}`, []want{{"config.foo", "unknown field"}}},
		{"unknown fields sorted", `{"zz":1,"aa":2}`, []want{{"config.aa", "unknown field"}, {"config.zz", "unknown field"}}},
		{"unknown odd key", `{"a b":1}`, []want{{`config["a b"]`, "unknown field"}}},
		{"unknown target field", `{"targets":[{"provider":"openai"},{"provider":"openai","bogus":true}]}`,
			[]want{{"config.targets[1].bogus", "unknown field"}}},
		{"unknown strategy field", `{"strategy":{"mode":"single","x":1},"targets":[{}]}`, []want{{"config.strategy.x", "unknown field"}}},
		{"unknown retry field", `{"retry":{"attempts":1,"backoff":2}}`, []want{{"config.retry.backoff", "unknown field"}}},
		{"unknown cache field", `{"cache":{"mode":"simple","ttl":2}}`, []want{{"config.cache.ttl", "unknown field"}}},
		{"unknown embedding field", `{"cache":{"mode":"semantic","embedding":{"provider":"openai","model":"m","dims":3}}}`,
			[]want{{"config.cache.embedding.dims", "unknown field"}}},
		{"unknown circuit breaker field", `{"circuit_breaker":{"timeout":1}}`, []want{{"config.circuit_breaker.timeout", "unknown field"}}},
		{"unknown condition field", `{"strategy":{"mode":"conditional","conditions":[{"query":{"metadata.a":"b"},"then":"x","else":"y"}]},"targets":[{"name":"x"}]}`,
			[]want{{"config.strategy.conditions[0].else", "unknown field"}}},

		// Compliance flag and its alias.
		{"strict alias conflicts", `{"strict_reference_compliance":true,"strict_open_ai_compliance":false}`,
			[]want{{"config.strict_open_ai_compliance", "conflicts with strict_reference_compliance"}}},
		{"strict not boolean", `{"strict_reference_compliance":"yes"}`, []want{{"config.strict_reference_compliance", "must be a boolean, got string"}}},
		{"strict alias not boolean", `{"strict_open_ai_compliance":1}`, []want{{"config.strict_open_ai_compliance", "must be a boolean, got number"}}},

		// Wrong types.
		{"name not string", `{"name":1}`, []want{{"config.name", "must be a string, got number"}}},
		{"api_key not string", `{"api_key":true}`, []want{{"config.api_key", "must be a string, got boolean"}}},
		{"virtual_key not string", `{"virtual_key":{}}`, []want{{"config.virtual_key", "must be a string, got object"}}},
		{"virtual_key empty", `{"virtual_key":""}`, []want{{"config.virtual_key", "must not be empty"}}},
		{"override_params array", `{"targets":[{"override_params":[1]}]}`, []want{{"config.targets[0].override_params", "must be a JSON object, got array"}}},
		{"override_params string", `{"override_params":"x"}`, []want{{"config.override_params", "must be a JSON object, got string"}}},
		{"retry not object", `{"retry":3}`, []want{{"config.retry", "must be a JSON object, got number"}}},
		{"cache not object", `{"cache":"simple"}`, []want{{"config.cache", "must be a JSON object, got string"}}},
		{"strategy not object", `{"strategy":"fallback","targets":[{}]}`, []want{{"config.strategy", "must be a JSON object, got string"}}},
		{"circuit_breaker not object", `{"circuit_breaker":[]}`, []want{{"config.circuit_breaker", "must be a JSON object, got array"}}},
		{"target not object", `{"targets":[{},"openai",null]}`,
			[]want{{"config.targets[1]", "must be a JSON object, got string"}, {"config.targets[2]", "must be a JSON object, got null"}}},

		// Provider.
		{"provider not string", `{"provider":5}`, []want{{"config.provider", "must be a string, got number"}}},
		{"provider empty", `{"provider":""}`, []want{{"config.provider", "must not be empty"}}},
		{"provider bare at", `{"provider":"@"}`, []want{{"config.provider", "must be followed by a provider slug"}}},
		{"unknown provider", `{"provider":"nosuch"}`, []want{{"config.provider", `unknown provider "nosuch"; known providers: a, anthropic, azure-openai`}}},
		{"unknown provider in another case", `{"provider":"NoSuch"}`, []want{{"config.provider", `unknown provider "NoSuch"`}}},
		{"unknown provider of a fallback target", `{"strategy":{"mode":"fallback"},"targets":[{"provider":"nosuch"},{"provider":"openai"}]}`,
			[]want{{"config.targets[0].provider", `unknown provider "nosuch"`}}},
		{"unknown providers of nested targets", `{"targets":[{"targets":[{"provider":"openai"},{"provider":"nosuch"}]},{"provider":"other"}]}`,
			[]want{{"config.targets[0].targets[1].provider", `unknown provider "nosuch"`}, {"config.targets[1].provider", `unknown provider "other"`}}},
		{"unknown embedding provider", `{"cache":{"mode":"semantic","embedding":{"provider":"nosuch","model":"m"}}}`,
			[]want{{"config.cache.embedding.provider", `unknown provider "nosuch"`}}},

		// Strategy.
		{"unknown mode", `{"strategy":{"mode":"random"},"targets":[{}]}`, []want{{"config.strategy.mode", `unknown mode "random"`}}},
		{"unknown nested mode", `{"strategy":{"mode":"fallback"},"targets":[{},{"strategy":{"mode":"roundrobin"},"targets":[{}]}]}`,
			[]want{{"config.targets[1].strategy.mode", `unknown mode "roundrobin"`}}},
		{"mode missing", `{"strategy":{},"targets":[{}]}`, []want{{"config.strategy.mode", "required"}}},
		{"mode not string", `{"strategy":{"mode":1},"targets":[{}]}`, []want{{"config.strategy.mode", "must be a string, got number"}}},
		{"strategy without targets", `{"strategy":{"mode":"fallback"}}`, []want{{"config.targets", "required when a strategy is set"}}},
		{"nested strategy without targets", `{"targets":[{"strategy":{"mode":"loadbalance"},"provider":"openai"}]}`,
			[]want{{"config.targets[0].targets", "required when a strategy is set"}}},
		{"targets not array", `{"targets":{"provider":"openai"}}`, []want{{"config.targets", "must be a non-empty array of targets, got object"}}},
		{"targets empty", `{"strategy":{"mode":"fallback"},"targets":[]}`, []want{{"config.targets", "must be a non-empty array"}}},
		{"fallback status codes", `{"strategy":{"mode":"fallback","on_status_codes":[99,600,"500",500.5,429,4.29e2]},"targets":[{}]}`,
			[]want{
				{"config.strategy.on_status_codes[0]", "between 100 and 599, got 99"},
				{"config.strategy.on_status_codes[1]", "between 100 and 599, got 600"},
				{"config.strategy.on_status_codes[2]", "got string"},
				{"config.strategy.on_status_codes[3]", "got 500.5"},
			}},
		{"status codes not array", `{"strategy":{"mode":"fallback","on_status_codes":500},"targets":[{}]}`,
			[]want{{"config.strategy.on_status_codes", "must be an array of HTTP status codes"}}},
		{"status codes on loadbalance", `{"strategy":{"mode":"loadbalance","on_status_codes":[429]},"targets":[{}]}`,
			[]want{{"config.strategy.on_status_codes", "only used with mode fallback"}}},
		{"status codes on single", `{"targets":[{"strategy":{"mode":"single","on_status_codes":[500]},"targets":[{}]}]}`,
			[]want{{"config.targets[0].strategy.on_status_codes", "only used with mode fallback"}}},
		{"status codes on conditional", `{"strategy":{"mode":"conditional","on_status_codes":[500],"conditions":[{"query":{},"then":"a"}]},"targets":[{"name":"a"}]}`,
			[]want{{"config.strategy.on_status_codes", "only used with mode fallback"}}},

		// Weight.
		{"negative weight", `{"strategy":{"mode":"loadbalance"},"targets":[{"weight":1},{"weight":-0.5}]}`,
			[]want{{"config.targets[1].weight", "must not be negative"}}},
		{"weight not number", `{"strategy":{"mode":"loadbalance"},"targets":[{"weight":"1"}]}`,
			[]want{{"config.targets[0].weight", "must be a number, got string"}}},
		{"weight out of range", `{"weight":1e999}`, []want{{"config.weight", "out of range"}}},
		{"all weights zero", `{"strategy":{"mode":"loadbalance"},"targets":[{"weight":0},{"weight":0}]}`,
			[]want{{"config.targets", "at least one target with a positive weight"}}},
		{"weights that add up past the largest number", `{"strategy":{"mode":"loadbalance"},"targets":[{"weight":1e308},{"weight":1e308},{"weight":1}]}`,
			[]want{{"config.targets[1].weight", "add up to more than 1.7976931348623157e+308"}}},
		{"a nested group's weights past the largest number", `{"targets":[{"strategy":{"mode":"loadbalance"},"targets":[{"weight":1.7976931348623157e308},{"weight":1e300}]}]}`,
			[]want{{"config.targets[0].targets[1].weight", "add up to more than"}}},

		// Retry.
		{"retry attempts too many", `{"retry":{"attempts":11}}`, []want{{"config.retry.attempts", "between 0 and 10, got 11"}}},
		{"retry attempts negative", `{"targets":[{"retry":{"attempts":-1}}]}`, []want{{"config.targets[0].retry.attempts", "between 0 and 10, got -1"}}},
		{"retry attempts fraction", `{"retry":{"attempts":1.5}}`, []want{{"config.retry.attempts", "must be an integer, got 1.5"}}},
		{"retry attempts string", `{"retry":{"attempts":"3"}}`, []want{{"config.retry.attempts", "must be an integer, got string"}}},
		{"retry status codes", `{"retry":{"attempts":2,"on_status_codes":[429,1000]}}`, []want{{"config.retry.on_status_codes[1]", "between 100 and 599"}}},
		{"retry after not bool", `{"retry":{"use_retry_after_header":"true"}}`, []want{{"config.retry.use_retry_after_header", "must be a boolean"}}},

		// Cache.
		{"cache mode unknown", `{"cache":{"mode":"fast"}}`, []want{{"config.cache.mode", `unknown cache mode "fast"`}}},
		{"cache mode missing", `{"cache":{"max_age":60}}`, []want{{"config.cache.mode", "required"}}},
		{"cache max_age negative", `{"cache":{"mode":"simple","max_age":-1}}`, []want{{"config.cache.max_age", "at least 1, got -1"}}},
		{"cache max_age zero", `{"cache":{"mode":"simple","max_age":0}}`, []want{{"config.cache.max_age", "must be at least 1 (seconds): an answer kept for 0 s is never reused"}}},
		{"cache max_age zero written otherwise", `{"cache":{"mode":"simple","max_age":0.0e3}}`, []want{{"config.cache.max_age", "is never reused"}}},
		{"cache max_age fraction", `{"cache":{"mode":"simple","max_age":0.5}}`, []want{{"config.cache.max_age", "must be an integer (seconds), got 0.5"}}},
		{"cache max_age past its bound", `{"cache":{"mode":"simple","max_age":9223372037}}`, []want{{"config.cache.max_age", "of at most 9223372036, got 9223372037"}}},
		{"cache max_age huge", `{"cache":{"mode":"simple","max_age":1e30}}`, []want{{"config.cache.max_age", "must be an integer (seconds) of at most 9223372036, got 1e30"}}},
		{"cache max_age the largest int64", `{"cache":{"mode":"simple","max_age":9223372036854775807}}`, []want{{"config.cache.max_age", "of at most 9223372036, got 9223372036854775807"}}},
		{"cache max_age string", `{"cache":{"mode":"simple","max_age":"1h"}}`, []want{{"config.cache.max_age", "must be an integer (seconds), got string"}}},
		{"semantic without embedding", `{"cache":{"mode":"semantic"}}`, []want{{"config.cache.embedding", "required with mode semantic"}}},
		{"embedding without provider and model", `{"cache":{"mode":"semantic","embedding":{}}}`,
			[]want{{"config.cache.embedding.provider", "required"}, {"config.cache.embedding.model", "required"}}},
		{"embedding bad host", `{"cache":{"mode":"semantic","embedding":{"provider":"openai","model":"m","custom_host":"localhost:1"}}}`,
			[]want{{"config.cache.embedding.custom_host", "absolute http or https base URL"}}},
		{"threshold zero", `{"cache":{"mode":"semantic","similarity_threshold":0,"embedding":{"provider":"openai","model":"m"}}}`,
			[]want{{"config.cache.similarity_threshold", "greater than 0 and at most 1"}}},
		{"threshold above one", `{"cache":{"mode":"semantic","similarity_threshold":1.01,"embedding":{"provider":"openai","model":"m"}}}`,
			[]want{{"config.cache.similarity_threshold", "greater than 0 and at most 1"}}},

		// Timeout, host, headers.
		{"timeout zero", `{"request_timeout":0}`, []want{{"config.request_timeout", "between 1 and 86400000, got 0"}}},
		{"timeout negative", `{"targets":[{"request_timeout":-5}]}`, []want{{"config.targets[0].request_timeout", "got -5"}}},
		{"timeout fraction", `{"request_timeout":1.5}`, []want{{"config.request_timeout", "must be an integer (milliseconds), got 1.5"}}},
		{"timeout string", `{"request_timeout":"10s"}`, []want{{"config.request_timeout", "got string"}}},
		{"timeout too large", `{"request_timeout":86400001}`, []want{{"config.request_timeout", "between 1 and 86400000"}}},
		{"timeout huge", `{"request_timeout":1e30}`, []want{{"config.request_timeout", "between 1 and 86400000"}}},
		{"custom host ftp", `{"custom_host":"ftp://example.com"}`, []want{{"config.custom_host", "absolute http or https base URL"}}},
		{"azure resource with a host", `{"targets":[{"provider":"azure-openai","azure_resource_name":"evil.com/x"}]}`, []want{{"config.targets[0].azure_resource_name", "Azure resource name"}}},
		{"azure deployment up a level", `{"azure_deployment_id":"../x"}`, []want{{"config.azure_deployment_id", "letters, digits"}}},
		{"azure deployment ..", `{"azure_deployment_id":".."}`, []want{{"config.azure_deployment_id", `not "." or ".."`}}},
		{"azure version with a parameter", `{"azure_api_version":"1&x=y"}`, []want{{"config.azure_api_version", "letters, digits"}}},
		{"azure fields' types", `{"azure_model_name":3,"azure_resource_name":""}`, []want{{"config.azure_resource_name", "must not be empty"}, {"config.azure_model_name", "must be a string, got number"}}},
		{"vertex region with a host", `{"targets":[{"provider":"vertex-ai","vertex_region":"us-central1.evil.com"}]}`, []want{{"config.targets[0].vertex_region", "Google Cloud region"}}},
		{"vertex project with a path", `{"vertex_project_id":"proj/../x"}`, []want{{"config.vertex_project_id", "Google Cloud project id"}}},
		{"custom host relative", `{"custom_host":"/v1"}`, []want{{"config.custom_host", "absolute http or https base URL"}}},
		{"custom host no host", `{"custom_host":"http://"}`, []want{{"config.custom_host", "absolute http or https base URL"}}},
		{"custom host no scheme", `{"custom_host":"example.com"}`, []want{{"config.custom_host", "absolute http or https base URL"}}},
		{"custom host with a query", `{"custom_host":"http://example.com/v1?api-version=1"}`, []want{{"config.custom_host", "no query or fragment"}}},
		{"custom host with a fragment", `{"custom_host":"http://example.com/v1#x"}`, []want{{"config.custom_host", "no query or fragment"}}},
		{"custom host with credentials", `{"custom_host":"http://u:secret@example.com/v1"}`, []want{{"config.custom_host", "user information"}}},
		{"embedding custom host with a query", `{"cache":{"mode":"semantic","embedding":{"provider":"openai","model":"m","custom_host":"http://example.com/v1?x=1"}}}`, []want{{"config.cache.embedding.custom_host", "no query or fragment"}}},
		{"custom host not string", `{"custom_host":1}`, []want{{"config.custom_host", "must be a string"}}},
		{"forward headers string", `{"forward_headers":"x-team"}`, []want{{"config.forward_headers", "must be an array of header names, got string"}}},
		{"forward headers bad entries", `{"forward_headers":["x-team",1,"bad header","x-gateway-provider","authorization",""]}`,
			[]want{
				{"config.forward_headers[1]", "must be a string, got number"},
				{"config.forward_headers[2]", "not a valid header name"},
				{"config.forward_headers[3]", "gateway headers"},
				{"config.forward_headers[4]", "Authorization"},
				{"config.forward_headers[5]", "must not be empty"},
			}},

		// Conditional.
		{"conditional without conditions", `{"strategy":{"mode":"conditional","default":"a"},"targets":[{"name":"a"}]}`,
			[]want{{"config.strategy.conditions", "required with mode conditional"}}},
		{"conditional empty conditions", `{"strategy":{"mode":"conditional","conditions":[]},"targets":[{"name":"a"}]}`,
			[]want{{"config.strategy.conditions", "must be a non-empty array"}}},
		{"conditions not array", `{"strategy":{"mode":"conditional","conditions":{}},"targets":[{"name":"a"}]}`,
			[]want{{"config.strategy.conditions", "must be a non-empty array of {query, then}, got object"}}},
		{"condition without query and then", `{"strategy":{"mode":"conditional","conditions":[{}]},"targets":[{"name":"a"}]}`,
			[]want{{"config.strategy.conditions[0].query", "required"}, {"config.strategy.conditions[0].then", "required"}}},
		{"condition not object", `{"strategy":{"mode":"conditional","conditions":["a"]},"targets":[{"name":"a"}]}`,
			[]want{{"config.strategy.conditions[0]", "must be a JSON object, got string"}}},
		{"query not object", `{"strategy":{"mode":"conditional","conditions":[{"query":"metadata.a=b","then":"a"}]},"targets":[{"name":"a"}]}`,
			[]want{{"config.strategy.conditions[0].query", "must be a JSON object, got string"}}},
		{"then not string", `{"strategy":{"mode":"conditional","conditions":[{"query":{},"then":1}]},"targets":[{"name":"a"}]}`,
			[]want{{"config.strategy.conditions[0].then", "must be a string, got number"}}},
		{"then names no target", `{"strategy":{"mode":"conditional","conditions":[{"query":{},"then":"a"},{"query":{},"then":"c"}]},"targets":[{"name":"a"},{"name":"b"}]}`,
			[]want{{"config.strategy.conditions[1].then", `"c" names no target of this group`}}},
		{"default names no target", `{"strategy":{"mode":"conditional","conditions":[{"query":{},"then":"a"}],"default":"zz"},"targets":[{"name":"a"}]}`,
			[]want{{"config.strategy.default", `"zz" names no target of this group`}}},
		{"then names a nested target", `{"strategy":{"mode":"conditional","conditions":[{"query":{},"then":"deep"}]},"targets":[{"name":"a","targets":[{"name":"deep"}]}]}`,
			[]want{{"config.strategy.conditions[0].then", `"deep" names no target of this group`}}},
		{"duplicate names", `{"strategy":{"mode":"conditional","conditions":[{"query":{},"then":"a"}]},"targets":[{"name":"a"},{"name":"b"},{"name":"a"}]}`,
			[]want{{"config.targets[2].name", `duplicate target name "a"`}}},
		{"conditions on fallback", `{"strategy":{"mode":"fallback","conditions":[{"query":{},"then":"a"}],"default":"a"},"targets":[{"name":"a"}]}`,
			[]want{{"config.strategy.conditions", "only used with mode conditional"}, {"config.strategy.default", "only used with mode conditional"}}},
		{"query problems", `{"strategy":{"mode":"conditional","conditions":[{"query":{"$foo":1,"user.id":"x","metadata.a":{"$regex":"(","$in":"x","$between":[1,2]},"$and":{}},"then":"a"}]},"targets":[{"name":"a"}]}`,
			[]want{
				{"config.strategy.conditions[0].query.$and", "must be a non-empty array of queries, got object"},
				{"config.strategy.conditions[0].query.$foo", `unknown operator "$foo"`},
				{`config.strategy.conditions[0].query["metadata.a"].$between`, `unknown operator "$between"`},
				{`config.strategy.conditions[0].query["metadata.a"].$in`, "must be an array, got string"},
				{`config.strategy.conditions[0].query["metadata.a"].$regex`, "invalid regular expression"},
				{`config.strategy.conditions[0].query["user.id"]`, `unknown field "user.id"`},
			}},

		// Circuit breaker.
		{"circuit breaker out of range", `{"circuit_breaker":{"failure_threshold":0,"failure_ratio":1.5,"min_requests":0,"cooldown_ms":0,"on_status_codes":[700]}}`,
			[]want{
				{"config.circuit_breaker.failure_threshold", "at least 1, got 0"},
				{"config.circuit_breaker.failure_ratio", "greater than 0 and at most 1"},
				{"config.circuit_breaker.min_requests", "at least 1, got 0"},
				{"config.circuit_breaker.cooldown_ms", "at least 1, got 0"},
				{"config.circuit_breaker.on_status_codes[0]", "between 100 and 599, got 700"},
			}},
		{"circuit breaker settings too large", `{"circuit_breaker":{"failure_threshold":1e30,"cooldown_ms":9223372036854775807}}`,
			[]want{{"config.circuit_breaker.failure_threshold", "of at most 2147483647, got 1e30"}, {"config.circuit_breaker.cooldown_ms", "(milliseconds) of at most 9223372036854, got 9223372036854775807"}}},
		{"circuit breaker ratio zero", `{"circuit_breaker":{"failure_ratio":0}}`, []want{{"config.circuit_breaker.failure_ratio", "greater than 0"}}},
		{"circuit breaker types", `{"circuit_breaker":{"failure_threshold":"5","cooldown_ms":1.5}}`,
			[]want{{"config.circuit_breaker.failure_threshold", "got string"}, {"config.circuit_breaker.cooldown_ms", "got 1.5"}}},

		// Hooks.
		{"hooks not arrays", `{"before_request_hooks":{},"after_request_hooks":"x","input_guardrails":1,"output_guardrails":true}`,
			[]want{
				{"config.before_request_hooks", "must be an array, got object"},
				{"config.after_request_hooks", "must be an array, got string"},
				{"config.input_guardrails", "must be an array, got number"},
				{"config.output_guardrails", "must be an array, got boolean"},
			}},
		{"nested hooks not array", `{"targets":[{"input_guardrails":"pg-abc"}]}`, []want{{"config.targets[0].input_guardrails", "must be an array"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			checkProblems(t, tt.input, tt.want)
			c, err := Parse([]byte(tt.input), nil)
			if err == nil || c != nil {
				t.Fatalf("Parse = %v, %v; want an error", c, err)
			}
			if err.Status != http.StatusBadRequest || err.Code != core.CodeValidation || err.Type != core.TypeInvalidRequest {
				t.Errorf("error = %d %s %s, want 400 AB01 invalid_request_error", err.Status, err.Code, err.Type)
			}
			if err.Param != tt.want[0].path {
				t.Errorf("Param = %q, want %q", err.Param, tt.want[0].path)
			}
		})
	}
}

// TestParseOverrideParams: override_params are merged over a body after
// its validation, so the members a chat completion body bounds are held to
// those bounds (by the body's own checks); rules tying them to the rest of
// the body, and other members, are left to the body and the provider.
func TestParseOverrideParams(t *testing.T) {
	tools := func(n int) string {
		return "[" + strings.TrimSuffix(strings.Repeat(`{"type":"function","function":{"name":"f"}},`, n), ",") + "]"
	}
	tests := []struct {
		name  string
		input string
		want  []want // none: the config is valid
	}{
		{"temperature above 2", `{"override_params":{"temperature":5}}`, []want{{"config.override_params.temperature", "must be between 0 and 2, got 5"}}},
		{"temperature below 0", `{"override_params":{"temperature":-0.1}}`, []want{{"config.override_params.temperature", "got -0.1"}}},
		{"temperature a string", `{"override_params":{"temperature":"hot"}}`, []want{{"config.override_params.temperature", "must be a number or null, got string"}}},
		{"n of a second target", `{"strategy":{"mode":"fallback"},"targets":[{"provider":"openai"},{"provider":"openai","override_params":{"n":500}}]}`,
			[]want{{"config.targets[1].override_params.n", "must be between 1 and 128, got 500"}}},
		{"n zero in a nested target", `{"targets":[{"targets":[{"override_params":{"n":0}}]}]}`, []want{{"config.targets[0].targets[0].override_params.n", "got 0"}}},
		{"n a fraction", `{"override_params":{"n":2.5}}`, []want{{"config.override_params.n", "must be an integer or null, got 2.5"}}},
		{"top_p above 1", `{"override_params":{"top_p":1.5}}`, []want{{"config.override_params.top_p", "must be between 0 and 1, got 1.5"}}},
		{"penalties", `{"override_params":{"frequency_penalty":-2.5,"presence_penalty":3}}`, []want{
			{"config.override_params.frequency_penalty", "must be between -2 and 2, got -2.5"},
			{"config.override_params.presence_penalty", "must be between -2 and 2, got 3"},
		}},
		{"top_logprobs above 20", `{"override_params":{"top_logprobs":21}}`, []want{{"config.override_params.top_logprobs", "must be between 0 and 20, got 21"}}},
		{"five stop sequences", `{"override_params":{"stop":["a","b","c","d","e"]}}`, []want{{"config.override_params.stop", "must contain at most 4 sequences, got 5"}}},
		{"stop element", `{"override_params":{"stop":["a",1]}}`, []want{{"config.override_params.stop[1]", "must be a string, got number"}}},
		{"129 tools", `{"override_params":{"tools":` + tools(129) + `}}`, []want{{"config.override_params.tools", "must contain at most 128 elements, got 129"}}},
		{"tool name", `{"override_params":{"tools":[{"type":"function","function":{"name":"a b"}}]}}`, []want{{"config.override_params.tools[0].function.name", "must match"}}},
		{"functions empty", `{"override_params":{"functions":[]}}`, []want{{"config.override_params.functions", "must contain at least 1 element"}}},
		{"logit_bias", `{"override_params":{"logit_bias":{"50256":-101,"abc":1}}}`, []want{
			{"config.override_params.logit_bias.50256", "must be between -100 and 100, got -101"},
			{"config.override_params.logit_bias.abc", "logit_bias keys must be integer token ids"},
		}},
		{"every problem, in the body's order", `{"override_params":{"top_p":2,"temperature":3,"n":0,"stop":["a","b","c","d","e"],"presence_penalty":9}}`, []want{
			{"config.override_params.presence_penalty", "between -2 and 2"},
			{"config.override_params.n", "between 1 and 128"},
			{"config.override_params.stop", "at most 4"},
			{"config.override_params.temperature", "between 0 and 2"},
			{"config.override_params.top_p", "between 0 and 1"},
		}},
		{"with other problems of the target", `{"targets":[{"retry":{"attempts":11},"override_params":{"temperature":2.5},"bogus":1}]}`, []want{
			{"config.targets[0].override_params.temperature", "between 0 and 2"},
			{"config.targets[0].retry.attempts", "between 0 and 10"},
			{"config.targets[0].bogus", "unknown field"},
		}},

		{"the bounds themselves", `{"override_params":{"temperature":2,"top_p":0,"n":128,"frequency_penalty":-2,"presence_penalty":2,"top_logprobs":20,"stop":["a","b","c","d"],"logit_bias":{"1":100,"2":-100},"tools":` + tools(128) + `}}`, nil},
		{"the other ends", `{"targets":[{"override_params":{"temperature":0,"top_p":1,"n":1,"top_logprobs":0,"stop":"x","functions":[{"name":"f"}]}}]}`, nil},
		{"nulls", `{"override_params":{"temperature":null,"n":null,"stop":null,"logit_bias":null,"top_logprobs":null}}`, nil},
		{"top_logprobs without logprobs: the body may have it", `{"override_params":{"top_logprobs":5}}`, nil},
		{"members the body does not bound", `{"override_params":{"model":"gpt-4o","max_tokens":7,"seed":1,"response_format":{"type":"json_object"},"top_k":1000}}`, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			checkProblems(t, tt.input, tt.want)
			_, err := Parse([]byte(tt.input), nil)
			switch {
			case tt.want == nil && err != nil:
				t.Fatalf("Parse: %s", err.Message)
			case tt.want != nil && (err == nil || err.Code != core.CodeValidation || err.Param != tt.want[0].path):
				t.Fatalf("Parse = %+v, want AB01 naming %s", err, tt.want[0].path)
			}
		})
	}
}

func TestParseDepth(t *testing.T) {
	nest := func(levels int) string {
		s := `{"provider":"openai"}`
		for range levels {
			s = `{"targets":[` + s + `]}`
		}
		return s
	}
	if _, err := Parse([]byte(nest(MaxDepth)), nil); err != nil {
		t.Fatalf("%d levels: %v", MaxDepth, err)
	}
	// With one more level, the node at depth 10 may not have targets.
	path := "config" + strings.Repeat(".targets[0]", MaxDepth) + ".targets"
	checkProblems(t, nest(MaxDepth+1), []want{{path, "deeper than 10 levels"}})
	// Far deeper: still one problem, no descent.
	checkProblems(t, nest(500), []want{{path, "deeper than 10 levels"}})
}

func TestParseManyProblems(t *testing.T) {
	input := `{
		"strategy": {"mode": "fallback", "on_status_codes": [42]},
		"targets": [
			{"provider": "openai", "weight": -1, "retry": {"attempts": 20}},
			{"strategy": {"mode": "conditional", "conditions": [{"query": {"metadata.tier": {"$gt": "1", "$oops": 1}}, "then": "missing"}]},
			 "targets": [{"name": "x", "cache": {"mode": "semantic"}}, {"name": "x"}]},
			"bad"
		],
		"request_timeout": 0,
		"extra": 1
	}`
	wants := []want{
		{"config.strategy.on_status_codes[0]", "between 100 and 599"},
		{"config.targets[0].weight", "must not be negative"},
		{"config.targets[0].retry.attempts", "between 0 and 10"},
		{`config.targets[1].strategy.conditions[0].query["metadata.tier"].$oops`, "unknown operator"},
		{"config.targets[1].targets[0].cache.embedding", "required with mode semantic"},
		{"config.targets[1].targets[1].name", "duplicate target name"},
		{"config.targets[1].strategy.conditions[0].then", `"missing" names no target`},
		{"config.targets[2]", "must be a JSON object"},
		{"config.request_timeout", "between 1 and 86400000"},
		{"config.extra", "unknown field"},
	}
	checkProblems(t, input, wants)

	_, err := Parse([]byte(input), nil)
	if err == nil {
		t.Fatal("no error")
	}
	if err.Param != "config.strategy.on_status_codes[0]" {
		t.Errorf("Param = %q", err.Param)
	}
	parts := strings.Split(err.Message, "; ")
	if len(parts) != len(wants) {
		t.Fatalf("message lists %d problems, want %d: %s", len(parts), len(wants), err.Message)
	}
	for i, w := range wants {
		if !strings.HasPrefix(parts[i], w.path+": ") {
			t.Errorf("part %d = %q, want prefix %q", i, parts[i], w.path+": ")
		}
	}
	var body struct {
		Error struct {
			Param, Code string
		}
	}
	if e := json.Unmarshal(err.Body(), &body); e != nil || body.Error.Code != "AB01" || body.Error.Param != err.Param {
		t.Errorf("body = %s (%v)", err.Body(), e)
	}
}

func TestParseProblemCap(t *testing.T) {
	var b strings.Builder
	b.WriteString("{")
	for i := range 150 {
		if i > 0 {
			b.WriteString(",")
		}
		fmt.Fprintf(&b, `"f%03d":1`, i)
	}
	b.WriteString("}")
	_, err := Parse([]byte(b.String()), nil)
	if err == nil {
		t.Fatal("no error")
	}
	if n := strings.Count(err.Message, "unknown field"); n != maxProblems {
		t.Errorf("%d problems listed, want %d", n, maxProblems)
	}
	if !strings.HasSuffix(err.Message, "; and 50 more problems") {
		t.Errorf("message ends %q", err.Message[len(err.Message)-40:])
	}
}

func ptr[T any](v T) *T { return &v }

func TestParseValid(t *testing.T) {
	tests := []struct {
		name  string
		input string
		want  *Config
	}{
		{"empty object", `{}`, &Config{}},
		{"nulls are absent", `{"retry":null,"cache":null,"targets":null,"provider":null}`, &Config{}},
		{"single leaf", `{"provider":"openai","api_key":"sk-1","override_params":{"model":"gpt-4o","temperature":0.5}}`,
			&Config{Provider: "openai", APIKey: "sk-1", OverrideParams: map[string]any{"model": "gpt-4o", "temperature": json.Number("0.5")}}},
		{"managed provider", `{"provider":"@openai-prod"}`, &Config{Provider: "@openai-prod"}},
		{"virtual key", `{"virtual_key":"vk-1"}`, &Config{VirtualKey: "vk-1"}},
		{"provider names ignore case, slugs do not", `{"targets":[{"provider":"OpenAI"},{"provider":"@Backup-EU"}]}`,
			&Config{Targets: []*Config{{Provider: "openai"}, {Provider: "@Backup-EU"}}}},
		{"strict alias", `{"strict_open_ai_compliance":false}`, &Config{Strict: ptr(false)}},
		{"azure target", `{"provider":"azure-openai","azure_resource_name":"res","azure_deployment_id":"gpt-4o","azure_api_version":"2024-10-21","azure_model_name":"gpt-4o"}`,
			&Config{Provider: "azure-openai", AzureSettings: core.AzureSettings{ResourceName: "res", DeploymentID: "gpt-4o", APIVersion: "2024-10-21", ModelName: "gpt-4o"}}},
		{"vertex target", `{"provider":"vertex-ai","vertex_project_id":"my-project-1","vertex_region":"global"}`,
			&Config{Provider: "vertex-ai", VertexSettings: core.VertexSettings{ProjectID: "my-project-1", Region: "global"}}},
		{"strict both agree", `{"strict_open_ai_compliance":true,"strict_reference_compliance":true}`, &Config{Strict: ptr(true)}},
		{"single mode", `{"strategy":{"mode":"single"},"targets":[{"provider":"openai"},{"provider":"anthropic"}]}`,
			&Config{Strategy: &Strategy{Mode: ModeSingle}, Targets: []*Config{{Provider: "openai"}, {Provider: "anthropic"}}}},
		{"fallback", `{"strategy":{"mode":"fallback","on_status_codes":[429,5e2]},"targets":[{"provider":"openai"},{"provider":"@backup","request_timeout":1000}]}`,
			&Config{Strategy: &Strategy{Mode: ModeFallback, OnStatusCodes: []int{429, 500}},
				Targets: []*Config{{Provider: "openai"}, {Provider: "@backup", RequestTimeout: ptr(int64(1000))}}}},
		{"loadbalance", `{"strategy":{"mode":"loadbalance"},"targets":[{"provider":"openai","weight":0.7},{"provider":"groq","weight":0},{"provider":"x"}]}`,
			&Config{Strategy: &Strategy{Mode: ModeLoadbalance},
				Targets: []*Config{{Provider: "openai", Weight: ptr(0.7)}, {Provider: "groq", Weight: ptr(0.0)}, {Provider: "x"}}}},
		{"conditional", `{"strategy":{"mode":"conditional","conditions":[{"query":{"metadata.tier":"pro"},"then":"big"},{"query":{"$or":[{"params.model":{"$regex":"^gpt"}},{"url.pathname":{"$in":["/v1/embeddings"]}}]},"then":"small"}],"default":"small"},
			"targets":[{"name":"big","provider":"openai"},{"name":"small","provider":"groq"}]}`,
			&Config{Strategy: &Strategy{Mode: ModeConditional, Default: "small", Conditions: []Condition{
				{Query: map[string]any{"metadata.tier": "pro"}, Then: "big"},
				{Query: map[string]any{"$or": []any{
					map[string]any{"params.model": map[string]any{"$regex": "^gpt"}},
					map[string]any{"url.pathname": map[string]any{"$in": []any{"/v1/embeddings"}}},
				}}, Then: "small"},
			}}, Targets: []*Config{{Name: "big", Provider: "openai"}, {Name: "small", Provider: "groq"}}}},
		{"everything on a leaf", `{"name":"n","weight":2,"provider":"openai","api_key":"k","custom_host":"https://llm.example.com/v1",
			"forward_headers":["x-team"],"retry":{"attempts":3,"on_status_codes":[429],"use_retry_after_header":true},
			"cache":{"mode":"semantic","max_age":3600,"similarity_threshold":1,"embedding":{"provider":"openai","model":"text-embedding-3-small","api_key":"e","custom_host":"http://emb:8080"}},
			"request_timeout":10000,"circuit_breaker":{"failure_threshold":3,"failure_ratio":0.5,"min_requests":10,"cooldown_ms":1000,"on_status_codes":[500,503]},
			"after_request_hooks":[],"strict_reference_compliance":false}`,
			&Config{Name: "n", Weight: ptr(2.0), Provider: "openai", APIKey: "k", CustomHost: "https://llm.example.com/v1",
				ForwardHeaders: []string{"x-team"}, Retry: &Retry{Attempts: 3, OnStatusCodes: []int{429}, UseRetryAfterHeader: true},
				Cache: &Cache{Mode: CacheSemantic, MaxAge: 3600, SimilarityThreshold: ptr(1.0),
					Embedding: &EmbeddingProvider{Provider: "openai", Model: "text-embedding-3-small", APIKey: "e", CustomHost: "http://emb:8080"}},
				RequestTimeout: ptr(int64(10000)),
				CircuitBreaker: &CircuitBreaker{FailureThreshold: 3, FailureRatio: 0.5, MinRequests: 10, CooldownMs: 1000, OnStatusCodes: []int{500, 503}},
				AfterHooks:     json.RawMessage(`[]`),
				after:          []hooks.Spec{},
				Strict:         ptr(false)}},
		{"group with inherited defaults", `{"provider":"openai","api_key":"k","virtual_key":"v","retry":{"attempts":1},"targets":[{"override_params":{"model":"a"}}]}`,
			&Config{Provider: "openai", APIKey: "k", VirtualKey: "v", Retry: &Retry{Attempts: 1},
				Targets: []*Config{{OverrideParams: map[string]any{"model": "a"}}}}},
		{"three levels", `{"strategy":{"mode":"fallback"},"targets":[
			{"strategy":{"mode":"loadbalance"},"targets":[
				{"strategy":{"mode":"conditional","conditions":[{"query":{"params.stream":true},"then":"s"}],"default":"n"},"targets":[{"name":"s","provider":"a"},{"name":"n","provider":"b"}]},
				{"provider":"c","weight":3}]},
			{"provider":"d"}]}`,
			&Config{Strategy: &Strategy{Mode: ModeFallback}, Targets: []*Config{
				{Strategy: &Strategy{Mode: ModeLoadbalance}, Targets: []*Config{
					{Strategy: &Strategy{Mode: ModeConditional, Default: "n", Conditions: []Condition{{Query: map[string]any{"params.stream": true}, Then: "s"}}},
						Targets: []*Config{{Name: "s", Provider: "a"}, {Name: "n", Provider: "b"}}},
					{Provider: "c", Weight: ptr(3.0)}}},
				{Provider: "d"}}}},
		{"group without strategy", `{"targets":[{"provider":"a"}]}`, &Config{Targets: []*Config{{Provider: "a"}}}},
		{"integral floats", `{"retry":{"attempts":3.0},"request_timeout":1e4}`, &Config{Retry: &Retry{Attempts: 3}, RequestTimeout: ptr(int64(10000))}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Parse([]byte(tt.input), nil)
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				g, _ := json.Marshal(got)
				w, _ := json.Marshal(tt.want)
				t.Errorf("got  %s\nwant %s", g, w)
			}
		})
	}
}

// TestParseWithRegistry checks that the checks and saved guardrails a
// config's hooks name, at the root and in nested targets, are resolved
// with the registry Parse is given.
func TestParseWithRegistry(t *testing.T) {
	reg := &hooks.Registry{
		Checks:     func(id string) (hooks.Check, bool) { return nil, id == "plug.check" },
		Guardrails: func(ref string) (hooks.Spec, bool) { return hooks.Spec{ID: ref}, ref == "saved" },
	}
	input := `{"input_guardrails":["saved"],"strategy":{"mode":"fallback"},"targets":[{"provider":"openai",
		"before_request_hooks":[{"checks":[{"id":"plug.check"}]}]}]}`
	for _, tc := range []struct {
		name string
		reg  *hooks.Registry
		want []want
	}{
		{"its sources", reg, nil},
		{"built-ins only", nil, []want{
			{"config.targets[0].before_request_hooks[0].checks[0].id", `unknown check "plug.check"`},
			{"config.input_guardrails[0]", `no saved guardrail "saved"`},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) { checkProblemsWith(t, tc.reg, input, tc.want) })
	}
}

// A config stored before a rule that refuses it still loads as it did
// (ParseStored), with the rule's problem as a warning; Parse, which writes
// use, refuses it. Rules older than storage refuse it in both.
func TestParseStored(t *testing.T) {
	tests := []struct {
		name  string
		input string
		warn  string // the warning's path; "" when the config is refused
		check func(t *testing.T, c *Config)
	}{
		{"override_params out of bounds", `{"override_params":{"temperature":5}}`, "config.override_params.temperature",
			func(t *testing.T, c *Config) {
				if c.OverrideParams["temperature"] == nil {
					t.Errorf("override_params lost: %v", c.OverrideParams)
				}
			}},
		{"cache max_age 0: the default, as before", `{"cache":{"mode":"simple","max_age":0}}`, "config.cache.max_age",
			func(t *testing.T, c *Config) {
				if c.Cache == nil || c.Cache.MaxAge != 0 {
					t.Errorf("cache %+v, want the default max_age", c.Cache)
				}
			}},
		{"on_status_codes with loadbalance: ignored, as before", `{"strategy":{"mode":"loadbalance","on_status_codes":[500]},"targets":[{"provider":"openai"},{"provider":"groq"}]}`, "config.strategy.on_status_codes",
			func(t *testing.T, c *Config) {
				if c.Strategy == nil || c.Strategy.OnStatusCodes != nil {
					t.Errorf("strategy %+v", c.Strategy)
				}
			}},
		{"weights adding up past the largest float", `{"strategy":{"mode":"loadbalance"},"targets":[{"provider":"openai","weight":1e308},{"provider":"groq","weight":1e308}]}`, "config.targets[1].weight",
			func(t *testing.T, c *Config) {
				if len(c.Targets) != 2 {
					t.Errorf("targets %d", len(c.Targets))
				}
			}},
		{"an older rule still refuses", `{"retry":{"attempts":11}}`, "", nil},
		{"an older rule beside a newer one", `{"retry":{"attempts":11},"cache":{"mode":"simple","max_age":0}}`, "", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := Parse([]byte(tt.input), nil); err == nil {
				t.Fatalf("Parse accepted it")
			}
			c, warnings, err := ParseStored([]byte(tt.input), nil)
			if tt.warn == "" {
				if err == nil {
					t.Fatalf("ParseStored accepted it (warnings %q)", warnings)
				}
				return
			}
			if err != nil {
				t.Fatalf("ParseStored: %s", err.Message)
			}
			if len(warnings) != 1 || !strings.HasPrefix(warnings[0], tt.warn+": ") {
				t.Fatalf("warnings %q, want one at %s", warnings, tt.warn)
			}
			tt.check(t, c)
		})
	}
}
