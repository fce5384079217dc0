package main

import (
	"encoding/json"
	"fmt"
	"os"
	"sort"
	"sync"
	"time"
)

// Result is one workload on one server: what the driver turns into the tables.
type Result struct {
	Workload   string         `json:"workload"`
	Server     string         `json:"server"`
	Ops        int64          `json:"ops"`                // requests (or objects, or events: see Unit)
	Unit       string         `json:"unit"`               // what Ops counts
	OK         int64          `json:"ok"`                 // of which succeeded
	Seconds    float64        `json:"seconds"`            // wall clock
	CPUSeconds float64        `json:"cpu_seconds"`        // server processes' user+system CPU
	StoreCPU   float64        `json:"store_cpu_seconds"`  // of which the storage process's (when named)
	ClientCPU  float64        `json:"client_cpu_seconds"` // this load generator's own CPU (same machine)
	P50ms      float64        `json:"p50_ms"`
	P99ms      float64        `json:"p99_ms"`
	PeakRSSKiB int64          `json:"peak_rss_kib"` // largest sampled sum of VmRSS during it
	HWMKiB     int64          `json:"hwm_kib"`      // sum of VmHWM after it (peak over the processes' lives)
	DiskBytes  int64          `json:"disk_bytes"`   // the data directory after it
	Errors     map[string]int `json:"errors,omitempty"`
	Extra      map[string]any `json:"extra,omitempty"`
}

// Measure accumulates one workload on one server: latencies and errors of its requests, the
// server's CPU and memory between begin and end.
type Measure struct {
	srv  *Server
	cpu0 float64
	st0  float64
	own0 float64
	t0   time.Time
	rss  *rssSampler
	mu   sync.Mutex
	lat  []time.Duration
	ok   int64
	errs map[string]int
}

func begin(srv *Server) *Measure {
	return &Measure{srv: srv, cpu0: cpuSeconds(srv.PIDs), st0: cpuSeconds(srv.Store), own0: cpuSeconds(self), t0: time.Now(), rss: startRSS(srv.PIDs), errs: map[string]int{}}
}

// record adds one request's latency and outcome; an error is kept word for word (the first 300
// characters), counted per distinct message.
func (m *Measure) record(d time.Duration, err error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.lat = append(m.lat, d)
	if err == nil {
		m.ok++
		return
	}
	msg := err.Error()
	if len(msg) > 300 {
		msg = msg[:300] + "…"
	}
	if len(m.errs) < 20 || m.errs[msg] > 0 {
		m.errs[msg]++
	}
}

// fail records an error that is not one request's (a check that did not hold).
func (m *Measure) fail(msg string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(m.errs) < 20 || m.errs[msg] > 0 {
		m.errs[msg]++
	} else {
		m.errs["(further distinct errors not kept)"]++
	}
}

// end closes the measure; ops is what the workload did in `unit`s (requests unless said).
func (m *Measure) end(workload, unit string, ops int64) Result {
	secs := time.Since(m.t0).Seconds()
	cpu := cpuSeconds(m.srv.PIDs) - m.cpu0
	peak := m.rss.Stop()
	m.mu.Lock()
	defer m.mu.Unlock()
	sort.Slice(m.lat, func(i, j int) bool { return m.lat[i] < m.lat[j] })
	r := Result{
		Workload: workload, Server: m.srv.Name, Ops: ops, Unit: unit, OK: m.ok, Seconds: secs,
		CPUSeconds: cpu, StoreCPU: cpuSeconds(m.srv.Store) - m.st0, ClientCPU: cpuSeconds(self) - m.own0, P50ms: pct(m.lat, 0.50), P99ms: pct(m.lat, 0.99),
		PeakRSSKiB: peak, HWMKiB: statusKiB(m.srv.PIDs, "VmHWM"), DiskBytes: diskBytes(m.srv.DataDir),
		Extra: map[string]any{},
	}
	if len(m.errs) > 0 {
		r.Errors = m.errs
	}
	return r
}

func pct(sorted []time.Duration, q float64) float64 {
	if len(sorted) == 0 {
		return 0
	}
	i := int(q * float64(len(sorted)-1))
	return float64(sorted[i].Microseconds()) / 1000
}

// emit writes one result as a JSON line to out and a readable line to stderr.
func emit(out *json.Encoder, r Result) {
	_ = out.Encode(r)
	perOp := 0.0
	if r.Ops > 0 {
		perOp = r.CPUSeconds / float64(r.Ops) * 1e6
	}
	fmt.Fprintf(os.Stderr, "%-28s %-10s %7d %-8s ok %7d  %6.1f s  %8.0f/s  p50 %7.2f ms  p99 %8.2f ms  cpu %6.2f s = %8.1f µs/%s (store %6.2f s)  client cpu %6.2f s  rss %6.0f MiB  errors %d\n",
		r.Workload, r.Server, r.Ops, r.Unit, r.OK, r.Seconds, float64(r.Ops)/r.Seconds, r.P50ms, r.P99ms,
		r.CPUSeconds, perOp, r.Unit, r.StoreCPU, r.ClientCPU, float64(r.PeakRSSKiB)/1024, len(r.Errors))
	for msg, n := range r.Errors {
		fmt.Fprintf(os.Stderr, "    %d × %s\n", n, msg)
	}
}
