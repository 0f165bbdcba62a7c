package main

import (
	"os"
	"os/exec"
	"strings"
	"testing"
)

// TestQuickstartWithOpenAISDK runs examples/quickstart (the official openai
// Node SDK) against the gateway. CI installs its node_modules; elsewhere the
// test is skipped when they are missing.
func TestQuickstartWithOpenAISDK(t *testing.T) {
	const dir = "../../examples/quickstart"
	if _, err := os.Stat(dir + "/node_modules/openai"); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("examples/quickstart/node_modules is missing: .ci/run must run npm install there")
		}
		t.Skip("run `npm install` in examples/quickstart to include this test")
	}
	e := startEnv(t)
	cmd := exec.Command("node", "quickstart.mjs")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GATEWAY_URL="+e.gw.URL+"/v1", "GATEWAY_API_KEY="+adminKey, "UPSTREAM_URL="+e.mockHost())
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "chat: This is a deterministic reply") || !strings.Contains(string(out), "stream: 5 content chunks") {
		t.Fatalf("quickstart failed: %v\n%s", err, out)
	}
}
