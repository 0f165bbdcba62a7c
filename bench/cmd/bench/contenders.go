package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	benchkit "github.com/llm-gateway/gateway/bench"
)

// contender is one thing in front of the mock that the harness measures.
type contender struct {
	key, name, what string
	// proc serves the 0 ms upstream figures; slowProc the fixed-rate one
	// (the same process except for direct, where they are the two mocks).
	proc, slowProc *process
	fast, slow     endpoint
	// unavailable says why the contender is not measured at all;
	// sseUnavailable why its streams are not.
	unavailable, sseUnavailable string
	errs                        errLog
	// rounds[i] holds the figures of round i.
	rounds []map[string]float64
	// med is the median of each figure over the kept rounds.
	med map[string]float64
	// memory, KiB (anonPeak: the peak of RssAnon, private memory)
	rssIdle, rssPeak, anonPeak, rssAfter, hwm int64
	// pprofAddr is where a gateway serves its profiles (with -profile).
	pprofAddr string
}

func (c *contender) procFor(slow bool) *process {
	if slow {
		return c.slowProc
	}
	return c.proc
}

func hostPort(url string) string { return strings.TrimPrefix(url, "http://") }

const (
	providerKey = "Bearer sk-bench-provider-key"
	adminKey    = "bench-admin-key-0123456789abcdef"
	chatPath    = "/v1/chat/completions"
)

// build compiles the gateway, the mock and the two bare proxies.
func build(ctx context.Context, root, binDir string) (map[string]string, error) {
	bins := map[string]string{}
	for _, pkg := range []struct{ name, path string }{
		{"mockprovider", "./cmd/mockprovider"},
		{"gateway", "./cmd/gateway"},
		{"nethttp-proxy", "./bench/proxies/nethttp"},
		{"fasthttp-proxy", "./bench/proxies/fasthttp"},
	} {
		out := filepath.Join(binDir, pkg.name)
		if err := goBuild(ctx, root, pkg.path, out); err != nil {
			return nil, err
		}
		bins[pkg.name] = out
	}
	return bins, nil
}

// goBuild builds the package at path (relative to dir) into out.
func goBuild(ctx context.Context, dir, path, out string) error {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "go", "build", "-o", out, path)
	cmd.Dir = dir
	if msg, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go build %s: %v\n%s", path, err, msg)
	}
	return nil
}

// buildBaseline builds cmd/gateway as it is at the git revision rev (in a
// temporary worktree of the repository at root, removed afterwards) into
// out, for -baseline.
func buildBaseline(ctx context.Context, root, rev, out string) error {
	src, err := os.MkdirTemp("", "gateway-bench-baseline-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(src)
	git := func(args ...string) error {
		cmd := exec.CommandContext(ctx, "git", append([]string{"-C", root}, args...)...)
		if msg, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("git %s: %v: %s", strings.Join(args, " "), err, bytes.TrimSpace(msg))
		}
		return nil
	}
	if err := git("worktree", "add", "--detach", src, rev); err != nil {
		return fmt.Errorf("-baseline %s: %w", rev, err)
	}
	defer git("worktree", "remove", "--force", src)
	return goBuild(ctx, src, "./cmd/gateway", out)
}

// The Node gateway: the version installed from npm, and the version of its
// HTTP adapter it is pinned to. @portkey-ai/gateway declares
// "@hono/node-server": "^1.3.3", which today resolves to a release whose
// Response wrapper makes the gateway answer every streamed request with
// 500 "TypeError: immutable" (the project's issue #1389); 1.13.8 is the
// newest adapter release with which its streams work, so the harness
// installs it through npm "overrides".
const (
	nodeGatewayPackage = "@portkey-ai/gateway"
	nodeAdapterPin     = "1.13.8"
)

