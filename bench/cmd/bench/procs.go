package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// process is a started child: a mock, a proxy, a gateway or the Node
// gateway. Its stdout and stderr go to one log file.
type process struct {
	name    string
	cmd     *exec.Cmd
	pid     int
	url     string // http://127.0.0.1:N
	logPath string
	exited  chan struct{}
}

// startProcess runs bin with args. ready is polled until it returns the
// process's base URL or the start times out.
func startProcess(ctx context.Context, name, bin string, args, env []string, dir, logDir string,
	ready func(p *process) (string, error)) (*process, error) {
	logPath := filepath.Join(logDir, name+".log")
	logFile, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	// Its own process group, so that a ^C to the harness does not reach it
	// before the harness has stopped it in order; and stopped by the
	// kernel if the harness dies without cleaning up.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGTERM}
	if err := cmd.Start(); err != nil {
		logFile.Close()
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	p := &process{name: name, cmd: cmd, pid: cmd.Process.Pid, logPath: logPath, exited: make(chan struct{})}
	go func() { cmd.Wait(); logFile.Close(); close(p.exited) }()
	deadline := time.Now().Add(60 * time.Second)
	for {
		url, err := ready(p)
		if err == nil {
			p.url = url
			return p, nil
		}
		select {
		case <-p.exited:
			return nil, fmt.Errorf("%s exited before it was ready: %s", name, tail(logPath, 600))
		case <-ctx.Done():
			p.stop()
			return nil, ctx.Err()
		case <-time.After(25 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			p.stop()
			return nil, fmt.Errorf("%s was not ready after 60 s (%v): %s", name, err, tail(logPath, 600))
		}
	}
}

// listeningLine finds the "listening on http://ADDR" line that the mock,
// the gateway and the bare proxies print when they are ready.
func listeningLine(p *process) (string, error) {
	raw, err := os.ReadFile(p.logPath)
	if err != nil {
		return "", err
	}
	for _, line := range strings.Split(string(raw), "\n") {
		if _, url, ok := strings.Cut(line, "listening on "); ok && strings.HasPrefix(url, "http://") {
			return strings.TrimSpace(url), nil
		}
	}
	return "", errors.New("no listening line yet")
}

// portOpen is ready when a TCP connection to addr succeeds.
func portOpen(addr string) func(*process) (string, error) {
	return func(*process) (string, error) {
		c, err := net.DialTimeout("tcp", addr, 200*time.Millisecond)
		if err != nil {
			return "", err
		}
		c.Close()
		return "http://" + addr, nil
	}
}

// stop sends SIGTERM, waits up to 5 s, then kills.
func (p *process) stop() {
	if p == nil {
		return
	}
	select {
	case <-p.exited:
		return
	default:
	}
	p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.exited:
	case <-time.After(5 * time.Second):
		p.cmd.Process.Kill()
		<-p.exited
	}
}

func (p *process) alive() bool {
	select {
	case <-p.exited:
		return false
	default:
		return true
	}
}

// freeLoopbackPort asks the kernel for a free port on 127.0.0.1.
func freeLoopbackPort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

// clockTicks is USER_HZ, 100 on every Linux the harness runs on.
const clockTicks = 100

// cpuTime is the process's CPU time so far, from /proc/<pid>/stat (all
// its threads, in clock ticks): user is its own code's, system the
// kernel's on its behalf (system calls, and the loopback network stack
// they run).
func cpuTime(pid int) (user, system time.Duration, err error) {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, 0, err
	}
	s := string(raw)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0, 0, fmt.Errorf("unexpected /proc/%d/stat", pid)
	}
	f := strings.Fields(s[i+1:])
	// After the command: state(3) ... utime(14) stime(15).
	if len(f) < 13 {
		return 0, 0, fmt.Errorf("short /proc/%d/stat", pid)
	}
	ut, err1 := strconv.ParseInt(f[11], 10, 64)
	st, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, 0, fmt.Errorf("bad /proc/%d/stat", pid)
	}
	return time.Duration(ut) * time.Second / clockTicks, time.Duration(st) * time.Second / clockTicks, nil
}

// memStat is a process's memory from /proc/<pid>/status, in KiB: resident
// (VmRSS), its kernel high-water mark (VmHWM), and the private part of the
// resident memory (RssAnon: heap, stacks), without the file-backed pages
// (the binary's code, a store's memory-mapped file) the kernel can drop.
type memStat struct{ rss, hwm, anon int64 }

func memory(pid int) (memStat, error) {
	var m memStat
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return m, err
	}
	for _, line := range strings.Split(string(raw), "\n") {
		name, value, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		kb, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(value), " kB"), 10, 64)
		switch name {
		case "VmRSS":
			m.rss = kb
		case "VmHWM":
			m.hwm = kb
		case "RssAnon":
			m.anon = kb
		}
	}
	return m, nil
}

// rssSampler records the largest VmRSS and RssAnon of each watched
// process, sampled every 100 ms while load runs.
type rssSampler struct {
	mu   sync.Mutex
	peak map[int]memStat
}

func (s *rssSampler) run(ctx context.Context, pids func() []int) {
	s.peak = map[int]memStat{}
	t := time.NewTicker(100 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		for _, pid := range pids() {
			if m, err := memory(pid); err == nil {
				s.mu.Lock()
				p := s.peak[pid]
				p.rss, p.anon = max(p.rss, m.rss), max(p.anon, m.anon)
				s.peak[pid] = p
				s.mu.Unlock()
			}
		}
	}
}

func (s *rssSampler) get(pid int) memStat {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.peak[pid]
}

// tail is the end of a log file, for error messages.
func tail(path string, n int) string {
	raw, _ := os.ReadFile(path)
	if len(raw) > n {
		raw = raw[len(raw)-n:]
	}
	return strings.TrimSpace(string(raw))
}
