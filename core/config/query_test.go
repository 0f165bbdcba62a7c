package config

import (
	"bytes"
	"encoding/json"
	"strings"
	"sync"
	"testing"
)

// q decodes a query the way Parse does (numbers as json.Number).
func q(t *testing.T, s string) map[string]any {
	t.Helper()
	dec := json.NewDecoder(strings.NewReader(s))
	dec.UseNumber()
	var m map[string]any
	if err := dec.Decode(&m); err != nil {
		t.Fatalf("query %s: %v", s, err)
	}
	return m
}

// body decodes a request body; numbers as json.Number when useNumber.
func body(t *testing.T, s string, useNumber bool) map[string]any {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader([]byte(s)))
	if useNumber {
		dec.UseNumber()
	}
	var m map[string]any
	if err := dec.Decode(&m); err != nil {
		t.Fatal(err)
	}
	return m
}

func TestEvalQuery(t *testing.T) {
	const reqBody = `{"model":"gpt-4o-mini","temperature":0.7,"max_tokens":512,"stream":true,"user":null,
		"messages":[{"role":"system","content":"be brief"},{"role":"user","content":"hi"}],
		"metadata":{"nested":{"deep":"yes"}},"big":9007199254740993}`
	data := func(useNumber bool) QueryData {
		return QueryData{
			Metadata: map[string]string{"tier": "pro", "level": "10", "team": "ml", "ratio": "0.5", "org.id": "o1"},
			Params:   body(t, reqBody, useNumber),
			URL:      map[string]string{"pathname": "/v1/chat/completions"},
		}
	}
	tests := []struct {
		name  string
		query string
		want  bool
	}{
		{"empty query matches", `{}`, true},
		{"bare value", `{"metadata.tier":"pro"}`, true},
		{"bare value mismatch", `{"metadata.tier":"free"}`, false},
		{"$eq string", `{"metadata.tier":{"$eq":"pro"}}`, true},
		{"$eq number", `{"params.max_tokens":{"$eq":512}}`, true},
		{"$eq number as float", `{"params.max_tokens":{"$eq":512.0}}`, true},
		{"$eq float", `{"params.temperature":0.7}`, true},
		{"$eq bool", `{"params.stream":true}`, true},
		{"$eq bool mismatch", `{"params.stream":false}`, false},
		{"$eq null present", `{"params.user":null}`, true},
		{"$eq type mismatch", `{"params.stream":"true"}`, false},
		{"$eq metadata numeric string with number", `{"metadata.level":10}`, true},

		{"$ne", `{"metadata.tier":{"$ne":"free"}}`, true},
		{"$ne equal", `{"metadata.tier":{"$ne":"pro"}}`, false},
		{"$gt number", `{"params.max_tokens":{"$gt":100}}`, true},
		{"$gt equal", `{"params.max_tokens":{"$gt":512}}`, false},
		{"$gte equal", `{"params.max_tokens":{"$gte":512}}`, true},
		{"$lt", `{"params.temperature":{"$lt":1}}`, true},
		{"$lt false", `{"params.temperature":{"$lt":0.5}}`, false},
		{"$lte equal", `{"params.temperature":{"$lte":0.7}}`, true},
		{"range", `{"params.max_tokens":{"$gte":100,"$lt":1000}}`, true},
		{"range miss", `{"params.max_tokens":{"$gte":100,"$lt":500}}`, false},
		{"metadata numeric string $gt number", `{"metadata.level":{"$gt":9}}`, true},
		{"metadata float string $lt number", `{"metadata.ratio":{"$lt":0.75}}`, true},
		{"strings compare lexically", `{"metadata.level":{"$gt":"9"}}`, false},
		{"string $gt string", `{"metadata.tier":{"$gt":"free"}}`, true},
		{"string $lte string", `{"metadata.team":{"$lte":"ml"}}`, true},
		{"non-numeric string vs number", `{"metadata.tier":{"$gt":1}}`, false},
		{"bool not ordered", `{"params.stream":{"$gt":"a"}}`, false},
		{"$in", `{"metadata.tier":{"$in":["pro","enterprise"]}}`, true},
		{"$in miss", `{"metadata.tier":{"$in":["free"]}}`, false},
		{"$in numbers", `{"params.max_tokens":{"$in":[256,512]}}`, true},
		{"$in empty", `{"metadata.tier":{"$in":[]}}`, false},
		{"$nin", `{"metadata.tier":{"$nin":["free"]}}`, true},
		{"$nin hit", `{"metadata.tier":{"$nin":["pro"]}}`, false},
		{"$regex", `{"params.model":{"$regex":"^gpt-4o"}}`, true},
		{"$regex miss", `{"params.model":{"$regex":"^claude"}}`, false},
		{"$regex case flag", `{"params.model":{"$regex":"(?i)^GPT"}}`, true},
		{"$regex on number", `{"params.max_tokens":{"$regex":"5"}}`, false},
		{"metadata key with a dot", `{"metadata.org.id":"o1"}`, true},
		{"url pathname", `{"url.pathname":{"$regex":"/chat/"}}`, true},
		{"array index path", `{"params.messages.1.role":"user"}`, true},
		{"array index out of range", `{"params.messages.5.role":{"$ne":"user"}}`, true},
		{"nested object path", `{"params.metadata.nested.deep":"yes"}`, true},
		{"path through a scalar", `{"params.model.x":{"$eq":"y"}}`, false},
		{"several keys ANDed", `{"metadata.tier":"pro","params.stream":true}`, true},
		{"several keys ANDed miss", `{"metadata.tier":"pro","params.stream":false}`, false},
		{"$and", `{"$and":[{"metadata.tier":"pro"},{"params.max_tokens":{"$gt":10}}]}`, true},
		{"$and miss", `{"$and":[{"metadata.tier":"pro"},{"params.max_tokens":{"$gt":1000}}]}`, false},
		{"$or", `{"$or":[{"metadata.tier":"free"},{"params.model":"gpt-4o-mini"}]}`, true},
		{"$or miss", `{"$or":[{"metadata.tier":"free"},{"params.model":"x"}]}`, false},
		{"nested $and $or", `{"$or":[{"$and":[{"metadata.tier":"pro"},{"metadata.team":"data"}]},{"$and":[{"url.pathname":"/v1/chat/completions"},{"$or":[{"params.stream":true},{"params.n":2}]}]}]}`, true},
		{"nested miss", `{"$and":[{"$or":[{"metadata.tier":"x"},{"metadata.tier":"y"}]},{"params.stream":true}]}`, false},
		{"$and with sibling field", `{"$and":[{"metadata.tier":"pro"}],"metadata.team":"ops"}`, false},

		// Missing fields match only $ne and $nin.
		{"missing $eq", `{"metadata.nope":"x"}`, false},
		{"missing $eq null", `{"params.nope":null}`, false},
		{"missing $ne", `{"metadata.nope":{"$ne":"x"}}`, true},
		{"missing $nin", `{"params.nope":{"$nin":["x"]}}`, true},
		{"missing $in", `{"params.nope":{"$in":["x"]}}`, false},
		{"missing $gt", `{"params.nope":{"$gt":0}}`, false},
		{"missing $lte", `{"url.search":{"$lte":"z"}}`, false},
		{"missing $regex", `{"metadata.nope":{"$regex":".*"}}`, false},
	}
	for _, tt := range tests {
		for _, useNumber := range []bool{true, false} {
			t.Run(tt.name, func(t *testing.T) {
				query := q(t, tt.query)
				if probs := ValidateQuery("q", query); probs != nil {
					t.Fatalf("ValidateQuery: %v", probs)
				}
				got, err := EvalQuery(query, data(useNumber))
				if err != nil {
					t.Fatal(err)
				}
				if got != tt.want {
					t.Errorf("EvalQuery(%s) = %v, want %v (json.Number body: %v)", tt.query, got, tt.want, useNumber)
				}
			})
		}
	}
}

