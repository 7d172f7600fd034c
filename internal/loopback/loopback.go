// Package loopback hands out loopback TCP ports to the tests and
// benchmarks that start collectors (e2e, bench's collectorbench).
package loopback

import (
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
)

// Ports handed out by FreePorts in this process.
var (
	portsMu    sync.Mutex
	portsGiven = map[int]bool{}
)

// lowestPort is the lowest port FreePorts hands out.
const lowestPort = 20000

// FreePorts returns n distinct loopback ports that were free a moment ago
// (all held open together), none handed out before in this process, and
// below the kernel's ephemeral range where there is room for them there.
//
// A port from bind(0) is in the ephemeral range, where every outgoing
// connection also takes its source port: a port handed to one collector
// could become another collector's source port (tier 1 dialling tier 2,
// a load generator's connections) before the first one listens on it, and
// the first one then fails at start-up with "bind: address already in use".
func FreePorts(n int) ([]int, error) {
	portsMu.Lock()
	defer portsMu.Unlock()
	hi := ephemeralLow()
	var ports []int
	for tries := 0; len(ports) < n; tries++ {
		if tries > 100000 {
			return nil, fmt.Errorf("no free loopback port found (%d of %d)", len(ports), n)
		}
		addr := "127.0.0.1:0"
		if hi-lowestPort >= 1000 {
			addr = fmt.Sprintf("127.0.0.1:%d", lowestPort+rand.IntN(hi-lowestPort))
		}
		l, err := net.Listen("tcp", addr)
		if err != nil {
			continue // taken: try another
		}
		defer l.Close()
		p := l.Addr().(*net.TCPAddr).Port
		if portsGiven[p] {
			continue
		}
		portsGiven[p] = true
		ports = append(ports, p)
	}
	return ports, nil
}

// ephemeralLow is the first port of the kernel's ephemeral range (Linux's
// default when it cannot be read).
func ephemeralLow() int {
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return 32768
	}
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return 32768
	}
	lo, err := strconv.Atoi(f[0])
	if err != nil {
		return 32768
	}
	return lo
}
