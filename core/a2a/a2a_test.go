package a2a_test

import (
	"encoding/json"
	"slices"
	"testing"

	"github.com/llm-gateway/gateway/core/a2a"
)

// A card of protocol 1.0 (no top-level url or protocolVersion; endpoints
// in supportedInterfaces) and one of 0.3 are read and rewritten alike.
func TestCardParseAndRewrite(t *testing.T) {
	for _, tc := range []struct {
		name, card, version string
		interfaces          string
	}{
		{"1.0", `{"name":"a","version":"1","capabilities":{"streaming":true,"pushNotifications":false,"extensions":[]},
			"supportedInterfaces":[{"url":"https://agent/a2a","protocolBinding":"JSONRPC","protocolVersion":"1.0"},{"url":"https://agent/grpc","protocolBinding":"GRPC"}],
			"skills":[{"id":"s1"},{"id":"s2"}],"signatures":[{"protected":"x"}]}`, "1.0", "supportedInterfaces"},
		{"0.3", `{"name":"a","version":"1","protocolVersion":"0.3.0","url":"https://agent/a2a","capabilities":{"streaming":true},
			"additionalInterfaces":[{"url":"https://agent/a2a","transport":"JSONRPC"},{"url":"https://agent/rest","transport":"HTTP+JSON"}],
			"skills":[{"id":"s1"},{"id":"s2"}],"securitySchemes":{"b":{}},"security":[{"b":[]}]}`, "0.3.0", "additionalInterfaces"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			card, err := a2a.ParseCard([]byte(tc.card))
			if err != nil {
				t.Fatal(err)
			}
			if card.ProtocolVersion != tc.version || !slices.Equal(card.CapabilityFlags(), []string{"streaming"}) || len(card.Skills) != 2 {
				t.Errorf("card %+v, flags %v", card, card.CapabilityFlags())
			}
			out, err := a2a.RewriteCard([]byte(tc.card), "https://gw/v1/agents/a", map[string]bool{"s2": true})
			if err != nil {
				t.Fatal(err)
			}
			var got map[string]json.RawMessage
			if err := json.Unmarshal(out, &got); err != nil {
				t.Fatal(err)
			}
			var ifaces []map[string]any
			json.Unmarshal(got[tc.interfaces], &ifaces)
			if string(got["url"]) != `"https://gw/v1/agents/a"` || len(ifaces) != 1 || ifaces[0]["url"] != "https://gw/v1/agents/a" ||
				string(got["skills"]) != `[{"id":"s1"}]` {
				t.Errorf("rewritten %s", out)
			}
			for _, f := range []string{"signatures", "securitySchemes", "security"} {
				if _, ok := got[f]; ok {
					t.Errorf("%s kept: %s", f, out)
				}
			}
		})
	}
	if _, err := a2a.RewriteCard([]byte(`[]`), "u", nil); err == nil {
		t.Error("a card that is not an object was rewritten")
	}
}
