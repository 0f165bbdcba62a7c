// Package config is the gateway's routing configuration: the config object
// sent in x-gateway-config (inline JSON) or saved through the admin API,
// its parsing and validation (400 AB01 listing every problem with its JSON
// path), and its resolution into a tree of nodes with inherited settings.
package config

import (
	"encoding/json"
	"time"

	"github.com/llm-gateway/gateway/core"
	"github.com/llm-gateway/gateway/hooks"
)

// Strategy modes.
const (
	ModeSingle      = "single"
	ModeFallback    = "fallback"
	ModeLoadbalance = "loadbalance"
	ModeConditional = "conditional"
)

// Config is one config object as written by a user: the root, or any
// target under it. A target with Targets is a group routed by Strategy; a
// target without is a leaf that calls one provider.
type Config struct {
	Strategy       *Strategy       `json:"strategy,omitempty"`
	Targets        []*Config       `json:"targets,omitempty"`
	Name           string          `json:"name,omitempty"`
	Weight         *float64        `json:"weight,omitempty"`
	Provider       string          `json:"provider,omitempty"`
	APIKey         string          `json:"api_key,omitempty"`
	VirtualKey     string          `json:"virtual_key,omitempty"`
	CustomHost     string          `json:"custom_host,omitempty"`
	ForwardHeaders []string        `json:"forward_headers,omitempty"`
	OverrideParams map[string]any  `json:"override_params,omitempty"`
	Retry          *Retry          `json:"retry,omitempty"`
	Cache          *Cache          `json:"cache,omitempty"`
	RequestTimeout *int64          `json:"request_timeout,omitempty"` // milliseconds
	CircuitBreaker *CircuitBreaker `json:"circuit_breaker,omitempty"`
	BeforeHooks    json.RawMessage `json:"before_request_hooks,omitempty"`
	AfterHooks     json.RawMessage `json:"after_request_hooks,omitempty"`
	InputGuards    json.RawMessage `json:"input_guardrails,omitempty"`
	OutputGuards   json.RawMessage `json:"output_guardrails,omitempty"`
	Strict         *bool           `json:"strict_reference_compliance,omitempty"` // alias strict_open_ai_compliance
	// The azure_* fields (azure-openai targets), aws_* fields (bedrock
	// targets) and vertex_* fields (vertex-ai targets), in the JSON at this
	// level.
	core.AzureSettings
	core.AWSSettings
	core.VertexSettings

	// before and after are the parsed hooks of this target itself:
	// before_request_hooks + input_guardrails, after_request_hooks +
	// output_guardrails.
	before, after []hooks.Spec
}

// Strategy says how a group picks among its targets.
type Strategy struct {
	Mode string `json:"mode"`
	// OnStatusCodes (fallback): answers with these statuses move on to the
	// next target; empty means any non-2xx.
	OnStatusCodes []int `json:"on_status_codes,omitempty"`
	// Conditions and Default (conditional) name targets by their Name.
	Conditions []Condition `json:"conditions,omitempty"`
	Default    string      `json:"default,omitempty"`
}

// Condition routes to the target named Then when Query matches.
type Condition struct {
	Query map[string]any `json:"query"`
	Then  string         `json:"then"`
}

// Retry settings of a target; replaced whole by a child's.
type Retry struct {
	Attempts int `json:"attempts"`
	// OnStatusCodes default to 429, 500, 502, 503, 504.
	OnStatusCodes       []int `json:"on_status_codes,omitempty"`
	UseRetryAfterHeader bool  `json:"use_retry_after_header,omitempty"`
}

// DefaultRetryStatusCodes are retried when a retry sets no status codes.
var DefaultRetryStatusCodes = []int{429, 500, 502, 503, 504}

// Cache modes.
const (
	CacheSimple   = "simple"
	CacheSemantic = "semantic"
)

// Cache settings of a target; replaced whole by a child's.
type Cache struct {
	Mode   string `json:"mode"`
	MaxAge int64  `json:"max_age,omitempty"` // seconds, 1 to MaxCacheAge; 0 (unset) means the gateway default
	// SimilarityThreshold (semantic) is the cosine similarity above which an
	// earlier answer is reused; default 0.95.
	SimilarityThreshold *float64 `json:"similarity_threshold,omitempty"`
	// Embedding (semantic) names the provider that embeds the conversation.
	Embedding *EmbeddingProvider `json:"embedding,omitempty"`
}

// EmbeddingProvider is where the semantic cache gets its embeddings.
type EmbeddingProvider struct {
	Provider   string `json:"provider"`
	Model      string `json:"model"`
	APIKey     string `json:"api_key,omitempty"`
	CustomHost string `json:"custom_host,omitempty"`
}

// CircuitBreaker settings of a target (inherited when a child sets none).
type CircuitBreaker struct {
	// FailureThreshold consecutive failures open the breaker (default 5).
	FailureThreshold int `json:"failure_threshold,omitempty"`
	// FailureRatio (0..1], with MinRequests, opens it on a failure ratio.
	FailureRatio float64 `json:"failure_ratio,omitempty"`
	MinRequests  int     `json:"min_requests,omitempty"`
	// CooldownMs is how long it stays open (default 30000).
	CooldownMs int64 `json:"cooldown_ms,omitempty"`
	// OnStatusCodes count as failures; default: 5xx answers. Timeouts and
	// connection failures always count.
	OnStatusCodes []int `json:"on_status_codes,omitempty"`
}

// Node is a resolved config: inheritance applied, defaults filled, ready to
// route. Nodes are immutable once resolved and shared between requests.
type Node struct {
	// Path names the node in x-gateway-last-used-option-index, e.g.
	// "config.targets[1].targets[0]"; the root is "config".
	Path   string
	Name   string
	Weight float64 // default 1
	// Strategy and Children are set on a group; Leaf on a target.
	Strategy Strategy
	Children []*Node
	Leaf     *Leaf
	// Before and After are the node's own hooks: they run when the router
	// enters the node and when it leaves it with a 2xx answer. A target's
	// hooks are not copied to its children; the parent's have run already.
	Before, After []hooks.Spec
}

// Leaf is a target that calls one provider, with its effective settings.
type Leaf struct {
	// Provider is empty when the config leaves it to the request headers.
	Provider       string
	APIKey         string
	VirtualKey     string
	CustomHost     string
	Azure          core.AzureSettings
	AWS            core.AWSSettings
	Vertex         core.VertexSettings
	ForwardHeaders []string
	OverrideParams map[string]any
	Retry          *Retry
	Cache          *Cache
	Timeout        time.Duration // 0: none
	CircuitBreaker *CircuitBreaker
	Strict         *bool
	// Hooks and guardrails as written in the config (JSON arrays, checked
	// by the hooks package); nil when no node on the way sets them.
}

// Saved is a saved config as requests are routed by it: its record's id,
// the config and its resolved tree.
type Saved struct {
	ID     string
	Config *Config
	Node   *Node
}
