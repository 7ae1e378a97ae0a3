// random_bytes: 16 bytes from crypto/rand (getrandom) and 16 from
// /dev/urandom.
package main

import (
	"crypto/rand"
	"fmt"
	"io"
	"os"
)

func main() {
	b := make([]byte, 16)
	if _, err := rand.Read(b); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fmt.Printf("getrandom=%x\n", b)
	f, err := os.Open("/dev/urandom")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	defer f.Close()
	if _, err := io.ReadFull(f, b); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fmt.Printf("urandom=%x\n", b)
}
