package server

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/llm-gateway/gateway/core"
	"github.com/llm-gateway/gateway/core/awsstream/awsstreamtest"
)

func testChunk(event string) []byte {
	return awsstreamtest.Event("chunk", `{"bytes":"`+base64.StdEncoding.EncodeToString([]byte(event))+`"}`)
}

// scanned is the usage a scan of the answer (Content-Type ct, the body in
// reads of split bytes) reads.
func scanned(ct string, header http.Header, body []byte, split int) (core.Usage, *usageScan) {
	h := http.Header{"Content-Type": {ct}}
	for k, v := range header {
		h[k] = v
	}
	u := &usageScan{}
	u.start(&core.Request{Endpoint: core.EndpointProxy, Method: http.MethodPost}, &core.Response{Status: 200, Header: h})
	for len(body) > 0 {
		n := min(split, len(body))
		u.write(body[:n])
		body = body[n:]
	}
	return u.end(h), u
}

// TestUsageScanSplits: the usage of an answer is read the same whatever
// the reads it arrives in, a frame or a JSON body cut at any byte.
func TestUsageScanSplits(t *testing.T) {
	converse := bytes.Join([][]byte{
		awsstreamtest.Event("messageStart", `{"role":"assistant"}`),
		awsstreamtest.Event("contentBlockDelta", `{"contentBlockIndex":0,"delta":{"text":"\"usage\":{\"inputTokens\":99}"}}`),
		awsstreamtest.Event("messageStop", `{"stopReason":"end_turn"}`),
		awsstreamtest.Event("metadata", `{"usage":{"inputTokens":6,"cacheWriteInputTokens":3,"outputTokens":2,"totalTokens":11},"metrics":{"latencyMs":5}}`),
	}, nil)
	invoke := bytes.Join([][]byte{
		testChunk(`{"type":"message_start","message":{"usage":{"input_tokens":3,"cache_read_input_tokens":4,"output_tokens":1}}}`),
		testChunk(`{"type":"content_block_delta","delta":{"text":"\"usage\":{\"output_tokens\":99}"}}`),
		testChunk(`{"type":"message_delta","usage":{"output_tokens":2}}`),
		testChunk(`{"type":"message_stop","amazon-bedrock-invocationMetrics":{"inputTokenCount":3,"cacheReadInputTokenCount":4,"outputTokenCount":2}}`),
	}, nil)
	exception := append(testChunk(`{"type":"message_start","message":{"usage":{"input_tokens":3}}}`), awsstreamtest.Event("x", "{}")...)
	exception[len(exception)-30] = 'e' // not an event frame any more: a bad message CRC
	for _, tc := range []struct {
		name, ct string
		body     []byte
		want     core.Usage
	}{
		{"converse stream", core.ContentTypeAWSEventStream, converse, core.Usage{PromptTokens: 9, CompletionTokens: 2, TotalTokens: 11}},
		{"invoke stream", core.ContentTypeAWSEventStream, invoke, core.Usage{PromptTokens: 7, CompletionTokens: 2, TotalTokens: 9}},
		{"a broken frame ends the reading", core.ContentTypeAWSEventStream, exception, core.Usage{PromptTokens: 3, TotalTokens: 3}},
		{"json", "application/json; charset=utf-8", []byte(`{"choices":[{"text":"\"usage\":1"}],"usage":{"prompt_tokens":3,"completion_tokens":4}}`),
			core.Usage{PromptTokens: 3, CompletionTokens: 4, TotalTokens: 7}},
		{"json array", "application/json", []byte(` [{"usageMetadata":{"promptTokenCount":2,"totalTokenCount":2}} ,` + "\r\n" + `{"usageMetadata":{"promptTokenCount":2,"candidatesTokenCount":5,"totalTokenCount":7}}]`),
			core.Usage{PromptTokens: 2, CompletionTokens: 5, TotalTokens: 7}},
		{"truncated json array", "application/json", []byte(`[{"usageMetadata":{"promptTokenCount":2,"totalTokenCount":2}},{"usageMetadata":{"promptTokenCount":2,"candidatesTokenCount":5,"tot`),
			core.Usage{PromptTokens: 2, TotalTokens: 2}},
		{"problem+json", "application/problem+json", []byte(`{"usage":{"total_tokens":4}}`), core.Usage{TotalTokens: 4}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for split := 1; split <= len(tc.body); split++ {
				if got, _ := scanned(tc.ct, nil, tc.body, split); got != tc.want {
					t.Fatalf("in reads of %d bytes: %+v, want %+v", split, got, tc.want)
				}
			}
		})
	}
}

