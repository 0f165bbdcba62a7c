package adminsvc

import (
	"encoding/json"
	"errors"
	"maps"
	"os"
	"reflect"
	"slices"
	"strconv"
	"strings"

	"github.com/gofiber/fiber/v2"

	"github.com/llm-gateway/gateway/core"
	"github.com/llm-gateway/gateway/store"
)

// exportFilterNames are the filters an export may have: the query
// parameters of GET /logs (parseLogFilter) but workspace_id and paging.
var exportFilterNames = []string{"trace_id", "status", "status_code", "api_key_ids", "configs", "prompt_slug",
	"ai_org_model", "metadata", "cost_min", "cost_max", "time_of_generation_min", "time_of_generation_max"}

// exportFields are the fields of an export body.
var exportFields = []string{"workspace_id", "filters", "requested_data"}

// logRecordFields are the JSON names of a log record's fields, in the
// order records are written: what requested_data may name.
var logRecordFields = func() []string {
	var names []string
	for _, f := range reflect.VisibleFields(reflect.TypeFor[core.LogRecord]()) {
		if name, _, _ := strings.Cut(f.Tag.Get("json"), ","); name != "" && name != "-" {
			names = append(names, name)
		}
	}
	return names
}()

// exportView is an export as the API returns it.
type exportView struct {
	store.LogExport
	// VisibleKeyIDs hides the stored field of that name (always nil here).
	VisibleKeyIDs []string `json:"visible_key_ids,omitempty"`
	Object        string   `json:"object"`
}

// exportWritten answers a create or an update.
type exportWritten struct {
	ID     string `json:"id"`
	Total  int    `json:"total"`
	Object string `json:"object"`
}

// exportChanged answers a start or a cancel.
type exportChanged struct {
	ID      string `json:"id"`
	Status  string `json:"status"`
	Message string `json:"message"`
	Object  string `json:"object"`
}

func (s *Service) registerExports(v1 fiber.Router) {
	v1.Post("/logs/exports", s.createExport)
	v1.Get("/logs/exports", s.listExports)
	v1.Get("/logs/exports/:id", s.getExport)
	v1.Put("/logs/exports/:id", s.updateExport)
	v1.Post("/logs/exports/:id/start", s.startExport)
	v1.Post("/logs/exports/:id/cancel", s.cancelExport)
	v1.Get("/logs/exports/:id/download", s.downloadExport)
	v1.Delete("/logs/exports/:id", s.deleteExport)
}

// exportBody is a validated create or update body; has… say what was sent.
type exportBody struct {
	workspace              string
	filters                map[string]string
	requested              []string
	hasFilters, hasRequest bool
}

// parseExportBody reads a create (filters and requested_data required) or
// an update (either, at least one; the workspace cannot change) body.
func parseExportBody(body []byte, create bool) (exportBody, *core.Error) {
	fields, cerr := decodeObject(body)
	if cerr != nil {
		return exportBody{}, cerr
	}
	var p problems
	var b exportBody
	if create {
		b.workspace, _ = strField(fields, "workspace_id", false, 255, &p)
	} else if _, ok := fields["workspace_id"]; ok {
		p.add("workspace_id", "cannot be changed: create an export for the other workspace instead")
	}
	if raw, ok := present(fields, "filters"); ok {
		b.hasFilters = true
		b.filters = parseExportFilters(raw, &p)
	} else if create {
		p.add("filters", "is required: an object of GET /v1/logs filters such as {\"status_code\":\"200\"}, or {} for every record")
	}
	if raw, ok := present(fields, "requested_data"); ok {
		b.hasRequest = true
		b.requested = parseRequestedData(raw, &p)
	} else if create {
		p.add("requested_data", "is required: the record fields to export, such as [\"id\",\"created_at\",\"status\"]")
	}
	if !create && !b.hasFilters && !b.hasRequest {
		p.add("body", "nothing to update: send filters or requested_data")
	}
	unknownFields(fields, "", exportFields, &p)
	return b, p.err()
}

