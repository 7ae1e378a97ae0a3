package coverage

import (
	"math/rand/v2"
	"strings"
	"testing"
)

// Real messages, copied from the deliveries of traces lockstep wrote
// (examples/raft, examples/etcd, examples/redis, examples/zookeeper and
// testdata/bugs with trace.data 256; see testdata/README.md), and n their
// whole length.
var (
	raftVote        = "\x01\x88\xa4Addr\xae10.77.0.3:7000\xa9Candidate\xae10.77.0.3:7000\xa2ID\xa2n3\xacLastLogIndex\x01\xabLastLogTerm\x01\xb2LeadershipTransfer\xc2\xafProtocolVersion\x03\xa4Term\x02"
	raftPreVote     = "\x04\x86\xa4Addr\xae10.77.0.3:7000\xa2ID\xa2n3\xacLastLogIndex\x01\xabLastLogTerm\x01\xafProtocolVersion\x03\xa4Term\x02"
	raftVoteGranted = "\xa0\x86\xa4Addr\xae10.77.0.1:7000\xa7Granted\xc3\xa2ID\xa2n1\xa5Peers\xc0\xafProtocolVersion\x03\xa4Term\x02"
	raftVoteRefused = "\xa0\x86\xa4Addr\xae10.77.0.2:7000\xa7Granted\xc2\xa2ID\xa2n2\xa5Peers\xc0\xafProtocolVersion\x03\xa4Term\x02"
	raftAppendResp  = "\xa0\x87\xa4Addr\xae10.77.0.2:7000\xa2ID\xa2n2\xa7LastLog\x01\xaeNoRetryBackoff\xc2\xafProtocolVersion\x03\xa7Success\xc3\xa4Term\x02"
	raftAppendResp2 = "\xa0\x87\xa4Addr\xae10.77.0.1:7000\xa2ID\xa2n1\xa7LastLog3\xaeNoRetryBackoff\xc2\xafProtocolVersion\x03\xa7Success\xc3\xa4Term\x06"
	raftTimeoutNow  = "\x03\x83\xa4Addr\xae10.77.0.3:7000\xa2ID\xa2n3\xafProtocolVersion\x03"
	raftHeartbeat   = "\x00\x89\xa4Addr\xae10.77.0.1:7000\xa7Entries\xc0\xa2ID\xa2n1\xa6Leader\xae10.77.0.1:7000\xb1LeaderCommitIndex\x00\xacPrevLogEntry\x00\xabPrevLogTerm\x00\xafProtocolVersion\x03\xa4Term\x03"
	// Two AppendEntries of two commands each (276 bytes, 256 kept).
	raftAppend  = "\x00\x89\xa4Addr\xae10.77.0.2:7000\xa7Entries\x92\x86\xaaAppendedAt\xaf\x01\x00\x00\x00\x0e\xdd#\xf7\x82:\xb5\xe8@\x00\x00\xa4Data\xa9w0.op25.0\xaaExtensions\xc0\xa5IndexA\xa4Term\x07\xa4Type\x00\x86\xaaAppendedAt\xaf\x01\x00\x00\x00\x0e\xdd#\xf7\x82:\xb5\xe8@\x00\x00\xa4Data\xa9w0.op25.1\xaaExtensions\xc0\xa5IndexB\xa4Term\x07\xa4Type\x00\xa2ID\xa2n2\xa6Leader\xae10.77.0.2:7000\xb1LeaderCommitIndex@\xacPrevLogEntry@\xabPrevLogTerm\x07\xafPr"
	raftAppend2 = "\x00\x89\xa4Addr\xae10.77.0.2:7000\xa7Entries\x92\x86\xaaAppendedAt\xaf\x01\x00\x00\x00\x0e\xdd#\xf7\x83\x05\x10\xff@\x00\x00\xa4Data\xa9w0.op26.0\xaaExtensions\xc0\xa5IndexD\xa4Term\x07\xa4Type\x00\x86\xaaAppendedAt\xaf\x01\x00\x00\x00\x0e\xdd#\xf7\x83\x05\x10\xff@\x00\x00\xa4Data\xa9w0.op26.1\xaaExtensions\xc0\xa5IndexE\xa4Term\x07\xa4Type\x00\xa2ID\xa2n2\xa6Leader\xae10.77.0.2:7000\xb1LeaderCommitIndexC\xacPrevLogEntryC\xabPrevLogTerm\x07\xafPr"
	// The FSM's snapshot, JSON (1609 bytes, 256 kept).
	raftSnapshot = "{\"hash\":\"83c8d0fa8e834382638c1922f0a058ed731e59b7b4f9d0746a1e16cd5555d266\",\"last\":32,\"entries\":[{\"index\":3,\"cmd\":\"w0.op3.0\",\"hash\":\"7664b66b9ca4c062\"},{\"index\":4,\"cmd\":\"w0.op3.1\",\"hash\":\"30275c7fdf46b68d\"},{\"index\":5,\"cmd\":\"w0.op3.2\",\"hash\":\"8b2f1950131ece"

	// etcd: the v3 JSON gateway, a peer's stream request, a raft message
	// (MsgVote) on the message stream, a MsgApp on the msgappv2 stream
	// (its type byte 2, then a length), a gRPC response on HTTP/2.
	etcdRange      = "POST /v3/kv/range HTTP/1.1\r\nHost: e1:2379\r\nUser-Agent: Go-http-client/1.1\r\nContent-Length: 41\r\nContent-Type: application/json\r\nAccept-Encoding: gzip\r\nConnection: close\r\n\r\n{\"key\":\"ay8wMA==\",\"range_end\":\"ay8wMAA=\"}"
	etcdPut        = "POST /v3/kv/put HTTP/1.1\r\nHost: e1:2379\r\nUser-Agent: Go-http-client/1.1\r\nContent-Length: 33\r\nContent-Type: application/j"
	etcdStream     = "GET /raft/stream/msgapp/c50dfb028d124b4a HTTP/1.1\r\nHost: 10.77.0.1:2380\r\nUser-Agent: Go-http-client/1.1\r\nX-Etcd-Cluster-Id: 9bd3830862670403\r\nX-Min-Cl"
	etcdStream2    = "GET /raft/stream/msgapp/43f0d390a0a4190b HTTP/1.1\r\nHost: 10.77.0.3:2380\r\nUser-Agent: Go-http-client/1.1\r\nX-Etcd-Cluster-Id: 9bd3830862670403\r\nX-Min-Cl"
	etcdMessage    = "37\r\n\x00\x00\x00\x00\x00\x00\x00/\x08\x05\x10\xd4\xf3\xca\xb7\xb0\xaa\xd5\x95\xc4\x01\x18\x8b\xb2\x90\x85\x8a\xf2\xb4\xf8C \x02(\x010\x03@\x00J\n\x12\x08\n\x02(\x00\x10\x00\x18\x00P\x00X\x00\r\n"
	etcdMessage2   = "38\r\n\x00\x00\x00\x00\x00\x00\x000\x08\x05\x10\xd4\xf3\xca\xb7\xb0\xaa\xd5\x95\xc4\x01\x18\xca\x96\xc9\xe8\xa8\xe0\xfe\x86\xc5\x01 \x02(\x010\x03@\x00J\n\x12\x08\n\x02(\x00\x10\x00\x18\x00P\x00X\x00\r\n"
	etcdMsgApp     = "40\r\n\x02\x00\x00\x00\x00\x00\x00\x007\x08\x03\x10\xd4\xf3\xca\xb7\xb0\xaa\xd5\x95\xc4\x01\x18\x8b\xb2\x90\x85\x8a\xf2\xb4\xf8C \x02(\x010\x03:\x06\x08\x00\x10\x02\x18\x04@\x03J\n\x12\x08\n\x02(\x00\x10\x00\x18\x00P\x00X\x00\r\n"
	etcdGRPC       = "\x00\x00\x0b\x01\x04\x00\x00\x00\x05\x83\x86\xc7\xc6\xc5\xc4\xc3\xc2\xc1\xc0\xbf\x00\x00\x10\x00\x01\x00\x00\x00\x05\x00\x00\x00\x00\x0b\n\x04k/03\x12\x03v03"
	etcdSettings   = "\x00\x00\x0c\x04\x00\x00\x00\x00\x00\x00\x05\x00\x00@\x00\x00\x03\xff\xff\xff\xff"
	etcdSettingsOK = "\x00\x00\x00\x04\x01\x00\x00\x00\x00"

	// ZooKeeper: quorum packets (a type as a Java int: 5 PING, 3 ACK), a
	// client's connect request (a length, then the request).
	zkPing    = "\x00\x00\x00\x05\x00\x00\x00\x01\x00\x00\x00\x00\xff\xff\xff\xff\xff\xff\xff\xff"
	zkPing2   = "\x00\x00\x00\x05\x00\x00\x00\x01\x00\x00\x00\x00\x00\x00\x00\x00\xff\xff\xff\xff"
	zkAck     = "\x00\x00\x00\x03\x00\x00\x00\x01\x00\x00\x00\x00\xff\xff\xff\xff\xff\xff\xff\xff"
	zkConnect = "\x00\x00\x00-\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00u0\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x10\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00"

	// Erlang distribution's handshake (RabbitMQ): challenge answers, a
	// length, a tag ('a', 'r') and a random digest, which parsed as
	// protobuf now and then (a field 12 fixed64 and what followed; a field
	// 14 whose first byte counted the rest).
	erlChallengeAck  = "\x00\x11\x61\x89\x57\x8d\x55\x55\x39\x5f\x83\x9d\x52\xf5\x24\x7e\x81\x97\xa2"
	erlChallengeAck2 = "\x00\x11\x61\x97\x8d\x9e\xf1\xc9\x1b\x60\x9e\x68\xbc\xc3\x61\x08\xa4\x02\xa0"
	erlChallengeAck3 = "\x00\x11\x61\x32\x57\x3c\xd8\x66\x59\xda\x83\x65\xa3\x45\x58\xe6\xbc\xff\x91"
	erlChallengeRep  = "\x00\x15\x72\x13\xcc\xa5\x02\x98\xad\x74\xf9\x87\x00\x8f\xe0\x26\x77\xfc\x91\x11\x19\x26\x52"

	// Erlang distribution messages between two Mnesia nodes, 32 bytes
	// kept: a length, 131, 'D', the atom cache references (a count, a
	// flag nibble each, then each one's slot, with its text when new),
	// then the control message, a tuple whose first element is the
	// operation.
	erlRegSend    = "\x00\x00\x00\x3f\x83\x44\x05\x07\x03\x0a\x3f\x05\xef\x54\xe5\x0a\x69\x6d\x5f\x72\x75\x6e\x6e\x69\x6e\x67\x68\x04\x61\x06\x58\x52"
	erlSendSender = "\x00\x00\x00\x50\x83\x44\x04\x37\xf7\x00\x3f\xa8\x50\xdb\x0a\x70\x72\x65\x5f\x63\x6f\x6d\x6d\x69\x74\x68\x03\x61\x16\x58\x52\x00"
	erlSpawnReply = "\x00\x00\x00\x40\x83\x44\x02\x74\x00\xb2\x3f\x68\x05\x61\x1f\x5a\x00\x03\x52\x00\x65\x92\x00\x82\x00\x03\x0d\x9c\xd4\x20\x00\x01"
	erlMonitor    = "\x00\x00\x00\x31\x83\x44\x02\x37\x00\x3f\xef\x68\x04\x61\x13\x58\x52\x00\x00\x00\x00\x6c\x00\x00\x00\x00\x65\x92\x00\x82\x52\x01"
	erlDemonitor  = "\x00\x00\x00\x31\x83\x44\x02\x37\x00\x3f\xef\x68\x04\x61\x14\x58\x52\x00\x00\x00\x00\x6c\x00\x00\x00\x00\x65\x92\x00\x82\x52\x01"
	erlPayloadMon = "\x00\x00\x00\x8e\x83\x44\x04\x47\xe8\x00\x3f\xb2\x0a\x06\x72\x65\x74\x75\x72\x6e\x17\x06\x61\x63\x63\x65\x70\x74\x68\x04\x61\x1c"
	erlSpawnReq   = "\x00\x00\x00\x7e\x83\x44\x07\x37\x15\x44\x04\x3f\xfc\x07\x9d\x47\x5a\x46\x68\x06\x61\x1d\x5a\x00\x03\x52\x00\x65\x92\x00\x82\x00"
	// A header whose new atoms (a node's name, rex) run past 32 bytes.
	erlHeaderCut = "\x00\x00\x00\x56\x83\x44\x04\x8f\xdc\x00\x3f\x0b\x73\x40\x31\x30\x2e\x37\x37\x2e\x30\x2e\x31\x05\x00\x73\x03\x72\x65\x78\x05\x10"
	// Mnesia's merge_schema, its first 80 bytes: 40 references, most of
	// them new, then REG_SEND.
	erlMergeSchema = "\x00\x00\x04\x22\x83\x44\x28\x07\x8b\x6f\x38\xff\x9f\x49\xaa\xcc\x8c\xed\x8e\xc9\xc8\xa8\xec\xe8\xaf\xc9\xff\x00\x3f\x05\xf9\x09mnesia_tm\x14\x0aask_commit\xbc\x0aasym_trans\x5a\x06commit"
)

