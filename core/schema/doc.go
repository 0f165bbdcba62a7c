// Package schema validates the JSON request bodies of the gateway's unified,
// OpenAI-shaped routes (chat completions, completions, embeddings, responses,
// rerank, image generation) and the query of GET /responses/{id}/input_items.
//
// Validation runs on every request before anything is sent upstream. Each
// body is parsed once with encoding/json (numbers kept as json.Number so
// integers are checked exactly), every problem is collected, and the result
// is a single 400 invalid_request_error whose Param is the JSON path of the
// first bad field and whose Message lists every problem joined by "; ".
// Fields the validator does not know are allowed and left untouched. Text
// that is not UTF-8, which JSON requires, is refused wherever it is, Param
// naming its string; an escaped lone surrogate (\ud800) is valid JSON and
// passes.
//
// The gateway-only body fields strict_reference_compliance and its alias
// strict_open_ai_compliance are reported through Info.HasGatewayFields and
// removed by StripGatewayFields before the body is forwarded.
package schema
