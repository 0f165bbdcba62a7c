package adminsvc_test

import (
	"context"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/llm-gateway/gateway/adminsvc"
	"github.com/llm-gateway/gateway/adminsvc/alerts"
	"github.com/llm-gateway/gateway/core"
	"github.com/llm-gateway/gateway/store"
)

// run advances the fake clock to at and runs the worker once.
func (e *env) runWorker(w *adminsvc.KeyWorker, at time.Time) int {
	e.t.Helper()
	e.clock.Advance(at.Sub(e.clock.Now()))
	n, err := w.RunOnce(e.clock.Now())
	if err != nil {
		e.t.Fatal(err)
	}
	return n
}

// newAlerts returns the outbox messages after the first seen ones.
func newAlerts(t *testing.T, st store.Store, seen *int) []alerts.Message {
	all := outbox(t, st)
	out := all[*seen:]
	*seen = len(all)
	return out
}

func kinds(ms []alerts.Message) string {
	var k []string
	for _, m := range ms {
		k = append(k, m.Kind)
	}
	return strings.Join(k, ",")
}

func TestKeyWorkerExpiry(t *testing.T) {
	e := newEnv(t)
	w := adminsvc.NewKeyWorker(e.st, e.keys, e.clock.Now, nil)
	expires := t0.Add(10 * 24 * time.Hour)
	id, secret := e.createKey(adminKey, "workspace/service", map[string]any{"name": "k", "workspace_id": "default",
		"scopes": []string{core.ScopeWsServiceKeysList}, "alert_emails": []string{"ops@example.com"}, "expires_at": expires.Format(time.RFC3339)})
	seen := 0
	steps := []struct {
		name       string
		at         time.Time
		wantAlerts string
		wantStatus string
	}{
		{"nothing due", t0, "", "active"},
		{"just before the warning", expires.Add(-7*24*time.Hour - time.Second), "", "active"},
		{"warning", expires.Add(-7 * 24 * time.Hour), adminsvc.AlertKeyExpiring, "active"},
		{"warning only once", expires.Add(-time.Hour), "", "active"},
		{"expired", expires, adminsvc.AlertKeyExpired, "expired"},
		{"expired only once", expires.Add(time.Hour), "", "expired"},
	}
	for _, st := range steps {
		t.Run(st.name, func(t *testing.T) {
			e.runWorker(w, st.at)
			got := newAlerts(t, e.st, &seen)
			if kinds(got) != st.wantAlerts {
				t.Fatalf("alerts %q, want %q", kinds(got), st.wantAlerts)
			}
			for _, m := range got {
				if len(m.To) != 1 || m.To[0] != "ops@example.com" || m.Subject == "" || !strings.Contains(m.Body, id) {
					t.Fatalf("alert: %+v", m)
				}
			}
			if k := e.storedKey(id); k.Status != st.wantStatus {
				t.Fatalf("status %q, want %q", k.Status, st.wantStatus)
			}
		})
	}
	wantErr(t, e.do(http.MethodGet, "/v1/api-keys", secret, nil), 401, core.CodeUnauthorized)
	// A later expires_at revives the key, and warns again in time.
	later := e.clock.Now().Add(30 * 24 * time.Hour)
	if r := e.do(http.MethodPut, "/v1/api-keys/"+id, adminKey, map[string]any{"expires_at": later.Format(time.RFC3339)}); r.status != 200 {
		t.Fatalf("put: %d %s", r.status, r.raw)
	}
	if r := e.do(http.MethodGet, "/v1/api-keys", secret, nil); r.status != 200 {
		t.Fatalf("revived key: %d %s", r.status, r.raw)
	}
	e.runWorker(w, later.Add(-24*time.Hour))
	if got := newAlerts(t, e.st, &seen); kinds(got) != adminsvc.AlertKeyExpiring {
		t.Fatalf("second warning: %q", kinds(got))
	}
}

var secretInBody = regexp.MustCompile(`New secret: (gw-\S+)`)

