package spec

import (
	"fmt"
	"net/netip"
	"regexp"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// The spec's words for what runtime packages do: strategies (sched),
// signature schemes (conflict), history models (history), host names and
// the default subnet (netns), capabilities (the tracer's sandbox). spec
// checks them here without importing those packages; the engine hands
// them on, and its tests check that each package takes every word the
// spec accepts.

// DefaultSubnet is network.subnet's default. Node i (from 0) gets the
// subnet's address i+1.
var DefaultSubnet = netip.MustParsePrefix("10.77.0.0/24")

// strategies are scheduler.strategy's names (each may end in "+", the
// variant led by the conflict history).
var strategies = []string{"random", "rw", "pct", "pos", "pos*"}

// Strategies lists the strategies a spec may name, without their "+"
// variants.
func Strategies() []string { return append([]string(nil), strategies...) }

// explore is the exploring strategy's name (engine.Explore): POS under a
// corpus; explore+ has POS+ under it.
const explore = "explore"

// checkStrategy says why name is no strategy.
func checkStrategy(name string) error {
	base, _ := strings.CutSuffix(name, "+")
	if base == explore {
		return nil
	}
	for _, s := range strategies {
		if s == base {
			return nil
		}
	}
	return fmt.Errorf("unknown strategy %q (want one of random, pct, pos, pos*, explore, each with an optional +)", name)
}

// maxStackFrames bounds K in the pid+stack:K and proc+stack:K schemes.
const maxStackFrames = 16

var stackRE = regexp.MustCompile(`^(pid|proc)\+stack:([1-9][0-9]?)$`)

// checkScheme says why v is no signature scheme (scheduler.conflict.scheme).
func checkScheme(v string) error {
	base := v
	if b, ok := strings.CutSuffix(v, "+msg"); ok {
		base = b
	} else if b, ok := strings.CutSuffix(v, "+kind"); ok {
		base = b
	}
	switch base {
	case "pc", "pid+pc", "proc+pc":
		return nil
	}
	m := stackRE.FindStringSubmatch(base)
	if m == nil {
		return fmt.Errorf("unknown scheme %q (want pc, proc+pc, pid+pc, proc+stack:K or pid+stack:K, each optionally followed by +kind or +msg)", v)
	}
	if k, _ := strconv.Atoi(m[2]); k > maxStackFrames {
		return fmt.Errorf("signature scheme %q: K must be an integer from 1 to %d", v, maxStackFrames)
	}
	return nil
}

// modelNames are checker.model's names.
var modelNames = []string{"register", "kv", "set"}

// ModelNames lists the history models a spec may name.
func ModelNames() []string { return append([]string(nil), modelNames...) }

// checkModel says why name is no history model.
func checkModel(name string) error {
	for _, m := range modelNames {
		if m == name {
			return nil
		}
	}
	return fmt.Errorf("unknown model %q (want %s)", name, strings.Join(modelNames, ", "))
}

// hostLabel is one DNS label: a node's name is its host name in the
// cluster's hosts files.
var hostLabel = regexp.MustCompile(`^[a-zA-Z0-9]([a-zA-Z0-9-]{0,61}[a-zA-Z0-9])?$`)

// ValidHostName reports whether a node name can be a host name.
func ValidHostName(name string) bool { return hostLabel.MatchString(name) }

// capNames are the capabilities by name, without the CAP_ prefix.
var capNames = map[string]int{
	"CHOWN": unix.CAP_CHOWN, "DAC_OVERRIDE": unix.CAP_DAC_OVERRIDE, "DAC_READ_SEARCH": unix.CAP_DAC_READ_SEARCH,
	"FOWNER": unix.CAP_FOWNER, "FSETID": unix.CAP_FSETID, "KILL": unix.CAP_KILL, "SETGID": unix.CAP_SETGID,
	"SETUID": unix.CAP_SETUID, "SETPCAP": unix.CAP_SETPCAP, "LINUX_IMMUTABLE": unix.CAP_LINUX_IMMUTABLE,
	"NET_BIND_SERVICE": unix.CAP_NET_BIND_SERVICE, "NET_BROADCAST": unix.CAP_NET_BROADCAST,
	"NET_ADMIN": unix.CAP_NET_ADMIN, "NET_RAW": unix.CAP_NET_RAW, "IPC_LOCK": unix.CAP_IPC_LOCK,
	"IPC_OWNER": unix.CAP_IPC_OWNER, "SYS_MODULE": unix.CAP_SYS_MODULE, "SYS_RAWIO": unix.CAP_SYS_RAWIO,
	"SYS_CHROOT": unix.CAP_SYS_CHROOT, "SYS_PTRACE": unix.CAP_SYS_PTRACE, "SYS_PACCT": unix.CAP_SYS_PACCT,
	"SYS_ADMIN": unix.CAP_SYS_ADMIN, "SYS_BOOT": unix.CAP_SYS_BOOT, "SYS_NICE": unix.CAP_SYS_NICE,
	"SYS_RESOURCE": unix.CAP_SYS_RESOURCE, "SYS_TIME": unix.CAP_SYS_TIME, "SYS_TTY_CONFIG": unix.CAP_SYS_TTY_CONFIG,
	"MKNOD": unix.CAP_MKNOD, "LEASE": unix.CAP_LEASE, "AUDIT_WRITE": unix.CAP_AUDIT_WRITE,
	"AUDIT_CONTROL": unix.CAP_AUDIT_CONTROL, "SETFCAP": unix.CAP_SETFCAP, "MAC_OVERRIDE": unix.CAP_MAC_OVERRIDE,
	"MAC_ADMIN": unix.CAP_MAC_ADMIN, "SYSLOG": unix.CAP_SYSLOG, "WAKE_ALARM": unix.CAP_WAKE_ALARM,
	"BLOCK_SUSPEND": unix.CAP_BLOCK_SUSPEND, "AUDIT_READ": unix.CAP_AUDIT_READ, "PERFMON": unix.CAP_PERFMON,
	"BPF": unix.CAP_BPF, "CHECKPOINT_RESTORE": unix.CAP_CHECKPOINT_RESTORE,
}

// ParseCap reads a capability name, with or without its CAP_ prefix, in
// any case.
func ParseCap(name string) (int, error) {
	c, ok := capNames[strings.TrimPrefix(strings.ToUpper(name), "CAP_")]
	if !ok {
		return 0, fmt.Errorf("unknown capability %q", name)
	}
	return c, nil
}

// SpreadBy is what a spread field draws triggers over (faults.spread,
// time.spread): the window's virtual time or its steps, either with even
// odds (SpreadEither, true in the spec), or one of them.
type SpreadBy string

const (
	SpreadEither SpreadBy = ""
	SpreadTime   SpreadBy = "time"
	SpreadSteps  SpreadBy = "steps"
)
