// pingpong_client HOST PORT ROUNDS SIZE: ROUNDS round trips of SIZE bytes.
package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"syscall"
	"time"
)

func dial(addr string) net.Conn {
	for i := 0; ; i++ {
		c, err := net.Dial("tcp4", addr)
		if err == nil {
			return c
		}
		if !errors.Is(err, syscall.ECONNREFUSED) || i == 500 {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func main() {
	if len(os.Args) != 5 {
		fmt.Fprintln(os.Stderr, "usage: pingpong_client HOST PORT ROUNDS SIZE")
		os.Exit(2)
	}
	rounds, _ := strconv.Atoi(os.Args[3])
	size, _ := strconv.Atoi(os.Args[4])
	c := dial(net.JoinHostPort(os.Args[1], os.Args[2]))
	defer c.Close()
	msg := bytes.Repeat([]byte{'x'}, size)
	buf := make([]byte, size)
	for r := 0; r < rounds; r++ {
		if _, err := c.Write(msg); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		if _, err := io.ReadFull(c, buf); err != nil {
			fmt.Fprintf(os.Stderr, "round %d: %v\n", r, err)
			os.Exit(1)
		}
	}
	fmt.Printf("done %d\n", rounds)
}
