package defaults

import (
	"context"
	"errors"
	"io"
	"reflect"
	"regexp"
	"strings"
	"testing"

	"github.com/llm-gateway/gateway/core"
	"github.com/llm-gateway/gateway/hooks"
)

type checkCase struct {
	name     string
	id       string
	params   string
	user     string // last user message of a chat request (chatBody)
	body     string // a raw request body instead
	answer   string // answer text: runs afterResponseHook on chatAnswer(answer)
	respBody string // a raw answer body instead
	stream   bool   // the answer is a stream
	mod      func(*core.Request)
	verdict  bool
	err      string         // substring of the expected error
	data     map[string]any // expected data fields (JSON-decoded values)
	want     string         // expected transformed body, "" for none
}

func (c checkCase) input(t testing.TB) *hooks.CheckInput {
	body := c.body
	if body == "" {
		body = chatBody(c.user)
	}
	req := newRequest(body)
	if c.mod != nil {
		c.mod(req)
	}
	p := jparams(t, c.params)
	if c.stream {
		resp := newResponse("")
		resp.Body, resp.Stream, resp.SSE = nil, io.NopCloser(strings.NewReader("data: [DONE]\n\n")), true
		return after(req, resp, p)
	}
	if c.answer != "" || c.respBody != "" {
		rb := c.respBody
		if rb == "" {
			rb = chatAnswer(c.answer)
		}
		return after(req, newResponse(rb), p)
	}
	return before(req, p)
}

func runCases(t *testing.T, cases []checkCase) {
	t.Helper()
	for _, c := range cases {
		t.Run(c.id+"/"+c.name, func(t *testing.T) {
			res, err := runCheck(t, c.id, c.input(t))
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("error = %v, want one containing %q", err, c.err)
				}
				return
			}
			if err != nil {
				t.Fatalf("unexpected error: %v", err)
			}
			if res.Verdict != c.verdict {
				t.Errorf("verdict = %v, want %v (data %+v)", res.Verdict, c.verdict, res.Data)
			}
			got := dataOf(t, res)
			if _, ok := got["explanation"].(string); !ok {
				t.Errorf("data has no explanation: %+v", got)
			}
			for k, want := range c.data {
				if !reflect.DeepEqual(got[k], want) {
					t.Errorf("data[%q] = %#v, want %#v", k, got[k], want)
				}
			}
			if c.want == "" {
				if res.Transformed != nil {
					t.Errorf("unexpected transform: %s", res.Transformed)
				}
				return
			}
			sameJSON(t, res.Transformed, c.want)
		})
	}
}

func withMetadata(kv ...string) func(*core.Request) {
	return func(r *core.Request) {
		for i := 0; i+1 < len(kv); i += 2 {
			r.Metadata[kv[i]] = kv[i+1]
		}
	}
}

