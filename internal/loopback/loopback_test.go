package loopback

import "testing"

// Ports of one call and of later calls are distinct, free to listen on,
// and below the ephemeral range when it leaves room for them.
func TestFreePortsDistinctAndBelowEphemeral(t *testing.T) {
	hi := ephemeralLow()
	seen := map[int]bool{}
	for range 5 {
		ports, err := FreePorts(20)
		if err != nil {
			t.Fatal(err)
		}
		if len(ports) != 20 {
			t.Fatalf("got %d ports, want 20", len(ports))
		}
		for _, p := range ports {
			if seen[p] {
				t.Fatalf("port %d handed out twice", p)
			}
			seen[p] = true
			if hi-lowestPort >= 1000 && (p < lowestPort || p >= hi) {
				t.Fatalf("port %d outside [%d, %d)", p, lowestPort, hi)
			}
		}
	}
}
