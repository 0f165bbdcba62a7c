package core

// CacheStatus is the value of the x-gateway-cache-status response header
// and of a log record's cache_status: how the response cache took a
// request.
type CacheStatus string

// Cache statuses.
const (
	CacheHit          CacheStatus = "HIT"
	CacheMiss         CacheStatus = "MISS"
	CacheRefresh      CacheStatus = "REFRESH"
	CacheDisabled     CacheStatus = "DISABLED"
	CacheSemanticHit  CacheStatus = "SEMANTIC HIT"
	CacheSemanticMiss CacheStatus = "SEMANTIC MISS"
)

// Hit reports whether s means a cached answer was served: no provider was
// called, so the request costs nothing.
func (s CacheStatus) Hit() bool { return s == CacheHit || s == CacheSemanticHit }
