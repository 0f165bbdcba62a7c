package alerts

import (
	"errors"
	"fmt"
	"net"
	"strconv"
)

// Config is how the sender reaches the SMTP server. An empty Addr means
// SMTP is not configured: alerts stay in the outbox.
type Config struct {
	// Addr is the server's host:port, e.g. "smtp.example.com:587".
	Addr string
	// From is the sender address, e.g. "Gateway <alerts@example.com>".
	From string
	// Username and Password, when set, log in with AUTH PLAIN, which is only
	// done over TLS (STARTTLS) or to localhost.
	Username string
	Password string
	// InsecureSkipVerify accepts any server certificate (test sinks only).
	InsecureSkipVerify bool
}

// The environment variables read by ConfigFromEnv.
const (
	EnvAddr               = "GATEWAY_SMTP_ADDR"
	EnvFrom               = "GATEWAY_SMTP_FROM"
	EnvUsername           = "GATEWAY_SMTP_USERNAME"
	EnvPassword           = "GATEWAY_SMTP_PASSWORD"
	EnvInsecureSkipVerify = "GATEWAY_SMTP_INSECURE_SKIP_VERIFY"
)

// ConfigFromEnv reads the GATEWAY_SMTP_* variables and validates them,
// naming every variable that is wrong.
func ConfigFromEnv(getenv func(string) string) (Config, error) {
	c := Config{
		Addr:     getenv(EnvAddr),
		From:     getenv(EnvFrom),
		Username: getenv(EnvUsername),
		Password: getenv(EnvPassword),
	}
	var errs []error
	if v := getenv(EnvInsecureSkipVerify); v != "" {
		b, err := strconv.ParseBool(v)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %q is not 1, 0, true or false", EnvInsecureSkipVerify, v))
		}
		c.InsecureSkipVerify = b
	}
	if err := c.Validate(); err != nil {
		errs = append(errs, err)
	}
	return c, errors.Join(errs...)
}

// Enabled reports whether an SMTP server is configured.
func (c Config) Enabled() bool { return c.Addr != "" }

// Validate checks a configuration with an SMTP server; a disabled one is
// always valid.
func (c Config) Validate() error {
	if !c.Enabled() {
		return nil
	}
	var errs []error
	host, port, err := net.SplitHostPort(c.Addr)
	if err != nil || host == "" {
		errs = append(errs, fmt.Errorf("%s: %q is not host:port (e.g. smtp.example.com:587)", EnvAddr, c.Addr))
	} else if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
		errs = append(errs, fmt.Errorf("%s: port %q is not a number from 1 to 65535", EnvAddr, port))
	}
	if c.From == "" {
		errs = append(errs, fmt.Errorf("%s is required when %s is set", EnvFrom, EnvAddr))
	} else if _, err := parseAddress(c.From); err != nil {
		errs = append(errs, fmt.Errorf("%s: %w", EnvFrom, err))
	}
	if (c.Username == "") != (c.Password == "") {
		errs = append(errs, fmt.Errorf("%s and %s must be set together", EnvUsername, EnvPassword))
	}
	if hasControl(c.Username) || hasControl(c.Password) {
		errs = append(errs, fmt.Errorf("%s or %s holds a control character", EnvUsername, EnvPassword))
	}
	return errors.Join(errs...)
}

// host is the server name, for TLS verification and AUTH.
func (c Config) host() string {
	h, _, _ := net.SplitHostPort(c.Addr)
	return h
}
