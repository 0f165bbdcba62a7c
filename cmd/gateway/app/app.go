// Package app builds the whole gateway from its options — store, keys,
// managed providers, WASM host and guardrails, response cache, request and
// audit logs, limits engine, pipeline, background workers and the server —
// and serves it. cmd/gateway runs it from flags and environment variables;
// the in-process hot-path benchmarks (bench) run the same wiring.
package app

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/llm-gateway/gateway/adminsvc"
	"github.com/llm-gateway/gateway/adminsvc/alerts"
	"github.com/llm-gateway/gateway/adminsvc/secrets"
	"github.com/llm-gateway/gateway/core"
	"github.com/llm-gateway/gateway/core/limits"
	"github.com/llm-gateway/gateway/core/limits/counters"
	"github.com/llm-gateway/gateway/core/mcp"
	"github.com/llm-gateway/gateway/core/netguard"
	"github.com/llm-gateway/gateway/core/periodic"
	"github.com/llm-gateway/gateway/core/pipeline"
	"github.com/llm-gateway/gateway/core/server"
	"github.com/llm-gateway/gateway/core/transport"
	"github.com/llm-gateway/gateway/hooks"
	"github.com/llm-gateway/gateway/hooks/wasm"
	_ "github.com/llm-gateway/gateway/plugins/all"
	"github.com/llm-gateway/gateway/plugins/cache"
	"github.com/llm-gateway/gateway/store"
)

// DefaultShutdownTimeout is how long Serve drains in-flight requests and
// streams when Options.ShutdownTimeout is not set.
const DefaultShutdownTimeout = 30 * time.Second

// Options are everything the gateway is built from.
type Options struct {
	// Addr is the address to listen on ("127.0.0.1:0" picks a port).
	Addr          string
	DataDir       string
	AdminKey      string
	EncryptionKey string
	// LimitsRedisURL keeps limit counters in Redis, shared by replicas;
	// empty keeps them embedded.
	LimitsRedisURL string
	// TrustedHosts is the GATEWAY_TRUSTED_HOSTS list (netguard.ParseTrusted).
	TrustedHosts string
	// MaxBodyBytes caps request bodies (default server.DefaultBodyLimit).
	MaxBodyBytes int
	// ShutdownTimeout bounds Serve's drain: 0 means
	// DefaultShutdownTimeout, a negative value drains nothing.
	ShutdownTimeout time.Duration
	// LogRetention is how long request log records are kept; 0 keeps
	// them for ever.
	LogRetention time.Duration
	// ExportRetention is how long finished log exports and their files
	// are kept; 0 keeps them for ever.
	ExportRetention time.Duration
	// ExportMaxTotalBytes bounds the log export files together (default
	// adminsvc.DefaultExportMaxTotalBytes): no export starts while they
	// reach it.
	ExportMaxTotalBytes int64
	// ExportMaxUnfinished bounds a workspace's exports that are draft or
	// in_progress (default adminsvc.DefaultExportMaxUnfinished).
	ExportMaxUnfinished int
	// RemoteTimeout and RemoteStreamIdle bound the calls of MCP servers
	// and agents (server.Options; 0 takes the server's defaults).
	RemoteTimeout, RemoteStreamIdle time.Duration
	// LogBodies keeps request and answer bodies in the request log
	// (server.Options.LogBodies).
	LogBodies bool
	// RemoteTestTimeout bounds one admin test of an MCP server or agent
	// (0: adminsvc.DefaultRemoteTestTimeout).
	RemoteTestTimeout time.Duration
	// MCPSessions and MCPSessionIdle bound the sessions held with MCP
	// servers of the HTTP+SSE transport: how many at once, and how long
	// one may go unused (defaults server.DefaultMCPSessions and
	// server.DefaultMCPSessionIdle).
	MCPSessions    int
	MCPSessionIdle time.Duration
	SMTP           alerts.Config
	// JWT authentication; off when no JWKS is set.
	JWT adminsvc.JWTOptions
	// PublicURL is the URL clients reach the gateway at, the base of
	// invite links (default http://<listen address>).
	PublicURL string
	// Logger defaults to slog.Default().
	Logger *slog.Logger
	// Stdout shows the operator a generated admin key (default: discarded).
	Stdout io.Writer
}

// App is a built gateway, listening but not yet serving.
type App struct {
	server  *fiber.App
	ln      net.Listener
	timeout time.Duration
	logger  *slog.Logger
	// closers stop what New started, in reverse order of starting.
	closers   []func()
	closeOnce sync.Once
	closeErr  error
}