func TestShape(t *testing.T) {
	for _, tc := range []struct {
		name, data string
		n          int // 0: len(data)
		want       string
	}{
		// hashicorp/raft: an rpc type byte, then msgpack.
		{"raft RequestVote", raftVote, 0, "\x01{Addr:s Candidate:s ID:s LastLogIndex:i LastLogTerm:i LeadershipTransfer:b ProtocolVersion:i Term:i}"},
		{"raft RequestPreVote", raftPreVote, 0, "\x04{Addr:s ID:s LastLogIndex:i LastLogTerm:i ProtocolVersion:i Term:i}"},
		{"raft vote granted", raftVoteGranted, 0, "\xa0{Addr:s Granted:b ID:s Peers:n ProtocolVersion:i Term:i}"},
		{"raft vote refused", raftVoteRefused, 0, "\xa0{Addr:s Granted:b ID:s Peers:n ProtocolVersion:i Term:i}"},
		{"raft AppendEntriesResponse", raftAppendResp, 0, "\xa0{Addr:s ID:s LastLog:i NoRetryBackoff:b ProtocolVersion:i Success:b Term:i}"},
		{"raft TimeoutNow", raftTimeoutNow, 0, "\x03{Addr:s ID:s ProtocolVersion:i}"},
		{"raft heartbeat", raftHeartbeat, 0, "\x00{Addr:s Entries:n ID:s Leader:s LeaderCommitIndex:i PrevLogEntry:i PrevLogTerm:i ProtocolVersion:i Term:i}"},
		{"raft AppendEntries cut short", raftAppend, 276, "\x00{Addr:s Entries:[{AppendedAt:s Data:s Extensions:n Index:i Term:i Type:i}] ID:s Leader:s LeaderCommitIndex:i PrevLogEntry:i PrevLogTerm:i …"},
		// trace.data's default, 32 bytes, still tells them apart.
		{"raft heartbeat, 32 bytes", raftHeartbeat[:32], 128, "\x00{Addr:s Entries:n …"},
		{"raft AppendEntries, 32 bytes", raftAppend[:32], 276, "\x00{Addr:s Entries:[{…"},
		{"raft RequestVote, 32 bytes", raftVote[:32], 123, "\x01{Addr:s Candidate:…"},
		{"raft snapshot, JSON", raftSnapshot, 1609, "{hash:s last:i entries:[{index:i cmd:s hash:s}]…"},

		// Erlang distribution: the control message's operation; a header
		// past the bytes kept is cut.
		{"erlang REG_SEND", erlRegSend, 67, "⟨len⟩dist REG_SEND"},
		{"erlang SEND_SENDER", erlSendSender, 84, "⟨len⟩dist SEND_SENDER"},
		{"erlang SPAWN_REPLY", erlSpawnReply, 68, "⟨len⟩dist SPAWN_REPLY"},
		{"erlang MONITOR_P", erlMonitor, 53, "⟨len⟩dist MONITOR_P"},
		{"erlang DEMONITOR_P", erlDemonitor, 53, "⟨len⟩dist DEMONITOR_P"},
		{"erlang PAYLOAD_MONITOR_P_EXIT", erlPayloadMon, 146, "⟨len⟩dist PAYLOAD_MONITOR_P_EXIT"},
		{"erlang SPAWN_REQUEST", erlSpawnReq, 130, "⟨len⟩dist SPAWN_REQUEST"},
		{"erlang header cut", erlHeaderCut, 90, "⟨len⟩dist…"},
		{"erlang merge_schema, 32 bytes", erlMergeSchema[:32], 1062, "⟨len⟩dist…"},
		{"erlang pass-through", "\x00\x00\x00\x20p\x83h\x04a\x06gR\x00\x00\x00\x01\x00\x00\x00\x00\x02\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00", 36, "⟨len⟩dist REG_SEND"},
		{"erlang later fragment", "\x00\x00\x00\x20\x83F\x00\x00\x00\x00\x00\x00\x00\x07\x00\x00\x00\x00\x00\x00\x00\x02\x01\x02\x03\x04\x05\x06\x07\x08\x09\x0a", 36, "⟨len⟩dist fragment·"},
		// Not after a length field: a msgpack map of three entries.
		{"erlang version byte alone", "\x83D\x01\x00\x3fh\x03a\x16", 0, "\x83·"},

		// HTTP/1.1: method and path, ids masked; responses by status.
		{"raftex admin", "GET /state HTTP/1.1\r\nHost: 10.77.0.1:8000\r\nUser-Agent: Go-http-client/1.1\r\nAccept-Encoding: gzip\r\n\r\n", 0, "GET /state"},
		{"etcd gateway range", etcdRange, 0, "POST /v3/kv/range"},
		{"etcd gateway put", etcdPut, 202, "POST /v3/kv/put"},
		{"etcd peer stream", etcdStream, 320, "GET /raft/stream/msgapp/·"},
		{"HTTP 200", "HTTP/1.1 200 OK\r\nDate: Mon, 01 Jan 2024 00:00:00 GMT\r\nContent-Length: 116\r\nContent-Type: text/plain; charset=utf-8\r\n\r\n{\"", 234, "HTTP 200"},
		{"HTTP 409", "HTTP/1.1 409 Conflict\r\nContent-Type: text/plain; charset=utf-8\r\nX-Content-Type-Options: nosniff\r\nDate: Mon, 01 Jan 2024 ", 168, "HTTP 409"},

		// etcd's peer streams: chunks of a chunked body holding
		// length-prefixed protobuf.
		{"etcd raft message", etcdMessage, 0, "chunk ⟨len⟩pb{1:i 2:i 3:i 4:i 5:i 6:i 8:i 9:s 10:i 11:i}"},
		{"etcd msgappv2 MsgApp", etcdMsgApp, 0, "chunk \x02⟨len⟩pb{1:i 2:i 3:i 4:i 5:i 6:i 7:s 8:i 9:s 10:i 11:i}"},
		{"etcd msgappv2 heartbeat", "1\r\n\x00\r\n", 0, "chunk \x00"},
		{"chunked body's end", "0\r\n\r\n", 0, "chunk end"},

		// HTTP/2 and gRPC (etcd's gateway to its server).
		{"h2 preface", "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", 0, "PRI *"},
		{"h2 SETTINGS", etcdSettings, 0, "h2 SETTINGS"},
		{"h2 SETTINGS ack", etcdSettingsOK, 0, "h2 SETTINGS/ack"},
		{"gRPC response", etcdGRPC, 0, "h2 HEADERS DATA/end grpc pb{1:s 2:s}"},

		// RESP (Redis and Sentinel).
		{"redis SET", "*3\r\n$3\r\nSET\r\n$2\r\nk1\r\n$6\r\nc2-0-0\r\n", 0, "SET"},
		{"redis GET", "*2\r\n$3\r\nGET\r\n$2\r\nk1\r\n", 0, "GET"},
		{"sentinel command", "*3\r\n$8\r\nSENTINEL\r\n$23\r\nget-master-addr-by-name\r\n$8\r\nmymaster\r\n", 0, "SENTINEL"},
		{"pubsub message, lower case", "*3\r\n$7\r\nmessage\r\n$18\r\n__sentinel__:hello\r\n$84\r\n10.", 100, "MESSAGE"},
		{"array reply of values", "*2\r\n$9\r\n10.77.0.1\r\n$4\r\n6379\r\n", 0, "*·"},
		{"simple reply", "+OK\r\n", 0, "+OK"},
		{"simple reply with values", "+FULLRESYNC c2e1e4574761e377f402f0270fe57e3a73f024bd 0\r\n", 0, "+FULLRESYNC"},
		{"bulk reply", "$6\r\nc2-0-0\r\n", 0, "$·"},
		{"nil reply", "$-1\r\n", 0, "$-1"},
		{"integer reply", ":3\r\n", 0, ":·"},

		// ZooKeeper.
		{"zk quorum PING", zkPing, 0, "\x00\x00\x00\x05·"},
		{"zk quorum ACK", zkAck, 0, "\x00\x00\x00\x03·"},
		{"zk client connect", zkConnect, 0, "⟨len⟩\x00·"},
		{"zk four-letter word", "srvr", 0, "srvr"},

		// Erlang distribution: a tag and a random digest are the tag.
		{"erlang challenge ack", erlChallengeAck, 0, "⟨len⟩a·"},
		{"erlang challenge ack, fields out of order", erlChallengeAck2, 0, "⟨len⟩a·"},
		{"erlang challenge ack, a number with two wire types", erlChallengeAck3, 0, "⟨len⟩a·"},
		{"erlang challenge reply, one field of random bytes", erlChallengeRep, 0, "⟨len⟩r·"},

		// NATS (server routes): a line cut by trace.data right after its CR.
		{"nats RS+ cut after CR", "RS+ $SYS $SYS._INBOX.fjFyEjc1.*\r", 40, "RS+"},
		{"nats RS+", "RS+ $SYS $SYS.REQ.ACCOUNT.*.CONNS\r\n", 0, "RS+"},

		// The C test programs' line protocols.
		{"locks ACQUIRE", "ACQUIRE x\n", 0, "ACQUIRE"},
		{"locks GRANT", "GRANT x 1 1\n", 0, "GRANT"},
		{"lease PUT", "PUT 1 1\n", 0, "PUT"},
		{"ms JOIN", "JOIN w2\n", 0, "JOIN"},
		{"a verb that reads as hex", "ADD\r\n", 0, "ADD"},
		{"a lower-case one, alone", "add\r\n", 0, "add"},
		{"a reply that is a number, then more lines", "220 mail ready\r\n250-SIZE\r\n", 0, "·"},
		{"a line that is a value", "},{\"index\":78,\"cmd\":\"w0.op29.1\",\"hash\":\"28525a194c6a15f1\"},{", 1900, "·"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n := tc.n
			if n == 0 {
				n = len(tc.data)
			}
			if got := Shape([]byte(tc.data), n); got != tc.want {
				t.Errorf("Shape = %q, want %q", got, tc.want)
			}
		})
	}
}

