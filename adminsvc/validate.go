package adminsvc

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/gofiber/fiber/v2"

	"github.com/llm-gateway/gateway/core"
)

// problems collects every validation problem of one request, so a 400 lists
// them all and not only the first.
type problems []problem

type problem struct{ param, msg string }

func (p *problems) add(param, format string, args ...any) {
	*p = append(*p, problem{param, strings.TrimSpace(fmt.Sprintf(format, args...))})
}

// err returns nil when there were no problems, else a 400 AB01 whose message
// lists them all and whose param is the first.
func (p problems) err() *core.Error {
	if len(p) == 0 {
		return nil
	}
	msgs := make([]string, len(p))
	for i, pr := range p {
		msgs[i] = pr.param + ": " + pr.msg
	}
	return core.ValidationError(p[0].param, "%s", strings.Join(msgs, "; "))
}

// decodeObject parses a JSON object body into its raw fields.
func decodeObject(body []byte) (map[string]json.RawMessage, *core.Error) {
	body = bytes.TrimSpace(body)
	if len(body) == 0 {
		return nil, core.ValidationError("body", "request body is empty; a JSON object is required")
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(body, &fields); err != nil || fields == nil {
		if tooDeep(err) {
			return nil, deepBody(err)
		}
		return nil, core.ValidationError("body", "request body is not a JSON object")
	}
	return fields, nil
}

// maxJSONDepth is how deep objects and arrays may nest in a JSON body:
// encoding/json's limit.
const maxJSONDepth = 10000

// tooDeep reports whether err is (or wraps) encoding/json's refusal of a
// value nested deeper than maxJSONDepth: a syntax error that says
// "exceeded max depth" (so says either implementation of encoding/json).
func tooDeep(err error) bool {
	var se *json.SyntaxError
	return errors.As(err, &se) && strings.HasSuffix(se.Error(), "exceeded max depth")
}

// deepBody is the 400 of a body that err, from encoding/json, says nests
// too deeply: valid JSON perhaps, but not one the admin API reads. The
// error wraps err, so tooDeep recognises it.
func deepBody(err error) *core.Error {
	e := core.ValidationError("body", "request body nests objects and arrays more than %d levels deep", maxJSONDepth)
	e.Err = err
	return e
}

// page is a validated current_page / page_size pair.
type page struct{ current, size int }

// parsePage reads current_page (≥0, default 0) and page_size (1..maxSize,
// default def), reporting bad values into p.
func parsePage(get func(string, ...string) string, def, maxSize int, p *problems) page {
	return parsePageOf(get, nil, def, maxSize, p)
}

// parsePageOf is parsePage for a list that also accepts aliases[name] for
// paging parameter name; a problem names the parameter as the caller sent
// it.
func parsePageOf(get func(string, ...string) string, aliases map[string]string, def, maxSize int, p *problems) page {
	pg := page{current: 0, size: def}
	if v, name := pageParam(get, "current_page", aliases, p); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			p.add(name, "must be an integer ≥ 0, got %q", v)
		} else {
			pg.current = n
		}
	}
	if v, name := pageParam(get, "page_size", aliases, p); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > maxSize {
			p.add(name, "must be an integer from 1 to %d, got %q", maxSize, v)
		} else {
			pg.size = n
		}
	}
	return pg
}

// pageParam is the value of paging parameter name ("" when not sent) and
// the name it was sent under: name, else its alias. Both sent with
// different values is a problem, as which one counts would be a guess.
func pageParam(get func(string, ...string) string, name string, aliases map[string]string, p *problems) (v, sentAs string) {
	v, alias := get(name), aliases[name]
	if alias == "" {
		return v, name
	}
	switch av := get(alias); {
	case v == "":
		return av, alias
	case av != "" && av != v:
		p.add(alias, "conflicts with %s; send only one of them", name)
	}
	return v, name
}

// slice returns the bounds of page pg in a list of n items; a page past
// the end (however large current_page is) is empty. The policies' pages,
// which also allow a page_size of 0, share the arithmetic.
func (pg page) slice(n int) (int, int) {
	return policyPage(pg).slice(n)
}

// listBody is the admin API's list envelope.
type listBody struct {
	Object string `json:"object"`
	Total  int    `json:"total"`
	Data   any    `json:"data"`
}

// queryEnum reads the optional list filter name: "" when absent, else one
// of allowed (anything else is a problem).
func queryEnum(c *fiber.Ctx, name string, allowed []string, p *problems) string {
	v := c.Query(name)
	if v != "" && !slices.Contains(allowed, v) {
		p.add(name, "must be one of %v, got %q", allowed, v)
	}
	return v
}

// sendList answers page pg (a page or a policyPage) of every match out in
// the list envelope; an empty page is [] rather than null.
func sendList[T any](c *fiber.Ctx, pg interface{ slice(n int) (int, int) }, out []T) error {
	lo, hi := pg.slice(len(out))
	return c.JSON(listBody{Object: "list", Total: len(out), Data: nonNil(out[lo:hi])})
}