// New builds the gateway as o says and listens on o.Addr. Background work
// (key worker, limit resets, alert sending, log pruning, log exports) runs until ctx
// ends or Close is called. On error, whatever was started is stopped.
func New(ctx context.Context, o Options) (_ *App, err error) {
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.Stdout == nil {
		o.Stdout = io.Discard
	}
	switch {
	case o.ShutdownTimeout == 0:
		o.ShutdownTimeout = DefaultShutdownTimeout
	case o.ShutdownTimeout < 0:
		o.ShutdownTimeout = 0 // no drain
	}
	logger := o.Logger
	a := &App{timeout: o.ShutdownTimeout, logger: logger}
	defer func() {
		if err != nil {
			a.Close()
		}
	}()
	policy, err := netguard.ParseTrusted(o.TrustedHosts)
	if err != nil {
		return nil, fmt.Errorf("GATEWAY_TRUSTED_HOSTS: %w", err)
	}

	cipher, st, err := openStore(o)
	if err != nil {
		return nil, err
	}
	a.onClose(func() {
		if err := st.Close(); err != nil {
			a.closeErr = fmt.Errorf("close the store: %w", err)
		}
	})

	secretResolver := secrets.NewResolver(st, cipher, secrets.Options{})
	keys, err := adminsvc.NewKeys(st, time.Now)
	if err != nil {
		return nil, err
	}
	managed, err := adminsvc.NewManaged(adminsvc.ManagedOptions{Store: st, Cipher: cipher, Lookup: secretResolver.ResolveFor})
	if err != nil {
		return nil, err
	}
	// WASM plugins, then saved guardrails: configs name both, and are
	// checked when they are loaded, with this app's own registry of them.
	host, err := wasm.NewHost(ctx, wasm.Options{CacheDir: filepath.Join(o.DataDir, "wasm-cache"), Logger: logger})
	if err != nil {
		return nil, fmt.Errorf("start the WASM host: %w", err)
	}
	a.onClose(func() { host.Close(context.Background()) })
	for _, err := range adminsvc.LoadPlugins(ctx, st, host) {
		logger.Error("a stored plugin could not be loaded; its checks are unavailable", "error", err)
	}
	guardrails, err := adminsvc.NewGuardrails(st, host.Check)
	if err != nil {
		return nil, err
	}
	configs, err := adminsvc.NewConfigs(st, guardrails.Hooks())
	if err != nil {
		return nil, err
	}
	prompts, err := adminsvc.NewPrompts(st)
	if err != nil {
		return nil, err
	}
	responses, err := cache.OpenBolt(filepath.Join(o.DataDir, cache.DefaultFileName), cache.BoltOptions{})
	if err != nil {
		return nil, fmt.Errorf("open the response cache: %w", err)
	}
	a.onClose(func() { responses.Close() })
	logs := store.NewLogWriter(st, store.LogWriterOptions{Logger: logger})
	a.onClose(logs.Close)
	if o.LogRetention > 0 {
		pruner := store.StartLogPruner(st, store.LogPrunerOptions{Retention: o.LogRetention, Logger: logger})
		a.onClose(pruner.Close)
	}
	// User-supplied upstream URLs (custom hosts, MCP servers, agents) are
	// dialled through the address guard.
	guarded := &http.Client{Transport: transport.New(policy.NewTransport())}
	remote := withoutRedirects(guarded)
	mcpServers, err := adminsvc.NewMCPServers(adminsvc.MCPOptions{Store: st, Cipher: cipher, Lookup: secretResolver.ResolveFor, HTTP: remote})
	if err != nil {
		return nil, err
	}
	engine, stopLimits, err := startLimits(ctx, st, o.LimitsRedisURL, logger)
	if err != nil {
		return nil, err
	}
	a.onClose(stopLimits)
	pipe, err := pipeline.New(pipeline.Options{
		Client:        &http.Client{Transport: transport.New(transport.Provider())},
		GuardedClient: guarded,
		Hooks:         &hooks.Runner{Logger: logger, Registry: guardrails.Hooks()},
		Cache:         responses,
		Managed:       managed,
		Limiter:       engine,
	})
	if err != nil {
		return nil, err
	}
	a.ln, err = net.Listen("tcp", o.Addr)
	if err != nil {
		return nil, fmt.Errorf("listen on %s: %w", o.Addr, err)
	}
	// Closed here on an early return; after serving, closing again is harmless.
	a.onClose(func() { a.ln.Close() })
	publicURL := o.PublicURL
	if publicURL == "" {
		publicURL = "http://" + a.ln.Addr().String()
	}
	agentServers, err := adminsvc.NewAgentServers(adminsvc.AgentOptions{Store: st, Cipher: cipher, Lookup: secretResolver.ResolveFor, PublicURL: publicURL, HTTP: remote})
	if err != nil {
		return nil, err
	}
	auth, err := jwtAuth(o.JWT, keys, logger)
	if err != nil {
		return nil, err
	}
	auditLog := store.NewAuditWriter(st, store.AuditWriterOptions{Logger: logger})
	a.onClose(auditLog.Close)
	audit := adminsvc.NewAudit(auditLog, time.Now)
	exports, err := adminsvc.NewExports(adminsvc.ExportsOptions{Store: st, Dir: filepath.Join(o.DataDir, "exports"),
		Retention: o.ExportRetention, MaxTotalBytes: o.ExportMaxTotalBytes, MaxUnfinished: o.ExportMaxUnfinished, Logger: logger})
	if err != nil {
		return nil, err
	}
	a.onClose(startExports(ctx, exports))
	admin := adminsvc.New(adminsvc.Deps{Store: st, Keys: keys, Configs: configs, Prompts: prompts, Guardrails: guardrails, Host: host,
		Cipher: cipher, Managed: managed, SecretResolver: secretResolver, Limits: engine, PublicURL: publicURL, Now: time.Now, Audit: audit,
		Logs: logs, Exports: exports,
		MCP: mcpServers, MCPClient: &mcp.Client{HTTP: remote}, Agents: agentServers, AgentClient: remote,
		RemoteTestTimeout: o.RemoteTestTimeout})
	a.onClose(startKeyWorker(ctx, st, keys, logger))
	bridge := &mcp.Bridge{Client: remote, MaxSessions: cmp.Or(o.MCPSessions, server.DefaultMCPSessions),
		IdleTimeout: cmp.Or(o.MCPSessionIdle, server.DefaultMCPSessionIdle)}
	a.onClose(bridge.Close)
	a.server = server.New(server.Options{
		Auth: auth, Pipeline: pipe, Logs: logs, Configs: configs, Prompts: prompts, Managed: managed, MCP: mcpServers, MCPClient: remote, MCPBridge: bridge, Agents: agentServers, AgentClient: remote,
		RemoteTimeout: o.RemoteTimeout, RemoteStreamIdle: o.RemoteStreamIdle, Limiter: engine, Admin: admin.Register, Public: admin.RegisterPublic,
		BodyLimit: o.MaxBodyBytes, LogBodies: o.LogBodies, Logger: logger, OnAuthFailure: audit.AuthFailed,
	})
	stopAlerts, err := startAlerts(ctx, st, o.SMTP, logger)
	if err != nil {
		return nil, err
	}
	a.onClose(stopAlerts)
	return a, nil
}

