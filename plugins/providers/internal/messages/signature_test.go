package messages

import (
	"testing"
)

// TestToolUseID: a thought signature travels in the tool_use id and comes
// back out whole; an id without one, or with the mark but no signature
// after it, is the call's own.
func TestToolUseID(t *testing.T) {
	for _, tc := range []struct{ id, sig, useID string }{
		{"fc-1", "", "fc-1"},
		{"fc-1", "c2lnLTE=", "fc-1__sig_YzJsbkxURT0"},
		{"call_x", "+/=\x00é", "call_x__sig_Ky89AMOp"},
	} {
		if got := toolUseID(tc.id, tc.sig); got != tc.useID {
			t.Errorf("toolUseID(%q, %q) = %q, want %q", tc.id, tc.sig, got, tc.useID)
		}
		if id, sig := splitToolUseID(tc.useID); id != tc.id || sig != tc.sig {
			t.Errorf("splitToolUseID(%q) = %q, %q", tc.useID, id, sig)
		}
	}
	for _, id := range []string{"toolu_01", "a__sig_", "a__sig_!!", "a__sig_x"} {
		if got, sig := splitToolUseID(id); got != id || sig != "" {
			t.Errorf("splitToolUseID(%q) = %q, %q; want the id as it is", id, got, sig)
		}
	}
}
