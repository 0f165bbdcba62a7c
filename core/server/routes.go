package server

import (
	"bytes"
	"context"
	"errors"
	"net/url"
	"strings"

	"github.com/gofiber/fiber/v2"

	"github.com/llm-gateway/gateway/core"
	"github.com/llm-gateway/gateway/core/config"
	"github.com/llm-gateway/gateway/core/pipeline"
	"github.com/llm-gateway/gateway/core/schema"
)

// bodyCheck validates a request before it is sent and fills what the body
// tells (model, stream). It may rewrite req.Body. model says whether a body
// may leave model out (see Server.modelOptional).
type bodyCheck func(c *fiber.Ctx, req *core.Request, model schema.ModelOptional) *core.Error

// fromInfo adapts a schema validator into a bodyCheck.
func fromInfo(validate func([]byte) (schema.Info, *core.Error)) bodyCheck {
	return fromModelInfo(func(body []byte, _ schema.ModelOptional) (schema.Info, *core.Error) { return validate(body) })
}

// fromModelInfo adapts a schema validator of a body that names a model,
// unless it is told it may leave it out, into a bodyCheck.
func fromModelInfo(validate func([]byte, schema.ModelOptional) (schema.Info, *core.Error)) bodyCheck {
	return func(_ *fiber.Ctx, req *core.Request, model schema.ModelOptional) *core.Error {
		info, err := validate(req.Body, model)
		req.Model, req.Stream, req.IncludeUsage = info.Model, info.Stream, info.IncludeUsage
		return err
	}
}

// checkChat validates a chat completion, spec §4.3.
func checkChat(c *fiber.Ctx, req *core.Request, model schema.ModelOptional) *core.Error {
	info, err := schema.ValidateChatCompletion(req.Body, schema.ChatOptions{StrictCompliance: req.StrictCompliance, ModelOptional: model})
	req.Model, req.Stream, req.IncludeUsage, req.StrictCompliance = info.Model, info.Stream, info.IncludeUsage, info.StrictCompliance
	if err != nil {
		return err
	}
	req.JSON = info.Body
	if info.HasGatewayFields {
		body, serr := schema.StripGatewayFields(req.Body)
		if serr != nil {
			return core.BadRequest("body", "request body: %v", serr)
		}
		req.Body, req.JSON = body, nil
	}
	return nil
}

// checkMultipart checks the multipart form of an image edit, a
// transcription or a translation, passed through byte for byte otherwise:
// more than one model field is refused (see core.MultipartModel).
func checkMultipart(_ *fiber.Ctx, req *core.Request, _ schema.ModelOptional) *core.Error {
	_, err := core.MultipartModel(req)
	return err
}

// strictCompliance reads x-gateway-strict-open-ai-compliance (alias
// x-gateway-strict-reference-compliance), else cfgStrict, the config's
// strict_reference_compliance (nil when unset); on by default.
func strictCompliance(c *fiber.Ctx, cfgStrict *bool) (bool, *core.Error) {
	raw := gatewayHeader(c, "strict-open-ai-compliance")
	if raw == "" {
		raw = gatewayHeader(c, "strict-reference-compliance")
	}
	if raw == "" && cfgStrict != nil {
		return *cfgStrict, nil
	}
	switch strings.ToLower(strings.TrimSpace(raw)) {
	case "", "true":
		return true, nil
	case "false":
		return false, nil
	}
	return true, core.BadRequest("x-gateway-strict-open-ai-compliance", "x-gateway-strict-open-ai-compliance must be true or false, got %q", raw)
}

// checkInputItems validates GET /responses/{id}/input_items, spec §4.2. A
// parameter given twice is refused: only one value is checked, and the
// provider might read the other. So is an id of slashes (%2F), which the
// path sent on would lose (see emptyResponseID).
func checkInputItems(c *fiber.Ctx, req *core.Request, _ schema.ModelOptional) *core.Error {
	if emptyResponseID(c) {
		return refuseEmptyResponseID(c, req, nil)
	}
	args := c.Context().QueryArgs()
	for _, name := range []string{"limit", "order", "after", "before"} {
		if len(args.PeekMulti(name)) > 1 {
			return core.BadRequest(name, "%s is given more than once; give it once", name)
		}
	}
	_, err := schema.ValidateInputItemsQuery(func(name string) (string, bool) {
		return c.Query(name), args.Has(name)
	})
	return err
}