// TestUsageScanBounds: what is not read is not kept: a body of another
// type, a JSON body of any size (but for the members addUsage reads, each
// up to maxKeptBuffer), a frame past maxScannedFrame (skipped, the frames
// after it read); an answer whose body says nothing counts InvokeModel's
// token headers.
func TestUsageScanBounds(t *testing.T) {
	big := bytes.Repeat([]byte("a"), maxScannedFrame)
	counts := http.Header{core.AWSInputTokensHeader: {"11"}, core.AWSOutputTokensHeader: {"22"}}
	fromHeaders := core.Usage{PromptTokens: 11, CompletionTokens: 22, TotalTokens: 33}
	post := &core.Request{Endpoint: core.EndpointProxy, Method: http.MethodPost}

	u, s := scanned("application/octet-stream", counts, big, 32<<10)
	if u != fromHeaders || s.mode != scanNone || s.buf != nil {
		t.Errorf("download: usage %+v, mode %d, %d bytes kept", u, s.mode, cap(s.buf))
	}

	// Read in 32 KiB reads, the most kept is the members read (a "message"
	// past maxKeptBuffer left out) and one read.
	for _, tc := range []struct {
		name string
		body []byte
		want core.Usage
	}{
		{"a large answer", append(append([]byte(`{"choices":[{"text":"`), big...), `"}],"usage":{"total_tokens":5}}`...), core.Usage{TotalTokens: 5}},
		{"a large member", append(append([]byte(`{"usage":{"total_tokens":5},"message":{"usage":{"input_tokens":9},"content":"`), big...), `"}}`...), core.Usage{TotalTokens: 5}},
		{"a large array", append(bytes.Repeat([]byte(`{"usageMetadata":{"promptTokenCount":7,"totalTokenCount":7}},`), 1<<17), `{"usageMetadata":{"totalTokenCount":9}}`...), core.Usage{PromptTokens: 7, TotalTokens: 9}},
	} {
		body := tc.body
		if tc.name == "a large array" {
			body = append(append([]byte("["), body...), ']')
		}
		s := &usageScan{}
		s.start(post, &core.Response{Status: 200, Header: http.Header{"Content-Type": {"application/json"}}})
		kept := 0
		for b := body; len(b) > 0; {
			n := min(32<<10, len(b))
			s.write(b[:n])
			kept, b = max(kept, cap(s.json.doc)), b[n:] // s.json is there while the body is read
		}
		if u := s.end(nil); u != tc.want || kept > maxKeptBuffer+64<<10 {
			t.Errorf("%s: usage %+v, %d bytes kept; want %+v", tc.name, u, kept, tc.want)
		}
	}

	huge := awsstreamtest.Event("chunk", `{"bytes":"`+strings.Repeat("A", maxScannedFrame)+`"}`)
	stream := append(huge, awsstreamtest.Event("metadata", `{"usage":{"inputTokens":6,"outputTokens":2}}`)...)
	kept := 0
	s = &usageScan{}
	s.start(post, &core.Response{Status: 200, Header: http.Header{"Content-Type": {core.ContentTypeAWSEventStream}}})
	for b := stream; len(b) > 0; {
		n := min(32<<10, len(b))
		s.write(b[:n])
		kept, b = max(kept, cap(s.buf)), b[n:]
	}
	if u := s.end(nil); u != (core.Usage{PromptTokens: 6, CompletionTokens: 2, TotalTokens: 8}) || kept > maxKeptBuffer {
		t.Errorf("a frame past the bound: usage %+v, %d bytes kept", u, kept)
	}

	for _, tc := range []struct{ ct, body string }{
		{core.ContentTypeAWSEventStream, "HTTP/1.1 200 OK\r\nnot frames at all"},
		{"application/json", `"a string"`},
		{"application/json", `{"usage":{"total_tokens":5}} {"usage" "x"}`},
	} {
		if u, s := scanned(tc.ct, counts, []byte(tc.body), 7); s.mode != scanNone || (u != fromHeaders && u != core.Usage{TotalTokens: 5}) {
			t.Errorf("%s %q: usage %+v, mode %d; want it left", tc.ct, tc.body, u, s.mode)
		}
	}

	for _, tc := range []struct {
		req  core.Request
		resp core.Response
	}{
		{core.Request{Endpoint: core.EndpointProxy, Method: http.MethodGet}, core.Response{Status: 200}},
		{core.Request{Endpoint: core.EndpointProxy, Method: http.MethodPost}, core.Response{Status: 400}},
	} {
		s := &usageScan{}
		s.start(&tc.req, &tc.resp)
		s.write([]byte(`{"usage":{"total_tokens":5}}`))
		if u := s.end(counts); s.counts || u != (core.Usage{}) {
			t.Errorf("%s answered %d: counts %v, usage %+v", tc.req.Method, tc.resp.Status, s.counts, u)
		}
	}
}

