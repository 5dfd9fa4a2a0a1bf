// Command etcd is the etcd server, built from go.etcd.io/etcd/server/v3.
// The server module has no main package of its own (the root etcd module,
// which does, replaces its sub-modules with local paths and so can't be
// built from the proxy), so this is the smallest main that runs it.
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() {
	etcdmain.Main(os.Args)
}
