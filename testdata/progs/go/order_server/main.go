// order_server PORT N: print one message per connection as it arrives;
// exit after N messages.
package main

import (
	"fmt"
	"net"
	"os"
	"strconv"
)

func main() {
	if len(os.Args) != 3 {
		fmt.Fprintln(os.Stderr, "usage: order_server PORT N")
		os.Exit(2)
	}
	want, _ := strconv.Atoi(os.Args[2])
	l, err := net.Listen("tcp4", "0.0.0.0:"+os.Args[1])
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	msgs := make(chan string)
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go func(c net.Conn) {
				defer c.Close()
				buf := make([]byte, 255)
				n, err := c.Read(buf)
				if err == nil {
					msgs <- string(buf[:n])
				}
			}(c)
		}
	}()
	for i := 0; i < want; i++ {
		fmt.Printf("got %s\n", <-msgs)
	}
}
