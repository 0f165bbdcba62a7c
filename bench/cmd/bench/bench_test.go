package main

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestPercentileAndMedian(t *testing.T) {
	var d []time.Duration
	for i := 100; i >= 1; i-- {
		d = append(d, time.Duration(i)*time.Microsecond)
	}
	if p := percentile(d, 50); p != 50 {
		t.Fatalf("p50 = %v", p)
	}
	if p := percentile(d, 99); p != 99 {
		t.Fatalf("p99 = %v", p)
	}
	if p := percentile(nil, 50); !math.IsNaN(p) {
		t.Fatalf("p50 of nothing = %v", p)
	}
	if m := median([]float64{3, math.NaN(), 1, 2, 10}); m != 2.5 {
		t.Fatalf("median = %v", m)
	}
	got := drifted([]float64{100, 105, 95, 130, 79}, 0.2)
	want := []bool{false, false, false, true, true}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("drifted = %v, want %v", got, want)
		}
	}
}

func TestCheck(t *testing.T) {
	x := &expected{content: `Hello "world"`, quoted: []byte(`"Hello \"world\""`)}
	if err := x.check(200, []byte(`{"choices":[{"message":{"content":"Hello \"world\""}}]}`)); err != nil {
		t.Fatal(err)
	}
	// Re-encoded (a gateway may escape differently): parsed and compared.
	if err := x.check(200, []byte(`{"choices":[{"message":{"content":"Hello \u0022world\u0022"}}]}`)); err != nil {
		t.Fatal(err)
	}
	for _, bad := range []struct {
		status int
		body   string
	}{
		{200, ``},
		{200, `{"choices":[{"message":{"content":"Hello"}}]}`},
		{200, `{"choices":[]}`},
		{500, `{"choices":[{"message":{"content":"Hello \"world\""}}]}`},
	} {
		if err := x.check(bad.status, []byte(bad.body)); err == nil {
			t.Fatalf("%d %s passed", bad.status, bad.body)
		}
	}
}

func TestReadEvents(t *testing.T) {
	stream := "data: {\"hook_results\":{}}\n\n" +
		"data: {\"choices\":[{\"delta\":{\"role\":\"assistant\",\"content\":\"\"}}]}\n\n" +
		"data: {\"choices\":[{\"delta\":{\"content\":\"Hel\"}}]}\n\n" +
		"data: {\"choices\":[{\"delta\":{\"content\":\"lo\"}}]}\n\n" +
		"data: [DONE]\n\n"
	chunks, text, done, _, _, err := readEvents(strings.NewReader(stream), time.Now())
	if err != nil || chunks != 3 || text != "Hello" || !done {
		t.Fatalf("chunks %d text %q done %v err %v", chunks, text, done, err)
	}
	_, _, done, _, _, err = readEvents(strings.NewReader("data: {\"choices\":[]}\n\n"), time.Now())
	if err != nil || done {
		t.Fatalf("a stream without [DONE]: done %v err %v", done, err)
	}
	if _, _, _, _, _, err = readEvents(strings.NewReader("data: [DONE]\n\ndata: {}\n\n"), time.Now()); err == nil {
		t.Fatal("an event after [DONE] passed")
	}
	if _, _, _, _, _, err = readEvents(strings.NewReader("data: {oops\n\n"), time.Now()); err == nil {
		t.Fatal("a malformed event passed")
	}
}

func TestFullConfig(t *testing.T) {
	var cfg struct {
		Strategy struct{ Mode string }
		Retry    struct{ Attempts int }
		Guards   []map[string]any `json:"input_guardrails"`
		Targets  []struct {
			Provider   string
			CustomHost string `json:"custom_host"`
		}
	}
	if err := json.Unmarshal([]byte(fullConfig("http://127.0.0.1:1")), &cfg); err != nil {
		t.Fatal(err)
	}
	if cfg.Strategy.Mode != "fallback" || cfg.Retry.Attempts != 1 || len(cfg.Guards) != 2 || len(cfg.Targets) != 2 ||
		cfg.Targets[1].CustomHost != "http://127.0.0.1:1/v1" {
		t.Fatalf("%+v", cfg)
	}
	// The WASM guardrail the config names is the example the harness uploads.
	raw, err := os.ReadFile(filepath.Join("..", "..", "..", "examples", "guardrails", "wat-minimal", "manifest.json"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(raw), `"id": "wat-minimal"`) || !strings.Contains(string(raw), `"id": "nonEmpty"`) {
		t.Fatalf("manifest: %s", raw)
	}
}

func TestParseFlags(t *testing.T) {
	o, err := parseFlags([]string{"-quick", "-rounds", "2"})
	if err != nil {
		t.Fatal(err)
	}
	if o.rounds != 2 || o.duration != 400*time.Millisecond || o.streams != 6 {
		t.Fatalf("quick with -rounds 2: %+v", o)
	}
	o, err = parseFlags(nil)
	if err != nil || o.rounds != 5 || o.duration != 3*time.Second || o.rate != 1000 {
		t.Fatalf("defaults: %+v %v", o, err)
	}
	o, err = parseFlags([]string{"-cpu", "5s", "-baseline", "HEAD~1"})
	if err != nil || o.cpu != 5*time.Second || o.baseline != "HEAD~1" {
		t.Fatalf("-cpu 5s -baseline HEAD~1: %+v %v", o, err)
	}
	for _, args := range [][]string{
		{"-rounds", "0"},
		{"-cpu", "500ms"},
		{"-cpu", "3m"},
		{"-cpu", "5s", "-profile", "5s"},
	} {
		if _, err := parseFlags(args); err == nil {
			t.Errorf("%v accepted", args)
		}
	}
}

// TestProcReaders: the process's CPU times and memory as read from /proc;
// CPU spent shows in the user time.
func TestProcReaders(t *testing.T) {
	pid := os.Getpid()
	user, system, err := cpuTime(pid)
	if err != nil {
		t.Skip("no /proc here:", err)
	}
	if user < 0 || system < 0 {
		t.Fatalf("cpu time %v user, %v system", user, system)
	}
	// Spinning for 30 ms of the process's own CPU time (as the kernel
	// counts it) shows in the user time /proc reports, in 10 ms ticks.
	var spun syscall.Rusage
	x := uint64(1)
	for {
		for range 1 << 16 {
			x = x*6364136223846793005 + 1442695040888963407
		}
		syscall.Getrusage(syscall.RUSAGE_SELF, &spun)
		if time.Duration(spun.Utime.Nano()) >= user+30*time.Millisecond {
			break
		}
	}
	if x == 0 {
		t.Log(x) // keeps the loop
	}
	if after, _, err := cpuTime(pid); err != nil || after < user+20*time.Millisecond {
		t.Fatalf("user time %v after spinning 30 ms from %v (err %v)", after, user, err)
	}
	m, err := memory(pid)
	if err != nil || m.rss <= 0 || m.hwm < m.rss || m.anon <= 0 || m.anon > m.rss {
		t.Fatalf("memory %+v err %v", m, err)
	}
}
