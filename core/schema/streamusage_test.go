package schema

import (
	"strings"
	"testing"
)

func TestAskStreamUsage(t *testing.T) {
	for _, tc := range []struct {
		name, body, want, err string
	}{
		{"added first", `{"model":"m","stream":true}`, `{"stream_options":{"include_usage":true},"model":"m","stream":true}`, ""},
		{"empty object", `{}`, `{"stream_options":{"include_usage":true}}`, ""},
		{"spacing kept", "{ \"stream\" : true ,\n \"n\":1 }", "{\"stream_options\":{\"include_usage\":true}, \"stream\" : true ,\n \"n\":1 }", ""},
		{"null replaced", `{"stream":true,"stream_options":null,"n":1}`, `{"stream":true,"stream_options":{"include_usage":true},"n":1}`, ""},
		{"false turned on", `{"stream_options": {"include_usage": false},"stream":true}`, `{"stream_options": {"include_usage":true},"stream":true}`, ""},
		{"other members kept", `{"stream_options":{"include_obfuscation":false},"stream":true}`, `{"stream_options":{"include_obfuscation":false,"include_usage":true},"stream":true}`, ""},
		{"not an object", `[1]`, "", "must be a JSON object"},
		{"broken", `{"a":`, "", "not valid JSON"},
		{"options not an object", `{"stream_options":3}`, "", "stream_options must be an object"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := AskStreamUsage([]byte(tc.body))
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error %v, want one saying %q", err, tc.err)
				}
				return
			}
			if err != nil || string(got) != tc.want {
				t.Fatalf("got %s (%v), want %s", got, err, tc.want)
			}
		})
	}
}
