package core

import (
	"io"
	"net/http"
	"time"
)

// Endpoint names the kind of operation a request performs. Providers declare
// which they support; policies and logs group by it.
type Endpoint string

// The endpoints of the unified API. EndpointProxy is any other path, forwarded
// unchanged.
const (
	EndpointChatComplete  Endpoint = "chatComplete"
	EndpointComplete      Endpoint = "complete"
	EndpointEmbed         Endpoint = "embed"
	EndpointImageGenerate Endpoint = "imageGenerate"
	EndpointImageEdit     Endpoint = "imageEdit"
	EndpointCreateSpeech  Endpoint = "createSpeech"
	EndpointTranscription Endpoint = "createTranscription"
	EndpointTranslation   Endpoint = "createTranslation"
	EndpointModeration    Endpoint = "moderate"
	EndpointResponses     Endpoint = "createModelResponse"
	EndpointResponseItems Endpoint = "listResponseInputItems"
	EndpointRerank        Endpoint = "rerank"
	EndpointMessages      Endpoint = "messages"
	EndpointMessagesCount Endpoint = "messagesCountTokens"
	EndpointProxy         Endpoint = "proxy"
)

// Request is one client request as the pipeline's stages see it. The server
// copies everything out of the HTTP framework into it, so it stays valid
// after the handler returns (streams outlive the handler).
type Request struct {
	TraceID      string
	SpanID       string
	ParentSpanID string
	SpanName     string

	Endpoint Endpoint
	Method   string
	// Path is the provider-relative path: the client's path without "/v1",
	// e.g. "/chat/completions" or "/files/abc/content".
	Path     string
	RawQuery string
	// Header holds the client's request headers (canonical names).
	Header http.Header
	Body   []byte
	// JSON is Body already parsed (numbers as json.Number), when a stage has
	// parsed it; nil otherwise. Whoever replaces Body sets JSON to nil.
	// Read-only.
	JSON map[string]any

	// Model and Stream come from the body when the endpoint has one;
	// IncludeUsage is a stream's stream_options.include_usage (chat and
	// text completions): whether the client asked for the usage chunk.
	Model        string
	Stream       bool
	IncludeUsage bool
	// StrictCompliance (on by default) keeps answers to the reference
	// shape: no hook_results event at the start of a stream.
	StrictCompliance bool

	Metadata  map[string]string
	Principal *Principal

	// Target is where the request goes, chosen from the gateway headers.
	Target Target
	// ConfigID is the id of the saved config the request is routed by
	// (named in x-gateway-config, the key's default or the workspace's);
	// empty for an inline config or none.
	ConfigID string
	// StoredConfig is set when the config routed by is a stored one (a
	// saved config or a deployment's) rather than inline: its api_key is
	// never sent to a host the request's headers chose.
	StoredConfig bool
	// RoutedByConfig is set when a config routes the request (inline, a
	// saved one, a key's or workspace's default, a deployment's): which
	// targets it calls is known only as the router walks the config, so
	// the own limits of each managed target are admitted by the pipeline
	// as it calls it (Limiter.AdmitTarget), the headers' target included
	// where a leaf of the config keeps it, and Limiter.Admit leaves
	// Target's out. Without a config the headers' target is the one
	// called, and its limits are admitted with the request.
	RoutedByConfig bool
	// PromptID and PromptSlug name the saved prompt the request was
	// rendered from (/v1/prompts/{id}/completions); empty otherwise.
	PromptID, PromptSlug string
	// Timeout bounds the upstream call (for a stream: until the first byte);
	// zero means none. A config target's request_timeout replaces it.
	Timeout time.Duration

	// CacheNamespace (x-gateway-cache-namespace) partitions the cache;
	// CacheForceRefresh skips the lookup and stores the new answer.
	CacheNamespace    string
	CacheForceRefresh bool

	ReceivedAt time.Time
}

