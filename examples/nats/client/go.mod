module github.com/lockstep-dev/lockstep/examples/nats/client

go 1.26.8

require github.com/nats-io/nats.go v1.50.0

require (
	github.com/klauspost/compress v1.18.5 // indirect
	github.com/nats-io/nkeys v0.4.15 // indirect
	github.com/nats-io/nuid v1.0.1 // indirect
	golang.org/x/crypto v0.49.0 // indirect
	golang.org/x/sys v0.42.0 // indirect
)
