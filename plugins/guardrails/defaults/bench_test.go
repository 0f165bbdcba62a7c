package defaults

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/llm-gateway/gateway/core"
	"github.com/llm-gateway/gateway/hooks"
)

const benchSentence = "Revenue grew 4% to $12.3M this quarter. Contact ada@example.com or see https://docs.example.com/q3 for the details! "

// benchText is prose of about n bytes ending with a fenced JSON block.
func benchText(n int) string {
	tail := "\n```json\n{\"title\": \"Q3 report\", \"summary\": \"Revenue up\", \"pages\": 12}\n```\nThanks. Goodbye"
	var b strings.Builder
	for b.Len()+len(tail) < n {
		b.WriteString(benchSentence)
	}
	b.WriteString(tail)
	return b.String()
}

// BenchmarkChecks runs every check on a ~1 KB and a ~100 KB input,
// including parsing the body (a fresh CheckInput per call), and reports
// µs per call.
func BenchmarkChecks(b *testing.B) {
	testKeys(b)
	img := newServer(b, "127.0.0.1:0", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "image/png")
		w.Write(pngBytes)
	})
	sink := newServer(b, "127.0.0.1:0", func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		io.WriteString(w, `{"verdict": true, "data": {}}`)
	})
	token := sign(b, "RS256", "rsa-1", testRSA, claims(map[string]any{"iat": nil, "exp": nil}))
	jwks := mustJSON(map[string]any{"keys": []any{rsaJWK("rsa-1", testRSA)}})

	type bench struct {
		id, params string
		after      bool // runs on the answer
		mod        func(*core.Request, string) string
	}
	benches := []bench{
		{id: "regexMatch", params: `{"rule": "\\b\\d{3}-\\d{2}-\\d{4}\\b", "not": true}`, after: true},
		{id: "regexReplace", params: `{"rules": [{"pattern": "[\\w.]+@[\\w.]+\\.\\w+", "replacement": "[EMAIL]"}]}`, after: true},
		{id: "sentenceCount", params: `{"minSentences": 1, "maxSentences": 100000}`, after: true},
		{id: "wordCount", params: `{"minWords": 1, "maxWords": 100000}`, after: true},
		{id: "characterCount", params: `{"maxCharacters": 1000000}`, after: true},
		{id: "jsonSchema", params: `{"schema": {"type": "object", "required": ["title"], "properties": {"title": {"type": "string"}, "pages": {"type": "integer", "minimum": 1}}}}`, after: true},
		{id: "jsonKeys", params: `{"keys": ["title", "summary"], "operator": "all"}`, after: true},
		{id: "contains", params: `{"words": ["confidential", "internal only"], "operator": "none"}`, after: true},
		{id: "validUrls", params: `{}`, after: true},
		{id: "containsCode", params: `{"format": "SQL"}`, after: true},
		{id: "alluppercase", after: true},
		{id: "alllowercase", after: true},
		{id: "endsWith", params: `{"suffix": "Goodbye"}`, after: true},
		{id: "notNull", after: true},
		{id: "modelWhitelist", params: `{"models": ["gpt-4o", "gpt-4o-mini"]}`},
		{id: "modelRules", params: `{"rules": {"defaults": ["gpt-4o-mini"], "metadata": {"tier": {"pro": ["gpt-4o"]}}}}`},
		{id: "allowedRequestTypes", params: `{"allowedTypes": ["chatComplete"]}`},
		{id: "requiredMetadataKeys", params: `{"metadataKeys": ["team"]}`},
		{id: "requiredMetadataKeyPairs", params: `{"metadataPairs": {"team": "search"}}`},
		{id: "requestParamsCheck", params: `{"tools": {"blockedTypes": ["web_search"]}, "params": {"values": {"temperature": {"allowedValues": [0.2]}}}}`},
		{id: "addPrefix", params: `{"prefix": "Answer briefly: "}`},
		{id: "inlineImageUrls", params: `{}`, mod: func(_ *core.Request, text string) string {
			return `{"model":"gpt-4o","messages":[{"role":"user","content":[{"type":"text","text":` + q(text) + `},` +
				`{"type":"image_url","image_url":{"url":` + q(img.URL+"/cat.png") + `}}]}]}`
		}},
		{id: "jwt", params: `{"jwks": ` + jwks + `, "maxTokenAge": 0}`, mod: func(r *core.Request, _ string) string {
			r.Header.Set("Authorization", "Bearer "+token)
			return ""
		}},
		{id: "webhook", params: `{"webhookURL": ` + q(sink.URL+"/hook") + `}`},
		{id: "log", params: `{"logURL": ` + q(sink.URL+"/log") + `}`, after: true},
	}
	for _, size := range []int{1 << 10, 100 << 10} {
		text := benchText(size)
		for _, bc := range benches {
			b.Run(fmt.Sprintf("%s/%dKB", bc.id, size>>10), func(b *testing.B) {
				c := lookup(b, "default."+bc.id)
				p := jparams(b, bc.params)
				body := chatBody(text)
				req := newRequest(body)
				req.Metadata["team"] = "search"
				if bc.mod != nil {
					if nb := bc.mod(req, text); nb != "" {
						req.Body = []byte(nb)
					}
				}
				var resp *core.Response
				if bc.after {
					req = newRequest(chatBody("Summarise the report."))
					resp = newResponse(chatAnswer(text))
				}
				stage := hooks.BeforeRequest
				if bc.after {
					stage = hooks.AfterResponse
				}
				ctx := context.Background()
				for b.Loop() {
					in := &hooks.CheckInput{Stage: stage, Request: req, Response: resp, Parameters: p}
					if _, err := c.Run(ctx, in); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/1e3/float64(b.N), "µs/op")
			})
		}
	}
}
