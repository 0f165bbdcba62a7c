// Package store keeps the gateway's admin state. Store is the interface the
// rest of the code uses; Open returns the embedded implementation on bbolt, a
// single file in the data directory. Records are JSON values in one bucket
// per resource.
package store

import (
	"errors"
)

// ErrNotFound is returned when a record does not exist; match it with errors.Is.
var ErrNotFound = errors.New("record not found")

// Bucket names a kind of record.
type Bucket string

// The buckets of the store.
const (
	BucketMeta          Bucket = "meta"
	BucketOrganisations Bucket = "organisations"
	BucketWorkspaces    Bucket = "workspaces"
	BucketUsers         Bucket = "users"
	BucketAPIKeys       Bucket = "api_keys"
	BucketLogs          Bucket = "logs"
	BucketConfigs       Bucket = "configs"
	// BucketConfigVersions holds every version of every saved config, keyed
	// by VersionKey.
	BucketConfigVersions Bucket = "config_versions"
	BucketGuardrails     Bucket = "guardrails"
	BucketPlugins        Bucket = "plugins"
	// BucketPluginModules holds WASM module bytes, keyed by plugin id + "/"
	// + version (zero-padded).
	BucketPluginModules Bucket = "plugin_modules"
	// BucketMembers holds workspace memberships, keyed by workspace id + "/"
	// + user id.
	BucketMembers          Bucket = "workspace_members"
	BucketInvites          Bucket = "invites"
	BucketSettings         Bucket = "settings"
	BucketAuditLogs        Bucket = "audit_logs"
	BucketIntegrations     Bucket = "integrations"
	BucketProviders        Bucket = "providers"
	BucketVirtualKeys      Bucket = "virtual_keys"
	BucketSecretReferences Bucket = "secret_references"
	// BucketOutbox holds e-mail alerts waiting to be sent.
	BucketOutbox             Bucket = "outbox"
	BucketRateLimitPolicies  Bucket = "rate_limit_policies"
	BucketUsageLimitPolicies Bucket = "usage_limit_policies"
	// BucketLimitCounters holds the embedded limit counters, saved
	// periodically and at shutdown.
	BucketLimitCounters Bucket = "limit_counters"
	// BucketUsageStates holds the limits engine's usage-limit state: per
	// group value its status and sent alerts ("v|" keys), per limit its
	// periodic-reset schedule ("s|" keys).
	BucketUsageStates Bucket = "usage_limit_states"
	// BucketFeedback holds feedback on traced requests, keyed by feedback
	// id, which starts with its creation time (see NewFeedbackIDs).
	BucketFeedback Bucket = "feedback"
	BucketPrompts  Bucket = "prompts"
	// BucketPromptVersions holds every version of every saved prompt,
	// keyed by VersionKey.
	BucketPromptVersions Bucket = "prompt_versions"
	// BucketLogExports holds log exports, keyed by export id, which
	// starts with its creation time (NewLogIDs).
	BucketLogExports Bucket = "log_exports"
	// BucketDeployments holds deployments, keyed by id.
	BucketDeployments Bucket = "deployments"
	// BucketMCPIntegrations and BucketMCPServers hold MCP integrations (an
	// MCP server's URL and credentials) and the workspace handles on them.
	BucketMCPIntegrations Bucket = "mcp_integrations"
	BucketMCPServers      Bucket = "mcp_servers"
	// BucketPromptPartials holds prompt partials, keyed by id; their
	// versions are in BucketPartialVersions, keyed by VersionKey.
	BucketPromptPartials  Bucket = "prompt_partials"
	BucketPartialVersions Bucket = "prompt_partial_versions"
	BucketPromptLabels    Bucket = "prompt_labels"
	BucketCollections     Bucket = "prompt_collections"
	// BucketAgentIntegrations and BucketAgentServers hold agent
	// integrations (an A2A agent's URL and credentials) and the workspace
	// handles on them.
	BucketAgentIntegrations Bucket = "agent_integrations"
	BucketAgentServers      Bucket = "agent_servers"
	// BucketOAuthPending holds the OAuth authorizations of MCP and agent
	// integrations under way, keyed by OAuthPendingKey of their state.
	BucketOAuthPending Bucket = "oauth_pending"
)

// allBuckets are created when the store is opened.
var allBuckets = []Bucket{BucketMeta, BucketOrganisations, BucketWorkspaces, BucketUsers, BucketAPIKeys, BucketLogs,
	BucketConfigs, BucketConfigVersions, BucketGuardrails, BucketPlugins, BucketPluginModules,
	BucketMembers, BucketInvites, BucketSettings, BucketAuditLogs, BucketIntegrations, BucketProviders,
	BucketVirtualKeys, BucketSecretReferences, BucketOutbox,
	BucketRateLimitPolicies, BucketUsageLimitPolicies, BucketLimitCounters, BucketUsageStates, BucketFeedback,
	BucketPrompts, BucketPromptVersions, BucketLogExports, BucketDeployments,
	BucketMCPIntegrations, BucketMCPServers, BucketAgentIntegrations, BucketAgentServers,
	BucketPromptPartials, BucketPartialVersions, BucketPromptLabels, BucketCollections, BucketOAuthPending}

// Store is transactional access to the admin state. Update transactions are
// durable once fn returns nil; a crash never leaves half of one behind.
type Store interface {
	View(fn func(Tx) error) error
	Update(fn func(Tx) error) error
	Close() error
}

// Tx is one transaction. Values read from it are only valid inside it, so
// Get decodes into v and ForEach hands out raw bytes to be decoded at once.
type Tx interface {
	// Get decodes the record under key into v, or returns ErrNotFound.
	Get(b Bucket, key string, v any) error
	// Put stores v as JSON under key.
	Put(b Bucket, key string, v any) error
	// Append stores raw, already encoded JSON, under key, in a bucket whose
	// keys mostly grow (the logs): the store may pack its pages for writes
	// in key order. Other keys are stored all the same. key and raw must not
	// change until the transaction has ended.
	Append(b Bucket, key, raw []byte) error
	// Delete removes key; deleting a missing key is not an error.
	Delete(b Bucket, key string) error
	// ForEach calls fn for every record in key order until fn returns an error.
	ForEach(b Bucket, fn func(key string, raw []byte) error) error
	// Scan calls fn for the records whose keys are >= from (all when empty),
	// in ascending key order, or descending when reverse is set (then from
	// is the largest key visited), until fn returns false or an error.
	Scan(b Bucket, from string, reverse bool, fn func(key string, raw []byte) (bool, error)) error
}
