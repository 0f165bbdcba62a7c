// Package embedding is what the providers that translate OpenAI's
// embeddings requests share: reading the texts of a request's input and
// writing the embeddings list of an answer, in either encoding_format.
package embedding

import (
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"

	"github.com/llm-gateway/gateway/core"
)

// Request is the part of an OpenAI embeddings body (validated as one
// already) every translation reads.
type Request struct {
	Model          string          `json:"model"`
	Input          json.RawMessage `json:"input"`
	EncodingFormat string          `json:"encoding_format"`
	Dimensions     *int            `json:"dimensions"`
}

// Parse reads an OpenAI embeddings body (validated as one already) and the
// texts of its input (see Texts); a body that does not read is a 400.
func Parse(body []byte, provider string) (Request, []string, error) {
	var in Request
	if err := json.Unmarshal(body, &in); err != nil {
		return in, nil, core.UntranslatableBody(err, provider)
	}
	texts, err := Texts(in.Input, provider)
	return in, texts, err
}

// CheckCount refuses, with a 400 naming input, no texts or more than most
// for model.
func CheckCount(texts []string, most int, model, provider string) error {
	if len(texts) == 0 || len(texts) > most {
		return core.BadRequest("input", "input: %s takes 1 to %d texts per request on provider %s, got %d", model, most, provider, len(texts))
	}
	return nil
}

// Texts is input as a list of texts: a string, or an array of strings.
// Token ids are a 400 naming input: provider's models take text.
func Texts(input json.RawMessage, provider string) ([]string, error) {
	var one string
	if json.Unmarshal(input, &one) == nil {
		return []string{one}, nil
	}
	var many []string
	if json.Unmarshal(input, &many) == nil {
		return many, nil
	}
	return nil, core.BadRequest("input", "input: provider %s embeds text; token ids are not supported", provider)
}

// list is OpenAI's embeddings answer.
type list struct {
	Object string  `json:"object"`
	Data   []item  `json:"data"`
	Model  string  `json:"model"`
	Usage  tokUsed `json:"usage"`
}

type item struct {
	Object    string          `json:"object"`
	Index     int             `json:"index"`
	Embedding json.RawMessage `json:"embedding"` // numbers, or a base64 string
}

type tokUsed struct {
	PromptTokens int `json:"prompt_tokens"`
	TotalTokens  int `json:"total_tokens"`
}

// Answer is OpenAI's embeddings list of vectors (JSON arrays of numbers,
// in input order) for model, with tokens as its usage, each vector in the
// encoding_format of the request's (validated) body: as it is, or
// "base64". An answer that does not hold one vector per text of the
// request's input is an error: the client could not tell which is which.
func Answer(model string, reqBody []byte, vectors []json.RawMessage, tokens int) ([]byte, error) {
	var in Request
	_ = json.Unmarshal(reqBody, &in) // validated: it reads
	if texts, err := Texts(in.Input, ""); err == nil && len(texts) != len(vectors) {
		return nil, fmt.Errorf("the answer holds %d embeddings for %d texts", len(vectors), len(texts))
	}
	encodingFormat := in.EncodingFormat
	out := list{Object: "list", Data: make([]item, len(vectors)), Model: model,
		Usage: tokUsed{PromptTokens: tokens, TotalTokens: tokens}}
	for i, v := range vectors {
		if encodingFormat == "base64" {
			b, err := base64Floats(v)
			if err != nil {
				return nil, fmt.Errorf("reading embedding %d: %w", i, err)
			}
			v = b
		}
		out.Data[i] = item{Object: "embedding", Index: i, Embedding: v}
	}
	return json.Marshal(out)
}

// base64Floats is a JSON array of numbers as OpenAI's base64 encoding
// gives it: the numbers as little-endian float32s, base64-encoded, as a
// JSON string.
func base64Floats(vector json.RawMessage) (json.RawMessage, error) {
	var fs []float64
	if err := json.Unmarshal(vector, &fs); err != nil {
		return nil, err
	}
	raw := make([]byte, 4*len(fs))
	for i, f := range fs {
		binary.LittleEndian.PutUint32(raw[4*i:], math.Float32bits(float32(f)))
	}
	return json.Marshal(base64.StdEncoding.EncodeToString(raw))
}
