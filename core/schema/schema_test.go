package schema

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"reflect"
	"strings"
	"testing"

	"github.com/llm-gateway/gateway/core"
)

// tc is one validation case: ok, or a 400 whose Param is param and whose
// Message contains frag.
type tc struct {
	name  string
	body  string
	ok    bool
	param string
	frag  string
}

func pass(name, body string) tc { return tc{name: name, body: body, ok: true} }

func fail(name, body, param, frag string) tc {
	return tc{name: name, body: body, param: param, frag: frag}
}

func runCases(t *testing.T, validate func([]byte) (Info, *core.Error), cases []tc) {
	t.Helper()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := validate([]byte(c.body))
			if c.ok {
				if err != nil {
					t.Fatalf("want ok, got %q (param %q)\nbody: %s", err.Message, err.Param, c.body)
				}
				return
			}
			if err == nil {
				t.Fatalf("want error at %q, got ok\nbody: %s", c.param, c.body)
			}
			if err.Status != http.StatusBadRequest || err.Type != core.TypeInvalidRequest {
				t.Errorf("status/type = %d/%s, want 400/%s", err.Status, err.Type, core.TypeInvalidRequest)
			}
			if err.Param != c.param {
				t.Errorf("param = %q, want %q (message %q)", err.Param, c.param, err.Message)
			}
			if !strings.Contains(err.Message, c.frag) {
				t.Errorf("message %q does not contain %q", err.Message, c.frag)
			}
		})
	}
}

// chat builds a valid chat body plus extra members.
func chat(extra string) string {
	b := `{"model":"gpt-4o","messages":[{"role":"user","content":"hi"}]`
	if extra != "" {
		b += "," + extra
	}
	return b + "}"
}

// msgs builds a chat body with the given messages.
func msgs(m string) string { return `{"model":"gpt-4o","messages":[` + m + `]}` }

const fnTool = `{"type":"function","function":{"name":"get_weather","parameters":{"type":"object"}}}`

func repeat(el string, n int) string {
	parts := make([]string, n)
	for i := range parts {
		parts[i] = el
	}
	return "[" + strings.Join(parts, ",") + "]"
}

func chatStrict(b []byte) (Info, *core.Error) {
	return ValidateChatCompletion(b, ChatOptions{StrictCompliance: true})
}

func chatLax(b []byte) (Info, *core.Error) {
	return ValidateChatCompletion(b, ChatOptions{StrictCompliance: false})
}

// modelRequired is validate for a request whose body must name a model.
func modelRequired(validate func([]byte, ModelOptional) (Info, *core.Error)) func([]byte) (Info, *core.Error) {
	return func(b []byte) (Info, *core.Error) { return validate(b, nil) }
}

// TestModelOptional: a body may leave model out when ModelOptional says so
// (every target picks its model: an Azure OpenAI deployment), and only
// then; it is asked only for a body without model, and a model that is
// given is checked as ever.
func TestModelOptional(t *testing.T) {
	validators := []struct {
		name, body string // body: valid but for its model
		validate   func([]byte, ModelOptional) (Info, *core.Error)
	}{
		{"chat", `{"messages":[{"role":"user","content":"hi"}]`, func(b []byte, o ModelOptional) (Info, *core.Error) {
			return ValidateChatCompletion(b, ChatOptions{StrictCompliance: true, ModelOptional: o})
		}},
		{"completions", `{"prompt":"hi"`, ValidateCompletion},
		{"embeddings", `{"input":"hi"`, ValidateEmbedding},
		{"messages", `{"max_tokens":8,"messages":[{"role":"user","content":"hi"}]`, ValidateMessages},
	}
	yes := func() bool { return true }
	no := func() bool { return false }
	for _, v := range validators {
		for _, c := range []struct {
			name, model string // model: members to add, "" for none
			optional    ModelOptional
			param, frag string // "" when it passes
			asked       bool
		}{
			{name: "no model, optional", optional: yes, asked: true},
			{name: "no model, not optional", optional: no, param: "model", frag: "model is required", asked: true},
			{name: "no model, nil", param: "model", frag: "model is required"},
			{name: "a model", model: `"model":"gpt-4o"`, optional: yes},
			{name: "an empty model", model: `"model":""`, optional: yes, param: "model", frag: "must not be empty"},
			{name: "a null model", model: `"model":null`, optional: yes, param: "model", frag: "must be a string"},
		} {
			t.Run(v.name+"/"+c.name, func(t *testing.T) {
				body := v.body
				if c.model != "" {
					body += "," + c.model
				}
				asked := false
				optional := c.optional
				if optional != nil {
					optional = func() bool { asked = true; return c.optional() }
				}
				info, err := v.validate([]byte(body+"}"), optional)
				if asked != c.asked {
					t.Errorf("asked = %v, want %v", asked, c.asked)
				}
				if c.param == "" {
					if err != nil {
						t.Fatalf("want ok, got %q", err.Message)
					}
					if want := strings.TrimSuffix(strings.TrimPrefix(c.model, `"model":"`), `"`); info.Model != want {
						t.Errorf("model %q, want %q", info.Model, want)
					}
					return
				}
				if err == nil || err.Status != http.StatusBadRequest || err.Param != c.param || !strings.Contains(err.Message, c.frag) {
					t.Fatalf("got %v, want a 400 naming %s with %q", err, c.param, c.frag)
				}
			})
		}
	}
}

