package wasm

import (
	"context"
	"strings"
	"testing"

	"github.com/llm-gateway/gateway/hooks"
)

// TestPreparedParams: parameters prepared against one version's schema
// skip the validation only while the current version has that schema; a
// replacement with a stricter schema refuses them again, and the envelope
// carries the prepared parameters.
func TestPreparedParams(t *testing.T) {
	h := newHost(t, Options{PoolSize: 1})
	mustLoad(t, h, tinyManifest("prep", Limits{}), 1, tinyWithOutput(`{"verdict":true}`))
	c := mustCheck(t, h, "prep.check")
	params := map[string]any{"word": 1.0}
	prep, probs := c.(hooks.ParamsPreparer).PrepareParams(params)
	if len(probs) > 0 || prep == nil {
		t.Fatalf("PrepareParams: %v %q", prep, probs)
	}
	in := chatInput(hooks.BeforeRequest, params)
	in.Prepared = prep
	if _, err := c.Run(context.Background(), in); err != nil {
		t.Fatalf("version 1 (no schema): %v", err)
	}

	m := tinyManifest("prep", Limits{})
	m.Functions[0].Parameters = []byte(piiSchema)
	mustLoad(t, h, m, 2, tinyWithOutput(`{"verdict":true}`))
	in = chatInput(hooks.BeforeRequest, params)
	in.Prepared = prep
	_, err := mustCheck(t, h, "prep.check").Run(context.Background(), in)
	if err == nil || !strings.Contains(err.Error(), "invalid parameters: word: must be of type string") {
		t.Fatalf("version 2 (stricter schema): %v", err)
	}
	if _, probs := mustCheck(t, h, "prep.check").(hooks.ParamsPreparer).PrepareParams(params); len(probs) == 0 {
		t.Fatal("PrepareParams accepted parameters the schema refuses")
	}

	// The envelope's parameters are the prepared JSON.
	good := map[string]any{"word": "ok"}
	prep, _ = mustCheck(t, h, "prep.check").(hooks.ParamsPreparer).PrepareParams(good)
	pp := prep.(*preparedParams)
	p, _ := h.acquire("prep")
	defer h.release(p)
	in = chatInput(hooks.BeforeRequest, good)
	if env := string(buildEnvelope(p, "check", in, pp.json)); !strings.Contains(env, `"parameters":{"word":"ok"}`) {
		t.Fatalf("envelope %s", env)
	}
}
