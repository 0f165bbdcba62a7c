package config

import "github.com/llm-gateway/gateway/core"

// testProviders are the provider names the tests' configs use, registered
// as the provider plugins register theirs (config names are checked
// against the registry).
var testProviders = []string{"openai", "groq", "anthropic", "azure-openai", "vertex-ai", "a", "b", "c", "d", "e", "x"}

func init() {
	for _, name := range testProviders {
		core.Register(core.PluginInfo{ID: core.KindProviders + "." + name, New: func() core.Plugin { return nil }})
	}
}
