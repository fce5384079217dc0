package main

import (
	"context"
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// countConfigMaps pages through ns (limit 500) and returns how many ConfigMaps it holds.
func countConfigMaps(cs *kubernetes.Clientset, ns string) (int, error) {
	n, cont := 0, ""
	for {
		l, err := cs.CoreV1().ConfigMaps(ns).List(context.Background(), metav1.ListOptions{Limit: 500, Continue: cont})
		if err != nil {
			return n, err
		}
		n += len(l.Items)
		if cont = l.Continue; cont == "" {
			return n, nil
		}
	}
}

// runList is workload 3: namespace `load` filled up to o.listSize 1 KiB ConfigMaps (unmeasured;
// the creates workload left some there), then LISTs of all of them, protobuf, decoded by
// client-go into typed objects: paged (limit 500 + continue; latency per page) and unpaged
// (latency per LIST), each o.listRepeats times. CPU is reported per listed object.
func runList(o *options, srv *Server, out emitter) {
	cs := srv.typed()
	if err := ensureNamespace(cs, "load"); err != nil {
		out.fatal(srv, "namespace load: %v", err)
	}
	have, err := countConfigMaps(cs, "load")
	if err != nil {
		out.fatal(srv, "count ConfigMaps in load: %v", err)
	}
	if have < o.listSize {
		fill := begin(srv)
		createConfigMaps(cs, fill, "load", "fill", have, o.listSize-have, 32)
		r := fill.end("list setup: fill creates", "create", int64(o.listSize-have))
		out.emit(r)
	}

	m := begin(srv)
	listed := 0
	for rep := 0; rep < o.listRepeats; rep++ {
		cont, n := "", 0
		for {
			t := time.Now()
			l, err := cs.CoreV1().ConfigMaps("load").List(context.Background(), metav1.ListOptions{Limit: 500, Continue: cont})
			m.record(time.Since(t), err)
			if err != nil {
				break
			}
			n += len(l.Items)
			if cont = l.Continue; cont == "" {
				break
			}
		}
		if n < o.listSize {
			m.fail(fmt.Sprintf("paged LIST returned %d ConfigMaps, expected at least %d", n, o.listSize))
		}
		listed += n
	}
	r := m.end("list paged (500/page)", "object", int64(listed))
	r.Extra["latency_per"] = "page"
	out.emit(r)

	m = begin(srv)
	listed = 0
	for rep := 0; rep < o.listRepeats; rep++ {
		t := time.Now()
		l, err := cs.CoreV1().ConfigMaps("load").List(context.Background(), metav1.ListOptions{})
		m.record(time.Since(t), err)
		if err == nil {
			listed += len(l.Items)
			if len(l.Items) < o.listSize {
				m.fail(fmt.Sprintf("unpaged LIST returned %d ConfigMaps, expected at least %d", len(l.Items), o.listSize))
			}
		}
	}
	r = m.end("list unpaged", "object", int64(listed))
	r.Extra["latency_per"] = "list"
	out.emit(r)
}
