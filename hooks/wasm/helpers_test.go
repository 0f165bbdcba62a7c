package wasm

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/llm-gateway/gateway/core"
	"github.com/llm-gateway/gateway/hooks"
)

var (
	// guestWasm is testdata/guest built for wasip1.
	guestWasm []byte
	// testCacheDir is the compilation cache the tests share. It lives in
	// the system's temp dir, so that a rerun does not recompile the Go
	// guest (about 1 s, 9 s under -race).
	testCacheDir string
)

func TestMain(m *testing.M) {
	dir := filepath.Join(os.TempDir(), "llm-gateway-hooks-wasm-test")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	testCacheDir = filepath.Join(dir, "wazero-cache")
	var err error
	guestWasm, err = buildGuest(dir)
	if err != nil {
		fmt.Fprintln(os.Stderr, "building the test guest:", err)
		os.Exit(1)
	}
	os.Exit(m.Run())
}

// buildGuest builds testdata/guest with GOOS=wasip1 GOARCH=wasm
// -buildmode=c-shared, or reuses the build of the same source and Go
// version.
func buildGuest(dir string) ([]byte, error) {
	src, err := os.ReadFile(filepath.Join("testdata", "guest", "main.go"))
	if err != nil {
		return nil, err
	}
	sum := sha256.Sum256(append(src, runtime.Version()...))
	out := filepath.Join(dir, "guest-"+hex.EncodeToString(sum[:8])+".wasm")
	if b, err := os.ReadFile(out); err == nil && len(b) > 0 {
		return b, nil
	}
	tmp, err := os.MkdirTemp(dir, "build-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	tmpOut := filepath.Join(tmp, "guest.wasm")
	cmd := exec.Command("go", "build", "-buildmode=c-shared", "-o", tmpOut, "./testdata/guest")
	cmd.Env = append(os.Environ(), "GOOS=wasip1", "GOARCH=wasm", "CGO_ENABLED=0")
	if b, err := cmd.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("%v: %s", err, b)
	}
	if err := os.Rename(tmpOut, out); err != nil {
		return nil, err
	}
	return os.ReadFile(out)
}

// guestFunctions are the behaviours of testdata/guest.
var guestFunctions = []string{
	"pass", "deny", "contains", "transform", "echo", "counter", "noout", "fail",
	"trap", "abort", "loop", "oom", "garbage", "badverdict", "badtransform", "huge",
	"logspam", "random", "env",
}

// guestManifest declares every behaviour of the test guest under both hooks.
func guestManifest(id string, l Limits) *Manifest {
	m := &Manifest{ID: id, Name: "test guest", Limits: l}
	for _, f := range guestFunctions {
		m.Functions = append(m.Functions, Function{ID: f, SupportedHooks: []string{"beforeRequestHook", "afterResponseHook"}})
	}
	return m
}

// tinyManifest declares one function "check" of a hand-made guest.
func tinyManifest(id string, l Limits) *Manifest {
	return &Manifest{ID: id, Limits: l, Functions: []Function{{ID: "check", SupportedHooks: []string{"beforeRequestHook", "afterResponseHook"}}}}
}

// logRecorder is a slog.Handler that keeps the records.
type logRecorder struct {
	mu   sync.Mutex
	recs []slog.Record
}

func (r *logRecorder) Enabled(context.Context, slog.Level) bool { return true }
func (r *logRecorder) Handle(_ context.Context, rec slog.Record) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.recs = append(r.recs, rec.Clone())
	return nil
}
func (r *logRecorder) WithAttrs(as []slog.Attr) slog.Handler {
	return &attrHandler{r: r, attrs: as}
}
func (r *logRecorder) WithGroup(string) slog.Handler { return r }

func (r *logRecorder) messages(prefix string) []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for _, rec := range r.recs {
		if strings.HasPrefix(rec.Message, prefix) {
			out = append(out, rec.Message)
		}
	}
	return out
}

