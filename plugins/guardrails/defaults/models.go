package defaults

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"

	"github.com/llm-gateway/gateway/core"
	"github.com/llm-gateway/gateway/hooks"
)

var errNoModel = errors.New("the request names no model")

// ---- modelWhitelist ----

type modelListCfg struct {
	models []string
	not    bool
}

var modelWhitelist = &check[modelListCfg]{
	parse: func(p *params) modelListCfg {
		return modelListCfg{models: p.stringList("models", true, false), not: p.not()}
	},
	run: func(_ context.Context, in *hooks.CheckInput, c modelListCfg) (hooks.CheckResult, error) {
		model := requestModel(in)
		if model == "" {
			return hooks.CheckResult{}, errNoModel
		}
		inList := contains(c.models, model)
		expl := fmt.Sprintf("Model %q is in the list.", model)
		if !inList {
			expl = fmt.Sprintf("Model %q is not in the list.", model)
		}
		if c.not {
			expl += " With not, the list names the models that are blocked."
		}
		return hooks.CheckResult{Verdict: invert(inList, c.not), Data: map[string]any{
			"requestedModel": model, "inList": inList, "not": c.not, "explanation": expl,
		}}, nil
	},
}

// ---- modelRules ----

type modelRule struct {
	match  map[string]string // metadata key -> value, all must be equal
	models []string
	label  string
}

type modelRulesCfg struct {
	rules    []modelRule
	defaults []string
	not      bool
}

// parseModelRules reads rules in either shape:
//
//	reference: {"defaults": [models], "metadata": {"<key>": {"<value>": [models]}}}
//	list:      [{"metadata": {"<key>": "<value>", ...}, "models": [models]}]
//
// plus defaultModels (either shape), the models allowed when no rule
// matches.
func parseModelRules(p *params) modelRulesCfg {
	c := modelRulesCfg{not: p.not()}
	defaultModels := p.stringList("defaultModels", false, false)
	v, ok := p.get("rules")
	if !ok {
		p.add("rules", `is required: {"defaults": [...], "metadata": {"<key>": {"<value>": [models]}}} or [{"metadata": {...}, "models": [...]}]`)
		return c
	}
	switch r := v.(type) {
	case map[string]any:
		for k := range r {
			if k != "defaults" && k != "metadata" {
				p.add("rules."+k, "unknown field (want defaults and metadata)")
			}
		}
		if d, ok := r["defaults"]; ok && d != nil {
			list, probs := stringsAt("rules.defaults", d)
			p.probs = append(p.probs, probs...)
			if len(defaultModels) > 0 {
				p.add("defaultModels", "give the default models as rules.defaults or defaultModels, not both")
			}
			defaultModels = list
		}
		if md, ok := r["metadata"]; ok && md != nil {
			byKey, isObj := md.(map[string]any)
			if !isObj {
				p.add("rules.metadata", `must be an object {"<metadata key>": {"<value>": [models]}}`)
				break
			}
			for _, key := range slices.Sorted(maps.Keys(byKey)) {
				byVal, isObj := byKey[key].(map[string]any)
				if !isObj {
					p.add("rules.metadata."+key, `must be an object {"<value>": [models]}`)
					continue
				}
				for _, val := range slices.Sorted(maps.Keys(byVal)) {
					at := "rules.metadata." + key + "." + val
					models, probs := stringsAt(at, byVal[val])
					p.probs = append(p.probs, probs...)
					c.rules = append(c.rules, modelRule{match: map[string]string{key: val}, models: models, label: key + ":" + val})
				}
			}
		}
	case []any:
		if len(r) == 0 {
			p.add("rules", "must not be empty")
		}
		for i, x := range r {
			at := fmt.Sprintf("rules[%d]", i)
			m, isObj := x.(map[string]any)
			if !isObj {
				p.add(at, `must be an object {"metadata": {...}, "models": [...]}`)
				continue
			}
			rule := modelRule{match: map[string]string{}}
			for k := range m {
				if k != "metadata" && k != "models" {
					p.add(at+"."+k, "unknown field (want metadata and models)")
				}
			}
			md, isObj := m["metadata"].(map[string]any)
			if !isObj || len(md) == 0 {
				p.add(at+".metadata", "is required: a non-empty object of metadata keys and string values")
			}
			var labels []string
			for _, k := range slices.Sorted(maps.Keys(md)) {
				s, isStr := md[k].(string)
				if !isStr {
					p.add(at+".metadata."+k, "must be a string (metadata values are strings)")
					continue
				}
				rule.match[k] = s
				labels = append(labels, k+":"+s)
			}
			rule.label = strings.Join(labels, ",")
			models, probs := stringsAt(at+".models", m["models"])
			p.probs = append(p.probs, probs...)
			if len(probs) == 0 && len(models) == 0 {
				p.add(at+".models", "must not be empty")
			}
			rule.models = models
			c.rules = append(c.rules, rule)
		}
	default:
		p.add("rules", "must be an object {defaults, metadata} or an array of {metadata, models}")
	}
	c.defaults = defaultModels
	if len(c.rules) == 0 && len(c.defaults) == 0 && len(p.probs) == 0 {
		p.add("rules", "names no models: give metadata rules or default models")
	}
	return c
}

