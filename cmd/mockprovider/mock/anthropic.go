package mock

import (
	"encoding/json"
	"net/http"
	"strconv"
)

type anthropicRequest struct {
	Model    string `json:"model"`
	Messages []struct {
		Content textChars `json:"content"`
	} `json:"messages"`
	System    textChars `json:"system"`
	MaxTokens *int      `json:"max_tokens"`
	Stream    bool      `json:"stream"`
}

func writeAnthropicError(w http.ResponseWriter, status int, typ, msg string) {
	b, _ := json.Marshal(struct {
		Type  string `json:"type"`
		Error struct {
			Type    string `json:"type"`
			Message string `json:"message"`
		} `json:"error"`
	}{Type: "error", Error: struct {
		Type    string `json:"type"`
		Message string `json:"message"`
	}{typ, msg}})
	writeJSON(w, status, b)
}

func (rq *call) anthropicMessages() {
	var req anthropicRequest
	if len(rq.body) == 0 {
		writeAnthropicError(rq.w, http.StatusBadRequest, "invalid_request_error", "request body is empty; expected JSON")
		return
	}
	if err := json.Unmarshal(rq.body, &req); err != nil {
		writeAnthropicError(rq.w, http.StatusBadRequest, "invalid_request_error", "invalid JSON body: "+err.Error())
		return
	}
	chars := int(req.System)
	for _, m := range req.Messages {
		chars += int(m.Content)
	}
	inputTokens := estimateTokens(chars)
	rep := replyFor(req.MaxTokens)
	stop := `"end_turn"`
	if rep.truncated {
		stop = `"max_tokens"`
	}
	id := rq.newID("msg_mock")
	model := modelOr(req.Model)

	if !req.Stream {
		b := []byte(`{"id":"`)
		b = append(b, id...)
		b = append(b, `","type":"message","role":"assistant","model":`...)
		b = appendJSONString(b, model)
		b = append(b, `,"content":[{"type":"text","text":`...)
		b = append(b, rep.quoted...)
		b = append(b, `}],"stop_reason":`...)
		b = append(b, stop...)
		b = append(b, `,"stop_sequence":null,"usage":{"input_tokens":`...)
		b = strconv.AppendInt(b, int64(inputTokens), 10)
		b = append(b, `,"cache_creation_input_tokens":0,"cache_read_input_tokens":0,"output_tokens":`...)
		b = strconv.AppendInt(b, int64(rep.tokens), 10)
		b = append(b, "}}"...)
		rq.writeJSON(b)
		return
	}

	event := func(name string, data []byte) []byte {
		b := append([]byte("event: "), name...)
		b = append(b, "\ndata: "...)
		b = append(b, data...)
		return append(b, "\n\n"...)
	}
	st := rq.startStream()
	start := []byte(`{"type":"message_start","message":{"id":"`)
	start = append(start, id...)
	start = append(start, `","type":"message","role":"assistant","model":`...)
	start = appendJSONString(start, model)
	start = append(start, `,"content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":`...)
	start = strconv.AppendInt(start, int64(inputTokens), 10)
	start = append(start, `,"cache_creation_input_tokens":0,"cache_read_input_tokens":0,"output_tokens":1}}}`...)
	if !st.send(event("message_start", start)) {
		return
	}
	if !st.send(event("content_block_start", []byte(`{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`))) {
		return
	}
	frames := rq.c.frames
	for f := 0; f < frames; f++ {
		d := []byte(`{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":`)
		d = appendJSONString(d, rep.piece(f, frames))
		d = append(d, "}}"...)
		if !st.content(event("content_block_delta", d)) {
			return
		}
	}
	st.checkBreak()
	if !st.send(event("content_block_stop", []byte(`{"type":"content_block_stop","index":0}`))) {
		return
	}
	md := []byte(`{"type":"message_delta","delta":{"stop_reason":`)
	md = append(md, stop...)
	md = append(md, `,"stop_sequence":null},"usage":{"output_tokens":`...)
	md = strconv.AppendInt(md, int64(rep.tokens), 10)
	md = append(md, "}}"...)
	if !st.send(event("message_delta", md)) {
		return
	}
	st.send(event("message_stop", []byte(`{"type":"message_stop"}`)))
}
