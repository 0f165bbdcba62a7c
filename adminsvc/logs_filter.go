package adminsvc

import (
	"encoding/json"
	"errors"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/llm-gateway/gateway/store"
)

// parseLogFilter reads the request-log filters GET /v1/logs and the
// analytics routes share: trace_id, status, status_code, api_key_ids,
// configs, prompt_slug, ai_org_model, metadata, cost_min, cost_max and
// time_of_generation_min/max. Bad values are reported into p, naming the
// parameter. workspace_id, paging and the caller's visibility are the
// routes' to apply.
func parseLogFilter(get func(string, ...string) string, p *problems) store.LogFilter {
	f := store.LogFilter{TraceID: get("trace_id")}
	if v := get("status"); v != "" {
		f.Status = parseStatusCode("status", v, p)
	}
	if items := queryList(get, "status_code", "HTTP status codes such as 200,429", p); items != nil {
		f.StatusCodes = make([]int, len(items))
		for i, v := range items {
			f.StatusCodes[i] = parseStatusCode("status_code", v, p)
		}
	}
	f.RequestedKeyIDs = queryList(get, "api_key_ids", "API key ids", p)
	f.Configs = queryList(get, "configs", "saved config ids or slugs", p)
	f.PromptSlugs = queryList(get, "prompt_slug", "prompt slugs", p)
	for _, v := range queryList(get, "ai_org_model", "provider__model pairs such as openai__gpt-4o", p) {
		provider, model, ok := strings.Cut(v, "__")
		if !ok || provider == "" || model == "" {
			p.add("ai_org_model", "must be a comma-separated list of provider__model pairs such as openai__gpt-4o, got %q", v)
			continue
		}
		f.Models = append(f.Models, store.ProviderModel{Provider: provider, Model: model})
	}
	if v := get("metadata"); v != "" {
		if err := json.Unmarshal([]byte(v), &f.Metadata); err != nil || f.Metadata == nil {
			p.add("metadata", `must be a JSON object of strings such as {"env":"prod"}, got %q`, v)
		}
	}
	f.CostMin = parseCost(get, "cost_min", p)
	f.CostMax = parseCost(get, "cost_max", p)
	if f.CostMin != nil && f.CostMax != nil && *f.CostMax < *f.CostMin {
		p.add("cost_max", "must not be below cost_min")
	}
	f.From = parseTimeBound(get, "time_of_generation_min", p)
	f.To = parseTimeBound(get, "time_of_generation_max", p)
	if f.From != nil && f.To != nil && f.To.Before(*f.From) {
		p.add("time_of_generation_max", "must not be before time_of_generation_min")
	}
	return f
}

// parseTimeBound reads a bound on the records' time: nil when absent (or
// bad, reported into p), so that any time given, the zero time too,
// bounds the range.
func parseTimeBound(get func(string, ...string) string, name string, p *problems) *time.Time {
	if t, ok := parseTime(get(name), name, p); ok {
		return &t
	}
	return nil
}

// parseStatusCode reads one HTTP status code of parameter name.
func parseStatusCode(name, v string, p *problems) int {
	n, err := strconv.Atoi(v)
	if err != nil || n < 100 || n > 599 {
		p.add(name, "must be an HTTP status code such as 200, got %q", v)
	}
	return n
}

// queryList reads a comma-separated list parameter: nil when absent, and
// a problem (of what it must hold) when an item is empty.
func queryList(get func(string, ...string) string, name, what string, p *problems) []string {
	v := get(name)
	if v == "" {
		return nil
	}
	items := strings.Split(v, ",")
	for i, it := range items {
		if items[i] = strings.TrimSpace(it); items[i] == "" {
			p.add(name, "must be a comma-separated list of %s, got %q", what, v)
			return nil
		}
	}
	return items
}

// parseCost reads a bound on the cost in USD: nil when absent.
func parseCost(get func(string, ...string) string, name string, p *problems) *float64 {
	v := get(name)
	if v == "" {
		return nil
	}
	n, err := strconv.ParseFloat(v, 64)
	if err != nil || n < 0 || math.IsInf(n, 0) || math.IsNaN(n) {
		p.add(name, "must be a cost in USD ≥ 0 such as 0.25, got %q", v)
		return nil
	}
	return &n
}

// prepareFilter completes f from the store, once per query rather than
// per record: the saved configs it names by slug become their ids (records
// name the config by id), and f.Prices, the integrations' pricing
// overrides, are read when f bounds the cost or the answer shows it
// (withCost).
func prepareFilter(tx store.Tx, f *store.LogFilter, withCost bool) (err error) {
	for i, ref := range f.Configs {
		rec, err := store.ByIDOrSlug(tx, store.BucketConfigs, ref, func(r store.SavedConfig) string { return r.Slug })
		switch {
		case err == nil:
			f.Configs[i] = rec.ID
		case !errors.Is(err, store.ErrNotFound):
			return err
		}
	}
	if withCost || f.CostMin != nil || f.CostMax != nil {
		f.Prices, err = store.IntegrationPrices(tx)
	}
	return err
}
