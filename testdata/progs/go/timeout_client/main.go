// timeout_client HOST PORT MS: send "ping", wait at most MS ms for a reply
// with a read deadline; exit 3 on timeout.
package main

import (
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"time"
)

func main() {
	if len(os.Args) != 4 {
		fmt.Fprintln(os.Stderr, "usage: timeout_client HOST PORT MS")
		os.Exit(2)
	}
	ms, _ := strconv.Atoi(os.Args[3])
	c, err := net.Dial("tcp4", net.JoinHostPort(os.Args[1], os.Args[2]))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	start := time.Now()
	if _, err := c.Write([]byte("ping")); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	c.SetReadDeadline(start.Add(time.Duration(ms) * time.Millisecond))
	_, err = c.Read(make([]byte, 64))
	elapsed := time.Since(start).Milliseconds()
	var ne net.Error
	switch {
	case errors.As(err, &ne) && ne.Timeout():
		fmt.Printf("timeout elapsed_ms=%d\n", elapsed)
		os.Exit(3)
	case err != nil:
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fmt.Printf("reply elapsed_ms=%d\n", elapsed)
}
