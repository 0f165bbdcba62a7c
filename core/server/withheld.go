package server

import (
	"github.com/llm-gateway/gateway/core"
	"github.com/llm-gateway/gateway/core/sse"
)

// spend counts the usage of an answer req was billed for, from the target
// rt, against the request's limits (adm) and the target's own (target),
// either of which may be nil; nothing for a cached answer (no provider was
// called, so nothing was spent).
func spend(req *core.Request, rt *core.Routing, usage core.Usage, adm, target core.Admission) {
	if adm == nil && target == nil {
		return
	}
	if core.CacheStatus(rt.CacheStatus).Hit() {
		usage = core.Usage{}
	}
	model := answeredModel(req, rt)
	for _, a := range [...]core.Admission{adm, target} {
		if a != nil {
			a.Done(usage, rt.Provider, rt.IntegrationID, model)
		}
	}
}

// countWithheld counts the usage of the answers an output guardrail
// withheld (core.Withheld) against the request's limits (adm) and each
// one's target's own, at once (they have ended): the provider billed them
// though the client got none. It returns the usage of refused, the answer
// a 446 stands for (nil for none), for its log record.
func countWithheld(req *core.Request, adm core.Admission, withheld []core.Withheld, refused *core.Withheld) core.Usage {
	var logged core.Usage
	for i := range withheld {
		w := &withheld[i]
		var usage core.Usage
		if countsUsage(req) {
			usage = withheldUsage(w)
		}
		spend(req, &w.Routing, usage, adm, w.Admission)
		if w == refused {
			logged = usage
		}
	}
	return logged
}

// withheldUsage is the usage a withheld answer reports, read as a
// delivered one's: a whole answer's (parseUsage), a held stream's events'
// (eventUsage, as eventStream reads them).
func withheldUsage(w *core.Withheld) core.Usage {
	if !w.Stream {
		return parseUsage(w.Body)
	}
	var u core.Usage
	for event := range sse.Events(w.Body) {
		eventUsage(event, &u)
	}
	return u
}
