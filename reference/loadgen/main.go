// Command loadgen measures API servers with client-go, as controllers and kubectl use them:
// the reference (kube-apiserver on etcd, both built from this module) and fieldstore serve, with
// identical clients built from each server's kubeconfig (TLS, HTTP/2, protobuf for built-in
// kinds, JSON for custom resources, no client-side rate limit).
//
// Every workload runs against each server in turn, in the order given, before the next workload
// starts. Per workload and server it reports requests, wall-clock rate and latency, the server
// processes' CPU time (utime+stime from /proc: kube-apiserver's plus etcd's, fieldstore's one
// process), their peak RSS and the data directory's size, as JSON lines (-out) that
// benches/reference/run.py turns into benches/REFERENCE_RESULTS.md.
//
//	loadgen -server name=reference,kubeconfig=K,data=DIR,pids=P1+P2 \
//	        -server name=fieldstore,kubeconfig=K,data=DIR,pids=P -out results.jsonl
//
// `store=P2` (optional) names the storage process among pids (etcd, or fieldstore under a
// kube-apiserver), whose CPU is reported on its own as well (store_cpu_seconds).
//
// Start-to-ready times are the driver's: it owns the processes.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"k8s.io/klog/v2"
)

type options struct {
	servers     []*Server
	workloads   string
	creates     int   // creates per concurrency level
	deployments int   // Deployments per SSA phase
	crObjects1k int   // custom resources with 1,000 items
	crObjects10 int   // custom resources with 10,000 items
	listSize    int   // ConfigMaps the LIST workload reads
	listRepeats int   // times each LIST is repeated
	informers   []int // informer counts
	changes     int   // changes the informers must all see
}

type serverFlags struct{ o *options }

func (f serverFlags) String() string { return "" }
func (f serverFlags) Set(v string) error {
	s, err := parseServer(v)
	if err == nil {
		f.o.servers = append(f.o.servers, s)
	}
	return err
}

// emitter writes results; fatal records a workload's setup failure as a result holding the
// error word for word and abandons the workload on that server (the others go on).
type emitter struct{ enc *json.Encoder }

type abandoned struct{}

func (e emitter) emit(r Result) { emit(e.enc, r) }

func (e emitter) fatal(srv *Server, format string, args ...any) {
	e.emit(Result{Workload: "error", Server: srv.Name, Errors: map[string]int{fmt.Sprintf(format, args...): 1}})
	panic(abandoned{})
}

func main() {
	o := &options{}
	var informers string
	var outPath string
	flag.Var(serverFlags{o}, "server", "name=N,kubeconfig=FILE,data=DIR,pids=P1+P2 (repeatable; run in order)")
	flag.StringVar(&o.workloads, "workloads", "creates,apply,crapply,list,informers", "workloads to run, in order")
	flag.IntVar(&o.creates, "creates", 4000, "ConfigMap creates per concurrency level (8 and 32)")
	flag.IntVar(&o.deployments, "deployments", 500, "Deployments per SSA phase")
	flag.IntVar(&o.crObjects1k, "cr-1k", 10, "custom resources of 1,000 items (each created, then re-applied)")
	flag.IntVar(&o.crObjects10, "cr-10k", 3, "custom resources of 10,000 items (each created, then re-applied)")
	flag.IntVar(&o.listSize, "list", 20000, "ConfigMaps in the listed namespace")
	flag.IntVar(&o.listRepeats, "list-repeats", 3, "times each LIST (paged, unpaged) is repeated")
	flag.StringVar(&informers, "informers", "10,100,1000", "informer counts")
	flag.IntVar(&o.changes, "changes", 2000, "changes every informer must see")
	flag.StringVar(&outPath, "out", "", "JSON lines results (default stdout)")
	klog.InitFlags(nil) // -v=6 logs every request's URL (client-go's klog)
	flag.Parse()
	for _, s := range strings.Split(informers, ",") {
		n, err := strconv.Atoi(s)
		if err != nil {
			fmt.Fprintln(os.Stderr, "loadgen: -informers:", err)
			os.Exit(2)
		}
		o.informers = append(o.informers, n)
	}
	if len(o.servers) == 0 {
		fmt.Fprintln(os.Stderr, "loadgen: no -server")
		os.Exit(2)
	}
	out := os.Stdout
	if outPath != "" {
		f, err := os.Create(outPath)
		if err != nil {
			fmt.Fprintln(os.Stderr, "loadgen:", err)
			os.Exit(1)
		}
		defer f.Close()
		out = f
	}
	e := emitter{json.NewEncoder(out)}
	workloads := map[string]func(*options, *Server, emitter){
		"creates": runCreates, "apply": runApply, "crapply": runCRApply, "list": runList, "informers": runInformers,
	}
	for _, w := range strings.Split(o.workloads, ",") {
		fn, ok := workloads[w]
		if !ok {
			fmt.Fprintf(os.Stderr, "loadgen: unknown workload %q\n", w)
			os.Exit(2)
		}
		for _, srv := range o.servers {
			t := time.Now()
			fmt.Fprintf(os.Stderr, "== %s on %s\n", w, srv.Name)
			runOne(fn, o, srv, e)
			fmt.Fprintf(os.Stderr, "== %s on %s: %.1f s\n", w, srv.Name, time.Since(t).Seconds())
		}
	}
}

func runOne(fn func(*options, *Server, emitter), o *options, srv *Server, e emitter) {
	defer func() {
		if r := recover(); r != nil {
			if _, ok := r.(abandoned); !ok {
				panic(r)
			}
		}
	}()
	fn(o, srv, e)
}
