// Command informer runs a client-go dynamic shared informer on one resource of the cluster a
// kubeconfig names and prints each event its handlers get, one line each, as it gets it:
//
//	synced
//	add NAMESPACE/NAME RESOURCEVERSION
//	update NAMESPACE/NAME RESOURCEVERSION
//	delete NAMESPACE/NAME
//
// until stdin closes. A test driving a cluster reads the lines: what an informer (a reflector's
// list, then watches, relisting when a watch ends) made of what the cluster did.
// `server/tests/kube_apiserver_on_etcd_api.rs` runs it through kube-apiserver on fieldstore's
// etcd API, across compactions and a kill -9 of fieldstore.
//
//	go run ./cmd/informer -kubeconfig FILE -resource configmaps [-group G -version V] [-namespace NS]
package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/clientcmd"
)

func main() {
	kubeconfig := flag.String("kubeconfig", "", "kubeconfig of the cluster")
	group := flag.String("group", "", "the resource's API group")
	version := flag.String("version", "v1", "the resource's API version")
	resource := flag.String("resource", "configmaps", "the resource (plural)")
	namespace := flag.String("namespace", "", "only this namespace (all when empty)")
	flag.Parse()
	config, err := clientcmd.BuildConfigFromFlags("", *kubeconfig)
	if err != nil {
		fmt.Fprintln(os.Stderr, "informer:", err)
		os.Exit(2)
	}
	client, err := dynamic.NewForConfig(config)
	if err != nil {
		fmt.Fprintln(os.Stderr, "informer:", err)
		os.Exit(2)
	}
	var mu sync.Mutex
	say := func(format string, args ...any) {
		mu.Lock()
		defer mu.Unlock()
		fmt.Printf(format+"\n", args...)
	}
	name := func(obj any) (string, string) {
		if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
			obj = d.Obj
		}
		u, ok := obj.(*unstructured.Unstructured)
		if !ok {
			return "?", ""
		}
		return u.GetNamespace() + "/" + u.GetName(), u.GetResourceVersion()
	}
	factory := dynamicinformer.NewFilteredDynamicSharedInformerFactory(client, time.Hour, *namespace, nil)
	informer := factory.ForResource(schema.GroupVersionResource{Group: *group, Version: *version, Resource: *resource}).Informer()
	if _, err := informer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { n, rv := name(obj); say("add %s %s", n, rv) },
		UpdateFunc: func(_, obj any) { n, rv := name(obj); say("update %s %s", n, rv) },
		DeleteFunc: func(obj any) { n, _ := name(obj); say("delete %s", n) },
	}); err != nil {
		fmt.Fprintln(os.Stderr, "informer:", err)
		os.Exit(2)
	}
	stop := make(chan struct{})
	go func() {
		_, _ = io.Copy(io.Discard, os.Stdin)
		close(stop)
	}()
	factory.Start(stop)
	if cache.WaitForCacheSync(stop, informer.HasSynced) {
		say("synced")
	}
	<-stop
	factory.Shutdown()
}
