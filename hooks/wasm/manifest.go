package wasm

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"regexp"
	"sort"
	"time"

	"github.com/llm-gateway/gateway/core"
)

// Manifest describes an uploaded guardrail plugin: its id, the functions its
// module implements and the limits it asks for.
type Manifest struct {
	ID          string     `json:"id"`
	Name        string     `json:"name,omitempty"`
	Description string     `json:"description,omitempty"`
	Version     int        `json:"version,omitempty"`
	Functions   []Function `json:"functions"`
	Limits      Limits     `json:"limits"`
}

// Function is one check a plugin implements; its check id is
// "<plugin id>.<function id>".
type Function struct {
	ID             string   `json:"id"`
	Name           string   `json:"name,omitempty"`
	SupportedHooks []string `json:"supportedHooks"`
	// Parameters is the JSON Schema of the check's parameters.
	Parameters json.RawMessage `json:"parameters,omitempty"`
}

// Limits are what a plugin asks for; zero values mean the defaults, and
// every value must be within the operator's caps (Options).
type Limits struct {
	// MemoryPages caps the guest's linear memory in 64 KiB pages (default
	// 1024 = 64 MiB, or the operator cap when lower). Go guests need >= 64.
	MemoryPages uint32 `json:"memoryPages,omitempty"`
	// TimeoutMs bounds one call (default 100 ms).
	TimeoutMs int `json:"timeoutMs,omitempty"`
	// OutputBytes caps the result JSON (default: the operator's cap).
	OutputBytes int `json:"outputBytes,omitempty"`
	// Isolation is "pooled" (default: instances are reused) or
	// "per-request" (a fresh instance for every call).
	Isolation string `json:"isolation,omitempty"`
}

// Isolation modes.
const (
	IsolationPooled     = "pooled"
	IsolationPerRequest = "per-request"
)

// Absolute bounds ParseManifest applies; the operator's caps (Options) are
// checked by Host.Validate and Host.Load.
const (
	maxWasmPages              = 65536 // 4 GiB, the wasm32 limit
	maxManifestTimeout        = 60_000
	maxManifestOutput         = 16 << 20
	maxNameLen                = 128
	maxDescriptionLen         = 4096
	maxFunctions              = 64
	defaultTimeout            = 100 * time.Millisecond
	defaultMemoryPages        = 1024
	defaultOutputBytes        = 64 << 10
	defaultCallTimeout        = time.Second
	defaultPoolSize           = 4
	defaultMaxUses            = 10_000
	defaultModuleBytes        = 16 << 20
	defaultInstantiateTimeout = time.Second
	logLineLimit              = 1024
	supportedHooksField       = "supportedHooks"
)

var (
	pluginIDRe   = regexp.MustCompile(`^[a-z0-9][a-z0-9-]{1,62}$`)
	functionIDRe = regexp.MustCompile(`^[a-zA-Z][a-zA-Z0-9_]{0,63}$`)
)

// knownHooks are the stages a function may support; afterRequestHook is an
// alias of afterResponseHook.
var knownHooks = map[string]bool{"beforeRequestHook": true, "afterResponseHook": true, "afterRequestHook": true}

