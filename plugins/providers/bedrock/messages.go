package bedrock

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/llm-gateway/gateway/core"
	"github.com/llm-gateway/gateway/core/awsstream"
	"github.com/llm-gateway/gateway/plugins/providers/anthropic"
	"github.com/llm-gateway/gateway/plugins/providers/internal/chat"
)

// messagesRequest is the model id and the InvokeModel body of a
// /v1/messages request: Anthropic's body without model and stream and with
// anthropic_version bedrock-2023-05-31 when it has none, and the client's
// anthropic-beta header as anthropic_beta (see anthropic.BedrockMessages).
// Of a /v1/messages/count_tokens request, the model is the one
// countTokensModel asks CountTokens about. A model that is not Anthropic's
// (its id, inference profile or ARN not holding "anthropic.") is a 400
// naming model.
func messagesRequest(req *core.Request) (model string, out []byte, err error) {
	if model, out, err = anthropic.BedrockMessages(req.Body, req.Header.Values("anthropic-beta")); err != nil {
		return "", nil, err
	}
	if req.Endpoint == core.EndpointMessagesCount {
		if model, err = countTokensModel(model); err != nil {
			return "", nil, err
		}
	}
	if !anthropicModel(model) {
		return "", nil, core.BadRequest("model", "provider %s serves Anthropic's Messages API for Anthropic's models only (ids holding \"anthropic.\", e.g. anthropic.claude-3-5-sonnet-20240620-v1:0 or us.anthropic.claude-3-5-sonnet-20240620-v1:0), not %q", Name, model)
	}
	return model, out, nil
}

// anthropicModel reports whether a model id, inference profile or ARN
// names one of Anthropic's models.
func anthropicModel(model string) bool { return strings.Contains(model, "anthropic.") }