// installNodeGateway installs the Node gateway into dir (a cache kept
// between runs) and returns its entry script and version.
func installNodeGateway(ctx context.Context, dir, version string) (entry, installed string, err error) {
	for _, tool := range []string{"node", "npm"} {
		if _, err := exec.LookPath(tool); err != nil {
			return "", "", fmt.Errorf("%s is not installed", tool)
		}
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", "", err
	}
	manifest := fmt.Sprintf(`{"private": true, "description": "bench harness: the Node gateway under test",
  "dependencies": {%q: %q},
  "overrides": {"@hono/node-server": %q}}
`, nodeGatewayPackage, version, nodeAdapterPin)
	pkgDir := filepath.Join(dir, "node_modules", filepath.FromSlash(nodeGatewayPackage))
	old, _ := os.ReadFile(filepath.Join(dir, "package.json"))
	installedVersion := func() string {
		var p struct{ Version string }
		raw, _ := os.ReadFile(filepath.Join(pkgDir, "package.json"))
		json.Unmarshal(raw, &p)
		return p.Version
	}
	if string(old) != manifest || (version != "latest" && installedVersion() != version) || installedVersion() == "" {
		if err := os.WriteFile(filepath.Join(dir, "package.json"), []byte(manifest), 0o644); err != nil {
			return "", "", err
		}
		ictx, cancel := context.WithTimeout(ctx, 5*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ictx, "npm", "install", "--no-audit", "--no-fund", "--ignore-scripts", "--loglevel=error")
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			return "", "", fmt.Errorf("npm install %s@%s: %v: %s", nodeGatewayPackage, version, err, clip(out, 300))
		}
	}
	var p struct {
		Version string          `json:"version"`
		Bin     json.RawMessage `json:"bin"`
	}
	raw, err := os.ReadFile(filepath.Join(pkgDir, "package.json"))
	if err != nil {
		return "", "", fmt.Errorf("installed, but: %v", err)
	}
	if err := json.Unmarshal(raw, &p); err != nil {
		return "", "", err
	}
	var bin string
	if json.Unmarshal(p.Bin, &bin) != nil {
		var bins map[string]string
		json.Unmarshal(p.Bin, &bins)
		for _, b := range bins {
			bin = b
			break
		}
	}
	if bin == "" {
		return "", "", errors.New("its package.json names no bin")
	}
	return filepath.Join(pkgDir, filepath.FromSlash(bin)), p.Version, nil
}

// fullConfig is the gateway "full pipeline" contender's inline config: a
// fallback over two targets (both the mock) with one retry, a built-in
// input guardrail and a WASM one.
func fullConfig(mockURL string) string {
	target := map[string]any{"provider": "openai", "custom_host": mockURL + "/v1"}
	cfg := map[string]any{
		"strategy": map[string]any{"mode": "fallback"},
		"retry":    map[string]any{"attempts": 1},
		"input_guardrails": []any{
			map[string]any{"default.wordCount": map[string]any{"maxWords": 1000}},
			map[string]any{"wat-minimal.nonEmpty": map[string]any{}},
		},
		"targets": []any{target, target},
	}
	raw, _ := json.Marshal(cfg)
	return string(raw)
}