// referenceJSONUsage is what a JSON body counts read whole: parseUsage's
// usage of an object; addUsage's of each object of an array in turn (the
// last, cut short, too).
func referenceJSONUsage(body []byte) core.Usage {
	i := skipSpace(body, 0)
	if i >= len(body) || body[i] != '[' {
		return parseUsage(body)
	}
	var u core.Usage
	for i = skipSpace(body, i+1); i < len(body); {
		end := valueEnd(body, i)
		if end < 0 {
			addUsage(body[i:], &u)
			break
		}
		addUsage(body[i:end], &u)
		if i = skipSpace(body, end); i >= len(body) || body[i] != ',' {
			break
		}
		i = skipSpace(body, i+1)
	}
	return u
}

// FuzzJSONUsage checks that a valid JSON body, cut short anywhere and read
// in reads of any size, counts as it does read whole.
func FuzzJSONUsage(f *testing.F) {
	f.Add([]byte(`{"id":"x","choices":[{"text":"\"usage\":{\"total_tokens\":9}"}],"usage":{"prompt_tokens":3,"completion_tokens":5},"usage":{"prompt_tokens":4}}`), 5, 1000)
	f.Add([]byte(`[{"usageMetadata":{"promptTokenCount":2,"totalTokenCount":2}},{"usageMetadata":{"promptTokenCount":2,"candidatesTokenCount":5,"totalTokenCount":7}}]`), 1, 90)
	f.Add([]byte(`{"message":{"usage":{"input_tokens":12}},"usage":{"output_tokens":30},"usage":null,"response":{"usage":{"input_tokens":1}}}`), 3, 200)
	f.Add([]byte(` {"a" : [1, {"usage": {"total_tokens": 1}}], "usage" : {"total_tokens" : 12 } , "b":true}`), 2, 70)
	f.Fuzz(func(t *testing.T, body []byte, split, cut int) {
		if !json.Valid(body) {
			return
		}
		split = max(1, split%97)
		body = body[:max(0, min(len(body), cut))]
		var j jsonUsage
		var got core.Usage
		ok := true
		for b := body; len(b) > 0 && ok; {
			n := min(split, len(b))
			ok = j.write(b[:n], &got)
			b = b[n:]
		}
		if !ok {
			if i := skipSpace(body, 0); i < len(body) && body[i] == '{' {
				t.Fatalf("%q in reads of %d: given up", body, split)
			}
			return // not an object or an array of objects
		}
		j.end(&got)
		if want := referenceJSONUsage(body); got != want {
			t.Fatalf("%q in reads of %d: %+v, read whole: %+v", body, split, got, want)
		}
	})
}