func TestChatCompletionMessages(t *testing.T) {
	runCases(t, chatStrict, []tc{
		pass("minimal", chat("")),
		fail("messages missing", `{"model":"m"}`, "messages", "messages is required"),
		fail("messages not array", `{"model":"m","messages":{}}`, "messages", "messages must be an array of messages, got object"),
		fail("messages null", `{"model":"m","messages":null}`, "messages", "got null"),
		fail("messages empty", `{"model":"m","messages":[]}`, "messages", "at least 1 message"),
		fail("message not object", msgs(`"hi"`), "messages[0]", "messages[0] must be an object, got string"),
		fail("role missing", msgs(`{"content":"x"}`), "messages[0].role", "messages[0].role is required"),
		fail("role unknown", msgs(`{"role":"user","content":"a"},{"role":"user","content":"b"},{"role":"robot","content":"x"}`),
			"messages[2].role", `messages[2].role must be one of system, developer, user, assistant, tool, function, got "robot"`),
		fail("role not string", msgs(`{"role":1,"content":"x"}`), "messages[0].role", "got number"),
		pass("all roles", msgs(`{"role":"system","content":"s"},{"role":"developer","content":"d"},{"role":"user","content":"u"},`+
			`{"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"f","arguments":"{}"}}]},`+
			`{"role":"tool","tool_call_id":"c1","content":"r"},{"role":"function","name":"f","content":"r"}`)),
		// user / system / developer content
		fail("user content missing", msgs(`{"role":"user"}`), "messages[0].content", "messages[0].content is required for role user"),
		fail("system content missing", msgs(`{"role":"system"}`), "messages[0].content", "required for role system"),
		fail("developer content missing", msgs(`{"role":"developer"}`), "messages[0].content", "required for role developer"),
		fail("user content null", msgs(`{"role":"user","content":null}`), "messages[0].content", "must be a string or an array of content parts, got null"),
		fail("user content number", msgs(`{"role":"user","content":5}`), "messages[0].content", "got number"),
		fail("user content empty array", msgs(`{"role":"user","content":[]}`), "messages[0].content", "must not be an empty array"),
		pass("user content empty string", msgs(`{"role":"user","content":""}`)),
		pass("user content parts", msgs(`{"role":"user","content":[{"type":"text","text":"a"},{"type":"image_url","image_url":{"url":"https://x"}}]}`)),
		fail("part not object", msgs(`{"role":"user","content":[{"type":"text","text":"a"},"b"]}`), "messages[0].content[1]", "must be an object, got string"),
		fail("part type missing", msgs(`{"role":"user","content":[{"text":"a"}]}`), "messages[0].content[0].type", "is required"),
		fail("part type not string", msgs(`{"role":"user","content":[{"type":3}]}`), "messages[0].content[0].type", "must be a string, got number"),
		// assistant
		pass("assistant content", msgs(`{"role":"assistant","content":"a"}`)),
		pass("assistant function_call", msgs(`{"role":"assistant","function_call":{"name":"f","arguments":"{}"}}`)),
		pass("assistant null tool_calls with content", msgs(`{"role":"assistant","content":"a","tool_calls":null}`)),
		fail("assistant nothing", msgs(`{"role":"assistant","content":null}`), "messages[0].content", "required for role assistant unless tool_calls or function_call"),
		fail("assistant empty tool_calls", msgs(`{"role":"assistant","tool_calls":[]}`), "messages[0].content", "required for role assistant"),
		fail("assistant tool_calls not array", msgs(`{"role":"assistant","content":"a","tool_calls":{}}`), "messages[0].tool_calls", "must be an array or null, got object"),
		fail("assistant tool_call not object", msgs(`{"role":"assistant","tool_calls":[1]}`), "messages[0].tool_calls[0]", "must be an object"),
		// tool / function
		fail("tool without tool_call_id", msgs(`{"role":"tool","content":"r"}`), "messages[0].tool_call_id", "required for role tool"),
		fail("tool_call_id not string", msgs(`{"role":"tool","tool_call_id":7,"content":"r"}`), "messages[0].tool_call_id", "must be a string, got number"),
		fail("function without name", msgs(`{"role":"function","content":"r"}`), "messages[0].name", "required for role function"),
		fail("function name not string", msgs(`{"role":"function","name":true,"content":"r"}`), "messages[0].name", "must be a string, got boolean"),
		fail("name not string", msgs(`{"role":"user","name":5,"content":"x"}`), "messages[0].name", "must be a string or null"),
	})
}

