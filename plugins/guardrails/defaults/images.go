package defaults

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"maps"
	"mime"
	"net/http"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/llm-gateway/gateway/core/netguard"
	"github.com/llm-gateway/gateway/hooks"
)

// inlineImageUrls fetches the http(s) image URLs of a request's messages
// and replaces each with a data: URL, for providers that cannot fetch
// images themselves (or should not reach the URL's host).

const (
	defaultMaxImageBytes = 20 << 20
	maxMaxImageBytes     = 100 << 20
	defaultImageTimeout  = 30000
	maxImagesPerRequest  = 64
	imageFetchParallel   = 4
)

type inlineImagesCfg struct {
	providers []string
	maxBytes  int64
	timeout   time.Duration
}

// imageSite is one place in the (copied) body that holds an image URL,
// with the function that replaces it.
type imageSite struct {
	url string
	set func(mediaType, b64 string)
}

// collectImages walks the messages (chat, Anthropic) and input (Responses)
// of a body copy and returns every image URL site: OpenAI
// {"type":"image_url","image_url":{"url"}|"<url>"}, Responses
// {"type":"input_image","image_url":"<url>"} and Anthropic
// {"type":"image","source":{"type":"url","url"}}.
func collectImages(body map[string]any) []imageSite {
	var sites []imageSite
	var walk func(v any, depth int)
	walk = func(v any, depth int) {
		if depth > 32 {
			return
		}
		switch x := v.(type) {
		case []any:
			for _, e := range x {
				walk(e, depth+1)
			}
		case map[string]any:
			typ, _ := x["type"].(string)
			switch typ {
			case "image_url":
				switch iu := x["image_url"].(type) {
				case map[string]any:
					if s, ok := iu["url"].(string); ok {
						sites = append(sites, imageSite{s, func(mt, b string) { iu["url"] = dataURL(mt, b) }})
					}
				case string:
					sites = append(sites, imageSite{iu, func(mt, b string) { x["image_url"] = dataURL(mt, b) }})
				}
				return
			case "input_image":
				if s, ok := x["image_url"].(string); ok {
					sites = append(sites, imageSite{s, func(mt, b string) { x["image_url"] = dataURL(mt, b) }})
				}
				return
			case "image":
				if src, ok := x["source"].(map[string]any); ok && src["type"] == "url" {
					if s, ok := src["url"].(string); ok {
						sites = append(sites, imageSite{s, func(mt, b string) {
							x["source"] = map[string]any{"type": "base64", "media_type": mt, "data": b}
						}})
					}
				}
				return
			}
			for _, k := range slices.Sorted(maps.Keys(x)) {
				if k == "content" || k == "input" || k == "messages" {
					walk(x[k], depth+1)
				}
			}
		}
	}
	walk(body["messages"], 0)
	walk(body["input"], 0)
	return sites
}

func dataURL(mediaType, b64 string) string { return "data:" + mediaType + ";base64," + b64 }

// fetchImage downloads one image and returns its media type and base64
// content.
func fetchImage(ctx context.Context, raw string, maxBytes int64) (mediaType, b64 string, size int, err error) {
	u, err := netguard.CheckURL(raw)
	if err != nil {
		return "", "", 0, fmt.Errorf("image URL: %v", err)
	}
	res, err := doRequest(ctx, "image", http.MethodGet, u, http.Header{"Accept": {"image/*"}}, nil, maxBytes)
	if err != nil {
		if errors.Is(err, errTooLarge) {
			return "", "", 0, fmt.Errorf("image %s is larger than maxSizeBytes (%d)", redactURL(u), maxBytes)
		}
		return "", "", 0, err
	}
	if res.status < 200 || res.status > 299 {
		return "", "", 0, fmt.Errorf("image %s: status %d", redactURL(u), res.status)
	}
	mt, _, err := mime.ParseMediaType(res.header.Get("Content-Type"))
	if err != nil || !strings.HasPrefix(mt, "image/") {
		return "", "", 0, fmt.Errorf("image %s: content type %q is not an image", redactURL(u), res.header.Get("Content-Type"))
	}
	if len(res.body) == 0 {
		return "", "", 0, fmt.Errorf("image %s: empty body", redactURL(u))
	}
	return mt, base64.StdEncoding.EncodeToString(res.body), len(res.body), nil
}

