package core

import (
	"context"
	"net/http"
)

// Provider turns a request for a target into the provider's own HTTP request.
// Answers in the OpenAI shape are passed through unchanged; a provider whose
// wire format differs also implements ResponseTranslator.
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
// OpenAI shape. It is found by type assertion.
type ResponseTranslator interface {
	TranslateResponse(req *Request, resp *Response) error
}
