package pipeline

import (
	"bytes"
	"encoding/json"

	"github.com/llm-gateway/gateway/core/sse"
)

// answerTexts is each choice's message content in a chat completion (the
// transformed answer of a held stream), by index.
func answerTexts(answer []byte) (map[int]string, bool) {
	var a struct {
		Choices []struct {
			Index   int `json:"index"`
			Message struct {
				Content *string `json:"content"`
			} `json:"message"`
		} `json:"choices"`
	}
	if json.Unmarshal(answer, &a) != nil {
		return nil, false
	}
	texts := make(map[int]string, len(a.Choices))
	for _, c := range a.Choices {
		if c.Message.Content != nil {
			texts[c.Index] = *c.Message.Content
		}
	}
	return texts, true
}

// retextStream is the held stream with each choice's text replaced by
// texts[index] (what an output guardrail's transform made of it): the
// first event carrying text of a choice carries all of it, and later text
// of that choice is removed, an event left with nothing else is dropped.
// The choices' logprobs, which spell out the original tokens, are removed
// too. It reads chat and text completion chunks, Anthropic's text deltas
// and the Responses API's output text (whose done events, which repeat
// the whole text, get the new one); other events pass unchanged.
func retextStream(held []byte, texts map[int]string) []byte {
	r := retexter{texts: texts, started: map[int]bool{}}
	out := make([]byte, 0, len(held))
	for event := range sse.Events(held) {
		data, ok := sse.Data(event)
		if !ok {
			out = append(out, event...)
			continue
		}
		if data, ok = r.event(data); ok {
			out = sse.AppendWithData(out, event, data)
		}
	}
	return out
}

// retexter rewrites a held stream's events in order; started says which
// choices' new text has been sent.
type retexter struct {
	texts   map[int]string
	started map[int]bool
}

// next is the text the next piece of choice i's text is replaced with,
// and false when it is to be removed (its text was sent, or the transform
// gave none for i: then ok is false and the piece stays).
func (r *retexter) next(i int) (text string, send, ok bool) {
	t, ok := r.texts[i]
	if !ok {
		return "", false, false
	}
	if r.started[i] {
		return "", false, true
	}
	r.started[i] = true
	return t, true, true
}

// event rewrites one event's data; keep is false when the event is to be
// dropped. Data that is not a JSON object ([DONE]) stays as it is.
func (r *retexter) event(data []byte) (out []byte, keep bool) {
	var ev map[string]json.RawMessage
	if json.Unmarshal(data, &ev) != nil || ev == nil {
		return data, true
	}
	changed, empty := false, false
	if raw, ok := ev["choices"]; ok {
		changed, empty = r.choices(ev, raw)
	} else {
		var typ string
		json.Unmarshal(ev["type"], &typ)
		switch typ {
		case "content_block_delta", "response.output_text.delta":
			changed, empty = r.delta(ev, typ)
		case "response.output_text.done", "response.content_part.done", "response.output_item.done", "response.completed":
			changed = r.doneText(ev)
		}
	}
	if !changed {
		return data, true
	}
	if empty {
		return nil, false
	}
	b, err := json.Marshal(ev)
	if err != nil {
		return data, true
	}
	return b, true
}

// choices rewrites a chat or text completion chunk's choices; empty
// reports that every choice it changed is left with nothing to say (no
// finish_reason, no other delta field) and the chunk has no usage.
func (r *retexter) choices(ev map[string]json.RawMessage, raw json.RawMessage) (changed, empty bool) {
	var choices []map[string]json.RawMessage
	if json.Unmarshal(raw, &choices) != nil {
		return false, false
	}
	empty = len(choices) > 0
	for _, c := range choices {
		var idx int
		json.Unmarshal(c["index"], &idx)
		field, holder := "text", c
		var delta map[string]json.RawMessage
		if d, ok := c["delta"]; ok && json.Unmarshal(d, &delta) == nil && delta != nil {
			field, holder = "content", delta
		}
		var piece *string
		if json.Unmarshal(holder[field], &piece) != nil || piece == nil {
			empty = false
			continue
		}
		text, send, ok := r.next(idx)
		if !ok {
			empty = false
			continue
		}
		changed = true
		delete(c, "logprobs")
		if send {
			holder[field] = mustJSON(text)
		} else if field == "content" {
			delete(holder, field)
		} else {
			holder[field] = mustJSON("")
		}
		if delta != nil {
			c["delta"] = mustJSON(delta)
		}
		if send || len(delta) > 0 || !isNull(c["finish_reason"]) {
			empty = false
		}
	}
	if !changed {
		return false, false
	}
	ev["choices"] = mustJSON(choices)
	return true, empty && isNull(ev["usage"])
}

// delta rewrites an Anthropic text delta or a Responses API output text
// delta (both of choice 0); empty when the event is to be dropped.
func (r *retexter) delta(ev map[string]json.RawMessage, typ string) (changed, empty bool) {
	var d map[string]json.RawMessage // Anthropic's delta object
	if typ == "content_block_delta" {
		var dt string
		if json.Unmarshal(ev["delta"], &d) != nil || d == nil || json.Unmarshal(d["type"], &dt) != nil || dt != "text_delta" {
			return false, false
		}
	}
	text, send, ok := r.next(0)
	switch {
	case !ok:
		return false, false
	case !send:
		return true, true
	case d != nil:
		d["text"] = mustJSON(text)
		ev["delta"] = mustJSON(d)
	default:
		ev["delta"] = mustJSON(text)
		delete(ev, "logprobs")
	}
	return true, false
}

// doneText gives the Responses API's done events, which repeat the whole
// output text, the new text of choice 0: an output_text.done's text, and
// the text of every output_text part in the event (the first gets it, any
// other is emptied).
func (r *retexter) doneText(ev map[string]json.RawMessage) bool {
	text, ok := r.texts[0]
	if !ok {
		return false
	}
	first := true
	put := func() string {
		if first {
			first = false
			return text
		}
		return ""
	}
	var typ string
	json.Unmarshal(ev["type"], &typ)
	if typ == "response.output_text.done" {
		ev["text"] = mustJSON(put())
		delete(ev, "logprobs")
		return true
	}
	changed := false
	for k, v := range ev {
		var x any
		dec := json.NewDecoder(bytes.NewReader(v))
		dec.UseNumber()
		if dec.Decode(&x) != nil {
			continue
		}
		if setOutputText(x, put) {
			ev[k] = mustJSON(x)
			changed = true
		}
	}
	return changed
}

// setOutputText sets the text of every {"type":"output_text"} object in x
// to put(), dropping its logprobs; it reports whether it found one.
func setOutputText(x any, put func() string) bool {
	found := false
	switch v := x.(type) {
	case map[string]any:
		if v["type"] == "output_text" {
			if _, ok := v["text"].(string); ok {
				v["text"] = put()
				delete(v, "logprobs")
				return true
			}
		}
		for _, c := range v {
			found = setOutputText(c, put) || found
		}
	case []any:
		for _, c := range v {
			found = setOutputText(c, put) || found
		}
	}
	return found
}

// mustJSON is v encoded; v is a string or a value decoded from JSON, which
// always encodes.
func mustJSON(v any) json.RawMessage {
	b, _ := json.Marshal(v)
	return b
}

// isNull reports whether raw is absent or JSON null.
func isNull(raw json.RawMessage) bool {
	return len(raw) == 0 || string(raw) == "null"
}
