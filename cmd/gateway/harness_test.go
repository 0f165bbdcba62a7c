package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The end-to-end tests build the real binaries once and start them as child
// processes on loopback ports.
var binDir string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "gateway-e2e-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	binDir = dir
	for _, pkg := range []string{"./cmd/gateway", "./cmd/mockprovider"} {
		args := []string{"build", "-o", filepath.Join(dir, filepath.Base(pkg))}
		if raceEnabled {
			args = append(args, "-race")
		}
		cmd := exec.Command("go", append(args, pkg)...)
		cmd.Dir = "../.."
		cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
		if err := cmd.Run(); err != nil {
			fmt.Fprintln(os.Stderr, "build", pkg, "failed:", err)
			os.Exit(1)
		}
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// proc is a started binary.
type proc struct {
	cmd    *exec.Cmd
	URL    string
	stdout *lockedBuffer
	stderr *lockedBuffer
	exited chan struct{}
}

type lockedBuffer struct {
	mu  chan struct{}
	buf bytes.Buffer
}

func newLockedBuffer() *lockedBuffer { return &lockedBuffer{mu: make(chan struct{}, 1)} }

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu <- struct{}{}
	defer func() { <-b.mu }()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu <- struct{}{}
	defer func() { <-b.mu }()
	return b.buf.String()
}

// start runs a built binary and waits for its "listening on http://..." line.
func start(t testing.TB, name string, env []string, args ...string) *proc {
	t.Helper()
	cmd := exec.Command(filepath.Join(binDir, name), args...)
	cmd.Env = append(os.Environ(), env...)
	p := &proc{cmd: cmd, stdout: newLockedBuffer(), stderr: newLockedBuffer(), exited: make(chan struct{})}
	pr, pw := io.Pipe()
	cmd.Stdout = io.MultiWriter(p.stdout, pw)
	cmd.Stderr = p.stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { cmd.Wait(); pw.Close(); close(p.exited) }()
	t.Cleanup(func() {
		cmd.Process.Kill()
		<-p.exited
		if t.Failed() {
			t.Logf("%s stdout:\n%s\n%s stderr:\n%s", name, p.stdout, name, p.stderr)
		}
	})
	found := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(pr)
		for sc.Scan() {
			if _, url, ok := strings.Cut(sc.Text(), "listening on "); ok {
				found <- url
				break
			}
		}
		io.Copy(io.Discard, pr)
	}()
	select {
	case p.URL = <-found:
	case <-p.exited:
		t.Fatalf("%s exited before listening: %s", name, p.stderr)
	case <-time.After(30 * time.Second):
		t.Fatalf("%s did not start: %s", name, p.stderr)
	}
	return p
}

// stop sends SIGTERM and waits for a clean exit.
func (p *proc) stop(t testing.TB) {
	t.Helper()
	p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.exited:
	case <-time.After(30 * time.Second):
		t.Fatal("process did not stop after SIGTERM")
	}
	if code := p.cmd.ProcessState.ExitCode(); code != 0 {
		t.Fatalf("exit code %d after SIGTERM; stderr:\n%s", code, p.stderr)
	}
}

const adminKey = "e2e-admin-key-0123456789abcdef"

// env is a running mock provider and a gateway in front of it.
type env struct {
	mock *proc
	// mocks are all the mock providers the gateway trusts (startEnvMocks);
	// mocks[0] is mock.
	mocks   []*proc
	gw      *proc
	dataDir string
}

// mockHost is the mock's base URL as a custom host ("http://127.0.0.1:N/v1").
func (e *env) mockHost() string { return e.mock.URL + "/v1" }

func startEnv(t testing.TB, mockArgs ...string) *env {
	t.Helper()
	e := &env{dataDir: t.TempDir()}
	e.mock = start(t, "mockprovider", nil, append([]string{"--addr", "127.0.0.1:0"}, mockArgs...)...)
	e.gw = e.startGateway(t)
	return e
}

// startEnvMocks starts one mock provider per argument list (nil or empty:
// a healthy one), then a gateway that trusts every one of them.
func startEnvMocks(t testing.TB, mockArgs ...[]string) *env {
	t.Helper()
	e := &env{dataDir: t.TempDir()}
	for _, args := range mockArgs {
		e.mocks = append(e.mocks, start(t, "mockprovider", nil, append([]string{"--addr", "127.0.0.1:0"}, args...)...))
	}
	e.mock = e.mocks[0]
	e.gw = e.startGateway(t)
	return e
}