// startContenders starts the mocks and everything in front of them.
func (b *bench) startContenders(ctx context.Context, bins map[string]string) error {
	logs := b.logDir
	mock := func(name string, args ...string) (*process, error) {
		return startProcess(ctx, name, bins["mockprovider"], append([]string{"--addr", "127.0.0.1:0"}, args...), nil, b.root, logs, listeningLine)
	}
	var err error
	// 5 frames 10 ms apart, as the mock's defaults, stated here so the
	// figures do not move if the defaults do.
	if b.mockFast, err = mock("mock-0ms", "--latency", "0", "--frames", "5", "--interval", "10ms"); err != nil {
		return err
	}
	b.procs = append(b.procs, b.mockFast)
	if b.mockSlow, err = mock("mock-50ms", "--latency", "50ms", "--frames", "5", "--interval", "10ms"); err != nil {
		return err
	}
	b.procs = append(b.procs, b.mockSlow)
	fastURL, slowURL := b.mockFast.url, b.mockSlow.url
	auth := [][2]string{{"Authorization", providerKey}}

	direct := &contender{key: "direct", name: "direct", what: "straight to the mock (the baseline)",
		proc: b.mockFast, slowProc: b.mockSlow,
		fast: endpoint{hostPort(fastURL), chatPath, auth}, slow: endpoint{hostPort(slowURL), chatPath, auth}}
	b.contenders = append(b.contenders, direct)

	for _, p := range []struct{ key, name, bin, what string }{
		{"nethttp", "net/http proxy", "nethttp-proxy", "bare `httputil.ReverseProxy` (bench/proxies/nethttp)"},
		{"fasthttp", "fasthttp proxy", "fasthttp-proxy", "bare fasthttp server + `HostClient` (bench/proxies/fasthttp)"},
	} {
		c := &contender{key: p.key, name: p.name, what: p.what}
		b.contenders = append(b.contenders, c)
		proc, err := startProcess(ctx, p.key, bins[p.bin], []string{"--addr", "127.0.0.1:0", "--upstream", fastURL, "--slow-upstream", slowURL}, nil, b.root, logs, listeningLine)
		if err != nil {
			c.unavailable = err.Error()
			continue
		}
		b.procs = append(b.procs, proc)
		c.proc, c.slowProc = proc, proc
		c.fast = endpoint{hostPort(proc.url), chatPath, auth}
		c.slow = endpoint{hostPort(proc.url), "/slow" + chatPath, auth}
	}

	b.startGateways(ctx, bins["gateway"], "", "", fastURL, slowURL)
	if bin := bins["gateway-baseline"]; bin != "" {
		b.startGateways(ctx, bin, "@base", " at "+b.opts.baseline, fastURL, slowURL)
	}

	if b.opts.node {
		node := &contender{key: "node", name: "Node gateway", what: "`" + nodeGatewayPackage + "` from npm, `--headless`, `x-portkey-provider: openai` + `x-portkey-custom-host`"}
		b.contenders = append(b.contenders, node)
		if err := b.startNode(ctx, node, fastURL, slowURL); err != nil {
			node.unavailable = err.Error()
		}
	}
	return nil
}

// startGateways starts two gateway contenders on bin, minimal and full,
// keyed gw-min and gw-full followed by keySuffix and named with
// nameSuffix (-baseline starts a second pair from another revision's
// build).
func (b *bench) startGateways(ctx context.Context, bin, keySuffix, nameSuffix, fastURL, slowURL string) {
	gateway := func(c *contender) (*process, error) {
		dataDir := filepath.Join(b.runDir, c.key+"-data")
		env := []string{
			"GATEWAY_ADMIN_API_KEY=" + adminKey,
			"GATEWAY_TRUSTED_HOSTS=" + hostPort(fastURL) + "," + hostPort(slowURL),
			"GATEWAY_LOG_LEVEL=info",
		}
		if b.opts.profile > 0 {
			port, err := freeLoopbackPort()
			if err != nil {
				return nil, err
			}
			c.pprofAddr = fmt.Sprintf("127.0.0.1:%d", port)
			env = append(env, "GATEWAY_PPROF_ADDR="+c.pprofAddr)
		}
		return startProcess(ctx, c.key, bin, []string{"--addr", "127.0.0.1:0", "--data-dir", dataDir}, env, b.root, b.logDir, listeningLine)
	}

	min := &contender{key: "gw-min" + keySuffix, name: "gateway minimal" + nameSuffix, what: "key auth + `x-gateway-provider` + custom host; request logging on"}
	b.contenders = append(b.contenders, min)
	if proc, err := gateway(min); err != nil {
		min.unavailable = err.Error()
	} else {
		b.procs = append(b.procs, proc)
		min.proc, min.slowProc = proc, proc
		h := func(mock string) [][2]string {
			return [][2]string{{"x-gateway-api-key", adminKey}, {"x-gateway-provider", "openai"},
				{"x-gateway-custom-host", mock + "/v1"}, {"Authorization", providerKey}}
		}
		min.fast = endpoint{hostPort(proc.url), chatPath, h(fastURL)}
		min.slow = endpoint{hostPort(proc.url), chatPath, h(slowURL)}
	}

	full := &contender{key: "gw-full" + keySuffix, name: "gateway full" + nameSuffix, what: "key auth, request logging, inline config: fallback over 2 targets with `retry.attempts` 1, " +
		"input guardrails `default.wordCount` (built-in) and `wat-minimal.nonEmpty` (WASM, uploaded through `/v1/plugins`), " +
		"a requests rate-limit policy per key (embedded counter) on a workspace key"}
	b.contenders = append(b.contenders, full)
	if proc, err := gateway(full); err != nil {
		full.unavailable = err.Error()
	} else {
		b.procs = append(b.procs, proc)
		full.proc, full.slowProc = proc, proc
		if err := benchkit.UploadPlugin(ctx, http.DefaultClient, proc.url, adminKey, filepath.Join(b.root, "examples", "guardrails", "wat-minimal"), "minimal.wasm"); err != nil {
			full.unavailable = "uploading the WASM guardrail failed: " + err.Error()
		}
		fullKey, err := benchkit.RateLimitedKey(ctx, http.DefaultClient, proc.url, adminKey)
		if err != nil {
			full.unavailable = "setting up the rate-limit policy failed: " + err.Error()
		}
		h := func(mock string) [][2]string {
			return [][2]string{{"x-gateway-api-key", fullKey}, {"x-gateway-config", fullConfig(mock)}, {"Authorization", providerKey}}
		}
		full.fast = endpoint{hostPort(proc.url), chatPath, h(fastURL)}
		full.slow = endpoint{hostPort(proc.url), chatPath, h(slowURL)}
	}
}