func TestTextChecks(t *testing.T) {
	runCases(t, []checkCase{
		// regexMatch
		{name: "matches", id: "default.regexMatch", params: `{"rule": "ORD-\\d{5}"}`,
			user: "My order ORD-12345 has not arrived, where is it?", verdict: true,
			data: map[string]any{"matched": true, "match": "ORD-12345"}},
		{name: "pattern alias", id: "default.regexMatch", params: `{"pattern": "(?i)\\brefund\\b"}`,
			user: "I want a REFUND now", verdict: true},
		{name: "no match", id: "default.regexMatch", params: `{"rule": "ORD-\\d{5}"}`,
			user: "Where is my parcel?", verdict: false, data: map[string]any{"matched": false}},
		{name: "not with match fails", id: "default.regexMatch", params: `{"rule": "\\b\\d{3}-\\d{2}-\\d{4}\\b", "not": true}`,
			answer: "The customer's SSN is 123-45-6789.", verdict: false},
		{name: "not without match passes", id: "default.regexMatch", params: `{"rule": "\\b\\d{3}-\\d{2}-\\d{4}\\b", "not": true}`,
			answer: "I cannot share personal data.", verdict: true},
		{name: "bad parameters are an error", id: "default.regexMatch", params: `{"rule": "(?=lookahead)"}`,
			user: "x", err: "invalid parameters: rule: not a valid regular expression"},
		{name: "streamed answer is an error", id: "default.regexMatch", params: `{"rule": "x"}`,
			stream: true, err: "not a JSON object"},
		{name: "parts content", id: "default.regexMatch", params: `{"rule": "cat"}`, verdict: true,
			body: `{"model":"gpt-4o","messages":[{"role":"user","content":[{"type":"text","text":"What is this cat?"},` +
				`{"type":"image_url","image_url":{"url":"https://example.com/cat.png"}}]}]}`},

		// sentenceCount, wordCount, characterCount
		{name: "in range", id: "default.sentenceCount", params: `{"minSentences": 2, "maxSentences": 3}`,
			answer: "Hello there. How are you? I am fine!", verdict: true, data: map[string]any{"count": 3.0}},
		{name: "too many", id: "default.sentenceCount", params: `{"maxSentences": 2}`,
			answer: "Hello there. How are you? I am fine!", verdict: false},
		{name: "decimals are not sentence ends", id: "default.sentenceCount", params: `{"minSentences": 1, "maxSentences": 1}`,
			answer: "Pi is about 3.14159 and e is about 2.718.", verdict: true, data: map[string]any{"count": 1.0}},
		{name: "not inverts", id: "default.sentenceCount", params: `{"minSentences": 1, "maxSentences": 5, "not": true}`,
			answer: "One. Two.", verdict: false},
		{name: "too many words", id: "default.wordCount", params: `{"minWords": 1, "maxWords": 4}`,
			user: "one two three four five", verdict: false, data: map[string]any{"count": 5.0}},
		{name: "default range", id: "default.wordCount", params: `{}`, user: "just a few words", verdict: true},
		{name: "empty text has no words", id: "default.wordCount", params: `{"minWords": 1}`, answer: "", respBody: chatAnswer(""), verdict: false,
			data: map[string]any{"count": 0.0}},
		{name: "runes, not bytes", id: "default.characterCount", params: `{"maxCharacters": 5}`,
			answer: "héllo", verdict: true, data: map[string]any{"count": 5.0}},
		{name: "too short", id: "default.characterCount", params: `{"minCharacters": 10}`,
			answer: "short", verdict: false},

		// contains
		{name: "all found", id: "default.contains", params: `{"words": ["refund", "30 days"], "operator": "all"}`,
			answer: "Our refund policy allows returns within 30 days.", verdict: true},
		{name: "all, one missing", id: "default.contains", params: `{"words": ["refund", "warranty"], "operator": "all"}`,
			answer: "Our refund policy allows returns within 30 days.", verdict: false,
			data: map[string]any{"foundWords": []any{"refund"}, "missingWords": []any{"warranty"}}},
		{name: "any (default)", id: "default.contains", params: `{"words": ["warranty", "refund"]}`,
			answer: "Our refund policy allows returns within 30 days.", verdict: true},
		{name: "none passes", id: "default.contains", params: `{"words": ["guarantee"], "operator": "none"}`,
			answer: "Our refund policy allows returns within 30 days.", verdict: true},
		{name: "none fails", id: "default.contains", params: `{"words": ["refund"], "operator": "none"}`,
			answer: "Our refund policy allows returns within 30 days.", verdict: false},

		// alluppercase, alllowercase, endsWith, notNull
		{name: "upper", id: "default.alluppercase", user: "STOP SHOUTING AT ME, 123!", verdict: true},
		{name: "not upper", id: "default.alluppercase", user: "Stop shouting", verdict: false,
			data: map[string]any{"lowercaseLetters": 11.0}},
		{name: "upper, not", id: "default.alluppercase", params: `{"not": true}`, user: "Stop shouting", verdict: true},
		{name: "lower", id: "default.alllowercase", answer: "all good here. ok?", verdict: true},
		{name: "not lower", id: "default.alllowercase", answer: "All good", verdict: false},
		{name: "unicode lower", id: "default.alllowercase", answer: "ÉTÉ", verdict: false},
		{name: "ends with", id: "default.endsWith", params: `{"suffix": "Goodbye"}`,
			answer: "Thanks for asking. Goodbye\n", verdict: true},
		{name: "ends with and a period", id: "default.endsWith", params: `{"suffix": "Goodbye"}`,
			answer: "Thanks for asking. Goodbye.", verdict: true},
		{name: "does not end with", id: "default.endsWith", params: `{"suffix": "Goodbye"}`,
			answer: "Goodbye and thanks.", verdict: false},
		{name: "ends with, not", id: "default.endsWith", params: `{"suffix": "Goodbye", "not": true}`,
			answer: "Goodbye and thanks.", verdict: true},
		{name: "present", id: "default.notNull", answer: "ok", verdict: true},
		{name: "empty", id: "default.notNull", respBody: chatAnswer("  \n"), verdict: false, data: map[string]any{"isNull": true}},
		{name: "tool call answer has no text", id: "default.notNull", verdict: false,
			respBody: `{"id":"chatcmpl-1","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":null,` +
				`"tool_calls":[{"id":"call_1","type":"function","function":{"name":"get_weather","arguments":"{}"}}]},"finish_reason":"tool_calls"}]}`},
		{name: "empty, not", id: "default.notNull", params: `{"not": true}`, respBody: chatAnswer(""), verdict: true},
	})
}

