package main

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
)

// informersPerConnection bounds the watches sharing one HTTP/2 connection, below both Go's
// server default of 250 concurrent streams and hyper's (200), so that no server is bounded by
// one connection's stream limit.
const informersPerConnection = 100

// eventsPerObject: each changed object is created, then updated eventsPerObject-1 times.
const eventsPerObject = 20

// watcher is one informer's view: per object the last sequence number and resourceVersion it
// saw, its delivery latencies, and what broke the exactly-once, in-order rule.
type watcher struct {
	mu      sync.Mutex
	lastSeq map[string]int
	lastRV  map[string]uint64
	lat     []time.Duration
	bad     []string
}

func (w *watcher) saw(obj any, total *atomic.Int64) {
	now := time.Now()
	cm, ok := obj.(*corev1.ConfigMap)
	if !ok {
		w.mu.Lock()
		w.bad = append(w.bad, fmt.Sprintf("event of type %T", obj))
		w.mu.Unlock()
		return
	}
	seq, _ := strconv.Atoi(cm.Data["seq"])
	sent, _ := strconv.ParseInt(cm.Data["t"], 10, 64)
	rv, rvErr := strconv.ParseUint(cm.ResourceVersion, 10, 64)
	w.mu.Lock()
	defer w.mu.Unlock()
	last, seen := w.lastSeq[cm.Name]
	if !seen {
		last = -1
	}
	if seq != last+1 {
		w.bad = append(w.bad, fmt.Sprintf("object %s: event seq %d after seq %d (expected %d)", cm.Name, seq, last, last+1))
	}
	if rvErr != nil {
		w.bad = append(w.bad, fmt.Sprintf("object %s: resourceVersion %q is not a number", cm.Name, cm.ResourceVersion))
	} else if seen && rv <= w.lastRV[cm.Name] {
		w.bad = append(w.bad, fmt.Sprintf("object %s: resourceVersion %d after %d", cm.Name, rv, w.lastRV[cm.Name]))
	}
	w.lastSeq[cm.Name], w.lastRV[cm.Name] = seq, rv
	w.lat = append(w.lat, now.Sub(time.Unix(0, sent)))
	total.Add(1)
}

// change writes o.changes changes in ns: o.changes/eventsPerObject objects, each created and
// then updated in sequence by one writer (8 writers over the objects), every version carrying
// its sequence number and the time it was sent.
func change(cs *kubernetes.Clientset, m *Measure, ns string, changes int) {
	objects := changes / eventsPerObject
	parallel(objects, 8, func(i int) {
		name := fmt.Sprintf("w-%04d", i)
		var cur *corev1.ConfigMap
		for seq := 0; seq < eventsPerObject; seq++ {
			data := map[string]string{"seq": strconv.Itoa(seq), "t": strconv.FormatInt(time.Now().UnixNano(), 10), "payload": payload1KiB[:256]}
			t := time.Now()
			var err error
			var got *corev1.ConfigMap
			if cur == nil {
				got, err = cs.CoreV1().ConfigMaps(ns).Create(context.Background(), configMap(name, data), metav1.CreateOptions{})
			} else {
				next := cur.DeepCopy()
				next.Data = data
				got, err = cs.CoreV1().ConfigMaps(ns).Update(context.Background(), next, metav1.UpdateOptions{})
			}
			if m != nil {
				m.record(time.Since(t), err)
			}
			if err != nil {
				return
			}
			cur = got
		}
	})
}

// runInformers is workload 4: first the changes alone (no informer; the writes' own cost, to
// subtract), then for each count N: N informers (each its own SharedInformerFactory, so its own
// LIST+WATCH of ConfigMaps in a fresh namespace; 100 per HTTP/2 connection) started and synced,
// then o.changes changes, which every informer must see exactly once and in order. Reported:
// the start, and the change phase per delivered event (delivery latency from the write's send
// time; server CPU including the writes).
func runInformers(o *options, srv *Server, out emitter) {
	writer := srv.typed()
	if err := ensureNamespace(writer, "watch-0"); err != nil {
		out.fatal(srv, "namespace watch-0: %v", err)
	}
	m := begin(srv)
	change(writer, m, "watch-0", o.changes)
	r := m.end("watch: changes, no informer", "change", int64(o.changes))
	out.emit(r)

	for _, n := range o.informers {
		ns := fmt.Sprintf("watch-%d", n)
		if err := ensureNamespace(writer, ns); err != nil {
			out.fatal(srv, "namespace %s: %v", ns, err)
		}
		var clients []*kubernetes.Clientset
		for c := 0; c*informersPerConnection < n; c++ {
			clients = append(clients, srv.typed())
		}
		var total atomic.Int64
		watchers := make([]*watcher, n)
		stop := make(chan struct{})
		var factories []informers.SharedInformerFactory
		ms := begin(srv)
		for i := 0; i < n; i++ {
			w := &watcher{lastSeq: map[string]int{}, lastRV: map[string]uint64{}, lat: make([]time.Duration, 0, o.changes)}
			watchers[i] = w
			f := informers.NewSharedInformerFactoryWithOptions(clients[i/informersPerConnection], 0, informers.WithNamespace(ns))
			inf := f.Core().V1().ConfigMaps().Informer()
			_, _ = inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
				AddFunc:    func(obj any) { w.saw(obj, &total) },
				UpdateFunc: func(_, obj any) { w.saw(obj, &total) },
				DeleteFunc: func(obj any) {
					w.mu.Lock()
					w.bad = append(w.bad, "unexpected delete event")
					w.mu.Unlock()
				},
			})
			f.Start(stop)
			factories = append(factories, f)
		}
		synced := true
		for _, f := range factories {
			for typ, ok := range f.WaitForCacheSync(stop) {
				if !ok {
					ms.fail(fmt.Sprintf("informer of %v did not sync", typ))
					synced = false
				}
			}
		}
		start := ms.end(fmt.Sprintf("watch: %d informers start+sync", n), "informer", int64(n))
		out.emit(start)
		if !synced {
			close(stop)
			continue
		}

		expected := int64(n) * int64(o.changes)
		mc := begin(srv)
		t0 := time.Now()
		change(writer, nil, ns, o.changes)
		writes := time.Since(t0)
		// Wait for every informer to see every change; give up after 30 s without progress.
		last, lastAt := total.Load(), time.Now()
		for total.Load() < expected {
			time.Sleep(20 * time.Millisecond)
			if v := total.Load(); v != last {
				last, lastAt = v, time.Now()
			} else if time.Since(lastAt) > 30*time.Second {
				break
			}
		}
		delivered := time.Since(t0)
		got := total.Load()
		for _, w := range watchers {
			w.mu.Lock()
			mc.lat = append(mc.lat, w.lat...)
			for _, b := range w.bad {
				mc.fail(b)
			}
			if len(w.lat) != o.changes {
				mc.fail(fmt.Sprintf("an informer saw %d of %d changes", len(w.lat), o.changes))
			}
			w.mu.Unlock()
		}
		mc.ok = got
		r := mc.end(fmt.Sprintf("watch: %d informers, %d changes", n, o.changes), "event", got)
		r.Extra["informers"] = n
		r.Extra["expected_events"] = expected
		r.Extra["writes_seconds"] = writes.Seconds()
		r.Extra["delivered_seconds"] = delivered.Seconds()
		r.Extra["connections"] = len(clients)
		out.emit(r)
		close(stop)
		for _, f := range factories {
			f.Shutdown()
		}
	}
}