func (b *bench) startNode(ctx context.Context, c *contender, fastURL, slowURL string) error {
	res := <-b.nodeInstall
	if res.err != nil {
		return res.err
	}
	b.nodeVersion = res.version
	c.what = fmt.Sprintf("`%s@%s` from npm (with `@hono/node-server@%s`, see below), started `--headless`, `x-portkey-provider: openai` + `x-portkey-custom-host`",
		nodeGatewayPackage, res.version, nodeAdapterPin)
	port, err := freeLoopbackPort()
	if err != nil {
		return err
	}
	addr := "127.0.0.1:" + strconv.Itoa(port)
	proc, err := startProcess(ctx, "node", "node", []string{res.entry, "--headless", "--port=" + strconv.Itoa(port)},
		nil, filepath.Dir(res.entry), b.logDir, portOpen(addr))
	if err != nil {
		return err
	}
	b.procs = append(b.procs, proc)
	c.proc, c.slowProc = proc, proc
	h := func(mock string) [][2]string {
		return [][2]string{{"x-portkey-provider", "openai"}, {"x-portkey-custom-host", mock + "/v1"}, {"Authorization", providerKey}}
	}
	c.fast = endpoint{addr, chatPath, h(fastURL)}
	c.slow = endpoint{addr, chatPath, h(slowURL)}
	return nil
}

type nodeInstallResult struct {
	entry, version string
	err            error
}

// verifyFull checks once that the full-pipeline contender really runs
// what it claims: both input guardrails pass (they are in the answer's
// hook_results) and the fallback's first target answers.
func verifyFull(ctx context.Context, c *contender) error {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "POST", c.fast.url(), bytes.NewReader(chatBody))
	req.Header.Set("Content-Type", "application/json")
	for _, h := range c.fast.headers {
		req.Header.Set(h[0], h[1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 {
		return fmt.Errorf("status %d: %s", resp.StatusCode, clip(body, 300))
	}
	if got := resp.Header.Get("x-gateway-last-used-option-index"); got != "config.targets[0]" {
		return fmt.Errorf("answered by %q, want the fallback's config.targets[0]", got)
	}
	var a struct {
		HookResults struct {
			Before []struct {
				Checks []struct {
					ID      string `json:"id"`
					Verdict bool   `json:"verdict"`
				} `json:"checks"`
			} `json:"before_request_hooks"`
		} `json:"hook_results"`
	}
	if err := json.Unmarshal(body, &a); err != nil {
		return err
	}
	passed := map[string]bool{}
	for _, h := range a.HookResults.Before {
		for _, ch := range h.Checks {
			passed[ch.ID] = ch.Verdict
		}
	}
	for _, id := range []string{"default.wordCount", "wat-minimal.nonEmpty"} {
		if !passed[id] {
			return fmt.Errorf("check %s did not run and pass: hook_results %s", id, clip(body, 400))
		}
	}
	return nil
}