// ParseManifest decodes and checks a manifest. Every problem is reported as
// "<path>: <message>" (for example "functions[1].id: duplicate id \"pii\"");
// the manifest is nil when there is any. Limits are checked against absolute
// bounds here and against the operator's caps by Host.Validate.
func ParseManifest(raw []byte) (*Manifest, []string) {
	var probs []string
	add := func(path, format string, args ...any) {
		probs = append(probs, path+": "+fmt.Sprintf(format, args...))
	}
	var top map[string]json.RawMessage
	if err := json.Unmarshal(raw, &top); err != nil || top == nil {
		return nil, []string{"manifest: not a JSON object"}
	}
	unknownKeys(top, "", []string{"id", "name", "description", "version", "functions", "limits"}, add)

	var m Manifest
	if err := json.Unmarshal(raw, &m); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) && te.Field != "" {
			add(te.Field, "must be %s", manifestKind(te.Type))
		} else {
			add("manifest", "%v", err)
		}
		return nil, probs
	}

	if m.ID == "" {
		add("id", "required")
	} else if !pluginIDRe.MatchString(m.ID) {
		add("id", "must match ^[a-z0-9][a-z0-9-]{1,62}$")
	}
	if len(m.Name) > maxNameLen {
		add("name", "longer than %d characters", maxNameLen)
	}
	if len(m.Description) > maxDescriptionLen {
		add("description", "longer than %d characters", maxDescriptionLen)
	}
	if m.Version < 0 {
		add("version", "must not be negative")
	}

	var rawFuncs []map[string]json.RawMessage
	_ = json.Unmarshal(top["functions"], &rawFuncs)
	switch {
	case len(m.Functions) == 0:
		add("functions", "at least one function is required")
	case len(m.Functions) > maxFunctions:
		add("functions", "at most %d functions", maxFunctions)
	}
	seen := map[string]int{}
	for i, f := range m.Functions {
		p := fmt.Sprintf("functions[%d]", i)
		if i < len(rawFuncs) {
			unknownKeys(rawFuncs[i], p+".", []string{"id", "name", "supportedHooks", "parameters"}, add)
		}
		switch {
		case f.ID == "":
			add(p+".id", "required")
		case !functionIDRe.MatchString(f.ID):
			add(p+".id", "must match ^[a-zA-Z][a-zA-Z0-9_]{0,63}$")
		default:
			if j, dup := seen[f.ID]; dup {
				add(p+".id", "duplicate id %q (also functions[%d])", f.ID, j)
			} else {
				seen[f.ID] = i
			}
		}
		if len(f.Name) > maxNameLen {
			add(p+".name", "longer than %d characters", maxNameLen)
		}
		if len(f.SupportedHooks) == 0 {
			add(p+"."+supportedHooksField, "at least one hook is required")
		}
		for j, hk := range f.SupportedHooks {
			if !knownHooks[hk] {
				add(fmt.Sprintf("%s.%s[%d]", p, supportedHooksField, j), "unknown hook %q (beforeRequestHook, afterResponseHook or afterRequestHook)", hk)
			}
		}
		_, sp := compileParams(f.Parameters, p+".parameters")
		probs = append(probs, sp...)
	}

	var rawLimits map[string]json.RawMessage
	if json.Unmarshal(top["limits"], &rawLimits) == nil {
		unknownKeys(rawLimits, "limits.", []string{"memoryPages", "timeoutMs", "outputBytes", "isolation"}, add)
	}
	l := m.Limits
	if l.MemoryPages > maxWasmPages {
		add("limits.memoryPages", "at most %d", maxWasmPages)
	}
	if l.TimeoutMs < 0 || l.TimeoutMs > maxManifestTimeout {
		add("limits.timeoutMs", "must be between 0 (the default) and %d", maxManifestTimeout)
	}
	if l.OutputBytes < 0 || l.OutputBytes > maxManifestOutput {
		add("limits.outputBytes", "must be between 0 (the default) and %d", maxManifestOutput)
	}
	switch l.Isolation {
	case "", IsolationPooled, IsolationPerRequest:
	default:
		add("limits.isolation", "must be %q or %q", IsolationPooled, IsolationPerRequest)
	}
	if len(probs) > 0 {
		return nil, probs
	}
	return &m, nil
}

func unknownKeys(obj map[string]json.RawMessage, prefix string, known []string, add func(path, format string, args ...any)) {
	var extra []string
	for k := range obj {
		found := false
		for _, n := range known {
			if k == n {
				found = true
				break
			}
		}
		if !found {
			extra = append(extra, k)
		}
	}
	sort.Strings(extra)
	for _, k := range extra {
		add(prefix+k, "unknown field")
	}
}

// manifestKind names the JSON value a manifest field of type t takes:
// core.JSONKind's, with the manifest's numbers (counts and limits) as
// non-negative integers.
func manifestKind(t reflect.Type) string {
	if k := core.JSONKind(t); k != "a number" {
		return k
	}
	return "a non-negative integer"
}

// function returns the manifest's function with the given id.
func (m *Manifest) function(id string) *Function {
	for i := range m.Functions {
		if m.Functions[i].ID == id {
			return &m.Functions[i]
		}
	}
	return nil
}

// limits are a plugin version's effective limits.
type limits struct {
	pages      uint32
	timeout    time.Duration
	output     int
	perRequest bool
}

// limitsFor resolves a manifest's limits against the operator's caps,
// reporting every limit above a cap.
func (o *Options) limitsFor(m *Manifest) (limits, []string) {
	var probs []string
	l := limits{pages: min(defaultMemoryPages, o.MaxMemoryPages), timeout: min(defaultTimeout, o.MaxCallTimeout), output: o.MaxOutputBytes}
	if p := m.Limits.MemoryPages; p != 0 {
		if p > o.MaxMemoryPages {
			probs = append(probs, fmt.Sprintf("limits.memoryPages: %d is above the operator cap of %d", p, o.MaxMemoryPages))
		}
		l.pages = min(p, o.MaxMemoryPages)
	}
	if t := m.Limits.TimeoutMs; t != 0 {
		d := time.Duration(t) * time.Millisecond
		if d > o.MaxCallTimeout {
			probs = append(probs, fmt.Sprintf("limits.timeoutMs: %d is above the operator cap of %d", t, o.MaxCallTimeout.Milliseconds()))
		}
		l.timeout = min(d, o.MaxCallTimeout)
	}
	if b := m.Limits.OutputBytes; b != 0 {
		if b > o.MaxOutputBytes {
			probs = append(probs, fmt.Sprintf("limits.outputBytes: %d is above the operator cap of %d", b, o.MaxOutputBytes))
		}
		l.output = min(b, o.MaxOutputBytes)
	}
	l.perRequest = m.Limits.Isolation == IsolationPerRequest
	return l, probs
}
