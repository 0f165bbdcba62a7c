package client_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/llm-gateway/gateway/sdk/client"
)

// Update sends max_keys_per_user left out, as 0 or as N, as the caller says.
func TestWorkspaceUpdateMaxKeysPerUser(t *testing.T) {
	var body []byte
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ = io.ReadAll(r.Body)
		io.WriteString(w, `{}`)
	}))
	defer srv.Close()
	c := client.New(srv.URL, "key")
	cases := []struct {
		name string
		max  *int
		want string // the user_api_key_config sent
	}{
		{"unset", nil, `{}`},
		{"zero: no cap", new(0), `{"max_keys_per_user":0}`},
		{"a cap", new(3), `{"max_keys_per_user":3}`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			in := client.WorkspaceInput{Defaults: &client.WorkspaceDefaults{UserAPIKeyConfig: &client.UserAPIKeyConfig{MaxKeysPerUser: tc.max}}}
			if err := c.Workspaces.Update(context.Background(), "default", in); err != nil {
				t.Fatal(err)
			}
			var sent struct {
				Defaults struct {
					UserAPIKeyConfig json.RawMessage `json:"user_api_key_config"`
				} `json:"defaults"`
			}
			if err := json.Unmarshal(body, &sent); err != nil {
				t.Fatalf("%v: %s", err, body)
			}
			if got := string(sent.Defaults.UserAPIKeyConfig); got != tc.want {
				t.Fatalf("user_api_key_config %s, want %s", got, tc.want)
			}
		})
	}
}