func TestEvalQueryBigIntegers(t *testing.T) {
	// With a json.Number body, integers beyond 2^53 compare exactly.
	data := QueryData{Params: body(t, `{"big":9007199254740993}`, true)}
	for query, want := range map[string]bool{
		`{"params.big":9007199254740993}`:           true,
		`{"params.big":9007199254740992}`:           false,
		`{"params.big":{"$gt":9007199254740992}}`:   true,
		`{"params.big":{"$lt":9007199254740993.5}}`: true,
	} {
		if got, err := EvalQuery(q(t, query), data); err != nil || got != want {
			t.Errorf("EvalQuery(%s) = %v, %v; want %v", query, got, err, want)
		}
	}
}

func TestEvalQueryGoValues(t *testing.T) {
	// Queries built in Go, and bodies with Go numbers of every kind.
	data := QueryData{Params: map[string]any{"i": 5, "i64": int64(5), "u8": uint8(5), "f32": float32(5), "f": 5.0, "n": json.Number("5")}}
	for _, field := range []string{"i", "i64", "u8", "f32", "f", "n"} {
		for _, arg := range []any{5, int64(5), 5.0, json.Number("5"), uint(5)} {
			query := map[string]any{"params." + field: map[string]any{"$eq": arg, "$gte": arg, "$lte": arg, "$in": []any{arg}}}
			if ok, err := EvalQuery(query, data); err != nil || !ok {
				t.Errorf("%s vs %T: %v, %v", field, arg, ok, err)
			}
			query = map[string]any{"params." + field: map[string]any{"$gt": arg}}
			if ok, err := EvalQuery(query, data); err != nil || ok {
				t.Errorf("%s $gt %T: %v, %v", field, arg, ok, err)
			}
		}
	}
	// No data at all.
	if ok, err := EvalQuery(map[string]any{"params.a.b": map[string]any{"$ne": 1}}, QueryData{}); err != nil || !ok {
		t.Errorf("empty data: %v, %v", ok, err)
	}
}