// TestShapeMasksValues: one statement's messages with different values
// have one shape; different statements' messages, different ones.
func TestShapeMasksValues(t *testing.T) {
	same := [][2]string{
		{raftVoteGranted, raftVoteRefused}, // address, id, granted
		{raftAppendResp, raftAppendResp2},  // address, id, index, term
		{raftAppend, raftAppend2},          // commands, times, indexes
		{etcdStream, etcdStream2},          // member id in the path
		{etcdMessage, etcdMessage2},        // member ids, chunk size
		{zkPing, zkPing2},
		{"*3\r\n$3\r\nSET\r\n$2\r\nk1\r\n$6\r\nc2-0-0\r\n", "*3\r\n$3\r\nSET\r\n$2\r\nk0\r\n$6\r\nc3-0-1\r\n"},
		{"ACQUIRE x\n", "ACQUIRE y\n"},
		{"GRANT x 1 1\n", "GRANT y 12 3\n"},
	}
	for _, p := range same {
		a, b := Shape([]byte(p[0]), 276), Shape([]byte(p[1]), 276)
		if a != b {
			t.Errorf("%q and %q: shapes %q and %q, want one", p[0], p[1], a, b)
		}
	}
	different := []string{raftVote, raftPreVote, raftVoteGranted, raftAppendResp, raftTimeoutNow, raftHeartbeat, raftAppend, etcdMessage, etcdMsgApp, zkPing, zkAck, "ACQUIRE x\n", "RELEASE x\n", "RELEASED x\n"}
	seen := map[string]string{}
	for _, d := range different {
		s := Shape([]byte(d), len(d)+20)
		if prev, ok := seen[s]; ok {
			t.Errorf("%q and %q share shape %q", prev, d, s)
		}
		seen[s] = d
	}
}

