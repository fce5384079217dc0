// Command etcd is etcd's server at the version kube-apiserver's own go.mod requires, so that the
// reference runs on the etcd it is released with (Debian's etcd-server is 3.4).
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() {
	etcdmain.Main(os.Args)
}
