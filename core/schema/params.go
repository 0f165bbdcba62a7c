package schema

// The checks of the body fields whose values the spec bounds (§4.3, §8),
// with stop, logitBias and namedList (tools, functions): the one
// definition of those bounds, run by the body validators on a body and by
// CheckBoundedParams on parameters merged over one.

func (v *validator) frequencyPenalty(x any) { v.number("frequency_penalty", x, true, -2, 2) }

func (v *validator) presencePenalty(x any) { v.number("presence_penalty", x, true, -2, 2) }

// topLogprobs checks top_logprobs; ok reports a valid, non-null value.
func (v *validator) topLogprobs(x any) (ok bool) {
	_, ok = v.integer("top_logprobs", x, true, 0, 20)
	return ok
}

// choices checks n, the number of choices; ok reports a valid, non-null
// value.
func (v *validator) choices(x any) (n int64, ok bool) { return v.integer("n", x, true, 1, 128) }

func (v *validator) temperature(x any) { v.number("temperature", x, true, 0, 2) }

func (v *validator) topP(x any) { v.number("top_p", x, true, 0, 1) }

// Problem is one problem of a body field: Field is its path
// ("temperature", "logit_bias.50256", "tools[0].function.name"), Rule
// what is wrong with it ("must be between 0 and 2, got 5").
type Problem struct{ Field, Rule string }

// CheckBoundedParams checks the members of params (numbers as json.Number)
// that a chat completion body bounds — frequency_penalty and
// presence_penalty, logit_bias, top_logprobs, n, stop, temperature, top_p,
// tools and functions — as ValidateChatCompletion checks them, and returns
// their problems in that order. Rules that tie a member to others of the
// body (top_logprobs needs logprobs true, tool_choice names one of the
// tools) are left out: params are merged over bodies that were validated
// without them, and would otherwise reach the provider unchecked (a
// config's override_params).
func CheckBoundedParams(params map[string]any) []Problem {
	var v validator
	optional(params, "frequency_penalty", v.frequencyPenalty)
	optional(params, "presence_penalty", v.presencePenalty)
	v.logitBias(params)
	optional(params, "top_logprobs", func(x any) { v.topLogprobs(x) })
	optional(params, "n", func(x any) { v.choices(x) })
	v.stop(params)
	optional(params, "temperature", v.temperature)
	optional(params, "top_p", v.topP)
	v.namedList(params, "tools", true)
	v.namedList(params, "functions", false)
	if len(v.problems) == 0 {
		return nil
	}
	out := make([]Problem, len(v.problems))
	for i, p := range v.problems {
		out[i] = Problem{Field: p.param, Rule: p.rule}
	}
	return out
}
