package secrets

import (
	"reflect"
	"strings"
	"testing"
)

func TestNormalizeAuth(t *testing.T) {
	tests := []struct {
		name    string
		manager string
		in      map[string]any
		want    map[string]string
		fields  []string // the fields with problems, in order
	}{
		{name: "vault token", manager: TypeVault, in: map[string]any{"auth_type": "token", "vault_addr": "https://vault:8200", "token": "t"},
			want: map[string]string{"auth_type": "token", "address": "https://vault:8200", "token": "t"}},
		{name: "aws prefixed names", manager: TypeAWS, in: map[string]any{"aws_auth_type": "accessKey", "aws_access_key_id": "A", "aws_secret_access_key": "S", "aws_region": "us-east-1"},
			want: map[string]string{"auth_type": "accessKey", "access_key_id": "A", "secret_access_key": "S", "region": "us-east-1"}},
		{name: "azure managed", manager: TypeAzure, in: map[string]any{"auth_type": "managed", "vault_url": "https://kv.vault.azure.net"},
			want: map[string]string{"auth_type": "managed", "vault_url": "https://kv.vault.azure.net"}},
		{name: "no auth_type", manager: TypeVault, in: map[string]any{"token": "t"}, fields: []string{"auth_type"}},
		{name: "bad auth_type", manager: TypeAzure, in: map[string]any{"auth_type": "token"}, fields: []string{"auth_type"}},
		{name: "every missing field", manager: TypeAzure, in: map[string]any{"auth_type": "entra"}, fields: []string{"vault_url", "tenant_id", "client_id", "client_secret"}},
		{name: "approle missing", manager: TypeVault, in: map[string]any{"auth_type": "approle", "address": "http://v"}, fields: []string{"role_id", "secret_id"}},
		{name: "field of another variant", manager: TypeVault, in: map[string]any{"auth_type": "token", "address": "http://v", "token": "t", "role_id": "r"}, fields: []string{"role_id"}},
		{name: "unknown field and non-string", manager: TypeAWS, in: map[string]any{"auth_type": "serviceRole", "colour": "red", "region": 5}, fields: []string{"region", "colour"}},
		{name: "bad url", manager: TypeVault, in: map[string]any{"auth_type": "token", "address": "vault:8200", "token": "t"}, fields: []string{"address"}},
		{name: "assumed role half a key", manager: TypeAWS, in: map[string]any{"auth_type": "assumedRole", "role_arn": "arn", "region": "r", "access_key_id": "A"}, fields: []string{"secret_access_key"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, ps := NormalizeAuth(tc.manager, tc.in)
			var fields []string
			for _, p := range ps {
				fields = append(fields, p.Field)
			}
			if !reflect.DeepEqual(fields, tc.fields) {
				t.Fatalf("problems %v, want fields %v", ps, tc.fields)
			}
			if tc.want != nil && !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("got %v, want %v", got, tc.want)
			}
		})
	}
}

func TestMergeAuth(t *testing.T) {
	stored := map[string]string{"auth_type": "approle", "address": "http://v", "role_id": "r1", "secret_id": "secret-id-5678", "namespace": "ns"}
	got := MergeAuth(TypeVault, stored, map[string]any{"role_id": "r2", "secret_id": "****5678", "namespace": nil})
	want := map[string]any{"auth_type": "approle", "address": "http://v", "role_id": "r2", "secret_id": "secret-id-5678"}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("merge: %v", got)
	}
	got = MergeAuth(TypeVault, stored, map[string]any{"vault_auth_type": "token", "token": "t"})
	if !reflect.DeepEqual(got, map[string]any{"auth_type": "token", "token": "t"}) {
		t.Fatalf("variant switch: %v", got)
	}
}

func TestMask(t *testing.T) {
	m := MaskAuth(map[string]string{"token": "hvs.abcdefgh1234", "secret_id": "short", "address": "http://v"})
	if m["token"] != "****1234" || m["secret_id"] != "****" || m["address"] != "http://v" {
		t.Fatal(m)
	}
	if strings.Contains(m["token"], "abcd") {
		t.Fatal("mask leaks")
	}
}
