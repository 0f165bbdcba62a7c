package vertex

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/llm-gateway/gateway/core"
)

// testKey is one RSA key for the tests (1024 bits: fast to make).
var testKey = func() *rsa.PrivateKey {
	k, err := rsa.GenerateKey(rand.Reader, 1024)
	if err != nil {
		panic(err)
	}
	return k
}()

// serviceAccount is a service-account key's JSON for email, its token_uri
// tokenURI.
func serviceAccount(t *testing.T, email, tokenURI string) string {
	der, err := x509.MarshalPKCS8PrivateKey(testKey)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(map[string]string{"type": "service_account", "project_id": "my-project-1", "private_key_id": "kid-1",
		"private_key": string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der})), "client_email": email, "token_uri": tokenURI})
	return string(b)
}

// tokenServer is Google's token endpoint: it checks the JWT bearer
// assertion (RS256 by testKey, the claims) and answers a new token
// "tok-<n>-<client email>" valid for an hour; an assertion for
// "refused@..." gets invalid_grant. With hold, it answers only once hold
// is closed.
func tokenServer(t *testing.T, calls *atomic.Int32, hold ...chan struct{}) *httptest.Server {
	var srv *httptest.Server
	srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := calls.Add(1)
		for _, h := range hold {
			<-h
		}
		r.ParseForm()
		parts := strings.Split(r.PostForm.Get("assertion"), ".")
		if r.PostForm.Get("grant_type") != "urn:ietf:params:oauth:grant-type:jwt-bearer" || len(parts) != 3 {
			t.Errorf("token request %v", r.PostForm)
		}
		dec := base64.RawURLEncoding
		header, _ := dec.DecodeString(parts[0])
		claimsJSON, _ := dec.DecodeString(parts[1])
		sig, _ := dec.DecodeString(parts[2])
		digest := sha256.Sum256([]byte(parts[0] + "." + parts[1]))
		if err := rsa.VerifyPKCS1v15(&testKey.PublicKey, crypto.SHA256, digest[:], sig); err != nil {
			t.Errorf("signature: %v", err)
		}
		var claims struct {
			Iss, Scope, Aud string
			Iat, Exp        int64
		}
		json.Unmarshal(claimsJSON, &claims)
		if string(header) != `{"alg":"RS256","typ":"JWT","kid":"kid-1"}` || claims.Scope != scope || claims.Aud != srv.URL+"/token" || claims.Exp-claims.Iat != 3600 {
			t.Errorf("assertion %s %s", header, claimsJSON)
		}
		w.Header().Set("Content-Type", "application/json")
		if strings.HasPrefix(claims.Iss, "refused@") {
			w.WriteHeader(400)
			io.WriteString(w, `{"error":"invalid_grant","error_description":"Invalid JWT Signature."}`)
			return
		}
		io.WriteString(w, `{"access_token":"tok-`+strconv.Itoa(int(n))+`-`+claims.Iss+`","expires_in":3600,"token_type":"Bearer"}`)
	}))
	t.Cleanup(srv.Close)
	return srv
}

// TestServiceAccountToken: a key's token is got once and reused until
// shortly before it expires; another key gets its own; a token endpoint's
// refusal is a 502 with its OAuth error, a key that cannot sign a 400
// naming vertex_service_account_json, neither showing the key.
func TestServiceAccountToken(t *testing.T) {
	var calls atomic.Int32
	srv := tokenServer(t, &calls)
	now := time.Unix(1_800_000_000, 0)
	p := New()
	p.now = func() time.Time { return now }
	p.UseGuardedClient(srv.Client())
	a, b := serviceAccount(t, "a@p.iam.gserviceaccount.com", srv.URL+"/token"), serviceAccount(t, "b@p.iam.gserviceaccount.com", srv.URL+"/token")
	for _, tc := range []struct {
		name    string
		key     string
		advance time.Duration
		want    string
		calls   int32
	}{
		{"first", a, 0, "tok-1-a@p.iam.gserviceaccount.com", 1},
		{"cached", a, 0, "tok-1-a@p.iam.gserviceaccount.com", 1},
		{"still cached", a, 54 * time.Minute, "tok-1-a@p.iam.gserviceaccount.com", 1},
		{"another key", b, 0, "tok-2-b@p.iam.gserviceaccount.com", 2},
		{"near expiry", a, time.Minute, "tok-3-a@p.iam.gserviceaccount.com", 3},
	} {
		now = now.Add(tc.advance)
		got, err := p.accessToken(context.Background(), tc.key)
		if err != nil || got != tc.want || calls.Load() != tc.calls {
			t.Errorf("%s: %q %v after %d calls", tc.name, got, err, calls.Load())
		}
	}

	withKey := func(pemKey string) string {
		var m map[string]string
		json.Unmarshal([]byte(a), &m)
		m["private_key"] = pemKey
		b, _ := json.Marshal(m)
		return string(b)
	}
	ec, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	ecDER, _ := x509.MarshalPKCS8PrivateKey(ec)
	pkcs1 := withKey(string(pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(testKey)})))
	if tok, err := p.accessToken(context.Background(), pkcs1); err != nil || !strings.HasPrefix(tok, "tok-") {
		t.Errorf("PKCS #1 key: %q %v", tok, err)
	}
	for _, tc := range []struct {
		name, key string
		status    int
		message   string
	}{
		{"refused", serviceAccount(t, "refused@p.iam.gserviceaccount.com", srv.URL+"/token"), 502, "invalid_grant Invalid JWT Signature."},
		{"EC key", withKey(string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: ecDER}))), 400, "not an RSA key"},
		{"not a key", withKey(string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: []byte("junk")}))), 400, "not a PKCS #8 or PKCS #1 key"},
		{"not PEM", withKey("MIIE..."), 400, "not a PEM key"},
		{"token_uri with a user", serviceAccount(t, "a@p.iam.gserviceaccount.com", "https://u:p@oauth2.example/token"), 400, "token_uri"},
		{"token_uri not http", serviceAccount(t, "a@p.iam.gserviceaccount.com", "file:///etc/passwd"), 400, "token_uri"},
	} {
		_, err := p.accessToken(context.Background(), tc.key)
		ce, ok := err.(*core.Error)
		if !ok || ce.Status != tc.status || !strings.Contains(ce.Message, tc.message) || strings.Contains(ce.Message, "PRIVATE KEY") {
			t.Errorf("%s: %v", tc.name, err)
			continue
		}
		if tc.status == 400 && ce.Param != paramServiceAccount {
			t.Errorf("%s: param %q", tc.name, ce.Param)
		}
	}
}