func TestChatCompletionFields(t *testing.T) {
	many := func(n int) string { return repeat(fnTool, n) }
	runCases(t, chatStrict, []tc{
		// model
		fail("model missing", `{"messages":[{"role":"user","content":"x"}]}`, "model", "model is required"),
		fail("model empty", `{"model":"","messages":[{"role":"user","content":"x"}]}`, "model", "model must not be empty"),
		fail("model number", `{"model":4,"messages":[{"role":"user","content":"x"}]}`, "model", "model must be a string, got number"),
		// penalties
		pass("frequency_penalty -2", chat(`"frequency_penalty":-2`)),
		pass("frequency_penalty 2", chat(`"frequency_penalty":2`)),
		pass("frequency_penalty null", chat(`"frequency_penalty":null`)),
		fail("frequency_penalty -2.01", chat(`"frequency_penalty":-2.01`), "frequency_penalty", "frequency_penalty must be between -2 and 2, got -2.01"),
		fail("frequency_penalty 2.5", chat(`"frequency_penalty":2.5`), "frequency_penalty", "got 2.5"),
		fail("frequency_penalty string", chat(`"frequency_penalty":"1"`), "frequency_penalty", "must be a number or null, got string"),
		pass("presence_penalty -2", chat(`"presence_penalty":-2.0`)),
		pass("presence_penalty 2", chat(`"presence_penalty":2`)),
		fail("presence_penalty -3", chat(`"presence_penalty":-3`), "presence_penalty", "presence_penalty must be between -2 and 2, got -3"),
		fail("presence_penalty 2.0001", chat(`"presence_penalty":2.0001`), "presence_penalty", "got 2.0001"),
		fail("presence_penalty huge", chat(`"presence_penalty":1e400`), "presence_penalty", "got 1e400"),
		// logit_bias
		pass("logit_bias edges", chat(`"logit_bias":{"50256":-100,"1":100,"0":0.5}`)),
		pass("logit_bias null", chat(`"logit_bias":null`)),
		fail("logit_bias over", chat(`"logit_bias":{"50256":100.5}`), "logit_bias.50256", "logit_bias.50256 must be between -100 and 100, got 100.5"),
		fail("logit_bias under", chat(`"logit_bias":{"50256":-101}`), "logit_bias.50256", "got -101"),
		fail("logit_bias key", chat(`"logit_bias":{"abc":1}`), "logit_bias.abc", `logit_bias keys must be integer token ids, got "abc"`),
		fail("logit_bias negative key", chat(`"logit_bias":{"-1":1}`), "logit_bias.-1", "integer token ids"),
		fail("logit_bias odd key", chat(`"logit_bias":{"a b":1}`), `logit_bias["a b"]`, "integer token ids"),
		fail("logit_bias value string", chat(`"logit_bias":{"1":"5"}`), "logit_bias.1", "logit_bias.1 must be a number, got string"),
		fail("logit_bias array", chat(`"logit_bias":[1]`), "logit_bias", "logit_bias must be an object or null, got array"),
		// logprobs / top_logprobs
		pass("logprobs true", chat(`"logprobs":true`)),
		pass("logprobs null", chat(`"logprobs":null`)),
		fail("logprobs string", chat(`"logprobs":"yes"`), "logprobs", "logprobs must be a boolean or null, got string"),
		pass("top_logprobs 0", chat(`"logprobs":true,"top_logprobs":0`)),
		pass("top_logprobs 20", chat(`"logprobs":true,"top_logprobs":20`)),
		pass("top_logprobs null", chat(`"top_logprobs":null`)),
		fail("top_logprobs 21", chat(`"logprobs":true,"top_logprobs":21`), "top_logprobs", "top_logprobs must be between 0 and 20, got 21"),
		fail("top_logprobs -1", chat(`"logprobs":true,"top_logprobs":-1`), "top_logprobs", "got -1"),
		fail("top_logprobs fraction", chat(`"logprobs":true,"top_logprobs":1.5`), "top_logprobs", "must be an integer or null, got 1.5"),
		fail("top_logprobs without logprobs", chat(`"top_logprobs":5`), "top_logprobs", "top_logprobs requires logprobs to be true"),
		fail("top_logprobs logprobs false", chat(`"logprobs":false,"top_logprobs":5`), "top_logprobs", "requires logprobs"),
		// max tokens
		pass("max_tokens 1", chat(`"max_tokens":1`)),
		pass("max_tokens null", chat(`"max_tokens":null`)),
		fail("max_tokens 0", chat(`"max_tokens":0`), "max_tokens", "max_tokens must be at least 1, got 0"),
		fail("max_tokens fraction", chat(`"max_tokens":10.5`), "max_tokens", "must be an integer or null, got 10.5"),
		fail("max_tokens string", chat(`"max_tokens":"10"`), "max_tokens", "must be an integer or null, got string"),
		pass("max_completion_tokens 1", chat(`"max_completion_tokens":1`)),
		fail("max_completion_tokens 0", chat(`"max_completion_tokens":0`), "max_completion_tokens", "at least 1, got 0"),
		fail("max_completion_tokens -5", chat(`"max_completion_tokens":-5`), "max_completion_tokens", "got -5"),
		// n
		pass("n 1", chat(`"n":1`)),
		pass("n 128", chat(`"n":128`)),
		pass("n null", chat(`"n":null`)),
		pass("n 2.0 is an integer", chat(`"n":2.0`)),
		fail("n 0", chat(`"n":0`), "n", "n must be between 1 and 128, got 0"),
		fail("n 129", chat(`"n":129`), "n", "got 129"),
		fail("n string", chat(`"n":"2"`), "n", "n must be an integer or null, got string"),
		fail("n bool", chat(`"n":true`), "n", "got boolean"),
		// response_format
		pass("response_format text", chat(`"response_format":{"type":"text"}`)),
		pass("response_format json_object", chat(`"response_format":{"type":"json_object"}`)),
		pass("response_format json_schema", chat(`"response_format":{"type":"json_schema","json_schema":{"name":"out","schema":{"type":"object"},"strict":true}}`)),
		fail("response_format not object", chat(`"response_format":"json"`), "response_format", "must be an object, got string"),
		fail("response_format type missing", chat(`"response_format":{}`), "response_format.type", "is required"),
		fail("response_format type unknown", chat(`"response_format":{"type":"xml"}`), "response_format.type", `must be one of text, json_object, json_schema, got "xml"`),
		fail("json_schema missing", chat(`"response_format":{"type":"json_schema"}`), "response_format.json_schema", "is required"),
		fail("json_schema not object", chat(`"response_format":{"type":"json_schema","json_schema":[]}`), "response_format.json_schema", "must be an object"),
		fail("json_schema name missing", chat(`"response_format":{"type":"json_schema","json_schema":{}}`), "response_format.json_schema.name", "is required"),
		fail("json_schema name number", chat(`"response_format":{"type":"json_schema","json_schema":{"name":1}}`), "response_format.json_schema.name", "must be a string"),
		// seed
		pass("seed 9e18", chat(`"seed":9e18`)),
		pass("seed max", chat(`"seed":9223372036854775807`)),
		pass("seed min", chat(`"seed":-9223372036854775808`)),
		pass("seed null", chat(`"seed":null`)),
		fail("seed max+1", chat(`"seed":9223372036854775808`), "seed", "seed must be a 64-bit integer"),
		fail("seed min-1", chat(`"seed":-9223372036854775809`), "seed", "got -9223372036854775809"),
		fail("seed 1e19", chat(`"seed":1e19`), "seed", "got 1e19"),
		fail("seed fraction", chat(`"seed":1.5`), "seed", "seed must be an integer or null, got 1.5"),
		fail("seed string", chat(`"seed":"1"`), "seed", "got string"),
		// stop
		pass("stop null", chat(`"stop":null`)),
		pass("stop string", chat(`"stop":"\n"`)),
		pass("stop 4", chat(`"stop":["a","b","c","d"]`)),
		fail("stop 5", chat(`"stop":["a","b","c","d","e"]`), "stop", "stop must contain at most 4 sequences, got 5"),
		fail("stop element", chat(`"stop":["a",1]`), "stop[1]", "stop[1] must be a string, got number"),
		fail("stop number", chat(`"stop":1`), "stop", "must be a string, an array of strings or null, got number"),
		// stream / stream_options
		pass("stream true", chat(`"stream":true`)),
		pass("stream null", chat(`"stream":null`)),
		fail("stream string", chat(`"stream":"true"`), "stream", "stream must be a boolean or null, got string"),
		pass("stream_options with stream", chat(`"stream":true,"stream_options":{"include_usage":true}`)),
		pass("stream_options null", chat(`"stream_options":null`)),
		fail("stream_options without stream", chat(`"stream_options":{"include_usage":true}`), "stream_options", "stream_options is only allowed when stream is true"),
		fail("stream_options stream false", chat(`"stream":false,"stream_options":{}`), "stream_options", "only allowed when stream is true"),
		fail("stream_options not object", chat(`"stream":true,"stream_options":true`), "stream_options", "must be an object or null, got boolean"),
		fail("include_usage string", chat(`"stream":true,"stream_options":{"include_usage":"yes"}`), "stream_options.include_usage", "must be a boolean, got string"),
		// temperature / top_p
		pass("temperature 0", chat(`"temperature":0`)),
		pass("temperature 2", chat(`"temperature":2`)),
		pass("temperature null", chat(`"temperature":null`)),
		fail("temperature 3.5", chat(`"temperature":3.5`), "temperature", "temperature must be between 0 and 2, got 3.5"),
		fail("temperature 2.01", chat(`"temperature":2.01`), "temperature", "got 2.01"),
		fail("temperature -0.1", chat(`"temperature":-0.1`), "temperature", "got -0.1"),
		fail("temperature string", chat(`"temperature":"1"`), "temperature", "temperature must be a number or null, got string"),
		pass("top_p 0", chat(`"top_p":0`)),
		pass("top_p 1", chat(`"top_p":1`)),
		fail("top_p 1.01", chat(`"top_p":1.01`), "top_p", "top_p must be between 0 and 1, got 1.01"),
		fail("top_p -0.5", chat(`"top_p":-0.5`), "top_p", "got -0.5"),
		// tools
		pass("tools one", chat(`"tools":[`+fnTool+`]`)),
		pass("tools 128", chat(`"tools":`+many(128))),
		pass("tools empty", chat(`"tools":[]`)),
		fail("tools 129", chat(`"tools":`+many(129)), "tools", "tools must contain at most 128 elements, got 129"),
		fail("tools not array", chat(`"tools":{}`), "tools", "tools must be an array, got object"),
		fail("tool not object", chat(`"tools":[1]`), "tools[0]", "must be an object"),
		fail("tool type missing", chat(`"tools":[{"function":{"name":"f"}}]`), "tools[0].type", "is required"),
		fail("tool type other", chat(`"tools":[{"type":"web_search","function":{"name":"f"}}]`), "tools[0].type", `must be one of function, got "web_search"`),
		fail("tool function missing", chat(`"tools":[{"type":"function"}]`), "tools[0].function", "is required"),
		fail("tool name missing", chat(`"tools":[{"type":"function","function":{}}]`), "tools[0].function.name", "is required"),
		fail("tool name bad chars", chat(`"tools":[`+fnTool+`,{"type":"function","function":{"name":"get weather"}}]`), "tools[1].function.name",
			`tools[1].function.name must match ^[a-zA-Z0-9_-]{1,64}$, got "get weather"`),
		pass("tool name 64", chat(`"tools":[{"type":"function","function":{"name":"`+strings.Repeat("a", 64)+`"}}]`)),
		fail("tool name 65", chat(`"tools":[{"type":"function","function":{"name":"`+strings.Repeat("a", 65)+`"}}]`), "tools[0].function.name", "must match"),
		fail("tool name empty", chat(`"tools":[{"type":"function","function":{"name":""}}]`), "tools[0].function.name", "must match"),
		fail("tool parameters", chat(`"tools":[{"type":"function","function":{"name":"f","parameters":"{}"}}]`), "tools[0].function.parameters", "must be an object, got string"),
		// tool_choice
		pass("tool_choice none", chat(`"tool_choice":"none"`)),
		pass("tool_choice auto", chat(`"tool_choice":"auto"`)),
		pass("tool_choice required", chat(`"tools":[`+fnTool+`],"tool_choice":"required"`)),
		pass("tool_choice named", chat(`"tools":[`+fnTool+`],"tool_choice":{"type":"function","function":{"name":"get_weather"}}`)),
		fail("tool_choice required no tools", chat(`"tool_choice":"required"`), "tool_choice", `tool_choice "required" requires tools`),
		fail("tool_choice required empty tools", chat(`"tools":[],"tool_choice":"required"`), "tool_choice", "requires tools"),
		fail("tool_choice unknown string", chat(`"tool_choice":"maybe"`), "tool_choice", `must be one of none, auto, required, got "maybe"`),
		fail("tool_choice named no tools", chat(`"tool_choice":{"type":"function","function":{"name":"f"}}`), "tool_choice", "naming a function requires tools"),
		fail("tool_choice named unknown", chat(`"tools":[`+fnTool+`],"tool_choice":{"type":"function","function":{"name":"other"}}`),
			"tool_choice.function.name", `tool_choice.function.name must name one of the tools, got "other"`),
		fail("tool_choice object type", chat(`"tools":[`+fnTool+`],"tool_choice":{"type":"tool","function":{"name":"get_weather"}}`), "tool_choice.type", "must be one of function"),
		fail("tool_choice object no function", chat(`"tools":[`+fnTool+`],"tool_choice":{"type":"function"}`), "tool_choice.function", "is required"),
		fail("tool_choice number", chat(`"tool_choice":1`), "tool_choice", "got number"),
		// parallel_tool_calls, user
		pass("parallel_tool_calls", chat(`"parallel_tool_calls":false`)),
		fail("parallel_tool_calls string", chat(`"parallel_tool_calls":"no"`), "parallel_tool_calls", "must be a boolean, got string"),
		fail("parallel_tool_calls null", chat(`"parallel_tool_calls":null`), "parallel_tool_calls", "must be a boolean, got null"),
		pass("user", chat(`"user":"u-1"`)),
		fail("user number", chat(`"user":1`), "user", "user must be a string, got number"),
		// functions / function_call
		pass("functions 1", chat(`"functions":[{"name":"f","parameters":{}}]`)),
		pass("functions 128", chat(`"functions":`+repeat(`{"name":"f"}`, 128))),
		fail("functions empty", chat(`"functions":[]`), "functions", "functions must contain at least 1 element, got 0"),
		fail("functions 129", chat(`"functions":`+repeat(`{"name":"f"}`, 129)), "functions", "at most 128 elements, got 129"),
		fail("functions name missing", chat(`"functions":[{"parameters":{}}]`), "functions[0].name", "is required"),
		fail("functions name number", chat(`"functions":[{"name":1}]`), "functions[0].name", "must be a string, got number"),
		pass("function_call auto", chat(`"function_call":"auto"`)),
		pass("function_call none", chat(`"function_call":"none"`)),
		pass("function_call named", chat(`"functions":[{"name":"f"}],"function_call":{"name":"f"}`)),
		fail("function_call required", chat(`"function_call":"required"`), "function_call", `must be one of none, auto, got "required"`),
		fail("function_call unknown", chat(`"functions":[{"name":"f"}],"function_call":{"name":"g"}`), "function_call.name", `must name one of the functions, got "g"`),
		fail("function_call without functions", chat(`"function_call":{"name":"f"}`), "function_call", "requires functions"),
		fail("function_call name missing", chat(`"functions":[{"name":"f"}],"function_call":{}`), "function_call.name", "is required"),
		fail("function_call array", chat(`"function_call":[]`), "function_call", "got array"),
		// extensions
		pass("unknown fields allowed", chat(`"top_k":40,"metadata":{"a":"b"},"x_vendor":{"deep":[1,2,{"z":null}]}`)),
		// gateway fields
		fail("strict not bool", chat(`"strict_reference_compliance":"no"`), "strict_reference_compliance", "must be a boolean, got string"),
		fail("strict alias not bool", chat(`"strict_open_ai_compliance":1`), "strict_open_ai_compliance", "must be a boolean, got number"),
		fail("strict conflict", chat(`"strict_reference_compliance":true,"strict_open_ai_compliance":false`), "strict_open_ai_compliance", "conflicts with strict_reference_compliance"),
	})
}