func TestJSONChecks(t *testing.T) {
	schema := `{"type":"object","required":["name","age"],"properties":{"name":{"type":"string","minLength":1},` +
		`"age":{"type":"integer","minimum":0},"tags":{"type":"array","items":{"type":"string"}}},"additionalProperties":false}`
	runCases(t, []checkCase{
		{name: "fenced block matches", id: "default.jsonSchema", params: `{"schema": ` + schema + `}`,
			answer: "Here is the record:\n```json\n{\"name\": \"Ada\", \"age\": 36, \"tags\": [\"math\"]}\n```\nAnything else?", verdict: true},
		{name: "whole answer is JSON", id: "default.jsonSchema", params: `{"schema": ` + schema + `}`,
			answer: `{"name": "Ada", "age": 36}`, verdict: true},
		{name: "JSON embedded in prose", id: "default.jsonSchema", params: `{"schema": ` + schema + `}`,
			answer: `Sure! {"name": "Ada", "age": 36} is the answer.`, verdict: true},
		{name: "violations listed", id: "default.jsonSchema", params: `{"schema": ` + schema + `}`,
			answer: "```json\n{\"name\": \"\", \"age\": -1, \"extra\": true}\n```", verdict: false,
			data: map[string]any{"valid": false, "errors": []any{
				"$.age: must be >= 0",
				`$: property "extra" is not allowed`,
				"$.name: must be at least 1 characters long, not 0",
			}}},
		{name: "no JSON", id: "default.jsonSchema", params: `{"schema": ` + schema + `}`,
			answer: "I don't know.", verdict: false, data: map[string]any{"valid": false}},
		{name: "not inverts", id: "default.jsonSchema", params: `{"schema": ` + schema + `, "not": true}`,
			answer: `{"name": "Ada", "age": 36}`, verdict: false},
		{name: "schema as a string", id: "default.jsonSchema", params: `{"schema": ` + q(schema) + `}`,
			answer: `{"name": "Ada", "age": 36}`, verdict: true},
		{name: "all keys", id: "default.jsonKeys", params: `{"keys": ["title", "summary"], "operator": "all"}`,
			answer: `{"title": "Q3 report", "summary": "Revenue up 4%", "pages": 12}`, verdict: true},
		{name: "all keys, one missing", id: "default.jsonKeys", params: `{"keys": ["title", "tags"], "operator": "all"}`,
			answer: `{"title": "Q3 report", "summary": "Revenue up 4%"}`, verdict: false,
			data: map[string]any{"presentKeys": []any{"title"}, "missingKeys": []any{"tags"}}},
		{name: "any key", id: "default.jsonKeys", params: `{"keys": ["title", "tags"]}`,
			answer: "```json\n{\"title\": \"Q3 report\"}\n```", verdict: true},
		{name: "none of the keys", id: "default.jsonKeys", params: `{"keys": ["password"], "operator": "none"}`,
			answer: `{"user": "ada"}`, verdict: true},
		{name: "no JSON object", id: "default.jsonKeys", params: `{"keys": ["title"]}`,
			answer: "No JSON here.", verdict: false},
	})
}

func TestURLAndCodeChecks(t *testing.T) {
	old := lookupHost
	lookupHost = func(_ context.Context, host string) ([]string, error) {
		if host == "docs.example.com" || host == "example.org" {
			return []string{"93.184.215.14"}, nil
		}
		return nil, errors.New("no such host")
	}
	defer func() { lookupHost = old }()
	runCases(t, []checkCase{
		{name: "all valid", id: "default.validUrls",
			answer: "See https://docs.example.com/guide?x=1 and (http://example.org/a_(b)).", verdict: true,
			data: map[string]any{"validUrls": []any{"https://docs.example.com/guide?x=1", "http://example.org/a_(b)"}}},
		{name: "bad host", id: "default.validUrls", answer: "Try http://-bad-.example/x or https://docs.example.com.",
			verdict: false, data: map[string]any{"invalidUrls": []any{map[string]any{"url": "http://-bad-.example/x", "reason": "invalid host name"}}}},
		{name: "bad port", id: "default.validUrls", answer: "Go to http://example.org:99999/", verdict: false},
		{name: "no URLs", id: "default.validUrls", answer: "No links here.", verdict: false},
		{name: "not with a bad URL", id: "default.validUrls", params: `{"not": true}`,
			answer: "http://exa$mple.com", verdict: true},
		{name: "DNS resolves", id: "default.validUrls", params: `{"onlyDNS": true}`,
			answer: "Docs: https://docs.example.com/guide and http://192.0.2.1/x", verdict: true},
		{name: "DNS does not resolve", id: "default.validUrls", params: `{"onlyDNS": true}`,
			answer: "See https://docs.example.com and https://made-up-docs.invalid/page", verdict: false,
			data: map[string]any{"invalidUrls": []any{map[string]any{"url": "https://made-up-docs.invalid/page", "reason": "host does not resolve"}}}},

		{name: "labelled fence", id: "default.containsCode", params: `{"format": "Python"}`,
			answer: "Use this:\n```python\ndef add(a, b):\n    return a + b\n```\n", verdict: true,
			data: map[string]any{"detectedBy": "fence", "foundFormats": []any{"Python"}}},
		{name: "alias label", id: "default.containsCode", params: `{"format": "TypeScript"}`,
			answer: "```ts\nconst x: number = 1;\n```", verdict: true},
		{name: "other language", id: "default.containsCode", params: `{"format": "SQL"}`,
			answer: "```python\nprint('hi')\n```", verdict: false},
		{name: "unlabelled fence by heuristics", id: "default.containsCode", params: `{"format": "SQL"}`,
			answer: "Query:\n```\nSELECT id, name FROM users WHERE id = 5;\n```", verdict: true,
			data: map[string]any{"detectedBy": "heuristics (unlabelled fence)"}},
		{name: "code in prose", id: "default.containsCode", params: `{"format": "SQL"}`,
			answer: "Run SELECT id, name FROM users WHERE active = 1 ORDER BY name to list them.", verdict: true,
			data: map[string]any{"detectedBy": "heuristics (text)"}},
		{name: "plain prose", id: "default.containsCode", params: `{"format": "SQL"}`,
			answer: "Please select the item you want from the menu.", verdict: false},
		{name: "not, no code", id: "default.containsCode", params: `{"format": "go", "not": true}`,
			answer: "No code in this answer.", verdict: true},
	})
}

