package pipeline

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"slices"

	"github.com/llm-gateway/gateway/core"
	"github.com/llm-gateway/gateway/core/config"
	"github.com/llm-gateway/gateway/plugins/cache"
)

// cacheable are the endpoints whose answers may be cached; files, batches,
// fine-tunes, uploads and the generic proxy are not.
var cacheable = map[core.Endpoint]bool{
	core.EndpointChatComplete: true, core.EndpointComplete: true, core.EndpointEmbed: true,
	core.EndpointImageGenerate: true, core.EndpointRerank: true, core.EndpointResponses: true,
	core.EndpointMessages: true, core.EndpointModeration: true, core.EndpointCreateSpeech: true,
}

// maxCachedStream bounds the bytes of a streamed answer kept for the cache.
const maxCachedStream = 8 << 20

// cacheStep is one leaf's use of the cache.
type cacheStep struct {
	status string
	// hit is the cached answer, when there is one.
	hit *core.Response
	// save stores an answer; nil when this request is not to be cached.
	save func(e *cache.Entry)
}

// cacheLookup looks the request up under its leaf's cache settings.
func (w *walk) cacheLookup(ctx context.Context, req *core.Request, l *config.Leaf, u *url.URL) cacheStep {
	cs := cacheStep{status: string(cache.StatusDisabled)}
	if l.Cache == nil || w.p.cache == nil || !cacheable[req.Endpoint] || req.Method != http.MethodPost {
		return cs
	}
	mode, err := cache.NewMode(l.Cache.Mode)
	if err != nil {
		slog.Warn("cache mode unavailable", "mode", l.Cache.Mode, "error", err)
		return cs
	}
	q := cache.NewQuery(req.Endpoint, u.String(), cacheScope(req), req.Body, l.Cache)
	q.ForceRefresh = req.CacheForceRefresh
	q.Embed = w.embedder(req, l)
	entry, status, err := mode.Lookup(ctx, w.p.cache, q)
	if err != nil {
		slog.Warn("cache lookup failed; calling the provider", "trace_id", req.TraceID, "error", err)
	}
	cs.status = string(status)
	if entry != nil && status.Hit() {
		cs.hit = &core.Response{Status: entry.Status, Header: http.Header(entry.Header)}
		if entry.Stream {
			cs.hit.Stream, cs.hit.SSE = io.NopCloser(bytes.NewReader(entry.Body)), true
		} else {
			cs.hit.Body = entry.Body
		}
		return cs
	}
	if status == cache.StatusDisabled {
		return cs // the mode does not cache this request (cache.Mode: no Save)
	}
	cs.save = func(e *cache.Entry) {
		now := w.p.now()
		e.CreatedAt, e.ExpiresAt = now, cache.Expiry(l.Cache, now)
		// A fresh context: the request's may be done by the time a stream ends.
		if err := mode.Save(context.WithoutCancel(ctx), w.p.cache, q, e); err != nil {
			slog.Warn("storing an answer in the cache failed", "trace_id", req.TraceID, "error", err)
		}
	}
	return cs
}

// cachedHeader keeps the headers a cached answer is replayed with: its
// type, and its encoding when the body was passed on still encoded (the
// body is cached as it was sent, so a replay must say how to read it).
func cachedHeader(h http.Header) map[string][]string {
	out := map[string][]string{}
	for _, name := range [...]string{"Content-Type", "Content-Encoding"} {
		if v := h.Values(name); len(v) > 0 {
			out[name] = v
		}
	}
	return out
}

// saveBody caches a complete answer.
func (cs cacheStep) saveBody(resp *core.Response) {
	cs.save(&cache.Entry{Status: resp.Status, Header: cachedHeader(resp.Header), Body: resp.Body})
}

// teeStream passes a streamed answer through while keeping a copy, cached
// only when the stream ends cleanly and fits the limit.
func (cs cacheStep) teeStream(stream io.ReadCloser, resp *core.Response) io.ReadCloser {
	return &teeSave{ReadCloser: stream, save: func(body []byte) {
		cs.save(&cache.Entry{Status: resp.Status, Header: cachedHeader(resp.Header), Body: body, Stream: true})
	}}
}

type teeSave struct {
	io.ReadCloser
	buf  bytes.Buffer
	over bool
	done bool
	save func([]byte)
}

