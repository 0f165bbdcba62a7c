// Package hooks holds the two stages every request passes through,
// beforeRequestHook and afterResponseHook, the hook and check model (parsed
// from configs and saved guardrails), and the runner that executes a stage's
// hooks.
//
// Built-in checks are plugins of kind "guardrails", registered with
// RegisterCheck under "guardrails.<check id>" (for example
// "guardrails.default.contains"). Checks of uploaded WASM plugins
// ("<plugin-id>.<function>") and saved guardrails come from the sources of
// a Registry, which each app builds for itself and hands to the config
// parser (Registry.ParseList) and to its Runner.
package hooks

import "github.com/llm-gateway/gateway/core"

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

// Registry resolves the check ids and saved guardrails that hooks name:
// built-in checks, then an app's own sources. Each app builds its own, so
// apps in one process do not see each other's plugins or guardrails. A nil
// *Registry resolves built-in checks only. Its fields must not change once
// it is in use.
type Registry struct {
	// Checks finds checks that are not built in; nil means none.
	Checks CheckSource
	// Guardrails finds saved guardrails; nil means none.
	Guardrails GuardrailSource
}

// LookupCheck finds a check by id: a built-in one, else one from the
// registry's check source.
func (r *Registry) LookupCheck(id string) (Check, bool) {
	if c, ok := LookupCheck(id); ok {
		return c, true
	}
	if r != nil && r.Checks != nil {
		return r.Checks(id)
	}
	return nil, false
}

// LookupGuardrail finds a saved guardrail by id or slug.
func (r *Registry) LookupGuardrail(ref string) (Spec, bool) {
	if r != nil && r.Guardrails != nil {
		return r.Guardrails(ref)
	}
	return Spec{}, false
}

// LookupCheck finds a built-in check by id (see Registry.LookupCheck for
// an app's checks).
func LookupCheck(id string) (Check, bool) {
	if info, ok := core.LookupPlugin(core.KindGuardrails + "." + id); ok {
		if c, ok := info.New().(Check); ok {
			return c, true
		}
	}
	return nil, false
}