func TestChatThinkingAndStrictCompliance(t *testing.T) {
	thinking := `"thinking":{"type":"enabled","budget_tokens":1024}`
	cases := []struct {
		name       string
		strict     bool
		body       string
		wantErr    string // param, "" = ok
		wantStrict bool
		wantGW     bool
	}{
		{"no thinking strict", true, chat(""), "", true, false},
		{"no thinking lax", false, chat(""), "", false, false},
		{"thinking with strict option", true, chat(thinking), "thinking", true, false},
		{"thinking with lax option", false, chat(thinking), "", false, false},
		{"body turns strict off", true, chat(thinking + `,"strict_reference_compliance":false`), "", false, true},
		{"alias turns strict off", true, chat(thinking + `,"strict_open_ai_compliance":false`), "", false, true},
		{"body turns strict on", false, chat(thinking + `,"strict_reference_compliance":true`), "thinking", true, true},
		{"alias turns strict on", false, chat(thinking + `,"strict_open_ai_compliance":true`), "thinking", true, true},
		{"both agree", true, chat(thinking + `,"strict_reference_compliance":false,"strict_open_ai_compliance":false`), "", false, true},
		{"gateway field without thinking", true, chat(`"strict_reference_compliance":true`), "", true, true},
		{"thinking disabled", false, chat(`"thinking":{"type":"disabled"}`), "", false, false},
		{"thinking disabled still needs lax", true, chat(`"thinking":{"type":"disabled"}`), "thinking", true, false},
		{"budget 1", false, chat(`"thinking":{"type":"enabled","budget_tokens":1}`), "", false, false},
		{"budget 0", false, chat(`"thinking":{"type":"enabled","budget_tokens":0}`), "thinking.budget_tokens", false, false},
		{"budget fraction", false, chat(`"thinking":{"type":"enabled","budget_tokens":10.5}`), "thinking.budget_tokens", false, false},
		{"budget missing", false, chat(`"thinking":{"type":"enabled"}`), "thinking.budget_tokens", false, false},
		{"type missing", false, chat(`"thinking":{"budget_tokens":10}`), "thinking.type", false, false},
		{"type unknown", false, chat(`"thinking":{"type":"on","budget_tokens":10}`), "thinking.type", false, false},
		{"thinking not object", false, chat(`"thinking":true`), "thinking", false, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			info, err := ValidateChatCompletion([]byte(c.body), ChatOptions{StrictCompliance: c.strict})
			switch {
			case c.wantErr == "" && err != nil:
				t.Fatalf("want ok, got %q", err.Message)
			case c.wantErr != "" && err == nil:
				t.Fatalf("want error at %q, got ok", c.wantErr)
			case err != nil && err.Param != c.wantErr:
				t.Fatalf("param = %q, want %q (%s)", err.Param, c.wantErr, err.Message)
			}
			if c.wantErr == "thinking" && !strings.Contains(err.Message, "thinking is only allowed when strict_reference_compliance is false") && !strings.Contains(err.Message, "thinking must be") {
				t.Errorf("message %q", err.Message)
			}
			if info.StrictCompliance != c.wantStrict || info.HasGatewayFields != c.wantGW {
				t.Errorf("StrictCompliance=%v HasGatewayFields=%v, want %v %v", info.StrictCompliance, info.HasGatewayFields, c.wantStrict, c.wantGW)
			}
		})
	}
}