func TestRequestChecks(t *testing.T) {
	tools := `{"model":"gpt-4o","messages":[{"role":"user","content":"What's the weather in Paris?"}],` +
		`"tools":[{"type":"function","function":{"name":"get_weather","parameters":{"type":"object","properties":{"city":{"type":"string"}}}}},` +
		`{"type":"web_search"}],"tool_choice":"auto","temperature":0.7,"response_format":{"type":"json_object"}}`
	anthropicTools := `{"model":"claude-sonnet-4-5","max_tokens":1024,"messages":[{"role":"user","content":"Search the news"}],` +
		`"tools":[{"name":"delete_file","description":"Deletes","input_schema":{"type":"object"}},{"type":"web_search_20250305","name":"web_search"}]}`
	embed := func(r *core.Request) { r.Endpoint = core.EndpointEmbed }
	stream := func(r *core.Request) { r.Stream = true }
	runCases(t, []checkCase{
		// modelWhitelist
		{name: "allowed", id: "default.modelWhitelist", params: `{"models": ["gpt-4o-mini", "gpt-4o"]}`, user: "hi", verdict: true},
		{name: "not allowed", id: "default.modelWhitelist", params: `{"models": ["gpt-4o"]}`, user: "hi", verdict: false,
			data: map[string]any{"requestedModel": "gpt-4o-mini", "inList": false}},
		{name: "blocklist with not", id: "default.modelWhitelist", params: `{"models": ["gpt-4o"], "not": true}`, user: "hi", verdict: true},
		{name: "no model", id: "default.modelWhitelist", params: `{"models": ["gpt-4o"]}`,
			body: `{"messages":[{"role":"user","content":"hi"}]}`, err: "names no model"},

		// modelRules, reference shape
		{name: "metadata rule allows", id: "default.modelRules",
			params: `{"rules": {"defaults": ["gpt-4o-mini"], "metadata": {"tier": {"pro": ["gpt-4o", "o3"]}}}}`,
			body:   chatBodyModel("gpt-4o"), mod: withMetadata("tier", "pro"), verdict: true,
			data: map[string]any{"matchedRules": []any{"tier:pro"}, "usingDefaults": false}},
		{name: "other tier gets defaults", id: "default.modelRules",
			params: `{"rules": {"defaults": ["gpt-4o-mini"], "metadata": {"tier": {"pro": ["gpt-4o"]}}}}`,
			body:   chatBodyModel("gpt-4o"), mod: withMetadata("tier", "free"), verdict: false,
			data: map[string]any{"usingDefaults": true, "models": []any{"gpt-4o-mini"}}},
		{name: "defaults allow", id: "default.modelRules",
			params: `{"rules": {"defaults": ["gpt-4o-mini"], "metadata": {"tier": {"pro": ["gpt-4o"]}}}}`,
			user:   "hi", verdict: true},
		{name: "list shape, all pairs must match", id: "default.modelRules",
			params: `{"rules": [{"metadata": {"team": "research", "env": "prod"}, "models": ["o3"]}], "defaultModels": ["gpt-4o-mini"]}`,
			body:   chatBodyModel("o3"), mod: withMetadata("team", "research"), verdict: false},
		{name: "list shape matches", id: "default.modelRules",
			params: `{"rules": [{"metadata": {"team": "research", "env": "prod"}, "models": ["o3"]}], "defaultModels": ["gpt-4o-mini"]}`,
			body:   chatBodyModel("o3"), mod: withMetadata("team", "research", "env", "prod"), verdict: true},
		{name: "nothing resolved fails closed", id: "default.modelRules",
			params: `{"rules": {"metadata": {"tier": {"pro": ["gpt-4o"]}}}}`, user: "hi", verdict: false},
		{name: "not blocks listed", id: "default.modelRules",
			params: `{"rules": {"defaults": ["gpt-4o-mini"]}, "not": true}`, user: "hi", verdict: false},

		// allowedRequestTypes
		{name: "allowed", id: "default.allowedRequestTypes", params: `{"allowedTypes": ["chatComplete", "complete"]}`, user: "hi", verdict: true},
		{name: "not allowed", id: "default.allowedRequestTypes", params: `{"allowedTypes": ["chatComplete"]}`, user: "hi", mod: embed, verdict: false,
			data: map[string]any{"requestType": "embed"}},
		{name: "blocked", id: "default.allowedRequestTypes", params: `{"blockedTypes": "embed, imageGenerate"}`, user: "hi", mod: embed, verdict: false},
		{name: "stream form blocked", id: "default.allowedRequestTypes", params: `{"blockedTypes": ["stream-chatComplete"]}`,
			user: "hi", mod: stream, verdict: false, data: map[string]any{"requestType": "stream-chatComplete"}},
		{name: "plain name allows the stream", id: "default.allowedRequestTypes", params: `{"allowedTypes": ["chatComplete"]}`,
			user: "hi", mod: stream, verdict: true},
		{name: "from metadata", id: "default.allowedRequestTypes", user: "hi",
			mod: func(r *core.Request) { embed(r); r.Metadata["supported_endpoints"] = "chatComplete,complete" }, verdict: false,
			data: map[string]any{"source": "metadata"}},
		{name: "unrestricted", id: "default.allowedRequestTypes", user: "hi", verdict: true},

		// requiredMetadataKeys, requiredMetadataKeyPairs
		{name: "all present", id: "default.requiredMetadataKeys", params: `{"metadataKeys": ["_user", "team"]}`,
			user: "hi", mod: withMetadata("_user", "u-1", "team", "search"), verdict: true},
		{name: "all, one missing", id: "default.requiredMetadataKeys", params: `{"metadataKeys": ["team", "env"], "operator": "all"}`,
			user: "hi", mod: withMetadata("team", "search"), verdict: false,
			data: map[string]any{"missingMetadataKeys": []any{"env"}, "foundMetadataKeys": []any{"team"}}},
		{name: "any", id: "default.requiredMetadataKeys", params: `{"metadataKeys": ["team", "env"], "operator": "any"}`,
			user: "hi", mod: withMetadata("team", "search"), verdict: true},
		{name: "none", id: "default.requiredMetadataKeys", params: `{"metadataKeys": ["debug"], "operator": "none"}`,
			user: "hi", mod: withMetadata("team", "search"), verdict: true},
		{name: "pairs all match", id: "default.requiredMetadataKeyPairs", params: `{"metadataPairs": {"env": "prod", "team": "search"}}`,
			user: "hi", mod: withMetadata("env", "prod", "team", "search", "_user", "u-1"), verdict: true},
		{name: "pairs, other value", id: "default.requiredMetadataKeyPairs", params: `{"metadataPairs": {"env": "prod", "team": "search"}, "operator": "all"}`,
			user: "hi", mod: withMetadata("env", "dev", "team", "search"), verdict: false,
			data: map[string]any{"matchedPairs": []any{"team"}, "mismatchedKeys": []any{"env"}, "missingKeys": []any{}}},
		{name: "pairs any", id: "default.requiredMetadataKeyPairs", params: `{"metadataPairs": {"env": "prod", "team": "search"}, "operator": "any"}`,
			user: "hi", mod: withMetadata("env", "dev", "team", "search"), verdict: true},
		{name: "pairs none", id: "default.requiredMetadataKeyPairs", params: `{"metadataPairs": {"env": "prod"}, "operator": "none"}`,
			user: "hi", mod: withMetadata("env", "prod"), verdict: false},
		{name: "pairs without metadata", id: "default.requiredMetadataKeyPairs", params: `{"metadataPairs": {"env": "prod"}}`,
			user: "hi", verdict: false, data: map[string]any{"missingKeys": []any{"env"}}},

		// requestParamsCheck
		{name: "blocked tool type", id: "default.requestParamsCheck", params: `{"tools": {"blockedTypes": ["web_search"]}}`,
			body: tools, verdict: false,
			data: map[string]any{"violations": []any{map[string]any{"field": "tools[1]", "rule": "tools.blockedTypes", "value": "web_search"}}}},
		{name: "allowed function", id: "default.requestParamsCheck", params: `{"tools": {"allowedFunctionNames": ["get_weather"], "allowedTypes": ["function", "web_search"]}}`,
			body: tools, verdict: true},
		{name: "function not allowed", id: "default.requestParamsCheck", params: `{"tools": {"allowedFunctionNames": ["get_time"]}}`,
			body: tools, verdict: false},
		{name: "anthropic tools", id: "default.requestParamsCheck",
			params: `{"tools": {"blockedTypes": ["web_search"], "blockedFunctionNames": ["delete_file"]}}`, body: anthropicTools, verdict: false,
			data: map[string]any{"violations": []any{
				map[string]any{"field": "tools[0]", "rule": "tools.blockedFunctionNames", "value": "delete_file"},
				map[string]any{"field": "tools[1]", "rule": "tools.blockedTypes", "value": "web_search_20250305"}}}},
		{name: "blocked key", id: "default.requestParamsCheck", params: `{"params": {"blockedKeys": ["logit_bias", "tool_choice"]}}`,
			body: tools, verdict: false},
		{name: "allowed keys", id: "default.requestParamsCheck",
			params: `{"params": {"allowedKeys": ["model", "messages", "temperature", "max_tokens"]}}`, user: "hi", verdict: true},
		{name: "value allowed", id: "default.requestParamsCheck",
			params: `{"params": {"values": {"temperature": {"allowedValues": [0, 0.7]}, "response_format.type": {"allowedValues": ["json_object", "json_schema"]}}}}`,
			body:   tools, verdict: true},
		{name: "value not allowed", id: "default.requestParamsCheck",
			params: `{"params": {"values": {"temperature": {"allowedValues": [0, 0.2]}}}}`, body: tools, verdict: false,
			data: map[string]any{"violations": []any{map[string]any{"field": "temperature", "rule": "params.values.temperature.allowedValues", "value": "0.7"}}}},
		{name: "value blocked", id: "default.requestParamsCheck",
			params: `{"params": {"values": {"response_format.type": {"blockedValues": ["json_object"]}}}}`, body: tools, verdict: false},
	})
}