// countTokensRequest is the model id and the CountTokens body of a
// /v1/messages/count_tokens request: {"input": {"invokeModel": {"body":
// the base64 of the InvokeModel body messagesRequest makes}}}, with
// max_tokens 1 when the body has none (counting needs none; InvokeModel's
// body requires it). The model is countTokensModel's.
func countTokensRequest(req *core.Request) (model string, out []byte, err error) {
	model, body, err := messagesRequest(req)
	if err != nil {
		return "", nil, err
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(body, &m); err != nil {
		return "", nil, err
	}
	if _, ok := m["max_tokens"]; !ok {
		m["max_tokens"] = json.RawMessage("1")
		if body, err = json.Marshal(m); err != nil {
			return "", nil, err
		}
	}
	var count struct {
		Input struct {
			InvokeModel struct {
				Body []byte `json:"body"` // encoded as base64
			} `json:"invokeModel"`
		} `json:"input"`
	}
	count.Input.InvokeModel.Body = body
	out, err = json.Marshal(&count)
	return model, out, err
}

// countTokensModel is the model CountTokens is asked about for model.
// CountTokens takes foundation models only, not the inference profiles
// InvokeModel also takes. A system-defined cross-region profile's id
// ("us.anthropic.claude-…") or ARN ("…:inference-profile/us.anthropic.
// claude-…") names the model it routes to, and becomes that model's id
// ("anthropic.claude-…"). An application inference profile's ARN
// ("…:application-inference-profile/{id}") does not: only Bedrock's
// GetInferenceProfile (a control-plane call, with a permission of its own)
// tells its model, so it is a 400 naming model that says which id to send
// instead. Anything else (a model id, a foundation-model ARN) is passed on
// as it is.
func countTokensModel(model string) (string, error) {
	id := model
	if strings.HasPrefix(id, "arn:") {
		if strings.Contains(id, ":application-inference-profile/") {
			return "", core.BadRequest("model", "provider %s counts tokens through Bedrock's CountTokens, which takes foundation models only, not an application inference profile such as %q: set model to the id of the foundation model the profile routes to (e.g. anthropic.claude-sonnet-4-20250514-v1:0)", Name, model)
		}
		var ok bool
		if _, id, ok = strings.Cut(id, ":inference-profile/"); !ok {
			return model, nil
		}
	}
	geo, routed, ok := strings.Cut(id, ".")
	if !ok || geo == "" || strings.ContainsAny(geo, ":/") || !strings.HasPrefix(routed, "anthropic.") {
		return model, nil
	}
	return routed, nil
}

// translateCountTokensAnswer turns CountTokens' {"inputTokens": n} into
// Anthropic's {"input_tokens": n}.
func translateCountTokensAnswer(_ *core.Request, resp *core.Response) ([]byte, error) {
	var a struct {
		InputTokens *int `json:"inputTokens"`
	}
	if err := json.Unmarshal(resp.Body, &a); err != nil || a.InputTokens == nil {
		return nil, fmt.Errorf("reading the CountTokens answer: it is not {\"inputTokens\": n}: %.200s", resp.Body)
	}
	return json.Marshal(map[string]int{"input_tokens": *a.InputTokens})
}

// messagesStream reads InvokeModelWithResponseStream's frames and hands
// out Anthropic's Messages event stream as server-sent events, each frame
// translated as soon as it has been read whole: a chunk event's bytes (the
// base64 of one Anthropic stream event) become "event: {its type}" and
// "data: {the event}". message_stop (or Anthropic's error event) ends the
// stream; an exception or error frame fails it (StreamError), and so does
// a stream that ends before then, inside a frame, or with a frame whose
// CRC does not match, so the gateway ends the client's stream with its
// error event.
type messagesStream struct {
	chat.Stream
	frames  awsstream.Reader // reads Src
	stopped bool             // message_stop or error was handed on

	chunk struct {
		Bytes b64 `json:"bytes"`
	} // the frame's payload, reused
	ev struct {
		Type eventName `json:"type"`
	} // the event's type, reused
	compact bytes.Buffer // an event spread over lines, compacted
}

func (s *messagesStream) Read(p []byte) (int, error) { return s.ReadWith(p, s.fill) }

// fill reads and translates the next frame.
func (s *messagesStream) fill() {
	f, err := s.frames.Next()
	switch {
	case err == io.EOF && s.stopped:
		s.Err = io.EOF
	case err == io.EOF:
		s.Err = fmt.Errorf("Bedrock's stream ended before message_stop: %w", io.ErrUnexpectedEOF)
	case err != nil:
		s.Err = err
	default:
		if err := s.translate(f); err != nil {
			s.Err = err
		}
	}
}

// translate appends to Out the server-sent event of a chunk frame; other
// event frames are dropped.
func (s *messagesStream) translate(f *awsstream.Frame) error {
	if err := failure(f); err != nil {
		return err
	}
	if string(f.EventType) != "chunk" {
		return nil
	}
	s.chunk.Bytes = s.chunk.Bytes[:0]
	if err := json.Unmarshal(f.Payload, &s.chunk); err != nil {
		return fmt.Errorf("a chunk of Bedrock's stream is not JSON with base64 bytes: %w", err)
	}
	data := []byte(s.chunk.Bytes)
	s.ev.Type = ""
	if err := json.Unmarshal(data, &s.ev); err != nil {
		return fmt.Errorf("a chunk of Bedrock's stream is not an Anthropic stream event: %w", err)
	}
	typ := string(s.ev.Type)
	if typ == "" || strings.ContainsAny(typ, "\r\n") {
		return fmt.Errorf("a chunk of Bedrock's stream holds an event of type %q", typ)
	}
	if bytes.ContainsAny(data, "\r\n") {
		s.compact.Reset()
		_ = json.Compact(&s.compact, data) // valid: read above
		data = s.compact.Bytes()
	}
	s.Out = append(append(append(append(append(s.Out, "event: "...), typ...), "\ndata: "...), data...), "\n\n"...)
	s.stopped = typ == "message_stop" || typ == "error"
	return nil
}

// b64 is a JSON base64 string decoded into a buffer reused from one value
// to the next.
type b64 []byte

func (b *b64) UnmarshalJSON(v []byte) error {
	if len(v) < 2 || v[0] != '"' || v[len(v)-1] != '"' || bytes.IndexByte(v, '\\') >= 0 {
		return json.Unmarshal(v, (*[]byte)(b)) // null, or escaped: rare
	}
	out, err := base64.StdEncoding.AppendDecode((*b)[:0], v[1:len(v)-1])
	*b = out
	return err
}

// knownTypes are the types of the Anthropic events chunks carry.
var knownTypes = [...]string{"content_block_delta", "message_start", "content_block_start", "content_block_stop",
	"message_delta", "message_stop", "ping", "error"}

// known is v as a string, without allocating when it is one of knownTypes.
func known(v []byte) string {
	for _, k := range knownTypes {
		if string(v) == k {
			return k
		}
	}
	return string(v)
}

// eventName is a JSON string read without allocating when it is one of
// knownTypes.
type eventName string

func (n *eventName) UnmarshalJSON(v []byte) error {
	if len(v) < 2 || v[0] != '"' || v[len(v)-1] != '"' || bytes.IndexByte(v, '\\') >= 0 {
		return json.Unmarshal(v, (*string)(n))
	}
	*n = eventName(known(v[1 : len(v)-1]))
	return nil
}
