// Package all imports the standard set of built-in plugins for their
// registration side effects. The gateway binary imports it; so do tests that
// need the real plugins.
package all

import (
	// Providers.
	_ "github.com/llm-gateway/gateway/plugins/providers/anthropic"
	_ "github.com/llm-gateway/gateway/plugins/providers/bedrock"
	_ "github.com/llm-gateway/gateway/plugins/providers/gemini"
	_ "github.com/llm-gateway/gateway/plugins/providers/openai"
	_ "github.com/llm-gateway/gateway/plugins/providers/vertex"

	// Cache modes.
	_ "github.com/llm-gateway/gateway/plugins/cache/semantic"
	_ "github.com/llm-gateway/gateway/plugins/cache/simple"

	// Built-in guardrail checks (default.*).
	_ "github.com/llm-gateway/gateway/plugins/guardrails/defaults"

	// Routing strategies.
	_ "github.com/llm-gateway/gateway/plugins/strategies/conditional"
	_ "github.com/llm-gateway/gateway/plugins/strategies/fallback"
	_ "github.com/llm-gateway/gateway/plugins/strategies/loadbalance"
	_ "github.com/llm-gateway/gateway/plugins/strategies/single"
)
