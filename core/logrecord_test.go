package core

import (
	"bytes"
	"encoding/json"
	"math"
	"reflect"
	"testing"
	"time"
)

// checkAppendJSON fails unless AppendJSON gives exactly what json.Marshal
// gives for r, or fails where it fails.
func checkAppendJSON(t *testing.T, r *LogRecord) {
	t.Helper()
	want, wantErr := json.Marshal(r)
	got, err := r.AppendJSON([]byte("prefix"))
	if (err != nil) != (wantErr != nil) {
		t.Fatalf("AppendJSON error %v, json.Marshal error %v", err, wantErr)
	}
	if err == nil && !bytes.Equal(got, append([]byte("prefix"), want...)) {
		t.Fatalf("AppendJSON:\n%s\njson.Marshal:\n%s", got[len("prefix"):], want)
	}
}

// everyField is a record with every field set, by reflection, so that a
// field added to LogRecord and not to AppendJSON fails the test.
func everyField(t *testing.T, s string, n int, f float64) *LogRecord {
	var r LogRecord
	v := reflect.ValueOf(&r).Elem()
	for i := range v.NumField() {
		switch fv := v.Field(i); fv.Kind() {
		case reflect.String:
			fv.SetString(s)
		case reflect.Int:
			fv.SetInt(int64(n))
		case reflect.Bool:
			fv.SetBool(true)
		case reflect.Float64:
			fv.SetFloat(f)
		case reflect.Map:
			fv.Set(reflect.ValueOf(map[string]string{s: s, "b" + s: "", "a": s}))
		case reflect.Struct:
			switch x := fv.Addr().Interface().(type) {
			case *time.Time:
				*x = time.Date(2026, 5, 17, 8, 30, 1, 123456789, time.FixedZone("x", 5400))
			case *Usage:
				*x = Usage{PromptTokens: n, CompletionTokens: n + 1, TotalTokens: 2*n + 1}
			default:
				t.Fatalf("field %s: no test value for %T", v.Type().Field(i).Name, x)
			}
		case reflect.Pointer:
			switch x := fv.Addr().Interface().(type) {
			case **LogMessage:
				*x = &LogMessage{Headers: map[string]string{s: s, "a": ""}, Body: json.RawMessage(" {\"b\" : [1, 2.50, \"" + jsonEscape(s) + "\"], \"a\":null} ")}
			default:
				t.Fatalf("field %s: no test value for %T", v.Type().Field(i).Name, x)
			}
		default:
			t.Fatalf("field %s: no test value for kind %s", v.Type().Field(i).Name, fv.Kind())
		}
	}
	return &r
}

// jsonEscape is s as the inside of a JSON string.
func jsonEscape(s string) string {
	b, _ := json.Marshal(s)
	return string(b[1 : len(b)-1])
}

func TestLogRecordAppendJSONMatchesMarshal(t *testing.T) {
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	checkAppendJSON(t, &LogRecord{})
	checkAppendJSON(t, &LogRecord{ID: NewLogID(at), CreatedAt: at, Method: "POST", Path: "/v1/chat/completions", Status: 200,
		LatencyMs: 12.5, Metadata: map[string]string{}, RetryCount: -1})
	for _, s := range []string{"plain", `quote " backslash \ slash /`, "<script>&amp;</script>", "\x00\x01\b\f\n\r\t\x1f\x7f",
		"é ü 日本 🙂", "\u2028 and \u2029", "bad \xff\xfe utf-8 \xe2\x80", "\xed\xa0\x80 surrogate"} {
		checkAppendJSON(t, everyField(t, s, 42, 3.25))
	}
	for _, f := range []float64{0, math.Copysign(0, -1), 1, -1, 0.1, 1e-6, 9.99e-7, 1e-7, 1e20, 1e21, 1.5e300, 5e-324, -2.5e-9, 123456.789} {
		checkAppendJSON(t, everyField(t, "x", -7, f))
	}
	for _, r := range []*LogRecord{ // custom records' messages, partly empty
		{Request: &LogMessage{}, Response: &LogMessage{Body: json.RawMessage(`"text"`)}},
		{Request: &LogMessage{Headers: map[string]string{"x": "1"}}, Response: &LogMessage{Body: json.RawMessage(`{}`)}},
	} {
		checkAppendJSON(t, r)
	}
	for _, r := range []*LogRecord{ // json.Marshal fails on these too
		{LatencyMs: math.NaN()}, {LatencyMs: math.Inf(1)}, {LatencyMs: math.Inf(-1)},
		{Request: &LogMessage{Body: json.RawMessage(`{"a":`)}}, {Response: &LogMessage{Body: json.RawMessage(`1 2`)}},
		{CreatedAt: time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)}, {CreatedAt: time.Date(-1, 1, 1, 0, 0, 0, 0, time.UTC)},
	} {
		checkAppendJSON(t, r)
	}
}

func TestLogRecordAppendJSONDecodes(t *testing.T) {
	want := everyField(t, "v <&> \u2028", 3, 0.001)
	raw, err := want.AppendJSON(nil)
	if err != nil {
		t.Fatal(err)
	}
	var got LogRecord
	if err := json.Unmarshal(raw, &got); err != nil {
		t.Fatal(err)
	}
	if !got.CreatedAt.Equal(want.CreatedAt) {
		t.Fatalf("created_at %v, want %v", got.CreatedAt, want.CreatedAt)
	}
	got.CreatedAt = want.CreatedAt
	for _, m := range []*LogMessage{want.Request, want.Response} {
		// A body decodes as it was encoded: compact and HTML-escaped.
		if m.Body, err = json.Marshal(m.Body); err != nil {
			t.Fatal(err)
		}
	}
	if !reflect.DeepEqual(&got, want) {
		t.Fatalf("decoded %+v\nwant %+v", got, *want)
	}
}

func FuzzLogRecordAppendJSON(f *testing.F) {
	f.Add("a<b>\u2028\xff", 1.5, int64(0))
	f.Add("", 1e-7, int64(-62135596800))
	f.Fuzz(func(t *testing.T, s string, latency float64, unix int64) {
		r := everyField(t, s, len(s), latency)
		r.CreatedAt = time.Unix(unix, int64(len(s))).UTC()
		checkAppendJSON(t, r)
	})
}

func BenchmarkLogRecordEncode(b *testing.B) {
	at := time.Date(2026, 1, 2, 3, 4, 5, 6789, time.UTC)
	r := &LogRecord{ID: NewLogID(at), CreatedAt: at, TraceID: "0b6f4a52-8c1d-4e53-9a57-1f3c1a2b9e7d",
		Metadata: map[string]string{"_user": "alice", "env": "prod"}, WorkspaceID: "a3e2b1c4-5d6f-4a7b-8c9d-0e1f2a3b4c5d",
		Provider: "openai", Model: "gpt-4o-mini", Endpoint: EndpointChatComplete, Method: "POST",
		Path: "/v1/chat/completions", Status: 200, LatencyMs: 12.345, Usage: Usage{12, 230, 242}}
	b.Run("json.Marshal", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := json.Marshal(r); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("AppendJSON", func(b *testing.B) {
		b.ReportAllocs()
		var buf []byte
		for b.Loop() {
			var err error
			if buf, err = r.AppendJSON(buf[:0]); err != nil {
				b.Fatal(err)
			}
		}
	})
}
