package server

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/llm-gateway/gateway/core"
)

// Defaults of Options.RemoteTimeout and Options.RemoteStreamIdle.
const (
	// DefaultRemoteTimeout bounds the wait for an MCP server's or agent's
	// answer: a tool call or an agent's task may take a while, but a
	// server that has not answered in two minutes is not going to.
	DefaultRemoteTimeout = 2 * time.Minute
	// DefaultRemoteStreamIdle bounds the pause between two reads of an
	// event stream: MCP notification streams and A2A task streams stay
	// open long, so only silence is bounded, not the stream.
	DefaultRemoteStreamIdle = 5 * time.Minute
	// DefaultMCPSessions bounds the sessions open at once with MCP servers
	// of the HTTP+SSE transport (each holds one event stream to its
	// server); DefaultMCPSessionIdle ends one no request has used for that
	// long (an MCP client may sit idle while its user thinks).
	DefaultMCPSessions    = 1000
	DefaultMCPSessionIdle = 30 * time.Minute
)

// errRemoteTimeout and errRemoteIdle are why a remote call was cancelled.
var (
	errRemoteTimeout = errors.New("remote call timed out")
	errRemoteIdle    = errors.New("remote stream idle")
)

// remoteCall bounds one call of a remote server (MCP server, agent): the
// answer — its headers, and a JSON body read whole — must come within
// limit; an event stream, once its headers came, may then pause between
// reads for at most idle. Its context is what the call is sent with.
type remoteCall struct {
	ctx    context.Context
	cancel context.CancelCauseFunc
	timer  *time.Timer
	limit  time.Duration
	// byClient marks limit as the client's x-gateway-request-timeout
	// (answered 408, as on the other routes) rather than the gateway's
	// bound (504).
	byClient bool
}

// newRemoteCall starts the clock of a call bounded by limit.
func newRemoteCall(limit time.Duration, byClient bool) *remoteCall {
	// Not the handler's context: an event stream is read after the handler
	// returns, and ends when the client goes (a failed write closes it).
	ctx, cancel := context.WithCancelCause(context.Background())
	rc := &remoteCall{ctx: ctx, cancel: cancel, limit: limit, byClient: byClient}
	rc.timer = time.AfterFunc(limit, func() { cancel(errRemoteTimeout) })
	return rc
}

// remoteCall starts the clock of req's call of a remote server: the
// client's x-gateway-request-timeout, else the server's RemoteTimeout.
func (s *Server) remoteCall(req *core.Request) *remoteCall {
	if req.Timeout > 0 {
		return newRemoteCall(req.Timeout, true)
	}
	return newRemoteCall(s.remoteTimeout, false)
}

// end stops the clock and releases the call's context.
func (rc *remoteCall) end() {
	rc.timer.Stop()
	rc.cancel(nil)
}

// timeoutError is the answer to a call that err ended, when the call's
// bound ended it; nil otherwise. what says what did not come in time.
func (rc *remoteCall) timeoutError(k *remoteKind, slug, what string, err error) *core.Error {
	if err == nil || !errors.Is(context.Cause(rc.ctx), errRemoteTimeout) {
		return nil
	}
	if rc.byClient {
		return core.Timeout("the %s %s %s within the %s of x-gateway-request-timeout", k.noun, slug, what, rc.limit)
	}
	return &core.Error{Status: 504, Type: core.TypeTimeout,
		Message: fmt.Sprintf("the %s %s %s within %s", k.noun, slug, what, rc.limit)}
}

// stream hands over the body of an event-stream answer: the answer's
// bound ends, and a pause of more than idle between reads ends the stream
// with an error naming it.
func (rc *remoteCall) stream(body io.ReadCloser, idle time.Duration) io.ReadCloser {
	rc.timer.Stop()
	s := &idleStream{body: body, call: rc, idle: idle}
	s.timer = time.AfterFunc(idle, func() { rc.cancel(errRemoteIdle) })
	return s
}

// idleStream is an event-stream body whose reads may pause for at most
// idle each.
type idleStream struct {
	body  io.ReadCloser
	call  *remoteCall
	timer *time.Timer
	idle  time.Duration
}

func (s *idleStream) Read(p []byte) (int, error) {
	n, err := s.body.Read(p)
	if err != nil && errors.Is(context.Cause(s.call.ctx), errRemoteIdle) {
		return n, fmt.Errorf("the stream sent nothing for %s", s.idle)
	}
	s.timer.Reset(s.idle)
	return n, err
}

func (s *idleStream) Close() error {
	s.timer.Stop()
	s.call.cancel(nil)
	return s.body.Close()
}
