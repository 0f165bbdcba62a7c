package config

import (
	"maps"
	"math"
	"slices"
	"strconv"
	"time"

	"github.com/llm-gateway/gateway/core"
)

// DefaultSimilarityThreshold is a semantic cache's threshold when the
// config sets none.
const DefaultSimilarityThreshold = 0.95

// inherited is what a node passes down to its targets.
type inherited struct {
	provider, apiKey, virtualKey string
	customHost                   string
	azure                        core.AzureSettings
	aws                          core.AWSSettings
	vertex                       core.VertexSettings
	forwardHeaders               []string
	overrideParams               map[string]any
	retry                        *Retry
	cache                        *Cache
	timeoutMs                    *int64
	circuitBreaker               *CircuitBreaker
	strict                       *bool
}

// Resolve turns a parsed config into its tree of nodes: paths named,
// weights and strategies defaulted, and settings inherited down to the
// leaves. It expects a config from Parse (a hand-built one is resolved as
// well as it can be); the result is immutable and may be shared between
// requests. Resolve(nil) is nil.
//
// Inheritance, from a node to its targets:
//   - override_params: merged, the child's top-level keys win;
//   - retry, cache: a child's replaces the parent's whole;
//   - request_timeout, custom_host, forward_headers, circuit_breaker,
//     strict_reference_compliance, each azure_* and vertex_* field,
//     aws_region: the parent's when the child sets none; the aws
//     credentials: the parent's when the child sets none of them
//     (an explicit empty array is "set": a child can switch off
//     forward_headers with []);
//   - provider, virtual_key: the parent's when the child sets neither; then
//     api_key too, unless the child sets its own;
//   - hooks are not inherited: each node keeps its own (Node.Before,
//     Node.After), run when the router enters and leaves it.
func Resolve(c *Config) *Node {
	if c == nil {
		return nil
	}
	return resolve(c, RootPath, inherited{})
}

func resolve(c *Config, path string, parent inherited) *Node {
	in := parent.with(c)
	n := &Node{Path: path, Name: c.Name, Weight: 1, Before: slices.Clone(c.before), After: slices.Clone(c.after)}
	if c.Weight != nil {
		n.Weight = *c.Weight
	}
	if len(c.Targets) == 0 {
		n.Leaf = in.leaf()
		return n
	}
	if c.Strategy != nil {
		n.Strategy = *c.Strategy
		n.Strategy.OnStatusCodes = slices.Clone(c.Strategy.OnStatusCodes)
		n.Strategy.Conditions = slices.Clone(c.Strategy.Conditions)
	}
	if n.Strategy.Mode == "" {
		n.Strategy.Mode = ModeSingle
	}
	n.Children = make([]*Node, 0, len(c.Targets))
	for i, t := range c.Targets {
		if t == nil {
			continue
		}
		n.Children = append(n.Children, resolve(t, path+".targets["+strconv.Itoa(i)+"]", in))
	}
	return n
}

// with applies a node's own settings over what its parent passes down.
func (in inherited) with(c *Config) inherited {
	if c.Provider != "" || c.VirtualKey != "" {
		in.provider, in.virtualKey, in.apiKey = c.Provider, c.VirtualKey, c.APIKey
	} else if c.APIKey != "" {
		in.apiKey = c.APIKey
	}
	if c.CustomHost != "" {
		in.customHost = c.CustomHost
	}
	in.azure = c.AzureSettings.Over(in.azure)
	in.aws = c.AWSSettings.Over(in.aws)
	in.vertex = c.VertexSettings.Over(in.vertex)
	if c.ForwardHeaders != nil {
		in.forwardHeaders = c.ForwardHeaders
	}
	if len(c.OverrideParams) > 0 {
		merged := make(map[string]any, len(in.overrideParams)+len(c.OverrideParams))
		maps.Copy(merged, in.overrideParams)
		maps.Copy(merged, c.OverrideParams)
		in.overrideParams = merged
	}
	if c.Retry != nil {
		in.retry = c.Retry
	}
	if c.Cache != nil {
		in.cache = c.Cache
	}
	if c.RequestTimeout != nil {
		in.timeoutMs = c.RequestTimeout
	}
	if c.CircuitBreaker != nil {
		in.circuitBreaker = c.CircuitBreaker
	}
	if c.Strict != nil {
		in.strict = c.Strict
	}
	return in
}

