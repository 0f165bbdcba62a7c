package server

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"

	"github.com/gofiber/fiber/v2"

	"github.com/llm-gateway/gateway/core"
	"github.com/llm-gateway/gateway/core/prompt"
)

// PromptSource finds a saved prompt's version to render, by the prompt's id
// or slug, as principal p may use it (404 when it may not). ref points into
// the request's buffers: it must not be kept past the call.
type PromptSource interface {
	Prompt(ref string, p *core.Principal) (*prompt.Version, *core.Error)
	// MayView refuses p when it may not see v's template, as a render
	// shows it (the organisation's prompt view settings); running the
	// prompt needs no more than Prompt.
	MayView(p *core.Principal, v *prompt.Version) *core.Error
}

// registerPromptRoutes adds the data plane's saved-prompt routes: render
// (the chat completion request a prompt makes) and completions (that
// request, run like POST /v1/chat/completions).
func (s *Server) registerPromptRoutes(v1 fiber.Router) {
	v1.Post("/prompts/:id/render", s.renderPrompt)
	v1.Post("/prompts/:id/completions", s.promptCompletions)
}

// renderPrompt answers POST /v1/prompts/{id}/render
// {variables, ...hyperparameters} with {"success":true,"data":<request>}.
func (s *Server) renderPrompt(c *fiber.Ctx) error {
	p := Principal(c)
	if err := needScope(p, core.ScopePromptsRender); err != nil {
		return err
	}
	v, err := s.promptFor(c, p)
	if err == nil {
		err = s.prompts.MayView(p, v)
	}
	if err != nil {
		return err
	}
	body, err := renderBody(v, c.Body())
	if err != nil {
		return err
	}
	out := make([]byte, 0, len(body)+len(`{"success":true,"data":}`))
	out = append(append(append(out, `{"success":true,"data":`...), body...), '}')
	c.Set(fiber.HeaderContentType, fiber.MIMEApplicationJSON)
	return c.Send(out)
}

// promptCompletions answers POST /v1/prompts/{id}/completions
// {variables, stream, ...hyperparameters}: the rendered request, run as
// POST /v1/chat/completions is (and logged as it, naming the prompt). The
// prompt's provider or virtual key is used when the headers choose none.
func (s *Server) promptCompletions(c *fiber.Ctx) error {
	p := Principal(c)
	if err := needScope(p, core.ScopeCompletionsWrite); err != nil {
		return err
	}
	v, err := s.promptFor(c, p)
	if err != nil {
		return err
	}
	req, err := s.newRequest(c, core.EndpointChatComplete, core.ManagedRef{Provider: v.Provider, VirtualKey: v.VirtualKey, Path: "prompt"})
	req.Path, req.PromptID, req.PromptSlug = "/chat/completions", v.PromptID, v.Slug
	if err == nil {
		req.Body, err = renderBody(v, req.Body)
	}
	return s.run(c, req, err, checkChat)
}

// promptFor finds the prompt the path names.
func (s *Server) promptFor(c *fiber.Ctx, p *core.Principal) (*prompt.Version, *core.Error) {
	if s.prompts == nil {
		return nil, &core.Error{Status: fiber.StatusNotFound, Type: core.TypeNotFound, Code: core.CodeNotFoundPath,
			Message: "saved prompts are not available on this gateway: it has no prompt store"}
	}
	return s.prompts.Prompt(c.Params("id"), p)
}

// renderBody renders v with a render or completions body: "variables" (a
// JSON object) fill the template, every other field is a hyperparameter.
func renderBody(v *prompt.Version, raw []byte) ([]byte, *core.Error) {
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(raw, &fields); err != nil || fields == nil {
		return nil, core.BadRequest("body", `the request body must be a JSON object: {"variables": {...}, ...hyperparameters}`)
	}
	rawVars, ok := fields["variables"]
	if !ok {
		return nil, core.BadRequest("variables", `variables is required: a JSON object of the prompt's variables, e.g. {"variables": {"name": "Ada"}}`)
	}
	delete(fields, "variables")
	vars, err := decodeVariables(rawVars)
	if err != nil {
		return nil, err
	}
	body, rerr := prompt.Render(v, vars, fields)
	var pe *prompt.ParamError
	var partial *prompt.PartialError
	switch {
	case rerr == nil:
		return body, nil
	case errors.As(rerr, &pe):
		return nil, core.BadRequest(pe.Param, "%s", pe.Error())
	case errors.As(rerr, &partial):
		// Saves keep every included partial in place and within depth;
		// one may still be gone (removed from the store by hand).
		return nil, core.Conflict("saved prompt %s, version %d, cannot be rendered: %v", v.Slug, v.Version, partial)
	}
	return nil, core.Internal(rerr, "saved prompt %s cannot be rendered: %v; fix its template", v.Slug, rerr)
}

// decodeVariables reads the variables: a JSON object whose values are any
// JSON (numbers kept as written).
func decodeVariables(raw json.RawMessage) (map[string]any, *core.Error) {
	var vars map[string]any
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if err := dec.Decode(&vars); err != nil || vars == nil {
		return nil, core.BadRequest("variables", "variables must be a JSON object of the prompt's variables, got %s", abbreviate(string(raw), 40))
	}
	return vars, nil
}

// abbreviate is s cut to at most n bytes (at a character boundary), with
// "..." when cut.
func abbreviate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return strings.ToValidUTF8(s[:n], "") + "..."
}
