package schema

import (
	"encoding/json"
	"math"

	"github.com/llm-gateway/gateway/core"
)

// validateObject parses body as a JSON object and runs check on it with a
// validator and the Info to fill: the start and the end every body
// validator of this file shares.
func validateObject(body []byte, check func(m map[string]any, v *validator, info *Info)) (Info, *core.Error) {
	m, perr := parseObject(body)
	if perr != nil {
		return Info{StrictCompliance: true}, perr
	}
	// One allocation for both: the validator escapes anyway.
	run := &struct {
		v    validator
		info Info
	}{info: Info{StrictCompliance: true}}
	check(m, &run.v, &run.info)
	return run.info, run.v.err()
}

// maxEmbeddingInputs bounds the number of strings (or token arrays) of one
// embeddings request.
const maxEmbeddingInputs = 2048

// ValidateCompletion validates a POST /completions (legacy) body; model
// says whether it may leave model out.
func ValidateCompletion(body []byte, model ModelOptional) (Info, *core.Error) {
	return validateObject(body, func(m map[string]any, v *validator, info *Info) {
		v.model(m, model.requires(m), info)
		if x, ok := m["prompt"]; !ok {
			v.add("prompt", "is required")
		} else {
			v.tokensOrStrings("prompt", x, false, 0)
		}
		optional(m, "frequency_penalty", v.frequencyPenalty)
		optional(m, "presence_penalty", v.presencePenalty)
		v.logitBias(m)
		optional(m, "logprobs", func(x any) { v.integer("logprobs", x, true, 0, 5) })
		optional(m, "max_tokens", func(x any) { v.integer("max_tokens", x, true, 0, math.MaxInt64) })
		n := int64(1)
		optional(m, "n", func(x any) {
			if val, ok := v.choices(x); ok {
				n = val
			}
		})
		optional(m, "best_of", func(x any) {
			if val, ok := v.integer("best_of", x, true, 1, math.MaxInt64); ok && val < n {
				v.add("best_of", "must be greater than or equal to n (%d), got %d", n, val)
			}
		})
		optional(m, "seed", func(x any) { v.integer("seed", x, true, math.MinInt64, math.MaxInt64) })
		v.stop(m)
		v.streaming(m, info)
		optional(m, "temperature", v.temperature)
		optional(m, "top_p", v.topP)
		optional(m, "echo", func(x any) { v.boolean("echo", x, true) })
		optional(m, "suffix", func(x any) { v.str("suffix", x, true) })
		optional(m, "user", func(x any) { v.str("user", x, false) })
		v.gatewayFields(m, true, info)
	})
}

// ValidateEmbedding validates a POST /embeddings body; model says whether
// it may leave model out.
func ValidateEmbedding(body []byte, model ModelOptional) (Info, *core.Error) {
	return validateObject(body, func(m map[string]any, v *validator, info *Info) {
		v.model(m, model.requires(m), info)
		if x, ok := m["input"]; !ok {
			v.add("input", "is required")
		} else {
			v.tokensOrStrings("input", x, true, maxEmbeddingInputs)
		}
		optional(m, "encoding_format", func(x any) { v.enum("encoding_format", x, false, "float", "base64") })
		optional(m, "dimensions", func(x any) { v.integer("dimensions", x, false, 1, math.MaxInt64) })
		optional(m, "user", func(x any) { v.str("user", x, false) })
		v.gatewayFields(m, true, info)
	})
}

var elementKinds = map[string]string{"string": "a string", "number": "a token id", "array": "an array of token ids"}

// tokensOrStrings checks a completions prompt or an embeddings input: a
// string, an array of strings, an array of token ids, or an array of token-id
// arrays, all non-empty arrays. For embeddings (nonEmpty) strings must not be
// empty and maxItems bounds the number of strings or token arrays. p names
// a top-level field.
func (v *validator) tokensOrStrings(p string, x any, nonEmpty bool, maxItems int) {
	const kinds = "a string, an array of strings, an array of token ids or an array of token-id arrays"
	switch t := x.(type) {
	case string:
		if nonEmpty && t == "" {
			v.add(p, "must not be empty")
		}
		return
	case []any:
		if len(t) == 0 {
			v.add(p, "must not be an empty array")
			return
		}
	default:
		v.add(p, "must be %s, got %s", kinds, kind(x))
		return
	}
	arr := x.([]any)
	first := kind(arr[0])
	switch first {
	case "string", "array":
		if maxItems > 0 && len(arr) > maxItems {
			v.add(p, "must contain at most %d elements, got %d", maxItems, len(arr))
		}
	case "number":
	default:
		v.add(index(p, 0), "must be a string, a token id or an array of token ids, got %s", first)
		return
	}
	for i, el := range arr {
		v.enter(p, i)
		if k := kind(el); k != first {
			v.add("", "must be %s like %s, got %s", elementKinds[first], index(p, 0), k)
		} else {
			v.tokensOrString(el, nonEmpty)
		}
		v.leave()
	}
}

