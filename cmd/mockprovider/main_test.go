package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"
)

// When MOCKPROVIDER_AS_MAIN is set the test binary behaves as the
// mockprovider command, so the tests can run it as a real process.
func TestMain(m *testing.M) {
	if os.Getenv("MOCKPROVIDER_AS_MAIN") == "1" {
		os.Args = append([]string{"mockprovider"}, strings.Fields(os.Getenv("MOCKPROVIDER_ARGS"))...)
		main()
		return
	}
	os.Exit(m.Run())
}

func TestBinaryStartServeAndSIGTERM(t *testing.T) {
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "MOCKPROVIDER_AS_MAIN=1",
		"MOCKPROVIDER_ARGS=--addr 127.0.0.1:0 --frames 3 --interval 1ms --status 429 --retry-after 4")
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill() }()

	lines := make(chan string, 1)
	go func() {
		line, _ := bufio.NewReader(stdout).ReadString('\n')
		lines <- line
		_, _ = io.Copy(io.Discard, stdout)
	}()
	var line string
	select {
	case line = <-lines:
	case <-time.After(10 * time.Second):
		t.Fatalf("no startup line; stderr: %s", stderr.String())
	}
	const prefix = "mockprovider listening on http://"
	if !strings.HasPrefix(line, prefix) || strings.HasSuffix(strings.TrimSpace(line), ":0") {
		t.Fatalf("startup line = %q", line)
	}
	base := "http://" + strings.TrimSpace(strings.TrimPrefix(line, prefix))

	resp, err := http.Post(base+"/v1/chat/completions", "application/json", strings.NewReader(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 429 || resp.Header.Get("Retry-After") != "4" {
		t.Errorf("got %d retry-after %q, want 429 and 4", resp.StatusCode, resp.Header.Get("Retry-After"))
	}

	resp, err = http.Get(base + "/_mock/stats")
	if err != nil {
		t.Fatal(err)
	}
	var st struct {
		Total int64            `json:"total"`
		Paths map[string]int64 `json:"paths"`
	}
	err = json.NewDecoder(resp.Body).Decode(&st)
	resp.Body.Close()
	if err != nil || st.Total != 1 || st.Paths["/v1/chat/completions"] != 1 {
		t.Errorf("stats = %+v, %v", st, err)
	}

	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("exit after SIGTERM: %v; stderr: %s", err, stderr.String())
		}
	case <-time.After(10 * time.Second):
		t.Fatal("process did not exit after SIGTERM")
	}
}

func TestRunFlagErrors(t *testing.T) {
	tests := []struct {
		args []string
		want int
	}{
		{[]string{"--status", "42"}, 2},
		{[]string{"--frames", "0"}, 2},
		{[]string{"--latency", "-1s"}, 2},
		{[]string{"--embedding-dims", "0"}, 2},
		{[]string{"--no-such-flag"}, 2},
		{[]string{"extra"}, 2},
		{[]string{"--addr", "256.0.0.1:99999"}, 1},
		{[]string{"-h"}, 0},
	}
	for _, tc := range tests {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			var out, errOut bytes.Buffer
			if got := run(context.Background(), tc.args, &out, &errOut); got != tc.want {
				t.Errorf("exit code = %d, want %d (stderr %q)", got, tc.want, errOut.String())
			}
		})
	}
}

func TestRunCancel(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	pr, pw := io.Pipe()
	done := make(chan int, 1)
	go func() {
		done <- run(ctx, []string{"--addr", "127.0.0.1:0"}, pw, io.Discard)
		pw.Close()
	}()
	line, err := bufio.NewReader(pr).ReadString('\n')
	if err != nil || !strings.HasPrefix(line, "mockprovider listening on http://127.0.0.1:") {
		t.Fatalf("startup line %q, %v", line, err)
	}
	go func() { _, _ = io.Copy(io.Discard, pr) }()
	cancel()
	select {
	case code := <-done:
		if code != 0 {
			t.Errorf("exit code %d", code)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("run did not return after cancel")
	}
}
