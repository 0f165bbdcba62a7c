package openai

import "github.com/llm-gateway/gateway/core"

// openAIPass are OpenAI's own request headers, forwarded when the client sends them.
var openAIPass = []string{"OpenAI-Organization", "OpenAI-Project", "OpenAI-Beta"}

func bearer(name, baseURL string, pass ...string) Spec {
	return Spec{Name: name, BaseURL: baseURL, AuthHeader: "Authorization", AuthPrefix: "Bearer ", PassHeaders: pass}
}

// only limits s to endpoints (and the generic proxy).
func only(s Spec, endpoints ...core.Endpoint) Spec {
	s.Endpoints = endpoints
	return s
}

// counted marks s as taking stream_options.include_usage (see
// Spec.StreamUsage).
func counted(s Spec) Spec {
	s.StreamUsage = true
	return s
}

// reasoning marks s as taking max_completion_tokens only (see
// Spec.MaxCompletionTokens).
func reasoning(s Spec) Spec {
	s.MaxCompletionTokens = true
	return s
}

// Compatible is the table of providers that speak OpenAI's wire format, with
// their default base URLs. x-gateway-custom-host replaces the base URL.
var Compatible = []Spec{
	reasoning(counted(bearer("openai", "https://api.openai.com/v1", openAIPass...))),
	counted(bearer("groq", "https://api.groq.com/openai/v1")),
	counted(bearer("together-ai", "https://api.together.xyz/v1")),
	bearer("mistral-ai", "https://api.mistral.ai/v1"),
	{
		// Gemini through Google's OpenAI-compatible endpoint, passed
		// through: chat completions, embeddings, and GET /models through
		// the proxy. Provider "gemini" (plugins/providers/gemini) is the
		// native API (generateContent), translated.
		Name: "google", BaseURL: "https://generativelanguage.googleapis.com/v1beta/openai",
		AuthHeader: "Authorization", AuthPrefix: "Bearer ", ThoughtSignatures: true,
		Endpoints: []core.Endpoint{core.EndpointChatComplete, core.EndpointEmbed},
	},
	counted(bearer("deepseek", "https://api.deepseek.com/v1")),
	counted(bearer("fireworks-ai", "https://api.fireworks.ai/inference/v1")),
	bearer("openrouter", "https://openrouter.ai/api/v1"),
	bearer("perplexity-ai", "https://api.perplexity.ai"),
	counted(bearer("x-ai", "https://api.x.ai/v1")),
	counted(bearer("deepinfra", "https://api.deepinfra.com/v1/openai")),
	bearer("cerebras", "https://api.cerebras.ai/v1"),
	bearer("nebius", "https://api.studio.nebius.ai/v1"),
	bearer("sambanova", "https://api.sambanova.ai/v1"),
	bearer("lambda", "https://api.lambdalabs.com/v1"),
	bearer("ollama", "http://localhost:11434/v1"),
	counted(bearer("vllm", "http://localhost:8000/v1")),
	// Rerank providers: their /rerank takes the spec's body (model, query,
	// documents, top_n, return_documents; Cohere also max_chunks_per_doc)
	// and is passed through, as is the generic proxy.
	only(bearer("cohere", "https://api.cohere.com/v1"), core.EndpointRerank),
	only(bearer("jina", "https://api.jina.ai/v1"), core.EndpointRerank, core.EndpointEmbed),
	bearer("lm-studio", "http://localhost:1234/v1"),
}
