package counters

import (
	"fmt"
	"log/slog"
	"strings"

	"github.com/llm-gateway/gateway/store"
)

// EnvRedisURL selects the Redis counter (redis://[:password@]host:port/db);
// unset or empty keeps the embedded one.
const EnvRedisURL = "GATEWAY_LIMITS_REDIS_URL"

// FromEnv builds the gateway's Counter from its environment: Redis when
// EnvRedisURL is set (an unreachable Redis is an error, not a silent
// fallback, since replicas would stop sharing limits), else the embedded
// counter saved to st.
func FromEnv(getenv func(string) string, st store.Store, logger *slog.Logger) (Counter, error) {
	if logger == nil {
		logger = slog.Default()
	}
	if u := strings.TrimSpace(getenv(EnvRedisURL)); u != "" {
		r, err := NewRedis(RedisOptions{URL: u})
		if err != nil {
			return nil, fmt.Errorf("%s: %w", EnvRedisURL, err)
		}
		logger.Info("limit counters are in Redis", "addr", r.Addr())
		return r, nil
	}
	m, err := NewMemory(MemoryOptions{Store: st, Logger: logger})
	if err != nil {
		return nil, err
	}
	logger.Debug("limit counters are embedded", "save_interval", DefaultSaveInterval)
	return m, nil
}