// TestBuildRequestServiceAccount: a target's service-account key gets the
// Authorization token in place of the caller's.
func TestBuildRequestServiceAccount(t *testing.T) {
	var calls atomic.Int32
	srv := tokenServer(t, &calls)
	p := New()
	p.UseGuardedClient(srv.Client())
	target := core.Target{Provider: Name, APIKey: "caller-token", Vertex: core.VertexSettings{ProjectID: "my-project-1", Region: "us-central1",
		ServiceAccountJSON: serviceAccount(t, "a@p.iam.gserviceaccount.com", srv.URL+"/token")}}
	req := &core.Request{Endpoint: core.EndpointChatComplete, Model: "gemini-2.5-flash", Body: []byte(`{"model":"gemini-2.5-flash","messages":[{"role":"user","content":"hi"}]}`)}
	hr, err := p.BuildRequest(context.Background(), req, &target)
	if err != nil || hr.Header.Get("Authorization") != "Bearer tok-1-a@p.iam.gserviceaccount.com" {
		t.Fatalf("%v %v", err, hr)
	}
}

// TestServiceAccountTokenOneExchange: requests that miss the cache while
// an exchange for their key runs wait for it and share its token, so a
// cold cache under load costs one exchange, not one per request; a
// waiter whose request ends stops waiting.
func TestServiceAccountTokenOneExchange(t *testing.T) {
	var calls atomic.Int32
	release := make(chan struct{})
	srv := tokenServer(t, &calls, release)
	p := New()
	p.UseGuardedClient(srv.Client())
	key := serviceAccount(t, "a@p.iam.gserviceaccount.com", srv.URL+"/token")
	type result struct {
		tok string
		err error
	}
	results := make(chan result, 8)
	for range 8 {
		go func() {
			tok, err := p.accessToken(context.Background(), key)
			results <- result{tok, err}
		}()
	}
	time.Sleep(50 * time.Millisecond) // lets them all miss the cache; not a timed assertion
	ended, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := p.accessToken(ended, key); err == nil {
		t.Error("a waiter whose request has ended got a token")
	}
	close(release)
	for range 8 {
		if r := <-results; r.err != nil || r.tok != "tok-1-a@p.iam.gserviceaccount.com" {
			t.Errorf("token %q, %v", r.tok, r.err)
		}
	}
	if n := calls.Load(); n != 1 {
		t.Errorf("%d exchanges for one key, want 1", n)
	}
}

// TestRefusedBeforeTokenExchange: with a service-account key, a request
// the provider refuses is a 400 naming the field before any call, the
// token exchange included.
func TestRefusedBeforeTokenExchange(t *testing.T) {
	var calls atomic.Int32
	srv := tokenServer(t, &calls)
	p := New()
	p.UseGuardedClient(srv.Client())
	target := core.Target{Provider: Name, Vertex: core.VertexSettings{ProjectID: "my-project-1", Region: "us-central1",
		ServiceAccountJSON: serviceAccount(t, "a@p.iam.gserviceaccount.com", srv.URL+"/token")}}
	for _, tc := range []struct {
		name     string
		endpoint core.Endpoint
		body     string
		param    string
	}{
		{"another publisher's embeddings", core.EndpointEmbed, `{"model":"claude-embedding-1","input":"hi"}`, "model"},
		{"token ids", core.EndpointEmbed, `{"model":"text-embedding-005","input":[1,2]}`, "input"},
		{"a chat model's embeddings", core.EndpointEmbed, `{"model":"gemini-2.5-flash","input":"hi"}`, "model"},
		{"gemini on messages", core.EndpointMessages, `{"model":"gemini-2.5-flash","max_tokens":8,"messages":[]}`, "model"},
		{"another model's chat", core.EndpointChatComplete, `{"model":"llama-4","messages":[{"role":"user","content":"hi"}]}`, "model"},
	} {
		var in struct{ Model string }
		json.Unmarshal([]byte(tc.body), &in)
		_, err := p.BuildRequest(context.Background(), &core.Request{Endpoint: tc.endpoint, Model: in.Model, Body: []byte(tc.body)}, &target)
		if ce, ok := err.(*core.Error); !ok || ce.Status != 400 || ce.Param != tc.param {
			t.Errorf("%s: %v, want a 400 naming %s", tc.name, err, tc.param)
		}
	}
	if n := calls.Load(); n != 0 {
		t.Errorf("%d token exchanges for refused requests", n)
	}
}
