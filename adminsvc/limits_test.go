package adminsvc

import (
	"strings"
	"testing"
	"time"
)

func TestParseLimits(t *testing.T) {
	cases := []struct {
		name, rate, usage string
		wantProblems      []string // params that must be reported
	}{
		{"valid", `[{"type":"requests","unit":"rpm","value":10}]`, `{"type":"tokens","credit_limit":100,"alert_threshold":80,"periodic_reset":"monthly"}`, nil},
		{"null", `null`, `null`, nil},
		{"bad rate", `[{"type":"bytes","unit":"rpy","value":-1,"extra":1}]`, ``, []string{"rl[0].type", "rl[0].unit", "rl[0].value", "rl[0].extra"}},
		{"rate not array", `{}`, ``, []string{"rl"}},
		{"missing rate fields", `[{}]`, ``, []string{"rl[0].type", "rl[0].unit", "rl[0].value"}},
		{"threshold above limit", ``, `{"credit_limit":10,"alert_threshold":10}`, []string{"ul.alert_threshold"}},
		{"both resets", ``, `{"credit_limit":10,"periodic_reset":"weekly","periodic_reset_days":7}`, []string{"ul.periodic_reset_days"}},
		{"reset days bounds", ``, `{"credit_limit":10,"periodic_reset_days":366}`, []string{"ul.periodic_reset_days"}},
		{"missing credit", ``, `{"type":"cost"}`, []string{"ul.credit_limit"}},
		{"null credit", ``, `{"credit_limit":null}`, []string{"ul.credit_limit"}},
		{"bad type and reset", ``, `{"type":"euros","credit_limit":1,"periodic_reset":"daily"}`, []string{"ul.type", "ul.periodic_reset"}},
		{"next reset in the future", ``, `{"credit_limit":1,"periodic_reset":"weekly","next_usage_reset_at":"2026-01-02T00:00:00Z"}`, nil},
		{"next reset null", ``, `{"credit_limit":1,"next_usage_reset_at":null}`, nil},
		{"next reset in the past", ``, `{"credit_limit":1,"periodic_reset":"weekly","next_usage_reset_at":"2025-12-31T23:59:59Z"}`, []string{"ul.next_usage_reset_at"}},
		{"next reset now", ``, `{"credit_limit":1,"next_usage_reset_at":"2026-01-01T00:00:00Z"}`, []string{"ul.next_usage_reset_at"}},
		{"next reset not a date", ``, `{"credit_limit":1,"next_usage_reset_at":"tomorrow"}`, []string{"ul.next_usage_reset_at"}},
		{"what a read shows, sent back", ``, `{"credit_limit":1,"current_usage":0.5,"status":"exhausted"}`, nil},
	}
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var p problems
			parseRateLimits([]byte(tc.rate), "rl", &p)
			parseUsageLimits([]byte(tc.usage), "ul", now, &p)
			var got []string
			for _, pr := range p {
				got = append(got, pr.param)
			}
			if len(got) != len(tc.wantProblems) {
				t.Fatalf("problems %v, want %v", got, tc.wantProblems)
			}
			for _, w := range tc.wantProblems {
				if !strings.Contains(strings.Join(got, ","), w) {
					t.Errorf("missing problem %s in %v", w, got)
				}
			}
		})
	}
}

func TestPolicyPageSlice(t *testing.T) {
	const big = int(^uint(0) >> 1)
	for _, tc := range []struct {
		pg                policyPage
		n, wantLo, wantHi int
	}{
		{policyPage{0, 0}, 5, 0, 5},
		{policyPage{1, 0}, 5, 5, 5},
		{policyPage{0, 2}, 5, 0, 2},
		{policyPage{2, 2}, 5, 4, 5},
		{policyPage{3, 2}, 5, 5, 5},
		{policyPage{1, 5}, 5, 5, 5},
		{policyPage{big, big}, 5, 5, 5},
		{policyPage{0, big}, 5, 0, 5},
		{policyPage{0, 3}, 0, 0, 0},
	} {
		if lo, hi := tc.pg.slice(tc.n); lo != tc.wantLo || hi != tc.wantHi {
			t.Errorf("%+v.slice(%d) = %d, %d; want %d, %d", tc.pg, tc.n, lo, hi, tc.wantLo, tc.wantHi)
		}
	}
}
