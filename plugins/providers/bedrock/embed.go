package bedrock

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/llm-gateway/gateway/core"
	"github.com/llm-gateway/gateway/plugins/providers/internal/embedding"
)

// Bedrock serves embeddings through InvokeModel (/model/{id}/invoke) with
// a body of each model family's own shape. The families translated:
//
//   - Amazon Titan (model ids containing "titan-embed"): one text per call,
//     {"inputText"}; text-v2 also takes "dimensions".
//   - Cohere (model ids containing "cohere.embed"): up to 96 texts per call,
//     {"texts", "input_type"}; embed-v4 also takes "output_dimension".
//
// Inference-profile ids ("us.cohere.embed-v4:0") and ARNs are recognised by
// the same parts.

// embedFamily is the request and answer shape of an embedding model.
type embedFamily int

const (
	familyTitan embedFamily = iota + 1
	familyCohere
)

// maxCohereTexts is the number of texts Cohere's models embed per call.
const maxCohereTexts = 96

// cohereInputTypes are Cohere's input_type values.
var cohereInputTypes = []string{"search_document", "search_query", "classification", "clustering"}

// familyOf is the embedding family of a model id, or 0 when it is not one
// the gateway translates.
func familyOf(model string) embedFamily {
	switch {
	case strings.Contains(model, "titan-embed"):
		return familyTitan
	case strings.Contains(model, "cohere.embed"):
		return familyCohere
	}
	return 0
}

// embedRequest is the part of an OpenAI embeddings body (validated as one
// already) the translation reads. input_type and truncate are Cohere's own
// fields, accepted as the reference gateway does.
type embedRequest struct {
	embedding.Request
	InputType string `json:"input_type"`
	Truncate  string `json:"truncate"`
}

type titanEmbedRequest struct {
	InputText  string `json:"inputText"`
	Dimensions *int   `json:"dimensions,omitempty"`
}

type cohereEmbedRequest struct {
	Texts           []string `json:"texts"`
	InputType       string   `json:"input_type"`
	Truncate        string   `json:"truncate,omitempty"`
	OutputDimension *int     `json:"output_dimension,omitempty"`
}

// translateEmbedRequest turns an OpenAI embeddings body into the model id
// and the InvokeModel body of its family. What the model cannot take is a
// 400 naming the field.
func translateEmbedRequest(body []byte) (model string, out []byte, err error) {
	var in embedRequest
	if err := json.Unmarshal(body, &in); err != nil {
		return "", nil, core.UntranslatableBody(err, Name)
	}
	family := familyOf(in.Model)
	if family == 0 {
		return "", nil, core.BadRequest("model", "model %q: provider %s translates embeddings for the Amazon Titan (amazon.titan-embed-*) and Cohere (cohere.embed-*) models; call other models through the proxy path /model/{model id}/invoke", in.Model, Name)
	}
	texts, err := embedding.Texts(in.Input, Name)
	if err != nil {
		return "", nil, err
	}
	switch family {
	case familyTitan:
		if len(texts) != 1 {
			return "", nil, core.BadRequest("input", "input: the Amazon Titan embedding models take one text per request, got %d; send one string", len(texts))
		}
		if in.Dimensions != nil && !strings.Contains(in.Model, "titan-embed-text-v2") {
			return "", nil, core.BadRequest("dimensions", "dimensions is supported only by amazon.titan-embed-text-v2 among the Titan models, not by %q", in.Model)
		}
		if in.InputType != "" || in.Truncate != "" {
			return "", nil, core.BadRequest("input_type", "input_type and truncate are Cohere's fields; the Amazon Titan models do not take them")
		}
		out, err = json.Marshal(titanEmbedRequest{InputText: texts[0], Dimensions: in.Dimensions})
	case familyCohere:
		if len(texts) > maxCohereTexts {
			return "", nil, core.BadRequest("input", "input: the Cohere embedding models take at most %d texts per request, got %d", maxCohereTexts, len(texts))
		}
		if in.Dimensions != nil && !strings.Contains(in.Model, "cohere.embed-v4") {
			return "", nil, core.BadRequest("dimensions", "dimensions is supported only by cohere.embed-v4 among the Cohere models, not by %q", in.Model)
		}
		req := cohereEmbedRequest{Texts: texts, InputType: in.InputType, Truncate: in.Truncate, OutputDimension: in.Dimensions}
		if req.InputType == "" {
			req.InputType = "search_document"
		} else if !slices.Contains(cohereInputTypes, req.InputType) {
			return "", nil, core.BadRequest("input_type", "input_type must be one of %s, got %q", strings.Join(cohereInputTypes, ", "), req.InputType)
		}
		if req.Truncate != "" && !slices.Contains([]string{"NONE", "START", "END"}, req.Truncate) {
			return "", nil, core.BadRequest("truncate", "truncate must be one of NONE, START, END, got %q", req.Truncate)
		}
		out, err = json.Marshal(req)
	}
	if err != nil {
		return "", nil, err
	}
	return in.Model, out, nil
}

// translateEmbedAnswer turns the InvokeModel answer of an embedding model
// into OpenAI's embeddings list for the request's model, in the requested
// encoding_format.
func translateEmbedAnswer(req *core.Request, resp *core.Response) ([]byte, error) {
	var vectors []json.RawMessage
	tokens, _ := strconv.Atoi(resp.Header.Get(core.AWSInputTokensHeader))
	switch familyOf(req.Model) {
	case familyTitan:
		var a struct {
			Embedding           json.RawMessage `json:"embedding"`
			InputTextTokenCount *int            `json:"inputTextTokenCount"`
		}
		if err := json.Unmarshal(resp.Body, &a); err != nil {
			return nil, fmt.Errorf("reading the Titan embedding answer: %w", err)
		}
		if len(a.Embedding) == 0 {
			return nil, fmt.Errorf("reading the Titan embedding answer: it has no embedding")
		}
		vectors = []json.RawMessage{a.Embedding}
		if a.InputTextTokenCount != nil {
			tokens = *a.InputTextTokenCount
		}
	case familyCohere:
		var a struct {
			Embeddings json.RawMessage `json:"embeddings"`
		}
		if err := json.Unmarshal(resp.Body, &a); err != nil {
			return nil, fmt.Errorf("reading the Cohere embedding answer: %w", err)
		}
		if err := json.Unmarshal(a.Embeddings, &vectors); err != nil {
			// embedding_types answers an object of lists by type.
			var byType struct {
				Float []json.RawMessage `json:"float"`
			}
			if json.Unmarshal(a.Embeddings, &byType) != nil || byType.Float == nil {
				return nil, fmt.Errorf("reading the Cohere embedding answer: embeddings is neither a list of vectors nor has float vectors")
			}
			vectors = byType.Float
		}
	default:
		return nil, fmt.Errorf("model %q is not an embedding model the gateway translates", req.Model)
	}
	return embedding.Answer(req.Model, req.Body, vectors, tokens)
}