// TestShapeCutAnywhere: a message cut at any byte shapes without
// panicking, and never to nothing.
func TestShapeCutAnywhere(t *testing.T) {
	for _, d := range []string{raftVote, raftAppend, raftSnapshot, etcdMessage, etcdMsgApp, etcdGRPC, zkConnect, etcdRange} {
		for i := 1; i <= len(d); i++ {
			if s := Shape([]byte(d[:i]), len(d)); s == "" {
				t.Errorf("%q cut at %d: no shape", d, i)
			}
		}
	}
}

func FuzzShape(f *testing.F) {
	for _, d := range []string{raftVote, raftAppend, raftSnapshot, etcdMessage, etcdMsgApp, etcdGRPC, zkConnect, etcdRange, "*3\r\n$3\r\nSET\r\n"} {
		f.Add([]byte(d), len(d))
	}
	f.Fuzz(func(t *testing.T, b []byte, n int) {
		s := Shape(b, n)
		if len(b) > 0 && s == "" {
			t.Errorf("%q: no shape", b)
		}
		if strings.Count(s, cut) > 1 {
			t.Errorf("%q: shape %q cut twice", b, s)
		}
	})
}

// TestShapeGarbage: real messages with bytes overwritten at random, cut
// anywhere, with any claimed length, shape without panicking or looping.
func TestShapeGarbage(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	seeds := []string{raftVote, raftAppend, raftSnapshot, etcdMessage, etcdMsgApp, etcdGRPC, zkConnect, etcdRange}
	for range 20000 {
		b := []byte(seeds[r.IntN(len(seeds))])
		b = b[:r.IntN(len(b)+1)]
		for range 1 + r.IntN(4) {
			if len(b) > 0 {
				b[r.IntN(len(b))] = byte(r.IntN(256))
			}
		}
		if s := Shape(b, len(b)+r.IntN(300)-20); len(b) > 0 && s == "" {
			t.Fatalf("%q: no shape", b)
		}
	}
}

