package core

import (
	"context"
	"net/http"
	"strings"
	"testing"
)

// fakeManaged knows provider @prod and virtual key vk-openai, both for
// openai; "@broken" answers 502. It counts its lookups.
type fakeManaged struct{ calls int }

func (m *fakeManaged) Resolve(_ context.Context, ref string, virtualKey bool, _ *Principal) (Target, *Error) {
	m.calls++
	switch {
	case !virtualKey && ref == "prod", virtualKey && ref == "vk-openai":
		return Target{Provider: "openai", APIKey: "sk-stored"}, nil
	case !virtualKey && ref == "broken":
		return Target{}, &Error{Status: http.StatusBadGateway, Type: TypeUpstream, Message: "secret unavailable"}
	case virtualKey:
		return Target{}, BadRequest("x-gateway-virtual-key", "no virtual key %s in this workspace", ref)
	}
	return Target{}, BadRequest("x-gateway-provider", "no provider @%s in this workspace", ref)
}

// TestResolveManaged: the headers (no Path) and a config target (Path) are
// resolved alike; a virtual key's provider is compared ignoring case; each
// refusal names the header or config field it is about, and a refused
// custom host is refused before any lookup.
func TestResolveManaged(t *testing.T) {
	const path = "config.targets[1]"
	cases := []struct {
		name string
		ref  ManagedRef
		// status and param of the error, and a part of its message; 0 for a target.
		status  int
		param   string
		msg     string
		resolve bool // whether the store is asked
	}{
		{"header slug", ManagedRef{Provider: "@prod"}, 0, "", "", true},
		{"config slug", ManagedRef{Provider: "@prod", Path: path}, 0, "", "", true},
		{"header virtual key", ManagedRef{VirtualKey: "vk-openai"}, 0, "", "", true},
		{"config virtual key", ManagedRef{VirtualKey: "vk-openai", Path: path}, 0, "", "", true},
		{"header virtual key, provider mixed case", ManagedRef{Provider: "OpenAI", VirtualKey: "vk-openai"}, 0, "", "", true},
		{"config virtual key, provider mixed case", ManagedRef{Provider: "OpenAI", VirtualKey: "vk-openai", Path: path}, 0, "", "", true},
		{"header virtual key, provider upper case", ManagedRef{Provider: "OPENAI", VirtualKey: "vk-openai"}, 0, "", "", true},
		{"config virtual key, provider upper case", ManagedRef{Provider: "OPENAI", VirtualKey: "vk-openai", Path: path}, 0, "", "", true},
		{"header virtual key, another provider", ManagedRef{Provider: "Groq", VirtualKey: "vk-openai"}, 400, "x-gateway-provider", "x-gateway-provider is Groq, but virtual key vk-openai is for openai", true},
		{"config virtual key, another provider", ManagedRef{Provider: "Groq", VirtualKey: "vk-openai", Path: path}, 400, path + ".provider", path + ".provider is Groq, but virtual key vk-openai is for openai", true},
		{"header both", ManagedRef{Provider: "@prod", VirtualKey: "vk-openai"}, 400, "x-gateway-virtual-key", "not both", false},
		{"config both", ManagedRef{Provider: "@prod", VirtualKey: "vk-openai", Path: path}, 400, path + ".virtual_key", "not both", false},
		{"header bare @", ManagedRef{Provider: "@"}, 400, "x-gateway-provider", "must be followed by a provider slug", false},
		{"config bare @", ManagedRef{Provider: "@", Path: path}, 400, path + ".provider", "must be followed by a provider slug", false},
		{"header custom host", ManagedRef{Provider: "@prod", CustomHost: true}, 400, "x-gateway-custom-host", "x-gateway-custom-host cannot be combined", false},
		{"config custom host", ManagedRef{VirtualKey: "vk-openai", CustomHost: true, Path: path}, 400, path + ".custom_host", path + ".custom_host cannot be combined", false},
		{"header unknown slug", ManagedRef{Provider: "@ghost"}, 400, "x-gateway-provider", "no provider @ghost", true},
		{"config unknown slug", ManagedRef{Provider: "@ghost", Path: path}, 400, path + ".provider", path + ".provider: no provider @ghost", true},
		{"config unknown virtual key", ManagedRef{VirtualKey: "vk-ghost", Path: path}, 400, path + ".virtual_key", path + ".virtual_key: no virtual key vk-ghost", true},
		{"config secret unavailable", ManagedRef{Provider: "@broken", Path: path}, 502, "", "secret unavailable", true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			m := &fakeManaged{}
			got, err := ResolveManaged(context.Background(), m, tc.ref, nil)
			if (m.calls == 1) != tc.resolve {
				t.Errorf("%d lookups, want the store asked: %v", m.calls, tc.resolve)
			}
			if tc.status == 0 {
				if err != nil || !got.Managed || got.APIKey != "sk-stored" {
					t.Fatalf("got %+v, %v", got, err)
				}
				return
			}
			if err == nil || err.Status != tc.status || err.Param != tc.param || !strings.Contains(err.Message, tc.msg) {
				t.Fatalf("got %+v, want %d param %q with %q", err, tc.status, tc.param, tc.msg)
			}
		})
	}
}

// TestResolveManagedNoStore: without a provider store, both kinds are
// refused, naming what was asked for.
func TestResolveManagedNoStore(t *testing.T) {
	cases := []struct {
		ref   ManagedRef
		param string
		msg   string
	}{
		{ManagedRef{Provider: "@prod"}, "x-gateway-provider", "x-gateway-provider: @prod: managed providers and virtual keys are not supported"},
		{ManagedRef{VirtualKey: "vk-1"}, "x-gateway-virtual-key", "x-gateway-virtual-key: vk-1: managed providers and virtual keys are not supported"},
		{ManagedRef{Provider: "@prod", Path: "config"}, "config.provider", "config.provider: @prod: managed providers and virtual keys are not supported"},
		{ManagedRef{VirtualKey: "vk-1", Path: "config"}, "config.virtual_key", "config.virtual_key: vk-1: managed providers and virtual keys are not supported"},
	}
	for _, tc := range cases {
		_, err := ResolveManaged(context.Background(), nil, tc.ref, nil)
		if err == nil || err.Status != http.StatusBadRequest || err.Param != tc.param || !strings.Contains(err.Message, tc.msg) {
			t.Errorf("%+v: got %+v", tc.ref, err)
		}
	}
}