func chatBodyModel(model string) string {
	return `{"model":` + q(model) + `,"messages":[{"role":"user","content":"Summarise this quarter's report."}]}`
}

func TestTransforms(t *testing.T) {
	parts := `{"model":"gpt-4o","messages":[{"role":"user","content":[{"type":"text","text":"Email me at ada@example.com"},` +
		`{"type":"image_url","image_url":{"url":"https://example.com/a.png"}}]}]}`
	completion := `{"model":"gpt-3.5-turbo-instruct","prompt":"Write a haiku about autumn.","max_tokens":64}`
	anthropic := `{"model":"claude-sonnet-4-5","max_tokens":512,"system":"Be brief.","messages":[{"role":"user","content":"Hello"}]}`
	anthropicNoSystem := `{"model":"claude-sonnet-4-5","max_tokens":512,"messages":[{"role":"user","content":"Hello"}]}`
	messagesEndpoint := func(r *core.Request) { r.Endpoint = core.EndpointMessages }
	runCases(t, []checkCase{
		// regexReplace
		{name: "request rules", id: "default.regexReplace",
			params: `{"rules": [{"pattern": "\\b\\d{3}-\\d{3}-\\d{4}\\b", "replacement": "[PHONE]"}, {"rule": "[\\w.]+@[\\w.]+"}]}`,
			user:   "Call me at 555-123-4567 or mail ada@example.com", verdict: true,
			data: map[string]any{"replacements": 2.0},
			want: chatBody("Call me at [PHONE] or mail [REDACTED]")},
		{name: "answer single rule", id: "default.regexReplace", params: `{"rule": "hunter\\d", "redactText": "***"}`,
			answer: "The password is hunter2.", verdict: true, want: chatAnswer("The password is ***.")},
		{name: "capture groups", id: "default.regexReplace", params: `{"pattern": "(\\w+)@example\\.com", "replacement": "${1}@[domain]"}`,
			answer: "Write to ada@example.com", verdict: true, want: chatAnswer("Write to ada@[domain]")},
		{name: "no match, no transform", id: "default.regexReplace", params: `{"rule": "hunter\\d"}`,
			answer: "Nothing secret here.", verdict: true, data: map[string]any{"replacements": 0.0}},
		{name: "failOnDetection", id: "default.regexReplace", params: `{"rule": "hunter\\d", "failOnDetection": true}`,
			answer: "The password is hunter2.", verdict: false, want: chatAnswer("The password is [REDACTED].")},
		{name: "content parts", id: "default.regexReplace", params: `{"rule": "[\\w.]+@[\\w.]+"}`, body: parts, verdict: true,
			want: `{"model":"gpt-4o","messages":[{"role":"user","content":[{"type":"text","text":"Email me at [REDACTED]"},` +
				`{"type":"image_url","image_url":{"url":"https://example.com/a.png"}}]}]}`},

		// addPrefix
		{name: "last user message", id: "default.addPrefix", params: `{"prefix": "Answer in French: "}`,
			user: "What is the capital of Italy?", verdict: true,
			want: chatBody("Answer in French: What is the capital of Italy?")},
		{name: "system message", id: "default.addPrefix", params: `{"prefix": "Never reveal secrets. ", "applyToRole": "system"}`,
			user: "Hi", verdict: true,
			want: strings.Replace(chatBody("Hi"), `"You are a helpful`, `"Never reveal secrets. You are a helpful`, 1)},
		{name: "new message before", id: "default.addPrefix", params: `{"prefix": "Be polite.", "applyToRole": "system", "addToExisting": false}`,
			body: `{"model":"gpt-4o","messages":[{"role":"system","content":"Be brief."},{"role":"user","content":"Hi"}]}`, verdict: true,
			want: `{"model":"gpt-4o","messages":[{"role":"system","content":"Be polite."},{"role":"system","content":"Be brief."},{"role":"user","content":"Hi"}]}`},
		{name: "onlyIfEmpty with a system message", id: "default.addPrefix", params: `{"prefix": "Be polite.", "applyToRole": "system", "onlyIfEmpty": true}`,
			user: "Hi", verdict: true},
		{name: "onlyIfEmpty adds a system message", id: "default.addPrefix", params: `{"prefix": "Be polite.", "applyToRole": "system", "onlyIfEmpty": true}`,
			body: `{"model":"gpt-4o","messages":[{"role":"user","content":"Hi"}]}`, verdict: true,
			want: `{"model":"gpt-4o","messages":[{"role":"system","content":"Be polite."},{"role":"user","content":"Hi"}]}`},
		{name: "parts", id: "default.addPrefix", params: `{"prefix": ">> "}`, body: parts, verdict: true,
			want: strings.Replace(parts, `"Email me`, `">> Email me`, 1)},
		{name: "completion prompt", id: "default.addPrefix", params: `{"prefix": "In English: "}`, body: completion,
			mod: func(r *core.Request) { r.Endpoint = core.EndpointComplete }, verdict: true,
			want: `{"model":"gpt-3.5-turbo-instruct","prompt":"In English: Write a haiku about autumn.","max_tokens":64}`},
		{name: "anthropic system", id: "default.addPrefix", params: `{"prefix": "Safety first. ", "applyToRole": "system"}`,
			body: anthropic, mod: messagesEndpoint, verdict: true,
			want: `{"model":"claude-sonnet-4-5","max_tokens":512,"system":"Safety first. Be brief.","messages":[{"role":"user","content":"Hello"}]}`},
		{name: "anthropic without system", id: "default.addPrefix", params: `{"prefix": "Safety first.", "applyToRole": "system"}`,
			body: anthropicNoSystem, mod: messagesEndpoint, verdict: true,
			want: `{"model":"claude-sonnet-4-5","max_tokens":512,"system":"Safety first.","messages":[{"role":"user","content":"Hello"}]}`},
		{name: "answer", id: "default.addPrefix", params: `{"prefix": "[AI] "}`, answer: "Rome.", verdict: true,
			want: chatAnswer("[AI] Rome.")},
	})
}