// parseExportFilters reads the filters object: GET /v1/logs filters by
// name, each a string as in the query string, a number, an array of
// strings or numbers (a list), or for metadata an object. It returns them
// as query-string text, checked by parseLogFilter.
func parseExportFilters(raw json.RawMessage, p *problems) map[string]string {
	fields, ok := objectFields(raw)
	if !ok {
		p.add("filters", "must be a JSON object of GET /v1/logs filters")
		return nil
	}
	out := map[string]string{}
	for _, name := range slices.Sorted(maps.Keys(fields)) {
		param := "filters." + name
		if !slices.Contains(exportFilterNames, name) {
			p.add(param, "unknown filter; known: %s", strings.Join(exportFilterNames, ", "))
			continue
		}
		v, ok := filterText(fields[name], name == "metadata")
		if !ok {
			p.add(param, "must be a string, a number or an array of them, got %s", fields[name])
			continue
		}
		if v != "" {
			out[name] = v
		}
	}
	exportLogFilter(out, p)
	return out
}

// filterText is a filter's value as query-string text: a string as is, a
// number in its JSON form, an array joined with commas, an object (when
// object is set) in its JSON form; null is "".
func filterText(raw json.RawMessage, object bool) (string, bool) {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s, true
	}
	var n json.Number
	if json.Unmarshal(raw, &n) == nil {
		return n.String(), true
	}
	var items []json.RawMessage
	if json.Unmarshal(raw, &items) == nil {
		texts := make([]string, len(items))
		for i, it := range items {
			var ok bool
			if texts[i], ok = filterText(it, false); !ok || strings.HasPrefix(string(it), "[") {
				return "", false
			}
		}
		return strings.Join(texts, ","), true
	}
	if _, ok := objectFields(raw); ok && object {
		return string(raw), true
	}
	return "", false
}

// exportLogFilter is the log filter of an export's filters; problems are
// named filters.<name>.
func exportLogFilter(filters map[string]string, p *problems) store.LogFilter {
	var sub problems
	f := parseLogFilter(func(name string, _ ...string) string { return filters[name] }, &sub)
	for _, pr := range sub {
		p.add("filters."+pr.param, "%s", pr.msg)
	}
	return f
}

// parseRequestedData reads requested_data: a non-empty array of log record
// field names, returned in the record's field order without repeats. Every
// element that is not a string, or not a field, is a problem of its own.
func parseRequestedData(raw json.RawMessage, p *problems) []string {
	var items []json.RawMessage
	if json.Unmarshal(raw, &items) != nil || len(items) == 0 {
		p.add("requested_data", "must be a non-empty array of log record field names (%s)", strings.Join(logRecordFields, ", "))
		return nil
	}
	names := make([]string, 0, len(items))
	for i, it := range items {
		at := "requested_data[" + strconv.Itoa(i) + "]"
		var n string
		switch {
		case string(it) == "null" || json.Unmarshal(it, &n) != nil:
			p.add(at, "must be a log record field name (a string), got %s", it)
		case !slices.Contains(logRecordFields, n):
			p.add(at, "%q is not a log record field; known: %s", n, strings.Join(logRecordFields, ", "))
		default:
			names = append(names, n)
		}
	}
	var out []string
	for _, n := range logRecordFields {
		if slices.Contains(names, n) {
			out = append(out, n)
		}
	}
	return out
}

// exportReader checks that caller may read exports with scope (logs.list
// for the list, logs.view for one), or logs.export.
func exportReader(caller *core.Principal, scope string) *core.Error {
	return requireScope(caller, core.ScopeLogsExport, scope)
}

// exportVisible reports whether caller may see exp: an organisation key
// sees all, a workspace key its workspace's, narrowed to the exports its
// user's keys made when own is not nil (see ownKeysOnly).
func exportVisible(caller *core.Principal, own []string, exp *store.LogExport) bool {
	if caller.IsOrganisationKey() {
		return exp.OrganisationID == caller.OrganisationID
	}
	return exp.WorkspaceID == caller.WorkspaceID && (own == nil || slices.Contains(own, exp.CreatedBy))
}