// FuzzUsageScanFrames: any bytes, in any reads, are read without a panic,
// and a stream of frames reads the same in reads of one byte as whole.
func FuzzUsageScanFrames(f *testing.F) {
	f.Add(append(awsstreamtest.Event("metadata", `{"usage":{"inputTokens":6}}`), testChunk(`{"usage":{"output_tokens":2}}`)...), 3)
	f.Add(awsstreamtest.Event("chunk", `{"bytes":"e30="}`)[:20], 1)
	f.Add([]byte{0, 0, 0, 16, 0, 0, 0, 0}, 2)
	f.Fuzz(func(t *testing.T, body []byte, split int) {
		split = max(1, split%64)
		got, _ := scanned(core.ContentTypeAWSEventStream, nil, body, split)
		if whole, _ := scanned(core.ContentTypeAWSEventStream, nil, body, len(body)+1); got != whole {
			t.Fatalf("in reads of %d bytes: %+v; whole: %+v", split, got, whole)
		}
	})
}

func TestProxiedModel(t *testing.T) {
	for _, tc := range []struct{ path, body, want string }{
		{"/models/gemini-2.0-flash:generateContent", `{"contents":[]}`, "gemini-2.0-flash"},
		{"/models/gemini-2.0-flash:streamGenerateContent", "", "gemini-2.0-flash"},
		{"/models/gemini-2.0-flash%3AgenerateContent", "", "gemini-2.0-flash"},
		{"/publishers/google/models/gemini-2.5-flash:generateContent", `{"model":"other"}`, "gemini-2.5-flash"},
		{"/projects/p/locations/us-east5/publishers/anthropic/models/claude-sonnet-4@20250514:rawPredict", "", "claude-sonnet-4@20250514"},
		{"/model/anthropic.claude-v2%3A1/invoke", "", "anthropic.claude-v2:1"},
		{"/model/us.anthropic.claude-3-haiku-20240307-v1:0/converse-stream", "", "us.anthropic.claude-3-haiku-20240307-v1:0"},
		{"/model/arn%3Aaws%3Abedrock%3Aus-east-1%3A%3Afoundation-model%2Famazon.nova-pro-v1%3A0/converse", "", "amazon.nova-pro-v1:0"},
		{"/model/x", `{"model":"from-body"}`, "from-body"},       // no action: not Bedrock's path
		{"/models/gpt-4o", `{"model":"from-body"}`, "from-body"}, // no method: a model's resource
		{"/foo/chat", ` {"messages":[],"model" : "my-\u006dodel"}`, "my-model"},
		{"/foo/chat", `{"model":"a","model":"b"}`, "b"},
		{"/foo/chat", `{"model":7}`, ""},
		{"/foo/chat", `{"model":"cut`, ""},
		{"/foo/chat", `--boundary` + "\r\n" + `model`, ""},
		{"/foo/chat", "", ""},
	} {
		if got := proxiedModel(&core.Request{Path: tc.path, Body: []byte(tc.body)}); got != tc.want {
			t.Errorf("%s %s: %q, want %q", tc.path, tc.body, got, tc.want)
		}
	}
}

func TestJSONType(t *testing.T) {
	for ct, want := range map[string]bool{
		"application/json": true, "Application/JSON; charset=UTF-8": true, " application/json ;x=1": true, "application/vnd.api+json": true,
		"application/x-ndjson": false, "text/plain": false, "": false, "+json": false, "application/jsonl": false,
	} {
		if got := jsonType(ct); got != want {
			t.Errorf("jsonType(%q) = %v", ct, got)
		}
	}
}