var modelRules = &check[modelRulesCfg]{
	parse: parseModelRules,
	run: func(_ context.Context, in *hooks.CheckInput, c modelRulesCfg) (hooks.CheckResult, error) {
		model := requestModel(in)
		if model == "" {
			return hooks.CheckResult{}, errNoModel
		}
		md := requestMetadata(in)
		allowed := map[string]bool{}
		matched := []string{}
		for _, r := range c.rules {
			ok := true
			for k, v := range r.match {
				if got, has := md[k]; !has || got != v {
					ok = false
					break
				}
			}
			if !ok {
				continue
			}
			matched = append(matched, r.label)
			for _, m := range r.models {
				allowed[m] = true
			}
		}
		usingDefaults := len(matched) == 0
		if usingDefaults {
			for _, m := range c.defaults {
				allowed[m] = true
			}
		}
		inList := allowed[model]
		list := make([]string, 0, len(allowed))
		for m := range allowed {
			list = append(list, m)
		}
		sort.Strings(list)
		var expl string
		switch {
		case len(allowed) == 0:
			expl = fmt.Sprintf("No rule matched the request's metadata and there are no default models, so model %q is not listed.", model)
		case inList:
			expl = fmt.Sprintf("Model %q is listed by the rules.", model)
		default:
			expl = fmt.Sprintf("Model %q is not listed by the rules.", model)
		}
		if c.not {
			expl += " With not, listed models are blocked."
		}
		data := map[string]any{"requestedModel": model, "models": list, "matchedRules": matched,
			"usingDefaults": usingDefaults, "not": c.not, "explanation": expl}
		return hooks.CheckResult{Verdict: invert(inList, c.not), Data: data}, nil
	},
}

// ---- allowedRequestTypes ----

// requestTypes are the request type names the check knows: the gateway's
// endpoints, the reference's names for other operations, and "stream-"
// forms of the streamable ones.
var requestTypes = map[string]bool{}

func init() {
	for _, e := range []core.Endpoint{core.EndpointChatComplete, core.EndpointComplete, core.EndpointEmbed,
		core.EndpointImageGenerate, core.EndpointImageEdit, core.EndpointCreateSpeech, core.EndpointTranscription,
		core.EndpointTranslation, core.EndpointModeration, core.EndpointResponses, core.EndpointResponseItems,
		core.EndpointRerank, core.EndpointMessages, core.EndpointMessagesCount, core.EndpointProxy} {
		requestTypes[string(e)] = true
	}
	for _, t := range []string{"stream-complete", "stream-chatComplete", "stream-messages", "stream-createModelResponse",
		"realtime", "uploadFile", "listFiles", "retrieveFile", "deleteFile", "retrieveFileContent", "createBatch",
		"retrieveBatch", "cancelBatch", "listBatches", "getBatchOutput", "listFinetunes", "createFinetune",
		"retrieveFinetune", "cancelFinetune", "getModelResponse", "deleteModelResponse"} {
		requestTypes[t] = true
	}
}

func knownRequestTypes() string {
	list := make([]string, 0, len(requestTypes))
	for t := range requestTypes {
		list = append(list, t)
	}
	sort.Strings(list)
	return strings.Join(list, ", ")
}

type requestTypesCfg struct {
	allowed, blocked []string
	fromParams       bool
}

func parseRequestTypes(p *params) requestTypesCfg {
	c := requestTypesCfg{
		allowed: p.stringList("allowedTypes", false, true),
		blocked: p.stringList("blockedTypes", false, true),
	}
	for _, l := range []struct {
		name string
		list []string
	}{{"allowedTypes", c.allowed}, {"blockedTypes", c.blocked}} {
		for _, t := range l.list {
			if !requestTypes[t] {
				p.add(l.name, "unknown request type %q (known: %s)", t, knownRequestTypes())
			}
		}
	}
	for _, t := range c.allowed {
		if contains(c.blocked, t) {
			p.add("blockedTypes", "%q is both allowed and blocked", t)
		}
	}
	c.fromParams = len(c.allowed) > 0 || len(c.blocked) > 0
	return c
}

// metadataList reads a comma-separated metadata value.
func metadataList(md map[string]string, key string) []string {
	var out []string
	for _, s := range strings.Split(md[key], ",") {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	return out
}

var allowedRequestTypes = &check[requestTypesCfg]{
	parse: parseRequestTypes,
	run: func(_ context.Context, in *hooks.CheckInput, c requestTypesCfg) (hooks.CheckResult, error) {
		if in.Request == nil || in.Request.Endpoint == "" {
			return hooks.CheckResult{}, errors.New("the request type is not known")
		}
		allowed, blocked, source := c.allowed, c.blocked, "parameters"
		if !c.fromParams {
			// As in the reference: without parameters, the lists may come
			// from the metadata keys supported_endpoints and blocked_endpoints.
			md := requestMetadata(in)
			allowed, blocked, source = metadataList(md, "supported_endpoints"), metadataList(md, "blocked_endpoints"), "metadata"
		}
		typ := string(in.Request.Endpoint)
		names := []string{typ}
		if in.Request.Stream {
			names = append(names, "stream-"+typ)
		}
		anyIn := func(list []string) bool {
			for _, n := range names {
				if contains(list, n) {
					return true
				}
			}
			return false
		}
		verdict, expl := true, ""
		switch {
		case len(allowed) == 0 && len(blocked) == 0:
			expl, source = fmt.Sprintf("Request type %q is allowed (no restrictions).", names[len(names)-1]), "default"
		case anyIn(blocked):
			verdict, expl = false, fmt.Sprintf("Request type %q is blocked.", names[len(names)-1])
		case len(allowed) > 0 && !anyIn(allowed):
			verdict, expl = false, fmt.Sprintf("Request type %q is not in the allowed types.", names[len(names)-1])
		default:
			expl = fmt.Sprintf("Request type %q is allowed.", names[len(names)-1])
		}
		data := map[string]any{"requestType": names[len(names)-1], "source": source, "explanation": expl}
		if len(allowed) > 0 {
			data["allowedTypes"] = allowed
		}
		if len(blocked) > 0 {
			data["blockedTypes"] = blocked
		}
		return hooks.CheckResult{Verdict: verdict, Data: data}, nil
	},
}
