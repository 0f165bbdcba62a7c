package adminsvc

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/llm-gateway/gateway/core"
	"github.com/llm-gateway/gateway/core/server"
	"github.com/llm-gateway/gateway/store"
)

// ScopeAuditLogsList is the scope of GET /audit-logs.
const ScopeAuditLogsList = "audit_logs.list"

// User types of an audit record: a person (JWT) or an API key.
const (
	UserTypeUser   = "user"
	UserTypeAPIKey = "api_key"
)

// AuditSink receives audit records (store.AuditWriter): Enqueue must not
// block; Flush returns once every record enqueued before it is stored.
type AuditSink interface {
	Enqueue(rec *store.AuditRecord)
	Flush()
}

// Audit records admin writes and failed authentications.
type Audit struct {
	sink AuditSink
	now  func() time.Time
}

// NewAudit records into sink, timestamping with now (time.Now when nil).
func NewAudit(sink AuditSink, now func() time.Time) *Audit {
	if now == nil {
		now = time.Now
	}
	return &Audit{sink: sink, now: now}
}

// registerAudit adds the recording middleware (first, so it sees every
// admin route) and GET /audit-logs.
func (s *Service) registerAudit(v1 fiber.Router) {
	if s.audit != nil {
		v1.Use(s.audit.recordWrites)
	}
	v1.Get("/audit-logs", s.listAuditLogs)
}

// recordWrites records every POST, PUT, PATCH and DELETE on an admin route,
// with the status it was answered with, and answers once the record is
// stored: a change the caller was told of is never missing from the audit
// log after a crash. (Writes made at the same time share one commit.)
func (a *Audit) recordWrites(c *fiber.Ctx) error {
	switch c.Method() {
	case http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete:
	default:
		return c.Next()
	}
	if !isAdminPath(c.Path()) {
		return c.Next()
	}
	err := c.Next()
	status := c.Response().StatusCode()
	var ce *core.Error
	var fe *fiber.Error
	switch {
	case errors.As(err, &ce):
		status = ce.Status
	case errors.As(err, &fe):
		status = fe.Code
	case err != nil:
		status = fiber.StatusInternalServerError
	}
	rec := a.record(c, status)
	rec.RequestBody = requestBody(c)
	if ce != nil {
		rec.Error = ce.Message
	}
	a.sink.Enqueue(rec)
	a.sink.Flush()
	return err
}

// AuthFailed records a refused credential on any route, data plane or
// admin; it is server.Options.OnAuthFailure. Data-plane bodies (prompts)
// are summarised, not recorded.
func (a *Audit) AuthFailed(c *fiber.Ctx, err *core.Error) {
	rec := a.record(c, err.Status)
	rec.Action, rec.Error = "authenticate", err.Message
	if rec.ResourceType == "" {
		rec.ResourceType = "gateway"
	}
	if isAdminPath(c.Path()) {
		rec.RequestBody = requestBody(c)
	} else if n := len(c.Body()); n > 0 {
		rec.RequestBody = []byte(fmt.Sprintf(`{"size":%d,"note":"data-plane body not recorded"}`, n))
	}
	cred := c.Get(core.HeaderPrefix + "api-key")
	if cred == "" {
		cred = c.Get(core.HeaderPrefixCompat + "api-key")
	}
	switch {
	case looksLikeJWT(cred):
		rec.UserType = UserTypeUser
	case cred != "":
		rec.UserType = UserTypeAPIKey
	}
	a.sink.Enqueue(rec)
}

