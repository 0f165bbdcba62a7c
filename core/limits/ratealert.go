package limits

import (
	"fmt"
	"time"

	"github.com/llm-gateway/gateway/adminsvc/alerts"
	"github.com/llm-gateway/gateway/store"
)

// AlertRateLimited is the alert kind of a rate-limit policy that refused
// requests.
const AlertRateLimited = "rate_limit.exceeded"

// rateAlertEvery is how often, at most, one policy's value is alerted
// about: a policy that keeps refusing a value sends one e-mail per hour,
// not one per window. A restart may send one more.
const rateAlertEvery = time.Hour

// maxRateAlerted bounds the alerts remembered (Engine.rateAlerted).
const maxRateAlerted = 4096

// rateLimited queues, off the request path, the alert of a rate-limit
// policy r that refused a request of group value at now, unless one went
// out for them in the same hour. Other rate limits send none.
func (e *Engine) rateLimited(r *rateRule, value string, now time.Time) {
	if r.alerts == nil {
		return
	}
	key := fmt.Sprintf("%s\x00%s\x00%d", r.id, value, now.Truncate(rateAlertEvery).Unix())
	if _, sent := e.rateAlerted.LoadOrStore(key, struct{}{}); sent {
		return
	}
	what := "requests"
	if r.tokens {
		what = "tokens"
	}
	who := r.label
	if value != "" {
		who += " for " + value
	}
	m := alerts.Message{Kind: AlertRateLimited, Subject: "Rate limit reached: " + r.label,
		Body: fmt.Sprintf("The rate limit %s (%d %s per %s) refused a request at %s. Requests over it are refused (429) until its window moves on; no other alert about it is sent within the hour.\n",
			who, r.limit, what, unitNames[r.unit], now.UTC().Format(time.RFC3339))}
	audience := *r.alerts
	e.writer.later(func(tx store.Tx) error {
		to, err := recipients(tx, audience)
		if err != nil {
			return err
		}
		m.To = to
		return alerts.Enqueue(tx, m, now)
	})
}
