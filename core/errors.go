package core

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"reflect"
	"strings"
)

// Error types carried in the "type" field of the JSON error body.
const (
	TypeInvalidRequest = "invalid_request_error"
	TypeAuthentication = "authentication_error"
	TypePermission     = "permission_error"
	TypeNotFound       = "not_found_error"
	TypeTimeout        = "timeout_error"
	TypeUpstream       = "upstream_error"
	TypeAPI            = "api_error"
	TypeConflict       = "conflict_error"
)

// Admin error codes (see docs/admin-api.md).
const (
	CodeValidation   = "AB01"
	CodeNotFoundPath = "AB02"
	CodeForbidden    = "AB03"
	CodeInternal     = "AB04"
	CodeUnauthorized = "AB05"
	CodeRateLimited  = "AB06"
	CodeConflict     = "AB07"
	CodeNotFound     = "AB08"
	// CodeBudgetExhausted is a usage limit's refusal (412; the reference's
	// AB09).
	CodeBudgetExhausted = "AB09"
)

// Error is the one error value of the project. Every failure that reaches a
// client is an *Error, turned into the JSON body
// {"error":{"message","type","param","code"}} at the HTTP boundary.
type Error struct {
	Status  int
	Type    string
	Code    string
	Param   string
	Message string
	Err     error
	// Header holds extra response headers as name/value pairs (a 429's
	// retry-after and x-ratelimit-*).
	Header [][2]string
}

// Error is the message followed by the cause, unless the message already
// ends with it (as most upstream failures' messages do, for the client), so
// that a log says the cause once.
func (e *Error) Error() string {
	if e.Err != nil {
		if cause := e.Err.Error(); !strings.HasSuffix(e.Message, cause) {
			return e.Message + ": " + cause
		}
	}
	return e.Message
}

// Unwrap returns the cause, so errors.Is and errors.As see through an *Error.
func (e *Error) Unwrap() error { return e.Err }

// errorBody is the wire shape of an error answer.
type errorBody struct {
	Error errorFields `json:"error"`
}

type errorFields struct {
	Message string  `json:"message"`
	Type    string  `json:"type"`
	Param   *string `json:"param"`
	Code    *string `json:"code"`
}

// Body returns the JSON error body for e.
func (e *Error) Body() []byte {
	f := errorFields{Message: e.Message, Type: e.Type}
	if e.Param != "" {
		f.Param = &e.Param
	}
	if e.Code != "" {
		f.Code = &e.Code
	}
	b, _ := json.Marshal(errorBody{Error: f})
	return b
}

// anthropicErrorTypes are Anthropic's error types by status; any other
// status is an api_error.
var anthropicErrorTypes = map[int]string{
	http.StatusBadRequest: TypeInvalidRequest, http.StatusUnauthorized: TypeAuthentication,
	http.StatusForbidden: TypePermission, http.StatusNotFound: TypeNotFound,
	http.StatusRequestTimeout: TypeTimeout, http.StatusGatewayTimeout: TypeTimeout,
	http.StatusRequestEntityTooLarge: "request_too_large", http.StatusTooManyRequests: "rate_limit_error",
	http.StatusServiceUnavailable: "overloaded_error", 529: "overloaded_error",
}

// AnthropicErrorBody is the error body of Anthropic's Messages API,
// {"type":"error","error":{"type","message"}}, for an error of status
// with message: what its clients raise, on /v1/messages answers and as the
// data of a stream's error event.
func AnthropicErrorBody(status int, message string) []byte {
	typ, ok := anthropicErrorTypes[status]
	if !ok {
		typ = TypeAPI
	}
	type fields struct {
		Type    string `json:"type"`
		Message string `json:"message"`
	}
	b, _ := json.Marshal(struct {
		Type  string `json:"type"`
		Error fields `json:"error"`
	}{"error", fields{typ, message}}) // strings: it cannot fail
	return b
}

