package limits

import (
	"context"
	"errors"
	"strconv"
	"strings"

	"github.com/llm-gateway/gateway/store"
)

// legacyWorkspaceRule reads the rule id earlier releases gave a workspace's
// usage limit, by its place in the list: "workspace:<id>#usage<i>".
func legacyWorkspaceRule(rule string) (workspace string, i int, ok bool) {
	rest, ok := strings.CutPrefix(rule, "workspace:")
	if !ok {
		return "", 0, false
	}
	workspace, n, ok := strings.Cut(rest, "#usage")
	if !ok || n == "" || strings.TrimLeft(n, "0123456789") != "" {
		return "", 0, false
	}
	i, err := strconv.Atoi(n)
	return workspace, i, err == nil
}

// moveLegacyUsage moves what was counted under the rule ids of earlier
// releases, which named a workspace's usage limit by its place in the list,
// to the limit's WorkspaceUsageIDs id: its usage, states and reset
// schedule. The place is read in the workspace as stored, which is the list
// those counts were made for; a limit no longer in it is dropped. New runs
// it before the first snapshot, so the new ids have counted nothing yet; a
// run cut short is finished by the next one (a usage already copied is not
// copied again).
func (e *Engine) moveLegacyUsage(ctx context.Context) error {
	rules := map[string]string{} // legacy id → new id ("": dropped)
	for id := range e.states {
		if _, _, ok := legacyWorkspaceRule(id.rule); ok {
			rules[id.rule] = ""
		}
	}
	err := e.o.Store.View(func(tx store.Tx) error {
		err := tx.ForEach(store.BucketUsageStates, func(key string, _ []byte) error {
			if rule, ok := strings.CutPrefix(key, "s|"); ok {
				if _, _, ok := legacyWorkspaceRule(rule); ok {
					rules[rule] = ""
				}
			}
			return nil
		})
		if err != nil {
			return err
		}
		for rule := range rules {
			ws, n, _ := legacyWorkspaceRule(rule)
			var w store.Workspace
			switch err := tx.Get(store.BucketWorkspaces, ws, &w); {
			case err == nil && n < len(w.UsageLimits):
				rules[rule] = WorkspaceUsageIDs(w.ID, w.UsageLimits)[n]
			case err != nil && !errors.Is(err, store.ErrNotFound):
				return err
			}
		}
		return nil
	})
	if err != nil || len(rules) == 0 {
		return err
	}
	var legacy []*valueState
	for id, st := range e.states {
		if _, ok := rules[id.rule]; ok {
			legacy = append(legacy, st)
		}
	}
	for _, st := range legacy {
		to := rules[st.Rule]
		if to == "" {
			continue
		}
		used, err := e.o.Counter.Usage(ctx, usageKey(st.Rule, st.Value), usageKey(to, st.Value))
		if err != nil {
			return err
		}
		if used[0] != 0 && used[1] == 0 {
			if _, err := e.o.Counter.AddUsage(ctx, usageKey(to, st.Value), used[0]); err != nil {
				return err
			}
		}
	}
	err = e.o.Store.Update(func(tx store.Tx) error {
		for rule, to := range rules {
			var sched schedRecord
			err := tx.Get(store.BucketUsageStates, schedKey(rule), &sched)
			switch {
			case err == nil && to != "":
				if err := tx.Put(store.BucketUsageStates, schedKey(to), sched); err != nil {
					return err
				}
			case err != nil && !errors.Is(err, store.ErrNotFound):
				return err
			}
			if err := tx.Delete(store.BucketUsageStates, schedKey(rule)); err != nil {
				return err
			}
		}
		for _, st := range legacy {
			if to := rules[st.Rule]; to != "" {
				moved := *st
				moved.Rule = to
				if err := tx.Put(store.BucketUsageStates, stateKey(to, st.Value), moved); err != nil {
					return err
				}
			}
			if err := tx.Delete(store.BucketUsageStates, stateKey(st.Rule, st.Value)); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	var errs []error
	for _, st := range legacy {
		errs = append(errs, e.o.Counter.ResetUsage(ctx, usageKey(st.Rule, st.Value)))
		delete(e.states, stateID{st.Rule, st.Value})
		if to := rules[st.Rule]; to != "" {
			st.Rule = to
			e.states[stateID{to, st.Value}] = st
		}
	}
	return errors.Join(errs...)
}
