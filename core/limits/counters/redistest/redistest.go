// Package redistest starts a real redis-server for tests (counters, the
// gateway's end-to-end tests). Only tests import it.
package redistest

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// startTimeout bounds how long redis-server may take to be ready.
const startTimeout = 15 * time.Second

// Server is a running redis-server.
type Server struct {
	Addr string // 127.0.0.1:port
	// Stop kills the server (tests of a Redis going away); it is also
	// called when the test ends.
	Stop func()
}

// Start runs redis-server on a free loopback port, in a temporary directory
// and without persistence, waits until it answers PING and stops it when
// the test ends. It returns its address (127.0.0.1:port). Without
// redis-server the test is skipped, or fails when the CI environment
// variable is set (CI must run these tests).
func Start(tb testing.TB) string {
	tb.Helper()
	return StartServer(tb).Addr
}

// StartServer is Start, also handing back a way to stop the server early.
func StartServer(tb testing.TB) *Server {
	tb.Helper()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		if os.Getenv("CI") != "" {
			tb.Fatalf("redis-server is not installed (CI is set, so Redis tests must run): %v", err)
		}
		tb.Skip("redis-server is not installed; skipping the Redis tests")
	}
	var lastErr error
	for range 3 { // the free port may be taken between finding and binding it
		srv, err := start(tb, bin)
		if err == nil {
			return srv
		}
		lastErr = err
	}
	tb.Fatalf("starting redis-server: %v", lastErr)
	return nil
}

func start(tb testing.TB, bin string) (*Server, error) {
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	dir := tb.TempDir()
	cmd := exec.Command(bin, "--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--save", "",
		"--appendonly", "no", "--dir", dir, "--daemonize", "no", "--loglevel", "notice")
	cmd.Dir = dir
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	cmd.Stderr = cmd.Stdout
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	exited := make(chan struct{})
	var once sync.Once
	stop := func() {
		once.Do(func() {
			_ = cmd.Process.Kill()
			<-exited
		})
	}
	// Wait for the log line saying it is ready, keeping the log for errors.
	ready := make(chan bool, 1)
	var log bytes.Buffer
	go func() {
		sc := bufio.NewScanner(out)
		signalled := false
		for sc.Scan() {
			if !signalled {
				log.WriteString(sc.Text() + "\n")
				if strings.Contains(sc.Text(), "Ready to accept connections") {
					ready <- true
					signalled = true
				}
			}
		}
		_, _ = io.Copy(io.Discard, out)
		if !signalled {
			ready <- false
		}
		_ = cmd.Wait()
		close(exited)
	}()
	select {
	case ok := <-ready:
		if !ok {
			stop()
			return nil, fmt.Errorf("redis-server exited:\n%s", log.String())
		}
	case <-time.After(startTimeout):
		stop()
		return nil, fmt.Errorf("redis-server not ready after %s", startTimeout)
	}
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	if err := ping(addr); err != nil {
		stop()
		return nil, err
	}
	tb.Cleanup(stop)
	return &Server{Addr: addr, Stop: stop}, nil
}

// freePort asks the kernel for a free loopback port.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// ping checks that the server at addr answers PING with PONG.
func ping(addr string) error {
	c, err := net.DialTimeout("tcp", addr, startTimeout)
	if err != nil {
		return err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(startTimeout))
	if _, err := c.Write([]byte("*1\r\n$4\r\nPING\r\n")); err != nil {
		return err
	}
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil {
		return err
	}
	if strings.TrimSpace(line) != "+PONG" {
		return errors.New("redis-server answered PING with " + strconv.Quote(line))
	}
	return nil
}