var inlineImageUrls = &check[inlineImagesCfg]{
	waits: true, // fetches the images
	parse: func(p *params) inlineImagesCfg {
		return inlineImagesCfg{
			providers: p.stringList("providers", false, false),
			maxBytes:  p.integer("maxSizeBytes", defaultMaxImageBytes, 1, maxMaxImageBytes),
			timeout:   time.Duration(p.integer("timeoutMs", defaultImageTimeout, 1, 600000)) * time.Millisecond,
		}
	},
	run: func(ctx context.Context, in *hooks.CheckInput, c inlineImagesCfg) (hooks.CheckResult, error) {
		if in.Stage == hooks.AfterResponse {
			return hooks.CheckResult{Verdict: true, Data: map[string]any{
				"explanation": "inlineImageUrls runs before the request only; nothing to do.",
			}}, nil
		}
		provider := ""
		if in.Request != nil {
			provider = in.Request.Target.Provider
		}
		if len(c.providers) > 0 && !contains(c.providers, provider) {
			return hooks.CheckResult{Verdict: true, Data: map[string]any{
				"provider": provider, "inlined": 0,
				"explanation": fmt.Sprintf("Provider %q is not one of the providers of this check; images left as they are.", provider),
			}}, nil
		}
		body := in.RequestJSON()
		if body == nil {
			return hooks.CheckResult{}, errNoRequest
		}
		cp := hooks.CloneJSON(body).(map[string]any)
		var sites []imageSite
		for _, s := range collectImages(cp) {
			if !strings.HasPrefix(strings.ToLower(s.url), "data:") {
				sites = append(sites, s)
			}
		}
		if len(sites) == 0 {
			return hooks.CheckResult{Verdict: true, Data: map[string]any{
				"provider": provider, "inlined": 0, "explanation": "The request has no image URLs to inline.",
			}}, nil
		}
		byURL := map[string][]imageSite{}
		for _, s := range sites {
			byURL[s.url] = append(byURL[s.url], s)
		}
		if len(byURL) > maxImagesPerRequest {
			return hooks.CheckResult{}, fmt.Errorf("the request has %d image URLs; at most %d are inlined", len(byURL), maxImagesPerRequest)
		}
		urls := slices.Sorted(maps.Keys(byURL))
		ctx, cancel := context.WithTimeout(ctx, c.timeout)
		defer cancel()
		type fetched struct {
			mt, b64 string
			size    int
			err     error
		}
		results := make([]fetched, len(urls))
		sem := make(chan struct{}, imageFetchParallel)
		var wg sync.WaitGroup
		for i, raw := range urls {
			wg.Add(1)
			go func() {
				defer wg.Done()
				sem <- struct{}{}
				defer func() { <-sem }()
				mt, b, n, err := fetchImage(ctx, raw, c.maxBytes)
				results[i] = fetched{mt, b, n, err}
			}()
		}
		wg.Wait()
		var errs []string
		total := 0
		for i, raw := range urls {
			r := results[i]
			if r.err != nil {
				errs = append(errs, r.err.Error())
				continue
			}
			total += r.size
			for _, s := range byURL[raw] {
				s.set(r.mt, r.b64)
			}
		}
		if len(errs) > 0 {
			sort.Strings(errs)
			return hooks.CheckResult{}, fmt.Errorf("could not inline %d of %d image(s): %s", len(errs), len(urls), strings.Join(errs, "; "))
		}
		out, err := jsonMarshal(cp)
		if err != nil {
			return hooks.CheckResult{}, err
		}
		return hooks.CheckResult{Verdict: true, Transformed: out, Data: map[string]any{
			"provider": provider, "inlined": len(sites), "images": len(urls), "bytes": total,
			"explanation": fmt.Sprintf("Inlined %d image URL(s) as data URLs.", len(sites)),
		}}, nil
	},
}
