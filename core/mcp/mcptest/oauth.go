package mcptest

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
)

// OAuthServer is a fake resource server behind OAuth as MCP's
// authorization has it: Protected at Path and below, answered only with
// the current access token (else 401 naming the protected resource
// metadata), and its own authorization server: metadata, dynamic
// registration (/register), an authorization endpoint that approves at
// once (/authorize redirects to the redirect URI with a code), and a token
// endpoint for codes (checking PKCE and the resource) and refresh tokens.
// URL must be set to the server's base URL once it listens.
type OAuthServer struct {
	// Protected is the resource (a Server, an a2atest.Agent, ...).
	Protected http.Handler
	// Path is where it is served ("" means /mcp); its URL is the resource.
	Path string
	URL  string
	// ExpiresIn is the access tokens' lifetime in seconds (0: 3600).
	ExpiresIn int
	// NoRegistration leaves dynamic registration out: the client
	// "client-1" is registered by hand, with ClientSecret when it is set
	// (which the token endpoint then requires), and with any redirect URI.
	NoRegistration bool
	ClientSecret   string
	// NoResource leaves out the protected resource metadata (the 401
	// names none) and expects no resource indicator: an authorization
	// server an agent card names. PublicCard serves the agent card under
	// Path without a token.
	NoResource bool
	PublicCard bool

	mu        sync.Mutex
	challenge string // of the last authorization
	redirect  string
	issued    int    // tokens issued so far
	access    string // the valid access token
	refresh   string // the valid refresh token
	refreshes int
}

// Refreshes is the number of refresh-token grants answered.
func (o *OAuthServer) Refreshes() int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.refreshes
}

// Expire makes the current access token invalid (the refresh token stays).
func (o *OAuthServer) Expire() {
	o.mu.Lock()
	o.access = "expired"
	o.mu.Unlock()
}

func (o *OAuthServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	json200 := func(v any) {
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(v)
	}
	path := o.path()
	if o.PublicCard && strings.HasPrefix(r.URL.Path, path+"/.well-known/") {
		o.Protected.ServeHTTP(w, r)
		return
	}
	if r.URL.Path == path || strings.HasPrefix(r.URL.Path, path+"/") {
		o.serveProtected(w, r)
		return
	}
	switch r.URL.Path {
	case "/.well-known/oauth-protected-resource" + path, "/.well-known/oauth-protected-resource":
		if o.NoResource {
			http.NotFound(w, r)
			return
		}
		json200(map[string]any{"resource": o.URL + path, "authorization_servers": []string{o.URL}, "scopes_supported": []string{"tools"}})
	case "/.well-known/oauth-authorization-server":
		md := map[string]any{"issuer": o.URL, "authorization_endpoint": o.URL + "/authorize", "token_endpoint": o.URL + "/token",
			"registration_endpoint": o.URL + "/register", "code_challenge_methods_supported": []string{"S256"}}
		if o.NoRegistration {
			delete(md, "registration_endpoint")
		}
		json200(md)
	case "/register":
		if o.NoRegistration {
			http.NotFound(w, r)
			return
		}
		var in struct {
			RedirectURIs []string `json:"redirect_uris"`
		}
		if json.NewDecoder(r.Body).Decode(&in) != nil || len(in.RedirectURIs) != 1 {
			http.Error(w, `{"error":"invalid_client_metadata"}`, http.StatusBadRequest)
			return
		}
		o.mu.Lock()
		o.redirect = in.RedirectURIs[0]
		o.mu.Unlock()
		w.WriteHeader(http.StatusCreated)
		json.NewEncoder(w).Encode(map[string]any{"client_id": "client-1"})
	case "/authorize":
		q := r.URL.Query()
		o.mu.Lock()
		if o.NoRegistration {
			o.redirect = q.Get("redirect_uri") // registered by hand
		}
		ok := q.Get("client_id") == "client-1" && q.Get("redirect_uri") == o.redirect && q.Get("code_challenge_method") == "S256" &&
			q.Get("resource") == o.resource() && q.Get("response_type") == "code"
		o.challenge = q.Get("code_challenge")
		o.mu.Unlock()
		if !ok {
			http.Error(w, "bad authorization request", http.StatusBadRequest)
			return
		}
		http.Redirect(w, r, q.Get("redirect_uri")+"?"+url.Values{"code": {"code-1"}, "state": {q.Get("state")}}.Encode(), http.StatusFound)
	case "/token":
		o.token(w, r)
	default:
		http.NotFound(w, r)
	}
}

// resource is the resource indicator the server expects: none with
// NoResource.
func (o *OAuthServer) resource() string {
	if o.NoResource {
		return ""
	}
	return o.URL + o.path()
}

// path is where the protected resource is served.
func (o *OAuthServer) path() string {
	if o.Path == "" {
		return "/mcp"
	}
	return o.Path
}

// serveProtected answers a request to the resource: with the current
// access token only.
func (o *OAuthServer) serveProtected(w http.ResponseWriter, r *http.Request) {
	o.mu.Lock()
	valid := o.access != "" && r.Header.Get("Authorization") == "Bearer "+o.access
	o.mu.Unlock()
	if !valid {
		w.Header().Set("WWW-Authenticate", `Bearer resource_metadata="`+o.URL+`/.well-known/oauth-protected-resource`+o.path()+`"`)
		if o.NoResource {
			w.Header().Set("WWW-Authenticate", "Bearer")
		}
		http.Error(w, "unauthorized", http.StatusUnauthorized)
		return
	}
	o.Protected.ServeHTTP(w, r)
}

// token answers the token endpoint's two grants.
func (o *OAuthServer) token(w http.ResponseWriter, r *http.Request) {
	r.ParseForm()
	f := r.PostForm
	o.mu.Lock()
	defer o.mu.Unlock()
	fail := func() {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		fmt.Fprint(w, `{"error":"invalid_grant"}`)
	}
	if f.Get("client_id") != "client-1" || f.Get("resource") != o.resource() || f.Get("client_secret") != o.ClientSecret {
		fail()
		return
	}
	switch f.Get("grant_type") {
	case "authorization_code":
		sum := sha256.Sum256([]byte(f.Get("code_verifier")))
		if f.Get("code") != "code-1" || f.Get("redirect_uri") != o.redirect || base64.RawURLEncoding.EncodeToString(sum[:]) != o.challenge {
			fail()
			return
		}
	case "refresh_token":
		if f.Get("refresh_token") == "" || f.Get("refresh_token") != o.refresh {
			fail()
			return
		}
		o.refreshes++
	default:
		fail()
		return
	}
	o.issued++
	n := strconv.Itoa(o.issued)
	o.access, o.refresh = "access-"+n, "refresh-"+n
	expires := o.ExpiresIn
	if expires == 0 {
		expires = 3600
	}
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(map[string]any{"access_token": o.access, "refresh_token": o.refresh, "expires_in": expires, "token_type": "Bearer"})
}