// emptyResponseID reports whether the client sent GET
// /v1/responses//input_items: a response id left empty (or made of
// slashes, %2F), which the routing (runs of "/" as one, see checkSegments)
// and fasthttp's normalising of the path sent on take out, so that the
// generic proxy would ask for the response whose id is "input_items".
func emptyResponseID(c *fiber.Ctx) bool {
	if !bytes.EqualFold(bytes.TrimRight(c.Request().URI().Path(), "/"), []byte("/v1/responses/input_items")) {
		return false
	}
	// The path as the request line gave it: the routing rewrote the URI's.
	sent, _, _ := strings.Cut(string(c.Request().Header.RequestURI()), "?")
	if p, err := url.PathUnescape(sent); err == nil {
		sent = p
	}
	return strings.HasSuffix(strings.ToLower(strings.TrimRight(sent, "/")), "//input_items")
}

// refuseEmptyResponseID is the 400 for an empty response id (see
// emptyResponseID).
func refuseEmptyResponseID(*fiber.Ctx, *core.Request, schema.ModelOptional) *core.Error {
	return core.BadRequest("response_id", "response_id is empty: GET /v1/responses/{response_id}/input_items needs the id of a stored response")
}

// registerDataRoutes adds the unified routes and, after them, the generic
// proxy that forwards any other path unchanged.
func (s *Server) registerDataRoutes(v1 fiber.Router) {
	routes := []struct {
		method, path string
		endpoint     core.Endpoint
		check        bodyCheck
	}{
		{fiber.MethodPost, "/chat/completions", core.EndpointChatComplete, checkChat},
		{fiber.MethodPost, "/completions", core.EndpointComplete, fromModelInfo(schema.ValidateCompletion)},
		{fiber.MethodPost, "/embeddings", core.EndpointEmbed, fromModelInfo(schema.ValidateEmbedding)},
		{fiber.MethodPost, "/images/generations", core.EndpointImageGenerate, fromInfo(schema.ValidateImageGeneration)},
		{fiber.MethodPost, "/images/edits", core.EndpointImageEdit, checkMultipart},
		{fiber.MethodPost, "/audio/speech", core.EndpointCreateSpeech, fromInfo(schema.ValidateModelOnly)},
		{fiber.MethodPost, "/audio/transcriptions", core.EndpointTranscription, checkMultipart},
		{fiber.MethodPost, "/audio/translations", core.EndpointTranslation, checkMultipart},
		{fiber.MethodPost, "/moderations", core.EndpointModeration, fromInfo(schema.ValidateModelOnly)},
		{fiber.MethodPost, "/rerank", core.EndpointRerank, fromInfo(schema.ValidateRerank)},
		{fiber.MethodPost, "/responses", core.EndpointResponses, fromInfo(schema.ValidateResponses)},
		{fiber.MethodGet, "/responses/:id/input_items", core.EndpointResponseItems, checkInputItems},
		{fiber.MethodPost, "/messages", core.EndpointMessages, fromModelInfo(schema.ValidateMessages)},
		{fiber.MethodPost, "/messages/count_tokens", core.EndpointMessagesCount, fromModelInfo(schema.ValidateMessages)},
	}
	s.logPaths = make(map[string]string, len(routes))
	for _, r := range routes {
		v1.Add(r.method, r.path, s.serve(r.endpoint, r.check))
		if !strings.ContainsAny(r.path, ":*") {
			s.logPaths[r.path] = "/v1" + r.path
		}
	}
}

// registerProxy adds the generic proxy: any other path, for the four
// methods the spec names. It goes last, after every route it must not take.
func (s *Server) registerProxy(v1 fiber.Router) {
	proxy := s.serve(core.EndpointProxy, nil)
	for _, m := range []string{fiber.MethodPost, fiber.MethodPut, fiber.MethodDelete} {
		v1.Add(m, "/*", proxy)
	}
	// GET /v1/responses//input_items is routed as /v1/responses/input_items
	// and reaches the proxy: its empty id is refused.
	emptyID := s.serve(core.EndpointResponseItems, refuseEmptyResponseID)
	v1.Add(fiber.MethodGet, "/*", func(c *fiber.Ctx) error {
		if emptyResponseID(c) {
			return emptyID(c)
		}
		return proxy(c)
	})
}

