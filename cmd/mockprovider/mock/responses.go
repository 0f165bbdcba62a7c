package mock

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"time"
	"unicode/utf8"
)

type responsesRequest struct {
	Model           string          `json:"model"`
	Input           json.RawMessage `json:"input"`
	Instructions    *string         `json:"instructions"`
	Stream          bool            `json:"stream"`
	MaxOutputTokens *int            `json:"max_output_tokens"`
	Metadata        json.RawMessage `json:"metadata"`
}

type outputText struct {
	Type        string `json:"type"`
	Text        string `json:"text"`
	Annotations []any  `json:"annotations"`
}

type outputMessage struct {
	ID      string       `json:"id"`
	Type    string       `json:"type"`
	Status  string       `json:"status"`
	Role    string       `json:"role"`
	Content []outputText `json:"content"`
}

type responseObject struct {
	ID                 string          `json:"id"`
	Object             string          `json:"object"`
	CreatedAt          int64           `json:"created_at"`
	Status             string          `json:"status"`
	Error              any             `json:"error"`
	IncompleteDetails  any             `json:"incomplete_details"`
	Instructions       *string         `json:"instructions"`
	MaxOutputTokens    *int            `json:"max_output_tokens"`
	Model              string          `json:"model"`
	Output             []outputMessage `json:"output"`
	ParallelToolCalls  bool            `json:"parallel_tool_calls"`
	PreviousResponseID any             `json:"previous_response_id"`
	Temperature        float64         `json:"temperature"`
	ToolChoice         string          `json:"tool_choice"`
	Tools              []any           `json:"tools"`
	TopP               float64         `json:"top_p"`
	Truncation         string          `json:"truncation"`
	Usage              *responseUsage  `json:"usage"`
	Metadata           json.RawMessage `json:"metadata"`
}

type responseUsage struct {
	InputTokens         int            `json:"input_tokens"`
	InputTokensDetails  map[string]int `json:"input_tokens_details"`
	OutputTokens        int            `json:"output_tokens"`
	OutputTokensDetails map[string]int `json:"output_tokens_details"`
	TotalTokens         int            `json:"total_tokens"`
}

func responsesInputChars(raw json.RawMessage) (int, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		return 0, nil
	}
	if raw[0] == '"' {
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return 0, err
		}
		return utf8.RuneCountInString(s), nil
	}
	var items []struct {
		Content textChars `json:"content"`
		Output  textChars `json:"output"`
	}
	if err := json.Unmarshal(raw, &items); err != nil {
		return 0, err
	}
	n := 0
	for _, it := range items {
		n += int(it.Content) + int(it.Output)
	}
	return n, nil
}

func (rq *call) responses() {
	var req responsesRequest
	if !rq.decode(&req) {
		return
	}
	chars, err := responsesInputChars(req.Input)
	if err != nil {
		writeOpenAIError(rq.w, http.StatusBadRequest, "invalid_request_error", "invalid input: "+err.Error())
		return
	}
	if req.Instructions != nil {
		chars += utf8.RuneCountInString(*req.Instructions)
	}
	rep := replyFor(req.MaxOutputTokens)
	metadata := req.Metadata
	if len(bytes.TrimSpace(metadata)) == 0 || bytes.Equal(bytes.TrimSpace(metadata), []byte("null")) {
		metadata = json.RawMessage(`{}`)
	}
	seq := rq.s.nextID()
	resp := responseObject{
		ID:                string(appendID(nil, "resp_mock", seq)),
		Object:            "response",
		CreatedAt:         time.Now().Unix(),
		Status:            "completed",
		Instructions:      req.Instructions,
		MaxOutputTokens:   req.MaxOutputTokens,
		Model:             modelOr(req.Model),
		ParallelToolCalls: true,
		Temperature:       1,
		ToolChoice:        "auto",
		Tools:             []any{},
		TopP:              1,
		Truncation:        "disabled",
		Metadata:          metadata,
	}
	msgStatus := "completed"
	if rep.truncated {
		resp.Status = "incomplete"
		resp.IncompleteDetails = map[string]string{"reason": "max_output_tokens"}
		msgStatus = "incomplete"
	}
	msg := outputMessage{
		ID:      string(appendID(nil, "msg_mock", seq)),
		Type:    "message",
		Status:  msgStatus,
		Role:    "assistant",
		Content: []outputText{{Type: "output_text", Text: rep.text, Annotations: []any{}}},
	}
	inTok := estimateTokens(chars)
	usage := &responseUsage{
		InputTokens:         inTok,
		InputTokensDetails:  map[string]int{"cached_tokens": 0},
		OutputTokens:        rep.tokens,
		OutputTokensDetails: map[string]int{"reasoning_tokens": 0},
		TotalTokens:         inTok + rep.tokens,
	}

	if !req.Stream {
		resp.Output = []outputMessage{msg}
		resp.Usage = usage
		b, _ := json.Marshal(resp)
		rq.writeJSON(b)
		return
	}

	st := rq.startStream()
	seqNo := 0
	event := func(typ string, fields map[string]any) []byte {
		fields["type"] = typ
		fields["sequence_number"] = seqNo
		seqNo++
		data, _ := json.Marshal(fields)
		return fmt.Appendf(nil, "event: %s\ndata: %s\n\n", typ, data)
	}
	final := resp
	final.Output = []outputMessage{msg}
	final.Usage = usage
	pending := resp
	pending.Status = "in_progress"
	pending.IncompleteDetails = nil
	pending.Output = []outputMessage{}
	if !st.send(event("response.created", map[string]any{"response": pending})) ||
		!st.send(event("response.in_progress", map[string]any{"response": pending})) {
		return
	}
	item := msg
	item.Status = "in_progress"
	item.Content = []outputText{}
	if !st.send(event("response.output_item.added", map[string]any{"output_index": 0, "item": item})) {
		return
	}
	if !st.send(event("response.content_part.added", map[string]any{
		"item_id": msg.ID, "output_index": 0, "content_index": 0,
		"part": outputText{Type: "output_text", Text: "", Annotations: []any{}},
	})) {
		return
	}
	frames := rq.c.frames
	for f := 0; f < frames; f++ {
		if !st.content(event("response.output_text.delta", map[string]any{
			"item_id": msg.ID, "output_index": 0, "content_index": 0, "delta": rep.piece(f, frames),
		})) {
			return
		}
	}
	st.checkBreak()
	if !st.send(event("response.output_text.done", map[string]any{
		"item_id": msg.ID, "output_index": 0, "content_index": 0, "text": rep.text,
	})) {
		return
	}
	if !st.send(event("response.content_part.done", map[string]any{
		"item_id": msg.ID, "output_index": 0, "content_index": 0, "part": msg.Content[0],
	})) {
		return
	}
	if !st.send(event("response.output_item.done", map[string]any{"output_index": 0, "item": msg})) {
		return
	}
	typ := "response.completed"
	if rep.truncated {
		typ = "response.incomplete"
	}
	st.send(event(typ, map[string]any{"response": final}))
}