// TestShapeRandomTails: a tag followed by random bytes (a digest, a nonce,
// an id) is one kind, its tag: random bytes that happen to read as
// protobuf or as a msgpack map past a few tag bytes would each make a kind
// of their own, which explore takes for the rarest features of all. Before
// the readings were checked, 3.5 % of random challenge answers were
// protobuf to it.
func TestShapeRandomTails(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for _, tc := range []struct {
		prefix string
		tail   int
		want   string
	}{
		{"\x00\x11a", 16, "⟨len⟩a·"},                           // Erlang's challenge ack
		{"\x00\x15r", 20, "⟨len⟩r·"},                           // and reply
		{"\x05", 16, "\x05·"},                                  // a type byte and a UUID
		{"\x00\x00\x00\x14\x00\x00\x00\x09", 16, "⟨len⟩\x00·"}, // a length, a Java int type, a UUID
		{"\x17\x03\x03\x00\x20", 32, "\x17·"},                  // a TLS record
	} {
		const draws = 20000
		other := map[string]int{}
		for range draws {
			b := []byte(tc.prefix)
			for range tc.tail {
				b = append(b, byte(r.IntN(256)))
			}
			if s := Shape(b, len(b)); s != tc.want {
				other[s]++
			}
		}
		// Chance still finds a length field, a short line or fields in
		// order now and then: at most 2 in 1,000 (the challenge ack, 38 of
		// 20,000 here; before, 861).
		if n := total(other); n > draws/400 {
			t.Errorf("%q and %d random bytes: %d of %d draws not %q, %d shapes: %v", tc.prefix, tc.tail, n, draws, tc.want, len(other), other)
		}
	}
}