// Target is one upstream the request can be sent to.
type Target struct {
	// Provider is the provider plugin's name, e.g. "openai" or "groq".
	Provider string
	// BaseURL overrides the provider's own base URL (x-gateway-custom-host).
	BaseURL string
	// CustomHost marks BaseURL as user-supplied: its connections go through
	// the address guard.
	CustomHost bool
	// APIKey is the provider credential, sent in the provider's own header.
	APIKey string
	// Azure locates the deployment of an azure-openai target.
	Azure AzureSettings
	// AzureDeployments are a virtual key's deployments (its
	// deploymentConfig): the request's model picks one (see
	// PickAzureDeployment). Empty for every other target.
	AzureDeployments []AzureDeployment
	// AWS is the region and credentials of a bedrock target.
	AWS AWSSettings
	// Vertex is the project and region of a vertex-ai target.
	Vertex VertexSettings
	// ForwardHeaders names client headers to pass upstream unchanged.
	ForwardHeaders []string
	// Headers are extra upstream headers (a managed provider's
	// custom_headers); they replace client headers of the same name.
	Headers map[string]string
	// Managed marks a target whose credential came from the store (an
	// @provider or a virtual key): it is never sent to a host the caller
	// chose, and never carried over to another provider.
	Managed bool
	// ProviderID is the id of the managed provider or virtual key (limits
	// with the implicit condition provider=<id> match it); IntegrationID is
	// the provider's integration (its models' pricing overrides the list
	// prices). Both are empty for unmanaged targets.
	ProviderID    string
	IntegrationID string
	// Models is which models a managed provider's integration lets
	// requests name; nil allows every model.
	Models *ModelAccess
}

// Usage is the token accounting of one answer.
type Usage struct {
	PromptTokens     int `json:"prompt_tokens"`
	CompletionTokens int `json:"completion_tokens"`
	TotalTokens      int `json:"total_tokens"`
}

// Routing is the outcome of routing a request: the target the router's
// walk of its config ended on, the one that answered or, for an error the
// gateway made (a timeout, an unreachable provider, an open circuit
// breaker), the last one tried. It is returned in the x-gateway-* response
// headers and kept in the log record, alike for answers and errors.
type Routing struct {
	// Provider is the name of the target's provider, Model the model it
	// was asked for: the request's, a config target's override_params
	// model, or the one the provider names (ModelNamer). The log record and
	// the usage's cost are the target's.
	Provider string
	Model    string
	// OptionPath is the config path of the target ("config.targets[1]"),
	// RetryCount the retries made on it (-1 when every attempt failed),
	// CacheStatus HIT, MISS, ... or DISABLED ("" when the cache was not
	// consulted). Fallbacks counts the targets whose answers a strategy
	// passed over (a fallback's failed targets) before this one.
	OptionPath  string
	RetryCount  int
	Fallbacks   int
	CacheStatus string
	// ProviderID and IntegrationID are the target's managed provider (or
	// virtual key) and its integration, as in Target; empty for an
	// unmanaged target.
	ProviderID, IntegrationID string
}

// Response is the upstream's answer as the pipeline hands it back. Exactly
// one of Body and Stream is set.
type Response struct {
	Status int
	Header http.Header
	Body   []byte
	// Stream is the still-open upstream body of a streamed answer; whoever
	// writes it to the client closes it.
	Stream io.ReadCloser
	// SSE marks Stream as server-sent events, forwarded event by event.
	SSE bool
	// Routing is the target that answered.
	Routing
	// HookResults, when hooks ran, are returned as "hook_results" (a JSON
	// value: before_request_hooks and after_request_hooks).
	HookResults any
	// Admission is the answering target's share of its own limits when
	// the pipeline admitted them (a managed target a config chose, see
	// Request.RoutedByConfig); nil otherwise. Whoever ends the answer
	// tells it the usage (Done), as it tells the request's admission, and
	// sends its x-ratelimit-* headers when they are the tighter.
	Admission Admission
	// Withheld are the answers an output guardrail withheld on the way
	// to this one (a fallback moved on past them); nil for none. The
	// server counts their usage too.
	Withheld []Withheld
}

// Withheld is an answer a provider produced, and billed, that an
// afterResponseHook guardrail with deny withheld from the client (446).
// The usage it reports counts against the request's limits and its
// target's own as a delivered answer's does, priced for the target that
// produced it (none for a cached answer, as no provider was called).
type Withheld struct {
	// Body is the answer as the guardrails checked it: a whole answer's
	// body, or, with Stream, its event stream's bytes, held whole. The
	// server reads its usage as a delivered answer's.
	Body   []byte
	Stream bool
	// Routing is the target that produced the answer.
	Routing
	// Admission is the target's share of its own limits, as
	// Response.Admission; nil when the pipeline admitted none.
	Admission Admission
}