// loadExport reads export id if caller may see it; 404 otherwise.
func loadExport(tx store.Tx, caller *core.Principal, id string) (store.LogExport, error) {
	var exp store.LogExport
	err := tx.Get(store.BucketLogExports, id, &exp)
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		return exp, err
	}
	own, oerr := ownKeysOnly(tx, caller)
	if oerr != nil {
		return exp, oerr
	}
	if err != nil || !exportVisible(caller, own, &exp) {
		return exp, core.NotFound("no log export %q", id)
	}
	return exp, nil
}

// exportFilter is the log filter exp runs with, completed from the store.
func exportFilter(tx store.Tx, exp *store.LogExport) (store.LogFilter, error) {
	var p problems
	f := exportLogFilter(exp.Filters, &p)
	if err := p.err(); err != nil {
		return f, err // stored filters were checked; only a changed parser gets here
	}
	f.WorkspaceID, f.APIKeyIDs = exp.WorkspaceID, exp.VisibleKeyIDs
	return f, prepareFilter(tx, &f, false)
}

// countExport is the number of records exp's filters match now.
func countExport(tx store.Tx, exp *store.LogExport) (int, error) {
	f, err := exportFilter(tx, exp)
	if err != nil {
		return 0, err
	}
	n := 0
	_, err = store.ScanLogs(tx, f, 0, func(*core.LogRecord) error { n++; return nil })
	return n, err
}

func (s *Service) createExport(c *fiber.Ctx) error {
	caller := principal(c)
	if err := requireScope(caller, core.ScopeLogsExport); err != nil {
		return err
	}
	b, perr := parseExportBody(c.Body(), true)
	if perr != nil {
		return perr
	}
	now := s.now()
	exp := store.LogExport{ID: store.NewLogIDs(now, 1)[0], OrganisationID: caller.OrganisationID, Filters: b.filters,
		RequestedData: b.requested, Status: store.ExportDraft, CreatedBy: caller.KeyID, UserID: caller.UserID,
		CreatedAt: now, LastUpdatedAt: now}
	// The count scans the logs: in a read transaction, not holding the
	// store's one writer (the request-log writer among others) meanwhile.
	err := s.st.View(func(tx store.Tx) (err error) {
		if exp.WorkspaceID, err = s.listWorkspace(tx, caller, b.workspace); err != nil {
			return err
		}
		if exp.VisibleKeyIDs, err = ownKeysOnly(tx, caller); err != nil {
			return err
		}
		exp.Total, err = countExport(tx, &exp)
		return err
	})
	if err == nil {
		err = s.st.Update(func(tx store.Tx) error {
			if err := checkUnfinishedExports(tx, caller, &exp, s.exports.maxUnfinished); err != nil {
				return err
			}
			return tx.Put(store.BucketLogExports, exp.ID, exp)
		})
	}
	if err != nil {
		return err
	}
	return c.JSON(exportWritten{ID: exp.ID, Total: exp.Total, Object: "export"})
}

// checkUnfinishedExports refuses (409) a new export exp while caller can
// see limit exports of the same scope (its workspace, or the
// organisation's exports of every workspace) that are draft or
// in_progress. It counts what caller sees (exportVisible), which is what
// it may start, cancel or delete: a member restricted to its own user's
// data counts only those, never exports it could do nothing about; anyone
// who sees the whole workspace counts the whole workspace's.
func checkUnfinishedExports(tx store.Tx, caller *core.Principal, exp *store.LogExport, limit int) error {
	own, err := ownKeysOnly(tx, caller)
	if err != nil {
		return err
	}
	all, err := store.List[store.LogExport](tx, store.BucketLogExports)
	if err != nil {
		return err
	}
	n := 0
	for _, o := range all {
		if o.OrganisationID == exp.OrganisationID && o.WorkspaceID == exp.WorkspaceID && exportVisible(caller, own, &o) &&
			(o.Status == store.ExportDraft || o.Status == store.ExportInProgress) {
			n++
		}
	}
	if n < limit {
		return nil
	}
	whose, list := "workspace "+exp.WorkspaceID+" has", "GET /v1/logs/exports?workspace_id="+exp.WorkspaceID
	switch {
	case own != nil:
		whose, list = "you have, in workspace "+exp.WorkspaceID+",", "GET /v1/logs/exports"
	case exp.WorkspaceID == "":
		whose, list = "the organisation has, of exports of every workspace (made without a workspace_id),", "GET /v1/logs/exports"
	}
	return core.Conflict("%s %d log exports that are draft or in_progress, the limit (%d); "+
		"start, cancel or delete one of them first (%s lists them)", whose, n, limit, list)
}