const inputItemCount = 30

type inputItem struct {
	ID      string `json:"id"`
	Type    string `json:"type"`
	Role    string `json:"role"`
	Status  string `json:"status"`
	Content []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	} `json:"content"`
}

func makeInputItem(i int, respID string) inputItem {
	it := inputItem{
		ID:     fmt.Sprintf("msg_%03d", i),
		Type:   "message",
		Role:   "user",
		Status: "completed",
	}
	it.Content = append(it.Content, struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}{"input_text", fmt.Sprintf("mock input item %d of %s", i, respID)})
	return it
}

// inputItems serves GET /v1/responses/{id}/input_items with OpenAI cursor
// pagination over 30 fixed items msg_000..msg_029.
func (rq *call) inputItems(respID string) {
	q := rq.r.URL.Query()
	limit := 20
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 100 {
			writeOpenAIError(rq.w, http.StatusBadRequest, "invalid_request_error", "limit must be an integer between 1 and 100")
			return
		}
		limit = n
	}
	order := q.Get("order")
	switch order {
	case "":
		order = "asc"
	case "asc", "desc":
	default:
		writeOpenAIError(rq.w, http.StatusBadRequest, "invalid_request_error", "order must be asc or desc")
		return
	}
	items := make([]inputItem, inputItemCount)
	for i := range items {
		idx := i
		if order == "desc" {
			idx = inputItemCount - 1 - i
		}
		items[i] = makeInputItem(idx, respID)
	}
	find := func(id string) int {
		for i, it := range items {
			if it.ID == id {
				return i
			}
		}
		return -1
	}
	start, end := 0, len(items)
	if v := q.Get("after"); v != "" {
		i := find(v)
		if i < 0 {
			writeOpenAIError(rq.w, http.StatusBadRequest, "invalid_request_error", "unknown after cursor "+v)
			return
		}
		start = i + 1
	}
	if v := q.Get("before"); v != "" {
		i := find(v)
		if i < 0 {
			writeOpenAIError(rq.w, http.StatusBadRequest, "invalid_request_error", "unknown before cursor "+v)
			return
		}
		end = i
	}
	if end < start {
		end = start
	}
	window := items[start:end]
	var page []inputItem
	var hasMore bool
	if q.Get("before") != "" && q.Get("after") == "" {
		// Paging backwards: the items immediately before the cursor.
		from := max(len(window)-limit, 0)
		page, hasMore = window[from:], from > 0
	} else {
		to := min(limit, len(window))
		page, hasMore = window[:to], to < len(window)
	}
	out := struct {
		Object  string      `json:"object"`
		Data    []inputItem `json:"data"`
		FirstID *string     `json:"first_id"`
		LastID  *string     `json:"last_id"`
		HasMore bool        `json:"has_more"`
	}{Object: "list", Data: page, HasMore: hasMore}
	if page == nil {
		out.Data = []inputItem{}
	}
	if len(page) > 0 {
		out.FirstID = &page[0].ID
		out.LastID = &page[len(page)-1].ID
	}
	b, _ := json.Marshal(out)
	rq.writeJSON(b)
}