// record builds the parts of an audit record common to writes and failed
// authentications. Everything is copied out of c, whose buffers Fiber reuses.
func (a *Audit) record(c *fiber.Ctx, status int) *store.AuditRecord {
	now := a.now().UTC()
	// c.Path() and c.Method() point into buffers Fiber reuses for the next
	// request, and the record is written later by the batch writer: copy
	// them before anything (resource and action are slices of the path).
	method, path := strings.Clone(c.Method()), strings.Clone(c.Path())
	resource, action := resourceAction(method, path)
	rec := &store.AuditRecord{
		ID: store.NewAuditID(now), Timestamp: now, Method: method,
		URI: path, RequestID: server.TraceID(c),
		ResponseStatusCode: status, ResourceType: resource, Action: action, ClientIP: strings.Clone(c.IP()),
		QueryParams: maskedPairs(func(add func(string, string)) {
			c.Context().QueryArgs().VisitAll(func(k, v []byte) { add(string(k), string(v)) })
		}),
		RequestHeaders: maskedPairs(func(add func(string, string)) {
			c.Request().Header.VisitAll(func(k, v []byte) { add(string(k), string(v)) })
		}),
	}
	if p := server.Principal(c); p != nil {
		rec.APIKeyID, rec.UserID, rec.OrganisationID, rec.WorkspaceID = p.KeyID, p.UserID, p.OrganisationID, p.WorkspaceID
		rec.UserType = UserTypeAPIKey
		if isJWTPrincipal(p) {
			rec.UserType = UserTypeUser
		}
	}
	return rec
}

// requestBody is the masked body of an admin request; multipart uploads
// (plugins) are summarised: field names and file names and sizes, never
// the bytes.
func requestBody(c *fiber.Ctx) []byte {
	ct := strings.Clone(c.Get(fiber.HeaderContentType))
	if !strings.HasPrefix(strings.ToLower(ct), fiber.MIMEMultipartForm) {
		return maskedBody(ct, c.Body())
	}
	form, err := c.MultipartForm()
	if err != nil {
		return maskedBody(ct, []byte("not multipart"))
	}
	type file struct {
		Field    string `json:"field"`
		Filename string `json:"filename"`
		Size     int64  `json:"size"`
	}
	sum := map[string]any{"content_type": fiber.MIMEMultipartForm, "size": len(c.Body())}
	var files []file
	for field, hs := range form.File {
		for _, h := range hs {
			files = append(files, file{Field: field, Filename: h.Filename, Size: h.Size})
		}
	}
	slices.SortFunc(files, func(a, b file) int { return strings.Compare(a.Field, b.Field) })
	fields := map[string]int{}
	for name, vs := range form.Value {
		for _, v := range vs {
			fields[name] += len(v)
		}
	}
	sum["files"], sum["field_sizes"] = files, fields
	b, _ := json.Marshal(sum)
	return b
}

// isAdminPath reports whether a /v1 path belongs to the admin API (the
// data-plane prompt routes under /prompts do not, see isPromptDataPath).
// It runs on every data-plane write too, so it compares in place (routes
// match case-insensitively) without allocating.
func isAdminPath(path string) bool {
	if len(path) < 3 || !strings.EqualFold(path[:3], "/v1") {
		return false
	}
	rest := path[3:]
	for _, prefix := range adminPrefixes {
		n := len(prefix)
		if len(rest) >= n && strings.EqualFold(rest[:n], prefix) && (len(rest) == n || rest[n] == '/') {
			return !isPromptDataPath(path)
		}
	}
	return false
}

// actionVerbs are trailing path segments that name the action of a POST
// (POST /api-keys/{id}/rotate is a "rotate").
var actionVerbs = []string{"rotate", "accept", "resend", "start", "cancel", "invoke", "publish",
	"render", "reset", "archive", "unarchive", "test", "download"}

