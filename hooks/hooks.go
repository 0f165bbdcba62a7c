// Package hooks holds the two stages every request passes through,
// beforeRequestHook and afterResponseHook, the hook and check model (parsed
// from configs and saved guardrails), and the runner that executes a stage's
// hooks.
//
// Built-in checks are plugins of kind "guardrails", registered with
// RegisterCheck under "guardrails.<check id>" (for example
// "guardrails.default.contains"). Checks of uploaded WASM plugins
// ("<plugin-id>.<function>") and saved guardrails come from sources the
// gateway sets at start (SetCheckSource, SetGuardrailSource).
package hooks

import (
	"sync/atomic"

	"github.com/llm-gateway/gateway/core"
)

// Stage names a point of the pipeline where hooks run.
type Stage string

// The two stages.
const (
	BeforeRequest Stage = "beforeRequestHook"
	AfterResponse Stage = "afterResponseHook"
)

// ParseStage turns a stage name into a Stage; "afterRequestHook" is accepted
// as an alias of afterResponseHook.
func ParseStage(s string) (Stage, bool) {
	switch s {
	case string(BeforeRequest):
		return BeforeRequest, true
	case string(AfterResponse), "afterRequestHook":
		return AfterResponse, true
	}
	return "", false
}

// RegisterCheck registers a built-in check under its check id (for
// example "default.contains"), as plugin "guardrails.<id>".
func RegisterCheck(id string, c Check) {
	core.Register(core.PluginInfo{ID: core.KindGuardrails + "." + id, New: func() core.Plugin { return c }})
}

// CheckSource finds checks that are not built in (WASM plugins).
type CheckSource func(id string) (Check, bool)

// GuardrailSource finds a saved guardrail by id or slug, as a hook.
type GuardrailSource func(ref string) (Spec, bool)

var (
	checkSource     atomic.Pointer[CheckSource]
	guardrailSource atomic.Pointer[GuardrailSource]
)

// SetCheckSource sets where non-built-in checks come from.
func SetCheckSource(s CheckSource) { checkSource.Store(&s) }

// SetGuardrailSource sets where saved guardrails come from.
func SetGuardrailSource(s GuardrailSource) { guardrailSource.Store(&s) }

// LookupCheck finds a check by id: a built-in one, else one from the check
// source.
func LookupCheck(id string) (Check, bool) {
	if info, ok := core.LookupPlugin(core.KindGuardrails + "." + id); ok {
		if c, ok := info.New().(Check); ok {
			return c, true
		}
	}
	if s := checkSource.Load(); s != nil {
		return (*s)(id)
	}
	return nil, false
}

// LookupGuardrail finds a saved guardrail by id or slug.
func LookupGuardrail(ref string) (Spec, bool) {
	if s := guardrailSource.Load(); s != nil {
		return (*s)(ref)
	}
	return Spec{}, false
}