func TestChatInfo(t *testing.T) {
	info, err := ValidateChatCompletion([]byte(chat(`"stream":true,"stream_options":{"include_usage":true},"strict_open_ai_compliance":false`)), ChatOptions{StrictCompliance: true})
	if err != nil {
		t.Fatal(err.Message)
	}
	want := Info{Model: "gpt-4o", Stream: true, IncludeUsage: true, StrictCompliance: false, HasGatewayFields: true}
	if info.Body["model"] != "gpt-4o" {
		t.Fatalf("the parsed body is not returned: %v", info.Body)
	}
	info.Body = nil
	if !sameInfo(info, want) {
		t.Fatalf("info = %+v, want %+v", info, want)
	}
	info, err = chatStrict([]byte(chat(`"stream":false`)))
	info.Body = nil
	if err != nil || !sameInfo(info, Info{Model: "gpt-4o", StrictCompliance: true}) {
		t.Fatalf("info = %+v, err = %v", info, err)
	}
}

func TestMultipleProblems(t *testing.T) {
	body := `{"messages":[{"role":"user","content":"x"},{"role":"robot"}],"temperature":3.5,"n":"2","top_p":-1}`
	_, err := chatStrict([]byte(body))
	if err == nil {
		t.Fatal("want error")
	}
	if err.Param != "messages[1].role" {
		t.Errorf("param = %q, want messages[1].role", err.Param)
	}
	want := []string{
		`messages[1].role must be one of system, developer, user, assistant, tool, function, got "robot"`,
		"model is required",
		"n must be an integer or null, got string",
		"temperature must be between 0 and 2, got 3.5",
		"top_p must be between 0 and 1, got -1",
	}
	if got := strings.Split(err.Message, "; "); !reflect.DeepEqual(got, want) {
		t.Errorf("problems:\n got %q\nwant %q", got, want)
	}
	// The same body gives the same message every time (map order is not leaked).
	lb := chat(`"logit_bias":{"z":1,"a":1,"5":500,"7":-500,"q":1}`)
	_, first := chatStrict([]byte(lb))
	for i := 0; i < 20; i++ {
		if _, again := chatStrict([]byte(lb)); again.Message != first.Message || again.Param != first.Param {
			t.Fatalf("unstable message:\n%s\n%s", first.Message, again.Message)
		}
	}
	if first.Param != "logit_bias.5" {
		t.Errorf("param = %q, want logit_bias.5", first.Param)
	}
}

func TestProblemListIsCapped(t *testing.T) {
	body := msgs(strings.TrimSuffix(strings.TrimPrefix(repeat(`{"role":"x"}`, 500), "["), "]"))
	_, err := chatStrict([]byte(body))
	if err == nil {
		t.Fatal("want error")
	}
	if n := strings.Count(err.Message, "; "); n != maxListedProblems {
		t.Errorf("%d separators, want %d", n, maxListedProblems)
	}
	if !strings.HasSuffix(err.Message, "; and 450 more problems") {
		t.Errorf("message ends %q", err.Message[len(err.Message)-40:])
	}
}

// bodyValidators are the body validators but the chat one, by name.
var bodyValidators = map[string]func([]byte) (Info, *core.Error){
	"completions": modelRequired(ValidateCompletion),
	"embeddings":  modelRequired(ValidateEmbedding),
	"responses":   ValidateResponses,
	"rerank":      ValidateRerank,
	"images":      ValidateImageGeneration,
	"messages":    modelRequired(ValidateMessages),
	"model only":  ValidateModelOnly,
}

func TestInvalidBodies(t *testing.T) {
	validators := map[string]func([]byte) (Info, *core.Error){"chat": chatStrict}
	maps.Copy(validators, bodyValidators)
	cases := []struct{ body, frag string }{
		{"", "request body is not valid JSON: the body is empty"},
		{"  \n", "request body is not valid JSON"},
		{"{", "request body is not valid JSON: unexpected end of JSON input"},
		{`{"model":}`, "request body is not valid JSON: invalid character '}'"},
		{`{"a":1} {"b":2}`, "request body is not valid JSON: unexpected data after the top-level value"},
		{`{"a":1} x`, "request body is not valid JSON"},
		{`[]`, "request body must be a JSON object, got array"},
		{`null`, "request body must be a JSON object, got null"},
		{`"str"`, "request body must be a JSON object, got string"},
		{`12`, "request body must be a JSON object, got number"},
	}
	for name, validate := range validators {
		for _, c := range cases {
			_, err := validate([]byte(c.body))
			if err == nil {
				t.Errorf("%s %q: want error", name, c.body)
				continue
			}
			if err.Status != 400 || err.Type != core.TypeInvalidRequest || !strings.Contains(err.Message, c.frag) {
				t.Errorf("%s %q: got %d %s %q, want fragment %q", name, c.body, err.Status, err.Type, err.Message, c.frag)
			}
		}
	}
}

// TestNotUTF8 checks that a body with text that is not UTF-8, which JSON
// requires (RFC 8259 §8.1), is refused with a 400 naming the string rather
// than decoded with U+FFFD in its place and forwarded as sent; escaped lone
// surrogates are valid JSON and pass.
func TestNotUTF8(t *testing.T) {
	deep := strings.Repeat("[", maxFastDepth+1) + `"` + "\xff" + `"` + strings.Repeat("]", maxFastDepth+1)
	runCases(t, chatStrict, []tc{
		fail("content 0xff 0xfe", msgs(`{"role":"user","content":"hi `+"\xff\xfe"+`"}`), "messages[0].content",
			"request body is not valid JSON: messages[0].content is not valid UTF-8 (byte 0xff at byte offset 59)"),
		fail("lone continuation byte", msgs(`{"role":"user","content":"caf`+"\x80"+`"}`), "messages[0].content", "(byte 0x80 at byte offset 59)"),
		fail("truncated sequence", msgs(`{"role":"user","content":"euro `+"\xe2\x82"+`"}`), "messages[0].content", "(byte 0xe2 at byte offset 61)"),
		fail("overlong encoding", msgs(`{"role":"user","content":"`+"\xc0\xaf"+`"}`), "messages[0].content", "byte 0xc0"),
		fail("encoded surrogate", msgs(`{"role":"user","content":"`+"\xed\xa0\x80"+`"}`), "messages[0].content", "byte 0xed"),
		fail("beyond U+10FFFF", msgs(`{"role":"user","content":"`+"\xf4\x90\x80\x80"+`"}`), "messages[0].content", "byte 0xf4"),
		fail("with escapes", msgs(`{"role":"user","content":"a\n\"b\" `+"\xff"+`"}`), "messages[0].content", "messages[0].content is not valid UTF-8 (byte 0xff"),
		fail("after valid text", msgs(`{"role":"user","content":"é ✓ 😀 `+"\xff"+`"}`), "messages[0].content", "byte 0xff"),
		fail("content part", msgs(`{"role":"user","content":[{"type":"text","text":"ok"},{"type":"text","text":"`+"\xfe"+`"}]}`),
			"messages[0].content[1].text", "messages[0].content[1].text is not valid UTF-8"),
		fail("second message", msgs(`{"role":"system","content":"s"},{"role":"user","content":"`+"\xff"+`"}`), "messages[1].content", "byte 0xff"),
		fail("model", `{"model":"gpt`+"\xff"+`","messages":[{"role":"user","content":"hi"}]}`, "model", "model is not valid UTF-8"),
		fail("stop element", chat(`"stop":["ok","`+"\xff"+`"]`), "stop[1]", "stop[1] is not valid UTF-8"),
		fail("unknown field", chat(`"metadata":{"a b":[1,"`+"\xff"+`"]}`), `metadata["a b"][1]`, `metadata["a b"][1] is not valid UTF-8`),
		fail("member name", msgs(`{"role":"user","content":"x","na`+"\xff"+`me":"y"}`), "messages[0]", "a member name in messages[0] is not valid UTF-8"),
		fail("top-level member name", chat(`"`+"\xff"+`":1`), "", "request body is not valid JSON: a member name is not valid UTF-8"),
		fail("nested too deep for the fast parse", chat(`"x":`+deep), "", "request body is not valid JSON: the body is not valid UTF-8 (byte 0xff"),
		fail("before a syntax error", chat(`"x":"`+"\xff"+`",}`), "x", "x is not valid UTF-8"),
		fail("syntax error first", chat(`"x":01,"y":"`+"\xff"+`"`), "", "request body is not valid JSON: invalid character '1'"),
		pass("UTF-8 text", msgs(`{"role":"user","content":"café ✓ 日本語 😀 \u00e9\ud83d\ude00"}`)),
		pass("U+FFFD itself", msgs(`{"role":"user","content":"`+"\xef\xbf\xbd"+`"}`)),
		pass("escaped lone surrogate", msgs(`{"role":"user","content":"\ud800 and \udc00"}`)),
		pass("nested deep, UTF-8", chat(`"x":`+strings.Repeat("[", maxFastDepth+1)+`"é"`+strings.Repeat("]", maxFastDepth+1))),
	})
	// Every body validator refuses it the same way: those that parse the
	// whole body, and ValidateMessages, which reads two members.
	for name, validate := range bodyValidators {
		runCases(t, validate, []tc{
			fail(name+" value", `{"model":"m","x":"ab`+"\xff"+`"}`, "x", "request body is not valid JSON: x is not valid UTF-8 (byte 0xff at byte offset 20)"),
			fail(name+" nested", `{"model":"m","messages":[{"role":"user","content":[{"type":"text","text":"`+"\xff"+`"}]}]}`,
				"messages[0].content[0].text", "messages[0].content[0].text is not valid UTF-8"),
			fail(name+" escaped", `{"model":"m","system":"\"`+"\xff"+`\""}`, "system", "system is not valid UTF-8"),
			fail(name+" member name", `{"model":"m","`+"\x80"+`":1}`, "", "a member name is not valid UTF-8 (byte 0x80 at byte offset 14)"),
		})
	}
}

