package adminsvc

import "weak"

// Views of the JWT verification cache for the tests of package
// adminsvc_test.

// CachedJWTs is how many tokens j keeps verified.
func (j *JWTAuth) CachedJWTs() int {
	j.cache.mu.RLock()
	defer j.cache.mu.RUnlock()
	return len(j.cache.entries)
}

// JWTCached reports whether j keeps token verified.
func (j *JWTAuth) JWTCached(token string) bool {
	_, ok := j.cache.get(token)
	return ok
}

// SetJWTCacheSize bounds the tokens j keeps verified.
func (j *JWTAuth) SetJWTCacheSize(n int) { j.cache.max = n }

// WatchWSIndex reports, when called later, whether the workspace index k
// holds now has since been garbage-collected.
func (k *Keys) WatchWSIndex() (collected func() bool) {
	w := weak.Make(k.ws.Load())
	return func() bool { return w.Value() == nil }
}