func total(m map[string]int) int {
	n := 0
	for _, v := range m {
		n += v
	}
	return n
}

// Distribution headers built by hand for what the traces above do not
// show: no references, long atoms, a fragmented message's first part, an
// operation the protocol does not name, and bytes that are no control
// message.
func TestDistShape(t *testing.T) {
	ctl := "h\x04a\x06gR\x00"
	for _, tc := range []struct {
		name, msg string
		want      string
		ok        bool
	}{
		{"no references", "\x83D\x00" + ctl, "dist REG_SEND", true},
		// One new reference with the long-atoms flag: a 2-byte length.
		{"long atoms", "\x83D\x01\x18\x05\x00\x03rex" + ctl, "dist REG_SEND", true},
		{"long atoms cut", "\x83D\x01\x18\x05\x00\x03re", "dist…", true},
		{"one old, one new", "\x83D\x02\x80\x00\x07\x3f\x02ok" + ctl, "dist REG_SEND", true},
		{"first fragment", "\x83E\x00\x00\x00\x00\x00\x00\x00\x07\x00\x00\x00\x00\x00\x00\x00\x03\x00" + ctl, "dist REG_SEND", true},
		{"an operation not named", "\x83D\x00h\x03a\x63gR", "dist op99", true},
		{"no control tuple", "\x83D\x00l\x00\x00\x00\x02", "", false},
		{"not the version", "\x82D\x00" + ctl, "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := distShape([]byte(tc.msg), 1)
			if got != tc.want || ok != tc.ok {
				t.Errorf("distShape = %q, %v; want %q, %v", got, ok, tc.want, tc.ok)
			}
		})
	}
	if _, ok := distShape([]byte("\x83D\x00"+ctl), 0); ok {
		t.Error("a message's first bytes, not after a length field, read as distribution")
	}
}
