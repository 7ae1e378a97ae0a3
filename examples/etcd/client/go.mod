module github.com/lockstep-dev/lockstep/examples/etcd/client

go 1.26.8
