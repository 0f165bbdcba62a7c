package main

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestJWTAndAuditLog runs the real binary with a JWKS file: a JWT signed by
// its key authenticates (admin read and data plane), a forged one is
// refused, and after a restart (SIGTERM flushes the audit writer) the admin
// POST and the failed authentications are served at /v1/audit-logs.
func TestJWTAndAuditLog(t *testing.T) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	forger, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	b64 := base64.RawURLEncoding
	pub, _ := key.PublicKey.Bytes()
	jwks, _ := json.Marshal(map[string]any{"keys": []any{map[string]any{"kty": "EC", "kid": "e2e", "crv": "P-256",
		"x": b64.EncodeToString(pub[1:33]), "y": b64.EncodeToString(pub[33:])}}})
	jwksFile := filepath.Join(t.TempDir(), "jwks.json")
	if err := os.WriteFile(jwksFile, jwks, 0o600); err != nil {
		t.Fatal(err)
	}
	sign := func(k *ecdsa.PrivateKey, claims map[string]any) string {
		h, _ := json.Marshal(map[string]any{"alg": "ES256", "kid": "e2e"})
		claims["iss"], claims["exp"] = "e2e-issuer", time.Now().Add(time.Hour).Unix()
		c, _ := json.Marshal(claims)
		input := b64.EncodeToString(h) + "." + b64.EncodeToString(c)
		sum := sha256.Sum256([]byte(input))
		r, s, err := ecdsa.Sign(rand.Reader, k, sum[:])
		if err != nil {
			t.Fatal(err)
		}
		sig := make([]byte, 64)
		r.FillBytes(sig[:32])
		s.FillBytes(sig[32:])
		return input + "." + b64.EncodeToString(sig)
	}
	jwtEnv := []string{"GATEWAY_JWT_JWKS_FILE=" + jwksFile, "GATEWAY_JWT_ISSUER=e2e-issuer"}
	begin := time.Now().Add(-time.Minute)
	e := &env{dataDir: t.TempDir()}
	e.mock = start(t, "mockprovider", nil, "--addr", "127.0.0.1:0")
	e.gw = e.startGateway(t, jwtEnv...)

	orgToken := sign(key, map[string]any{"sub": "ops-bot", "role": "admin", "scope": "organisation_service_api_keys.list"})
	if resp := do(t, "GET", e.gw.URL+"/v1/api-keys", nil, "x-gateway-api-key: "+orgToken); resp.StatusCode != 200 {
		t.Fatalf("organisation JWT: %d %s", resp.StatusCode, readAll(t, resp))
	}
	wsToken := sign(key, map[string]any{"sub": "alice", "workspace_id": "default", "scope": "completions.write"})
	if resp := e.call(t, "POST", "/v1/chat/completions", chatBody(nil), "x-gateway-api-key: "+wsToken); resp.StatusCode != 200 {
		t.Fatalf("workspace JWT on the data plane: %d %s", resp.StatusCode, readAll(t, resp))
	}
	forged := sign(forger, map[string]any{"sub": "mallory", "role": "owner"})
	if msg := expectError(t, do(t, "GET", e.gw.URL+"/v1/api-keys", nil, "x-gateway-api-key: "+forged), 401).Error.Message; !strings.Contains(msg, "bad signature") {
		t.Fatalf("forged JWT: %s", msg)
	}
	expectError(t, e.call(t, "POST", "/v1/chat/completions", chatBody(nil), "x-gateway-api-key: gw-wrong-key-000000000000"), 401)
	resp := e.call(t, "POST", "/v1/configs", map[string]any{"name": "audited", "workspace_id": "default",
		"config": map[string]any{"provider": "openai", "api_key": "sk-e2e-secret-0123456789"}})
	if resp.StatusCode != 200 {
		t.Fatalf("create config: %d %s", resp.StatusCode, readAll(t, resp))
	}
	resp.Body.Close()

	e.gw.stop(t) // flushes the queued audit records
	e.gw = e.startGateway(t, jwtEnv...)
	q := url.Values{"start_time": {begin.UTC().Format(time.RFC3339)}, "end_time": {time.Now().Add(time.Minute).UTC().Format(time.RFC3339)}}
	var list struct {
		Object string           `json:"object"`
		Total  int              `json:"total"`
		Data   []map[string]any `json:"data"`
	}
	raw := readAll(t, e.call(t, "GET", "/v1/audit-logs?"+q.Encode(), nil))
	if err := json.Unmarshal(raw, &list); err != nil || list.Object != "list" {
		t.Fatalf("audit logs: %s", raw)
	}
	var created, badKey, badJWT bool
	for _, r := range list.Data {
		switch {
		case r["action"] == "create" && r["resource_type"] == "configs" && r["response_status_code"] == float64(200):
			created = true
		case r["action"] == "authenticate" && r["user_type"] == "api_key" && r["uri"] == "/v1/chat/completions":
			badKey = true
		case r["action"] == "authenticate" && r["user_type"] == "user" && strings.Contains(r["error"].(string), "bad signature"):
			badJWT = true
		}
	}
	if !created || !badKey || !badJWT || list.Total != 3 {
		t.Fatalf("audit log misses records (create %v, bad key %v, bad JWT %v): %s", created, badKey, badJWT, raw)
	}
	for _, secret := range []string{"sk-e2e-secret-0123456789", adminKey, forged} {
		if strings.Contains(string(raw), secret) {
			t.Fatalf("%q in the audit log in clear", secret)
		}
	}
}
