// Package semantic is the "cache.semantic" plugin: besides exact matches, an
// answer is reused for an earlier request whose conversation is similar
// enough (cosine similarity of embeddings ≥ the configured threshold,
// default 0.95) and whose model and parameters are the same.
//
// Which requests: chat completions, completions and Anthropic messages
// (Endpoints). Every other endpoint (image generations, embeddings, ...) is
// cached by exact match only, as by the "cache.simple" mode, with its
// statuses (HIT, MISS, REFRESH): a similar prompt must not return an
// earlier, different image.
//
// What is compared:
//
//   - The text is the conversation of a chat body (each message's role and
//     text content, one "role: text" line per message) or a completion's
//     prompt. Such a body with neither is not cached by this mode: Lookup
//     answers DISABLED, after which the answer is not saved.
//   - Only requests of the same partition are compared. The partition hashes
//     the provider URL, the namespace and the canonicalised body without its
//     text: every parameter (model, temperature, stream, tools, ...), plus
//     the shape of the conversation (the number of messages, their roles and
//     any non-text part: images, tool calls, tool_call_id, name), and the
//     embedding provider and model the config names. So a different model,
//     temperature, image or tool call never gives a semantic hit, however
//     similar the text, and vectors of two embedding models are never
//     compared.
//
// A repeated identical request is an exact-key HIT without an embedding call.
// A request costs at most one embedding call, made by Lookup (also for a
// forced refresh, whose answer is stored with it), so Save never waits on
// the embedding provider: an embedding failure makes the lookup a SEMANTIC
// MISS (or REFRESH; the error is returned for logging only), and the answer
// is then stored for exact matches only.
package semantic

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/llm-gateway/gateway/core"
	"github.com/llm-gateway/gateway/core/config"
	"github.com/llm-gateway/gateway/plugins/cache"
	"github.com/llm-gateway/gateway/plugins/cache/simple"
)

// ID is the plugin's registry ID.
const ID = core.KindCache + ".semantic"

func init() {
	core.Register(core.PluginInfo{ID: ID, New: func() core.Plugin { return Mode{} }})
}

// Mode is the semantic cache mode.
type Mode struct{}

var _ cache.Mode = Mode{}

// Endpoints are the endpoints whose requests are matched semantically; the
// others are matched exactly (see the package doc).
var Endpoints = map[core.Endpoint]bool{
	core.EndpointChatComplete: true, core.EndpointComplete: true, core.EndpointMessages: true,
}

// Lookup implements cache.Mode. It sets q.Embedded (and q.Vector) when it
// calls Embed, so Save does not call it again.
func (Mode) Lookup(ctx context.Context, st cache.Store, q *cache.Query) (*cache.Entry, cache.Status, error) {
	if !Endpoints[q.Endpoint] {
		return simple.Mode{}.Lookup(ctx, st, q)
	}
	p, err := Parse(q.URL, q.Namespace, q.Body)
	if err != nil {
		return nil, cache.StatusDisabled, err
	}
	if !p.Cacheable {
		return nil, cache.StatusDisabled, nil
	}
	if q.ForceRefresh {
		// The vector is still needed to store the answer: taken now, so
		// Save never waits on the embedding provider after the answer.
		return nil, cache.StatusRefresh, embed(ctx, q, p)
	}
	e, ok, getErr := st.Get(ctx, q.Key)
	if ok {
		return e, cache.StatusHit, nil
	}
	if p.Text == "" {
		return nil, cache.StatusSemanticMiss, getErr
	}
	if err := embed(ctx, q, p); err != nil {
		return nil, cache.StatusSemanticMiss, errors.Join(getErr, err)
	}
	_, e, _, ok, err = st.Nearest(ctx, q.Partition, q.Vector, cache.Threshold(q.Settings))
	if ok {
		return e, cache.StatusSemanticHit, nil
	}
	return nil, cache.StatusSemanticMiss, errors.Join(getErr, err)
}

// partition is p's partition under the embedding model that makes its
// vectors (the embedding settings, when the config names them), so vectors
// of two embedding models are never compared.
func partition(p Parsed, s *config.Cache) string {
	if s == nil || s.Embedding == nil {
		return p.Partition
	}
	e := s.Embedding
	h := sha256.New()
	fmt.Fprintf(h, "%s\n%s\n%s\n%s\n", p.Partition, e.Provider, e.Model, e.CustomHost)
	return hex.EncodeToString(h.Sum(nil))
}

// embed sets q.Vector to the embedding of p's text (when it is not empty),
// with q.Partition, and marks q.Embedded, so a request costs at most one
// embedding call.
func embed(ctx context.Context, q *cache.Query, p Parsed) error {
	if p.Text == "" || q.Embedded {
		return nil
	}
	q.Embedded = true
	if q.Embed == nil {
		return cache.ErrNoEmbedder
	}
	vec, err := q.Embed(ctx, p.Text)
	if err != nil {
		return fmt.Errorf("cache: embed: %w", err)
	}
	q.Vector, q.Partition = vec, partition(p, q.Settings)
	return nil
}

