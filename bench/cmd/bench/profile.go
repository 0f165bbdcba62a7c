package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"time"
)

// profileGateways loads each gateway contender at c=16 for -profile while
// its pprof endpoint records a CPU profile, then saves its allocation
// profile (cumulative since start), into <run>/profiles:
//
//	go tool pprof -top bench/.work/run/profiles/gw-full.cpu.pprof
//	go tool pprof -sample_index=alloc_space -top bench/.work/run/profiles/gw-full.allocs.pprof
func (b *bench) profileGateways(ctx context.Context) error {
	dir := filepath.Join(b.runDir, "profiles")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	for _, c := range b.active() {
		if c.pprofAddr == "" {
			continue
		}
		logf("profiling %s for %s at c=16", c.name, b.opts.profile)
		cpu := make(chan error, 1)
		go func() {
			secs := int(b.opts.profile / time.Second)
			cpu <- fetchProfile(ctx, fmt.Sprintf("http://%s/debug/pprof/profile?seconds=%d", c.pprofAddr, secs),
				filepath.Join(dir, c.key+".cpu.pprof"), b.opts.profile+30*time.Second)
		}()
		r := closedLoop(ctx, c.fast, 16, b.opts.profile, b.x, &c.errs)
		if err := <-cpu; err != nil {
			return fmt.Errorf("%s: CPU profile: %w", c.name, err)
		}
		if err := fetchProfile(ctx, "http://"+c.pprofAddr+"/debug/pprof/allocs", filepath.Join(dir, c.key+".allocs.pprof"), 30*time.Second); err != nil {
			return fmt.Errorf("%s: allocation profile: %w", c.name, err)
		}
		logf("%s: %d correct answers, %d failed %v", c.name, r.ok, r.failed, c.errs.list())
	}
	logf("profiles in %s", dir)
	return nil
}

// fetchProfile saves what url answers into path.
func fetchProfile(ctx context.Context, url, path string, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, "GET", url, nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		raw, _ := io.ReadAll(io.LimitReader(resp.Body, 300))
		return fmt.Errorf("status %d: %s", resp.StatusCode, raw)
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, resp.Body); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