// leaf builds a leaf's effective settings, copying what the config owns so
// that the resolved tree shares nothing mutable with it, and filling the
// defaults of retry status codes and of the semantic cache threshold.
func (in inherited) leaf() *Leaf {
	l := &Leaf{
		Provider:       in.provider,
		APIKey:         in.apiKey,
		VirtualKey:     in.virtualKey,
		CustomHost:     in.customHost,
		Azure:          in.azure,
		AWS:            in.aws,
		Vertex:         in.vertex,
		ForwardHeaders: slices.Clone(in.forwardHeaders),
		OverrideParams: maps.Clone(in.overrideParams),
		Strict:         cloneBool(in.strict),
	}
	if in.retry != nil {
		r := *in.retry
		r.OnStatusCodes = slices.Clone(r.OnStatusCodes)
		if len(r.OnStatusCodes) == 0 {
			r.OnStatusCodes = slices.Clone(DefaultRetryStatusCodes)
		}
		l.Retry = &r
	}
	if in.cache != nil {
		c := *in.cache
		if c.Embedding != nil {
			e := *c.Embedding
			c.Embedding = &e
		}
		if c.SimilarityThreshold != nil {
			t := *c.SimilarityThreshold
			c.SimilarityThreshold = &t
		} else if c.Mode == CacheSemantic {
			t := DefaultSimilarityThreshold
			c.SimilarityThreshold = &t
		}
		l.Cache = &c
	}
	if in.timeoutMs != nil && *in.timeoutMs > 0 {
		ms := min(*in.timeoutMs, math.MaxInt64/int64(time.Millisecond))
		l.Timeout = time.Duration(ms) * time.Millisecond
	}
	if in.circuitBreaker != nil {
		cb := *in.circuitBreaker
		cb.OnStatusCodes = slices.Clone(cb.OnStatusCodes)
		l.CircuitBreaker = &cb
	}
	return l
}

func cloneBool(b *bool) *bool {
	if b == nil {
		return nil
	}
	v := *b
	return &v
}

// Single is the tree of a request that sends no config: one leaf at the
// root path "config", weight 1.
func Single(leaf Leaf) *Node {
	return &Node{Path: RootPath, Weight: 1, Leaf: &leaf}
}

// IsLeaf reports whether n calls a provider (rather than routing among
// targets).
func (n *Node) IsLeaf() bool { return n.Leaf != nil }

// Leaves returns the leaves under n (n itself when it is one), depth
// first, in target order.
func (n *Node) Leaves() []*Node {
	var out []*Node
	var walk func(*Node)
	walk = func(n *Node) {
		if n.Leaf != nil {
			out = append(out, n)
			return
		}
		for _, c := range n.Children {
			walk(c)
		}
	}
	walk(n)
	return out
}

// Child returns n's first target named name, or nil.
func (n *Node) Child(name string) *Node {
	for _, c := range n.Children {
		if c.Name == name {
			return c
		}
	}
	return nil
}

// Choose picks the target of a conditional group: the target named by the
// first condition whose query matches data, else the default target. No
// match, and no default, is a 400 (param: the group's strategy path).
func (n *Node) Choose(data QueryData) (*Node, *core.Error) {
	param := n.Path + ".strategy"
	for i, cond := range n.Strategy.Conditions {
		ok, err := EvalQuery(cond.Query, data)
		if err != nil {
			return nil, core.BadRequest(param, "%s.conditions[%d].query: %v", param, i, err)
		}
		if ok {
			if c := n.Child(cond.Then); c != nil {
				return c, nil
			}
			return nil, core.BadRequest(param, "%s.conditions[%d].then: %q names no target", param, i, cond.Then)
		}
	}
	if d := n.Strategy.Default; d != "" {
		if c := n.Child(d); c != nil {
			return c, nil
		}
		return nil, core.BadRequest(param, "%s.default: %q names no target", param, d)
	}
	return nil, core.BadRequest(param, "no condition of the conditional config at %s matched the request, and it has no default target", n.Path)
}