func (t *teeSave) Read(p []byte) (int, error) {
	n, err := t.ReadCloser.Read(p)
	if !t.over {
		if t.buf.Len()+n > maxCachedStream {
			t.over = true
			t.buf = bytes.Buffer{}
		} else {
			t.buf.Write(p[:n])
		}
	}
	if err == io.EOF && !t.over && !t.done {
		t.done = true
		t.save(t.buf.Bytes())
	}
	return n, err
}

// embedder returns the function the semantic cache embeds text with: a
// call to the embedding provider named in the leaf's cache settings. Without
// an api_key of its own it uses the request's key when the providers match,
// at the host that key is for when the embedding names none (the caller's
// x-gateway-custom-host, never the provider's public URL in its place); a
// stored (managed) key goes only to its integration's host, never to the
// embedding's custom_host.
func (w *walk) embedder(req *core.Request, l *config.Leaf) func(context.Context, string) ([]float32, error) {
	e := l.Cache.Embedding
	if e == nil {
		return nil
	}
	return func(ctx context.Context, text string) ([]float32, error) {
		t := core.Target{Provider: e.Provider, APIKey: e.APIKey, BaseURL: e.CustomHost, CustomHost: e.CustomHost != ""}
		if rt := req.Target; t.APIKey == "" && t.Provider == rt.Provider {
			switch {
			case !rt.Managed:
				t.APIKey = rt.APIKey
				if !t.CustomHost {
					t.BaseURL, t.CustomHost = rt.BaseURL, rt.CustomHost
				}
			case !t.CustomHost:
				t.APIKey, t.BaseURL, t.Headers = rt.APIKey, rt.BaseURL, rt.Headers
			}
		}
		prov, ok := w.p.providers[t.Provider]
		if !ok {
			return nil, fmt.Errorf("unknown embedding provider %q", t.Provider)
		}
		body, _ := json.Marshal(map[string]any{"model": e.Model, "input": text})
		ereq := &core.Request{Endpoint: core.EndpointEmbed, Method: http.MethodPost, Path: "/embeddings",
			Header: http.Header{"Content-Type": {"application/json"}}, Body: body}
		hr, err := prov.BuildRequest(ctx, ereq, &t)
		if err != nil {
			return nil, err
		}
		client := w.p.client
		if t.CustomHost {
			client = w.p.guarded
		}
		resp, err := client.Do(hr)
		if err != nil {
			return nil, err
		}
		defer resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return nil, fmt.Errorf("embedding provider %s answered %d", t.Provider, resp.StatusCode)
		}
		var out struct {
			Data []struct {
				Embedding []float32 `json:"embedding"`
			} `json:"data"`
		}
		if err := json.NewDecoder(io.LimitReader(resp.Body, 16<<20)).Decode(&out); err != nil {
			return nil, fmt.Errorf("decode embedding: %w", err)
		}
		if len(out.Data) == 0 || len(out.Data[0].Embedding) == 0 {
			return nil, fmt.Errorf("embedding provider %s returned no embedding", t.Provider)
		}
		return out.Data[0].Embedding, nil
	}
}

// cacheScope is the namespace a request's answers are cached under: its
// workspace (or, for an organisation key, its organisation), the
// x-gateway-cache-namespace header and, when strict reference compliance
// is off, a mark of it: answers are cached translated, and a translation
// may add fields then (Anthropic's content_blocks). Workspaces never share
// answers. Without a namespace, the request's metadata and the client
// headers it forwards to the provider are part of it too (a namespace
// replaces them, as in the reference): a forwarded header changes the
// provider's request, so its answer is not another's.
func cacheScope(req *core.Request) string {
	scope := ""
	if p := req.Principal; p != nil {
		if p.WorkspaceID != "" {
			scope = "ws:" + p.WorkspaceID
		} else {
			scope = "org:" + p.OrganisationID
		}
	}
	if !req.StrictCompliance {
		scope += "\nnot strict"
	}
	if req.CacheNamespace != "" {
		return scope + "\nnamespace " + req.CacheNamespace
	}
	if len(req.Metadata) > 0 {
		meta, _ := json.Marshal(req.Metadata) // keys sorted
		scope += "\nmetadata " + string(meta)
	}
	names := slices.Clone(req.Target.ForwardHeaders)
	for i, n := range names {
		names[i] = http.CanonicalHeaderKey(n)
	}
	slices.Sort(names)
	for _, n := range slices.Compact(names) {
		v, _ := json.Marshal(req.Header.Values(n))
		scope += "\nheader " + n + " " + string(v)
	}
	return scope
}
