package secrets

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"
)

// DefaultKubernetesJWTPath is the service-account token a pod is given.
const DefaultKubernetesJWTPath = "/var/run/secrets/kubernetes.io/serviceaccount/token"

// Vault reads secrets from HashiCorp Vault's KV version 2 engine over its
// HTTP API. Tokens got from an approle or kubernetes login are cached until
// their lease ends.
type Vault struct {
	Client *http.Client
	Now    func() time.Time
	// JWTDirs are the directories a kubernetes jwt_path may name (default
	// /var/run/secrets and /run/secrets): the path is set through the admin
	// API, and the file is sent to the configured Vault address, so it must
	// not be able to name any file on the gateway's host.
	JWTDirs []string

	tokens credCache[cachedToken]
}

// vaultPath splits a secret path "mount/path" into its mount and its path
// in the mount; a path without a slash is in the "secret" mount.
func vaultPath(p string) (mount, path string) {
	p = strings.Trim(p, "/")
	if m, rest, ok := strings.Cut(p, "/"); ok {
		return m, rest
	}
	return "secret", p
}

// Fetch reads the latest version of the secret and returns its key/value
// data as a JSON object.
func (v *Vault) Fetch(ctx context.Context, ref Reference) (string, error) {
	a := ref.Auth
	token, login, err := v.token(ctx, a)
	if err != nil {
		return "", err
	}
	val, status, err := v.read(ctx, a, token, ref.SecretPath)
	if status == http.StatusForbidden && login {
		// A cached login token may have been revoked before its lease
		// ended: log in again once.
		v.tokens.forget(cacheKey(a))
		if token, _, err = v.token(ctx, a); err != nil {
			return "", err
		}
		val, _, err = v.read(ctx, a, token, ref.SecretPath)
	}
	return val, err
}

// read is one GET of the KV v2 data endpoint.
func (v *Vault) read(ctx context.Context, a map[string]string, token, secretPath string) (string, int, error) {
	mount, path := vaultPath(secretPath)
	u := strings.TrimRight(a["address"], "/") + "/v1/" + url.PathEscape(mount) + "/data/" + escapePath(path)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return "", 0, fmt.Errorf("vault: bad address: %w", err)
	}
	req.Header.Set("X-Vault-Token", token)
	if ns := a["namespace"]; ns != "" {
		req.Header.Set("X-Vault-Namespace", ns)
	}
	res, err := send(v.Client, req, "vault: read "+mount+"/"+path)
	if err != nil {
		return "", 0, err
	}
	var body struct {
		Data *struct {
			Data     map[string]any `json:"data"`
			Metadata struct {
				Version      int    `json:"version"`
				DeletionTime string `json:"deletion_time"`
				Destroyed    bool   `json:"destroyed"`
			} `json:"metadata"`
		} `json:"data"`
	}
	_ = json.Unmarshal(res.body, &body)
	where := mount + "/" + path
	switch {
	case res.status == http.StatusForbidden:
		return "", res.status, managerError(ErrDenied, "vault: permission denied reading %s (the token is invalid or its policy does not allow it)", where)
	case res.status == http.StatusNotFound && body.Data != nil && body.Data.Metadata.Destroyed:
		return "", res.status, managerError(ErrSecretNotFound, "vault: version %d of %s is destroyed", body.Data.Metadata.Version, where)
	case res.status == http.StatusNotFound && body.Data != nil && body.Data.Metadata.DeletionTime != "":
		return "", res.status, managerError(ErrSecretNotFound, "vault: version %d of %s was deleted at %s", body.Data.Metadata.Version, where, body.Data.Metadata.DeletionTime)
	case res.status == http.StatusNotFound:
		return "", res.status, managerError(ErrSecretNotFound, "vault: no secret %s (is the mount a KV version 2 engine?)", where)
	case res.status != http.StatusOK:
		return "", res.status, fmt.Errorf("vault: read %s: HTTP %d", where, res.status)
	case body.Data == nil || body.Data.Data == nil:
		return "", res.status, managerError(ErrSecretNotFound, "vault: %s has no data", where)
	}
	out, err := json.Marshal(body.Data.Data)
	return string(out), res.status, err
}

// escapePath escapes each segment of a slash-separated path.
func escapePath(p string) string {
	segs := strings.Split(p, "/")
	for i, s := range segs {
		segs[i] = url.PathEscape(s)
	}
	return strings.Join(segs, "/")
}

