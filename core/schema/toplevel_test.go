package schema

import (
	"testing"
)

// messagesByTree is ValidateMessages as it was: the whole body parsed.
func messagesByTree(body []byte) (Info, *Info, string) {
	info, err := validateObject(body, checkMessages(nil))
	if err != nil {
		return info, nil, err.Message
	}
	return info, &info, ""
}

// ValidateMessages reads only model and stream, yet answers exactly as
// parsing the whole body does.
func TestMessagesTopLevelMatchesTree(t *testing.T) {
	for _, body := range []string{
		`{"model":"claude-sonnet-4-5","messages":[],"stream":true}`,
		" \n\t{ \"model\" : \"m\" , \"stream\" : false }\n",
		`{"messages":[{"model":"inner","stream":"no"}],"model":"outer"}`,
		`{"system":"a \"quoted\" {brace} [bracket] \\ backslash","model":"m"}`,
		`{"mod\u0065l":"escaped key","stream":null}`,
		`{"model":"first","model":"last"}`,
		`{"model":4}`, `{"model":-1.5e3}`, `{"model":""}`, `{"model":["a"]}`, `{"model":{"a":1}}`,
		`{"model":"m","stream":"yes"}`, `{"model":"m","stream":1}`,
		`{"stream":true}`, `{}`, `{"a":{"b":[1,2,{"c":"}"}]},"model":"m"}`,
		`{"model":"m"} x`, `{"model":"m",}`, `{"model":"\ud800"}`, "{\"model\":\"\xff\"}",
		`{"model":"m","messages":[{"content":[{"text":"` + "\xfe" + `"}]}]}`, `{"model":"m","system":"\"` + "\xff" + `\""}`,
		`{"` + "\x80" + `":1,"model":"m"}`, `{"model":"m","s":"é ✓ 😀"}`,
		`[]`, `null`, `"s"`, ``, `   `, `{`,
	} {
		t.Run(body, func(t *testing.T) {
			info, err := ValidateMessages([]byte(body), nil)
			wantInfo, ok, wantMsg := messagesByTree([]byte(body))
			gotMsg := ""
			if err != nil {
				gotMsg = err.Message
			}
			if gotMsg != wantMsg || (ok != nil) != (err == nil) || info.Model != wantInfo.Model || info.Stream != wantInfo.Stream {
				t.Fatalf("got %+v %q, want %+v %q", info, gotMsg, wantInfo, wantMsg)
			}
		})
	}
}

func FuzzMessagesTopLevel(f *testing.F) {
	for _, seed := range []string{`{"model":"m","stream":true}`, `{"a":[{"model":1}],"model":"x"}`, `{"mod\u0065l":"k"}`, `{"s":"\\\""}`, `[]`, `{`} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		info, err := ValidateMessages(body, nil)
		wantInfo, _, wantMsg := messagesByTree(body)
		gotMsg := ""
		if err != nil {
			gotMsg = err.Message
		}
		if gotMsg != wantMsg || info.Model != wantInfo.Model || info.Stream != wantInfo.Stream {
			t.Fatalf("%q: got %+v %q, want %+v %q", body, info, gotMsg, wantInfo, wantMsg)
		}
	})
}
