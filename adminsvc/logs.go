package adminsvc

import (
	"errors"
	"slices"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/llm-gateway/gateway/core"
	"github.com/llm-gateway/gateway/store"
)

// LogFormat names the shape of the log records this version writes; it is
// returned with every record so readers can tell shapes apart later.
const LogFormat = "gateway-v1"

func (s *Service) listLogs(c *fiber.Ctx) error {
	caller := principal(c)
	if err := requireScope(caller, core.ScopeLogsList); err != nil {
		return err
	}
	var p problems
	pg := parsePage(c.Query, 50, 1000, &p)
	f := parseLogFilter(c.Query, &p)
	f.PageSize, f.CurrentPage = pg.size, pg.current
	if err := p.err(); err != nil {
		return err
	}
	var page []core.LogRecord
	var total int
	err := s.st.View(func(tx store.Tx) error {
		var err error
		if f.WorkspaceID, err = s.listWorkspace(tx, caller, c.Query("workspace_id")); err != nil {
			return err
		}
		if f.APIKeyIDs, err = ownKeysOnly(tx, caller); err != nil {
			return err
		}
		if err = prepareFilter(tx, &f, true); err != nil {
			return err
		}
		page, total, err = store.QueryLogs(tx, f)
		return err
	})
	if err != nil {
		return err
	}
	items := make([]logView, len(page))
	for i := range page {
		if !caller.HasScope(core.ScopeLogsView) {
			// Bodies and headers are what logs.view guards on GET
			// /logs/{id}; without it the list shows the rest of each record.
			page[i].Request, page[i].Response = nil, nil
		}
		items[i] = logView{LogRecord: page[i], Cost: priced(&page[i], f.Prices), LogFormat: LogFormat, Object: "log"}
	}
	return c.JSON(listBody{Object: "list", Total: total, Data: items})
}

// parseTime reads v, the RFC 3339 time of parameter name: ok is false when
// v is empty, or bad (reported into p).
func parseTime(v, name string, p *problems) (t time.Time, ok bool) {
	if v == "" {
		return time.Time{}, false
	}
	t, err := time.Parse(time.RFC3339Nano, v)
	if err != nil && strings.Contains(v, " ") {
		// An unescaped "+01:00" offset arrives as " 01:00" once the query
		// string is decoded.
		t, err = time.Parse(time.RFC3339Nano, strings.Replace(v, " ", "+", 1))
	}
	// Year 0 is refused: a range reaching back from it (the analytics'
	// default) would hold a year that has no JSON form.
	if err != nil || t.Year() < 1 {
		p.add(name, "must be an RFC 3339 date-time from year 0001 such as \"2026-11-21T10:00:00Z\", got %q", v)
		return time.Time{}, false
	}
	return t, true
}

// logView is a log record as GET /logs/{id} returns it.
type logView struct {
	core.LogRecord
	// Cost is the record's price in USD from its usage and the model's
	// price (an integration's own, else the built-in table); null when the
	// model has no price.
	Cost      *float64 `json:"cost"`
	LogFormat string   `json:"log_format"`
	Object    string   `json:"object"`
}

// priced is rec with its cost (see logView.Cost).
func priced(rec *core.LogRecord, prices store.Prices) *float64 {
	if cost, ok := store.LogCost(rec, prices); ok {
		return &cost
	}
	return nil
}

func (s *Service) getLog(c *fiber.Ctx) error {
	caller := principal(c)
	if err := requireScope(caller, core.ScopeLogsView); err != nil {
		return err
	}
	var rec core.LogRecord
	var own []string
	var prices store.Prices
	err := s.st.View(func(tx store.Tx) (err error) {
		if own, err = ownKeysOnly(tx, caller); err != nil {
			return err
		}
		if prices, err = store.IntegrationPrices(tx); err != nil {
			return err
		}
		return tx.Get(store.BucketLogs, c.Params("id"), &rec)
	})
	if errors.Is(err, store.ErrNotFound) || (err == nil && !caller.IsOrganisationKey() && rec.WorkspaceID != caller.WorkspaceID) ||
		(err == nil && own != nil && !slices.Contains(own, rec.APIKeyID)) {
		return core.NotFound("no log record %q (records are written within a second of the request)", c.Params("id"))
	}
	if err != nil {
		return err
	}
	return c.JSON(logView{LogRecord: rec, Cost: priced(&rec, prices), LogFormat: LogFormat, Object: "log"})
}
