// image_node runs as both nodes of lockstep's image tests, from an image
// whose root holds /image-marker (a file no host has).
//
//	image_node server PORT: checks it sees the image's root and lockstep's
//	  sandbox in it, counts its starts in /data/starts (the writable
//	  layer), prints "start N" and answers each "ping" line with "pong N".
//	image_node client HOST PORT COUNT [GAP_MS]: pings COUNT times, GAP_MS
//	  apart, reconnecting after a crash; exits 1 when a pong came from a
//	  restarted server.
package main

import (
	"bufio"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"time"
)

func main() {
	if len(os.Args) < 3 {
		fmt.Fprintln(os.Stderr, "usage: image_node server PORT | client HOST PORT COUNT")
		os.Exit(2)
	}
	switch os.Args[1] {
	case "server":
		server(os.Args[2])
	case "client":
		n, _ := strconv.Atoi(os.Args[4])
		gap := 0
		if len(os.Args) > 5 {
			gap, _ = strconv.Atoi(os.Args[5])
		}
		client(os.Args[2], os.Args[3], n, time.Duration(gap)*time.Millisecond)
	}
}

func fail(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "image_node: "+format+"\n", args...)
	os.Exit(3)
}

func server(port string) {
	if b, err := os.ReadFile("/image-marker"); err != nil || strings.TrimSpace(string(b)) != "from the image" {
		fail("not in the image's root: /image-marker: %q %v", b, err)
	}
	if _, err := os.Stat("/bin/sh"); err == nil {
		fail("/bin/sh is in sight: the host's root, not the image's")
	}
	if b, err := os.ReadFile("/etc/hosts"); err != nil || !strings.Contains(string(b), "client") {
		fail("/etc/hosts does not name the client: %q %v", b, err)
	}
	if _, err := os.Stat("/run/lockstep/trial"); err != nil {
		fail("the trial's directory: %v", err)
	}
	if pid := os.Getpid(); pid != 1 {
		fail("pid %d, want 1 in the node's PID namespace", pid)
	}
	if f, err := os.OpenFile("/dev/null", os.O_WRONLY, 0); err != nil {
		fail("/dev/null: %v", err)
	} else {
		f.Close()
	}
	if err := os.WriteFile("/tmp/scratch", []byte("x"), 0o644); err != nil {
		fail("/tmp: %v", err)
	}
	if err := os.WriteFile("/proc/sys/kernel/hostname", []byte("x"), 0); err == nil {
		fail("/proc/sys is writable")
	}
	n := 0
	if b, err := os.ReadFile("/data/starts"); err == nil {
		n, _ = strconv.Atoi(strings.TrimSpace(string(b)))
	}
	n++
	if err := os.MkdirAll("/data", 0o755); err != nil {
		fail("%v", err)
	}
	if err := os.WriteFile("/data/starts", []byte(strconv.Itoa(n)), 0o644); err != nil {
		fail("%v", err)
	}
	fmt.Println("start", n)
	ln, err := net.Listen("tcp", ":"+port)
	if err != nil {
		fail("%v", err)
	}
	for {
		c, err := ln.Accept()
		if err != nil {
			fail("%v", err)
		}
		go func() {
			defer c.Close()
			sc := bufio.NewScanner(c)
			for sc.Scan() {
				fmt.Fprintf(c, "pong %d\n", n)
			}
		}()
	}
}

func client(host, port string, count int, gap time.Duration) {
	var c net.Conn
	var rd *bufio.Reader
	for done := 0; done < count; {
		if c == nil {
			var err error
			if c, err = net.Dial("tcp", net.JoinHostPort(host, port)); err != nil {
				time.Sleep(100 * time.Millisecond)
				c = nil
				continue
			}
			rd = bufio.NewReader(c)
		}
		fmt.Fprintln(c, "ping")
		line, err := rd.ReadString('\n')
		if err != nil {
			c.Close()
			c = nil
			continue
		}
		done++
		time.Sleep(gap)
		if strings.TrimSpace(line) != "pong 1" {
			fmt.Println("restarted server:", strings.TrimSpace(line))
			os.Exit(1)
		}
	}
	fmt.Println("ok")
}
