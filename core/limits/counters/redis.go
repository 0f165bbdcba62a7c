package counters

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
)

// DefaultKeyPrefix starts every Redis key the counters write.
const DefaultKeyPrefix = "gateway:limits:"

// RedisOptions configure the Redis counter.
type RedisOptions struct {
	// URL is redis://[:password@]host:port/db; when set it replaces Addr,
	// Password and DB.
	URL      string
	Addr     string // host:port
	Password string
	DB       int
	// KeyPrefix starts every key (default DefaultKeyPrefix): windows are
	// hashes at prefix+"window:"+key, usage totals strings at
	// prefix+"usage:"+key.
	KeyPrefix string
	// DialTimeout bounds connecting and the check at start (default 5 s).
	DialTimeout time.Duration
}

// Redis is the Counter shared by several gateway replicas: each Take or Add
// runs the sliding window (window.go) in one Lua script, atomic in Redis.
type Redis struct {
	c      *redis.Client
	prefix string
}

// windowScript is series.apply on a hash whose fields are bucket starts
// (ms) and values counts.
// KEYS[1]: the hash. ARGV: cutoff, current bucket start, n, limit (-1 for
// Add), TTL in ms (window + one bucket, so an idle hash goes away).
// Returns {allowed, count, oldest bucket start, 1 if non-empty}.
var windowScript = redis.NewScript(`
local cutoff = tonumber(ARGV[1])
local n = tonumber(ARGV[3])
local limit = tonumber(ARGV[4])
local h = redis.call('HGETALL', KEYS[1])
local count, oldest = 0, nil
for i = 1, #h, 2 do
  local start = tonumber(h[i])
  if start <= cutoff then
    redis.call('HDEL', KEYS[1], h[i])
  else
    count = count + tonumber(h[i + 1])
    if oldest == nil or start < oldest then oldest = start end
  end
end
local allowed = 1
if limit >= 0 and count + n > limit then
  allowed = 0
elseif n > 0 then
  redis.call('HINCRBY', KEYS[1], ARGV[2], n)
  redis.call('PEXPIRE', KEYS[1], ARGV[5])
  count = count + n
  local b = tonumber(ARGV[2])
  if oldest == nil or b < oldest then oldest = b end
end
if oldest == nil then return {allowed, count, 0, 0} end
return {allowed, count, oldest, 1}
`)

// NewRedis connects and checks that Redis answers; an unreachable Redis is
// an error naming its address.
func NewRedis(o RedisOptions) (*Redis, error) {
	ro := &redis.Options{Addr: o.Addr, Password: o.Password, DB: o.DB}
	if o.URL != "" {
		var err error
		if ro, err = redis.ParseURL(o.URL); err != nil {
			// The URL may hold a password: not repeated here.
			return nil, errors.New("counters: invalid Redis URL (want redis://[:password@]host:port/db)")
		}
	}
	if o.DialTimeout <= 0 {
		o.DialTimeout = 5 * time.Second
	}
	if o.KeyPrefix == "" {
		o.KeyPrefix = DefaultKeyPrefix
	}
	ro.DialTimeout = o.DialTimeout
	// No retries: Take, Add and AddUsage are not idempotent, and a retry
	// after a lost answer would count twice. A failed call is an error for
	// the caller to handle.
	ro.MaxRetries = -1
	c := redis.NewClient(ro)
	ctx, cancel := context.WithTimeout(context.Background(), o.DialTimeout)
	defer cancel()
	if err := c.Ping(ctx).Err(); err != nil {
		c.Close()
		return nil, fmt.Errorf("counters: Redis at %s does not answer: %w", ro.Addr, err)
	}
	return &Redis{c: c, prefix: o.KeyPrefix}, nil
}

// Addr is the address of the Redis server.
func (r *Redis) Addr() string { return r.c.Options().Addr }

// Take implements Counter.
func (r *Redis) Take(ctx context.Context, key string, n, limit int64, window time.Duration, now time.Time) (Window, error) {
	st, err := planTake(n, limit, window, now)
	if err != nil {
		return Window{}, err
	}
	return r.apply(ctx, key, st, n, limit, window)
}

// Add implements Counter.
func (r *Redis) Add(ctx context.Context, key string, n int64, window time.Duration, now time.Time) (Window, error) {
	st, err := plan(n, window, now)
	if err != nil {
		return Window{}, err
	}
	return r.apply(ctx, key, st, n, noLimit, window)
}

func (r *Redis) apply(ctx context.Context, key string, st step, n, limit int64, window time.Duration) (Window, error) {
	ttl := st.windowMs + BucketSize(window).Milliseconds()
	res, err := windowScript.Run(ctx, r.c, []string{r.prefix + "window:" + key},
		st.cutoff, st.bucket, n, limit, ttl).Int64Slice()
	if err != nil {
		return Window{}, fmt.Errorf("counters: Redis window %q: %w", key, err)
	}
	if len(res) != 4 {
		return Window{}, fmt.Errorf("counters: Redis window %q: unexpected answer %v", key, res)
	}
	return st.result(res[0] == 1, res[1], res[2], res[3] == 1), nil
}

// AddUsage implements Counter.
func (r *Redis) AddUsage(ctx context.Context, key string, amount float64) (float64, error) {
	v, err := r.c.IncrByFloat(ctx, r.prefix+"usage:"+key, amount).Result()
	if err != nil {
		return 0, fmt.Errorf("counters: Redis usage %q: %w", key, err)
	}
	return v, nil
}

// Usage implements Counter.
func (r *Redis) Usage(ctx context.Context, keys ...string) ([]float64, error) {
	out := make([]float64, len(keys))
	if len(keys) == 0 {
		return out, nil
	}
	rk := make([]string, len(keys))
	for i, k := range keys {
		rk[i] = r.prefix + "usage:" + k
	}
	vals, err := r.c.MGet(ctx, rk...).Result()
	if err != nil {
		return nil, fmt.Errorf("counters: Redis usage: %w", err)
	}
	for i, v := range vals {
		s, ok := v.(string)
		if !ok {
			continue // nil: never counted
		}
		if out[i], err = strconv.ParseFloat(s, 64); err != nil {
			return nil, fmt.Errorf("counters: Redis usage %q: %w", keys[i], err)
		}
	}
	return out, nil
}

// ResetUsage implements Counter.
func (r *Redis) ResetUsage(ctx context.Context, key string) error {
	if err := r.c.Del(ctx, r.prefix+"usage:"+key).Err(); err != nil {
		return fmt.Errorf("counters: Redis usage %q: %w", key, err)
	}
	return nil
}

// Close closes the connections.
func (r *Redis) Close() error { return r.c.Close() }

var _ Counter = (*Redis)(nil)