// token returns the client token to use; login reports that it came from
// a login (and may be renewed) rather than from the auth_config.
func (v *Vault) token(ctx context.Context, a map[string]string) (string, bool, error) {
	if a["auth_type"] == "token" {
		return a["token"], false, nil
	}
	now := v.now()
	t, err := v.tokens.get(cacheKey(a), func(t cachedToken) bool { return t.valid(now) }, func() (cachedToken, error) {
		var body map[string]string
		method := a["auth_type"]
		switch method {
		case "approle":
			body = map[string]string{"role_id": a["role_id"], "secret_id": a["secret_id"]}
		case "kubernetes":
			jwt, err := v.jwt(a)
			if err != nil {
				return cachedToken{}, err
			}
			body = map[string]string{"role": a["role"], "jwt": jwt}
		default:
			return cachedToken{}, fmt.Errorf("vault: auth_type %q is not supported", method)
		}
		mount := a["auth_mount"]
		if mount == "" {
			mount = method
		}
		return v.login(ctx, a, mount, body)
	})
	if err != nil {
		return "", false, err
	}
	return t.value, true, nil
}

// login posts to /v1/auth/{mount}/login and reads the client token and its
// lease.
func (v *Vault) login(ctx context.Context, a map[string]string, mount string, body map[string]string) (cachedToken, error) {
	raw, _ := json.Marshal(body)
	u := strings.TrimRight(a["address"], "/") + "/v1/auth/" + escapePath(strings.Trim(mount, "/")) + "/login"
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u, bytes.NewReader(raw))
	if err != nil {
		return cachedToken{}, fmt.Errorf("vault: bad address: %w", err)
	}
	req.Header.Set("Content-Type", "application/json")
	if ns := a["namespace"]; ns != "" {
		req.Header.Set("X-Vault-Namespace", ns)
	}
	now := v.now()
	res, err := send(v.Client, req, "vault: "+a["auth_type"]+" login")
	if err != nil {
		return cachedToken{}, err
	}
	var out struct {
		Auth *struct {
			ClientToken   string `json:"client_token"`
			LeaseDuration int64  `json:"lease_duration"`
		} `json:"auth"`
	}
	switch {
	case res.status == http.StatusBadRequest || res.status == http.StatusForbidden || res.status == http.StatusUnauthorized:
		return cachedToken{}, managerError(ErrDenied, "vault: %s login at auth/%s refused (HTTP %d): check the role and its credentials", a["auth_type"], mount, res.status)
	case res.status != http.StatusOK:
		return cachedToken{}, fmt.Errorf("vault: %s login at auth/%s: HTTP %d", a["auth_type"], mount, res.status)
	case res.decode(&out) != nil || out.Auth == nil || out.Auth.ClientToken == "":
		return cachedToken{}, fmt.Errorf("vault: %s login at auth/%s answered no client token", a["auth_type"], mount)
	}
	return cachedToken{value: out.Auth.ClientToken, expires: expiryAfter(now, time.Duration(out.Auth.LeaseDuration)*time.Second)}, nil
}

// jwt is the kubernetes service-account token: from the auth_config, else
// from jwt_path (default the pod's token file) inside JWTDirs.
func (v *Vault) jwt(a map[string]string) (string, error) {
	if a["jwt"] != "" {
		return a["jwt"], nil
	}
	p := a["jwt_path"]
	if p == "" {
		p = DefaultKubernetesJWTPath
	}
	p = filepath.Clean(p)
	dirs := v.JWTDirs
	if dirs == nil {
		dirs = []string{"/var/run/secrets", "/run/secrets"}
	}
	allowed := false
	for _, d := range dirs {
		if rel, err := filepath.Rel(filepath.Clean(d), p); err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
			allowed = true
		}
	}
	if !allowed {
		return "", fmt.Errorf("vault: jwt_path %s is outside the allowed directories %v", p, dirs)
	}
	raw, err := os.ReadFile(p)
	if err != nil {
		return "", fmt.Errorf("vault: read the kubernetes token file: %w", err)
	}
	return strings.TrimSpace(string(raw)), nil
}

func (v *Vault) now() time.Time {
	if v.Now != nil {
		return v.Now()
	}
	return time.Now()
}

// cacheKey identifies one set of credentials without keeping them in clear
// as a map key.
func cacheKey(a map[string]string) string {
	h := sha256.New()
	keys := make([]string, 0, len(a))
	for k := range a {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		fmt.Fprintf(h, "%s=%q;", k, a[k])
	}
	return hex.EncodeToString(h.Sum(nil))
}
