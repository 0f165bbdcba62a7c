package core

import "testing"

func TestRegister(t *testing.T) {
	saved := registry.Load()
	t.Cleanup(func() { registry.Store(saved) }) // so the test can run again (-count)
	mk := func(id string) PluginInfo { return PluginInfo{ID: id, New: func() Plugin { return id }} }
	Register(mk("testkind.a"))
	Register(mk("testkind.b"))
	if info, ok := LookupPlugin("testkind.a"); !ok || info.New() != "testkind.a" {
		t.Fatalf("lookup: %+v %v", info, ok)
	}
	if got := Plugins("testkind"); len(got) != 2 || got[0].ID != "testkind.a" || got[1].ID != "testkind.b" {
		t.Fatalf("plugins of a kind: %+v", got)
	}
	for _, bad := range []PluginInfo{mk("testkind.a"), mk("nodot"), mk(".x"), {ID: "testkind.c"}} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("Register(%q) did not panic", bad.ID)
				}
			}()
			Register(bad)
		}()
	}
}