// tokensOrString checks one element of a prompt or an input array, of the
// same kind as the first.
func (v *validator) tokensOrString(el any, nonEmpty bool) {
	switch t := el.(type) {
	case string:
		if nonEmpty && t == "" {
			v.add("", "must not be empty")
		}
	case json.Number:
		v.integer("", t, false, 0, math.MaxInt64)
	case []any:
		if len(t) == 0 {
			v.add("", "must not be an empty array")
		}
		for j, tok := range t {
			v.enter("", j)
			v.integer("", tok, false, 0, math.MaxInt64)
			v.leave()
		}
	}
}

// ValidateResponses validates a POST /responses body.
func ValidateResponses(body []byte) (Info, *core.Error) {
	return validateObject(body, func(m map[string]any, v *validator, info *Info) {
		prev, hasPrev := m["previous_response_id"]
		prompt, hasPrompt := m["prompt"]
		v.model(m, !(hasPrev && prev != nil) && !(hasPrompt && prompt != nil), info)
		if hasPrev {
			v.str("previous_response_id", prev, true)
		}
		if hasPrompt {
			v.object("prompt", prompt, true)
		}
		optional(m, "input", func(x any) {
			switch x.(type) {
			case string, []any:
			default:
				v.add("input", "must be a string or an array of input items, got %s", kind(x))
			}
		})
		optional(m, "stream", func(x any) { info.Stream = v.boolean("stream", x, true) })
		optional(m, "temperature", v.temperature)
		optional(m, "top_p", v.topP)
		optional(m, "max_output_tokens", func(x any) { v.integer("max_output_tokens", x, true, 1, math.MaxInt64) })
		v.gatewayFields(m, true, info)
	})
}

// ValidateRerank validates a POST /rerank body.
func ValidateRerank(body []byte) (Info, *core.Error) {
	return validateObject(body, func(m map[string]any, v *validator, info *Info) {
		v.model(m, true, info)
		if x, ok := m["query"]; !ok {
			v.add("query", "is required")
		} else {
			v.nonEmptyStr("query", x)
		}
		if x, ok := m["documents"]; !ok {
			v.add("documents", "is required")
		} else if docs, ok := v.array("documents", x, false); ok {
			if len(docs) == 0 {
				v.add("documents", "must contain at least 1 document, got 0")
			}
			for i, d := range docs {
				v.enter("documents", i)
				switch t := d.(type) {
				case string:
				case map[string]any:
					if tx, ok := t["text"]; !ok {
						v.add(".text", "is required")
					} else {
						v.str(".text", tx, false)
					}
				default:
					v.add("", "must be a string or an object with a text field, got %s", kind(d))
				}
				v.leave()
			}
		}
		optional(m, "top_n", func(x any) { v.integer("top_n", x, false, 1, math.MaxInt64) })
		optional(m, "return_documents", func(x any) { v.boolean("return_documents", x, false) })
		optional(m, "max_chunks_per_doc", func(x any) { v.integer("max_chunks_per_doc", x, false, 1, math.MaxInt64) })
		v.gatewayFields(m, true, info)
	})
}

// ValidateImageGeneration validates a POST /images/generations body.
func ValidateImageGeneration(body []byte) (Info, *core.Error) {
	return validateObject(body, func(m map[string]any, v *validator, info *Info) {
		if x, ok := m["prompt"]; !ok {
			v.add("prompt", "is required")
		} else {
			v.nonEmptyStr("prompt", x)
		}
		v.model(m, false, info)
		optional(m, "n", func(x any) { v.integer("n", x, true, 1, 10) })
		optional(m, "size", func(x any) { v.str("size", x, true) })
		optional(m, "response_format", func(x any) { v.enum("response_format", x, true, "url", "b64_json") })
		optional(m, "user", func(x any) { v.str("user", x, false) })
		v.gatewayFields(m, true, info)
	})
}

// ValidateMessages validates the part of a POST /messages (Anthropic's
// Messages API) or /messages/count_tokens body the gateway reads: a JSON
// object with a model (unless model says it may leave it out) and, for
// /messages, an optional boolean stream. The rest is the provider's to
// check.
func ValidateMessages(body []byte, model ModelOptional) (Info, *core.Error) {
	check := checkMessages(model)
	if m, ok := topLevel(body, "model", "stream"); ok {
		// Only the two fields are decoded: the conversation is not parsed.
		var v validator
		info := Info{StrictCompliance: true}
		check(m, &v, &info)
		return info, v.err()
	}
	return validateObject(body, check)
}

// checkMessages checks the fields of a Messages body the gateway reads.
func checkMessages(model ModelOptional) func(m map[string]any, v *validator, info *Info) {
	return func(m map[string]any, v *validator, info *Info) {
		v.model(m, model.requires(m), info)
		optional(m, "stream", func(x any) { info.Stream = v.boolean("stream", x, true) })
	}
}

// ValidateModelOnly validates the part of a body the gateway reads on
// routes whose body is otherwise the provider's to check (POST
// /audio/speech, /moderations): a JSON object whose model, if given, is a
// non-empty string.
func ValidateModelOnly(body []byte) (Info, *core.Error) {
	return validateObject(body, func(m map[string]any, v *validator, info *Info) {
		v.model(m, false, info)
	})
}
