package adminsvc

import (
	"bytes"
	"encoding/json"
	"errors"
	"math"
	"slices"
	"strconv"

	"github.com/gofiber/fiber/v2"

	"github.com/llm-gateway/gateway/core"
	"github.com/llm-gateway/gateway/store"
)

// maxFeedbackItems bounds the array of one POST /feedback; a record's
// value and weight are bounded by core.FeedbackValueMin and the others.
const maxFeedbackItems = 100

// feedbackFields are the fields of a feedback object.
var feedbackFields = []string{"trace_id", "value", "weight", "metadata"}

// feedbackBody is one validated feedback object; the has… flags say which
// fields were sent (an update changes only those).
type feedbackBody struct {
	TraceID                      string
	Value                        int
	Weight                       float64
	Metadata                     map[string]string
	hasValue, hasWeight, hasMeta bool
}

// feedbackWritten is the answer to a feedback write.
type feedbackWritten struct {
	Status      string   `json:"status"`
	Message     string   `json:"message"`
	FeedbackIDs []string `json:"feedback_ids"`
}

// feedbackView is a feedback record as the API returns it.
type feedbackView struct {
	store.Feedback
	Object string `json:"object"`
}

func (s *Service) registerFeedback(v1 fiber.Router) {
	v1.Post("/feedback", s.createFeedback)
	v1.Get("/feedback", s.listFeedback)
	v1.Get("/feedback/:id", s.getFeedback)
	v1.Put("/feedback/:id", s.updateFeedback)
}

// feedbackWriter refuses organisation keys: feedback is given with the key
// of the workspace whose requests it rates.
func feedbackWriter(caller *core.Principal) *core.Error {
	if caller.IsOrganisationKey() {
		return core.Forbidden("feedback is given with a workspace key (a workspace service or user key of the workspace whose requests it rates); organisation keys may not create or update feedback")
	}
	return nil
}

// feedbackReader checks that caller may read feedback: workspace keys read
// their own workspace's without a scope, organisation keys need scope (the
// logs scope of the same read, as feedback rates logged requests).
func feedbackReader(caller *core.Principal, scope string) *core.Error {
	if caller.IsOrganisationKey() {
		return requireScope(caller, scope)
	}
	return nil
}

// feedbackVisible reports whether caller may see rec: an organisation key
// sees all, a workspace key its workspace's, narrowed to the feedback of
// own when own is not nil (see ownKeysOnly).
func feedbackVisible(caller *core.Principal, own []string, rec store.Feedback) bool {
	if caller.IsOrganisationKey() {
		return true
	}
	return rec.WorkspaceID == caller.WorkspaceID && (own == nil || slices.Contains(own, rec.APIKeyID))
}