// onClose adds stop to what Close runs, before everything added earlier.
func (a *App) onClose(stop func()) { a.closers = append(a.closers, stop) }

// Addr is the address the gateway listens on.
func (a *App) Addr() net.Addr { return a.ln.Addr() }

// Serve answers on the app's listener until ctx ends, then drains
// in-flight requests for up to Options.ShutdownTimeout. It does not Close
// the app.
func (a *App) Serve(ctx context.Context) error {
	served := make(chan error, 1)
	go func() { served <- a.server.Listener(a.ln) }()

	select {
	case err := <-served:
		return fmt.Errorf("serve: %w", err)
	case <-ctx.Done():
	}
	a.logger.Info("shutting down: draining in-flight requests", "timeout", a.timeout)
	if err := a.server.ShutdownWithTimeout(a.timeout); err != nil && !strings.Contains(err.Error(), "closed") {
		a.logger.Warn("shutdown did not drain every request in time", "error", err)
	}
	return nil
}

// Close stops everything New started, in reverse order: the background
// workers and log writers (flushing them) before the store they write to,
// which closes last. It returns the store's close error, and may be called
// more than once. Call it after Serve has returned.
func (a *App) Close() error {
	a.closeOnce.Do(func() {
		for i := len(a.closers) - 1; i >= 0; i-- {
			a.closers[i]()
		}
	})
	return a.closeErr
}

// openStore loads the encryption key, opens the store (applying its
// migrations) and bootstraps it on first start, telling the operator about
// a new key file and a generated admin key.
func openStore(o Options) (*store.Cipher, store.Store, error) {
	if fi, err := os.Stat(o.DataDir); err == nil && !fi.IsDir() {
		return nil, nil, fmt.Errorf("the data dir %s is a file, not a directory: set --data-dir (GATEWAY_DATA_DIR) to a directory", o.DataDir)
	}
	cipher, keyCreated, err := store.LoadCipher(o.DataDir, o.EncryptionKey)
	if err != nil {
		return nil, nil, err
	}
	st, err := store.Open(o.DataDir, store.OnMigration(func(m store.Migration) {
		o.Logger.Info("applied a store migration", "schema_version", m.Version, "name", m.Name)
	}))
	if err != nil {
		return nil, nil, err
	}
	boot, err := adminsvc.Bootstrap(st, o.AdminKey, time.Now())
	if err != nil {
		st.Close()
		return nil, nil, err
	}
	if boot.Created {
		o.Logger.Info("created a new store", "data_dir", o.DataDir, "organisation_id", boot.OrganisationID, "default_workspace_id", boot.WorkspaceID)
	}
	if keyCreated {
		msg := "created a new encryption key file: back it up with the data dir; losing it makes the stored provider keys unreadable (or set GATEWAY_ENCRYPTION_KEY)"
		if !boot.Created {
			msg += "; the store already existed: if it holds secrets sealed under an earlier key file, stop and restore that file"
		}
		o.Logger.Warn(msg, "path", filepath.Join(o.DataDir, store.KeyFileName))
	}
	if boot.GeneratedKey != "" {
		fmt.Fprintf(o.Stdout, "\nAdmin API key (shown once, store it now): %s\n"+
			"Set GATEWAY_ADMIN_API_KEY on first start to choose it yourself.\n\n", boot.GeneratedKey)
	}
	return cipher, st, nil
}

