// Package prompt renders saved prompts: a prompt version's template (a
// mustache template) filled with the caller's variables, turned into the
// chat completion request the gateway sends. The admin API stores prompts
// and checks their templates with Check; the data plane's
// /v1/prompts/{id}/render and /v1/prompts/{id}/completions render them.
package prompt

import (
	"encoding/json"
	"errors"
)

// Version is one version of a saved prompt, as the data plane renders it.
type Version struct {
	PromptID    string
	Slug        string
	VersionID   string
	Version     int
	WorkspaceID string
	// Template is the prompt's "string": a mustache template.
	Template string
	// Parameters are the saved hyperparameters (temperature, max_tokens,
	// ...), sent unless the caller overrides them.
	Parameters map[string]json.RawMessage
	// Model is the model the prompt runs on; empty when the parameters or
	// the caller name it.
	Model string
	// Provider ("@slug" of a managed provider) or VirtualKey choose where
	// /completions sends the prompt when the request's headers do not.
	Provider   string
	VirtualKey string
	// Functions, Tools and ToolChoice, when set, are sent as they are.
	Functions  json.RawMessage
	Tools      json.RawMessage
	ToolChoice json.RawMessage
}

// errNotBuilt is returned until the template engine lands.
var errNotBuilt = errors.New("prompt templates are not built yet")

// Check reports whether template is a template Render can fill; the error
// names the problem and where it is (line and column).
func Check(template string) error { return errNotBuilt }

// Render fills v's template with vars and returns the chat completion
// request body: v's parameters, the caller's hyperparameters over them
// (hyper: every other field of the render or completions body), model,
// tools, and the messages the template makes.
func Render(v *Version, vars map[string]any, hyper map[string]json.RawMessage) ([]byte, error) {
	return nil, errNotBuilt
}
