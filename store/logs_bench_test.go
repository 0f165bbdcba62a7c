//go:build unix

package store

import (
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/llm-gateway/gateway/core"
)

// benchMetadata is shared by the records, as a request's metadata is.
var benchMetadata = map[string]string{"_user": "alice", "env": "prod"}

// benchRecord is a request log record like the ones the data plane makes.
func benchRecord(at time.Time) *core.LogRecord {
	return &core.LogRecord{
		ID: core.NewLogID(at), CreatedAt: at, TraceID: "0b6f4a52-8c1d-4e53-9a57-1f3c1a2b9e7d",
		Metadata: benchMetadata, OrganisationID: "6f1c2a7e-0d1b-4c8a-9e55-3b2f7d9a1c00",
		WorkspaceID: "a3e2b1c4-5d6f-4a7b-8c9d-0e1f2a3b4c5d", APIKeyID: "c1d2e3f4-a5b6-4c7d-8e9f-0a1b2c3d4e5f",
		Provider: "openai", Model: "gpt-4o-mini", Endpoint: core.EndpointChatComplete, Method: "POST",
		Path: "/v1/chat/completions", Status: 200, LatencyMs: 12.345,
		Usage:      core.Usage{PromptTokens: 12, CompletionTokens: 230, TotalTokens: 242},
		OptionPath: "config.targets[0]",
	}
}

// BenchmarkLogWriter writes b.N request log records through a LogWriter
// into bbolt: the cost of one record from the request's hand-off to the
// disk. Wall time is mostly fsync; cpu-ns/op is the process's CPU time (all
// goroutines) per record. "serial" flushes (one transaction) every 512
// records; "parallel" hands records over from 16 goroutines, as a loaded
// server does, and the writer batches them itself.
func BenchmarkLogWriter(b *testing.B) {
	b.Run("serial", func(b *testing.B) {
		benchLogWriter(b, LogWriterOptions{Interval: time.Hour}, func(w *LogWriter, at time.Time) {
			for i := range b.N {
				w.Enqueue(benchRecord(at.Add(time.Duration(i) * time.Microsecond)))
				if i%512 == 511 {
					w.Flush()
				}
			}
		})
	})
	b.Run("parallel", func(b *testing.B) {
		benchLogWriter(b, LogWriterOptions{QueueSize: 1 << 20}, func(w *LogWriter, at time.Time) {
			var n atomic.Int64
			b.SetParallelism(16)
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					w.Enqueue(benchRecord(at.Add(time.Duration(n.Add(1)) * time.Microsecond)))
				}
			})
		})
	})
}

// benchLogWriter times enqueue, and the closing of the writer (which writes
// what is left), on a fresh store.
func benchLogWriter(b *testing.B, o LogWriterOptions, enqueue func(w *LogWriter, at time.Time)) {
	st, err := Open(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	w := NewLogWriter(st, o)
	b.ReportAllocs()
	cpu0 := cpuTime(b)
	b.ResetTimer()
	enqueue(w, time.Now())
	w.Close()
	b.StopTimer()
	b.ReportMetric(float64(cpuTime(b)-cpu0)/float64(b.N), "cpu-ns/op")
	if n := w.Dropped(); n != 0 {
		b.Fatalf("%d records dropped", n)
	}
}

// cpuTime is the user and system CPU time the process has used.
func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