// resourceAction derives an audit record's resource_type and action from
// an admin route: resource_type is the collection ("api-keys", "configs",
// "workspaces", "workspace-users", "invites", "plugins"...), action is
// create, update or delete by method, or the verb a POST path ends with.
// Data-plane paths have neither.
func resourceAction(method, path string) (resource, action string) {
	if !isAdminPath(path) {
		return "", ""
	}
	segs := strings.Split(strings.Trim(strings.ToLower(path), "/"), "/")[1:]
	if segs[0] == "admin" && len(segs) > 1 {
		segs = segs[1:]
	}
	resource = segs[0]
	switch {
	case resource == "users" && len(segs) > 1 && segs[1] == "invites":
		resource = "invites"
	case resource == "workspaces" && len(segs) > 2 && segs[2] == "users":
		resource = "workspace-users"
	case resource == "organisation" && len(segs) > 1:
		resource = "organisation-" + segs[1]
	case resource == "logs" && len(segs) > 1 && segs[1] == "exports":
		resource = "log-exports"
	case resource == "policies" && len(segs) > 1:
		resource = "policy-" + segs[1]
	case resource == "prompts" && len(segs) > 1 && segs[1] == "partials":
		resource = "prompt-partials"
	}
	switch method {
	case http.MethodPost:
		action = "create"
		if last := segs[len(segs)-1]; len(segs) > 2 && slices.Contains(actionVerbs, last) {
			action = last
		}
	case http.MethodPut, http.MethodPatch:
		action = "update"
	case http.MethodDelete:
		action = "delete"
	}
	return resource, action
}

// listAuditLogs is GET /audit-logs: organisation keys with audit_logs.list
// only, a required time range, the filters above, newest first.
func (s *Service) listAuditLogs(c *fiber.Ctx) error {
	caller := principal(c)
	if err := requireScope(caller, ScopeAuditLogsList); err != nil {
		return err
	}
	if !caller.IsOrganisationKey() {
		return core.Forbidden("audit logs are organisation-wide: only organisation keys may read them")
	}
	var p problems
	pg := parsePage(c.Query, 20, 100, &p)
	f := store.AuditFilter{PageSize: pg.size, CurrentPage: pg.current,
		Method: strings.ToUpper(c.Query("method")), URI: c.Query("uri"), RequestID: c.Query("request_id"),
		UserID: c.Query("user_id"), UserType: c.Query("user_type"), WorkspaceID: c.Query("workspace_id"),
		ResourceType: c.Query("resource_type"), Action: c.Query("action"), ClientIP: c.Query("client_ip")}
	for _, name := range []string{"start_time", "end_time"} {
		if c.Query(name) == "" {
			p.add(name, "is required: an RFC 3339 date-time such as \"2026-11-21T10:00:00Z\"")
		}
	}
	from, fromOK := parseTime(c.Query("start_time"), "start_time", &p)
	to, toOK := parseTime(c.Query("end_time"), "end_time", &p)
	f.From, f.To = &from, &to
	if fromOK && toOK && to.Before(from) {
		p.add("end_time", "must not be before start_time")
	}
	if f.Method != "" && !slices.Contains([]string{http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete, http.MethodGet}, f.Method) {
		p.add("method", "must be one of POST, PUT, PATCH, DELETE, GET, got %q", c.Query("method"))
	}
	if f.UserType != "" && f.UserType != UserTypeUser && f.UserType != UserTypeAPIKey {
		p.add("user_type", "must be one of [user api_key], got %q", f.UserType)
	}
	if v := c.Query("response_status_code"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 100 || n > 599 {
			p.add("response_status_code", "must be an HTTP status code such as 401, got %q", v)
		}
		f.ResponseStatusCode = n
	}
	if err := p.err(); err != nil {
		return err
	}
	var page []store.AuditRecord
	var total int
	err := s.st.View(func(tx store.Tx) error {
		if f.WorkspaceID != "" {
			if ws, err := store.WorkspaceByIDOrSlug(tx, f.WorkspaceID); err == nil {
				f.WorkspaceID = ws.ID
			}
		}
		var err error
		page, total, err = store.QueryAudit(tx, f)
		return err
	})
	if err != nil {
		return err
	}
	for i := range page {
		// Every record shows query_params, {} when there were none.
		if page[i].QueryParams == nil {
			page[i].QueryParams = map[string]string{}
		}
	}
	return c.JSON(listBody{Object: "list", Total: total, Data: nonNil(page)})
}
