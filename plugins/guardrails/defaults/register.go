// Package defaults holds the built-in guardrail checks of the gateway, the
// "default.*" check ids of the reference (regexMatch, contains, jwt, ...).
// Each is a hooks.Check and a hooks.ParamsValidator, registered in init
// with hooks.RegisterCheck; import the package for its side effect.
//
// Text checks read the text under check (hooks.CheckInput.Text: the last
// message, prompt or input of the request; the first choice of the
// answer). Checks that call out (inlineImageUrls, webhook, log, jwt with a
// jwksUri) do so through one http.Client guarded by core/netguard, with the
// trusted list of GATEWAY_TRUSTED_HOSTS read once at start. See README.md
// for every check's parameters.
package defaults

import (
	"maps"
	"slices"

	"github.com/llm-gateway/gateway/hooks"
)

// checks maps each check id to its implementation.
var checks = map[string]hooks.Check{
	"default.regexMatch":               regexMatch,
	"default.regexReplace":             regexReplace,
	"default.sentenceCount":            sentenceCount,
	"default.wordCount":                wordCount,
	"default.characterCount":           characterCount,
	"default.jsonSchema":               jsonSchemaCheck,
	"default.jsonKeys":                 jsonKeysCheck,
	"default.contains":                 containsCheck,
	"default.validUrls":                validUrls,
	"default.containsCode":             containsCode,
	"default.alluppercase":             allUppercase,
	"default.alllowercase":             allLowercase,
	"default.endsWith":                 endsWith,
	"default.notNull":                  notNull,
	"default.modelWhitelist":           modelWhitelist,
	"default.modelRules":               modelRules,
	"default.allowedRequestTypes":      allowedRequestTypes,
	"default.requiredMetadataKeys":     requiredMetadataKeys,
	"default.requiredMetadataKeyPairs": requiredMetadataKeyPairs,
	"default.inlineImageUrls":          inlineImageUrls,
	"default.requestParamsCheck":       requestParamsCheck,
	"default.jwt":                      jwtCheck,
	"default.webhook":                  webhook,
	"default.log":                      logCheck,
	"default.addPrefix":                addPrefix,
}

func init() {
	for _, id := range IDs() {
		hooks.RegisterCheck(id, checks[id])
	}
}

// IDs lists the check ids this package registers, sorted.
func IDs() []string { return slices.Sorted(maps.Keys(checks)) }
