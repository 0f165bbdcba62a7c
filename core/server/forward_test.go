package server

import (
	"bufio"
	"bytes"
	"strings"
	"testing"
)

func TestForwardEventsBoundsEventSize(t *testing.T) {
	cases := []struct {
		name      string
		upstream  string
		wantError bool
		wantDone  bool
	}{
		{"normal events", "data: a\n\ndata: b\n\ndata: [DONE]\n\n", false, true},
		{"crlf events", "data: a\r\n\r\ndata: [DONE]\r\n\r\n", false, true},
		{"oversized event", "data: " + strings.Repeat("x", maxEventBytes+10) + "\n\ndata: [DONE]\n\n", true, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var out bytes.Buffer
			w := bufio.NewWriter(&out)
			_, err := forwardEvents(w, strings.NewReader(tc.upstream))
			if (err != nil) != tc.wantError {
				t.Fatalf("err = %v", err)
			}
			got := out.String()
			if strings.Contains(got, "[DONE]") != tc.wantDone || strings.Contains(got, `"error"`) != tc.wantError {
				t.Fatalf("output %.200q", got)
			}
			if tc.wantError && out.Len() > 4096 {
				t.Fatalf("the oversized event was forwarded (%d bytes)", out.Len())
			}
		})
	}
}