func (s *Service) updateExport(c *fiber.Ctx) error {
	caller := principal(c)
	if err := requireScope(caller, core.ScopeLogsExport); err != nil {
		return err
	}
	b, perr := parseExportBody(c.Body(), false)
	if perr != nil {
		return perr
	}
	// load reads the draft with the body applied.
	load := func(tx store.Tx) (exp store.LogExport, err error) {
		if exp, err = loadExport(tx, caller, c.Params("id")); err != nil {
			return exp, err
		}
		if exp.Status != store.ExportDraft {
			return exp, core.Conflict("log export %s is %s; only a draft can be changed", exp.ID, exp.Status)
		}
		if b.hasFilters {
			exp.Filters = b.filters
		}
		if b.hasRequest {
			exp.RequestedData = b.requested
		}
		return exp, nil
	}
	// The count scans the logs in a read transaction (see createExport);
	// the write checks the filters counted are still the export's.
	var counted store.LogExport
	err := s.st.View(func(tx store.Tx) (err error) {
		if counted, err = load(tx); err != nil {
			return err
		}
		counted.Total, err = countExport(tx, &counted)
		return err
	})
	var exp store.LogExport
	if err == nil {
		err = s.st.Update(func(tx store.Tx) (err error) {
			if exp, err = load(tx); err != nil {
				return err
			}
			if !maps.Equal(exp.Filters, counted.Filters) {
				return core.Conflict("log export %s was changed meanwhile; send the update again", exp.ID)
			}
			exp.Total, exp.LastUpdatedAt = counted.Total, s.now()
			return tx.Put(store.BucketLogExports, exp.ID, exp)
		})
	}
	if err != nil {
		return err
	}
	return c.JSON(exportWritten{ID: exp.ID, Total: exp.Total, Object: "export"})
}

func (s *Service) listExports(c *fiber.Ctx) error {
	caller := principal(c)
	if err := exportReader(caller, core.ScopeLogsList); err != nil {
		return err
	}
	var p problems
	pg := parsePage(c.Query, 50, 1000, &p)
	if err := p.err(); err != nil {
		return err
	}
	f := store.ExportFilter{PageSize: pg.size, CurrentPage: pg.current}
	var page []store.LogExport
	var total int
	err := s.st.View(func(tx store.Tx) (err error) {
		if f.WorkspaceID, err = s.listWorkspace(tx, caller, c.Query("workspace_id")); err != nil {
			return err
		}
		own, err := ownKeysOnly(tx, caller)
		if err != nil {
			return err
		}
		f.Visible = func(exp *store.LogExport) bool { return exportVisible(caller, own, exp) }
		page, total, err = store.QueryLogExports(tx, f)
		return err
	})
	if err != nil {
		return err
	}
	views := make([]exportView, len(page))
	for i, exp := range page {
		views[i] = exportView{LogExport: exp, Object: "export"}
	}
	return c.JSON(listBody{Object: "list", Total: total, Data: views})
}

func (s *Service) getExport(c *fiber.Ctx) error {
	caller := principal(c)
	if err := exportReader(caller, core.ScopeLogsView); err != nil {
		return err
	}
	var exp store.LogExport
	err := s.st.View(func(tx store.Tx) (err error) {
		exp, err = loadExport(tx, caller, c.Params("id"))
		return err
	})
	if err != nil {
		return err
	}
	return c.JSON(exportView{LogExport: exp, Object: "export"})
}

