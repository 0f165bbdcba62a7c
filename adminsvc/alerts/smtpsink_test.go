package alerts

import (
	"bufio"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"math/big"
	"net"
	"net/textproto"
	"strings"
	"sync"
	"testing"
	"time"
)

// sinkMsg is one message the sink accepted.
type sinkMsg struct {
	From     string
	To       []string
	Data     string // dot-unstuffed, CRLF kept
	TLS      bool
	AuthUser string
}

// sink is a small SMTP server on loopback for tests: EHLO/HELO, optional
// STARTTLS with an in-process self-signed certificate, AUTH PLAIN, MAIL,
// RCPT, DATA, RSET, NOOP, QUIT, and a failure mode answering one command
// with a chosen reply.
type sink struct {
	t        *testing.T
	ln       net.Listener
	tls      *tls.Config // non-nil: STARTTLS is offered
	user     string      // non-empty: AUTH is offered and required
	pass     string
	mu       sync.Mutex
	msgs     []sinkMsg
	failVerb string // "MAIL", "RCPT" or "DATA" ("DATA" fails after the data)
	failLine string // e.g. "451 4.3.0 try again later"
	got      chan struct{}
	wg       sync.WaitGroup
}

type sinkOption func(*sink)

func withTLS() sinkOption { return func(s *sink) { s.tls = selfSigned(s.t) } }

func withAuth(user, pass string) sinkOption {
	return func(s *sink) { s.user, s.pass = user, pass }
}

// startSink listens on host:0 (127.0.0.1 when empty) until the test ends.
func startSink(t *testing.T, host string, opts ...sinkOption) *sink {
	t.Helper()
	if host == "" {
		host = "127.0.0.1"
	}
	ln, err := net.Listen("tcp", net.JoinHostPort(host, "0"))
	if err != nil {
		t.Skipf("cannot listen on %s: %v", host, err)
	}
	s := &sink{t: t, ln: ln, got: make(chan struct{}, 1000)}
	for _, o := range opts {
		o(s)
	}
	s.wg.Add(1)
	go s.accept()
	t.Cleanup(func() { ln.Close(); s.wg.Wait() })
	return s
}

func (s *sink) addr() string { return s.ln.Addr().String() }

// fail makes the sink answer verb with line until fail("", "").
func (s *sink) fail(verb, line string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.failVerb, s.failLine = verb, line
}

func (s *sink) messages() []sinkMsg {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]sinkMsg(nil), s.msgs...)
}

// failing returns the reply line to give verb, if it is to fail.
func (s *sink) failing(verb string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.failVerb == verb {
		return s.failLine
	}
	return ""
}

func (s *sink) accept() {
	defer s.wg.Done()
	for {
		c, err := s.ln.Accept()
		if err != nil {
			return
		}
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			defer c.Close()
			_ = c.SetDeadline(time.Now().Add(10 * time.Second))
			s.serve(c)
		}()
	}
}