// Save implements cache.Mode: e is stored under the exact key and, with the
// vector Lookup took, in the request's partition (both on q, so the body is
// not parsed again); without one (no text, no Embed, or the embedding call
// failed) under the exact key only. Save never calls the embedding
// provider: the answer it stores has been sent. As cache.Mode says, it
// follows a Lookup of q that did not answer DISABLED.
func (Mode) Save(ctx context.Context, st cache.Store, q *cache.Query, e *cache.Entry) error {
	if !Endpoints[q.Endpoint] {
		return simple.Mode{}.Save(ctx, st, q, e)
	}
	if q.Vector == nil {
		return st.Put(ctx, q.Key, e)
	}
	ent := *e
	ent.Vector = q.Vector
	return st.PutVector(ctx, q.Partition, q.Key, &ent)
}

// Parsed is a body split into the text that is embedded and the partition
// that must match exactly.
type Parsed struct {
	// Cacheable is false for bodies with neither messages nor prompt.
	Cacheable bool
	// Text is the conversation ("role: text" lines) or the prompt; empty
	// when the body has no text to compare (e.g. images only).
	Text string
	// Partition is the sha256 hex of URL, namespace and the canonical body
	// without its text.
	Partition string
}

// Parse splits a provider-bound JSON body (see the package doc).
func Parse(url, namespace string, body []byte) (Parsed, error) {
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	var obj map[string]any
	if err := dec.Decode(&obj); err != nil || obj == nil {
		return Parsed{}, fmt.Errorf("cache: semantic: body is not a JSON object")
	}
	msgs, hasMsgs := obj["messages"]
	prompt, hasPrompt := obj["prompt"]
	if !hasMsgs && !hasPrompt {
		return Parsed{}, nil
	}
	delete(obj, "messages")
	delete(obj, "prompt")
	shape := map[string]any{"body": obj}
	var text string
	if hasMsgs {
		var skel any
		text, skel = conversation(msgs)
		shape["messages"] = skel
	}
	if hasPrompt {
		t, ok := promptText(prompt)
		if ok {
			text = joinNonEmpty(text, t)
		} else {
			shape["prompt"] = prompt
		}
	}
	canon, err := json.Marshal(canonical(shape))
	if err != nil {
		return Parsed{}, fmt.Errorf("cache: semantic: %w", err)
	}
	h := sha256.New()
	fmt.Fprintf(h, "semantic\n%s\n%s\n", url, namespace)
	h.Write(canon)
	return Parsed{Cacheable: true, Text: text, Partition: hex.EncodeToString(h.Sum(nil))}, nil
}

// conversation returns the "role: text" lines of a messages array and its
// skeleton: each message without its text content.
func conversation(msgs any) (string, any) {
	arr, ok := msgs.([]any)
	if !ok {
		return "", msgs
	}
	var lines []string
	hasText := false
	skel := make([]any, 0, len(arr))
	for _, m := range arr {
		mm, ok := m.(map[string]any)
		if !ok {
			skel = append(skel, m)
			continue
		}
		sk := make(map[string]any, len(mm))
		for k, v := range mm {
			if k != "content" {
				sk[k] = v
			}
		}
		role, _ := mm["role"].(string)
		var t string
		switch c := mm["content"].(type) {
		case nil:
		case string:
			t = c
		case []any:
			var texts []string
			var rest []any
			for _, part := range c {
				pm, _ := part.(map[string]any)
				if s, isText := pm["text"].(string); isText && pm["type"] == "text" {
					texts = append(texts, s)
				} else {
					rest = append(rest, part)
				}
			}
			t = strings.Join(texts, "\n")
			if len(rest) > 0 {
				sk["content"] = rest
			}
		default:
			sk["content"] = c
		}
		if strings.TrimSpace(t) != "" {
			hasText = true
		}
		lines = append(lines, role+": "+t)
		skel = append(skel, sk)
	}
	if !hasText {
		return "", skel
	}
	return strings.Join(lines, "\n"), skel
}

// promptText returns a completion prompt's text: a string or an array of
// strings. Token arrays are not text.
func promptText(p any) (string, bool) {
	switch v := p.(type) {
	case string:
		return v, true
	case []any:
		parts := make([]string, 0, len(v))
		for _, x := range v {
			s, ok := x.(string)
			if !ok {
				return "", false
			}
			parts = append(parts, s)
		}
		return strings.Join(parts, "\n"), true
	}
	return "", false
}

func joinNonEmpty(a, b string) string {
	if a == "" {
		return b
	}
	if b == "" {
		return a
	}
	return a + "\n" + b
}

// canonical rewrites numbers to one spelling (1, 1.0 and 1e0 are equal);
// json.Marshal then sorts object keys.
func canonical(v any) any {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			x[k] = canonical(e)
		}
	case []any:
		for i, e := range x {
			x[i] = canonical(e)
		}
	case json.Number:
		if i, err := x.Int64(); err == nil {
			return json.Number(strconv.FormatInt(i, 10))
		}
		if f, err := x.Float64(); err == nil {
			return json.Number(strconv.FormatFloat(f, 'g', -1, 64))
		}
	}
	return v
}
