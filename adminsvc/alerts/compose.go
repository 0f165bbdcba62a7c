package alerts

import (
	"bytes"
	"fmt"
	"mime"
	"mime/quotedprintable"
	"net/mail"
	"strings"
	"time"
)

// compose renders m as an RFC 5322 message with a quoted-printable UTF-8
// text body. Line ends are CRLF; dot-stuffing is left to net/smtp's DATA
// writer. Addresses and subject were checked for control characters by
// Enqueue, and names and subject are RFC 2047-encoded when not ASCII.
func compose(from *mail.Address, to []*mail.Address, m Message, now time.Time) ([]byte, error) {
	var b bytes.Buffer
	header := func(name, value string) { fmt.Fprintf(&b, "%s: %s\r\n", name, value) }
	header("From", from.String())
	list := make([]string, len(to))
	for i, a := range to {
		list[i] = a.String()
	}
	header("To", strings.Join(list, ",\r\n "))
	// Encoded words go one per folded line, keeping lines short.
	header("Subject", strings.ReplaceAll(mime.QEncoding.Encode("utf-8", m.Subject), "?= =?", "?=\r\n =?"))
	header("Date", now.Format(time.RFC1123Z))
	header("Message-ID", "<"+m.ID+"@"+domainOf(from.Address)+">")
	header("MIME-Version", "1.0")
	header("Content-Type", "text/plain; charset=utf-8")
	header("Content-Transfer-Encoding", "quoted-printable")
	header("X-Gateway-Alert-Kind", m.Kind)
	b.WriteString("\r\n")
	w := quotedprintable.NewWriter(&b)
	if _, err := w.Write([]byte(m.Body)); err != nil {
		return nil, err
	}
	if err := w.Close(); err != nil {
		return nil, err
	}
	b.WriteString("\r\n")
	return b.Bytes(), nil
}

// domainOf is the part of an address after its last "@".
func domainOf(addr string) string {
	if i := strings.LastIndexByte(addr, '@'); i >= 0 {
		return addr[i+1:]
	}
	return "localhost"
}