func (e *env) startGateway(t testing.TB, extraEnv ...string) *proc {
	t.Helper()
	mocks := e.mocks
	if len(mocks) == 0 {
		mocks = []*proc{e.mock}
	}
	trusted := make([]string, len(mocks))
	for i, m := range mocks {
		trusted[i] = strings.TrimPrefix(m.URL, "http://")
	}
	return start(t, "gateway", append([]string{
		"GATEWAY_ADMIN_API_KEY=" + adminKey,
		"GATEWAY_TRUSTED_HOSTS=" + strings.Join(trusted, ","),
	}, extraEnv...), "--addr", "127.0.0.1:0", "--data-dir", e.dataDir)
}

// call sends one request to the gateway with the admin key and the mock as
// custom host, plus the given headers ("Name: value"); nil body means none.
func (e *env) call(t testing.TB, method, path string, body any, headers ...string) *http.Response {
	t.Helper()
	h := []string{"x-gateway-api-key: " + adminKey, "x-gateway-provider: openai",
		"Authorization: Bearer sk-e2e", "x-gateway-custom-host: " + e.mockHost()}
	return do(t, method, e.gw.URL+path, body, append(h, headers...)...)
}

// do sends one request; later headers replace earlier ones of the same name,
// and "Name:" with no value removes it.
func do(t testing.TB, method, url string, body any, headers ...string) *http.Response {
	t.Helper()
	var r io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		r = strings.NewReader(b)
	case []byte:
		r = bytes.NewReader(b)
	default:
		raw, err := json.Marshal(b)
		if err != nil {
			t.Fatal(err)
		}
		r = bytes.NewReader(raw)
	}
	req, err := http.NewRequest(method, url, r)
	if err != nil {
		t.Fatal(err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	for _, h := range headers {
		name, value, _ := strings.Cut(h, ":")
		if value = strings.TrimSpace(value); value == "" {
			req.Header.Del(name)
		} else {
			req.Header.Set(name, value)
		}
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

// readAll reads and closes a response body.
func readAll(t testing.TB, resp *http.Response) []byte {
	t.Helper()
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// apiError is the gateway's error body.
type apiError struct {
	Error struct {
		Message string  `json:"message"`
		Type    string  `json:"type"`
		Param   *string `json:"param"`
		Code    *string `json:"code"`
	} `json:"error"`
}

// expectError checks status and the JSON error body; it returns the body.
func expectError(t *testing.T, resp *http.Response, status int) apiError {
	t.Helper()
	raw := readAll(t, resp)
	var e apiError
	if resp.StatusCode != status || json.Unmarshal(raw, &e) != nil || e.Error.Message == "" || e.Error.Type == "" {
		t.Fatalf("want %d with a JSON error body, got %d: %s", status, resp.StatusCode, raw)
	}
	if resp.Header.Get("x-gateway-trace-id") == "" {
		t.Fatalf("error answer without x-gateway-trace-id")
	}
	return e
}

// mockStats reads the mock's request counters.
func (e *env) mockStats(t *testing.T) (total int, paths map[string]int) {
	return mockStatsOf(t, e.mock)
}

// mockStatsOf reads the request counters of mock m.
func mockStatsOf(t testing.TB, m *proc) (total int, paths map[string]int) {
	t.Helper()
	var s struct {
		Total int            `json:"total"`
		Paths map[string]int `json:"paths"`
	}
	if err := json.Unmarshal(readAll(t, do(t, "GET", m.URL+"/_mock/stats", nil)), &s); err != nil {
		t.Fatal(err)
	}
	return s.Total, s.Paths
}

// mockLast is the last request the mock received.
type mockLast struct {
	Method  string            `json:"method"`
	Path    string            `json:"path"`
	Query   string            `json:"query"`
	Headers map[string]string `json:"headers"`
	Body    string            `json:"body"`
}

func (e *env) mockLast(t *testing.T) mockLast { return mockLastOf(t, e.mock) }

// mockLastOf is the last request mock m received.
func mockLastOf(t testing.TB, m *proc) mockLast {
	t.Helper()
	var l mockLast
	if err := json.Unmarshal(readAll(t, do(t, "GET", m.URL+"/_mock/last", nil)), &l); err != nil {
		t.Fatal(err)
	}
	return l
}

func chatBody(extra map[string]any) map[string]any {
	b := map[string]any{"model": "gpt-4o-mini", "messages": []any{map[string]any{"role": "user", "content": "Say hello"}}}
	for k, v := range extra {
		b[k] = v
	}
	return b
}
