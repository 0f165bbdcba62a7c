package adminsvc

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"maps"
	"sync"
	"sync/atomic"
	"time"

	"github.com/llm-gateway/gateway/core"
	"github.com/llm-gateway/gateway/store"
)

// keyPrefix starts every API key the gateway issues, so a leaked key is
// recognisable in a secret scanner.
const keyPrefix = "gw-"

// newKeySecret returns a fresh random API key.
func newKeySecret() string {
	var b [32]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic(fmt.Sprintf("crypto/rand failed: %v", err))
	}
	return keyPrefix + base64.RawURLEncoding.EncodeToString(b[:])
}

// hashKey is how an API key is stored: the hex of its keySum. Keys are
// 256-bit random values, so a fast hash is as safe here as a slow one.
func hashKey(secret string) string {
	sum := keySum(secret)
	return hex.EncodeToString(sum[:])
}

// keySum is the SHA-256 of an API key, what the snapshot is keyed by. The
// secret is copied into a stack buffer, so a lookup does not allocate (a
// secret longer than the buffer still hashes the same, on the heap).
func keySum(secret string) [sha256.Size]byte {
	var buf [128]byte
	return sha256.Sum256(append(buf[:0], secret...))
}

// maskKey keeps enough of a key to recognise it: "gw-A****wxyz". A short
// key (an operator-chosen bootstrap key may have only 16 characters) shows
// its last 4 characters only, so the mask never gives half of it away.
func maskKey(secret string) string {
	switch {
	case len(secret) < 12:
		return "****"
	case len(secret) < 32:
		return "****" + secret[len(secret)-4:]
	}
	return secret[:4] + "****" + secret[len(secret)-4:]
}

// Keys is the in-memory snapshot of API keys that the data plane
// authenticates against. Reload rebuilds it from the store and swaps it in
// atomically, so a change made through the admin API is visible to the next
// request without a disk read on the request path. Callers that change keys,
// users or workspace memberships call Reload afterwards.
type Keys struct {
	st  store.Store
	now func() time.Time
	// reload serialises Reload: without it a reload that read the store
	// before a concurrent change could store its older snapshot after the
	// newer one, and a just-created key would not authenticate (or a
	// deleted one would) until the next change.
	reload sync.Mutex
	snap   atomic.Pointer[map[[sha256.Size]byte]keyEntry]
	// ws indexes workspaces by id and slug, for JWT workspace claims.
	ws atomic.Pointer[wsIndex]
}

// keyEntry is what one secret hash authenticates as. A key being rotated
// has two entries: the new secret, and the old one valid until retiredAt.
type keyEntry struct {
	p         *core.Principal
	status    string
	retiredAt time.Time
}

// NewKeys loads the snapshot from st.
func NewKeys(st store.Store, now func() time.Time) (*Keys, error) {
	if now == nil {
		now = time.Now
	}
	k := &Keys{st: st, now: now}
	return k, k.Reload()
}

// Reload rebuilds the snapshot from the store.
func (k *Keys) Reload() error {
	k.reload.Lock()
	defer k.reload.Unlock()
	var (
		keys    []store.APIKey
		users   []store.User
		members []store.Member
		ws      *wsIndex
	)
	err := k.st.View(func(tx store.Tx) (err error) {
		if keys, err = store.List[store.APIKey](tx, store.BucketAPIKeys); err != nil {
			return err
		}
		if users, err = store.List[store.User](tx, store.BucketUsers); err != nil {
			return err
		}
		if members, err = store.List[store.Member](tx, store.BucketMembers); err != nil {
			return err
		}
		ws, err = loadWSIndex(tx)
		return err
	})
	if err != nil {
		return fmt.Errorf("load api keys: %w", err)
	}
	orgRole := make(map[string]string, len(users))
	for _, u := range users {
		orgRole[u.ID] = u.Role
	}
	wsRole := make(map[string]string, len(members))
	for _, m := range members {
		wsRole[store.MemberKey(m.WorkspaceID, m.UserID)] = m.Role
	}
	m := make(map[[sha256.Size]byte]keyEntry, len(keys))
	for _, rec := range keys {
		p := principalOf(rec, orgRole, wsRole, ws)
		if sum, ok := storedSum(rec.Hash); ok {
			m[sum] = keyEntry{p: p, status: rec.Status}
		}
		if sum, ok := storedSum(rec.PrevHash); ok && rec.TransitionExpiresAt != nil {
			m[sum] = keyEntry{p: p, status: rec.Status, retiredAt: *rec.TransitionExpiresAt}
		}
	}
	k.snap.Store(&m)
	k.ws.Store(ws)
	return nil
}

