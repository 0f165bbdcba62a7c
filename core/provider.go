package core

import (
	"context"
	"net/http"
)

// Provider turns a request for a target into the provider's own HTTP request.
// Answers in the OpenAI shape are passed through unchanged; a provider whose
// wire format differs also implements ResponseTranslator and
// StreamTranslator.
type Provider interface {
	// Name is what x-gateway-provider selects, e.g. "openai".
	Name() string
	// Supports reports whether the provider serves endpoint e.
	Supports(e Endpoint) bool
	// BuildRequest builds the upstream request, with the provider's URL and
	// authentication, for req sent to target t.
	BuildRequest(ctx context.Context, req *Request, t *Target) (*http.Request, error)
}

// ResponseTranslator is implemented by providers whose answers are not in the
// OpenAI shape. It is found by type assertion. The pipeline calls it on every
// whole answer from the provider (not on cached ones, which are stored
// translated), before the cache and the afterResponseHook hooks see it:
// TranslateResponse rewrites resp.Body (and its headers) in place for the
// request req, and leaves answers of other endpoints as they are. An error
// means a 2xx answer it could not read.
type ResponseTranslator interface {
	TranslateResponse(req *Request, resp *Response) error
}

// StreamTranslator is implemented by providers whose event streams are not
// in the OpenAI shape. It is found by type assertion. The pipeline calls it
// on every event stream from the provider (resp.SSE), before the cache keeps
// a copy: TranslateStream replaces resp.Stream with the stream in the OpenAI
// shape for the request req, translated event by event as each arrives (it
// holds back no more than the one event being read), and leaves streams of
// other endpoints as they are. For such a provider an answer of
// ContentTypeAWSEventStream is an event stream too: its translation makes
// it server-sent events (Content-Type text/event-stream).
type StreamTranslator interface {
	TranslateStream(req *Request, resp *Response)
}

// ModelNamer is implemented by providers whose target, not the request,
// decides the model (azure-openai: the deployment's). It is found by type
// assertion: ModelOf names the model req is answered by on target t, for
// the log record and the usage's cost; "" leaves the request's model.
type ModelNamer interface {
	ModelOf(req *Request, t *Target) string
}

// ContentTypeAWSEventStream is the Content-Type of AWS's binary event
// stream (Bedrock's ConverseStream answers).
const ContentTypeAWSEventStream = "application/vnd.amazon.eventstream"

// GuardedClientUser is implemented by providers that make HTTP calls of
// their own to addresses their settings name while building a request
// (vertex-ai's service-account token exchange at the key's token_uri). It
// is found by type assertion: the pipeline hands such a provider its
// client for user-supplied hosts (its dials refuse private and reserved
// addresses) once, when it is built, before any request.
type GuardedClientUser interface {
	UseGuardedClient(c *http.Client)
}
