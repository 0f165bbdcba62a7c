package main

import (
	"sort"
	"strings"
)

// The kinds of personal data found, and what a match is replaced by.
const (
	kindEmail = "email"
	kindPhone = "phone"
	kindCard  = "card"
)

var placeholders = map[string]string{
	kindEmail: "[EMAIL]",
	kindPhone: "[PHONE]",
	kindCard:  "[CARD]",
}

// match is one piece of personal data in a text: s[start:end].
type match struct {
	start, end int
	kind       string
}

// findPII returns the matches of the wanted kinds in s, in order and not
// overlapping. It scans by hand (no regexp): this is both smaller in the
// module and faster under the host's context checks.
//
//   - email: local@domain.tld, the local part of letters, digits and
//     ._%+-, the domain of labels of letters, digits and -, with a dot and a
//     top-level label of two letters or more;
//   - card: 13 to 19 digits, alone or in groups separated by single spaces
//     or hyphens, passing the Luhn check;
//   - phone: an optional +, then 9 to 15 digits in groups separated by
//     spaces, hyphens or parentheses, e.g. +44 20 7946 0958, (555) 123-4567,
//     555-123-4567 (a number that is a card is not also a phone).
func findPII(s string, want map[string]bool) []match {
	var out []match
	for i := 0; i < len(s); {
		c := s[i]
		if c == '@' && want[kindEmail] {
			if m, ok := emailAt(s, i); ok {
				// The local part may have been scanned as a number run
				// already ("12345@x.io"): drop what it overlaps.
				for len(out) > 0 && out[len(out)-1].end > m.start {
					out = out[:len(out)-1]
				}
				out = append(out, m)
				i = m.end
				continue
			}
		}
		if (isDigit(c) || c == '+' || c == '(') && (i == 0 || !isWordByte(s[i-1])) {
			m, next, ok := numberAt(s, i, want)
			if ok {
				out = append(out, m)
			}
			// On no match, skip the whole run, so its tail is not taken
			// for a number of its own.
			i = next
			continue
		}
		i++
	}
	return out
}

func emailAt(s string, at int) (match, bool) {
	start := at
	for start > 0 && isLocalByte(s[start-1]) {
		start--
	}
	// A local part does not start or end with a dot.
	for start < at && s[start] == '.' {
		start++
	}
	if start == at || s[at-1] == '.' {
		return match{}, false
	}
	end := at + 1
	for end < len(s) && isDomainByte(s[end]) {
		end++
	}
	// Trailing dots and hyphens end the sentence, not the domain.
	for end > at+1 && (s[end-1] == '.' || s[end-1] == '-') {
		end--
	}
	domain := s[at+1 : end]
	dot := strings.LastIndexByte(domain, '.')
	if dot <= 0 || strings.Contains(domain, "..") {
		return match{}, false
	}
	tld := domain[dot+1:]
	if len(tld) < 2 {
		return match{}, false
	}
	for i := 0; i < len(tld); i++ {
		if !isLetter(tld[i]) {
			return match{}, false
		}
	}
	return match{start, end, kindEmail}, true
}

// numberAt reads a run of digit groups at i (with a leading + or
// opening parenthesis) and classifies it. next is where scanning goes on
// when the run is no match.
func numberAt(s string, i int, want map[string]bool) (m match, next int, ok bool) {
	j := i
	plus, parens := false, 0
	if s[j] == '+' {
		plus = true
		j++
	}
	if j < len(s) && s[j] == '(' {
		parens++
		j++
	}
	var digits []byte
	seps, end := 0, -1
	for j < len(s) {
		if isDigit(s[j]) {
			digits = append(digits, s[j])
			j++
			end = j
			continue
		}
		// A separator of one or two bytes between two groups of digits:
		// "-", " ", ") ", " (".
		k, p := j, 0
		for k < len(s) && k-j < 2 && isSep(s[k]) {
			if s[k] == '(' || s[k] == ')' {
				p++
			}
			k++
		}
		if k == j || k >= len(s) || !isDigit(s[k]) {
			break
		}
		seps++
		parens += p
		j = k
	}
	if end < 0 {
		return match{}, i + 1, false
	}
	if end < len(s) && isWordByte(s[end]) {
		// Part of a word or code ("A1234", "12345abc").
		for end < len(s) && isWordByte(s[end]) {
			end++
		}
		return match{}, end, false
	}
	n := len(digits)
	if want[kindCard] && !plus && parens == 0 && n >= 13 && n <= 19 && luhn(digits) {
		return match{i, end, kindCard}, end, true
	}
	if want[kindPhone] && n >= 9 && n <= 15 && (plus || parens > 0 || seps > 0 || n == 10 || n == 11) {
		return match{i, end, kindPhone}, end, true
	}
	return match{}, end, false
}

func isSep(c byte) bool { return c == ' ' || c == '-' || c == '(' || c == ')' }

// luhn reports whether a string of digits passes the Luhn checksum.
func luhn(d []byte) bool {
	sum := 0
	double := false
	for i := len(d) - 1; i >= 0; i-- {
		v := int(d[i] - '0')
		if double {
			v *= 2
			if v > 9 {
				v -= 9
			}
		}
		sum += v
		double = !double
	}
	return sum%10 == 0
}

// redact replaces each match in s by its placeholder.
func redact(s string, ms []match) string {
	var b strings.Builder
	prev := 0
	for _, m := range ms {
		b.WriteString(s[prev:m.start])
		b.WriteString(placeholders[m.kind])
		prev = m.end
	}
	b.WriteString(s[prev:])
	return b.String()
}

// kindsOf lists the distinct kinds of matches, sorted.
func kindsOf(ms []match, into map[string]int) {
	for _, m := range ms {
		into[m.kind]++
	}
}

func sortedKeys(m map[string]int) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func isDigit(c byte) bool  { return c >= '0' && c <= '9' }
func isLetter(c byte) bool { return c|0x20 >= 'a' && c|0x20 <= 'z' }
func isWordByte(c byte) bool {
	return isDigit(c) || isLetter(c) || c == '_'
}
func isLocalByte(c byte) bool {
	return isWordByte(c) || strings.IndexByte(".%+-", c) >= 0
}
func isDomainByte(c byte) bool {
	return isDigit(c) || isLetter(c) || c == '.' || c == '-'
}
