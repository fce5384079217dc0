package main

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// payload1KiB is the data of every ConfigMap the creates write: 1 KiB in one key.
var payload1KiB = strings.Repeat("x", 1024)

// parallel runs fn(0..n-1) on `workers` goroutines, each taking the next index.
func parallel(n, workers int, fn func(i int)) {
	var next atomic.Int64
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1)) - 1
				if i >= n {
					return
				}
				fn(i)
			}
		}()
	}
	wg.Wait()
}

func configMap(name string, data map[string]string) *corev1.ConfigMap {
	return &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"app": "loadgen"}},
		Data:       data,
	}
}

// ensureNamespace creates ns (kube-apiserver refuses objects in a namespace that does not exist).
func ensureNamespace(cs *kubernetes.Clientset, ns string) error {
	_, err := cs.CoreV1().Namespaces().Create(context.Background(),
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		return nil
	}
	return err
}

// createConfigMaps creates n 1 KiB ConfigMaps named prefix-00000.. in ns with `workers`
// concurrent clients sharing one clientset (one HTTP/2 connection, as a controller's informers
// and writers share theirs), recording each request in m.
func createConfigMaps(cs *kubernetes.Clientset, m *Measure, ns, prefix string, from, n, workers int) {
	parallel(n, workers, func(i int) {
		cm := configMap(fmt.Sprintf("%s-%05d", prefix, from+i), map[string]string{"payload": payload1KiB})
		t := time.Now()
		_, err := cs.CoreV1().ConfigMaps(ns).Create(context.Background(), cm, metav1.CreateOptions{})
		m.record(time.Since(t), err)
	})
}

// runCreates is workload 1: `count` creates of 1 KiB ConfigMaps with 8 and then 32 concurrent
// clients, into namespace `load` (which the LIST workload then fills up to its size).
func runCreates(o *options, srv *Server, out emitter) {
	cs := srv.typed()
	if err := ensureNamespace(cs, "load"); err != nil {
		out.fatal(srv, "namespace load: %v", err)
	}
	for _, workers := range []int{8, 32} {
		m := begin(srv)
		createConfigMaps(cs, m, "load", fmt.Sprintf("c%d", workers), 0, o.creates, workers)
		out.emit(m.end(fmt.Sprintf("create 1KiB cm, %d clients", workers), "create", int64(o.creates)))
	}
}
