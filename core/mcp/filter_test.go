package mcp

import (
	"encoding/json"
	"testing"
)

func TestListFilter(t *testing.T) {
	target := &Target{Disabled: map[string]bool{
		DisabledKey(TypeTool, "rm"): true, DisabledKey(TypePrompt, "leak"): true,
		DisabledKey(TypeResource, "file:///secret"): true, DisabledKey(TypeTool, "kept"): false,
	}}
	toolsList := []Call{{ID: json.RawMessage(`7`), Method: "tools/list"}}
	for _, tc := range []struct {
		name   string
		target *Target
		calls  []Call
		msg    string
		want   string // "" when no filter is made
	}{
		{name: "a disabled tool is taken out, the rest kept as sent", calls: toolsList,
			msg:  `{"jsonrpc":"2.0","id":7,"result":{"tools":[{"name":"ls","description":"<b>&"},{"name":"rm"},{"name":"kept"}],"nextCursor":"c2"}}`,
			want: `{"id":7,"jsonrpc":"2.0","result":{"nextCursor":"c2","tools":[{"name":"ls","description":"<b>&"},{"name":"kept"}]}}`},
		{name: "an id written with spaces", calls: []Call{{ID: json.RawMessage(` "a" `), Method: "tools/list"}},
			msg:  `{"jsonrpc":"2.0","id":"a","result":{"tools":[{"name":"rm"}]}}`,
			want: `{"id":"a","jsonrpc":"2.0","result":{"tools":[]}}`},
		{name: "prompts by name", calls: []Call{{ID: json.RawMessage(`1`), Method: "prompts/list"}},
			msg:  `{"jsonrpc":"2.0","id":1,"result":{"prompts":[{"name":"leak"},{"name":"hello"}]}}`,
			want: `{"id":1,"jsonrpc":"2.0","result":{"prompts":[{"name":"hello"}]}}`},
		{name: "resources by uri", calls: []Call{{ID: json.RawMessage(`1`), Method: "resources/list"}},
			msg:  `{"jsonrpc":"2.0","id":1,"result":{"resources":[{"uri":"file:///secret","name":"rm"},{"uri":"file:///ok"}]}}`,
			want: `{"id":1,"jsonrpc":"2.0","result":{"resources":[{"uri":"file:///ok"}]}}`},
		{name: "a batch: only the list answer changes", calls: []Call{{ID: json.RawMessage(`1`), Method: "ping"}, {ID: json.RawMessage(`2`), Method: "tools/list"}},
			msg:  `[{"jsonrpc":"2.0","id":1,"result":{}},{"jsonrpc":"2.0","id":2,"result":{"tools":[{"name":"rm"},{"name":"ls"}]}}]`,
			want: `[{"jsonrpc":"2.0","id":1,"result":{}},{"id":2,"jsonrpc":"2.0","result":{"tools":[{"name":"ls"}]}}]`},
		{name: "another id is left alone", calls: toolsList,
			msg:  `{"jsonrpc":"2.0","id":8,"result":{"tools":[{"name":"rm"}]}}`,
			want: `{"jsonrpc":"2.0","id":8,"result":{"tools":[{"name":"rm"}]}}`},
		{name: "an error answer is left alone", calls: toolsList,
			msg:  `{"jsonrpc":"2.0","id":7,"error":{"code":-1,"message":"no"}}`,
			want: `{"jsonrpc":"2.0","id":7,"error":{"code":-1,"message":"no"}}`},
		{name: "a notification is left alone", calls: toolsList,
			msg:  `{"jsonrpc":"2.0","method":"notifications/progress","params":{}}`,
			want: `{"jsonrpc":"2.0","method":"notifications/progress","params":{}}`},
		{name: "not JSON is left alone", calls: toolsList, msg: `{"tools":`, want: `{"tools":`},
		{name: "nothing disabled of the listed type: no filter", calls: []Call{{ID: json.RawMessage(`1`), Method: "tools/list"}},
			target: &Target{Disabled: map[string]bool{DisabledKey(TypePrompt, "leak"): true, DisabledKey(TypeTool, "kept"): false}}},
		{name: "a list call without an id (a notification): no filter", calls: []Call{{Method: "tools/list"}}},
		{name: "not a list call: no filter", calls: []Call{{ID: json.RawMessage(`1`), Method: "tools/call"}}},
		{name: "nothing disabled: no filter", calls: toolsList, target: &Target{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tg := target
			if tc.target != nil {
				tg = tc.target
			}
			f := tg.ListFilter(tc.calls)
			if tc.want == "" {
				if f != nil {
					t.Fatalf("a filter was made: %+v", f)
				}
				return
			}
			if f == nil {
				t.Fatal("no filter")
			}
			if got := string(f.Apply([]byte(tc.msg))); got != tc.want {
				t.Errorf("got  %s\nwant %s", got, tc.want)
			}
		})
	}
	var nilFilter *ListFilter
	if got := string(nilFilter.Apply([]byte(`{"a":1}`))); got != `{"a":1}` {
		t.Errorf("a nil filter changed the message: %s", got)
	}
}