func TestCompletion(t *testing.T) {
	comp := func(extra string) string {
		b := `{"model":"gpt-3.5-turbo-instruct","prompt":"Say hi"`
		if extra != "" {
			b += "," + extra
		}
		return b + "}"
	}
	runCases(t, modelRequired(ValidateCompletion), []tc{
		pass("minimal", comp("")),
		fail("model missing", `{"prompt":"x"}`, "model", "model is required"),
		fail("prompt missing", `{"model":"m"}`, "prompt", "prompt is required"),
		pass("prompt strings", `{"model":"m","prompt":["a","b"]}`),
		pass("prompt tokens", `{"model":"m","prompt":[1,2,3]}`),
		pass("prompt token arrays", `{"model":"m","prompt":[[1,2],[3]]}`),
		fail("prompt empty array", `{"model":"m","prompt":[]}`, "prompt", "must not be an empty array"),
		fail("prompt mixed", `{"model":"m","prompt":["a",1]}`, "prompt[1]", "prompt[1] must be a string like prompt[0], got number"),
		fail("prompt bad token", `{"model":"m","prompt":[1,2.5]}`, "prompt[1]", "must be an integer, got 2.5"),
		fail("prompt negative token", `{"model":"m","prompt":[[1,-2]]}`, "prompt[0][1]", "at least 0, got -2"),
		fail("prompt object", `{"model":"m","prompt":{}}`, "prompt", "got object"),
		fail("prompt array of objects", `{"model":"m","prompt":[{}]}`, "prompt[0]", "got object"),
		pass("temperature 2", comp(`"temperature":2`)),
		fail("temperature 2.5", comp(`"temperature":2.5`), "temperature", "between 0 and 2, got 2.5"),
		fail("top_p 1.5", comp(`"top_p":1.5`), "top_p", "between 0 and 1"),
		fail("frequency_penalty -2.5", comp(`"frequency_penalty":-2.5`), "frequency_penalty", "between -2 and 2"),
		fail("presence_penalty 3", comp(`"presence_penalty":3`), "presence_penalty", "between -2 and 2"),
		pass("n 128", comp(`"n":128`)),
		fail("n 0", comp(`"n":0`), "n", "between 1 and 128, got 0"),
		fail("n 129", comp(`"n":129`), "n", "got 129"),
		pass("max_tokens 0", comp(`"max_tokens":0`)),
		fail("max_tokens -1", comp(`"max_tokens":-1`), "max_tokens", "at least 0, got -1"),
		pass("logprobs 0", comp(`"logprobs":0`)),
		pass("logprobs 5", comp(`"logprobs":5`)),
		fail("logprobs 6", comp(`"logprobs":6`), "logprobs", "logprobs must be between 0 and 5, got 6"),
		fail("logprobs bool", comp(`"logprobs":true`), "logprobs", "must be an integer or null, got boolean"),
		pass("stop 4", comp(`"stop":["a","b","c","d"]`)),
		fail("stop 5", comp(`"stop":["a","b","c","d","e"]`), "stop", "at most 4"),
		fail("stream_options without stream", comp(`"stream_options":{"include_usage":true}`), "stream_options", "only allowed when stream is true"),
		pass("best_of equal n", comp(`"n":3,"best_of":3`)),
		pass("best_of above n", comp(`"n":2,"best_of":5`)),
		fail("best_of below n", comp(`"n":3,"best_of":2`), "best_of", "best_of must be greater than or equal to n (3), got 2"),
		fail("best_of 0", comp(`"best_of":0`), "best_of", "at least 1, got 0"),
		fail("logit_bias", comp(`"logit_bias":{"1":101}`), "logit_bias.1", "between -100 and 100"),
		fail("seed fraction", comp(`"seed":0.5`), "seed", "got 0.5"),
		fail("echo string", comp(`"echo":"y"`), "echo", "must be a boolean or null"),
		fail("suffix number", comp(`"suffix":1`), "suffix", "must be a string or null"),
	})
	info, err := ValidateCompletion([]byte(comp(`"stream":true,"stream_options":{"include_usage":true}`)), nil)
	if err != nil || !sameInfo(info, Info{Model: "gpt-3.5-turbo-instruct", Stream: true, IncludeUsage: true, StrictCompliance: true}) {
		t.Fatalf("info = %+v, err = %v", info, err)
	}
}

func TestEmbedding(t *testing.T) {
	runCases(t, modelRequired(ValidateEmbedding), []tc{
		pass("string", `{"model":"text-embedding-3-small","input":"hello"}`),
		pass("strings", `{"model":"m","input":["a","b"]}`),
		pass("2048 strings", `{"model":"m","input":`+repeat(`"a"`, 2048)+`}`),
		pass("tokens", `{"model":"m","input":[1,2,3]}`),
		pass("token arrays", `{"model":"m","input":[[1],[2,3]]}`),
		pass("options", `{"model":"m","input":"x","encoding_format":"base64","dimensions":1,"user":"u"}`),
		fail("model missing", `{"input":"x"}`, "model", "model is required"),
		fail("input missing", `{"model":"m"}`, "input", "input is required"),
		fail("input empty string", `{"model":"m","input":""}`, "input", "input must not be empty"),
		fail("input empty array", `{"model":"m","input":[]}`, "input", "must not be an empty array"),
		fail("2049 strings", `{"model":"m","input":`+repeat(`"a"`, 2049)+`}`, "input", "at most 2048 elements, got 2049"),
		fail("empty element", `{"model":"m","input":["a",""]}`, "input[1]", "input[1] must not be empty"),
		fail("empty token array", `{"model":"m","input":[[1],[]]}`, "input[1]", "must not be an empty array"),
		fail("input number", `{"model":"m","input":5}`, "input", "got number"),
		fail("input null", `{"model":"m","input":null}`, "input", "got null"),
		fail("encoding_format", `{"model":"m","input":"x","encoding_format":"int8"}`, "encoding_format", `must be one of float, base64, got "int8"`),
		fail("dimensions 0", `{"model":"m","input":"x","dimensions":0}`, "dimensions", "dimensions must be at least 1, got 0"),
		fail("dimensions string", `{"model":"m","input":"x","dimensions":"256"}`, "dimensions", "must be an integer, got string"),
	})
}