func TestEvalQueryErrors(t *testing.T) {
	for _, s := range []string{
		`{"$foo":1}`,
		`{"user.x":1}`,
		`{"metadata":1}`,
		`{"params.a..b":1}`,
		`{"metadata.a":{"$regex":"("}}`,
		`{"metadata.a":{"$regex":1}}`,
		`{"metadata.a":{"$in":"x"}}`,
		`{"metadata.a":{"$gt":true}}`,
		`{"metadata.a":{"$eq":[1]}}`,
		`{"metadata.a":{"$bogus":1}}`,
		`{"metadata.a":{}}`,
		`{"metadata.a":[1,2]}`,
		`{"$and":[]}`,
		`{"$or":"x"}`,
		`{"$and":[1]}`,
	} {
		query := q(t, s)
		if _, err := EvalQuery(query, QueryData{}); err == nil {
			t.Errorf("EvalQuery(%s): no error", s)
		}
		if probs := ValidateQuery("q", query); len(probs) == 0 {
			t.Errorf("ValidateQuery(%s): no problem", s)
		}
	}
}

func TestValidateQuery(t *testing.T) {
	tests := []struct {
		query string
		want  []string
	}{
		{`{"metadata.a":"b","params.x.y":{"$gte":1},"url.pathname":{"$regex":"^/v1"}}`, nil},
		{`{"$and":[{"$or":[{"metadata.a":1}]},{"params.b":null}]}`, nil},
		{`{"$not":{}}`, []string{`q.$not: unknown operator "$not": only $and and $or may stand for a field`}},
		{`{"headers.x":1}`, []string{`q["headers.x"]: unknown field "headers.x": a field starts with metadata., params. or url.`}},
		{`{"url.":1}`, []string{`q["url."]: field "url." names no url key: use url.<key>`}},
		{`{"params":{"$eq":1}}`, []string{`q.params: field "params" is not a dotted path into the request body: use params.<path>`}},
		{`{"metadata.a":{"$regex":"[a-"}}`, []string{`q["metadata.a"].$regex: invalid regular expression: error parsing regexp: missing closing ]: ` + "`[a-`"}},
		{`{"metadata.a":{"$in":[1,{}]}}`, []string{`q["metadata.a"].$in[1]: must be a string, number, boolean or null, got object`}},
		{`{"metadata.a":{"$eq":1,"x":2}}`, []string{`q["metadata.a"].x: unexpected key "x": an object here holds only operators ($eq, $ne, $gt, $gte, $lt, $lte, $in, $nin, $regex)`}},
		{`{"$or":[{"metadata.a":1},"x",{"$and":[{"$x":1}]}]}`, []string{
			`q.$or[1]: must be a JSON object, got string`,
			`q.$or[2].$and[0].$x: unknown operator "$x": only $and and $or may stand for a field`,
		}},
	}
	for _, tt := range tests {
		got := ValidateQuery("q", q(t, tt.query))
		if strings.Join(got, "\n") != strings.Join(tt.want, "\n") {
			t.Errorf("ValidateQuery(%s)\ngot  %q\nwant %q", tt.query, got, tt.want)
		}
	}

	// Nesting is capped.
	s := `{"metadata.a":1}`
	for range maxQueryDepth + 5 {
		s = `{"$and":[` + s + `]}`
	}
	query := q(t, s)
	if got := ValidateQuery("q", query); len(got) != 1 || !strings.Contains(got[0], "nest deeper than 20 levels") {
		t.Errorf("deep query: %q", got)
	}
	if _, err := EvalQuery(query, QueryData{}); err == nil {
		t.Error("deep query evaluated")
	}
}

func TestRegexCache(t *testing.T) {
	query := map[string]any{"metadata.a": map[string]any{"$regex": "^cached-[0-9]+$"}}
	data := QueryData{Metadata: map[string]string{"a": "cached-42"}}
	var wg sync.WaitGroup
	for range 16 {
		wg.Go(func() {
			for range 100 {
				if ok, err := EvalQuery(query, data); err != nil || !ok {
					t.Errorf("EvalQuery = %v, %v", ok, err)
					return
				}
			}
		})
	}
	wg.Wait()
	re1, _ := compileRegex("^cached-[0-9]+$")
	re2, _ := compileRegex("^cached-[0-9]+$")
	if re1 != re2 {
		t.Error("regex compiled twice")
	}
	if n := regexCacheCount.Load(); n > regexCacheMax {
		t.Errorf("cache holds %d patterns", n)
	}
}
