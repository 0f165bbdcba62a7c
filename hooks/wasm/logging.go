package wasm

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"sync"
	"time"
	"unicode/utf8"
)

// Guest log levels (guardrail.log): -1 debug, 0 info, 1 warn, 2 error.
const (
	levelDebug = -1
	levelInfo  = 0
	levelWarn  = 1
	levelError = 2
)

func guestLevel(l int32) slog.Level {
	switch l {
	case levelDebug:
		return slog.LevelDebug
	case levelWarn:
		return slog.LevelWarn
	case levelError:
		return slog.LevelError
	}
	return slog.LevelInfo
}

// limiter is a token bucket: rate lines per second, up to burst at once.
type limiter struct {
	mu      sync.Mutex
	rate    float64
	burst   float64
	tokens  float64
	last    time.Time
	dropped int
}

func newLimiter(rate, burst float64) *limiter {
	return &limiter{rate: rate, burst: burst, tokens: burst, last: time.Now()}
}

// allow takes a token; dropped is how many lines were refused since the
// last one allowed.
func (l *limiter) allow() (ok bool, dropped int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := time.Now()
	l.tokens = min(l.burst, l.tokens+now.Sub(l.last).Seconds()*l.rate)
	l.last = now
	if l.tokens < 1 {
		l.dropped++
		return false, 0
	}
	l.tokens--
	dropped, l.dropped = l.dropped, 0
	return true, dropped
}

// guestLine logs one line from a guest (log, stdout, stderr or abort),
// truncated to logLineLimit bytes and rate-limited per plugin version.
func (p *plugin) guestLine(level slog.Level, source, function string, line []byte) {
	if !p.log.Enabled(context.Background(), level) {
		return
	}
	ok, dropped := p.guestLog.allow()
	if !ok {
		return
	}
	msg := truncate(line)
	attrs := []any{"source", source}
	if function != "" {
		attrs = append(attrs, "function", function)
	}
	if dropped > 0 {
		attrs = append(attrs, "dropped", dropped)
	}
	p.log.Log(context.Background(), level, "wasm guest: "+msg, attrs...)
}

func truncate(b []byte) string {
	b = bytes.TrimRight(b, "\r\n")
	if len(b) <= logLineLimit {
		return strings.ToValidUTF8(string(b), "\uFFFD")
	}
	cut := logLineLimit
	for cut > 0 && !utf8.RuneStart(b[cut]) {
		cut--
	}
	return strings.ToValidUTF8(string(b[:cut]), "\uFFFD") + "…"
}

// lineWriter turns a guest's stdout or stderr into log lines.
type lineWriter struct {
	p      *plugin
	source string
	level  slog.Level
	mu     sync.Mutex
	buf    []byte
	skip   bool // the current line was already logged truncated
}

func (p *plugin) newLineWriter(source string) *lineWriter {
	level := slog.LevelInfo
	if source == "stderr" {
		level = slog.LevelWarn
	}
	return &lineWriter{p: p, source: source, level: level}
}

func (w *lineWriter) Write(b []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	n := len(b)
	for len(b) > 0 {
		i := bytes.IndexByte(b, '\n')
		chunk := b
		if i >= 0 {
			chunk = b[:i]
		}
		if !w.skip {
			room := logLineLimit + 1 - len(w.buf)
			w.buf = append(w.buf, chunk[:min(len(chunk), room)]...)
			if len(w.buf) > logLineLimit {
				w.emit()
				w.skip = true
			}
		}
		if i < 0 {
			break
		}
		if !w.skip {
			w.emit()
		}
		w.skip = false
		b = b[i+1:]
	}
	return n, nil
}

func (w *lineWriter) emit() {
	if len(w.buf) > 0 {
		w.p.guestLine(w.level, w.source, "", w.buf)
	}
	w.buf = w.buf[:0]
}

// Flush logs a pending partial line.
func (w *lineWriter) Flush() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.skip {
		w.emit()
	}
	w.skip = false
}
