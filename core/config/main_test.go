package config

import (
	"os"
	"strings"
	"testing"
)

func TestMain(m *testing.M) {
	hooksSupported = true // the parsing and inheritance of hook fields is tested
	os.Exit(m.Run())
}

func TestHooksRefusedUntilSupported(t *testing.T) {
	hooksSupported = false
	defer func() { hooksSupported = true }()
	for _, field := range []string{"before_request_hooks", "after_request_hooks", "input_guardrails", "output_guardrails"} {
		_, err := Parse([]byte(`{"provider":"openai","targets":[{"` + field + `":[{"id":"h"}]}]}`))
		if err == nil || err.Param != "config.targets[0]."+field || !strings.Contains(err.Message, "not supported") {
			t.Fatalf("%s: %v", field, err)
		}
		if _, err := Parse([]byte(`{"provider":"openai","` + field + `":[]}`)); err != nil {
			t.Fatalf("%s: an empty array is refused: %v", field, err)
		}
	}
}