// serve speaks SMTP on one connection.
func (s *sink) serve(c net.Conn) {
	tp := textproto.NewConn(c)
	reply := func(lines ...string) {
		for _, l := range lines {
			_ = tp.PrintfLine("%s", l)
		}
	}
	reply("220 sink ESMTP ready")
	var (
		isTLS  bool
		authed string
		cur    *sinkMsg
	)
	for {
		line, err := tp.ReadLine()
		if err != nil {
			return
		}
		verb, arg, _ := strings.Cut(line, " ")
		verb = strings.ToUpper(verb)
		switch verb {
		case "EHLO":
			ext := []string{"250-sink", "250-8BITMIME"}
			if s.tls != nil && !isTLS {
				ext = append(ext, "250-STARTTLS")
			}
			if s.user != "" {
				ext = append(ext, "250-AUTH PLAIN")
			}
			ext = append(ext, "250 SIZE 1000000")
			reply(ext...)
		case "HELO":
			reply("250 sink")
		case "STARTTLS":
			if s.tls == nil || isTLS {
				reply("502 5.5.1 not offered")
				continue
			}
			reply("220 2.0.0 go ahead")
			tc := tls.Server(c, s.tls)
			if err := tc.Handshake(); err != nil {
				return
			}
			c, isTLS, cur, authed = tc, true, nil, ""
			tp = textproto.NewConn(tc)
		case "AUTH":
			mech, resp, _ := strings.Cut(arg, " ")
			if s.user == "" || !strings.EqualFold(mech, "PLAIN") {
				reply("504 5.5.4 mechanism not supported")
				continue
			}
			if resp == "" {
				reply("334 ")
				if resp, err = tp.ReadLine(); err != nil {
					return
				}
			}
			raw, _ := base64.StdEncoding.DecodeString(resp)
			parts := strings.Split(string(raw), "\x00")
			if len(parts) == 3 && parts[1] == s.user && parts[2] == s.pass {
				authed = parts[1]
				reply("235 2.7.0 authenticated")
			} else {
				reply("535 5.7.8 bad credentials")
			}
		case "MAIL":
			switch {
			case s.user != "" && authed == "":
				reply("530 5.7.0 authentication required")
			case s.failing("MAIL") != "":
				reply(s.failing("MAIL"))
			default:
				cur = &sinkMsg{From: addrArg(arg, "FROM:"), TLS: isTLS, AuthUser: authed}
				reply("250 2.1.0 ok")
			}
		case "RCPT":
			switch {
			case cur == nil:
				reply("503 5.5.1 MAIL first")
			case s.failing("RCPT") != "":
				reply(s.failing("RCPT"))
			default:
				cur.To = append(cur.To, addrArg(arg, "TO:"))
				reply("250 2.1.5 ok")
			}
		case "DATA":
			if cur == nil || len(cur.To) == 0 {
				reply("503 5.5.1 RCPT first")
				continue
			}
			reply("354 end with <CRLF>.<CRLF>")
			data, err := readDot(tp.R)
			if err != nil {
				return
			}
			if l := s.failing("DATA"); l != "" {
				reply(l)
				cur = nil
				continue
			}
			cur.Data = data
			s.mu.Lock()
			s.msgs = append(s.msgs, *cur)
			s.mu.Unlock()
			cur = nil
			reply("250 2.0.0 queued")
			s.got <- struct{}{}
		case "RSET":
			cur = nil
			reply("250 2.0.0 ok")
		case "NOOP":
			reply("250 2.0.0 ok")
		case "QUIT":
			reply("221 2.0.0 bye")
			return
		default:
			reply("502 5.5.2 command not recognised")
		}
	}
}

// readDot reads DATA lines up to the lone ".", undoing dot-stuffing and
// keeping CRLF line ends (a bare LF would show as missing CR).
func readDot(r *bufio.Reader) (string, error) {
	var b strings.Builder
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			return "", err
		}
		if line == ".\r\n" {
			return b.String(), nil
		}
		b.WriteString(strings.TrimPrefix(line, "."))
	}
}

// addrArg takes the address out of "FROM:<a@b>" or "TO:<a@b>".
func addrArg(arg, prefix string) string {
	if len(arg) >= len(prefix) && strings.EqualFold(arg[:len(prefix)], prefix) {
		arg = arg[len(prefix):]
	}
	arg, _, _ = strings.Cut(strings.TrimSpace(arg), " ")
	return strings.Trim(arg, "<>")
}

// selfSigned makes a certificate for 127.0.0.1 and localhost.
func selfSigned(t *testing.T) *tls.Config {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1),
		Subject:      pkix.Name{CommonName: "sink"},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		DNSNames:     []string{"localhost"},
		IPAddresses:  []net.IP{net.ParseIP("127.0.0.1")},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	return &tls.Config{Certificates: []tls.Certificate{{Certificate: [][]byte{der}, PrivateKey: key}}, MinVersion: tls.VersionTLS12}
}
