package netns

import (
	"strings"
	"testing"
)

func TestListensOn(t *testing.T) {
	const tcp = `  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
   0: 00000000:1B58 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 1 1 0 100 0 0 10 0
   1: 0100007F:1F90 0100007F:9C40 01 00000000:00000000 00:00000000 00000000     0        0 2 1 0 20 4 30 10 -1
`
	const tcp6 = `  sl  local_address                         remote_address                        st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
   0: 00000000000000000000000000000000:2379 00000000000000000000000000000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 3 1 0 100 0 0 10 0
`
	tests := []struct {
		name  string
		table string
		port  uint16
		want  bool
	}{
		{"v4 listener", tcp, 7000, true},
		{"v4 established is not listening", tcp, 8080, false},
		{"absent", tcp, 7001, false},
		{"v6 listener", tcp6, 9081, true},
		{"header only", "  sl  local_address rem_address   st\n", 7000, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := listensOn(strings.NewReader(tt.table), tt.port)
			if err != nil {
				t.Fatal(err)
			}
			if got != tt.want {
				t.Fatalf("port %d: got %v, want %v", tt.port, got, tt.want)
			}
		})
	}
}