func TestResponses(t *testing.T) {
	runCases(t, ValidateResponses, []tc{
		pass("string input", `{"model":"gpt-4.1","input":"hi"}`),
		pass("array input", `{"model":"gpt-4.1","input":[{"role":"user","content":"hi"}]}`),
		pass("previous_response_id without model", `{"previous_response_id":"resp_1","input":"more"}`),
		pass("prompt without model", `{"prompt":{"id":"pmpt_1"}}`),
		pass("bounds", `{"model":"m","temperature":2,"top_p":0,"max_output_tokens":1,"stream":true}`),
		fail("model missing", `{"input":"hi"}`, "model", "model is required"),
		fail("model missing with null previous", `{"input":"hi","previous_response_id":null}`, "model", "model is required"),
		fail("model number", `{"model":1,"input":"hi"}`, "model", "must be a string"),
		fail("input number", `{"model":"m","input":1}`, "input", "input must be a string or an array of input items, got number"),
		fail("stream string", `{"model":"m","stream":"yes"}`, "stream", "must be a boolean or null"),
		fail("temperature", `{"model":"m","temperature":2.5}`, "temperature", "between 0 and 2"),
		fail("top_p", `{"model":"m","top_p":1.5}`, "top_p", "between 0 and 1"),
		fail("max_output_tokens 0", `{"model":"m","max_output_tokens":0}`, "max_output_tokens", "at least 1, got 0"),
		fail("previous_response_id number", `{"previous_response_id":5}`, "previous_response_id", "previous_response_id must be a string or null, got number"),
		fail("prompt string", `{"model":"m","prompt":"x"}`, "prompt", "prompt must be an object or null, got string"),
	})
	info, err := ValidateResponses([]byte(`{"model":"m","stream":true}`))
	if err != nil || !info.Stream || info.Model != "m" {
		t.Fatalf("info = %+v, err = %v", info, err)
	}
}

func TestMessages(t *testing.T) {
	runCases(t, modelRequired(ValidateMessages), []tc{
		pass("a Messages request", `{"model":"claude-sonnet-4-5","max_tokens":64,"messages":[{"role":"user","content":"hi"}],"stream":true}`),
		pass("fields the provider checks", `{"model":"m","messages":"not checked here"}`),
		fail("model missing", `{"messages":[]}`, "model", "model is required"),
		fail("model empty", `{"model":""}`, "model", "must not be empty"),
		fail("stream string", `{"model":"m","stream":"yes"}`, "stream", "must be a boolean or null"),
	})
	info, err := ValidateMessages([]byte(`{"model":"m","stream":true}`), nil)
	if err != nil || !info.Stream || info.Model != "m" {
		t.Fatalf("info = %+v, err = %v", info, err)
	}
}

func TestModelOnly(t *testing.T) {
	runCases(t, ValidateModelOnly, []tc{
		pass("a speech request", `{"model":"tts-1","input":"hi","voice":"alloy"}`),
		pass("a moderation without a model", `{"input":"hi"}`),
		fail("model empty", `{"model":""}`, "model", "must not be empty"),
		fail("model a number", `{"model":4}`, "model", "must be a string"),
	})
	if info, err := ValidateModelOnly([]byte(`{"model":"omni-moderation-latest"}`)); err != nil || info.Model != "omni-moderation-latest" {
		t.Fatalf("info = %+v, err = %v", info, err)
	}
}

func TestRerank(t *testing.T) {
	rr := func(extra string) string {
		b := `{"model":"rerank-v3.5","query":"q","documents":["a",{"text":"b"}]`
		if extra != "" {
			b += "," + extra
		}
		return b + "}"
	}
	runCases(t, ValidateRerank, []tc{
		pass("minimal", rr("")),
		pass("options", rr(`"top_n":1,"return_documents":true,"max_chunks_per_doc":1`)),
		fail("model missing", `{"query":"q","documents":["a"]}`, "model", "model is required"),
		fail("query missing", `{"model":"m","documents":["a"]}`, "query", "query is required"),
		fail("query empty", `{"model":"m","query":"","documents":["a"]}`, "query", "query must not be empty"),
		fail("query number", `{"model":"m","query":1,"documents":["a"]}`, "query", "must be a string, got number"),
		fail("documents missing", `{"model":"m","query":"q"}`, "documents", "documents is required"),
		fail("documents empty", `{"model":"m","query":"q","documents":[]}`, "documents", "at least 1 document"),
		fail("documents string", `{"model":"m","query":"q","documents":"a"}`, "documents", "must be an array, got string"),
		fail("document number", `{"model":"m","query":"q","documents":["a",1]}`, "documents[1]", "must be a string or an object with a text field, got number"),
		fail("document object without text", `{"model":"m","query":"q","documents":[{"title":"x"}]}`, "documents[0].text", "is required"),
		fail("top_n 0", rr(`"top_n":0`), "top_n", "top_n must be at least 1, got 0"),
		fail("return_documents string", rr(`"return_documents":"yes"`), "return_documents", "must be a boolean, got string"),
		fail("max_chunks_per_doc 0", rr(`"max_chunks_per_doc":0`), "max_chunks_per_doc", "at least 1, got 0"),
	})
}

func TestImageGeneration(t *testing.T) {
	runCases(t, ValidateImageGeneration, []tc{
		pass("minimal", `{"prompt":"a cat"}`),
		pass("options", `{"prompt":"a cat","model":"dall-e-3","n":10,"size":"1024x1024","response_format":"b64_json"}`),
		pass("n 1 url", `{"prompt":"a cat","n":1,"response_format":"url"}`),
		fail("prompt missing", `{"n":1}`, "prompt", "prompt is required"),
		fail("prompt empty", `{"prompt":""}`, "prompt", "prompt must not be empty"),
		fail("prompt array", `{"prompt":["a"]}`, "prompt", "must be a string, got array"),
		fail("n 0", `{"prompt":"a","n":0}`, "n", "n must be between 1 and 10, got 0"),
		fail("n 11", `{"prompt":"a","n":11}`, "n", "got 11"),
		fail("size number", `{"prompt":"a","size":1024}`, "size", "must be a string or null, got number"),
		fail("response_format", `{"prompt":"a","response_format":"png"}`, "response_format", `must be one of url, b64_json, got "png"`),
		fail("model empty", `{"prompt":"a","model":""}`, "model", "must not be empty"),
	})
}