// startKeyWorker runs key expiry, scheduled rotation and key alerts every
// minute; the returned stop waits for a run in progress, so it must run
// before the store closes.
func startKeyWorker(ctx context.Context, st store.Store, keys *adminsvc.Keys, logger *slog.Logger) (stop func()) {
	wctx, cancel := context.WithCancel(ctx)
	done := adminsvc.NewKeyWorker(st, keys, time.Now, logger).Start(wctx, time.Minute)
	return func() {
		cancel()
		<-done
	}
}

// startExports runs the log-export worker; the returned stop waits for it,
// a run it interrupts marked failed, so it must run before the store
// closes.
func startExports(ctx context.Context, exports *adminsvc.Exports) (stop func()) {
	wctx, cancel := context.WithCancel(ctx)
	done := exports.Start(wctx)
	return func() {
		cancel()
		<-done
	}
}

// startLimits builds the limit counter (Redis when redisURL is set, else
// embedded and saved to st) and the limits engine with its periodic-reset
// worker; the returned stop waits for the worker, commits the engine's
// queued usage states and closes the counter (saving it), so it must run
// before the store closes.
func startLimits(ctx context.Context, st store.Store, redisURL string, logger *slog.Logger) (*limits.Engine, func(), error) {
	counter, err := counters.FromEnv(func(string) string { return redisURL }, st, logger)
	if err != nil {
		return nil, nil, fmt.Errorf("limit counters: %w", err)
	}
	eng, err := limits.New(limits.Options{Store: st, Counter: counter, Logger: logger})
	if err != nil {
		counter.Close()
		return nil, nil, err
	}
	wctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		periodic.Every(wctx.Done(), time.Minute, func() { eng.RunOnce(wctx, time.Now()) })
	}()
	return eng, func() {
		cancel()
		<-done
		eng.Close()
		if err := counter.Close(); err != nil {
			logger.Error("closing the limit counter failed", "error", err)
		}
	}, nil
}

// startAlerts starts the e-mail sender when SMTP is configured; stop waits
// for a send in progress.
func startAlerts(ctx context.Context, st store.Store, cfg alerts.Config, logger *slog.Logger) (stop func(), err error) {
	if !cfg.Enabled() {
		logger.Info("e-mail alerts are kept in the outbox until SMTP is configured (" + alerts.EnvAddr + ")")
		return func() {}, nil
	}
	sender, err := alerts.NewSender(st, cfg, alerts.Options{Logger: logger})
	if err != nil {
		return nil, err
	}
	logger.Info("sending e-mail alerts", "smtp_addr", cfg.Addr, "from", cfg.From)
	return sender.Start(ctx, alerts.DefaultInterval), nil
}

// jwtAuth is the API-key snapshot, composed with JWT authentication when a
// JWKS is configured.
func jwtAuth(o adminsvc.JWTOptions, keys *adminsvc.Keys, logger *slog.Logger) (core.Authenticator, error) {
	if o.JWKSURL == "" && o.JWKSFile == "" {
		if o.Issuer != "" || o.Audience != "" {
			return nil, errors.New("GATEWAY_JWT_ISSUER and GATEWAY_JWT_AUDIENCE need GATEWAY_JWT_JWKS_URL or GATEWAY_JWT_JWKS_FILE")
		}
		return keys, nil
	}
	o.Keys, o.Logger = keys, logger
	j, err := adminsvc.NewJWTAuth(o)
	if err != nil {
		return nil, err
	}
	logger.Info("JWT authentication is on", "config", j.String())
	return adminsvc.WithJWT(keys, j), nil
}

// withoutRedirects is c for MCP servers and agents: their answers are
// handed back as sent, redirects included, since following one would send
// the integration's stored custom headers to the host it names (and turn
// a JSON-RPC POST into a GET).
func withoutRedirects(c *http.Client) *http.Client {
	nc := *c
	nc.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	return &nc
}
