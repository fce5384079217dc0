package main

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"strings"
	"time"

	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// Server is one API server under test: a name for the report, the kubeconfig the clients are
// built from, the processes whose CPU and memory are its cost (kube-apiserver and etcd for the
// reference, the one fieldstore process), and the data directory whose size is reported. Store
// names, of those processes, the storage process (etcd, or fieldstore under a kube-apiserver),
// whose CPU is also reported on its own.
type Server struct {
	Name       string
	Kubeconfig string
	DataDir    string
	PIDs       []int
	Store      []int
	base       *rest.Config
}

// parseServer reads `name=N,kubeconfig=FILE,data=DIR,pids=P1+P2[,store=P2]`.
func parseServer(spec string) (*Server, error) {
	s := &Server{}
	for _, kv := range strings.Split(spec, ",") {
		k, v, ok := strings.Cut(kv, "=")
		if !ok {
			return nil, fmt.Errorf("server %q: %q is not key=value", spec, kv)
		}
		switch k {
		case "name":
			s.Name = v
		case "kubeconfig":
			s.Kubeconfig = v
		case "data":
			s.DataDir = v
		case "pids", "store":
			for _, p := range strings.Split(v, "+") {
				pid, err := strconv.Atoi(p)
				if err != nil {
					return nil, fmt.Errorf("server %q: pid %q: %v", spec, p, err)
				}
				if k == "pids" {
					s.PIDs = append(s.PIDs, pid)
				} else {
					s.Store = append(s.Store, pid)
				}
			}
		default:
			return nil, fmt.Errorf("server %q: unknown key %q", spec, k)
		}
	}
	if s.Name == "" || s.Kubeconfig == "" || len(s.PIDs) == 0 {
		return nil, fmt.Errorf("server %q: name, kubeconfig and pids are required", spec)
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", s.Kubeconfig)
	if err != nil {
		return nil, fmt.Errorf("server %s: %v", s.Name, err)
	}
	s.base = cfg
	return s, nil
}

// config is the rest.Config every client of this server starts from: the kubeconfig's TLS and
// token, HTTP/2 (client-go's default over TLS), no client-side rate limit, and protobuf for the
// built-in kinds when asked (as kube-controller-manager and kubelet send and accept it).
//
// Each call returns a config with its own Dial function: client-go caches transports by TLS
// config, and a distinct Dial defeats that cache, so each config gets its own TCP connection
// (its own HTTP/2 stream limit).
func (s *Server) config(protobuf bool) *rest.Config {
	cfg := rest.CopyConfig(s.base)
	cfg.QPS = -1 // no token bucket at all (client-go skips it for QPS <= 0 once set)
	cfg.Burst = 1 << 20
	cfg.Timeout = 120 * time.Second
	cfg.UserAgent = "fieldstore-loadgen"
	if protobuf {
		cfg.ContentType = "application/vnd.kubernetes.protobuf"
		cfg.AcceptContentTypes = "application/vnd.kubernetes.protobuf,application/json"
	}
	d := &net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}
	cfg.Dial = func(ctx context.Context, network, addr string) (net.Conn, error) {
		return d.DialContext(ctx, network, addr)
	}
	return cfg
}

// typed is a clientset for the built-in kinds, protobuf on the wire, on its own connection.
func (s *Server) typed() *kubernetes.Clientset {
	return kubernetes.NewForConfigOrDie(s.config(true))
}

// dyn is a dynamic client (JSON on the wire, as for every custom resource).
func (s *Server) dyn() *dynamic.DynamicClient {
	return dynamic.NewForConfigOrDie(s.config(false))
}