// serve is the handler of every data-plane route: scope check, request
// parsing, then run.
func (s *Server) serve(endpoint core.Endpoint, check bodyCheck) fiber.Handler {
	return func(c *fiber.Ctx) error {
		if err := needScope(Principal(c), core.ScopeCompletionsWrite); err != nil {
			return err
		}
		req, err := s.newRequest(c, endpoint, core.ManagedRef{})
		return s.run(c, req, err, check)
	}
}

// needScope refuses a principal without scope.
func needScope(p *core.Principal, scope string) *core.Error {
	if p == nil || !p.HasScope(scope) {
		return core.Forbidden("this API key lacks the %s scope that this route needs", scope)
	}
	return nil
}

// run takes a data-plane request from routing to the answer: config,
// validation (check), limits, the pipeline, the answer and the log record.
// err is a problem found while making req: it is answered and logged.
func (s *Server) run(c *fiber.Ctx, req *core.Request, err *core.Error, check bodyCheck) error {
	var rt route
	if err == nil {
		rt, err = s.routeFor(c, req.Principal, req.Target.Provider, req.Metadata[core.MetadataEnvironment])
		rt = s.withWorkspaceGuardrails(rt, req.Principal)
		req.ConfigID, req.StoredConfig, req.RoutedByConfig = rt.savedID, rt.stored, rt.cfg != nil
	}
	if err == nil && rt.cfg == nil && req.Target.Provider == "" {
		err = s.missingProvider()
	}
	if err == nil {
		req.StrictCompliance, err = strictCompliance(c, rt.strict())
	}
	if err == nil && check != nil {
		err = check(c, req, s.modelOptional(req, rt.node))
	}
	var adm core.Admission
	if err == nil && s.limiter != nil {
		adm, err = s.limiter.Admit(context.Background(), req)
	}
	if err != nil {
		s.record(req, nil, err.Status, core.Usage{}, err)
		return err
	}
	resp, derr := s.pipeline.DoRoute(context.Background(), req, rt.node)
	if derr != nil {
		ce := asCoreError(derr)
		var re *pipeline.RouteError
		if !errors.As(derr, &re) {
			s.record(req, nil, ce.Status, core.Usage{}, derr)
			return ce
		}
		// The 446 of a withheld answer is logged with its usage.
		s.record(req, nil, ce.Status, countWithheld(req, adm, re.Withheld, re.Refused), derr)
		if re.OptionPath != "" {
			setRoutingHeaders(&c.Response().Header, &re.Routing)
		}
		if re.HookResults != nil {
			// A guardrail's refusal says which hooks decided it.
			c.Status(ce.Status).Set(fiber.HeaderContentType, fiber.MIMEApplicationJSON)
			sendWithHookResults(c, ce.Body(), re.HookResults)
			return nil
		}
		return ce
	}
	if resp.Withheld != nil {
		countWithheld(req, adm, resp.Withheld, nil)
		resp.Withheld = nil // their bytes are not kept while the answer is written
	}
	return s.writeResponse(c, req, resp, adm)
}

// modelOptional says whether req's body may leave model out, which the
// unified routes otherwise require: when every target of root (see
// pipeline.EveryTarget) picks the model itself (core.Target.PicksModel: an
// Azure OpenAI deployment, whose model the request log then names by its
// azure_model_name, else its deployment id). It is asked only for a body
// without model.
func (s *Server) modelOptional(req *core.Request, root *config.Node) schema.ModelOptional {
	return func() bool {
		return s.pipeline.EveryTarget(context.Background(), req, root, (*core.Target).PicksModel)
	}
}

func asCoreError(err error) *core.Error {
	var ce *core.Error
	if errors.As(err, &ce) {
		return ce
	}
	return core.Internal(err, "internal error")
}
