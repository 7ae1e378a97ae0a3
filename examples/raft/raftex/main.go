// Command raftex is the examples/raft workload: three members of
// hashicorp/raft v1.7.3 and a client that drives and checks them (see
// ../README.md).
//
//	raftex member -id n1 -peers n1=H1:7000,n2=H2:7000,n3=H3:7000 -admin H1:8000
//	raftex client -members n1=H1:8000,n2=H2:8000,n3=H3:8000 [-ops N ...]
package main

import (
	"fmt"
	"os"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: raftex member|client [flags]")
		os.Exit(2)
	}
	var err error
	switch os.Args[1] {
	case "member":
		err = member(os.Args[2:])
	case "client":
		err = client(os.Args[2:])
	default:
		err = fmt.Errorf("unknown mode %q (want member or client)", os.Args[1])
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "raftex:", err)
		os.Exit(1)
	}
}
