package alerts

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"net/mail"
	"net/smtp"
	"time"
)

// deliver sends m in one SMTP session and returns nil only once the server
// has accepted the message data (its reply to the final "."). A session
// once begun is not cut short when ctx ends, only by the sender's timeout,
// so a shutdown does not lose the server's acceptance and send it twice.
func (s *Sender) deliver(ctx context.Context, m Message, now time.Time) (err error) {
	from, err := parseAddress(s.cfg.From)
	if err != nil {
		return fmt.Errorf("%s: %w", EnvFrom, err)
	}
	to := make([]*mail.Address, len(m.To))
	for i, addr := range m.To {
		if to[i], err = parseAddress(addr); err != nil {
			return err
		}
	}
	data, err := compose(from, to, m, now)
	if err != nil {
		return err
	}

	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.timeout)
	defer cancel()
	conn, err := (&net.Dialer{}).DialContext(ctx, "tcp", s.cfg.Addr)
	if err != nil {
		return err
	}
	// The deadline and ctx bound the whole session, STARTTLS included.
	if d, ok := ctx.Deadline(); ok {
		_ = conn.SetDeadline(d)
	}
	stopAbort := context.AfterFunc(ctx, func() { _ = conn.Close() })
	defer stopAbort()
	host := s.cfg.host()
	c, err := smtp.NewClient(conn, host)
	if err != nil {
		_ = conn.Close()
		return err
	}
	defer c.Close()

	if err := c.Hello(s.helo); err != nil {
		return fmt.Errorf("EHLO: %w", err)
	}
	if ok, _ := c.Extension("STARTTLS"); ok {
		tc := &tls.Config{ServerName: host, MinVersion: tls.VersionTLS12, InsecureSkipVerify: s.cfg.InsecureSkipVerify} // #nosec G402 -- opt-in for test sinks
		if err := c.StartTLS(tc); err != nil {
			return fmt.Errorf("STARTTLS: %w", err)
		}
	}
	if s.cfg.Username != "" {
		// PlainAuth refuses to send the password unless the connection is
		// TLS or the server is localhost.
		if err := c.Auth(smtp.PlainAuth("", s.cfg.Username, s.cfg.Password, host)); err != nil {
			return fmt.Errorf("AUTH: %w", err)
		}
	}
	if err := c.Mail(from.Address); err != nil {
		return fmt.Errorf("MAIL FROM: %w", err)
	}
	for _, a := range to {
		if err := c.Rcpt(a.Address); err != nil {
			return fmt.Errorf("RCPT TO <%s>: %w", a.Address, err)
		}
	}
	w, err := c.Data()
	if err != nil {
		return fmt.Errorf("DATA: %w", err)
	}
	if _, err := w.Write(data); err != nil {
		_ = w.Close()
		return fmt.Errorf("DATA: %w", err)
	}
	if err := w.Close(); err != nil {
		return fmt.Errorf("DATA: %w", err)
	}
	// Accepted: a failing QUIT changes nothing.
	_ = c.Quit()
	return nil
}
