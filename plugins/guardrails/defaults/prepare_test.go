package defaults

import (
	"context"
	"strings"
	"testing"

	"github.com/llm-gateway/gateway/hooks"
)

// TestPreparedParams: Run uses the parameters prepared for the same check,
// ignores those of another check (even of the same parameter type), and
// without them still refuses bad parameters.
func TestPreparedParams(t *testing.T) {
	ctx := context.Background()
	req := newRequest(chatBody("one two three"))
	words := lookup(t, "default.wordCount")
	chars := lookup(t, "default.characterCount")

	prep, probs := words.(hooks.ParamsPreparer).PrepareParams(jparams(t, `{"maxWords": 2}`))
	if len(probs) > 0 || prep == nil {
		t.Fatalf("PrepareParams: %v %v", prep, probs)
	}
	// The prepared maxWords 2 decides, not the (absent) parameters.
	if r, err := words.Run(ctx, &hooks.CheckInput{Stage: hooks.BeforeRequest, Request: req, Prepared: prep}); err != nil || r.Verdict {
		t.Fatalf("prepared: %+v %v, want a fail (3 words > 2)", r, err)
	}
	// characterCount shares wordCount's parameter type but not its prepared value.
	if r, err := chars.Run(ctx, &hooks.CheckInput{Stage: hooks.BeforeRequest, Request: req, Prepared: prep}); err != nil || !r.Verdict {
		t.Fatalf("another check's prepared value was used: %+v %v", r, err)
	}
	// Never validated: bad parameters are a check error.
	_, err := words.Run(ctx, &hooks.CheckInput{Stage: hooks.BeforeRequest, Request: req, Parameters: jparams(t, `{"maxWords": "x"}`)})
	if err == nil || !strings.Contains(err.Error(), "maxWords: must be a whole number") {
		t.Fatalf("bad parameters: %v", err)
	}
	if _, probs := words.(hooks.ParamsPreparer).PrepareParams(jparams(t, `{"maxWords": "x", "colour": 1}`)); len(probs) != 2 {
		t.Fatalf("PrepareParams problems %q", probs)
	}
}
