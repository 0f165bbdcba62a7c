// Package chat holds what the providers that translate OpenAI chat
// completions into another API share: the request as it is read
// (request.go) and the answers and stream chunks in the OpenAI shape they
// are translated into (answer.go, chunk.go). Each provider maps the parsed
// request onto its own API and refuses, with a 400 naming the field, what
// that API cannot take.
package chat