// TestRunDoesNotModifyInput checks that transforms work on copies.
func TestRunDoesNotModifyInput(t *testing.T) {
	body := chatBody("Call 555-123-4567")
	req := newRequest(body)
	in := before(req, jparams(t, `{"rule": "\\d{3}-\\d{3}-\\d{4}"}`))
	snapshot := in.RequestJSON()
	before := hooks.RequestText(snapshot)
	for _, id := range []string{"default.regexReplace", "default.addPrefix"} {
		p := in.Parameters
		if id == "default.addPrefix" {
			p = jparams(t, `{"prefix": "x"}`)
		}
		if _, err := lookup(t, id).Run(context.Background(), &hooks.CheckInput{Stage: hooks.BeforeRequest, Request: req, Parameters: p}); err != nil {
			t.Fatal(err)
		}
	}
	if string(req.Body) != body || hooks.RequestText(snapshot) != before {
		t.Fatal("a transform modified its input")
	}
}

func TestRegistered(t *testing.T) {
	want := []string{"default.addPrefix", "default.allowedRequestTypes", "default.alllowercase", "default.alluppercase",
		"default.characterCount", "default.containsCode", "default.contains", "default.endsWith", "default.inlineImageUrls",
		"default.jsonKeys", "default.jsonSchema", "default.jwt", "default.log", "default.modelRules", "default.modelWhitelist",
		"default.notNull", "default.regexMatch", "default.regexReplace", "default.requestParamsCheck",
		"default.requiredMetadataKeyPairs", "default.requiredMetadataKeys", "default.sentenceCount", "default.validUrls",
		"default.webhook", "default.wordCount"}
	if got := IDs(); len(got) != len(want) {
		t.Fatalf("IDs() = %v (%d), want %d", got, len(got), len(want))
	}
	for _, id := range want {
		c := lookup(t, id)
		if _, ok := c.(hooks.ParamsValidator); !ok {
			t.Errorf("%s does not validate its parameters", id)
		}
	}
}

