package core

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
)

// Plugin is a built-in extension: a provider, a strategy, a cache or a check.
// Its concrete interface depends on its kind (the part of its ID before the
// first dot).
type Plugin any

// PluginInfo describes a plugin to the registry. ID is "<kind>.<name>", e.g.
// "providers.openai"; New builds a fresh instance.
type PluginInfo struct {
	ID  string
	New func() Plugin
}

// Plugin kinds.
const (
	KindProviders  = "providers"
	KindStrategies = "strategies"
	KindCache      = "cache"
	KindGuardrails = "guardrails"
)

// The registry is written at init time and read on every request (each
// check, strategy and cache mode is looked up by id), so reads take no lock:
// a write copies the map and swaps it in.
var (
	registryMu sync.Mutex // serialises writers
	registry   atomic.Pointer[map[string]PluginInfo]
)

func registered() map[string]PluginInfo {
	if m := registry.Load(); m != nil {
		return *m
	}
	return nil
}

// Register adds a plugin to the registry. It is called from init functions
// and panics on an empty, malformed or duplicate ID, since that is a
// programming error.
func Register(info PluginInfo) {
	kind, name, ok := strings.Cut(info.ID, ".")
	if !ok || kind == "" || name == "" {
		panic(fmt.Sprintf("core.Register: plugin ID %q is not <kind>.<name>", info.ID))
	}
	if info.New == nil {
		panic(fmt.Sprintf("core.Register: plugin %q has no constructor", info.ID))
	}
	registryMu.Lock()
	defer registryMu.Unlock()
	old := registered()
	if _, dup := old[info.ID]; dup {
		panic(fmt.Sprintf("core.Register: plugin %q registered twice", info.ID))
	}
	next := make(map[string]PluginInfo, len(old)+1)
	maps.Copy(next, old)
	next[info.ID] = info
	registry.Store(&next)
}

// LookupPlugin returns the plugin registered under id.
func LookupPlugin(id string) (PluginInfo, bool) {
	info, ok := registered()[id]
	return info, ok
}

// Plugins returns the plugins of one kind, sorted by ID.
func Plugins(kind string) []PluginInfo {
	var out []PluginInfo
	for id, info := range registered() {
		if strings.HasPrefix(id, kind+".") {
			out = append(out, info)
		}
	}
	slices.SortFunc(out, func(a, b PluginInfo) int { return strings.Compare(a.ID, b.ID) })
	return out
}

// IsProvider reports whether name is a registered provider plugin's name.
func IsProvider(name string) bool {
	_, ok := LookupPlugin(KindProviders + "." + name)
	return ok
}

// ProviderNames lists the registered provider plugins' names, sorted.
func ProviderNames() []string {
	var names []string
	for _, info := range Plugins(KindProviders) {
		names = append(names, strings.TrimPrefix(info.ID, KindProviders+"."))
	}
	return names
}

// Providers instantiates every registered provider plugin, keyed by name.
func Providers() (map[string]Provider, error) {
	out := map[string]Provider{}
	for _, info := range Plugins(KindProviders) {
		p, ok := info.New().(Provider)
		if !ok {
			return nil, fmt.Errorf("plugin %q does not implement core.Provider", info.ID)
		}
		out[p.Name()] = p
	}
	return out, nil
}
