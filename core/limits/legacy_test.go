package limits

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/llm-gateway/gateway/store"
)

// An engine that starts on what earlier releases counted for a workspace's
// usage limits, by their place in its list ("workspace:<id>#usage<i>"),
// moves it to the limits' own ids: usage, state and reset schedule; what
// was counted for a limit no longer listed, or a workspace that is gone, is
// dropped. A second start moves nothing twice.
func TestLegacyWorkspaceUsageMoved(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	ws := store.Workspace{ID: "ws-1", Slug: "team", Status: store.StatusActive, UsageLimits: []store.UsageLimits{
		{Type: "tokens", CreditLimit: 100, PeriodicReset: "weekly"}, {Type: "cost", CreditLimit: 5}}}
	ids := WorkspaceUsageIDs(ws.ID, ws.UsageLimits)
	legacy := []struct {
		rule  string
		state valueState
		used  float64
	}{
		{"workspace:ws-1#usage0", valueState{Status: StatusActive, ThresholdSent: true}, 40},
		{"workspace:ws-1#usage1", valueState{Status: StatusExhausted, ExhaustedSent: true}, 6},
		{"workspace:ws-1#usage2", valueState{Status: StatusActive}, 7}, // a limit since removed
		{"workspace:ws-9#usage0", valueState{Status: StatusActive}, 8}, // no such workspace
	}
	next := t0.Add(48 * time.Hour)
	err := e.st.Update(func(tx store.Tx) error {
		if err := tx.Put(store.BucketWorkspaces, ws.ID, ws); err != nil {
			return err
		}
		for _, l := range legacy {
			st := l.state
			st.Rule = l.rule
			if err := tx.Put(store.BucketUsageStates, stateKey(l.rule, ""), st); err != nil {
				return err
			}
			if _, err := e.ctr.AddUsage(ctx, usageKey(l.rule, ""), l.used); err != nil {
				return err
			}
		}
		return tx.Put(store.BucketUsageStates, schedKey("workspace:ws-1#usage0"), schedRecord{FP: "weekly/0", Next: next})
	})
	if err != nil {
		t.Fatal(err)
	}
	for start := range 2 {
		eng, err := New(Options{Store: e.st, Counter: e.ctr, Now: e.clk.Now, Logger: quietLogger()})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(eng.Close)
		e.eng = eng
		all, err := eng.UsageStatesOf(ctx, ids...)
		if err != nil {
			t.Fatal(err)
		}
		for _, want := range []struct {
			rule string
			st   UsageState
		}{
			{ids[0], UsageState{CurrentUsage: 40, Status: StatusActive, ThresholdAlertSent: true}},
			{ids[1], UsageState{CurrentUsage: 6, Status: StatusExhausted, ExhaustedAlertSent: true}},
		} {
			if got := all[want.rule]; len(got) != 1 || got[0] != want.st {
				t.Errorf("start %d: %s: %+v, want %+v", start, want.rule, got, want.st)
			}
		}
		if got, ok := eng.NextReset(ids[0]); !ok || !got.Equal(next) {
			t.Errorf("start %d: the tokens limit next resets at %v, want %v (its saved schedule)", start, got, next)
		}
		for _, l := range legacy {
			if used, _ := e.ctr.Usage(ctx, usageKey(l.rule, "")); used[0] != 0 {
				t.Errorf("start %d: %s still counts %v", start, l.rule, used[0])
			}
		}
		err = e.st.View(func(tx store.Tx) error {
			return tx.ForEach(store.BucketUsageStates, func(key string, _ []byte) error {
				if strings.Contains(key, "#usage0") || strings.Contains(key, "#usage1") || strings.Contains(key, "#usage2") {
					t.Errorf("start %d: %s kept", start, key)
				}
				return nil
			})
		})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := eng.Admit(ctx, request()); err == nil || err.Status != http.StatusPreconditionFailed || !strings.Contains(err.Message, "allows $5 and 6 is used") {
			t.Errorf("start %d: %v, want the cost limit's 412", start, err)
		}
	}
}