func TestRequiredLiteral(t *testing.T) {
	for pattern, want := range map[string]string{
		`(?i)\bSELECT\s+(\*|[\w.]+)\s+FROM\s+\w+`:  "select",
		`System\.out\.print`:                       "System.out.print",
		`(?m)^\s*(from [\w.]+ )?import [\w.]+\s*$`: "import ",
		`\b(const|let|var)\s+\w+\s*=`:              "=",
		`(<\?php)+`:                                "<?php",
	} {
		if got := newHint(pattern).lit; got != want {
			t.Errorf("%s: literal %q, want %q", pattern, got, want)
		}
	}
}

// TestReplaceMatchesStdlib checks the one-pass replacement against
// regexp.ReplaceAllString, empty matches included.
func TestReplaceMatchesStdlib(t *testing.T) {
	for _, c := range []struct{ pattern, repl, text string }{
		{`a*`, "-", "baaac"},
		{`(\w+)@(\w+)\.com`, "${2}:$1", "x ada@example.com, bob@test.com y"},
		{`x*`, "[$0]", "xxyxx"},
		{`\b`, "|", "two words"},
	} {
		res, err := runCheck(t, "default.regexReplace", after(newRequest(chatBody("hi")), newResponse(chatAnswer(c.text)),
			map[string]any{"rule": c.pattern, "replacement": c.repl}))
		if err != nil {
			t.Fatal(err)
		}
		want := regexp.MustCompile(c.pattern).ReplaceAllString(c.text, c.repl)
		sameJSON(t, res.Transformed, chatAnswer(want))
	}
}