func (s *Service) createFeedback(c *fiber.Ctx) error {
	caller := principal(c)
	if err := feedbackWriter(caller); err != nil {
		return err
	}
	items, perr := parseFeedbackList(c.Body())
	if perr != nil {
		return perr
	}
	now := s.now()
	ids := store.NewFeedbackIDs(now, len(items))
	err := s.st.Update(func(tx store.Tx) error {
		ws, err := s.resolveWorkspace(tx, caller, "", true)
		if err != nil {
			return err
		}
		for i, it := range items {
			rec := store.Feedback{
				ID: ids[i], TraceID: it.TraceID, Value: it.Value, Weight: it.Weight, Metadata: it.Metadata,
				OrganisationID: caller.OrganisationID, WorkspaceID: ws.ID, APIKeyID: caller.KeyID, UserID: caller.UserID,
				CreatedAt: now, LastUpdatedAt: now,
			}
			if err := tx.Put(store.BucketFeedback, rec.ID, rec); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	return c.JSON(feedbackWritten{Status: "success", Message: "feedback saved", FeedbackIDs: ids})
}

// parseFeedbackList reads the body of POST /feedback: one feedback object
// or a non-empty array of them. Every problem of every item is reported,
// named [i].field in an array.
func parseFeedbackList(body []byte) ([]feedbackBody, *core.Error) {
	var p problems
	body = bytes.TrimSpace(body)
	if len(body) == 0 || body[0] != '[' {
		fields, err := decodeObject(body)
		if err != nil {
			if tooDeep(err) {
				return nil, err // decodeObject's, which names the limit
			}
			p.add("body", "must be a feedback object {trace_id, value, weight, metadata} or an array of them")
			return nil, p.err()
		}
		it := parseFeedback(fields, "", true, &p)
		return []feedbackBody{it}, p.err()
	}
	var raws []json.RawMessage
	switch err := json.Unmarshal(body, &raws); {
	case tooDeep(err):
		return nil, deepBody(err)
	case err != nil:
		p.add("body", "is not a JSON array of feedback objects")
	case len(raws) == 0:
		p.add("body", "the array is empty; send at least one feedback object")
	case len(raws) > maxFeedbackItems:
		p.add("body", "at most %d feedback objects per request, got %d", maxFeedbackItems, len(raws))
	}
	if err := p.err(); err != nil {
		return nil, err
	}
	items := make([]feedbackBody, len(raws))
	for i, raw := range raws {
		at := "[" + strconv.Itoa(i) + "]"
		var fields map[string]json.RawMessage
		if json.Unmarshal(raw, &fields) != nil || fields == nil {
			p.add(at, "must be a feedback object {trace_id, value, weight, metadata}")
			continue
		}
		items[i] = parseFeedback(fields, at, true, &p)
	}
	return items, p.err()
}

// parseFeedback reads one feedback object at field path at. A create
// needs trace_id and value and gets weight 1 by default; an update may
// change value, weight and metadata, at least one of them.
func parseFeedback(fields map[string]json.RawMessage, at string, create bool, p *problems) feedbackBody {
	b := feedbackBody{Weight: 1, Metadata: map[string]string{}}
	present := func(name string) (json.RawMessage, bool) {
		raw, ok := fields[name]
		return raw, ok && string(raw) != "null"
	}
	if create {
		// Its length and characters are checked as the data plane's are.
		if id, ok := strFieldAt(fields, at, "trace_id", true, math.MaxInt, p); ok {
			b.TraceID = id
			if msg := core.CheckTraceID(id); msg != "" && id != "" {
				p.add(fieldPath(at, "trace_id"), "%s, as the gateway's trace ids are", msg)
			}
		}
	} else if _, ok := fields["trace_id"]; ok {
		p.add(fieldPath(at, "trace_id"), "cannot be changed: give new feedback for the other trace instead")
	}
	if raw, ok := present("value"); ok {
		b.hasValue = true
		if json.Unmarshal(raw, &b.Value) != nil || b.Value < core.FeedbackValueMin || b.Value > core.FeedbackValueMax {
			p.add(fieldPath(at, "value"), "must be an integer from %d to %d, got %s", core.FeedbackValueMin, core.FeedbackValueMax, raw)
		}
	} else if create {
		p.add(fieldPath(at, "value"), "is required: an integer from %d to %d", core.FeedbackValueMin, core.FeedbackValueMax)
	}
	if raw, ok := present("weight"); ok {
		b.hasWeight = true
		if json.Unmarshal(raw, &b.Weight) != nil || b.Weight < 0 || b.Weight > core.FeedbackWeightMax {
			p.add(fieldPath(at, "weight"), "must be a number from 0 to %d, got %s", core.FeedbackWeightMax, raw)
		}
	}
	if raw, ok := present("metadata"); ok {
		b.hasMeta = true
		b.Metadata = parseFeedbackMetadata(raw, fieldPath(at, "metadata"), p)
	}
	if !create && !b.hasValue && !b.hasWeight && !b.hasMeta {
		p.add("body", "nothing to update: send value, weight or metadata")
	}
	unknownFields(fields, at, feedbackFields, p)
	return b
}

// parseFeedbackMetadata reads metadata by the rules of x-gateway-metadata:
// a JSON object of strings.
func parseFeedbackMetadata(raw json.RawMessage, param string, p *problems) map[string]string {
	var fields map[string]json.RawMessage
	if json.Unmarshal(raw, &fields) != nil || fields == nil {
		p.add(param, "must be a JSON object of strings, e.g. {\"_user\":\"alice\"}")
		return map[string]string{}
	}
	md := make(map[string]string, len(fields))
	keys := make([]string, 0, len(fields))
	for k := range fields {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		var v string
		if json.Unmarshal(fields[k], &v) != nil {
			p.add(param, "the value of %q must be a string", k)
			continue
		}
		md[k] = v
	}
	return md
}

func (s *Service) updateFeedback(c *fiber.Ctx) error {
	caller := principal(c)
	if err := feedbackWriter(caller); err != nil {
		return err
	}
	fields, cerr := decodeObject(c.Body())
	if cerr != nil {
		return cerr
	}
	var p problems
	b := parseFeedback(fields, "", false, &p)
	if err := p.err(); err != nil {
		return err
	}
	id := c.Params("id")
	err := s.st.Update(func(tx store.Tx) error {
		rec, err := s.loadFeedback(tx, caller, id)
		if err != nil {
			return err
		}
		if b.hasValue {
			rec.Value = b.Value
		}
		if b.hasWeight {
			rec.Weight = b.Weight
		}
		if b.hasMeta {
			rec.Metadata = b.Metadata
		}
		rec.LastUpdatedAt = s.now()
		return tx.Put(store.BucketFeedback, rec.ID, rec)
	})
	if err != nil {
		return err
	}
	return c.JSON(feedbackWritten{Status: "success", Message: "feedback updated", FeedbackIDs: []string{id}})
}

// loadFeedback reads feedback id if caller may see it; 404 otherwise.
func (s *Service) loadFeedback(tx store.Tx, caller *core.Principal, id string) (store.Feedback, error) {
	var rec store.Feedback
	err := tx.Get(store.BucketFeedback, id, &rec)
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		return rec, err
	}
	own, oerr := ownKeysOnly(tx, caller)
	if oerr != nil {
		return rec, oerr
	}
	if err != nil || !feedbackVisible(caller, own, rec) {
		return rec, core.NotFound("no feedback %q", id)
	}
	return rec, nil
}

func (s *Service) listFeedback(c *fiber.Ctx) error {
	caller := principal(c)
	if err := feedbackReader(caller, core.ScopeLogsList); err != nil {
		return err
	}
	var p problems
	pg := parsePage(c.Query, 50, 1000, &p)
	if err := p.err(); err != nil {
		return err
	}
	f := store.FeedbackFilter{TraceID: c.Query("trace_id"), PageSize: pg.size, CurrentPage: pg.current}
	var page []store.Feedback
	var total int
	err := s.st.View(func(tx store.Tx) (err error) {
		if f.WorkspaceID, err = s.listWorkspace(tx, caller, c.Query("workspace_id")); err != nil {
			return err
		}
		if f.APIKeyIDs, err = ownKeysOnly(tx, caller); err != nil {
			return err
		}
		page, total, err = store.QueryFeedback(tx, f)
		return err
	})
	if err != nil {
		return err
	}
	views := make([]feedbackView, len(page))
	for i, rec := range page {
		views[i] = feedbackView{Feedback: rec, Object: "feedback"}
	}
	return c.JSON(listBody{Object: "list", Total: total, Data: views})
}

func (s *Service) getFeedback(c *fiber.Ctx) error {
	caller := principal(c)
	if err := feedbackReader(caller, core.ScopeLogsView); err != nil {
		return err
	}
	var rec store.Feedback
	err := s.st.View(func(tx store.Tx) (err error) {
		rec, err = s.loadFeedback(tx, caller, c.Params("id"))
		return err
	})
	if err != nil {
		return err
	}
	return c.JSON(feedbackView{Feedback: rec, Object: "feedback"})
}