func (s *Service) startExport(c *fiber.Ctx) error {
	caller := principal(c)
	if err := requireScope(caller, core.ScopeLogsExport); err != nil {
		return err
	}
	exp, err := s.changeExport(caller, c.Params("id"), store.ExportInProgress, store.ExportDraft)
	if err != nil {
		return err
	}
	s.exports.wakeUp()
	return c.JSON(exportChanged{ID: exp.ID, Status: exp.Status, Message: "export started", Object: "export"})
}

func (s *Service) cancelExport(c *fiber.Ctx) error {
	caller := principal(c)
	if err := requireScope(caller, core.ScopeLogsExport); err != nil {
		return err
	}
	exp, err := s.changeExport(caller, c.Params("id"), store.ExportStopped, store.ExportDraft, store.ExportInProgress)
	if err != nil {
		return err
	}
	return c.JSON(exportChanged{ID: exp.ID, Status: exp.Status, Message: "export stopped", Object: "export"})
}

// changeExport moves export id to status to, if it is in one of from;
// 409 otherwise.
func (s *Service) changeExport(caller *core.Principal, id, to string, from ...string) (exp store.LogExport, err error) {
	err = s.st.Update(func(tx store.Tx) (err error) {
		if exp, err = loadExport(tx, caller, id); err != nil {
			return err
		}
		if !slices.Contains(from, exp.Status) {
			return core.Conflict("log export %s is %s; only an export that is %s can be made %s", exp.ID, exp.Status,
				strings.Join(from, " or "), to)
		}
		if to == store.ExportInProgress {
			if err := s.exports.checkDiskUse(tx); err != nil {
				return err
			}
		}
		now := s.now()
		exp.Status, exp.LastUpdatedAt = to, now
		switch to {
		case store.ExportInProgress:
			exp.StartedAt = &now
		case store.ExportStopped:
			exp.CompletedAt = &now
		}
		return tx.Put(store.BucketLogExports, exp.ID, exp)
	})
	return exp, err
}

// deleteExport removes an export and its file. A running export is
// stopped by it: the worker finds the record gone at its next progress
// and removes its partial file.
func (s *Service) deleteExport(c *fiber.Ctx) error {
	caller := principal(c)
	if err := requireScope(caller, core.ScopeLogsExport); err != nil {
		return err
	}
	var exp store.LogExport
	err := s.st.Update(func(tx store.Tx) (err error) {
		if exp, err = loadExport(tx, caller, c.Params("id")); err != nil {
			return err
		}
		return tx.Delete(store.BucketLogExports, exp.ID)
	})
	if err != nil {
		return err
	}
	s.exports.removeFile(exp.ID)
	return c.JSON(fiber.Map{})
}

func (s *Service) downloadExport(c *fiber.Ctx) error {
	caller := principal(c)
	if err := requireScope(caller, core.ScopeLogsExport); err != nil {
		return err
	}
	var exp store.LogExport
	err := s.st.View(func(tx store.Tx) (err error) {
		exp, err = loadExport(tx, caller, c.Params("id"))
		return err
	})
	if err != nil {
		return err
	}
	if exp.Status != store.ExportSuccess {
		return core.Conflict("log export %s is %s; it can be downloaded once it is success", exp.ID, exp.Status)
	}
	f, err := os.Open(s.exports.file(exp.ID))
	if err != nil {
		return core.Internal(err, "the file of log export %s cannot be read", exp.ID)
	}
	info, err := f.Stat()
	if err != nil {
		f.Close()
		return core.Internal(err, "the file of log export %s cannot be read", exp.ID)
	}
	c.Set(fiber.HeaderContentType, "application/x-ndjson")
	c.Set(fiber.HeaderContentDisposition, `attachment; filename="`+exp.ID+`.jsonl"`)
	return c.SendStream(f, int(info.Size())) // fasthttp closes f
}
