package defaults

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/llm-gateway/gateway/hooks"
)

// urlRE starts with a literal so the engine can skip to candidates fast.
var urlRE = regexp.MustCompile("https?://[^\\s<>\"'{}\\[\\]|\\\\^`]+")

// maxURLs bounds how many URLs of one text are checked.
const maxURLs = 100

// dnsTimeout bounds the DNS lookups of one validUrls run.
const dnsTimeout = 3 * time.Second

// lookupHost resolves a host name; tests replace it.
var lookupHost = func(ctx context.Context, host string) ([]string, error) {
	return net.DefaultResolver.LookupHost(ctx, host)
}

// findURLs returns the http(s) URLs in a text, without trailing
// punctuation, in order, each once.
func findURLs(text string) (urls []string, truncated bool) {
	seen := map[string]bool{}
	for _, u := range urlRE.FindAllString(text, -1) {
		for {
			t := strings.TrimRight(u, ".,;:!?*_~")
			if strings.HasSuffix(t, ")") && strings.Count(t, "(") < strings.Count(t, ")") {
				t = t[:len(t)-1]
			}
			if t == u {
				break
			}
			u = t
		}
		if seen[u] {
			continue
		}
		if len(urls) == maxURLs {
			return urls, true
		}
		seen[u] = true
		urls = append(urls, u)
	}
	return urls, false
}

// urlSyntax reports why a URL is malformed, or "" when it is well formed:
// http or https, a host that is an IP address or a DNS name with valid
// labels, and a port in 1-65535 if any.
func urlSyntax(raw string) (host string, problem string) {
	u, err := url.Parse(raw)
	if err != nil {
		return "", "not a valid URL"
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return "", "scheme must be http or https"
	}
	host = u.Hostname()
	if host == "" {
		return "", "no host"
	}
	if p := u.Port(); p != "" {
		if n, err := strconv.Atoi(p); err != nil || n < 1 || n > 65535 {
			return "", "invalid port"
		}
	}
	if _, err := netip.ParseAddr(host); err == nil {
		return host, ""
	}
	if !validDNSName(host) {
		return "", "invalid host name"
	}
	return host, ""
}

// validDNSName accepts names of letters, digits and hyphens (IDN as
// Unicode letters), labels of 1-63 characters not starting or ending with
// a hyphen, and a last label that is not all digits.
func validDNSName(h string) bool {
	h = strings.TrimSuffix(h, ".")
	if h == "" || len(h) > 253 {
		return false
	}
	labels := strings.Split(h, ".")
	for _, l := range labels {
		if l == "" || len(l) > 63 || l[0] == '-' || l[len(l)-1] == '-' {
			return false
		}
		for _, r := range l {
			if !(r == '-' || r == '_' || '0' <= r && r <= '9' || 'a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || r > 127) {
				return false
			}
		}
	}
	return strings.Trim(labels[len(labels)-1], "0123456789") != ""
}

type urlsCfg struct {
	onlyDNS bool
	not     bool
}

var validUrls = &check[urlsCfg]{
	waits: true, // resolves the hosts
	parse: func(p *params) urlsCfg {
		return urlsCfg{onlyDNS: p.boolean("onlyDNS", false), not: p.not()}
	},
	run: func(ctx context.Context, in *hooks.CheckInput, c urlsCfg) (hooks.CheckResult, error) {
		text, err := subjectText(in)
		if err != nil {
			return hooks.CheckResult{}, err
		}
		method := "syntax"
		if c.onlyDNS {
			method = "syntax and DNS"
		}
		urls, truncated := findURLs(text)
		if len(urls) == 0 {
			// As in the reference: a text without URLs does not pass,
			// whatever not says.
			return hooks.CheckResult{Verdict: false, Data: map[string]any{
				"urls": []string{}, "validationMethod": method, "not": c.not,
				"explanation": "No URLs found in the text.",
			}}, nil
		}
		invalid := map[string]string{}
		hosts := map[string][]string{} // host -> URLs
		for _, u := range urls {
			host, prob := urlSyntax(u)
			if prob != "" {
				invalid[u] = prob
				continue
			}
			if _, err := netip.ParseAddr(host); err != nil && c.onlyDNS {
				hosts[host] = append(hosts[host], u)
			}
		}
		if len(hosts) > 0 {
			dctx, cancel := context.WithTimeout(ctx, dnsTimeout)
			var mu sync.Mutex
			var wg sync.WaitGroup
			sem := make(chan struct{}, 8)
			for host, us := range hosts {
				wg.Add(1)
				go func() {
					defer wg.Done()
					sem <- struct{}{}
					defer func() { <-sem }()
					addrs, err := lookupHost(dctx, host)
					if err == nil && len(addrs) > 0 {
						return
					}
					mu.Lock()
					for _, u := range us {
						invalid[u] = "host does not resolve"
					}
					mu.Unlock()
				}()
			}
			wg.Wait()
			cancel()
		}
		valid, bad := []string{}, []map[string]string{}
		for _, u := range urls {
			if why, ok := invalid[u]; ok {
				bad = append(bad, map[string]string{"url": u, "reason": why})
			} else {
				valid = append(valid, u)
			}
		}
		allValid := len(bad) == 0
		expl := fmt.Sprintf("All %d URL(s) are valid (%s).", len(urls), method)
		if !allValid {
			expl = fmt.Sprintf("%d of %d URL(s) are invalid (%s).", len(bad), len(urls), method)
		}
		data := map[string]any{"validUrls": valid, "invalidUrls": bad, "validationMethod": method, "not": c.not, "explanation": expl}
		if truncated {
			data["truncated"] = true
		}
		return hooks.CheckResult{Verdict: invert(allValid, c.not), Data: data}, nil
	},
}
