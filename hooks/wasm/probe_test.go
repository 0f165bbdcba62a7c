package wasm

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/tetratelabs/wazero"
)

func TestProbe(t *testing.T) {
	b, err := os.ReadFile("/tmp/guest.wasm")
	if err != nil {
		t.Skip()
	}
	ctx := context.Background()
	for _, dir := range []string{"", "/tmp/probe"} {
		var cache wazero.CompilationCache
		if dir == "" {
			cache = wazero.NewCompilationCache()
		} else {
			cache, _ = wazero.NewCompilationCacheWithDir(dir)
		}
		start := time.Now()
		rt := wazero.NewRuntimeWithConfig(ctx, wazero.NewRuntimeConfig().WithCompilationCache(cache).WithCloseOnContextDone(true))
		c, err := rt.CompileModule(ctx, b)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("compile %v", time.Since(start))
		for _, m := range c.ExportedMemories() {
			mx, _ := m.Max()
			t.Logf("mem min %d max %d", m.Min(), mx)
		}
		for _, f := range c.ImportedFunctions() {
			a, b, _ := f.Import()
			t.Logf("import %s.%s", a, b)
		}
		for n := range c.ExportedFunctions() {
			t.Logf("export %s", n)
		}
		rt.Close(ctx)
	}
}
