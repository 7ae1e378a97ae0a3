// clock_sleep N: sleep 1 s N times, printing monotonic and real clocks.
package main

import (
	"fmt"
	"os"
	"strconv"
	"time"
)

func main() {
	n := 10
	if len(os.Args) > 1 {
		n, _ = strconv.Atoi(os.Args[1])
	}
	start := time.Now()
	for i := 1; i <= n; i++ {
		time.Sleep(time.Second)
		fmt.Printf("i=%d mono_ns=%d real_ns=%d\n", i, time.Since(start).Nanoseconds(), time.Now().UnixNano())
	}
}