func TestKeyWorkerScheduledRotation(t *testing.T) {
	e := newEnv(t)
	w := adminsvc.NewKeyWorker(e.st, e.keys, e.clock.Now, nil)
	at := t0.Add(48 * time.Hour)
	id, oldSecret := e.createKey(adminKey, "workspace/service", map[string]any{"name": "k", "workspace_id": "default",
		"scopes": []string{core.ScopeWsServiceKeysList}, "alert_emails": []string{"ops@example.com", "dev@example.com"},
		"rotation_policy": map[string]any{"next_rotation_at": at.Format(time.RFC3339), "key_transition_period_ms": 3600000}})
	works := func(secret string) int { return e.do(http.MethodGet, "/v1/api-keys", secret, nil).status }
	seen := 0
	if n := e.runWorker(w, t0); n != 0 || len(newAlerts(t, e.st, &seen)) != 0 {
		t.Fatalf("nothing was due, %d keys changed", n)
	}
	e.runWorker(w, at.Add(-24*time.Hour))
	if got := newAlerts(t, e.st, &seen); kinds(got) != adminsvc.AlertKeyRotationUpcoming || len(got[0].To) != 2 {
		t.Fatalf("upcoming: %+v", got)
	}
	e.runWorker(w, at.Add(-time.Minute))
	if got := newAlerts(t, e.st, &seen); len(got) != 0 {
		t.Fatalf("warned twice: %q", kinds(got))
	}
	e.runWorker(w, at)
	got := newAlerts(t, e.st, &seen)
	if kinds(got) != adminsvc.AlertKeyRotated {
		t.Fatalf("rotated: %q", kinds(got))
	}
	m := secretInBody.FindStringSubmatch(got[0].Body)
	if m == nil {
		t.Fatalf("no secret in the rotation e-mail: %s", got[0].Body)
	}
	newSecret := m[1]
	if works(oldSecret) != 200 || works(newSecret) != 200 {
		t.Fatalf("during the transition both secrets must work")
	}
	k := e.storedKey(id)
	if k.RotationPolicy == nil || k.RotationPolicy.NextRotationAt != nil || k.LastRotatedAt == nil || !k.LastRotatedAt.Equal(at) {
		t.Fatalf("after rotation: %+v %+v", k.RotationPolicy, k.KeyLifecycle)
	}
	// The transition ends: the worker drops the old hash.
	e.runWorker(w, at.Add(time.Hour))
	if k := e.storedKey(id); k.PrevHash != "" || k.TransitionExpiresAt != nil {
		t.Fatalf("old hash kept: %+v", k.KeyLifecycle)
	}
	if works(oldSecret) != 401 || works(newSecret) != 200 {
		t.Fatalf("after the transition only the new secret works")
	}
	// One-off date used up: nothing more happens.
	if n := e.runWorker(w, at.Add(60*24*time.Hour)); n != 0 {
		t.Fatalf("%d keys changed after the one-off rotation", n)
	}
}

func TestKeyWorkerPeriodicRotation(t *testing.T) {
	e := newEnv(t)
	w := adminsvc.NewKeyWorker(e.st, e.keys, e.clock.Now, nil)
	id, _ := e.createKey(adminKey, "organisation/service", map[string]any{"name": "k", "scopes": []string{core.ScopeLogsList},
		"alert_emails": []string{"ops@example.com"}, "rotation_policy": map[string]any{"rotation_period": "weekly"}})
	week := 7 * 24 * time.Hour
	seen := 0
	steps := []struct {
		at   time.Time
		want string
	}{
		{t0.Add(week - 25*time.Hour), ""},
		{t0.Add(week - 24*time.Hour), adminsvc.AlertKeyRotationUpcoming},
		{t0.Add(week), adminsvc.AlertKeyRotated},
		{t0.Add(week + 30*time.Minute), ""}, // transition ends (30 min default)
		{t0.Add(2*week - 24*time.Hour), adminsvc.AlertKeyRotationUpcoming},
		{t0.Add(2 * week), adminsvc.AlertKeyRotated},
	}
	for i, st := range steps {
		e.runWorker(w, st.at)
		if got := kinds(newAlerts(t, e.st, &seen)); got != st.want {
			t.Fatalf("step %d: alerts %q, want %q", i, got, st.want)
		}
	}
	if k := e.storedKey(id); !k.LastRotatedAt.Equal(t0.Add(2 * week)) {
		t.Fatalf("last rotated %v", k.LastRotatedAt)
	}
}

// A rotation that falls due during a manual transition waits for it.
func TestKeyWorkerWaitsForTransition(t *testing.T) {
	e := newEnv(t)
	w := adminsvc.NewKeyWorker(e.st, e.keys, e.clock.Now, nil)
	at := t0.Add(time.Hour)
	id, _ := e.createKey(adminKey, "organisation/service", map[string]any{"name": "k", "scopes": []string{core.ScopeLogsList},
		"alert_emails": []string{"ops@example.com"}, "rotation_policy": map[string]any{"next_rotation_at": at.Format(time.RFC3339)}})
	if r := e.do(http.MethodPost, "/v1/api-keys/"+id+"/rotate", adminKey, map[string]any{"key_transition_period_ms": 2 * 3600000}); r.status != 200 {
		t.Fatalf("rotate: %d %s", r.status, r.raw)
	}
	e.runWorker(w, at)
	if k := e.storedKey(id); !k.LastRotatedAt.Equal(t0) {
		t.Fatalf("rotated during a transition at %v", k.LastRotatedAt)
	}
	e.runWorker(w, t0.Add(2*time.Hour))
	if k := e.storedKey(id); !k.LastRotatedAt.Equal(t0.Add(2*time.Hour)) || k.PrevHash == "" {
		t.Fatalf("not rotated after the transition: %+v", k.KeyLifecycle)
	}
}

// Start runs the worker at once and stops with its context.
func TestKeyWorkerStart(t *testing.T) {
	e := newEnv(t)
	id, _ := e.createKey(adminKey, "organisation/service", map[string]any{"name": "k", "scopes": []string{core.ScopeLogsList},
		"expires_at": t0.Add(time.Hour).Format(time.RFC3339)})
	e.clock.Advance(time.Hour)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	<-adminsvc.NewKeyWorker(e.st, e.keys, e.clock.Now, nil).Start(ctx, time.Hour)
	if k := e.storedKey(id); k.Status != store.KeyStatusExpired {
		t.Fatalf("status %q after the first run", k.Status)
	}
}
