// Package adminsvc is the administration API (control plane) under /v1: the
// first-start bootstrap, the API-key snapshot the data plane authenticates
// against, and the admin routes. Routes return *core.Error values; the server
// turns them into the one JSON error body.
package adminsvc
