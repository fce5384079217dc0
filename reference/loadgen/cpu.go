package main

import (
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// clockTicks is USER_HZ, the unit of utime and stime in /proc/PID/stat (100 on Linux everywhere
// that matters; sysconf is not reachable without cgo).
const clockTicks = 100

// self is this process, whose CPU is reported beside the server's: the load generator shares
// the machine's cores with the servers.
var self = []int{os.Getpid()}

// cpuSeconds is the user plus system CPU time of the processes so far, in seconds: the sum over
// every thread, living or exited, of each process (fields 14 and 15 of /proc/PID/stat).
func cpuSeconds(pids []int) float64 {
	var ticks int64
	for _, pid := range pids {
		b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
		if err != nil {
			continue
		}
		// The command name (field 2) may hold spaces; count fields after its closing parenthesis.
		s := string(b)
		f := strings.Fields(s[strings.LastIndexByte(s, ')')+2:])
		u, _ := strconv.ParseInt(f[11], 10, 64)
		k, _ := strconv.ParseInt(f[12], 10, 64)
		ticks += u + k
	}
	return float64(ticks) / clockTicks
}

// statusKiB is a `VmXXX:` line of /proc/PID/status summed over the processes, in KiB.
func statusKiB(pids []int, key string) int64 {
	var total int64
	for _, pid := range pids {
		b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
		if err != nil {
			continue
		}
		for _, line := range strings.Split(string(b), "\n") {
			if rest, ok := strings.CutPrefix(line, key+":"); ok {
				f := strings.Fields(rest)
				if len(f) > 0 {
					v, _ := strconv.ParseInt(f[0], 10, 64)
					total += v
				}
			}
		}
	}
	return total
}

// rssSampler records the largest sum of the processes' VmRSS, sampled every 50 ms, between
// start and stop: the peak of this workload (VmHWM is the peak over each process's life).
type rssSampler struct {
	pids []int
	max  int64
	stop chan struct{}
	done sync.WaitGroup
}

func startRSS(pids []int) *rssSampler {
	r := &rssSampler{pids: pids, stop: make(chan struct{})}
	r.max = statusKiB(pids, "VmRSS")
	r.done.Add(1)
	go func() {
		defer r.done.Done()
		t := time.NewTicker(50 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-r.stop:
				return
			case <-t.C:
				if v := statusKiB(r.pids, "VmRSS"); v > r.max {
					r.max = v
				}
			}
		}
	}()
	return r
}

// Stop ends the sampling and returns the peak in KiB.
func (r *rssSampler) Stop() int64 {
	close(r.stop)
	r.done.Wait()
	if v := statusKiB(r.pids, "VmRSS"); v > r.max {
		r.max = v
	}
	return r.max
}

// diskBytes is the space the files under dir occupy (allocated blocks, as `du` counts them).
func diskBytes(dir string) int64 {
	if dir == "" {
		return 0
	}
	var total int64
	_ = filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		if info, err := d.Info(); err == nil {
			if st, ok := info.Sys().(*syscall.Stat_t); ok {
				total += st.Blocks * 512
			}
		}
		return nil
	})
	return total
}