func TestStripGatewayFields(t *testing.T) {
	cases := []struct{ name, in, want string }{
		{"last", `{"model":"m","strict_open_ai_compliance":true}`, `{"model":"m"}`},
		{"first", `{"strict_reference_compliance":false, "model":"m" , "n" : 1}`, `{ "model":"m" , "n" : 1}`},
		{"middle", ` { "a" : 1e5 ,"strict_reference_compliance":false,"b":2 }  `, ` { "a" : 1e5,"b":2 }  `},
		{"only", `{"strict_open_ai_compliance":true}`, `{}`},
		{"both", `{"strict_open_ai_compliance":true,"x":[1,2.50,{"strict_reference_compliance":true}],"strict_reference_compliance":true}`,
			`{"x":[1,2.50,{"strict_reference_compliance":true}]}`},
		{"escaped key", `{"a":"\u00e9","strict\u005freference_compliance":true}`, `{"a":"\u00e9"}`},
		{"duplicates", `{"strict_reference_compliance":true,"a":1,"strict_reference_compliance":false}`, `{"a":1}`},
		{"newlines", "{\n  \"a\": 1,\n  \"strict_reference_compliance\": true\n}\n", "{\n  \"a\": 1\n}\n"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			out, err := StripGatewayFields([]byte(c.in))
			if err != nil {
				t.Fatal(err)
			}
			if string(out) != c.want {
				t.Errorf("got  %q\nwant %q", out, c.want)
			}
			if !json.Valid(out) {
				t.Fatalf("output is not valid JSON: %q", out)
			}
			// Same meaning as the input minus the gateway fields.
			in, got := decodeUseNumber(t, []byte(c.in)), decodeUseNumber(t, out)
			delete(in, fieldStrict)
			delete(in, fieldStrictAlias)
			if !reflect.DeepEqual(in, got) {
				t.Errorf("meaning changed:\n in %v\nout %v", in, got)
			}
		})
	}
	t.Run("unchanged body is returned as is", func(t *testing.T) {
		in := []byte(`{"model":"m", "seed": 9000000000000000001, "x":{"strict_reference_compliance":true}}`)
		out, err := StripGatewayFields(in)
		if err != nil || !bytes.Equal(out, in) || &out[0] != &in[0] {
			t.Fatalf("got %q, %v", out, err)
		}
	})
	for _, bad := range []string{``, `[]`, `"x"`, `{"a":`, `{"a":1}}`, `{"a":1} {}`} {
		if _, err := StripGatewayFields([]byte(bad)); err == nil {
			t.Errorf("%q: want error", bad)
		}
	}
}

func decodeUseNumber(t *testing.T, b []byte) map[string]any {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var m map[string]any
	if err := dec.Decode(&m); err != nil {
		t.Fatalf("decode %q: %v", b, err)
	}
	return m
}

func TestValidateInputItemsQuery(t *testing.T) {
	cases := []struct {
		name, query       string
		want              InputItemsQuery
		errParam, errFrag string
	}{
		{name: "defaults", want: InputItemsQuery{Limit: 20, Order: "asc"}},
		{name: "edges", query: "limit=1&order=desc&after=item_1&before=item_9", want: InputItemsQuery{Limit: 1, Order: "desc", After: "item_1", Before: "item_9"}},
		{name: "limit 100", query: "limit=100&order=asc", want: InputItemsQuery{Limit: 100, Order: "asc"}},
		{name: "limit 0", query: "limit=0", errParam: "limit", errFrag: `limit must be an integer between 1 and 100, got "0"`},
		{name: "limit 101", query: "limit=101", errParam: "limit", errFrag: `got "101"`},
		{name: "limit abc", query: "limit=abc", errParam: "limit", errFrag: `got "abc"`},
		{name: "limit fraction", query: "limit=1.5", errParam: "limit", errFrag: "between 1 and 100"},
		{name: "order sideways", query: "order=sideways", errParam: "order", errFrag: `order must be one of asc, desc, got "sideways"`},
		{name: "order case", query: "order=ASC", errParam: "order", errFrag: "one of asc, desc"},
		{name: "both bad", query: "limit=-1&order=up", errParam: "limit", errFrag: `got "-1"; order must be one of asc, desc, got "up"`},
		// Given without a value: the provider would read them as given.
		{name: "limit empty", query: "limit=", errParam: "limit", errFrag: `limit must be an integer between 1 and 100, got ""`},
		{name: "limit bare", query: "limit", errParam: "limit", errFrag: `got ""`},
		{name: "order empty", query: "order=", errParam: "order", errFrag: `order must be one of asc, desc, got ""`},
		{name: "after empty", query: "after=", errParam: "after", errFrag: `after must be an item id, got ""`},
		{name: "before empty", query: "limit=5&before=", errParam: "before", errFrag: `before must be an item id, got ""`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			vals, perr := url.ParseQuery(c.query)
			if perr != nil {
				t.Fatal(perr)
			}
			q, err := ValidateInputItemsQuery(func(name string) (string, bool) { return vals.Get(name), vals.Has(name) })
			if c.errParam == "" {
				if err != nil {
					t.Fatalf("unexpected error %q", err.Message)
				}
				if q != c.want {
					t.Fatalf("q = %+v, want %+v", q, c.want)
				}
				return
			}
			if err == nil {
				t.Fatalf("want error, got %+v", q)
			}
			if err.Status != 400 || err.Param != c.errParam || !strings.Contains(err.Message, c.errFrag) {
				t.Fatalf("got %d %q %q", err.Status, err.Param, err.Message)
			}
		})
	}
}

func TestParseJSONInt(t *testing.T) {
	cases := []struct {
		lit  string
		want int64
		st   intStatus
	}{
		{"0", 0, intOK}, {"-0", 0, intOK}, {"0.000", 0, intOK}, {"0e99999999999", 0, intOK},
		{"42", 42, intOK}, {"-42", -42, intOK}, {"2.0", 2, intOK}, {"1e3", 1000, intOK}, {"1.5e1", 15, intOK},
		{"12500e-2", 125, intOK}, {"9e18", 9e18, intOK},
		{"9223372036854775807", 9223372036854775807, intOK}, {"-9223372036854775808", -9223372036854775808, intOK},
		{"9223372036854775808", 0, intTooBig}, {"-9223372036854775809", 0, intTooSmall},
		{"1e19", 0, intTooBig}, {"-1e19", 0, intTooSmall}, {"1e999999999999999", 0, intTooBig},
		{"1.5", 0, intNotInteger}, {"1e-1", 0, intNotInteger}, {"1e-999999999999", 0, intNotInteger},
		{"100000000000000000000e-2", 1e18, intOK}, {"", 0, intNotInteger}, {"x", 0, intNotInteger}, {"1e", 0, intNotInteger},
	}
	for _, c := range cases {
		got, st := parseJSONInt(c.lit)
		if got != c.want || st != c.st {
			t.Errorf("parseJSONInt(%q) = %d, %d; want %d, %d", c.lit, got, st, c.want, c.st)
		}
	}
}

func TestLongValuesAreTruncated(t *testing.T) {
	long := strings.Repeat("é", 200)
	_, err := chatStrict([]byte(chat(fmt.Sprintf(`"tool_choice":%q`, long))))
	if err == nil || len(err.Message) > 200 || !strings.Contains(err.Message, `..."`) {
		t.Fatalf("got %v", err)
	}
	if !json.Valid(err.Body()) {
		t.Fatal("error body is not valid JSON")
	}
}

func BenchmarkValidateChatCompletion(b *testing.B) {
	body := []byte(chat(`"temperature":0.7,"top_p":0.9,"n":1,"stream":true,"stream_options":{"include_usage":true},` +
		`"tools":[` + fnTool + `],"tool_choice":"auto","logit_bias":{"50256":-100},"seed":42,"stop":["\n\n"]`))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := chatStrict(body); err != nil {
			b.Fatal(err.Message)
		}
	}
}

// sameInfo compares two Infos, leaving out the parsed body.
func sameInfo(a, b Info) bool {
	a.Body, b.Body = nil, nil
	return reflect.DeepEqual(a, b)
}