type attrHandler struct {
	r     *logRecorder
	attrs []slog.Attr
}

func (h *attrHandler) Enabled(context.Context, slog.Level) bool { return true }
func (h *attrHandler) Handle(ctx context.Context, rec slog.Record) error {
	rec = rec.Clone()
	rec.AddAttrs(h.attrs...)
	return h.r.Handle(ctx, rec)
}
func (h *attrHandler) WithAttrs(as []slog.Attr) slog.Handler {
	return &attrHandler{r: h.r, attrs: append(append([]slog.Attr{}, h.attrs...), as...)}
}
func (h *attrHandler) WithGroup(string) slog.Handler { return h }

// newHost creates a host on the shared compilation cache, closed with the
// test.
func newHost(t testing.TB, o Options) *Host {
	t.Helper()
	if o.CacheDir == "" {
		o.CacheDir = testCacheDir
	}
	if o.InstantiateTimeout == 0 {
		o.InstantiateTimeout = 30 * time.Second // starting Go guests under -race on a loaded machine
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelWarn}))
	}
	h, err := NewHost(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := h.Close(ctx); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return h
}

type testWriter struct{ t testing.TB }

func (w testWriter) Write(b []byte) (int, error) {
	w.t.Helper()
	w.t.Log(strings.TrimRight(string(b), "\n"))
	return len(b), nil
}

func mustLoad(t testing.TB, h *Host, m *Manifest, version int, module []byte) {
	t.Helper()
	if err := h.Load(context.Background(), m, version, module); err != nil {
		t.Fatal(err)
	}
}

func mustCheck(t testing.TB, h *Host, id string) hooks.Check {
	t.Helper()
	c, ok := h.Check(id)
	if !ok {
		t.Fatalf("check %q not found", id)
	}
	return c
}

const chatBody = `{"model":"gpt-4o","messages":[{"role":"system","content":"be nice"},{"role":"user","content":"my secret is 42"}]}`
const answerBody = `{"id":"x","choices":[{"index":0,"message":{"role":"assistant","content":"the answer is 42"}}]}`

// chatInput is a chat completion at stage, with the answer in
// afterResponseHook.
func chatInput(stage hooks.Stage, params map[string]any) *hooks.CheckInput {
	in := &hooks.CheckInput{
		Stage: stage,
		Request: &core.Request{
			TraceID:  "trace-1",
			Endpoint: core.EndpointChatComplete,
			Method:   http.MethodPost,
			Path:     "/chat/completions",
			Header: http.Header{
				"Content-Type":      {"application/json"},
				"Authorization":     {"Bearer sk-secret"},
				"X-Api-Key":         {"k"},
				"X-Gateway-Api-Key": {"gw"},
				"Cookie":            {"session=1"},
				"X-Custom":          {"a", "b"},
			},
			Body:     []byte(chatBody),
			Model:    "gpt-4o",
			Target:   core.Target{Provider: "openai", APIKey: "sk-provider"},
			Metadata: map[string]string{"user": "alice"},
		},
		Parameters: params,
	}
	if stage == hooks.AfterResponse {
		in.Response = &core.Response{Status: 200, Header: http.Header{"Content-Type": {"application/json"}, "Set-Cookie": {"x=1"}}, Body: []byte(answerBody), Routing: core.Routing{Provider: "openai"}}
	}
	return in
}

// bigInput is a chat request whose body is about size bytes.
func bigInput(size int) *hooks.CheckInput {
	var msgs []string
	for n := 0; n < size; n += 120 {
		msgs = append(msgs, `{"role":"user","content":"`+strings.Repeat("lorem ipsum ", 8)+`"}`)
	}
	body := `{"model":"gpt-4o","messages":[` + strings.Join(msgs, ",") + `]}`
	in := chatInput(hooks.BeforeRequest, map[string]any{"word": "forbidden"})
	in.Request.Body = []byte(body)
	return in
}