// BadRequest is a 400 invalid_request_error naming the offending field.
func BadRequest(param, format string, args ...any) *Error {
	return &Error{Status: http.StatusBadRequest, Type: TypeInvalidRequest, Param: param, Message: fmt.Sprintf(format, args...)}
}

// TypeMismatch describes a JSON decoding error about a value of the wrong
// type for the person who sent it: its field (the dotted path
// encoding/json names, "" when the mismatch is the whole document) and
// what the field must be ("must be a number, not a string"). ok is false
// for other errors.
func TypeMismatch(err error) (field, must string, ok bool) {
	var te *json.UnmarshalTypeError
	if !errors.As(err, &te) {
		return "", "", false
	}
	return te.Field, "must be " + JSONKind(te.Type) + ", not " + article(te.Value), true
}

// UntranslatableBody is the 400 of a request body that does not decode
// into what provider's translation reads: naming the field of a value of
// the wrong type ("stop must be an array, not a number"), else the body.
func UntranslatableBody(err error, provider string) *Error {
	if field, must, ok := TypeMismatch(err); ok && field != "" {
		return BadRequest(field, "%s %s", field, must)
	}
	return BadRequest("body", "the request body cannot be translated for %s: %v", provider, err)
}

// JSONKind names the JSON value a Go type decodes from: "a string", "a
// number", "a boolean", "an array", "an object" or "a JSON value".
func JSONKind(t reflect.Type) string {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "a boolean"
	case reflect.Slice, reflect.Array:
		return "an array"
	case reflect.Struct, reflect.Map:
		return "an object"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64, reflect.Uint, reflect.Uint8,
		reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Float32, reflect.Float64:
		return "a number"
	}
	return "a JSON value"
}

// article is a JSON value's kind as encoding/json names it ("string",
// "number 1.5", "array", "object") with its article.
func article(kind string) string {
	if kind != "" && strings.IndexByte("aeiou", kind[0]) >= 0 {
		return "an " + kind
	}
	return "a " + kind
}

// ValidationError is a 400 with code AB01, used for admin and config validation.
func ValidationError(param, format string, args ...any) *Error {
	e := BadRequest(param, format, args...)
	e.Code = CodeValidation
	return e
}

// Unauthorized is a 401 authentication_error.
func Unauthorized(format string, args ...any) *Error {
	return &Error{Status: http.StatusUnauthorized, Type: TypeAuthentication, Code: CodeUnauthorized, Message: fmt.Sprintf(format, args...)}
}

// Forbidden is a 403 permission_error.
func Forbidden(format string, args ...any) *Error {
	return &Error{Status: http.StatusForbidden, Type: TypePermission, Code: CodeForbidden, Message: fmt.Sprintf(format, args...)}
}

// NotFound is a 404 not_found_error for a missing resource.
func NotFound(format string, args ...any) *Error {
	return &Error{Status: http.StatusNotFound, Type: TypeNotFound, Code: CodeNotFound, Message: fmt.Sprintf(format, args...)}
}

// Conflict is a 409 (AB07): the resource exists already or is still in use.
func Conflict(format string, args ...any) *Error {
	return &Error{Status: http.StatusConflict, Type: TypeConflict, Code: CodeConflict, Message: fmt.Sprintf(format, args...)}
}

// Timeout is a 408 timeout_error.
func Timeout(format string, args ...any) *Error {
	return &Error{Status: http.StatusRequestTimeout, Type: TypeTimeout, Message: fmt.Sprintf(format, args...)}
}

// Upstream is a 502 for a provider that could not be reached or answered garbage.
func Upstream(err error, format string, args ...any) *Error {
	return &Error{Status: http.StatusBadGateway, Type: TypeUpstream, Message: fmt.Sprintf(format, args...), Err: err}
}

// Internal is a 500 api_error; the cause is kept for the log, not shown.
func Internal(err error, format string, args ...any) *Error {
	return &Error{Status: http.StatusInternalServerError, Type: TypeAPI, Code: CodeInternal, Message: fmt.Sprintf(format, args...), Err: err}
}
