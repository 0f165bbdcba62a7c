package client

import (
	"bytes"
	"context"
	"maps"
	"mime/multipart"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// Object is a record as the API returns it, for resources whose shape is
// richer than a fixed struct (configs, guardrails, integrations, ...).
type Object map[string]any

// Str returns field k as a string ("" when absent or not a string).
func (o Object) Str(k string) string { s, _ := o[k].(string); return s }

// Created is the answer to a create: the new record's id and slug, and the
// version for versioned resources.
type Created struct {
	ID        string `json:"id"`
	Slug      string `json:"slug"`
	VersionID string `json:"version_id"`
	Object    string `json:"object"`
}

// resource is the create/list/get/update/delete shape most admin
// resources share; the typed resources below embed it.
type resource struct {
	c    *Client
	path string
}

// Create posts body (a struct or a map) and returns the new record's ids.
func (r resource) Create(ctx context.Context, body any) (Created, error) {
	var out Created
	return out, r.c.do(ctx, http.MethodPost, r.path, nil, body, &out)
}

// List lists records; filters are the resource's query parameters, e.g.
// url.Values{"workspace_id": {"default"}}.
func (r resource) List(ctx context.Context, filters url.Values, p Page) (List[Object], error) {
	var out List[Object]
	return out, r.c.do(ctx, http.MethodGet, r.path, listQuery(filters, p), nil, &out)
}

// listQuery is the query of a list: a copy of filters with page p.
func listQuery(filters url.Values, p Page) url.Values {
	q := url.Values{}
	maps.Copy(q, filters)
	p.set(q)
	return q
}

// Get reads one record by id or slug.
func (r resource) Get(ctx context.Context, id string) (Object, error) {
	var out Object
	return out, r.c.do(ctx, http.MethodGet, r.path+"/"+esc(id), nil, nil, &out)
}

// Update puts body on a record and returns the API's answer (e.g. a new
// version_id).
func (r resource) Update(ctx context.Context, id string, body any) (Object, error) {
	var out Object
	return out, r.c.do(ctx, http.MethodPut, r.path+"/"+esc(id), nil, body, &out)
}

// Delete deletes (or archives) a record.
func (r resource) Delete(ctx context.Context, id string) error {
	return r.c.do(ctx, http.MethodDelete, r.path+"/"+esc(id), nil, nil, nil)
}

// Configs is /v1/configs: saved routing configs, versioned.
type Configs struct{ c *Client }

func (r *Configs) res() resource { return resource{r.c, "/configs"} }

// Create saves config under name in a workspace (id or slug; a workspace
// key may leave it empty).
func (r *Configs) Create(ctx context.Context, name, workspaceID string, config any, isDefault bool) (Created, error) {
	body := map[string]any{"name": name, "config": config}
	if workspaceID != "" {
		body["workspace_id"] = workspaceID
	}
	if isDefault {
		body["is_default"] = 1
	}
	return r.res().Create(ctx, body)
}

// List lists saved configs, optionally of one workspace.
func (r *Configs) List(ctx context.Context, workspaceID string, p Page) (List[Object], error) {
	return r.res().List(ctx, query(Page{}, "workspace_id", workspaceID), p)
}

// Get reads a saved config with its current version.
func (r *Configs) Get(ctx context.Context, slug string) (Object, error) {
	return r.res().Get(ctx, slug)
}

// Update saves a new version; fields are name, config and status.
func (r *Configs) Update(ctx context.Context, slug string, fields map[string]any) (Object, error) {
	return r.res().Update(ctx, slug, fields)
}

// Delete deletes a saved config.
func (r *Configs) Delete(ctx context.Context, slug string) error { return r.res().Delete(ctx, slug) }

// Versions lists every version of a saved config.
func (r *Configs) Versions(ctx context.Context, slug string, p Page) (List[Object], error) {
	var out List[Object]
	return out, r.c.do(ctx, http.MethodGet, "/configs/"+esc(slug)+"/versions", query(p), nil, &out)
}

// Guardrails is /v1/guardrails.
type Guardrails struct{ resource }

// Integrations is /v1/integrations: provider credentials at organisation
// or workspace level.
type Integrations struct{ resource }

// IntegrationModels is a page of an integration's models ({slug, enabled,
// is_custom, pricing_config}) with its allow_all_models.
type IntegrationModels struct {
	List[Object]
	AllowAllModels bool `json:"allow_all_models"`
}

// Models reads the models an integration lists and whether it allows the
// others.
func (r *Integrations) Models(ctx context.Context, slug string, p Page) (IntegrationModels, error) {
	var out IntegrationModels
	return out, r.c.do(ctx, http.MethodGet, r.path+"/"+esc(slug)+"/models", listQuery(nil, p), nil, &out)
}

// SetModels merges models ({slug, enabled, is_custom, pricing_config}) into
// the integration's by slug and, when allowAll is not nil, sets
// allow_all_models. Requests through its providers for a disabled model,
// or for an unlisted one when allow_all_models is false, are refused.
func (r *Integrations) SetModels(ctx context.Context, slug string, models []map[string]any, allowAll *bool) error {
	body := map[string]any{}
	if models != nil {
		body["models"] = models
	}
	if allowAll != nil {
		body["allow_all_models"] = *allowAll
	}
	return r.c.do(ctx, http.MethodPut, r.path+"/"+esc(slug)+"/models", nil, body, nil)
}

// Providers is /v1/providers: workspace handles on integrations, used in
// requests as x-gateway-provider: @<slug>.
type Providers struct{ resource }

// VirtualKeys is /v1/virtual-keys, the older form of providers.
type VirtualKeys struct{ resource }

// SecretReferences is /v1/secret-references: pointers to secrets in Vault,
// AWS Secrets Manager or Azure Key Vault.
type SecretReferences struct{ resource }

// Plugins is /v1/plugins: WASM guardrail plugins.
type Plugins struct{ c *Client }

// Upload sends a new plugin (manifest JSON and .wasm module bytes).
func (r *Plugins) Upload(ctx context.Context, manifest []byte, module []byte) (Object, error) {
	return r.upload(ctx, http.MethodPost, "/plugins", manifest, module)
}

// UploadVersion sends a new version of plugin id.
func (r *Plugins) UploadVersion(ctx context.Context, id string, manifest []byte, module []byte) (Object, error) {
	return r.upload(ctx, http.MethodPut, "/plugins/"+esc(id), manifest, module)
}

func (r *Plugins) upload(ctx context.Context, method, path string, manifest, module []byte) (Object, error) {
	var buf bytes.Buffer
	mw := multipart.NewWriter(&buf)
	if err := mw.WriteField("manifest", string(manifest)); err != nil {
		return nil, err
	}
	fw, err := mw.CreateFormFile("module", "module.wasm")
	if err != nil {
		return nil, err
	}
	if _, err := fw.Write(module); err != nil {
		return nil, err
	}
	if err := mw.Close(); err != nil {
		return nil, err
	}
	var out Object
	return out, r.c.send(ctx, method, path, nil, &buf, mw.FormDataContentType(), &out)
}

// List lists plugins.
func (r *Plugins) List(ctx context.Context, p Page) (List[Object], error) {
	return resource{r.c, "/plugins"}.List(ctx, nil, p)
}

// Get reads a plugin with its versions.
func (r *Plugins) Get(ctx context.Context, id string) (Object, error) {
	return resource{r.c, "/plugins"}.Get(ctx, id)
}

// Delete removes a plugin no config or guardrail uses.
func (r *Plugins) Delete(ctx context.Context, id string) error {
	return resource{r.c, "/plugins"}.Delete(ctx, id)
}

// Logs is /v1/logs: the request log.
type Logs struct{ c *Client }

// List lists request logs; filters are e.g. trace_id, status,
// time_of_generation_min, workspace_id.
func (r *Logs) List(ctx context.Context, filters url.Values, p Page) (List[Object], error) {
	return resource{r.c, "/logs"}.List(ctx, filters, p)
}

// Get reads one request log.
func (r *Logs) Get(ctx context.Context, id string) (Object, error) {
	return resource{r.c, "/logs"}.Get(ctx, id)
}

// Groups is the answer of the grouped analytics: one row per group, the
// range grouped, and whether the gateway's cap on the records it reads
// left the oldest of the range out.
type Groups struct {
	List[Object]
	From      time.Time `json:"time_of_generation_min"`
	To        time.Time `json:"time_of_generation_max"`
	Truncated bool      `json:"truncated"`
}

// Groups groups the request log by groupBy (model, status_code, api_key,
// ...; GET /v1/analytics/groups/{groupBy}) with the columns asked for
// (none: the request count only); filters are the log filters (status_code,
// metadata, time_of_generation_min, ...).
func (r *Logs) Groups(ctx context.Context, groupBy string, columns []string, filters url.Values, p Page) (Groups, error) {
	q := listQuery(filters, p)
	if len(columns) > 0 {
		q.Set("columns", strings.Join(columns, ","))
	}
	var out Groups
	return out, r.c.do(ctx, http.MethodGet, "/analytics/groups/"+esc(groupBy), q, nil, &out)
}

// Graph is the answer of an analytics graph: the summary of the range,
// its data points (one per bucket, oldest first; one per status for
// errors/status-codes), the bucket size, the range drawn, and whether the
// gateway's cap on the records it reads left the oldest of the range out.
type Graph struct {
	Object     string    `json:"object"`
	Summary    Object    `json:"summary"`
	DataPoints []Object  `json:"data_points"`
	Bucket     string    `json:"bucket"`
	From       time.Time `json:"time_of_generation_min"`
	To         time.Time `json:"time_of_generation_max"`
	Truncated  bool      `json:"truncated"`
}

// Graph draws the request log as the graph kind (requests, cost, latency,
// errors/rate, ...; GET /v1/analytics/graphs/{kind}); filters are the log
// filters (status_code, metadata, time_of_generation_min, ...) and bucket
// (minute, hour or day; by default by the range's length).
func (r *Logs) Graph(ctx context.Context, kind string, filters url.Values) (Graph, error) {
	segments := strings.Split(kind, "/")
	for i, s := range segments {
		segments[i] = esc(s)
	}
	var out Graph
	return out, r.c.do(ctx, http.MethodGet, "/analytics/graphs/"+strings.Join(segments, "/"), listQuery(filters, Page{}), nil, &out)
}

// AuditLogs is /v1/audit-logs.
type AuditLogs struct{ c *Client }

// List lists audit records between from and to; filters are the other
// query parameters (method, resource_type, action, user_id, ...).
func (r *AuditLogs) List(ctx context.Context, from, to time.Time, filters url.Values, p Page) (List[Object], error) {
	q := url.Values{"start_time": {from.UTC().Format(time.RFC3339Nano)}, "end_time": {to.UTC().Format(time.RFC3339Nano)}}
	maps.Copy(q, filters)
	return resource{r.c, "/audit-logs"}.List(ctx, q, p)
}