// storedSum decodes a stored hashKey; a hash that is not one (empty, or
// not 64 hex digits) could match no secret, and is left out.
func storedSum(hash string) (sum [sha256.Size]byte, ok bool) {
	if len(hash) != hex.EncodedLen(len(sum)) {
		return sum, false
	}
	_, err := hex.Decode(sum[:], []byte(hash))
	return sum, err == nil
}

// principalOf is who key rec acts as: its roles (keyRoles; a workspace-user
// key acts as its user) and scopes. Its default metadata is the workspace's defaults.metadata with the key's
// own on top.
func principalOf(rec store.APIKey, orgRole, wsRole map[string]string, ws *wsIndex) *core.Principal {
	p := core.Principal{
		KeyID: rec.ID, KeyType: rec.Type, OrganisationID: rec.OrganisationID,
		WorkspaceID: rec.WorkspaceID, UserID: rec.UserID,
	}
	var userRole, memberRole string
	if rec.Type == core.KeyTypeWorkspaceUser {
		userRole, memberRole = orgRole[rec.UserID], wsRole[store.MemberKey(rec.WorkspaceID, rec.UserID)]
	}
	p.Role, p.WorkspaceRole = keyRoles(rec, userRole, memberRole)
	if rec.ExpiresAt != nil {
		p.ExpiresAt = *rec.ExpiresAt
	}
	if w, ok := ws.byRef[rec.WorkspaceID]; ok && w.Defaults != nil {
		p.DefaultMetadata = w.Defaults.Metadata
	}
	if d := rec.Defaults; d != nil {
		p.DefaultMetadata, p.DefaultConfig = mergeMetadata(p.DefaultMetadata, d.Metadata), d.ConfigID
		p.NoConfigOverride = d.AllowConfigOverride != nil && !*d.AllowConfigOverride
	}
	return core.NewPrincipal(p, rec.Scopes)
}

// Authenticate looks a presented key up in the snapshot.
func (k *Keys) Authenticate(secret string) (*core.Principal, *core.Error) {
	if secret == "" {
		return nil, core.Unauthorized("missing API key: send it in the x-gateway-api-key header")
	}
	e, ok := (*k.snap.Load())[keySum(secret)]
	if !ok {
		return nil, core.Unauthorized("invalid API key: no key matches the x-gateway-api-key header")
	}
	now := k.now()
	if !e.retiredAt.IsZero() && !now.Before(e.retiredAt) {
		return nil, core.Unauthorized("API key %s was rotated: this secret stopped working at %s; use the new secret",
			e.p.KeyID, e.retiredAt.UTC().Format(time.RFC3339))
	}
	if e.p.Expired(now) || e.status == store.KeyStatusExpired {
		return nil, core.Unauthorized("API key %s expired at %s", e.p.KeyID, e.p.ExpiresAt.UTC().Format(time.RFC3339))
	}
	return e.p, nil
}

// mergeMetadata is base with over's entries on top (the key's default
// metadata wins over its workspace's); either may be nil.
func mergeMetadata(base, over map[string]string) map[string]string {
	if len(base) == 0 {
		return over
	}
	if len(over) == 0 {
		return base
	}
	m := make(map[string]string, len(base)+len(over))
	maps.Copy(m, base)
	maps.Copy(m, over)
	return m
}
