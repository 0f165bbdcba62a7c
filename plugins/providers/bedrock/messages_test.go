package bedrock

import (
	"bytes"
	"cmp"
	"context"
	"encoding/base64"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/llm-gateway/gateway/core"
	"github.com/llm-gateway/gateway/core/awsauth/awsauthtest"
	"github.com/llm-gateway/gateway/plugins/providers/internal/chattest"
)

// TestBuildMessagesRequest: /v1/messages for an Anthropic model goes,
// signed, to InvokeModel (invoke-with-response-stream for a stream) with
// the body less model and stream and with anthropic_version; another
// model or a body without a model is a 400 naming model.
func TestBuildMessagesRequest(t *testing.T) {
	p := New()
	p.now = func() time.Time { return time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC) }
	target := &core.Target{Provider: Name, AWS: core.AWSSettings{Region: "eu-west-3", AccessKeyID: "AKIDTEST", SecretAccessKey: "s3cr3t"}}
	const msgs = `"max_tokens":8,"messages":[{"role":"user","content":"hi"}]`
	const host = "https://bedrock-runtime.eu-west-3.amazonaws.com"
	// counted is the CountTokens body of an InvokeModel body.
	counted := func(body string) string {
		return `{"input":{"invokeModel":{"body":"` + base64.StdEncoding.EncodeToString([]byte(body)) + `"}}}`
	}
	for _, tc := range []struct {
		name, body string
		stream     bool
		url, sent  string
		param      string // of the 400
		endpoint   core.Endpoint
	}{
		{"invoke", `{"model":"anthropic.claude-v2:1",` + msgs + `}`, false,
			host + "/model/anthropic.claude-v2%3A1/invoke", `{"anthropic_version":"bedrock-2023-05-31",` + msgs + `}`, "", ""},
		{"stream, version kept", `{"model":"anthropic.claude-v2:1","stream":true,"anthropic_version":"bedrock-2023-05-31",` + msgs + `}`, true,
			host + "/model/anthropic.claude-v2%3A1/invoke-with-response-stream", `{"anthropic_version":"bedrock-2023-05-31",` + msgs + `}`, "", ""},
		{"inference profile ARN", `{"model":"arn:aws:bedrock:eu-west-3:123:inference-profile/eu.anthropic.claude-3-5-sonnet-20240620-v1:0",` + msgs + `}`, false,
			host + "/model/arn%3Aaws%3Abedrock%3Aeu-west-3%3A123%3Ainference-profile%2Feu.anthropic.claude-3-5-sonnet-20240620-v1%3A0/invoke",
			`{"anthropic_version":"bedrock-2023-05-31",` + msgs + `}`, "", ""},
		{"not an Anthropic model", `{"model":"meta.llama3-8b-instruct-v1:0",` + msgs + `}`, false, "", "", "model", ""},
		{"no model", `{` + msgs + `}`, false, "", "", "model", ""},
		// CountTokens counts for foundation models only: a cross-region
		// profile is asked about as the model it routes to.
		{"count_tokens", `{"model":"anthropic.claude-v2:1","messages":[{"role":"user","content":"hi"}]}`, false,
			host + "/model/anthropic.claude-v2%3A1/count-tokens",
			counted(`{"anthropic_version":"bedrock-2023-05-31","max_tokens":1,"messages":[{"role":"user","content":"hi"}]}`), "", core.EndpointMessagesCount},
		{"count_tokens, inference profile", `{"model":"us.anthropic.claude-3-5-sonnet-20240620-v1:0",` + msgs + `}`, false,
			host + "/model/anthropic.claude-3-5-sonnet-20240620-v1%3A0/count-tokens",
			counted(`{"anthropic_version":"bedrock-2023-05-31",` + msgs + `}`), "", core.EndpointMessagesCount},
		{"count_tokens, inference profile ARN", `{"model":"arn:aws:bedrock:eu-west-3:123:inference-profile/eu.anthropic.claude-3-5-sonnet-20240620-v1:0",` + msgs + `}`, false,
			host + "/model/anthropic.claude-3-5-sonnet-20240620-v1%3A0/count-tokens",
			counted(`{"anthropic_version":"bedrock-2023-05-31",` + msgs + `}`), "", core.EndpointMessagesCount},
		{"count_tokens, foundation-model ARN as it is", `{"model":"arn:aws:bedrock:eu-west-3::foundation-model/anthropic.claude-v2:1",` + msgs + `}`, false,
			host + "/model/arn%3Aaws%3Abedrock%3Aeu-west-3%3A%3Afoundation-model%2Fanthropic.claude-v2%3A1/count-tokens",
			counted(`{"anthropic_version":"bedrock-2023-05-31",` + msgs + `}`), "", core.EndpointMessagesCount},
		// An application inference profile does not name its model, and
		// CountTokens refuses it: a 400 says which id to send instead.
		{"count_tokens, application profile ARN", `{"model":"arn:aws:bedrock:eu-west-3:123456789012:application-inference-profile/a1b2c3d4e5f6",` + msgs + `}`, false,
			"", "", "model", core.EndpointMessagesCount},
		{"count_tokens, application profile ARN whose id holds anthropic.", `{"model":"arn:aws:bedrock:eu-west-3:123:application-inference-profile/anthropic.x",` + msgs + `}`, false,
			"", "", "model", core.EndpointMessagesCount},
	} {
		t.Run(tc.name, func(t *testing.T) {
			endpoint := cmp.Or(tc.endpoint, core.EndpointMessages)
			req := &core.Request{Endpoint: endpoint, Method: "POST", Path: "/messages", Body: []byte(tc.body), Stream: tc.stream, Header: http.Header{}}
			hr, err := p.BuildRequest(context.Background(), req, target)
			if tc.param != "" {
				var ce *core.Error
				if !errors.As(err, &ce) || ce.Status != 400 || ce.Param != tc.param {
					t.Fatalf("%v, want a 400 naming %s", err, tc.param)
				}
				if endpoint == core.EndpointMessagesCount && !strings.Contains(ce.Message, "foundation model") {
					t.Fatalf("%v, want a 400 saying CountTokens takes foundation models", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			sent, _ := io.ReadAll(hr.Body)
			if hr.Method != "POST" || hr.URL.String() != tc.url || !jsonEqual(t, sent, []byte(tc.sent)) {
				t.Fatalf("%s %s %s", hr.Method, hr.URL, sent)
			}
			accept := "application/json"
			if tc.stream {
				accept = core.ContentTypeAWSEventStream
			}
			if hr.Header.Get("Accept") != accept || hr.Header.Get("Content-Type") != "application/json" {
				t.Fatalf("headers %v", hr.Header)
			}
			server, _ := http.NewRequest("POST", hr.URL.String(), nil)
			server.Host, server.Header = hr.Host, hr.Header
			if err := awsauthtest.Verify(server, sent, "AKIDTEST", "s3cr3t", "eu-west-3", "bedrock"); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestTranslateMessagesResponse: InvokeModel's answer comes back as it is;
// Bedrock's error body becomes the gateway's.
func TestTranslateMessagesResponse(t *testing.T) {
	req := &core.Request{Endpoint: core.EndpointMessages, Model: "anthropic.claude-v2:1"}
	const answer = `{"id":"msg_1","type":"message","role":"assistant","content":[{"type":"text","text":"Hi"}],"stop_reason":"end_turn","usage":{"input_tokens":3,"output_tokens":1}}`
	for _, tc := range []struct {
		name   string
		status int
		header http.Header
		body   string
		want   string
	}{
		{"answer", 200, http.Header{"Content-Type": {"application/json"}, "Content-Length": {"140"}}, answer, answer},
		{"error", 400, http.Header{"X-Amzn-Errortype": {"ValidationException:http://internal.amazon.com/coral/com.amazon.bedrock/"}},
			`{"message":"max_tokens: Field required"}`,
			`{"error":{"message":"max_tokens: Field required","type":"ValidationException","param":null,"code":null}}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp := &core.Response{Status: tc.status, Header: tc.header, Body: []byte(tc.body)}
			if err := New().TranslateResponse(req, resp); err != nil {
				t.Fatal(err)
			}
			if tc.status == 200 {
				if string(resp.Body) != tc.want || resp.Header.Get("Content-Length") != "140" {
					t.Fatalf("%v %s", resp.Header, resp.Body)
				}
				return
			}
			if !jsonEqual(t, resp.Body, []byte(tc.want)) {
				t.Fatalf("body %s", resp.Body)
			}
		})
	}
}

// chunk is an InvokeModelWithResponseStream chunk frame carrying ev, with
// the padding Bedrock adds.
func chunk(ev string) []byte {
	return event("chunk", `{"bytes":"`+base64.StdEncoding.EncodeToString([]byte(ev))+`","p":"abcdefgh"}`)
}

// translatedMessages runs the /v1/messages stream translation over body.
func translatedMessages(t *testing.T, body io.Reader) io.ReadCloser {
	t.Helper()
	resp := &core.Response{Status: 200, Header: http.Header{"Content-Type": {core.ContentTypeAWSEventStream}, "Content-Length": {"9"}}, Stream: io.NopCloser(body)}
	New().TranslateStream(&core.Request{Endpoint: core.EndpointMessages, Model: "anthropic.claude-v2:1", Stream: true}, resp)
	if !resp.SSE || resp.Header.Get("Content-Type") != "text/event-stream" || resp.Header.Get("Content-Length") != "" {
		t.Fatalf("SSE %v, headers %v", resp.SSE, resp.Header)
	}
	return resp.Stream
}

// messagesEvents are an Anthropic Messages stream's events (typ, as
// Bedrock's chunks carry them, and as the client gets them): the first
// spread over lines, the last with Bedrock's invocation metrics.
var messagesEvents = []struct{ typ, in, out string }{
	{"message_start", "{\n  \"type\": \"message_start\",\n  \"message\": {\"id\": \"msg_1\", \"usage\": {\"input_tokens\": 3, \"output_tokens\": 1}}\n}",
		`{"type":"message_start","message":{"id":"msg_1","usage":{"input_tokens":3,"output_tokens":1}}}`},
	{"content_block_start", `{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`, ""},
	{"content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hi\n"}}`, ""},
	{"content_block_stop", `{"type":"content_block_stop","index":0}`, ""},
	{"message_delta", `{"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":2}}`, ""},
	{"message_stop", `{"type":"message_stop","amazon-bedrock-invocationMetrics":{"inputTokenCount":3,"outputTokenCount":2}}`, ""},
}

// TestTranslateMessagesStream: each chunk's event becomes a server-sent
// event named by its type, its JSON on one data line, read whole or a
// byte at a time; frames of other event types are dropped.
func TestTranslateMessagesStream(t *testing.T) {
	var in []byte
	var want string
	for i, ev := range messagesEvents {
		in = append(in, chunk(ev.in)...)
		if i == 1 {
			in = append(in, event("other", `{}`)...)
		}
		out := ev.out
		if out == "" {
			out = ev.in
		}
		want += "event: " + ev.typ + "\ndata: " + out + "\n\n"
	}
	chattest.ReadsAs(t, "messages", string(in), want, func(r io.Reader) io.ReadCloser { return translatedMessages(t, r) })
}

// TestTranslateMessagesStreamFails: an exception frame, an end before
// message_stop, a bad CRC and a chunk that is not an Anthropic event fail
// the stream after what came before.
func TestTranslateMessagesStreamFails(t *testing.T) {
	start := chunk(messagesEvents[1].in)
	const first = "event: content_block_start\ndata: " + `{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}` + "\n\n"
	exception := encodeFrame(`{"message":"Too many requests"}`, header{Name: ":exception-type", Value: "throttlingException"},
		header{Name: ":content-type", Value: "application/json"}, header{Name: ":message-type", Value: "exception"})
	broken := chunk(messagesEvents[3].in)
	broken[len(broken)-1] ^= 1
	join := func(fs ...[]byte) []byte { return bytes.Join(fs, nil) }
	for _, tc := range []struct {
		name   string
		stream []byte
		check  func(error) bool
	}{
		{"exception", join(start, exception), func(err error) bool {
			var se *StreamError
			return errors.As(err, &se) && se.Type == "throttlingException" && se.Message == "Too many requests"
		}},
		{"end before message_stop", start, func(err error) bool { return errors.Is(err, io.ErrUnexpectedEOF) }},
		{"bad CRC", join(start, broken), func(err error) bool { return strings.Contains(err.Error(), "CRC") }},
		{"bytes not base64", join(start, event("chunk", `{"bytes":"not base64!"}`)), func(err error) bool { return strings.Contains(err.Error(), "base64") }},
		{"no bytes", join(start, event("chunk", `{}`)), func(err error) bool { return strings.Contains(err.Error(), "not an Anthropic stream event") }},
		{"event without a type", join(start, chunk(`{"index":0}`)), func(err error) bool { return strings.Contains(err.Error(), `type ""`) }},
		{"type with a line break", join(start, chunk(`{"type":"a\nb"}`)), func(err error) bool { return strings.Contains(err.Error(), `type "a\nb"`) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			chattest.FailsAfter(t, translatedMessages(t, bytes.NewReader(tc.stream)), first, func(err error) bool { return err != nil && tc.check(err) })
		})
	}
}

// TestTranslateMessagesStreamEventByEvent: a chunk's event is handed out
// before the next frame has arrived; an error event ends the stream
// cleanly.
func TestTranslateMessagesStreamEventByEvent(t *testing.T) {
	pr, pw := io.Pipe()
	s := translatedMessages(t, pr)
	go pw.Write(chunk(messagesEvents[1].in))
	buf := make([]byte, 4096)
	n, err := s.Read(buf)
	if err != nil || !strings.HasPrefix(string(buf[:n]), "event: content_block_start\n") {
		t.Fatalf("%v %s", err, buf[:n])
	}
	go func() {
		pw.Write(chunk(`{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`))
		pw.Close()
	}()
	rest, err := io.ReadAll(s)
	if err != nil || string(rest) != "event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"Overloaded\"}}\n\n" {
		t.Fatalf("%v %q", err, rest)
	}
}

// TestTranslateCountTokensAnswer: CountTokens' count becomes Anthropic's;
// an answer without one is an error, not a zero count.
func TestTranslateCountTokensAnswer(t *testing.T) {
	req := &core.Request{Endpoint: core.EndpointMessagesCount, Model: "anthropic.claude-v2:1"}
	for _, tc := range []struct{ in, want string }{
		{`{"inputTokens":42}`, `{"input_tokens":42}`},
		{`{"inputTokens":0}`, `{"input_tokens":0}`},
		{`{}`, ""},
		{`not json`, ""},
	} {
		resp := &core.Response{Status: 200, Header: http.Header{}, Body: []byte(tc.in)}
		err := New().TranslateResponse(req, resp)
		if tc.want == "" {
			if err == nil {
				t.Errorf("%s: translated to %s", tc.in, resp.Body)
			}
			continue
		}
		if err != nil || string(resp.Body) != tc.want {
			t.Errorf("%s: %s %v, want %s", tc.in, resp.Body, err, tc.want)
		}
	}
}
