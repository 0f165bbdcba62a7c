// Package core holds the transport-agnostic types of the gateway's request
// pipeline: the request and response as the stages see them, the principal an
// API key stands for, the provider and plugin seams, the log record, and the
// one error type. It knows nothing of Fiber, bbolt or wazero.
package core
