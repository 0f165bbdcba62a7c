package bedrock

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/llm-gateway/gateway/core"
)

// Bedrock reranks through the Rerank API of the agent runtime
// (https://bedrock-agent-runtime.{region}.amazonaws.com/rerank), which
// names the model by its ARN: the spec's "full resource name together
// with the model name". A bare model id is made the foundation model's ARN
// in the target's region.

// rerankRequest is the part of a /rerank body (validated as one already)
// the translation reads.
type rerankRequest struct {
	Model           string            `json:"model"`
	Query           string            `json:"query"`
	Documents       []json.RawMessage `json:"documents"`
	TopN            *int              `json:"top_n"`
	MaxChunksPerDoc *int              `json:"max_chunks_per_doc"`
}

type bedrockRerank struct {
	Queries []rerankText   `json:"queries"`
	Sources []rerankSource `json:"sources"`
	Config  rerankConfig   `json:"rerankingConfiguration"`
}

type rerankText struct {
	Type      string    `json:"type"` // TEXT
	TextQuery textBlock `json:"textQuery"`
}

type rerankSource struct {
	Type   string `json:"type"` // INLINE
	Inline struct {
		Type string    `json:"type"` // TEXT
		Text textBlock `json:"textDocument"`
	} `json:"inlineDocumentSource"`
}

type rerankConfig struct {
	Type    string `json:"type"` // BEDROCK_RERANKING_MODEL
	Bedrock struct {
		NumberOfResults int `json:"numberOfResults"`
		Model           struct {
			ARN string `json:"modelArn"`
		} `json:"modelConfiguration"`
	} `json:"bedrockRerankingConfiguration"`
}

// translateRerankRequest turns a /rerank body into the Rerank API's body
// for region. What Bedrock cannot take is a 400 naming the field.
func translateRerankRequest(body []byte, region string) ([]byte, error) {
	var in rerankRequest
	if err := json.Unmarshal(body, &in); err != nil {
		return nil, core.UntranslatableBody(err, Name)
	}
	if in.MaxChunksPerDoc != nil {
		return nil, core.BadRequest("max_chunks_per_doc", "max_chunks_per_doc is not supported by provider %s", Name)
	}
	out := bedrockRerank{Queries: []rerankText{{Type: "TEXT", TextQuery: textBlock{Text: in.Query}}}}
	for i, d := range in.Documents {
		text, ok := documentText(d)
		if !ok {
			return nil, core.BadRequest(fmt.Sprintf("documents[%d]", i), "documents[%d] must be a string or an object with a text field", i)
		}
		var s rerankSource
		s.Type, s.Inline.Type, s.Inline.Text.Text = "INLINE", "TEXT", text
		out.Sources = append(out.Sources, s)
	}
	out.Config.Type = "BEDROCK_RERANKING_MODEL"
	out.Config.Bedrock.Model.ARN = modelARN(in.Model, region)
	out.Config.Bedrock.NumberOfResults = len(in.Documents)
	if in.TopN != nil && *in.TopN < len(in.Documents) {
		out.Config.Bedrock.NumberOfResults = *in.TopN
	}
	return json.Marshal(out)
}

// modelARN is model when it is an ARN, else the ARN of the foundation
// model of that id in region.
func modelARN(model, region string) string {
	if strings.HasPrefix(model, "arn:") {
		return model
	}
	return "arn:aws:bedrock:" + region + "::foundation-model/" + model
}

// rerankList is the rerank answer the gateway gives (Cohere's shape, which
// the other rerank providers share).
type rerankList struct {
	ID      string         `json:"id"`
	Model   string         `json:"model"`
	Results []rerankResult `json:"results"`
}

type rerankResult struct {
	Index          int             `json:"index"`
	RelevanceScore float64         `json:"relevance_score"`
	Document       *rerankDocument `json:"document,omitempty"`
}

type rerankDocument struct {
	Text string `json:"text"`
}

// documentText is a /rerank document's text: the document itself or its
// text field.
func documentText(d json.RawMessage) (string, bool) {
	var text string
	if json.Unmarshal(d, &text) == nil {
		return text, true
	}
	var obj struct {
		Text string `json:"text"`
	}
	if json.Unmarshal(d, &obj) != nil {
		return "", false
	}
	return obj.Text, true
}

// translateRerankAnswer turns the Rerank API's answer into the gateway's
// rerank list for the request's model; with the request's
// return_documents, each result carries its document's text (from the
// request: Bedrock's answer may leave it out).
func translateRerankAnswer(req *core.Request, resp *core.Response) ([]byte, error) {
	var in struct {
		Documents       []json.RawMessage `json:"documents"`
		ReturnDocuments bool              `json:"return_documents"`
	}
	_ = json.Unmarshal(req.Body, &in) // validated: a bad value cannot reach here
	var a struct {
		Results []struct {
			Index          *int    `json:"index"`
			RelevanceScore float64 `json:"relevanceScore"`
		} `json:"results"`
	}
	if err := json.Unmarshal(resp.Body, &a); err != nil {
		return nil, fmt.Errorf("reading the Rerank answer: %w", err)
	}
	out := rerankList{ID: requestID(resp), Model: req.Model, Results: make([]rerankResult, 0, len(a.Results))}
	for i, r := range a.Results {
		if r.Index == nil || *r.Index < 0 || *r.Index >= len(in.Documents) {
			return nil, fmt.Errorf("reading the Rerank answer: result %d has no index of a document sent", i)
		}
		res := rerankResult{Index: *r.Index, RelevanceScore: r.RelevanceScore}
		if in.ReturnDocuments {
			text, _ := documentText(in.Documents[*r.Index])
			res.Document = &rerankDocument{Text: text}
		}
		out.Results = append(out.Results, res)
	}
	return json.Marshal(out)
}
