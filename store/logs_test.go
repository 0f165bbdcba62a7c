package store

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/llm-gateway/gateway/core"
	"github.com/llm-gateway/gateway/core/pricing"
)

// TestScanLogsLimit checks that ScanLogs reads at most limit records of
// its range, newest first, counting the ones the filter leaves out, and
// says when the limit cut the range short.
func TestScanLogsLimit(t *testing.T) {
	st, _ := openTemp(t)
	defer st.Close()
	w := NewLogWriter(st, LogWriterOptions{Interval: time.Hour})
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for i := range 6 {
		at := base.Add(time.Duration(i) * time.Minute)
		w.Enqueue(&core.LogRecord{ID: core.NewLogID(at), CreatedAt: at, Status: 200 + i%2})
	}
	w.Close()
	cases := []struct {
		name          string
		f             LogFilter
		limit         int
		wantStatuses  []int
		wantTruncated bool
	}{
		{"no limit", LogFilter{}, 0, []int{201, 200, 201, 200, 201, 200}, false},
		{"limit cuts the oldest", LogFilter{}, 4, []int{201, 200, 201, 200}, true},
		{"limit equal to the range", LogFilter{}, 6, []int{201, 200, 201, 200, 201, 200}, false},
		{"filtered records count toward the limit", LogFilter{Status: 200}, 3, []int{200}, true},
		{"limit within a range", LogFilter{From: new(base.Add(time.Minute)), To: new(base.Add(3 * time.Minute))}, 3, []int{201, 200, 201}, false},
		{"range shorter than the limit", LogFilter{From: new(base.Add(time.Minute)), To: new(base.Add(3 * time.Minute))}, 2, []int{201, 200}, true},
		{"the zero time as To: before every record", LogFilter{To: new(time.Time{})}, 0, nil, false},
		{"the zero time as From: before every record", LogFilter{From: new(time.Time{}), Status: 201}, 0, []int{201, 201, 201}, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var got []int
			var truncated bool
			err := st.View(func(tx Tx) (err error) {
				truncated, err = ScanLogs(tx, tc.f, tc.limit, func(r *core.LogRecord) error {
					got = append(got, r.Status)
					return nil
				})
				return err
			})
			if err != nil || truncated != tc.wantTruncated || len(got) != len(tc.wantStatuses) {
				t.Fatalf("got %v truncated=%v err=%v, want %v truncated=%v", got, truncated, err, tc.wantStatuses, tc.wantTruncated)
			}
			for i := range got {
				if got[i] != tc.wantStatuses[i] {
					t.Fatalf("got %v, want %v", got, tc.wantStatuses)
				}
			}
		})
	}
}

// TestScanLogsLowerBound checks that ScanLogs keeps a record created
// exactly at From and stops at the key of From without decoding the record
// a nanosecond older (undecodable here, so decoding it would be an error).
func TestScanLogsLowerBound(t *testing.T) {
	st, _ := openTemp(t)
	defer st.Close()
	from := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	w := NewLogWriter(st, LogWriterOptions{Interval: time.Hour})
	for i, at := range []time.Time{from, from.Add(time.Nanosecond)} {
		w.Enqueue(&core.LogRecord{ID: core.NewLogID(at), CreatedAt: at, Status: 200 + i})
	}
	w.Close()
	below := []byte(core.NewLogID(from.Add(-time.Nanosecond)))
	if err := st.Update(func(tx Tx) error { return tx.Append(BucketLogs, below, []byte("not json")) }); err != nil {
		t.Fatal(err)
	}
	var got []int
	err := st.View(func(tx Tx) error {
		_, err := ScanLogs(tx, LogFilter{From: &from}, 0, func(r *core.LogRecord) error {
			got = append(got, r.Status)
			return nil
		})
		return err
	})
	if err != nil || len(got) != 2 || got[0] != 201 || got[1] != 200 {
		t.Fatalf("got %v err=%v, want [201 200]", got, err)
	}
}

// TestIntegrationPricesBaseModel: a custom model with a base_model_slug and
// no pricing_config of its own is priced as its base (the base's
// pricing_config, else the provider's list price); its own pricing_config
// wins; a base that is itself only a custom model's base is not followed.
func TestIntegrationPricesBaseModel(t *testing.T) {
	st, _ := openTemp(t)
	defer st.Close()
	list, ok := pricing.Default().Lookup("openai", "gpt-4o")
	if !ok {
		t.Fatal("no list price for openai gpt-4o")
	}
	in := Integration{ID: "integ-1", Slug: "oa", AIProviderID: "openai", Models: []IntegrationModel{
		{Slug: "gpt-4o-mini", Enabled: true, PricingConfig: json.RawMessage(`{"input":1,"output":2}`)},
		{Slug: "ft-mini", IsCustom: true, BaseModelSlug: "gpt-4o-mini"},
		{Slug: "ft-4o", IsCustom: true, BaseModelSlug: "gpt-4o"},
		{Slug: "ft-own", IsCustom: true, BaseModelSlug: "gpt-4o", PricingConfig: json.RawMessage(`{"input":9,"output":9}`)},
		{Slug: "ft-of-ft", IsCustom: true, BaseModelSlug: "ft-unpriced"},
		{Slug: "ft-unpriced", IsCustom: true},
	}}
	if err := st.Update(func(tx Tx) error { return tx.Put(BucketIntegrations, in.ID, in) }); err != nil {
		t.Fatal(err)
	}
	var prices Prices
	if err := st.View(func(tx Tx) (err error) { prices, err = IntegrationPrices(tx); return err }); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		model string
		want  pricing.Price
		ok    bool
	}{
		{"ft-mini", pricing.Price{Input: 1, Output: 2}, true},
		{"ft-4o", list, true},
		{"ft-own", pricing.Price{Input: 9, Output: 9}, true},
		{"ft-of-ft", pricing.Price{}, false},
	} {
		got, ok := prices["integ-1"][tc.model]
		if ok != tc.ok || got != tc.want {
			t.Errorf("%s: %+v %v, want %+v %v", tc.model, got, ok, tc.want, tc.ok)
		}
	}
}