// TestCountData checks the data of the count checks: the values, their
// types and the explanation's wording.
func TestCountData(t *testing.T) {
	req := newRequest(chatBody("one two three"))
	for _, c := range []struct {
		id, params string
		want       map[string]any
	}{
		{"default.wordCount", `{"maxWords": 1000}`, map[string]any{"count": int64(3), "minWords": int64(0), "maxWords": int64(1000), "not": false,
			"explanation": "The text has 3 words, within the range 0 to 1000."}},
		{"default.wordCount", `{"minWords": 5, "maxWords": 6, "not": true}`, map[string]any{"count": int64(3), "minWords": int64(5), "maxWords": int64(6), "not": true,
			"explanation": "The text has 3 words, outside the range 5 to 6. With not, the count must be outside the range."}},
		{"default.characterCount", `{"minCharacters": 2}`, map[string]any{"count": int64(13), "minCharacters": int64(2), "maxCharacters": int64(9999999), "not": false,
			"explanation": "The text has 13 characters, within the range 2 to 9999999."}},
	} {
		r, err := runCheck(t, c.id, before(req, jparams(t, c.params)))
		if err != nil {
			t.Fatal(err)
		}
		got, _ := r.Data.(map[string]any)
		if len(got) != len(c.want) {
			t.Errorf("%s %s: data %#v, want %#v", c.id, c.params, got, c.want)
		}
		for k, v := range c.want {
			if got[k] != v {
				t.Errorf("%s %s: %s = %#v (%T), want %#v (%T)", c.id, c.params, k, got[k], got[k], v, v)
			}
		}
	}
}

// TestWaitsOnIO: exactly the checks that call out are run concurrently
// by the hook runner; the others run inline.
func TestWaitsOnIO(t *testing.T) {
	callOut := map[string]bool{"default.inlineImageUrls": true, "default.jwt": true, "default.webhook": true,
		"default.log": true, "default.validUrls": true}
	for _, id := range IDs() {
		w, ok := checks[id].(hooks.IOWaiter)
		if !ok {
			t.Fatalf("%s does not implement hooks.IOWaiter", id)
		}
		if w.WaitsOnIO() != callOut[id] {
			t.Errorf("%s: WaitsOnIO %v, want %v", id, w.WaitsOnIO(), callOut[id])
		}
	}
}
